"""Test-side access to an independent Iceberg reader, pyiceberg 0.12, in its own virtualenv.

pyiceberg brings its own pyarrow and dependencies, so it runs as a subprocess from
``.venv-iceberg`` (``make iceberg-oracle``), as the pypaimon oracle does from ``.venv-oracle``
(tests/interop/oracle.py). ``tests/oracle/iceberg_read.py`` opens a metadata file with
``StaticTable.from_metadata`` (no catalog) and scans it; rows cross as an Arrow IPC file and
come back in the Java oracle's normal form (decimals as strings, timestamps ISO), sorted, so
they compare with ``java_oracle.lakectl_rows`` of a lakectl scan.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa

from tests.interop.java_oracle import lakectl_rows
from tests.venvs import venv_python

REPO_ROOT = Path(__file__).resolve().parents[2]
_SCRIPT = REPO_ROOT / "tests" / "oracle" / "iceberg_read.py"
_TIMEOUT_SECONDS = 300


def iceberg_python() -> str:
    """pyiceberg 0.12's python (``LAKECTL_ICEBERG_PYTHON`` or ``.venv-iceberg``)."""
    return venv_python("LAKECTL_ICEBERG_PYTHON", ".venv-iceberg", "iceberg-oracle", "pyiceberg")


def latest_metadata(metadata_dir: str | os.PathLike[str]) -> Path:
    """The metadata file ``version-hint.text`` names in ``metadata_dir`` (as Hadoop tables do)."""
    directory = Path(metadata_dir)
    version = (directory / "version-hint.text").read_text(encoding="utf-8").strip()
    return directory / f"v{version}.metadata.json"


def iceberg_read(metadata: str | os.PathLike[str], tmp_path: Path, snapshot: int | None = None,
                 row_filter: str | None = None, each_snapshot: bool = False) -> tuple[list[list[Any]], dict[str, Any]]:
    """Scan an Iceberg table with pyiceberg.

    Args:
        metadata: a ``v<N>.metadata.json`` file, or a metadata directory (its version hint is followed).
        tmp_path: scratch directory for the exchanged IPC file.
        snapshot: read this snapshot id instead of the current one.
        row_filter: a pyiceberg row filter; files are pruned by the manifests' partition values
            and column stats.
        each_snapshot: also read every snapshot of the metadata (time travel): the JSON's
            ``each`` maps each snapshot id to its ``schema``, ``files`` and ``rows``.

    Returns:
        The rows, normal form, sorted; and the script's JSON line (``snapshot``,
        ``current_snapshot``, ``snapshots``, ``schema``, ``partition_spec``, ``refs``,
        ``format_version``, ``files``, ``file_stats``).
    """
    args = (["--snapshot", str(snapshot)] if snapshot is not None else []) + \
        (["--filter", row_filter] if row_filter is not None else []) + (["--each-snapshot"] if each_snapshot else [])
    out, meta = _run_reader(metadata, tmp_path, "iceberg-read", args)
    with pa.OSFile(str(out), "rb") as source:
        table = pa.ipc.open_file(source).read_all()
    meta["each"] = {int(k): v for k, v in meta.get("each", {}).items()}
    for sid, read in meta["each"].items():
        with pa.OSFile(f"{out}.{sid}", "rb") as source:
            read["rows"] = lakectl_rows(pa.ipc.open_file(source).read_all())
    return lakectl_rows(table), meta


def iceberg_scans(metadata: str | os.PathLike[str], tmp_path: Path,
                  row_filters: list[str]) -> list[tuple[list[list[Any]], list[str]]]:
    """Scan an Iceberg table with pyiceberg once per row filter, in one process.

    Returns:
        Per filter, in order: the rows (normal form, sorted) and the data files the scan planned.
    """
    out, meta = _run_reader(metadata, tmp_path, "iceberg-scans",
                            [a for f in row_filters for a in ("--filter", f)])
    found = []
    for i, scan in enumerate(meta["scans"]):
        rows_file = out if len(row_filters) == 1 else Path(f"{out}-{i}")
        with pa.OSFile(str(rows_file), "rb") as source:
            found.append((lakectl_rows(pa.ipc.open_file(source).read_all()), scan["files"]))
    return found


