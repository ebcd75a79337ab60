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

