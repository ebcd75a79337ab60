"""Every `Example(s):` line of every command's help is true: each `lakectl ...` invocation in it
(piped or not) is parsed by the real command tree, as the shell would hand it over, and the
lines of each help text then run literally, in order, as a user following them would, in one
shell script through the console script against a warehouse prepared as they presuppose, each
succeeding with output. (The parse alone catches an example naming a flag,
a value or an argument the command does not take, such as expire-tags' help naming a missing
option; the run catches one the command refuses on a real table, such as a retain-max below
the default retain-min.)"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterator

import pytest
import typer.main
from typer._click.exceptions import UsageError as ClickUsageError
from typer.testing import CliRunner

from lakectl.app import app
from tests.cli.shell_steps import run_steps

ROOT = typer.main.get_command(app)


def _commands(cmd: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, cmd
    for name in getattr(cmd, "commands", None) or ():
        yield from _commands(cmd.get_command(None, name), (*path, name))


def _examples(text: str) -> list[str]:
    """The example block's lines, continuation lines (ending in a backslash) joined."""
    found = re.search(r"Examples?:\s*\n(.*)", text or "", re.S)
    if not found:
        return []
    lines, pending = [], ""
    for raw in found.group(1).replace("\b", "").splitlines():
        line = raw.strip()
        if not line and not pending:
            continue
        pending = f"{pending} {line}".strip()
        if pending.endswith("\\"):
            pending = pending[:-1].strip()
            continue
        if pending:
            lines.append(pending)
        pending = ""
    return lines


EXAMPLES = sorted({(" ".join(path) or "lakectl", line) for path, cmd in _commands(ROOT, ())
                   for line in _examples(cmd.help or "")})


def _invocations(line: str) -> list[list[str]]:
    """The lakectl argument lists of a shell line: split on pipes, redirections dropped."""
    out: list[list[str]] = []
    current: list[str] = []
    words = iter(shlex.split(line))
    for word in words:
        if word in (">", ">>"):
            next(words, None)  # the file a redirection names
        elif word == "|":
            out, current = out + [current], []
        else:
            current.append(word)
    return [args[1:] for args in (*out, current) if args and args[0] == "lakectl"]


def _parse(args: list[str]) -> None:
    """Parse as the command line would, down to the leaf command (raises on a usage error)."""
    ctx = ROOT.make_context("lakectl", list(args))
    cmd = ROOT
    while True:
        rest = [*(ctx._protected_args or []), *ctx.args]
        if not getattr(cmd, "commands", None):
            assert not rest, f"unexpected arguments {rest}"
            return
        name, *rest = rest
        sub = cmd.get_command(ctx, name)
        assert sub is not None, f"no command {name}"
        ctx, cmd = sub.make_context(name, rest, parent=ctx), sub


def test_a_wrong_example_would_fail() -> None:
    """The parse is strict: an option or argument a command does not take is refused."""
    for args in (["expire-tags", "db.t", "--retain", "3"], ["tag", "create"], ["scan", "db.t", "extra"],
                 ["nope"], ["snapshots", "db.t", "--limit", "ten"]):
        with pytest.raises((SystemExit, typer.Exit, ClickUsageError, AssertionError)):
            _parse(args)
    _parse(["expire", "db.t", "--retain-max", "5", "--retain-min", "1", "-f", "json"])  # and a right one passes
    assert _invocations("cat x | lakectl write db.t -i - >> log") == [["write", "db.t", "-i", "-"]]


def test_every_command_with_options_has_examples() -> None:
    assert len(EXAMPLES) >= 60
    assert {name for name, _ in EXAMPLES} >= {"write", "scan", "expire", "expire-tags", "tag create", "check"}