def _run_reader(metadata: str | os.PathLike[str], tmp_path: Path, stem: str,
                args: list[str]) -> tuple[Path, dict[str, Any]]:
    """Run tests/oracle/iceberg_read.py on ``metadata`` (a file, or a directory whose version
    hint is followed); returns the IPC file it wrote the rows to and its JSON line."""
    path = Path(metadata)
    if path.is_dir():
        path = latest_metadata(path)
    out = Path(tmp_path) / f"{stem}-{len(list(Path(tmp_path).glob(f'{stem}-*')))}.arrow"
    cmd = [iceberg_python(), str(_SCRIPT), str(path), str(out), *args]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=_TIMEOUT_SECONDS, check=False)
    assert result.returncode == 0, (
        f"pyiceberg failed (exit {result.returncode}): {' '.join(cmd)}\n"
        f"--- stderr ---\n{result.stderr[-4000:]}\n--- stdout ---\n{result.stdout[-2000:]}"
    )
    return out, json.loads(result.stdout.strip().splitlines()[-1])


_WRITE_SCRIPT = REPO_ROOT / "tests" / "oracle" / "iceberg_write.py"


def iceberg_write(catalog: str | os.PathLike[str], warehouse: str | os.PathLike[str], spec: dict[str, Any]) -> Path:
    """Write an Iceberg table with pyiceberg (``tests/oracle/iceberg_write.py`` says what
    ``spec`` holds) into a SQLite catalog laid out as pyiceberg's SqlCatalog; returns its
    current metadata file."""
    cmd = [iceberg_python(), str(_WRITE_SCRIPT), str(catalog), str(warehouse), json.dumps(spec)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=_TIMEOUT_SECONDS, check=False)
    assert result.returncode == 0, f"pyiceberg write failed: {result.stderr[-4000:]}"
    location = json.loads(result.stdout.strip().splitlines()[-1])["metadata"]
    return Path(location.removeprefix("file://"))


def files_named(metadata: str | os.PathLike[str]) -> set[str]:
    """The file names a metadata file names, itself included: its snapshots' manifest lists, the
    manifests they list, and the Puffin files beside it that their delete manifests point into
    (read with fastavro, not through lakectl's code)."""
    import fastavro

    path = Path(metadata)
    doc = json.loads(path.read_text(encoding="utf-8"))
    names = {path.name}
    for snap in doc["snapshots"]:
        names.add(Path(snap["manifest-list"]).name)
        with open(snap["manifest-list"], "rb") as f:
            listed = list(fastavro.reader(f))
        names.update(Path(r["manifest_path"]).name for r in listed)
        for r in listed:
            if r["content"] == 1:  # deletes: the Puffin files of its deletion vectors
                with open(r["manifest_path"], "rb") as m:
                    names.update(Path(e["data_file"]["file_path"]).name for e in fastavro.reader(m)
                                 if Path(e["data_file"]["file_path"]).parent == path.parent)
    return names


def assert_only_named_files(metadata_dir: str | os.PathLike[str], versions: list[int] | None = None) -> None:
    """The metadata directory holds the version hint, the metadata versions given (default: the
    current one) and exactly the files they name: nothing left behind, nothing missing."""
    directory = Path(metadata_dir)
    if versions is None:
        versions = [int((directory / "version-hint.text").read_text(encoding="utf-8").strip())]
    expected = {"version-hint.text"}.union(*(files_named(directory / f"v{v}.metadata.json") for v in versions))
    present = set(os.listdir(directory))
    assert present == expected, f"not named: {sorted(present - expected)}; missing: {sorted(expected - present)}"
