"""Shell completion: table and database names, snapshot ids and tags come from the warehouse
the command line (or environment, profile, config) names; the checked-in bash, zsh and fish
scripts complete in a real bash, zsh (interactive, in a pseudo-terminal) and fish, each test
skipped where its shell is not installed; ``lakectl --install-completion`` installs them."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lakectl.app import app

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
runner = CliRunner()


@pytest.fixture
def wh(tmp_path: Path) -> Path:
    """shop.orders (3 snapshots, tag t1), shop.items, logs.events."""
    wh = tmp_path / "wh"
    rows = tmp_path / "rows.csv"
    rows.write_text("id\n1\n")
    for args in (["create", "shop.orders", "--schema", "id INT"], ["create", "shop.items", "--schema", "id INT"],
                 ["create", "logs.events", "--schema", "id INT"], ["write", "shop.orders", "-i", rows],
                 ["write", "shop.orders", "-i", rows], ["write", "shop.orders", "-i", rows],
                 ["tag", "create", "shop.orders", "t1", "--snapshot-id", "2"]):
        result = runner.invoke(app, ["-q", "-w", str(wh), *map(str, args)])
        assert result.exit_code == 0, result.stderr
    return wh


def complete(line: str, shell: str = "bash", env: dict[str, str] | None = None) -> list[str]:
    """What lakectl offers for the last word of ``line`` (empty after a trailing space)."""
    words = line.split(" ")
    variables = {"_LAKECTL_COMPLETE": f"complete_{shell}", **(env or {})}
    if shell == "bash":
        variables.update(COMP_WORDS=line, COMP_CWORD=str(len(words) - 1))
    else:
        variables.update(_TYPER_COMPLETE_ARGS=line, _TYPER_COMPLETE_FISH_ACTION="get-args")
    result = runner.invoke(app, [], prog_name="lakectl", env=variables)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return [line for line in result.stdout.splitlines() if line]


def test_table_names(wh: Path) -> None:
    assert complete(f"lakectl -w {wh} scan ") == ["logs.events", "shop.items", "shop.orders"]
    assert complete(f"lakectl -w {wh} describe sh") == ["shop.items", "shop.orders"]
    assert complete(f"lakectl -w {wh} write shop.o") == ["shop.orders"]
    assert complete(f"lakectl expire --warehouse {wh} logs.") == ["logs.events"]  # the command's own flag
    assert complete(f"lakectl -w {wh} tag list ") == ["logs.events", "shop.items", "shop.orders"]


def test_warehouse_from_env_profile_and_config(wh: Path, tmp_path: Path) -> None:
    assert complete("lakectl snapshots lo", env={"LAKECTL_WAREHOUSE": str(wh)}) == ["logs.events"]
    (tmp_path / "lakectl.toml").write_text(f'[profiles.prod]\nwarehouse = "{wh}"\n')
    assert complete("lakectl --profile prod snapshots lo") == ["logs.events"]
    (tmp_path / "lakectl.toml").write_text(f'warehouse = "{wh}"\n')
    assert complete("lakectl snapshots lo") == ["logs.events"]


def test_databases_snapshot_ids_and_tags(wh: Path) -> None:
    assert complete(f"lakectl -w {wh} list ") == ["logs", "shop"]
    assert complete(f"lakectl -w {wh} scan shop.orders --snapshot-id ") == ["3", "2", "1"]  # newest first
    assert complete(f"lakectl -w {wh} files shop.orders --snapshot-id 2") == ["2"]
    assert complete(f"lakectl -w {wh} rollback shop.orders --if-latest ") == ["3", "2", "1"]
    assert complete(f"lakectl -w {wh} scan shop.orders --where 'id > 0' --tag ") == ["t1"]
    assert complete(f"lakectl -w {wh} tag delete shop.orders ") == ["t1"]
    assert complete(f"lakectl -w {wh} tag create shop.orders t2 --snapshot-id ") == ["3", "2", "1"]


def test_branches(wh: Path) -> None:
    for name in ("dev", "demo"):
        assert runner.invoke(app, ["-q", "-w", str(wh), "branch", "create", "shop.orders", name]).exit_code == 0
    assert complete(f"lakectl -w {wh} scan shop.orders --branch ") == ["demo", "dev"]
    assert complete(f"lakectl -w {wh} branch delete shop.orders dev") == ["dev"]
    assert complete(f"lakectl -w {wh} branch fast-forward shop.orders d") == ["demo", "dev"]
    assert complete(f"lakectl -w {wh} write shop.items --branch ") == []


def test_snapshot_ids_and_tags_of_the_branch_given(wh: Path) -> None:
    """After --branch, snapshot ids and tags are the branch's own."""
    rows = wh.parent / "rows.csv"
    for args in (["branch", "create", "shop.orders", "old", "--snapshot-id", "2"],
                 ["write", "shop.orders", "-i", rows, "--branch", "old"],
                 ["write", "shop.orders", "-i", rows, "--branch", "old"],
                 ["tag", "create", "shop.orders", "b1", "--branch", "old"]):
        assert runner.invoke(app, ["-q", "-w", str(wh), *map(str, args)]).exit_code == 0
    assert complete(f"lakectl -w {wh} rollback shop.orders --branch old --snapshot-id ") == ["4", "3", "2"]
    assert complete(f"lakectl -w {wh} rollback shop.orders --snapshot-id ") == ["3", "2", "1"]
    assert complete(f"lakectl -w {wh} describe shop.orders --branch old --tag ") == ["b1"]
    assert complete(f"lakectl -w {wh} describe shop.orders --tag ") == ["t1"]
    assert complete(f"lakectl -w {wh} expire shop.orders --branch o") == ["old"]


