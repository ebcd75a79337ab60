"""Every command of the CLI with ``--format json``, on one prepared warehouse, against the one
JSON vocabulary the README documents ("JSON output"): the output parses; each command's keys
are its README row's; every record about a table names its ``table`` and ``branch``; a count
of records is never called rows; times are ISO 8601 with a zone, with ``*_millis`` only beside
the time they repeat; ``maintain``'s action details are the objects their commands print.

The command tree is walked, so a command added without an invocation here fails
``test_every_command_of_the_tree_runs``, and one added without a README row fails
``test_every_command_has_its_readme_row``."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any, Iterator

import pytest
import typer.main
from typer.testing import CliRunner

from lakectl.app import app

README = Path(__file__).resolve().parents[2] / "README.md"
runner = CliRunner()

SCHEMA = "id BIGINT, customer STRING, amount DECIMAL(10, 2), dt STRING"

# (README row, arguments, stdin), run in this order on one warehouse: each step leaves what a
# later one needs (a tag to rename, a branch to fast-forward, a table to drop).
RUNS: list[tuple[str, list[str], str | None]] = [
    ("create", ["create", "shop.orders", "--schema", SCHEMA, "--primary-key", "id,dt", "--partition-by", "dt",
                "--option", "bucket=2"], None),
    ("write", ["write", "shop.orders", "-i", "orders.csv"], None),
    ("write", ["write", "shop.orders", "-i", "orders.csv"], None),
    ("migrate", ["migrate", "events", "shop.events"], None),
    # a table maintain has work on: compaction and snapshot expiry are due
    ("create", ["create", "db.busy", "--schema", SCHEMA, "--primary-key", "id", "-o", "bucket=1", "-o", "write-only=true",
                "-o", "snapshot.num-retained.min=1", "-o", "snapshot.num-retained.max=2",
                "-o", "num-sorted-run.compaction-trigger=2"], None),
    *[("write", ["write", "db.busy", "-i", "orders.csv"], None)] * 3,
    ("write --stream", ["write", "shop.orders", "-i", "-", "--stream", "--commit-rows", "1", "--commit-user", "feed"],
     '{"id": 5, "customer": "erin", "amount": "1.00", "dt": "2024-01-03"}\n'
     '{"id": 6, "customer": "finn", "amount": "2.00", "dt": "2024-01-03"}\n'),
    ("scan", ["scan", "shop.orders"], None),
    ("scan --output", ["scan", "shop.orders", "--output", "out.parquet"], None),
    ("scan --follow", ["scan", "shop.orders", "--follow", "--max-snapshots", "1"], None),
    ("lookup", ["lookup", "shop.orders", "--key", "id=1"], None),
    ("delete", ["delete", "shop.orders", "--where", "id = 1", "--dry-run"], None),
    ("compact-manifests", ["compact-manifests", "shop.orders", "--dry-run"], None),
    ("create", ["create", "shop.ice", "--schema", SCHEMA, "-o", "metadata.iceberg.storage=table-location"], None),
    ("write", ["write", "shop.ice", "-i", "orders.csv"], None),
    ("iceberg-sync", ["iceberg-sync", "shop.ice", "--dry-run"], None),
    ("compact", ["compact", "shop.orders", "--full"], None),
    ("expire", ["expire", "shop.orders", "--retain-min", "1", "--older-than", "0s", "--dry-run"], None),
    ("expire-changelogs", ["expire-changelogs", "shop.orders", "--retain-min", "1", "--older-than", "0s",
                           "--dry-run"], None),
    ("expire-partitions", ["expire-partitions", "shop.orders", "--expiration-time", "1d", "--dry-run"], None),
    ("truncate", ["truncate", "shop.orders", "--dry-run"], None),
    ("rescale", ["rescale", "shop.orders", "--buckets", "3", "--dry-run"], None),
    ("drop-partition", ["drop-partition", "shop.orders", "--partition", "dt=2024-01-01", "--dry-run"], None),
    ("snapshots", ["snapshots", "shop.orders"], None),
    ("schemas", ["schemas", "shop.orders"], None),
    ("files", ["files", "shop.orders"], None),
    ("partitions", ["partitions", "shop.orders"], None),
    ("buckets", ["buckets", "shop.orders"], None),
    ("manifests", ["manifests", "shop.orders"], None),
    ("describe", ["describe", "shop.orders"], None),
    ("alter-schema", ["alter-schema", "shop.orders", "--add-column", "note STRING", "--dry-run"], None),
    ("tag create", ["tag", "create", "shop.orders", "t1", "--snapshot-id", "1"], None),
    ("tag rename", ["tag", "rename", "shop.orders", "t1", "t2"], None),
    ("tag create", ["tag", "create", "shop.orders", "kept", "--time-retained", "1d"], None),
    ("tag list", ["tag", "list", "shop.orders"], None),
    ("tag delete", ["tag", "delete", "shop.orders", "t2"], None),
    ("expire-tags", ["expire-tags", "shop.orders", "--older-than", "0s", "--dry-run"], None),
    ("branch create", ["branch", "create", "shop.orders", "dev"], None),
    ("branch list", ["branch", "list", "shop.orders"], None),
    ("branch rename", ["branch", "rename", "shop.orders", "dev", "qa", "--dry-run"], None),
    ("branch fast-forward", ["branch", "fast-forward", "shop.orders", "dev", "--dry-run"], None),
    ("create", ["create", "shop.log", "--schema", SCHEMA, "-o", "branch-merge.enabled=true"], None),
    ("write", ["write", "shop.log", "-i", "orders.csv"], None),
    ("branch create", ["branch", "create", "shop.log", "feature"], None),
    ("write", ["write", "shop.log", "-i", "orders.csv", "--branch", "feature"], None),
    ("branch merge", ["branch", "merge", "shop.log", "feature", "--dry-run"], None),
    ("branch merge", ["branch", "merge", "shop.log", "feature"], None),
    ("consumer reset", ["consumer", "reset", "shop.orders", "reader", "--next-snapshot", "1"], None),
    ("consumer list", ["consumer", "list", "shop.orders"], None),
    ("consumer delete", ["consumer", "delete", "shop.orders", "reader"], None),
    ("rollback", ["rollback", "shop.orders", "--snapshot-id", "1", "--dry-run"], None),
    ("clone", ["clone", "shop.orders", "copies.orders"], None),
    ("mark-partition-done", ["mark-partition-done", "shop.orders", "--partition", "dt=2024-01-01"], None),
    ("remove-unexisting-files", ["remove-unexisting-files", "shop.orders", "--dry-run"], None),
    ("remove-orphan-files", ["remove-orphan-files", "shop.orders", "--dry-run", "--older-than", "0s", "--force"], None),
    ("health", ["health", "shop.orders"], None),
    ("check", ["check", "shop.orders"], None),
    ("check --repair", ["check", "shop.orders", "--repair", "--dry-run"], None),
    ("maintain", ["maintain", "db.busy", "shop.orders", "--dry-run"], None),
    ("maintain", ["maintain", "db.busy", "shop.orders"], None),
    ("branch delete", ["branch", "delete", "shop.orders", "dev"], None),
    ("list", ["list"], None),
    ("config show", ["config", "show"], None),
    ("config show --policy", ["config", "show", "--policy"], None),
    ("rename", ["rename", "copies.orders", "copies.renamed"], None),
    ("drop", ["drop", "copies.renamed"], None),
    ("drop-database", ["drop-database", "copies", "--cascade"], None),
]

# Rows of a table, not lakectl's records: only the table's columns.
ROW_COMMANDS = {"scan", "lookup"}
# Results that are not about one branch of one table (README "JSON output"): check checks every
# branch, the others act on whole tables (mark-partition-done on partition directories every branch
# shares), a database, the catalog or the settings.
NOT_ABOUT_A_BRANCH = {"check", "mark-partition-done", "drop", "drop-database", "rename", "list", "config show", "config show --policy"}

# A count of records is `record_count` (held), `*_record_count` or `records_<verb>` (done); a
# key that says row is never one (`rows` is only scan --follow's list of rows).
_ROW_WORD = re.compile(r"(^|_)rows?($|_)")
# Names the vocabulary replaced (README "Renamed fields"): none may come back.
FORBIDDEN = {"row_count", "rows_deleted", "rows_written", "rows_skipped", "deleted_rows", "records", "num_rows",
             "files", "bytes", "lease_taken_at", "lease_released_at"}
_TIME_KEY = re.compile(r"^(time|.*_time|expire_before)$")
_LOOKS_LIKE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:")


def readme_rows() -> dict[str, tuple[str, list[str], dict[str, list[str]]]]:
    """README's JSON output table: command -> (object|array, fields, nested fields)."""
    text = README.read_text()
    section = text[text.index("### JSON output"):]
    section = section[:section.index("\n### ", 5)]
    out = {}
    for name, shape, fields_text in re.findall(r"^\| `([a-z -]+)` \| (object|array) \| (.*) \|$", section, re.M):
        nested = {m.group(1): re.findall(r"`(\w+)`", m.group(2))
                  for m in re.finditer(r"`(\w+)` \[([^\]]*)\]", fields_text)}
        top = re.findall(r"`(\w+)`", re.sub(r"\[[^\]]*\]", "", fields_text))
        out[name] = (shape, top, nested)
    return out


