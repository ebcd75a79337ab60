"""Man pages and completion scripts are generated from the app and checked in: regenerate
them and fail on any difference (run ``make man completions``). The pages render with
``man``/``groff`` where installed, and every command's help carries examples that parse."""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

import pytest
import typer.main
from typer.testing import CliRunner

from lakectl.app import app
from lakectl.errors import EXIT_CODE_MEANINGS

ROOT = Path(__file__).resolve().parents[2]


def load_script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"lakectl_{name}", ROOT / "scripts" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def commands() -> Iterator[tuple[tuple[str, ...], Any]]:
    def walk(cmd: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
        yield path, cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from walk(sub, (*path, name))

    yield from walk(typer.main.get_command(app), ("lakectl",))


# ---- checked in and current ---------------------------------------------------------------------
def test_completion_scripts_are_current() -> None:
    generated = load_script("gen_completions").generate()
    assert set(generated) == {"lakectl.bash", "_lakectl", "lakectl.fish"}
    for name, text in generated.items():
        path = ROOT / "completions" / name
        assert path.is_file(), f"{path} is missing: run make completions"
        assert path.read_text() == text, f"{path} is stale: run make completions"
    assert generated["_lakectl"].startswith("#compdef lakectl\n")
    assert "_LAKECTL_COMPLETE=complete_bash" in generated["lakectl.bash"]


def test_man_pages_are_current() -> None:
    generated = load_script("gen_man").generate()
    on_disk = {p.name for p in (ROOT / "man").glob("*.1")}
    assert on_disk == set(generated), "man/ differs from the app's commands: run make man"
    for name, text in generated.items():
        assert (ROOT / "man" / name).read_text() == text, f"man/{name} is stale: run make man"


def test_generators_check_mode(tmp_path: Path) -> None:
    gen_man, gen_completions = load_script("gen_man"), load_script("gen_completions")
    assert gen_man.main(["--check", str(ROOT / "man")]) == 0
    assert gen_completions.main(["--check", str(ROOT / "completions")]) == 0
    assert gen_man.main(["--check", str(tmp_path)]) == 1
    assert gen_man.main([str(tmp_path)]) == 0 and gen_man.main(["--check", str(tmp_path)]) == 0
    (tmp_path / "lakectl-gone.1").write_text("old\n")
    assert gen_man.main(["--check", str(tmp_path)]) == 1  # a page of a removed command is stale too


def test_one_page_per_command_with_the_sections() -> None:
    pages = load_script("gen_man").generate()
    for path, cmd in commands():
        name = "-".join(path) + ".1"
        assert name in pages, name
        text = pages[name]
        for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "EXIT STATUS", "SEE ALSO"):
            assert f".SH {section}\n" in text, (name, section)
        if any(p.name != "help" and not getattr(p, "hidden", False) for p in cmd.params):  # hidden: the globals
            assert ".SH OPTIONS\n" in text or ".SH ARGUMENTS\n" in text, name
        if not getattr(cmd, "commands", None) or len(path) == 1:
            assert ".SH EXAMPLES\n" in text, name
        for code, meaning in EXIT_CODE_MEANINGS:
            assert f".B {code}\n" in text
    assert ".SH COMMANDS\n" in pages["lakectl.1"] and ".SH ENVIRONMENT\n" in pages["lakectl.1"]
    # Deterministic: the package version, no date.
    assert pages["lakectl.1"].splitlines()[1] == f'.TH LAKECTL 1 "" "lakectl {version("lakectl")}" "lakectl manual"'


# ---- rendering ---------------------------------------------------------------------------------
@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_every_page_formats_without_warnings() -> None:
    for page in sorted((ROOT / "man").glob("*.1")):
        proc = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(page)], capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 0 and proc.stderr == "", (page.name, proc.stderr)


@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed")
def test_man_renders_the_main_page() -> None:
    env = {**os.environ, "MANPAGER": "cat", "PAGER": "cat", "MANWIDTH": "80", "LANG": "C.UTF-8"}
    proc = subprocess.run(["man", "-l", str(ROOT / "man" / "lakectl.1")], capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    for fragment in ("NAME", "lakectl - Create, write, scan", "SYNOPSIS", "COMMANDS", "lakectl-expire(1)",
                     "--warehouse URI", "EXIT STATUS", "130", "interrupted", "LAKECTL_PROFILE", "EXAMPLES"):
        assert fragment in text, fragment
    assert max(len(line) for line in text.splitlines()) <= 80
    expire = subprocess.run(["man", "-l", str(ROOT / "man" / "lakectl-expire.1")], capture_output=True, text=True,
                            env=env, timeout=60)
    assert "--retain-max N" in expire.stdout and "lakectl expire shop.orders" in expire.stdout


# ---- help text -----------------------------------------------------------------------------------
def example_lines(help_text: str) -> list[str]:
    """The lines of the ``Example(s):`` block of a help text."""
    paragraphs = [p for p in help_text.split("\n\n")]
    for i, para in enumerate(paragraphs):
        if para.strip() in ("Example:", "Examples:") and i + 1 < len(paragraphs):
            block = paragraphs[i + 1]
            assert block.startswith("\b"), "examples go in a \\b block, so click keeps their lines"
            return [line.strip() for line in block.splitlines()[1:]]  # continued lines end in "\\"
    return []


def parse_command_line(argv: list[str]) -> tuple[str, ...]:
    """Parse like lakectl would (no callbacks run); return the command path. Usage errors raise."""
    root = typer.main.get_command(app)
    ctx = root.make_context("lakectl", list(argv))
    path: tuple[str, ...] = ("lakectl",)
    while getattr(ctx.command, "commands", None):
        args = [*ctx._protected_args, *ctx.args]
        name, cmd, rest = ctx.command.resolve_command(ctx, args)
        ctx = cmd.make_context(name, rest, parent=ctx)
        path = (*path, name)
    return path


def test_every_command_has_examples_that_parse() -> None:
    for path, cmd in commands():
        lines = example_lines(cmd.help or "")
        assert lines, f"{' '.join(path)} --help has no Example: block"
        assert all(len(line) <= 72 for line in lines), "example lines fit man's 80 columns (and --help's)"
        for example in "\n".join(lines).replace("\\\n", " ").splitlines():
            words = shlex.split(example)
            if "|" in words:  # cat rows.jsonl | lakectl write ...
                words = words[len(words) - words[::-1].index("|"):]
            if ">>" in words:
                words = words[:words.index(">>")]
            assert words[0] == "lakectl", example
            parsed = parse_command_line(words[1:])
            if not getattr(cmd, "commands", None):
                assert parsed == path, (path, example)


def test_the_root_help_lists_exit_codes_and_commands() -> None:
    out = CliRunner().invoke(app, ["--help"], terminal_width=100).stdout
    text = " ".join(out.split())
    for code, meaning in EXIT_CODE_MEANINGS:
        assert f"{code} {meaning}" in text
    for name in ("config", "tag", "expire", "remove-orphan-files"):
        assert f" {name} " in text
    assert "--profile NAME" in out and "--quiet" in out and "Examples:" in out


def test_subcommand_help_shows_examples_unwrapped() -> None:
    out = CliRunner().invoke(app, ["create", "--help"], terminal_width=80).stdout
    assert ('    lakectl create shop.orders --primary-key id,dt --partition-by dt \\\n'
            '        --option bucket=2 --schema \\\n'
            '        "id BIGINT, customer STRING, amount DECIMAL(10, 2), dt STRING"\n') in out
