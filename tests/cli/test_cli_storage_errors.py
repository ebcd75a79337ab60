"""Storage refusals, corrupt inputs and over-long names through the CLI: one ``error:`` line
each with its documented exit code (README "Exit codes"), never an ``internal error``, and a
failed command leaves the table (and the warehouse) as it was.

11: ``error: storage: <what> at <path>``; 5: a corrupt input file, named; 2: a name too long."""

from __future__ import annotations

import errno
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import fsspec.implementations.local
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

import core.fileio
from test_cli_errors import (HEADER, TABLE, Table, assert_fails, assert_one_line_error, invoke,  # noqa: F401
                             ok, t, write_csv)

LONG = "x" * 300


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


# ---- 11: the storage refused -------------------------------------------------------------------
@pytest.mark.parametrize("code, what", [(errno.EROFS, "read-only file system"), (errno.EACCES, "permission denied"),
                                        (errno.ENOSPC, "no space left on device"),
                                        (errno.EDQUOT, "disk quota exceeded")])
def test_a_refusing_filesystem_is_named_and_commits_nothing(t: Table, monkeypatch: pytest.MonkeyPatch,
                                                           code: int, what: str) -> None:
    """Root ignores chmod, so the refusal is simulated below FileIO: every file opened for
    writing, and every create-if-absent, fails with the errno a real mount would give."""
    before = t.state()
    local_open = fsspec.implementations.local.LocalFileSystem._open

    def refusing_open(self, path, mode="rb", *args, **kwargs):  # type: ignore[no-untyped-def]
        if "w" in mode or "a" in mode:
            raise OSError(code, os.strerror(code), path)
        return local_open(self, path, mode, *args, **kwargs)

    def refusing_builtin_open(path, mode="r", *args, **kwargs):  # type: ignore[no-untyped-def]
        if "w" in mode or "a" in mode:
            raise OSError(code, os.strerror(code), path)
        return open(path, mode, *args, **kwargs)

    def refusing_create(path: str, data: bytes, make_dirs: bool = True) -> bool:
        raise OSError(code, os.strerror(code), path)

    monkeypatch.setattr(fsspec.implementations.local.LocalFileSystem, "_open", refusing_open)
    # FileIO writes a local file with open() itself (data files, manifests), not through fsspec
    monkeypatch.setattr(core.fileio, "open", refusing_builtin_open, raising=False)
    monkeypatch.setattr(core.fileio, "_local_create_if_absent", refusing_create)
    rows = write_csv(t.inputs / "more.csv", HEADER, [[9, 90, "nine", "n"]])
    # (the data file's name is new in each run: one run, not assert_fails' two)
    assert_one_line_error(invoke(*t.args("write", TABLE, "-i", rows)), 11, f"storage: {what} at {t.dir}/bucket-")
    assert_fails(t.args("tag", "create", TABLE, "v1"), 11, f"storage: {what} at {t.dir}/tag/tag-v1")
    monkeypatch.undo()
    assert t.state() == before


def test_a_warehouse_path_that_is_a_file(tmp_path: Path) -> None:
    """Through the console script, with no simulation: not even root can make a directory
    below a file."""
    script = Path(sys.executable).with_name("lakectl")
    if not script.exists():
        pytest.skip(f"no console script next to {sys.executable}")
    not_a_dir = tmp_path / "warehouse.txt"
    not_a_dir.write_text("not a warehouse\n")
    for args, where in ((["create", "db.t", "-s", "id INT"], f"{not_a_dir}/db.db/t/"), (["list"], f"{not_a_dir}"),
                        (["list", "db"], f"{not_a_dir}"), (["scan", "db.t"], f"{not_a_dir}")):
        result = subprocess.run([str(script), "-w", str(not_a_dir), *args], capture_output=True, text=True,
                                timeout=120, cwd=tmp_path, env={**os.environ, "HOME": str(tmp_path)})
        assert result.returncode == 11, (args, result.stderr)
        assert result.stderr.startswith("error: storage: not a directory") and f" at {where}" in result.stderr, \
            result.stderr
        assert len(result.stderr.splitlines()) == 1 and result.stdout == ""
    assert not_a_dir.read_text() == "not a warehouse\n"


@pytest.mark.parametrize("name, what", [("missing/out.parquet", "no such directory"),
                                        ("missing/out.csv", "no such directory"),
                                        ("afile/out.jsonl", "not a directory")])
def test_output_into_a_missing_directory(t: Table, tmp_path: Path, name: str, what: str) -> None:
    (tmp_path / "afile").write_text("x")
    target = tmp_path / name
    assert_fails(t.args("scan", TABLE, "--output", target), 11, f"storage: {what}", f"at {target.parent}")
    assert not target.parent.is_dir()


# ---- 5: a corrupt input file ----------------------------------------------------------------------
def _input_table() -> pa.Table:
    return pa.table({"id": pa.array(range(1, 2001), pa.int32()), "small": pa.array([1] * 2000, pa.int8()),
                     "name": [f"name-{i}" * (i % 5 + 1) for i in range(2000)], "code": ["a"] * 2000})


