"""lakectl/quick.py answers plain `snapshots` lines without building the command tree
(issue 26's start-up goal). What it prints must be what the tree prints: each line below runs
twice as a real process, once through the console entry (lakectl.app:main, quick path first)
and once straight into the tree (lakectl.cli:main), and stdout, stderr and the exit code must
be equal. Whether the quick path answered is read from the modules the process loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENTRY = "import sys; from lakectl.{} import main; sys.argv[0] = 'lakectl'; main()"


def _run(via: str, args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-X", "importtime", "-c", ENTRY.format(via), *args], cwd=cwd,
                          env=env, capture_output=True, text=True)


def _split(stderr: str) -> tuple[str, set[str]]:
    """(what the program wrote to stderr, the modules it imported)."""
    lines = stderr.splitlines(keepends=True)
    modules = {line.split("|")[-1].strip() for line in lines if line.startswith("import time:")}
    return "".join(line for line in lines if not line.startswith("import time:")), modules


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    home = tmp_path_factory.mktemp("quick")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env.update(PYTHONPATH=str(ROOT), TZ="UTC", HOME=str(home))
    csv = home / "in.csv"
    csv.write_text("id,v\n1,a\n2,b\n")
    wh = str(home / "wh")
    for args in (["create", "db.t", "--schema", "id BIGINT NOT NULL, v STRING", "--primary-key", "id"],
                 ["write", "db.t", "-i", str(csv)], ["write", "db.t", "-i", str(csv)],
                 ["branch", "create", "db.t", "b1"], ["write", "db.t", "-i", str(csv), "--branch", "b1"]):
        subprocess.run([sys.executable, "-m", "lakectl", "-w", wh, "-q", *args], env=env, check=True, cwd=home)
    (home / "prof.toml").write_text(f'[profiles.p]\nwarehouse = "{wh}"\nformat = "jsonl"\n')
    env["LAKECTL_WAREHOUSE"] = wh
    return home, env


ANSWERED = [
    ["snapshots", "db.t"],
    ["snapshots", "db.t", "-f", "json"],
    ["-f", "csv", "snapshots", "db.t", "--limit", "1"],
    ["snapshots", "db.t", "--format=jsonl", "--limit=2"],
    ["-f", "json", "snapshots", "db.t", "-f", "csv"],  # the command's own --format wins
    ["snapshots", "db.t", "--branch", "b1", "-f", "json"],
    ["-q", "snapshots", "db.t"],
    ["--config", "prof.toml", "--profile", "p", "snapshots", "db.t"],
    ["snapshots", "db.t", "-w", "{wh}", "-f", "json"],
]
FAILING = [  # answered by the tree after the quick path gave up: same words, same exit code
    ["snapshots", "nope.t"],
    ["snapshots", "db.t", "--limit", "x"],
    ["snapshots", "db.t", "--limit", "-1"],
    ["snapshots", "db.t", "--branch", "nope"],
    ["snapshots", "db.t", "-f", "xml"],
    ["--profile", "missing", "snapshots", "db.t"],
    ["snapshots", "db.t", "--limit"],
]
NOT_PLAIN = [  # shapes the quick path leaves alone
    ["snapshots", "--help"],
    ["-v", "snapshots", "db.t"],
    ["snapshots", "db.t", "extra"],
    ["snapshots", "db.t", "--limit", "1", "--limit", "2"],
    ["snapshot", "db.t"],
]


def _lines(rows: list[list[str]], wh: str) -> list[list[str]]:
    return [[a.replace("{wh}", wh) for a in row] for row in rows]


@pytest.mark.parametrize("args", ANSWERED + FAILING + NOT_PLAIN, ids=" ".join)
def test_quick_path_prints_what_the_tree_prints(place, args) -> None:
    home, env = place
    (args,) = _lines([args], env["LAKECTL_WAREHOUSE"])
    quick = _run("app", args, home, env)
    tree = _run("cli", args, home, env)
    quick_err, quick_modules = _split(quick.stderr)
    tree_err, tree_modules = _split(tree.stderr)
    assert (quick.returncode, quick.stdout, quick_err) == (tree.returncode, tree.stdout, tree_err)
    assert "typer" in tree_modules  # the probe sees the tree when it is built
    if args in _lines(ANSWERED, env["LAKECTL_WAREHOUSE"]):
        assert quick.returncode == 0 and quick.stdout
        assert "typer" not in quick_modules, "a plain snapshots line built the command tree"
    else:
        assert "typer" in quick_modules
    if args in FAILING:
        assert quick.returncode in (2, 3) and quick.stdout == "" and quick_err.startswith("error: ")


def test_quick_path_lists_the_history_newest_first(place) -> None:
    """An independent expectation for the answered lines: the snapshot files on disk."""
    home, env = place
    done = _run("app", ["snapshots", "db.t", "-f", "json"], home, env)
    ids = sorted((int(p.name.split("-")[1]) for p in (home / "wh" / "db.db" / "t" / "snapshot").glob("snapshot-*")),
                 reverse=True)
    assert [s["snapshot_id"] for s in json.loads(done.stdout)] == ids == [2, 1]



# ---- write and scan: answered here, failures reported here ----------------------------------
# A write commits, so each way runs on its own copy of the same table: the quick path's output
# (and the table it leaves) must be what the tree's is. The tree is forced with the
# environment switch LAKECTL_QUICK_PATH=0, through the same console entry.
ORDERS = ("id,customer,amount,dt\n" + "".join(
    f"{i},c{i % 7},{i * 37 % 1000 / 100:.2f},2024-01-{1 + i % 3:02d}\n" for i in range(1, 41)))


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A copy of the README's shop.orders holding one write, and the inputs the lines name."""
    home = tmp_path_factory.mktemp("quick-shop")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env.update(PYTHONPATH=str(ROOT), TZ="UTC", HOME=str(home))
    (home / "orders.csv").write_text(ORDERS)
    (home / "bad.csv").write_text("id,customer,amount,dt\n1,a,not-a-number,2024-01-01\n")
    (home / "short.csv").write_text("id,customer,dt\n1,a,2024-01-01\n")
    (home / "day.csv").write_text("id,customer,amount,dt\n900,z,1.00,2024-01-02\n")
    (home / "empty.csv").write_text("")
    (home / "orders.jsonl").write_text('{"id": 500, "customer": "j", "amount": "3.25", "dt": "2024-01-09"}\n')
    wh = str(home / "template")
    for args in (["create", "shop.orders", "--primary-key", "id,dt", "--partition-by", "dt", "--option", "bucket=2",
                  "--schema", "id BIGINT, customer STRING, amount DECIMAL(10, 2), dt STRING"],
                 ["write", "shop.orders", "-i", "orders.csv"], ["branch", "create", "shop.orders", "b1"]):
        subprocess.run([sys.executable, "-m", "lakectl", "-w", wh, "-q", *args], env=env, check=True, cwd=home)
    (home / "prof.toml").write_text('[profiles.p]\nformat = "json"\n')
    return home, env