def test_consumers_and_scan_modes(wh: Path) -> None:
    for consumer in ("billing", "audit"):
        args = ["-q", "-w", str(wh), "consumer", "reset", "shop.orders", consumer, "--next-snapshot", "2"]
        assert runner.invoke(app, args).exit_code == 0
    assert complete(f"lakectl -w {wh} scan shop.orders --follow --consumer-id ") == ["audit", "billing"]
    assert complete(f"lakectl -w {wh} consumer delete shop.orders b") == ["billing"]
    assert complete(f"lakectl -w {wh} scan shop.orders --follow --scan-mode from-s") == [
        "from-snapshot", "from-snapshot-full"]


def test_incremental_between_scan_modes(wh: Path) -> None:
    from core.ops.changes import SCAN_MODES

    assert complete(f"lakectl -w {wh} scan shop.orders --incremental-between-scan-mode ") == list(SCAN_MODES)
    assert complete(f"lakectl -w {wh} scan shop.orders --incremental-between-scan-mode d") == ["delta", "diff"]


def test_migrate_source_kinds_are_the_ones_migrate_takes(wh: Path) -> None:
    from core.ops.migrate import FORMATS, ICEBERG

    assert sorted(complete(f"lakectl -w {wh} migrate landing shop.events --from ")) == sorted((*FORMATS, ICEBERG))
    assert complete(f"lakectl -w {wh} migrate landing shop.events --from i") == ["iceberg"]


def test_help_text_of_candidates_in_zsh_and_fish(wh: Path) -> None:
    zsh = "\n".join(complete(f"lakectl -w {wh} scan shop.orders --snapshot-id ", shell="zsh"))
    assert '"3":"APPEND ' in zsh and '"1":"APPEND ' in zsh
    fish = complete(f"lakectl -w {wh} scan shop.orders --snapshot-id ", shell="fish")
    assert [line.split("\t")[0] for line in fish] == ["3", "2", "1"]
    assert all(line.split("\t")[1].startswith("APPEND ") for line in fish)