@pytest.mark.parametrize("command, line", EXAMPLES)
def test_a_help_example_parses(command: str, line: str) -> None:
    invocations = _invocations(line)
    assert invocations, f"{command}: example {line!r} runs no lakectl command"
    for args in invocations:
        try:
            _parse(args)
        except SystemExit as e:  # a usage error: lakectl's group prints it and exits 2
            pytest.fail(f"{command}: example {line!r} is refused (exit {e.code})")
        except typer.Exit as e:
            pytest.fail(f"{command}: example {line!r} is refused (exit {e.exit_code})")
        except ClickUsageError as e:
            pytest.fail(f"{command}: example {line!r} is refused: {e.format_message()}")


# ---- running them ----------------------------------------------------------------------------
# The examples of each help text run as a user reading it would run them: literally, every line
# in order, as one shell script (pipes and redirections as written) through the console script,
# with LAKECTL_WAREHOUSE naming a fresh copy of a warehouse prepared as they presuppose: the
# fixture warehouse below, or an empty one for a help text whose examples create shop.orders
# (the top-level help's and create's). The fixture holds the one example table of every help text
# and of the README's session, shop.orders (ORDERS, keyed by id,dt, partitioned by dt, 2
# buckets; test_one_example_table holds them to it) with 15 snapshots, tags eod-2024-01-01 and
# release-1, branches dev (with tag before-backfill) and test, consumers billing and old-job;
# shop.orders_tmp and shop.orders_staging like it; shop.events as create's example makes it, with a
# row, metadata.iceberg.storage=table-location set after it, and a branch hotfix holding one more;
# database scratch; and in the working directory the input files the examples name (orders.csv
# and changes.csv as the README's session shows them), a profile prod and a producer.
ORDERS = "id BIGINT, customer STRING, amount DECIMAL(10, 2), dt STRING"
ORDERS_FLAGS = ["--primary-key", "id,dt", "--partition-by", "dt", "--option", "bucket=2"]
EVENTS = "event_time TIMESTAMP(3), id BIGINT, kind STRING"
DAYS = ("2024-01-01", "2024-01-02")
CUSTOMERS = ("alice", "bob", "carol", "dave")
LATEST = 15  # rollback's example names --if-latest 15
ORDERS_CSV = "id,customer,amount,dt\n1,alice,10.50,2024-01-01\n2,bob,20.25,2024-01-01\n3,carol,5.00,2024-01-02\n"
CHANGES_CSV = ("op,id,customer,amount,dt\n+U,2,bob,22.00,2024-01-01\n-D,3,carol,5.00,2024-01-02\n"
               "+I,4,dave,7.75,2024-01-03\n")


def _csv(rows: list[tuple[Any, ...]], header: str) -> str:
    return header + "\n" + "".join(",".join(map(str, row)) + "\n" for row in rows)


def _order_rows(batch: int) -> list[tuple[Any, ...]]:
    """Four rows per batch over both days; ids 7 and 42 (the lookups' keys) among them."""
    return [(batch * 4 + k if batch else (7, 42, 1, 2)[k], CUSTOMERS[k], f"{10 * batch + k}.50", DAYS[k % 2])
            for k in range(4)]


# Paths outside the test's directory that examples write to: moved under it.
OUTSIDE = ("/var/log/", "/var/lib/node_exporter/textfile/", "/data/")

# Examples whose output goes to a file rather than stdout: the file must then hold something.
WRITES_FILE = {"--output orders.parquet": "orders.parquet", ">> /var/log/lakectl-expire.log":
               "var/log/lakectl-expire.log", ">> /var/log/lakectl-maintain.log": "var/log/lakectl-maintain.log",
               "--metrics-file /var/lib/node_exporter/textfile/lakectl.prom":
               "var/lib/node_exporter/textfile/lakectl.prom"}

# Lines not run in the local sequence, and why (kept short).
S3_REASON = "names an S3 URI: runs in test_the_s3_help_example_runs against an S3 server"


def _lakectl(wh: Path, *args: Any) -> None:
    result = CliRunner().invoke(app, ["-q", "-w", str(wh), *map(str, args)], env={"LAKECTL_CONFIG": None})
    assert result.exit_code == 0, (args, result.output)