def _corrupt_snappy_parquet(path: Path) -> Path:
    """A Parquet file whose ``name`` column chunk is damaged mid-page: pyarrow reads the footer
    and the page header, then fails with ``Corrupt snappy compressed data``."""
    pq.write_table(_input_table(), path, compression="snappy", use_dictionary=False, write_statistics=False)
    data = bytearray(path.read_bytes())
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(2)
    middle = chunk.data_page_offset + chunk.total_compressed_size // 2
    data[middle:middle + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))
    with pytest.raises(OSError, match="Corrupt snappy compressed data"):
        pq.read_table(path)
    return path


def _truncated_orc(path: Path) -> Path:
    orc.write_table(_input_table(), str(path))
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return path


def _truncated_parquet(path: Path) -> Path:
    pq.write_table(_input_table(), path)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return path


def _truncated_csv_gzip(path: Path) -> Path:
    text = "id,small,name,code\n" + "".join(f"{i},1,n{i},a\n" for i in range(1, 20001))
    packed = gzip.compress(text.encode())
    path.write_bytes(packed[: len(packed) // 2])
    return path


@pytest.mark.parametrize("make, name, extra", [
    (_corrupt_snappy_parquet, "bad.parquet", []), (_truncated_parquet, "cut.parquet", []),
    (_truncated_orc, "cut.orc", []), (_truncated_csv_gzip, "cut.csv.gz", ["--input-format", "csv"])])
def test_corrupt_input_is_invalid_data_naming_the_file(t: Table, make, name: str, extra: list[str]) -> None:  # type: ignore[no-untyped-def]
    before = t.state()
    path = make(t.inputs / name)
    assert_fails(t.args("write", TABLE, "-i", path, *extra), 5, f"input {path}")
    assert t.state() == before


# ---- 2: names too long for a file name ----------------------------------------------------------
def test_names_longer_than_a_file_name_are_usage_errors_creating_nothing(t: Table) -> None:
    before, files = t.state(), tree(Path(t.wh))
    assert_fails(t.args("tag", "create", TABLE, LONG), 2, "tag name is 300 bytes long; at most 200")
    assert_fails(t.args("branch", "create", TABLE, LONG), 2, "branch name is 300 bytes long")
    assert_fails(t.args("create", f"db.{LONG}", "--schema", "id INT"), 2, "table name is 300 bytes long")
    assert_fails(t.args("create", f"{LONG}.t", "--schema", "id INT"), 2, "database name is 300 bytes long")
    assert t.state() == before and tree(Path(t.wh)) == files
    assert not (t.dir / "branch").exists()
    # 200 bytes fit, with the tag- prefix and the temporary name lakectl writes it through
    ok(*t.args("tag", "create", TABLE, "y" * 200))
    assert (t.dir / "tag" / f"tag-{'y' * 200}").is_file()


@pytest.fixture()
def read_only_warehouse(tmp_path: Path) -> Path:
    """A warehouse holding db.t (two rows) on a tmpfs remounted read-only, where the machine lets
    the tests mount one; root cannot write there (unlike a chmod 0555 directory)."""
    mount_point = tmp_path / "ro"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount_point)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        wh = mount_point / "wh"
        ok("-w", wh, "create", TABLE, "--schema", "id INT, name STRING")
        ok("-w", wh, "write", TABLE, "-i", write_csv(tmp_path / "rows.csv", ["id", "name"], [[1, "a"], [2, "b"]]))
        subprocess.run(["mount", "-o", "remount,ro", str(mount_point)], check=True)
        yield wh
    finally:
        subprocess.run(["umount", str(mount_point)], check=False)


def test_a_read_only_filesystem_through_the_console_script(read_only_warehouse: Path, tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("lakectl")
    if not script.exists():
        pytest.skip(f"no console script next to {sys.executable}")
    wh, table_dir = read_only_warehouse, read_only_warehouse / "db.db" / "t"
    files = tree(wh)
    more = write_csv(tmp_path / "more.csv", ["id", "name"], [[3, "c"]])

    def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(script), "-w", str(wh), *map(str, args)], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path, env={**os.environ, "HOME": str(tmp_path)})

    for args, where in ((("write", TABLE, "-i", more), f"{table_dir}/"),
                        (("tag", "create", TABLE, "v1"), f"{table_dir}/tag/"),
                        (("create", "db.u", "--schema", "id INT"), f"{wh}/db.db/u/")):
        result = run(*args)
        assert result.returncode == 11, (args, result.stderr)
        assert result.stderr.startswith(f"error: storage: read-only file system at {where}"), result.stderr
        assert len(result.stderr.splitlines()) == 1 and result.stdout == ""
    scanned = run("scan", TABLE, "-f", "json")
    assert scanned.returncode == 0 and sorted(r["id"] for r in json.loads(scanned.stdout)) == [1, 2]
    assert tree(wh) == files