def _both_ways(home: Path, env: dict[str, str], args: list[str], name: str) -> tuple[tuple, tuple, set, set]:
    """(rc, stdout, stderr) of the quick path and of the tree, each in its own copy of the
    template warehouse, and the modules each loaded."""
    import shutil

    results = []
    for way in ("quick", "tree"):
        wh = home / f"{name}-{way}"
        shutil.rmtree(wh, ignore_errors=True)
        shutil.copytree(home / "template", wh)
        run_env = {**env, "LAKECTL_WAREHOUSE": str(wh)}
        if way == "tree":
            run_env["LAKECTL_QUICK_PATH"] = "0"
        done = _run("app", [a.replace("{wh}", str(wh)) for a in args], home, run_env)
        err, modules = _split(done.stderr)
        results.append(((done.returncode, done.stdout.replace(str(wh), "{wh}"), err.replace(str(wh), "{wh}")),
                        modules))
    (quick, quick_modules), (tree, tree_modules) = results
    return quick, tree, quick_modules, tree_modules


WRITES = [
    ["write", "shop.orders", "-i", "orders.csv"],
    ["write", "shop.orders", "-i", "orders.csv", "-f", "json"],
    ["-f", "jsonl", "write", "shop.orders", "--input=orders.csv"],
    ["-q", "write", "shop.orders", "-i", "orders.csv", "-f", "csv"],
    ["write", "shop.orders", "-i", "day.csv", "--mode", "overwrite", "-p", "dt=2024-01-02", "-f", "json"],
    ["write", "shop.orders", "-i", "empty.csv", "--mode", "overwrite", "--partition", "dt=2024-01-03", "-f", "json"],
    ["write", "shop.orders", "-i", "orders.jsonl", "--input-format", "jsonl", "-f", "json"],
    ["write", "shop.orders", "-i", "short.csv", "--fill-missing-columns", "-f", "json"],
    ["write", "shop.orders", "-i", "orders.csv", "--branch", "b1", "-f", "json"],
    ["--config", "prof.toml", "--profile", "p", "write", "shop.orders", "-i", "orders.csv"],
    ["write", "shop.orders", "-i", "orders.csv", "-w", "{wh}", "-f", "json"],
]
WRITE_FAILURES = [  # reported by the quick path itself: the tree's words and exit codes
    (["write", "nope.orders", "-i", "orders.csv"], 3),  # not found
    (["write", "shop.orders", "-i", "bad.csv"], 5),  # invalid data
    (["write", "shop.orders", "-i", "short.csv"], 5),  # columns missing
    (["write", "shop.orders", "-i", "missing.csv"], 5),  # no such input
    (["write", "shop.orders", "-i", "orders.csv", "--mode", "upsert"], 2),  # usage, from core
    (["write", "shop.orders", "-i", "orders.csv", "-f", "xml"], 2),  # usage, from the settings
    (["write", "shop.orders", "-i", "orders.csv", "-p", "dt=2024-01-01"], 2),  # --partition without overwrite
    (["write", "shop.orders", "-i", "orders.csv", "--branch", "nope"], 3),
    (["--profile", "missing", "write", "shop.orders", "-i", "orders.csv"], 2),
]
SCANS = [
    ["scan", "shop.orders", "-f", "csv"],
    ["scan", "shop.orders", "--where", "dt = '2024-01-02' AND amount > 1", "-f", "json"],
    ["scan", "shop.orders", "--select", "id,amount", "--limit", "5", "-f", "jsonl"],
    ["scan", "shop.orders", "--limit=0"],
    ["-f", "csv", "scan", "shop.orders", "--snapshot-id", "1", "--where", "id < 4"],
    ["scan", "shop.orders", "--tag", "t1", "-f", "json"],
    ["scan", "shop.orders", "--branch", "b1", "--limit", "3"],
    ["--config", "prof.toml", "--profile", "p", "scan", "shop.orders", "--limit", "2"],
    ["scan", "shop.orders", "-O", "{wh}/out.csv", "-f", "json"],
    ["scan", "shop.orders", "-w", "{wh}", "--output", "{wh}/out.parquet", "--where", "id > 30"],
]
SCAN_FAILURES = [
    (["scan", "nope.orders"], 3),
    (["scan", "shop.orders", "--snapshot-id", "9"], 3),
    (["scan", "shop.orders", "--tag", "nope"], 3),
    (["scan", "shop.orders", "--where", "dt = '2024"], 2),
    (["scan", "shop.orders", "--where", "nope = 1"], 2),
    (["scan", "shop.orders", "--select", "id,nope"], 2),
    (["scan", "shop.orders", "-f", "xml"], 2),
    (["scan", "shop.orders", "-O", "out.txt"], 2),
    (["scan", "shop.orders", "--limit", "-1"], 2),
]
RUNS_NOT_PLAIN = [  # left to the tree before any work: the tree's usage errors or its own options
    ["scan", "shop.orders", "--limit", "x"],
    ["scan", "shop.orders", "--snapshot-id", "one"],
    ["scan", "shop.orders", "--follow", "--max-snapshots", "1", "-f", "jsonl"],
    ["scan", "shop.orders", "--incremental-between", "0,1", "-f", "csv"],
    ["write", "shop.orders", "-i", "orders.csv", "--catalog-option", "k=v"],
    ["write", "shop.orders", "-i", "orders.csv", "--row-kind-column"],
    ["write", "shop.orders", "--input-table", "x.y"],
    ["write", "shop.orders", "-i", "orders.csv", "--stream"],
    ["-v", "write", "shop.orders", "-i", "orders.csv"],
    ["write", "shop.orders", "-i", "orders.csv", "-i", "day.csv"],
]