def _iceberg_catalog(wh: Path, cwd: Path, run: Any, rows: Path) -> None:
    """migrate's Iceberg example, ``jdbc:sqlite:/data/iceberg.db#web.visits`` (``/data/`` moved
    under the test's directory): a SQLite database laid out as pyiceberg's SqlCatalog, whose
    web.visits is the Iceberg metadata of a lakectl table that keeps it."""
    import sqlite3

    run("create", "scratch.visits", "--schema", ORDERS, "-o", "metadata.iceberg.storage=table-location")
    run("write", "scratch.visits", "-i", rows)
    metadata = next((wh / "scratch.db" / "visits" / "metadata").glob("v*.metadata.json"))
    (cwd / "data").mkdir(exist_ok=True)
    with sqlite3.connect(cwd / "data" / "iceberg.db") as db:
        db.execute("CREATE TABLE iceberg_tables (catalog_name VARCHAR(255) NOT NULL, table_namespace VARCHAR(255) "
                   "NOT NULL, table_name VARCHAR(255) NOT NULL, metadata_location VARCHAR(1000), "
                   "previous_metadata_location VARCHAR(1000), PRIMARY KEY (catalog_name, table_namespace, table_name))")
        db.execute("INSERT INTO iceberg_tables VALUES ('default', 'web', 'visits', ?, NULL)", (str(metadata),))
    db.close()


