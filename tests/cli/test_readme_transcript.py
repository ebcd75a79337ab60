"""The README's session transcript, replayed: every ``$ lakectl ...`` line runs in a fresh
directory as on an 80-column terminal without colour, and its output must match the lines
that follow it in the README.

``$ cat FILE`` lines create FILE with the content shown; ``$ echo $?`` prints the exit code
of the command before. What differs between runs is normalised on both sides before
comparing: times, sizes, UUIDs, byte counts in JSON, and (since those change the width of a
table's columns) runs of spaces and of box-drawing rules.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lakectl.app import app

README = Path(__file__).resolve().parents[2] / "README.md"
TERMINAL = {"TTY_COMPATIBLE": "1", "TTY_INTERACTIVE": "0", "NO_COLOR": "1", "COLUMNS": "80"}

_VOLATILE = [
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?([+-]\d{2}:\d{2}|Z)?"), "<time>"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"\b\d+(\.\d)? (B|KiB|MiB|GiB|TiB)\b"), "<size>"),
    (re.compile(r'("(?:bytes|bytes_\w+|\w+_bytes|\w*file_size)"): \d+'), r"\1: <n>"),
    (re.compile(r" {2,}"), " "),
    (re.compile(r"([─━═])\1+"), r"\1"),
]


def normalise(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        for pattern, replacement in _VOLATILE:
            line = pattern.sub(replacement, line)
        lines.append(line.rstrip())
    while lines and not lines[-1]:
        lines.pop()
    return lines


def session() -> list[tuple[str, str]]:
    """(command, expected output) of the first ``console`` block after '## A short session'."""
    text = README.read_text()
    section = text[text.index("## A short session"):]
    block = section[section.index("```console\n") + len("```console\n"):]
    block = block[:block.index("\n```")]
    steps: list[tuple[str, list[str]]] = []
    continued = False
    for line in block.splitlines():
        if continued:
            steps[-1] = (steps[-1][0] + " " + line.strip().rstrip("\\").strip(), steps[-1][1])
        elif line.startswith("$ "):
            steps.append((line[2:].rstrip("\\").strip(), []))
        else:
            steps[-1][1].append(line)
        continued = line.endswith("\\")
    return [(command, "\n".join(out)) for command, out in steps]


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("LAKECTL_WAREHOUSE", "LAKECTL_FORMAT", "LAKECTL_CONFIG", "LAKECTL_PROFILE", "LAKECTL_ENGINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_readme_session_replays(here: Path) -> None:
    steps = session()
    assert sum(command.startswith("lakectl ") for command, _ in steps) >= 10
    runner = CliRunner()
    last_code = 0
    for command, expected in steps:
        words = shlex.split(command)
        if words[0] == "cat":
            (here / words[1]).write_text(expected + "\n")
            continue
        if words == ["echo", "$?"]:
            actual = f"{last_code}\n"
        else:
            assert words[0] == "lakectl", f"the transcript runs only lakectl, cat and echo $?: {command}"
            result = runner.invoke(app, words[1:], prog_name="lakectl", env=TERMINAL)
            last_code = result.exit_code
            actual = result.stdout + result.stderr
            if result.exception and not isinstance(result.exception, SystemExit):
                raise result.exception
        assert normalise(actual) == normalise(expected), f"$ {command}\n--- README ---\n{expected}\n--- got ---\n{actual}"


def test_normalising_keeps_what_matters() -> None:
    a = "│ 3 │ COMPACT │ 2026-11-22 03:18:14 │ 6.1 KiB │"
    b = "│ 3     │ COMPACT │ 2027-01-02 11:00:00 │ 980 B     │"
    assert normalise(a) == normalise(b)
    assert normalise(a) != normalise(a.replace("COMPACT", "APPEND"))
    assert normalise('"bytes_added": 4188,') == normalise('"bytes_added": 17,')
    assert normalise('"rows_written": 3,') != normalise('"rows_written": 4,')