def tree_leaves() -> set[str]:
    def leaves(cmd: Any, path: tuple[str, ...]) -> list[str]:
        subs = getattr(cmd, "commands", None)
        if not subs:
            return [" ".join(path)]
        return [leaf for name, sub in subs.items() for leaf in leaves(sub, (*path, name))]

    return set(leaves(typer.main.get_command(app), ()))


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Any]]:
    """README row -> every JSON document printed under it (a listing: one per element)."""
    root = tmp_path_factory.mktemp("json_every_command")
    (root / "orders.csv").write_text("id,customer,amount,dt\n1,alice,10.50,2024-01-01\n2,bob,20.25,2024-01-02\n")
    import pyarrow as pa
    import pyarrow.parquet as pq

    (root / "events" / "dt=2024-01-01").mkdir(parents=True)
    pq.write_table(pa.table({"id": [1, 2]}), root / "events" / "dt=2024-01-01" / "part-0.parquet")
    wh = str(root / "wh")
    out: dict[str, list[Any]] = {}
    for name, args, stdin in RUNS:
        files = {"orders.csv": str(root / "orders.csv"), "out.parquet": str(root / "out.parquet"),
                 "events": str(root / "events")}
        result = runner.invoke(app, ["-w", wh, "-f", "json", *[files.get(a, a) for a in args]], input=stdin)
        assert result.exit_code == 0, (name, args, result.stdout, result.stderr)
        if name in ("write --stream", "scan --follow"):  # JSON lines as the snapshots commit
            docs = [json.loads(line) for line in result.stdout.splitlines()]
            if name == "write --stream":
                out.setdefault("write --stream summary", []).append(docs.pop())
            out.setdefault(name, []).extend(docs)
            continue
        doc = json.loads(result.stdout)
        if readme_rows()[name][0] == "array":
            assert isinstance(doc, list) and doc, (name, doc)
            out.setdefault(name, []).extend(doc)
        else:
            assert isinstance(doc, dict), (name, doc)
            out.setdefault(name, []).append(doc)
    return out


