"""``lakectl rescale`` through CliRunner: a dry run commits nothing and says what it would
rewrite; the rescale keeps every row and sets the bucket option; asking for
the count the files already have commits nothing; the refusals are one line and non-zero."""

from __future__ import annotations

from pathlib import Path

from cli_kit import assert_lakectl_words, invoke, ok

T = "db.t"


def _table(tmp_path: Path, *options: str, partitioned: bool = True) -> str:
    wh = str(tmp_path / "wh")
    keys = ["--primary-key", "id,dt", "--partition-by", "dt"] if partitioned else ["--primary-key", "id"]
    ok("create", T, "-w", wh, "-s", "id BIGINT NOT NULL, v STRING, dt STRING NOT NULL", *keys,
       *[a for o in options for a in ("-o", o)])
    rows = tmp_path / "rows.csv"
    rows.write_text("id,v,dt\n" + "".join(f"{i},v{i},d{i % 2}\n" for i in range(10)))
    ok("write", T, "-w", wh, "-i", rows)
    return wh


def _fails(code: int, *args: object) -> str:
    result = invoke(*args)
    assert result.exit_code == code, result.output
    line = result.stderr.strip()
    assert line.startswith("error: ") and "\n" not in line, line
    assert_lakectl_words(line)
    return line


def test_a_dry_run_commits_nothing_and_the_rescale_puts_each_key_in_its_new_bucket(tmp_path: Path) -> None:
    wh = _table(tmp_path, "bucket=2")
    dry = ok("rescale", T, "-w", wh, "--buckets", "3", "--dry-run")
    assert dry == {"table": T, "branch": "main", "snapshot_id": None, "buckets_before": [2], "buckets": 3,
                   "partitions_rewritten": 2, "files_before": dry["files_before"], "records_before": 10,
                   "records_written": None, "files_after": None, "schema_id": None, "dry_run": True,
                   "engine": "local"}
    assert [s["snapshot_id"] for s in ok("snapshots", T, "-w", wh)] == [1]
    assert ok("describe", T, "-w", wh)["buckets"] == 2

    done = ok("rescale", T, "-w", wh, "--buckets", "3")
    assert (done["snapshot_id"], done["records_written"], done["schema_id"]) == (2, 10, 1)
    assert ok("describe", T, "-w", wh)["buckets"] == 3
    # (Which key lands in which bucket is Java's to judge: tests/interop/test_rescale_interop.py.)
    files = ok("files", T, "-w", wh)
    assert {f["bucket"] for f in files} <= {0, 1, 2} and sum(f["record_count"] for f in files) == 10
    assert sorted((r["id"], r["v"]) for r in ok("scan", T, "-w", wh)) == [(i, f"v{i}") for i in range(10)]

    again = ok("rescale", T, "-w", wh, "--buckets", "3")  # already 3: nothing to do
    assert (again["snapshot_id"], again["records_written"]) == (None, 0)
    assert sorted(s["snapshot_id"] for s in ok("snapshots", T, "-w", wh)) == [1, 2]


def test_the_refusals(tmp_path: Path) -> None:
    wh = _table(tmp_path, "bucket=2")
    assert "at least 1" in _fails(2, "rescale", T, "-w", wh, "--buckets", "0")
    assert "no data files" in _fails(2, "rescale", T, "-w", wh, "--buckets", "3", "--partition", "dt=nope")
    assert "not a partition column" in _fails(2, "rescale", T, "-w", wh, "--buckets", "3", "--partition", "v=1")
    dynamic = _table(tmp_path / "dyn")
    assert "dynamic buckets" in _fails(1, "rescale", T, "-w", dynamic, "--buckets", "3")
    flat = _table(tmp_path / "flat", "bucket=2", partitioned=False)
    assert "not partitioned" in _fails(2, "rescale", T, "-w", flat, "--buckets", "3", "--partition", "dt=d0")