def _build(wh: Path, cwd: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    def run(*args: Any) -> None:
        _lakectl(wh, *args)

    run("create", "shop.orders", "--schema", ORDERS, *ORDERS_FLAGS)
    rows = cwd / "batch.csv"
    batch = 0
    from core.table import Table

    orders = Table.locate("shop.orders", warehouse=str(wh))
    while (orders.snapshots.latest_id() or 0) < LATEST - 1:  # writes compact now and then: +1 or +2
        rows.write_text(_csv(_order_rows(batch), "id,customer,amount,dt"))
        run("write", "shop.orders", "-i", rows)
        batch += 1
    if orders.snapshots.latest_id() == LATEST - 1:
        run("compact", "shop.orders", "--full")
    assert orders.snapshots.latest_id() == LATEST
    run("tag", "create", "shop.orders", "eod-2024-01-01", "--snapshot-id", 3)
    run("tag", "create", "shop.orders", "release-1", "--snapshot-id", 5)
    for branch in ("dev", "test"):
        run("branch", "create", "shop.orders", branch)
        run("write", "shop.orders", "-i", rows, "--branch", branch)
    run("tag", "create", "shop.orders", "before-backfill", "--branch", "dev")
    run("write", "shop.orders", "-i", rows, "--branch", "dev")
    run("consumer", "reset", "shop.orders", "billing", "--next-snapshot", 10)
    run("consumer", "reset", "shop.orders", "old-job", "--next-snapshot", 5)
    for name in ("shop.orders_tmp", "shop.orders_staging"):
        run("create", name, "--like", "shop.orders")
        run("write", name, "-i", rows)
    run("create", "shop.events", "--schema", EVENTS)
    events = cwd / "events.csv"  # and branch hotfix of it with rows main lacks (branch merge's example)
    events.write_text("event_time,id,kind\n2024-01-01 00:00:01,1,click\n")
    run("write", "shop.events", "-i", events)
    # Hive-partitioned Parquet files for migrate's examples
    for name in ("events", "clicks"):
        for day in DAYS:
            directory = cwd / "landing" / name / f"dt={day}"
            directory.mkdir(parents=True)
            pq.write_table(pa.table({"id": [1, 2], "kind": ["click", "view"]}), directory / "part-0.parquet")
    # iceberg-sync's example table: it keeps Iceberg metadata (set after its first write).
    run("alter-schema", "shop.events", "--set-option", "metadata.iceberg.storage=table-location")
    run("branch", "create", "shop.events", "hotfix")
    run("write", "shop.events", "-i", events, "--branch", "hotfix")
    events.unlink()
    run("create", "scratch.t", "--schema", "id BIGINT")
    _iceberg_catalog(wh, cwd, run, rows)
    rows.unlink()
    # the inputs the write examples name
    (cwd / "orders.csv").write_text(ORDERS_CSV)
    (cwd / "changes.csv").write_text(CHANGES_CSV)
    (cwd / "empty.csv").write_text("")
    (cwd / "rows.jsonl").write_text('{"id": 600, "customer": "erin", "amount": "6.00", "dt": "2024-01-02"}\n')
    schema = pa.schema([("id", pa.int64()), ("customer", pa.string()), ("amount", pa.decimal128(10, 2)),
                        ("dt", pa.string())])
    for folder, day in (("day=2024-01-01", DAYS[0]), ("exports", DAYS[1])):
        (cwd / folder).mkdir()
        pq.write_table(pa.table({"id": [700, 701], "customer": ["frank", "grace"],
                                 "amount": [Decimal("7.00"), Decimal("7.01")], "dt": [day, day]}, schema=schema),
                       cwd / folder / "part-0.parquet")
    (cwd / "lakectl.toml").write_text('[profiles.prod]\nwarehouse = "wh"\n')
    producer = cwd / "producer"  # a feed of JSON lines that ends
    producer.write_text('#!/bin/sh\nfor i in 1 2 3; do echo "{\\"event_time\\": \\"2024-01-01T00:00:0$i\\", '
                        '\\"id\\": $i, \\"kind\\": \\"click\\"}"; done\n')
    producer.chmod(0o755)


@pytest.fixture(scope="session")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory: the warehouse in wh/, the example inputs beside it."""
    cwd = tmp_path_factory.mktemp("help-examples")
    try:
        _build(cwd / "wh", cwd)
    except AssertionError as e:  # once, not once per example
        pytest.exit(f"the help examples' fixture warehouse cannot be built: {e}", returncode=1)
    return cwd


def _shell_line(line: str, cwd: Path) -> str:
    for outside in OUTSIDE:
        if outside in line:
            (cwd / outside.strip("/")).mkdir(parents=True, exist_ok=True)
            line = line.replace(outside, f"{cwd}{outside}")
    return line


def _env(cwd: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    bins = [str(Path(sys.executable).parent), env.get("PATH", "")]
    return {**env, "LAKECTL_WAREHOUSE": str(cwd / "wh"), "PATH": os.pathsep.join(bins),
            "HOME": str(cwd / "home"), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def _copy(fixture_dir: Path, tmp_path: Path, *, empty: bool = False) -> Path:
    cwd = tmp_path / "run"
    shutil.copytree(fixture_dir, cwd, symlinks=True)
    if empty:
        shutil.rmtree(cwd / "wh")
    (cwd / "lakectl.toml").write_text(f'[profiles.prod]\nwarehouse = "{cwd / "wh"}"\n')
    return cwd


def _run(line: str, cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    done = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)
    return done.returncode, done.stdout, done.stderr


def _sequences() -> list[tuple[str, list[str]]]:
    """(command, its example lines in the order its help shows them), in the command tree's order."""
    return [(" ".join(path) or "lakectl", lines) for path, cmd in _commands(ROOT, ())
            if (lines := _examples(cmd.help or ""))]


SEQUENCES = _sequences()
S3_EXAMPLES = [(command, line) for command, line in EXAMPLES if "s3://" in line]


def _create_orders(args: list[str]) -> tuple[str, dict[str, str]]:
    """(schema, the other flags) of a `create shop.orders ...` argument list."""
    args = [a for a in args if a not in ("-q", "--quiet")]
    assert args[:2] == ["create", "shop.orders"], args
    flags = dict(zip(args[2::2], args[3::2]))
    return flags.pop("--schema"), flags


def test_one_example_table() -> None:
    """The help texts and the README create shop.orders alike, and as the fixture does: every
    other example reads and writes that table."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    lines = [line for _, line in EXAMPLES]
    lines += [line.strip().lstrip("$ ") for line in re.sub(r"\\\n\s*", " ", readme).splitlines()
              if re.match(r"\s*(\$ )?lakectl (-q )?create shop\.orders ", line)]
    creates = [_create_orders(args) for line in lines for args in _invocations(line)
               if [a for a in args if a != "-q"][:2] == ["create", "shop.orders"]]
    assert len(creates) >= 3  # the top-level help's, create's and the README session's
    assert set(map(repr, creates)) == {repr(_create_orders(["create", "shop.orders", "--schema", ORDERS,
                                                            *ORDERS_FLAGS]))}


def _presupposes_no_orders(lines: list[str]) -> bool:
    return any(line.startswith("lakectl create shop.orders ") for line in lines)


def test_steps_run_in_order_each_checked(tmp_path: Path) -> None:
    """A later line sees what an earlier one did; a failing line (also inside a pipe) is seen
    and the lines after it still run; a follower is stopped once it printed."""
    follower = "sh -c 'echo started; exec sleep 60' --follow"
    steps = run_steps(["echo one > f", "cat f", "false | cat", "echo two", follower], tmp_path, dict(os.environ),
                      tmp_path / "steps")
    assert [s.code for s in steps] == [0, 0, 1, 0, 143]  # 143: stopped by SIGTERM
    assert steps[1].out == "one\n" and steps[3].out == "two\n" and steps[4].out == "started\n"


def test_the_sequences_hold_every_example() -> None:
    assert sorted({(c, line) for c, lines in SEQUENCES for line in lines}) == EXAMPLES
    assert sum(map(len, (lines for _, lines in SEQUENCES))) >= len(EXAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize("command, lines", SEQUENCES, ids=[command for command, _ in SEQUENCES])
def test_a_help_texts_examples_run_in_order(command: str, lines: list[str], fixture_dir: Path,
                                              tmp_path: Path) -> None:
    """Every example line of COMMAND's help, in order, in one warehouse; each exits 0 with output."""
    cwd = _copy(fixture_dir, tmp_path, empty=_presupposes_no_orders(lines))
    local = [line for line in lines if "s3://" not in line]  # the others: S3_REASON
    steps = run_steps([_shell_line(line, cwd) for line in local], cwd, _env(cwd), tmp_path / "steps")
    failures = []
    for line, step in zip(local, steps):
        written = [file for marker, file in WRITES_FILE.items() if marker in line]
        if step.code != 0:
            failures.append(f"{line!r} exits {step.code}: {step.err.strip()}")
        elif "Traceback" in step.err:
            failures.append(f"{line!r} prints a traceback: {step.err}")
        elif any(not (cwd / file).is_file() or not (cwd / file).stat().st_size for file in written):
            failures.append(f"{line!r} wrote nothing to one of {written}")
        elif not written and not step.out.strip():
            failures.append(f"{line!r} printed nothing")
    assert not failures, f"{command} --help, its examples run in order:\n" + "\n".join(failures)


@pytest.mark.slow
@pytest.mark.s3
@pytest.mark.parametrize("command, line", S3_EXAMPLES)
def test_the_s3_help_example_runs(command: str, line: str, fixture_dir: Path, tmp_path: Path) -> None:
    """An example naming an S3 URI runs against a SeaweedFS server holding the bucket it names."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "s3"))
    from s3server import seaweed_server

    bucket = re.search(r"s3://([^/\s]+)", line).group(1)  # type: ignore[union-attr]
    cwd = _copy(fixture_dir, tmp_path)
    with seaweed_server(tmp_path / "seaweed", require_auth=True) as server:
        server.fs().mkdir(bucket)
        env = {**_env(cwd), **server.env()}
        code, out, err = _run(line, cwd, env)
        assert code == 0, f"{command}: {line!r} exits {code}: {err}"
        assert out.strip()
        if line.startswith("lakectl clone shop.orders s3://"):  # the copy reads as the source
            target = line.split()[-1]
            scans = [_run(f"lakectl scan {table} -f csv | sort", cwd, env) for table in ("shop.orders", target)]
            assert scans[0][0] == scans[1][0] == 0 and scans[0][1] == scans[1][1] and scans[0][1].count("\n") > 10
