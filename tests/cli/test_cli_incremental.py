"""``lakectl scan --incremental-between A,B`` / ``--from-snapshot A [--to-snapshot B]`` through
``CliRunner`` on real tables under ``tmp_path``.

The tables are created and written with the CLI (CDC input with ``--row-kind-column``); every
expected change is written out here by hand from those inputs: the input records of a
``changelog-producer=input`` table (the range, format and error tests), the exact
-U/+U/-D/+I of a ``lookup`` table (which its compaction after each write commits), and the
stored records of a table without a producer.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from cli_kit import assert_lakectl_words
from typer.testing import CliRunner, Result

from lakectl.app import app

runner = CliRunner()

Row = dict[str, Any]
TABLE = "db.t"
SCHEMA = "id BIGINT NOT NULL, name STRING, qty INT"
COLUMNS = ["_row_kind", "id", "name", "qty"]


# ---- harness -------------------------------------------------------------------------------
def invoke(*args: Any) -> Result:
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def ok(*args: Any) -> Result:
    result = invoke(*args)
    assert result.exit_code == 0, (f"lakectl {' '.join(map(str, args))} exited {result.exit_code}\n"
                                   f"stdout: {result.stdout}\nstderr: {result.stderr}")
    return result


def jsonl(wh: str, *args: Any) -> list[Row]:
    return [json.loads(line) for line in ok("--warehouse", wh, "--format", "jsonl", *args).stdout.splitlines()]


def as_json(wh: str, *args: Any) -> Any:
    return json.loads(ok("--warehouse", wh, "--format", "json", *args).stdout)


def assert_one_line_error(result: Result, code: int, *fragments: str) -> str:
    """Exit ``code``, one ``error:`` line on stderr naming ``fragments``, nothing on stdout."""
    detail = f"exit {result.exit_code}\nstdout: {result.stdout!r}\nstderr: {result.stderr!r}"
    assert result.exit_code == code, detail
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), detail
    assert_lakectl_words(lines[0])
    assert "Traceback" not in result.stderr and "internal error" not in lines[0], detail
    for fragment in fragments:
        assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"
    assert result.stdout == "", detail
    return lines[0]


def fails(wh: str, code: int, *args: Any, fragments: tuple[str, ...] = ()) -> str:
    return assert_one_line_error(invoke("--warehouse", wh, "--format", "jsonl", *args), code, *fragments)


def order(rows: list[Row]) -> list[Row]:
    rank = {"-U": 0, "+U": 1, "-D": 2, "+I": 3}
    return sorted(rows, key=lambda r: (r["id"], rank[r["_row_kind"]], json.dumps(r, sort_keys=True)))


def change(kind: str, id_: int, name: str | None, qty: int | None) -> Row:
    return {"_row_kind": kind, "id": id_, "name": name, "qty": qty}


# ---- the tables ---------------------------------------------------------------------------
# Commits: 1 write, 2 write, 3 full compaction, 4 write.
WRITES = {
    1: [("+I", 1, "a", 10), ("+I", 2, "b", 20), ("+I", 3, "c", 30)],
    2: [("+U", 1, "a", 11), ("-D", 2, "b", 20), ("+I", 4, "d", 40)],
    4: [("+U", 3, "c", 33)],
}
# What changelog-producer=lookup must record for each snapshot.
LOOKUP_CHANGES = {
    1: [change("+I", 1, "a", 10), change("+I", 2, "b", 20), change("+I", 3, "c", 30)],
    2: [change("-U", 1, "a", 10), change("+U", 1, "a", 11), change("-D", 2, "b", 20), change("+I", 4, "d", 40)],
    3: [],
    4: [change("-U", 3, "c", 30), change("+U", 3, "c", 33)],
}
# Without a producer: the records each write stored (the input's own -D values included);
# with changelog-producer=input the same records, as the write's changelog.
DELTA_CHANGES = {sid: [change(*r) for r in rows] for sid, rows in WRITES.items()} | {3: []}
INPUT_CHANGES = DELTA_CHANGES


def changes_of(expected: dict[int, list[Row]], start: int, end: int) -> list[Row]:
    return order([r for sid in range(start + 1, end + 1) for r in expected[sid]])


def build(wh: str, tmp_path: Path, producer: str | None = "input", name: str = TABLE) -> None:
    options = ["--option", "bucket=2", "--option", "write-only=true"]
    if producer:
        options += ["--option", f"changelog-producer={producer}"]
    ok("--warehouse", wh, "create", name, "--schema", SCHEMA, "--primary-key", "id", *options)
    for sid in (1, 2, 3, 4):
        if sid == 3:
            ok("--warehouse", wh, "compact", name, "--full")
            continue
        path = tmp_path / f"{name}-{sid}.jsonl"
        path.write_text("".join(json.dumps({"op": k, "id": i, "name": n, "qty": q}) + "\n"
                                for k, i, n, q in WRITES[sid]))
        ok("--warehouse", wh, "write", name, "--input", path, "--row-kind-column", "op")
    assert [s["snapshot_id"] for s in as_json(wh, "snapshots", name)] in ([1, 2, 3, 4], [4, 3, 2, 1])


@pytest.fixture
def wh(tmp_path: Path) -> str:
    warehouse = str(tmp_path / "wh")
    build(warehouse, tmp_path)
    return warehouse


# ---- reads ---------------------------------------------------------------------------------
@pytest.mark.parametrize("start,end", [(0, 1), (1, 2), (2, 3), (3, 4), (1, 4), (0, 4), (4, 4)])
def test_incremental_between_jsonl(wh: str, start: int, end: int) -> None:
    rows = jsonl(wh, "scan", TABLE, "--incremental-between", f"{start},{end}")
    assert all(list(r) == COLUMNS for r in rows), "the _row_kind column comes first"
    assert order(rows) == changes_of(INPUT_CHANGES, start, end)


def test_incremental_between_json_and_csv(wh: str) -> None:
    rows = as_json(wh, "scan", TABLE, "--incremental-between", "1,4")
    assert isinstance(rows, list) and all(list(r) == COLUMNS for r in rows)
    assert order(rows) == changes_of(INPUT_CHANGES, 1, 4)
    out = ok("--warehouse", wh, "-f", "csv", "scan", TABLE, "--incremental-between", "1,2").stdout
    reader = csv.DictReader(io.StringIO(out))
    assert reader.fieldnames == COLUMNS
    got = [{**r, "id": int(r["id"]), "qty": int(r["qty"])} for r in reader]
    assert order(got) == changes_of(INPUT_CHANGES, 1, 2)


def test_changes_come_out_snapshot_by_snapshot(wh: str) -> None:
    """Replaying the output in order needs each snapshot's rows before the next one's."""
    rows = jsonl(wh, "scan", TABLE, "--incremental-between", "0,4")
    sizes = [len(INPUT_CHANGES[sid]) for sid in (1, 2, 3, 4)]
    chunks, at = [], 0
    for size in sizes:
        chunks.append(order(rows[at:at + size]))
        at += size
    assert chunks == [order(INPUT_CHANGES[sid]) for sid in (1, 2, 3, 4)]
    state: dict[int, Row] = {}
    for r in rows:
        if r["_row_kind"] in ("+I", "+U"):
            state[r["id"]] = {k: r[k] for k in ("id", "name", "qty")}
        else:
            assert state.pop(r["id"]) == {k: r[k] for k in ("id", "name", "qty")}
    assert sorted(state.values(), key=lambda r: r["id"]) == sorted(jsonl(wh, "scan", TABLE), key=lambda r: r["id"])


def test_from_snapshot_defaults_to_the_latest(wh: str) -> None:
    assert order(jsonl(wh, "scan", TABLE, "--from-snapshot", "1")) == changes_of(INPUT_CHANGES, 1, 4)
    assert order(jsonl(wh, "scan", TABLE, "--from-snapshot", "0")) == changes_of(INPUT_CHANGES, 0, 4)
    assert order(jsonl(wh, "scan", TABLE, "--from-snapshot", "1", "--to-snapshot", "2")) == \
        changes_of(INPUT_CHANGES, 1, 2)
    assert jsonl(wh, "scan", TABLE, "--from-snapshot", "4") == []


def test_select_where_and_limit(wh: str) -> None:
    rows = jsonl(wh, "scan", TABLE, "--incremental-between", "0,4", "--select", "name,qty")
    assert all(list(r) == ["_row_kind", "name", "qty"] for r in rows)
    want = [{k: r[k] for k in ("_row_kind", "name", "qty")} for r in changes_of(INPUT_CHANGES, 0, 4)]
    assert sorted(rows, key=json.dumps) == sorted(want, key=json.dumps)

    rows = jsonl(wh, "scan", TABLE, "--incremental-between", "0,4", "--where", "id = 1")
    assert order(rows) == [r for r in changes_of(INPUT_CHANGES, 0, 4) if r["id"] == 1]

    # The filter may name a column the selection leaves out.
    rows = jsonl(wh, "scan", TABLE, "--from-snapshot", "1", "--select", "id", "--where", "qty >= 30")
    assert sorted((r["_row_kind"], r["id"]) for r in rows) == sorted(
        (r["_row_kind"], r["id"]) for r in changes_of(INPUT_CHANGES, 1, 4) if r["qty"] >= 30)
    assert all(list(r) == ["_row_kind", "id"] for r in rows)

    rows = jsonl(wh, "scan", TABLE, "--incremental-between", "0,4", "--limit", "2")
    assert len(rows) == 2 and all(r in changes_of(INPUT_CHANGES, 0, 4) for r in rows)


def test_output_parquet_and_jsonl_files(wh: str, tmp_path: Path) -> None:
    target = tmp_path / "x.parquet"
    record = as_json(wh, "scan", TABLE, "--incremental-between", "1,4", "--output", target)
    data = pq.read_table(target)
    assert data.column_names == COLUMNS
    assert record["records_written"] == data.num_rows == len(changes_of(INPUT_CHANGES, 1, 4))
    assert order(data.to_pylist()) == changes_of(INPUT_CHANGES, 1, 4)

    target = tmp_path / "x.jsonl"
    ok("--warehouse", wh, "scan", TABLE, "--from-snapshot", "3", "--output", target, "--select", "id,qty")
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert order(rows) == [{k: r[k] for k in ("_row_kind", "id", "qty")} for r in changes_of(INPUT_CHANGES, 3, 4)]


def test_compact_only_range_is_empty(wh: str, tmp_path: Path) -> None:
    assert as_json(wh, "scan", TABLE, "--incremental-between", "2,3") == []
    target = tmp_path / "empty.parquet"
    ok("--warehouse", wh, "scan", TABLE, "--incremental-between", "2,3", "--output", target)
    assert pq.read_table(target).column_names == COLUMNS and pq.read_table(target).num_rows == 0


def test_table_without_producer_reads_the_written_records(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    build(wh, tmp_path, producer=None, name="db.plain")
    for start, end in [(0, 4), (1, 2), (2, 3), (1, 4)]:
        rows = jsonl(wh, "scan", "db.plain", "--incremental-between", f"{start},{end}")
        assert order(rows) == changes_of(DELTA_CHANGES, start, end), (start, end)


# ---- errors --------------------------------------------------------------------------------
def test_start_after_end_is_a_usage_error(wh: str) -> None:
    fails(wh, 2, "scan", TABLE, "--incremental-between", "3,1", fragments=("3,1",))
    fails(wh, 2, "scan", TABLE, "--from-snapshot", "3", "--to-snapshot", "1", fragments=("3,1",))


def test_end_past_the_latest_is_not_found(wh: str) -> None:
    fails(wh, 3, "scan", TABLE, "--incremental-between", "1,9", fragments=("9", "latest: 4"))
    fails(wh, 3, "scan", TABLE, "--from-snapshot", "0", "--to-snapshot", "5", fragments=("5",))


def test_expired_snapshot_in_range_is_not_found(wh: str) -> None:
    expired = as_json(wh, "expire", TABLE, "--retain-max", "2", "--retain-min", "2")
    assert expired["snapshots_expired"] == [1, 2]
    for between in ("1,4", "0,4", "1,3"):
        fails(wh, 3, "scan", TABLE, "--incremental-between", between, fragments=("expired",))
    fails(wh, 3, "scan", TABLE, "--incremental-between", "0,2", fragments=("snapshot 2",))  # the end expired
    fails(wh, 3, "scan", TABLE, "--from-snapshot", "1", fragments=("expired",))
    # The start is exclusive: ranges of retained snapshots still read, from an expired start too.
    for start, end in [(3, 4), (2, 4), (2, 3)]:
        assert order(jsonl(wh, "scan", TABLE, "--incremental-between", f"{start},{end}")) == \
            changes_of(INPUT_CHANGES, start, end)


@pytest.mark.parametrize("other", [["--snapshot-id", "2"], ["--tag", "t1"], ["--timestamp", "2024-01-01T00:00:00"]])
def test_incremental_with_a_snapshot_selector_is_a_usage_error(wh: str, other: list[str]) -> None:
    fails(wh, 2, "scan", TABLE, "--incremental-between", "1,2", *other, fragments=("incremental",))
    fails(wh, 2, "scan", TABLE, "--from-snapshot", "1", *other, fragments=("incremental",))


@pytest.mark.parametrize("text", ["3", "1,2,3", "1,", ",2", ""])
def test_malformed_incremental_between(wh: str, text: str) -> None:
    fails(wh, 2, "scan", TABLE, "--incremental-between", text, fragments=("--incremental-between",))


def test_a_negative_start_is_a_usage_error(wh: str) -> None:
    fails(wh, 2, "scan", TABLE, "--incremental-between", "-1,2", fragments=("-1,2", "0 <= START"))


def test_conflicting_or_incomplete_range_flags(wh: str) -> None:
    fails(wh, 2, "scan", TABLE, "--incremental-between", "1,2", "--from-snapshot", "1")
    fails(wh, 2, "scan", TABLE, "--to-snapshot", "2", fragments=("--from-snapshot",))


def test_unknown_column_with_incremental(wh: str) -> None:
    fails(wh, 2, "scan", TABLE, "--incremental-between", "1,2", "--select", "nope", fragments=("nope",))
    fails(wh, 2, "scan", TABLE, "--incremental-between", "1,2", "--where", "nope = 1", fragments=("nope",))


def test_missing_table(tmp_path: Path) -> None:
    fails(str(tmp_path / "wh"), 3, "scan", "db.none", "--incremental-between", "0,1")


def test_a_lookup_tables_changes_come_from_the_compaction_after_each_write(tmp_path: Path) -> None:
    """With ``changelog-producer=lookup`` each write is an APPEND snapshot without changelog
    and the compaction right after it a COMPACT snapshot holding the write's exact changes,
    as Java commits them (Java's streaming readers read only COMPACT snapshots' changelog)."""
    wh = str(tmp_path / "wh")
    ok("--warehouse", wh, "create", TABLE, "--schema", SCHEMA, "--primary-key", "id", "--option", "bucket=2",
       "--option", "changelog-producer=lookup")
    for step in (1, 2, 4):
        path = tmp_path / f"w{step}.jsonl"
        path.write_text("".join(json.dumps({"op": k, "id": i, "name": n, "qty": q}) + "\n"
                                for k, i, n, q in WRITES[step]))
        before = max((s["snapshot_id"] for s in as_json(wh, "snapshots", TABLE)), default=0)
        ok("--warehouse", wh, "write", TABLE, "--input", path, "--row-kind-column", "op")
        snaps = sorted(as_json(wh, "snapshots", TABLE), key=lambda s: s["snapshot_id"])
        assert [s["commit_kind"] for s in snaps if s["snapshot_id"] > before] == ["APPEND", "COMPACT"]
        append, compact = before + 1, before + 2
        assert jsonl(wh, "scan", TABLE, "--incremental-between", f"{before},{append}") == []
        assert order(jsonl(wh, "scan", TABLE, "--incremental-between", f"{append},{compact}")) == \
            order(LOOKUP_CHANGES[step])


# ---- scan modes and tag ranges (Paimon's incremental-between-scan-mode) ----------------------
def tag(wh: str, name: str, snapshot: int) -> None:
    ok("--warehouse", wh, "tag", "create", TABLE, name, "--snapshot-id", snapshot)


# What each key's merged row became: between snapshots 1 and 2 no file went away, so the rows
# are snapshot 2's records merged per key (the delete kept as -D); between 2 and 4 the full
# compaction rewrote every file, and only key 3 changed (key 2 was already deleted at 2).
DIFF_1_2 = [change("+U", 1, "a", 11), change("-D", 2, "b", 20), change("+I", 4, "d", 40)]
DIFF_2_4 = [change("+U", 3, "c", 33)]


def test_a_range_of_two_tags_is_a_diff_of_their_snapshots(wh: str) -> None:
    tag(wh, "t1", 1)
    tag(wh, "t2", 2)
    tag(wh, "t4", 4)
    assert order(jsonl(wh, "scan", TABLE, "--incremental-between", "t1,t2")) == order(DIFF_1_2)
    assert jsonl(wh, "scan", TABLE, "--incremental-between", "t2,t4") == DIFF_2_4
    assert jsonl(wh, "scan", TABLE, "--incremental-between", "t2,t2") == []
    with_mode = jsonl(wh, "scan", TABLE, "--incremental-between", "t2,t4", "--incremental-between-scan-mode", "diff")
    assert with_mode == DIFF_2_4


def test_diff_mode_between_snapshot_ids(wh: str) -> None:
    assert order(jsonl(wh, "scan", TABLE, "--incremental-between", "1,2",
                       "--incremental-between-scan-mode", "DIFF")) == order(DIFF_1_2)
    assert jsonl(wh, "scan", TABLE, "--from-snapshot", "2", "--incremental-between-scan-mode", "diff") == DIFF_2_4
    # every change of the same range, in commit order (the default, Paimon 1.1+)
    assert order(jsonl(wh, "scan", TABLE, "--incremental-between", "2,4")) == changes_of(INPUT_CHANGES, 2, 4)


def test_the_table_option_sets_the_default_mode_and_the_flag_overrides_it(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    build(wh, tmp_path, producer=None, name="db.plain")
    delta = changes_of(DELTA_CHANGES, 0, 4)
    assert order(jsonl(wh, "scan", "db.plain", "--incremental-between", "0,4")) == delta  # auto: delta
    ok("--warehouse", wh, "alter-schema", "db.plain", "--set-option", "incremental-between-scan-mode=changelog")
    assert jsonl(wh, "scan", "db.plain", "--incremental-between", "0,4") == []  # no producer, no changelog
    assert order(jsonl(wh, "scan", "db.plain", "--incremental-between", "0,4",
                       "--incremental-between-scan-mode", "delta")) == delta


def test_delta_mode_on_a_changelog_table_reads_the_stored_records(wh: str) -> None:
    rows = jsonl(wh, "scan", TABLE, "--incremental-between", "0,4", "--incremental-between-scan-mode", "delta")
    assert order(rows) == changes_of(DELTA_CHANGES, 0, 4)


def test_scan_mode_and_tag_errors(wh: str) -> None:
    tag(wh, "t1", 1)
    tag(wh, "t2", 2)
    fails(wh, 3, "scan", TABLE, "--incremental-between", "t1,nope", fragments=("tag nope", "does not exist"))
    fails(wh, 3, "scan", TABLE, "--incremental-between", "a,b", fragments=("tag a ",))
    fails(wh, 2, "scan", TABLE, "--incremental-between", "t1,2", fragments=("two tags or two snapshot ids",))
    fails(wh, 2, "scan", TABLE, "--incremental-between", "t2,t1", fragments=("end tag t1", "start tag t2"))
    fails(wh, 2, "scan", TABLE, "--incremental-between", "t1,t2", "--incremental-between-scan-mode", "delta",
          fragments=("diff",))
    fails(wh, 2, "scan", TABLE, "--incremental-between", "1,2", "--incremental-between-scan-mode", "merged",
          fragments=("'merged'", "auto, delta, changelog, diff"))
    fails(wh, 2, "scan", TABLE, "--incremental-between-scan-mode", "diff", fragments=("--incremental-between",))
    fails(wh, 2, "scan", TABLE, "--follow", "--incremental-between-scan-mode", "delta", fragments=("--follow",))
    fails(wh, 3, "scan", TABLE, "--incremental-between", "0,2", "--incremental-between-scan-mode", "diff",
          fragments=("snapshot 0",))


def test_diff_is_refused_on_a_deletion_vector_table(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    ok("--warehouse", wh, "create", TABLE, "--schema", SCHEMA, "--primary-key", "id", "--option", "bucket=1",
       "--option", "deletion-vectors.enabled=true")
    for step in (1, 2):
        path = tmp_path / f"w{step}.jsonl"
        path.write_text("".join(json.dumps({"op": k, "id": i, "name": n, "qty": q}) + "\n"
                                for k, i, n, q in WRITES[step]))
        ok("--warehouse", wh, "write", TABLE, "--input", path, "--row-kind-column", "op")
    fails(wh, 2, "scan", TABLE, "--incremental-between", "1,2", "--incremental-between-scan-mode", "diff",
          fragments=("deletion vectors",))