def _tagged(home: Path, env: dict[str, str]) -> None:
    """The template gets tag t1 on its first snapshot (once)."""
    if not (home / "template" / "shop.db" / "orders" / "tag" / "tag-t1").exists():
        subprocess.run([sys.executable, "-m", "lakectl", "-w", str(home / "template"), "-q", "tag", "create",
                        "shop.orders", "t1", "--snapshot-id", "1"], env=env, check=True, cwd=home)


@pytest.mark.slow
@pytest.mark.parametrize("args", WRITES + SCANS + [a for a, _ in WRITE_FAILURES + SCAN_FAILURES] + RUNS_NOT_PLAIN,
                         ids=" ".join)
def test_write_and_scan_quick_path_print_what_the_tree_prints(shop, args) -> None:
    home, env = shop
    _tagged(home, env)
    name = f"case{abs(hash(tuple(args))) % 10**8}"
    quick, tree, quick_modules, tree_modules = _both_ways(home, env, args, name)
    assert quick == tree
    assert "typer" in tree_modules
    plain = args in WRITES + SCANS or args in [a for a, _ in WRITE_FAILURES + SCAN_FAILURES]
    assert ("typer" not in quick_modules) == plain, "the quick path answered a line it should not, or not one it should"
    expected = {tuple(a): rc for a, rc in WRITE_FAILURES + SCAN_FAILURES}
    if tuple(args) in expected:
        rc, out, err = quick
        assert (rc, out) == (expected[tuple(args)], "") and err.startswith("error: ") and err.count("\n") == 1
    elif plain:
        assert quick[0] == 0
    if "write" in args and plain:  # both tables hold the same rows afterwards
        rows = [_run("app", ["scan", "shop.orders", "-f", "csv", *(["--branch", "b1"] if "b1" in args else [])],
                     home, {**env, "LAKECTL_WAREHOUSE": str(home / f"{name}-{way}")}).stdout for way in ("quick", "tree")]
        assert rows[0] == rows[1]