def test_many_snapshots_describe_only_the_newest(wh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Thousands of snapshots must not mean thousands of reads: past the newest
    DESCRIBED_SNAPSHOTS matches, ids come from the listing alone."""
    from core.snapshot import SnapshotManager
    from lakectl import completion

    monkeypatch.setattr(completion, "DESCRIBED_SNAPSHOTS", 2)
    reads: list[int] = []
    real = SnapshotManager.snapshot

    def counted(self: SnapshotManager, snapshot_id: int) -> Any:
        reads.append(snapshot_id)
        return real(self, snapshot_id)

    monkeypatch.setattr(SnapshotManager, "snapshot", counted)
    fish = complete(f"lakectl -w {wh} scan shop.orders --snapshot-id ", shell="fish")
    assert [line.split("\t") for line in fish][2] == ["1", "snapshot"]
    assert [line.split("\t")[1].split(" ")[0] for line in fish[:2]] == ["APPEND", "APPEND"]
    assert sorted(reads) == [2, 3]


def test_no_candidates_and_no_noise_when_the_warehouse_or_table_is_missing(tmp_path: Path) -> None:
    assert complete(f"lakectl -w {tmp_path / 'nowhere'} scan ") == []
    assert complete(f"lakectl -w {tmp_path / 'nowhere'} scan db.t --snapshot-id ") == []
    (tmp_path / "lakectl.toml").write_text("warehouse = \n")  # a broken config: still no traceback
    assert complete("lakectl scan ") == []


def test_subcommands_and_options_complete_too() -> None:
    assert "remove-orphan-files" in complete("lakectl re")
    assert complete("lakectl expire x --retain-m") == ["--retain-max", "--retain-min"]


# ---- the installed scripts, in a real shell --------------------------------------------------------
def shell_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_")}
    env.update(HOME=str(tmp_path / "home"), PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", **extra)
    return env


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_the_checked_in_bash_script_completes_in_bash(wh: Path, tmp_path: Path) -> None:
    script = f"""
source {ROOT / 'completions' / 'lakectl.bash'}
complete -p lakectl
COMP_WORDS=(lakectl -w {wh} scan shop.orders --snapshot-id "")
COMP_CWORD=6
_lakectl_completion lakectl
printf 'candidate %s\\n' "${{COMPREPLY[@]}}"
"""
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True,
                          env=shell_env(tmp_path), cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "complete -o default -F _lakectl_completion lakectl" in proc.stdout
    assert [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("candidate")] == ["3", "2", "1"]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_install_completion_in_bash(tmp_path: Path) -> None:
    # `; exit` keeps bash from exec'ing lakectl, so lakectl sees bash as its parent shell.
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", "lakectl --install-completion; exit $?"],
                          capture_output=True, text=True, env=shell_env(tmp_path), cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "bash completion installed" in proc.stdout
    installed = tmp_path / "home" / ".bash_completions" / "lakectl.sh"
    checked_in = (ROOT / "completions" / "lakectl.bash").read_text()
    assert installed.read_text().strip() == "\n".join(checked_in.strip().splitlines()[1:])  # minus the note
    assert f"source '{installed}'" in (tmp_path / "home" / ".bashrc").read_text()
    # And a new interactive bash completes with it.
    check = subprocess.run(["bash", "-i", "-c", "complete -p lakectl"], capture_output=True, text=True,
                           env=shell_env(tmp_path), cwd=tmp_path, timeout=120)
    assert "_lakectl_completion" in check.stdout, check.stderr


def test_show_completion_prints_the_checked_in_script(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    result: Any = runner.invoke(app, ["--show-completion", "zsh"], prog_name="lakectl")
    checked_in = (ROOT / "completions" / "_lakectl").read_text().splitlines()
    assert result.stdout.strip().splitlines() == [checked_in[0], *checked_in[2:]]


# zsh: an interactive `zsh -f -i` in a pseudo-terminal (zsh's own zpty module) loads compinit
# and the checked-in script, is sent the line and a TAB, then a marker command; zle handles
# typed-ahead keys in order, so the marker's output comes after the completion has drawn its list.
# The line is typed only once the prompt is drawn: keys sent between READY's output and zle
# taking the terminal were echoed by the tty and the TAB lost (a CI run under load).
ZPTY_DRIVER = r"""
zmodload zsh/zpty || exit 3
zpty z 'zsh -f -i'
zpty -w z "stty columns 1000; PS1='%% '; autoload -U compinit; compinit -D -u; source ${(q)1}; setopt autolist nolistambiguous nobeep"
zpty -w z 'print READY-$((40+2))'
zpty -r z _ '*READY-42*%*' || exit 4
zpty -w -n z "$2"$'\t'
zpty -w -n z $'\x15print DONE-$((40+2))\n'
zpty -r z out '*DONE-42*' || exit 5
print -r -- "$out"
zpty -d z
"""
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def zsh_tab(line: str, tmp_path: Path) -> str:
    """What an interactive zsh shows after `line` and a TAB, terminal escapes removed."""
    driver = tmp_path / "zpty.zsh"
    driver.write_text(ZPTY_DRIVER)
    proc = subprocess.run(["zsh", "-f", str(driver), str(ROOT / "completions" / "_lakectl"), line],
                          capture_output=True, text=True, env=shell_env(tmp_path, TERM="xterm"), cwd=tmp_path,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return ANSI.sub("", proc.stdout).replace("\r", "")


def listed(screen: str) -> list[str]:
    """The candidates zsh listed below the line, one per row as `name  -- help`."""
    return re.findall(r"^(\S+)\s+-- ", screen, re.M)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_the_checked_in_zsh_script_completes_in_zsh(wh: Path, tmp_path: Path) -> None:
    assert "compdef _lakectl_completion lakectl" in (ROOT / "completions" / "_lakectl").read_text()
    assert listed(zsh_tab("lakectl sc", tmp_path)) == ["scan", "schemas"]
    assert listed(zsh_tab("lakectl expire x --retain-m", tmp_path)) == ["--retain-max", "--retain-min"]
    # one candidate: zsh writes it into the line (a table name, read from the warehouse -w names)
    screen = zsh_tab(f"lakectl -w {wh} describe shop.o", tmp_path)
    assert f"lakectl -w {wh} describe shop.orders" in screen
    assert listed(zsh_tab("lakectl nosuchcommand --retain-m", tmp_path)) == []


def fish_complete(line: str, tmp_path: Path) -> list[list[str]]:
    """`complete -C` in fish with the checked-in script sourced: [candidate, help] pairs."""
    script = f"source {ROOT / 'completions' / 'lakectl.fish'}; complete -C {shlex.quote(line)}"
    proc = subprocess.run(["fish", "--no-config", "-c", script], capture_output=True, text=True,
                          env=shell_env(tmp_path), cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [row.split("\t") for row in proc.stdout.splitlines()]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_the_checked_in_fish_script_completes_in_fish(wh: Path, tmp_path: Path) -> None:
    assert [row[0] for row in fish_complete("lakectl sc", tmp_path)] == ["scan", "schemas"]
    assert [row[0] for row in fish_complete("lakectl expire x --retain-m", tmp_path)] == ["--retain-max",
                                                                                          "--retain-min"]
    assert [row[0] for row in fish_complete(f"lakectl -w {wh} describe sh", tmp_path)] == ["shop.items",
                                                                                           "shop.orders"]
    rows = fish_complete(f"lakectl -w {wh} scan shop.orders --snapshot-id ", tmp_path)
    # fish sorts what it is given (lakectl sends newest first) unless the script says --keep-order,
    # which Typer's fish template does not
    assert sorted(row[0] for row in rows) == ["1", "2", "3"] and all(row[1].startswith("APPEND ") for row in rows)
    # a warehouse without tables: lakectl offers nothing, so (as bash's `complete -o default`) fish
    # falls back to the files of the current directory: Typer's rule applies only when lakectl answers
    files = sorted(p.name + "/" * p.is_dir() for p in tmp_path.iterdir())
    assert [row[0] for row in fish_complete(f"lakectl -w {tmp_path / 'nowhere'} scan ", tmp_path)] == files


@pytest.fixture
def columns_wh(tmp_path: Path) -> Path:
    wh = tmp_path / "wh"
    result = runner.invoke(app, ["-q", "-w", str(wh), "create", "shop.orders", "--schema",
                                 "id BIGINT, amount DECIMAL(10, 2), dt STRING", "--primary-key", "id,dt"])
    assert result.exit_code == 0, result.stderr
    return wh


def test_maintain_takes_databases_and_tables(wh: Path) -> None:
    assert complete(f"lakectl -w {wh} maintain ") == ["logs", "shop", "logs.events", "shop.items", "shop.orders"]
    assert complete(f"lakectl -w {wh} maintain shop.o") == ["shop.orders"]
    assert complete(f"lakectl -w {wh} maintain logs.events sh") == ["shop", "shop.items", "shop.orders"]


def test_columns_after_select_where_and_key(columns_wh: Path) -> None:
    wh = columns_wh
    assert complete(f"lakectl -w {wh} scan shop.orders --select ") == ["id", "amount", "dt"]
    assert complete(f"lakectl -w {wh} scan shop.orders --select id,") == ["id,amount", "id,dt"]  # not id again
    assert complete(f"lakectl -w {wh} lookup shop.orders --select a") == ["amount"]
    assert complete(f"lakectl -w {wh} scan shop.orders --where am") == ["amount"]
    assert complete(f"lakectl -w {wh} scan shop.orders --where amount>0&&d") == ["amount>0&&dt"]
    assert complete(f"lakectl -w {wh} delete shop.orders --where i") == ["id"]
    assert complete(f"lakectl -w {wh} lookup shop.orders --key ") == ["id=", "dt="]
    assert complete(f"lakectl -w {wh} lookup shop.orders --key id=3,") == ["id=3,dt="]


def test_paimon_option_keys_after_option_flags(columns_wh: Path) -> None:
    wh = columns_wh
    assert complete(f"lakectl -w {wh} create shop.x --option bucket") == [
        "bucket=", "bucket-function.type=", "bucket-key="]
    assert "snapshot.num-retained.max=" in complete(f"lakectl -w {wh} alter-schema shop.orders --set-option snap")
    assert complete(f"lakectl -w {wh} alter-schema shop.orders --reset-option snapshot.num-retained.m") == [
        "snapshot.num-retained.max", "snapshot.num-retained.min"]
    assert complete(f"lakectl -w {wh} create shop.x --option bucket=") == []  # the value is the user's


def test_completing_input_formats_loads_no_pyarrow(tmp_path: Path) -> None:
    """Every TAB runs lakectl; the input formats must not cost a pyarrow import (~0.2 s)."""
    line = "lakectl write shop.orders --input-format "
    env = {**os.environ, "_LAKECTL_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": "4",
           "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    code = ("import sys\nsys.argv[0] = 'lakectl'\nfrom lakectl.app import main\ntry:\n    main()\n"
            "except SystemExit:\n    pass\n"
            "print('pyarrow loaded' if 'pyarrow' in sys.modules else 'no pyarrow', file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout.split() == ["parquet", "csv", "json", "jsonl", "orc"], done.stderr
    assert done.stderr.strip().splitlines()[-1] == "no pyarrow"
