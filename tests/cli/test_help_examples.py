"""Every `Example(s):` line of every command's help is true: each `lakectl ...` invocation in it
(piped or not) is parsed by the real command tree, as the shell would hand it over, and each
line then runs in a shell through the console script against a fixture warehouse holding what
the examples name, and succeeds with output. (The parse alone catches an example naming a flag,
a value or an argument the command does not take, such as expire-tags' help naming a missing
option; the run catches one the command refuses on a real table, such as a retain-max below
the default retain-min.)"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterator

import pytest
import typer.main
from typer._click.exceptions import UsageError as ClickUsageError
from typer.testing import CliRunner

from lakectl.app import app

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
# Each example runs as a shell line (pipes and redirections as written) through the console
# script, with LAKECTL_WAREHOUSE naming a fresh copy of one fixture warehouse, so that no
# example depends on another having run (a destructive one changes its own copy only). The
# fixture holds what the examples name: shop.orders (15 snapshots, tags eod-2024-01-01 and
# release-1, branches dev and test, consumers billing and old-job), the tables beside it and the
# input files in the working directory.
ORDERS = "id BIGINT, amount DECIMAL(10, 2), qty INT, dt STRING"
DAYS = ("2024-01-01", "2024-01-02")
LATEST = 15  # rollback's example names --if-latest 15


def _csv(rows: list[tuple[Any, ...]], header: str) -> str:
    return header + "\n" + "".join(",".join(map(str, row)) + "\n" for row in rows)


def _order_rows(batch: int) -> list[tuple[Any, ...]]:
    """Four rows per batch over both days; ids 7 and 42 (the lookups' keys) among them."""
    return [(batch * 4 + k if batch else (7, 42, 1, 2)[k], f"{10 * batch + k}.50", k + 1, DAYS[k % 2])
            for k in range(4)]


# Paths outside the test's directory that examples write to: moved under it.
OUTSIDE = ("/var/log/", "/var/lib/node_exporter/")

# What an example needs removed from its copy first: it creates what the fixture already has.
PREPARE = {
    "lakectl create shop.orders ": [["drop", "shop.orders"]],
    "lakectl tag create shop.orders eod-2024-01-01 ": [["tag", "delete", "shop.orders", "eod-2024-01-01"]],
    "lakectl branch create shop.orders test ": [["branch", "delete", "shop.orders", "test"]],
    "lakectl rename shop.orders_v2 shop.orders": [["drop", "shop.orders"]],
}

# Examples whose output goes to a file rather than stdout: the file must then hold something.
WRITES_FILE = {"--output orders.parquet": "orders.parquet", ">> /var/log/lakectl-expire.log":
               "var/log/lakectl-expire.log", "--metrics-file /var/lib/node_exporter/lakectl.prom":
               "var/lib/node_exporter/lakectl.prom"}


def _lakectl(wh: Path, *args: Any) -> None:
    result = CliRunner().invoke(app, ["-q", "-w", str(wh), *map(str, args)], env={"LAKECTL_CONFIG": None})
    assert result.exit_code == 0, (args, result.output)


def _build(wh: Path, cwd: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    def run(*args: Any) -> None:
        _lakectl(wh, *args)

    run("create", "shop.orders", "--schema", ORDERS, "--primary-key", "id,dt", "--partition-by", "dt",
        "--option", "bucket=4")
    rows = cwd / "batch.csv"
    batch = 0
    from core.table import Table

    orders = Table.locate("shop.orders", warehouse=str(wh))
    while (orders.snapshots.latest_id() or 0) < LATEST - 1:  # writes compact now and then: +1 or +2
        rows.write_text(_csv(_order_rows(batch), "id,amount,qty,dt"))
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
    for name in ("shop.orders_tmp", "shop.orders_staging", "shop.orders_v2", "shop.copy"):
        run("create", name, "--schema", ORDERS, "--primary-key", "id,dt", "--partition-by", "dt")
        run("write", name, "-i", rows)
    run("create", "shop.events", "--schema", "ts TIMESTAMP(3), id BIGINT, kind STRING")
    run("create", "scratch.t", "--schema", "id BIGINT")
    rows.unlink()
    # the inputs the write examples name
    (cwd / "orders.csv").write_text(_csv(_order_rows(100), "id,amount,qty,dt"))
    (cwd / "empty.csv").write_text("id,amount,qty,dt\n")
    (cwd / "changes.csv").write_text(_csv([("+I", 500, "1.00", 1, DAYS[0]), ("+U", 7, "2.00", 2, DAYS[0]),
                                           ("-D", 42, "1.50", 3, DAYS[0])], "op,id,amount,qty,dt"))
    (cwd / "rows.jsonl").write_text('{"id": 600, "amount": "6.00", "qty": 6, "dt": "2024-01-02"}\n')
    schema = pa.schema([("id", pa.int64()), ("amount", pa.decimal128(10, 2)), ("qty", pa.int32()),
                        ("dt", pa.string())])
    for folder, day in (("day=2024-01-01", DAYS[0]), ("exports", DAYS[1])):
        (cwd / folder).mkdir()
        pq.write_table(pa.table({"id": [700, 701], "amount": [Decimal("7.00"), Decimal("7.01")], "qty": [7, 8],
                                 "dt": [day, day]}, schema=schema), cwd / folder / "part-0.parquet")
    (cwd / "lakectl.toml").write_text('[profiles.prod]\nwarehouse = "wh"\n')
    bin_dir = cwd / "bin"
    bin_dir.mkdir()
    producer = bin_dir / "producer"  # a feed of JSON lines that ends
    producer.write_text('#!/bin/sh\nfor i in 1 2 3; do echo "{\\"ts\\": \\"2024-01-01T00:00:0$i\\", '
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
    bins = [str(cwd / "bin"), str(Path(sys.executable).parent), env.get("PATH", "")]
    return {**env, "LAKECTL_WAREHOUSE": str(cwd / "wh"), "PATH": os.pathsep.join(bins),
            "HOME": str(cwd / "home"), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def _copy(fixture_dir: Path, tmp_path: Path) -> Path:
    cwd = tmp_path / "run"
    shutil.copytree(fixture_dir, cwd, symlinks=True)
    (cwd / "lakectl.toml").write_text(f'[profiles.prod]\nwarehouse = "{cwd / "wh"}"\n')
    return cwd


def _follow(line: str, cwd: Path) -> tuple[int, str, str]:
    """--follow reads until stopped: stopped by SIGTERM (exit 0, as its help says) once it printed."""
    proc = subprocess.Popen(["bash", "-c", f"exec {line}"], cwd=cwd, env=_env(cwd), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    watchdog = threading.Timer(120, proc.kill)  # a follow that never prints must not hang the run
    watchdog.start()
    try:
        first = proc.stdout.readline()  # the latest snapshot's rows come first (scan.mode latest-full)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        watchdog.cancel()
    return proc.returncode, first + out, err


def _run(line: str, cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    done = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)
    return done.returncode, done.stdout, done.stderr


# An example naming an S3 URI runs in test_the_s3_help_example_runs, against an S3 server.
S3_EXAMPLES = [(command, line) for command, line in EXAMPLES if "s3://" in line]
LOCAL_EXAMPLES = [example for example in EXAMPLES if example not in S3_EXAMPLES]


@pytest.mark.slow
@pytest.mark.parametrize("command, line", LOCAL_EXAMPLES)
def test_a_help_example_runs(command: str, line: str, fixture_dir: Path, tmp_path: Path) -> None:
    cwd = _copy(fixture_dir, tmp_path)
    for prefix, steps in PREPARE.items():
        if line.startswith(prefix):
            for args in steps:
                _lakectl(cwd / "wh", *args)
    shell_line = _shell_line(line, cwd)
    if "--follow" in line:
        code, out, err = _follow(shell_line, cwd)
    else:
        code, out, err = _run(shell_line, cwd, _env(cwd))
    assert code == 0, f"{command}: {line!r} exits {code}: {err}"
    assert "Traceback" not in err
    written = next((file for marker, file in WRITES_FILE.items() if marker in line), None)
    if written:
        assert (cwd / written).stat().st_size > 0, f"{command}: {line!r} wrote nothing to {written}"
    else:
        assert out.strip(), f"{command}: {line!r} printed nothing"



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