def _pairs(value: Any, key: str = "") -> Iterator[tuple[str, Any, dict[str, Any] | None]]:
    """Every (key, value, the object holding it) anywhere in a document, but not the keys of
    objects keyed by the user's names (options, partition values)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield k, v, value
            if k not in _USER_KEYED:
                yield from _pairs(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _pairs(v, key)


# Objects of the user's keys, not lakectl's fields: table options, partition values, histogram bins.
_USER_KEYED = {"options", "partition", "partitions", "missing", "file_size_histogram"}


def _records(name: str, doc: dict[str, Any]) -> dict[str, Any]:
    """The document without the rows of a table it carries (scan --follow's rows)."""
    return {k: v for k, v in doc.items() if not (name == "scan --follow" and k == "rows")}


def test_every_command_of_the_tree_runs() -> None:
    ran = {" ".join(args[:2]) if args[0] in ("tag", "branch", "consumer", "config") else args[0]
           for _, args, _ in RUNS}
    assert tree_leaves() - ran == set(), "commands this test does not run: add them to RUNS"


def test_every_command_has_its_readme_row(printed: dict[str, list[Any]]) -> None:
    assert set(printed) == set(readme_rows()), "README rows and commands run differ"


@pytest.mark.parametrize("name", sorted(readme_rows()))
def test_keys_are_the_readme_fields(printed: dict[str, list[Any]], name: str) -> None:
    shape, fields, nested = readme_rows()[name]
    for doc in printed[name]:
        if name in ROW_COMMANDS:
            assert list(doc) == ["id", "customer", "amount", "dt"], (name, doc)
            continue
        assert list(doc) == fields, f"README's fields of {name} differ from its JSON"
        for key, inner in nested.items():
            for item in doc[key]:
                assert list(item) == inner, (name, key, item)


@pytest.mark.parametrize("name", sorted(set(readme_rows()) - ROW_COMMANDS - NOT_ABOUT_A_BRANCH))
def test_every_record_about_a_table_names_table_and_branch(printed: dict[str, list[Any]], name: str) -> None:
    for doc in printed[name]:
        assert list(doc)[:2] == ["table", "branch"], (name, doc)
        assert re.fullmatch(r"\w+\.\w+", doc["table"]), (name, doc["table"])
        assert isinstance(doc["branch"], str) and doc["branch"], (name, doc)


def test_no_count_of_records_is_called_rows(printed: dict[str, list[Any]]) -> None:
    for name, docs in printed.items():
        if name in ROW_COMMANDS:
            continue
        for doc in docs:
            for key, value, _ in _pairs(_records(name, doc)):
                assert key not in FORBIDDEN, (name, key)
                assert not _ROW_WORD.search(key), (name, key, value)
                assert not key.endswith("_at"), (name, key, "a time is *_time, an ISO 8601 string")
    follow = printed["scan --follow"]
    assert all(isinstance(d["rows"], list) for d in follow)


def test_times_are_iso_8601_with_a_zone_and_millis_repeat_them(printed: dict[str, list[Any]]) -> None:
    seen = set()
    for name, docs in printed.items():
        if name in ROW_COMMANDS:
            continue
        for doc in docs:
            for key, value, holder in _pairs(_records(name, doc)):
                if isinstance(value, str) and (_TIME_KEY.match(key) or _LOOKS_LIKE_TIME.match(value)):
                    moment = dt.datetime.fromisoformat(value)
                    assert "T" in value and moment.tzinfo is not None, (name, key, value)
                    seen.add(key)
                elif _TIME_KEY.match(key):
                    assert value is None, (name, key, value)
                if key.endswith("_millis"):
                    base = key[: -len("_millis")]
                    time_key = base if base in holder else f"{base}_time"
                    assert time_key in holder, (name, key, "millis only beside the time they repeat")
                    assert type(value) is int, (name, key, value)
                    iso = dt.datetime.fromisoformat(holder[time_key])
                    assert round(iso.timestamp() * 1000) == value, (name, key)
    assert {"commit_time", "create_time", "time", "expire_before", "last_update_time", "modified_time",
            "lease_taken_time", "lease_released_time"} <= seen


def test_each_branch_is_named(printed: dict[str, list[Any]]) -> None:
    assert {b["branch"] for b in printed["branch list"]} == {"dev"}
    assert [(m["table"], m["branch"]) for m in printed["maintain"]] == \
        [("db.busy", "main"), ("shop.orders", "main"), ("shop.orders", "dev")] * 2


def test_maintain_details_are_what_the_commands_print(printed: dict[str, list[Any]]) -> None:
    """An action's detail has its command's README fields, and the types of that command's own
    JSON (a count where the command counts, a list where it lists)."""
    rows = readme_rows()
    verbs = set()
    for report in printed["maintain"]:
        for action in report["actions"]:
            verb, detail = action["verb"], action["detail"]
            assert list(detail) == rows[verb][1], (verb, detail)
            assert (detail["table"], detail["branch"]) == (report["table"], report["branch"])
            own = printed[verb][0]
            for key, value in detail.items():
                if value is not None and own[key] is not None:
                    assert type(value) is type(own[key]), (verb, key, value, own[key])
            verbs.add(verb)
    assert {"compact", "expire", "remove-orphan-files"} <= verbs, verbs


def test_every_run_of_maintain_names_its_lease_times(printed: dict[str, list[Any]]) -> None:
    dry, run = printed["maintain"][:3], printed["maintain"][3:]
    assert all(r["lease_taken_time"] is None and r["lease_released_time"] is None for r in dry)
    for r in run:
        taken = dt.datetime.fromisoformat(r["lease_taken_time"])
        released = dt.datetime.fromisoformat(r["lease_released_time"])
        assert taken <= released and abs((dt.datetime.now(dt.timezone.utc) - taken).total_seconds()) < 600


def test_a_name_has_one_type_everywhere(printed: dict[str, list[Any]]) -> None:
    """A count is a count in every command, a list a list (``partitions`` was a count in write
    and a list in drop-partition; ``columns`` a count in schemas and a list in describe)."""
    kinds: dict[str, dict[str, set[str]]] = {}
    for name, docs in printed.items():
        if name in ROW_COMMANDS or name == "config show":  # a setting's value is what it is
            continue
        for doc in docs:
            for key, value, _ in _pairs(_records(name, doc)):
                if value is not None:
                    kind = "number" if type(value) in (int, float) else type(value).__name__
                    kinds.setdefault(key, {}).setdefault(kind, set()).add(name)
    mixed = {key: by_kind for key, by_kind in kinds.items() if len(by_kind) > 1}
    assert mixed == {}, mixed