def _model() -> dict[tuple[int, str], dict[str, str]]:
    """shop.orders after its first write, from the CSV: rows by primary key (id, dt)."""
    lines = ORDERS.splitlines()
    header = lines[0].split(",")
    rows = [dict(zip(header, line.split(","))) for line in lines[1:]]
    return {(int(r["id"]), r["dt"]): r for r in rows}


@pytest.mark.slow
def test_quick_write_and_scan_agree_with_a_model_of_the_table(shop) -> None:
    """An independent expectation: an overwrite of one partition through the quick path
    leaves the other partitions' rows and the new one's input, as a dict model computes; a
    quick scan with --where returns the model's matching rows."""
    import shutil

    home, env = shop
    wh = home / "model"
    shutil.rmtree(wh, ignore_errors=True)
    shutil.copytree(home / "template", wh)
    env = {**env, "LAKECTL_WAREHOUSE": str(wh)}
    done = _run("app", ["write", "shop.orders", "-i", "day.csv", "--mode", "overwrite", "-p", "dt=2024-01-02",
                        "-f", "json"], home, env)
    err, modules = _split(done.stderr)
    assert done.returncode == 0 and "typer" not in modules, err
    model = {k: v for k, v in _model().items() if k[1] != "2024-01-02"}
    model[(900, "2024-01-02")] = {"id": "900", "customer": "z", "amount": "1.00", "dt": "2024-01-02"}
    assert json.loads(done.stdout)["records_written"] == 1
    scanned = _run("app", ["scan", "shop.orders", "-f", "json"], home, env)
    assert "typer" not in _split(scanned.stderr)[1]
    got = {(r["id"], r["dt"]): {k: str(v) for k, v in r.items()} for r in json.loads(scanned.stdout)}
    assert got == model
    where = _run("app", ["scan", "shop.orders", "--where", "amount > 5 AND dt <> '2024-01-03'", "--select",
                         "id,dt", "-f", "csv"], home, env)
    expected = sorted((k for k, r in model.items() if float(r["amount"]) > 5 and k[1] != "2024-01-03"))
    assert sorted((int(line.split(",")[0]), line.split(",")[1]) for line in where.stdout.splitlines()[1:]) == expected
