"""What the CliRunner tests share: JSON invocations, a tiny (id, v) table's writes and reads,
and the check that an error message is in lakectl's words."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from lakectl.app import app

runner = CliRunner()

# What Python leaks into a message when an exception is printed as it is: a class name
# ("NotFoundError: ...", "ConversionSyntax"), a repr ("[<class 'decimal.ConversionSyntax'>]"),
# a builtin's own words ("invalid literal for int() with base 10").
_PYTHON_WORDS = re.compile(r"\b[A-Z][A-Za-z]*(?:Error|Exception|Syntax)\b|<class '|Traceback"
                           r"|\b(?:int|float|str|bytes|Decimal)\(\)")


def assert_lakectl_words(message: str) -> None:
    """An error line speaks of the user's table and input, never of lakectl's code."""
    found = _PYTHON_WORDS.search(message)
    assert found is None, f"Python's words {found.group(0)!r} in the message {message!r}"


def invoke(*args: Any) -> Result:
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def ok(*args: Any) -> Any:
    """The JSON output of a command that must succeed."""
    result = invoke(*args, "-f", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def write_csv(tmp_path: Path, wh: str, rows: dict[int, str], *extra: str) -> None:
    path = tmp_path / "in.csv"
    path.write_text("id,v\n" + "".join(f"{k},{v}\n" for k, v in rows.items()))
    ok("write", "db.t", "-w", wh, "-i", path, *extra)


def scan(wh: str, *extra: str) -> dict[int, str]:
    return {r["id"]: r["v"] for r in ok("scan", "db.t", "-w", wh, *extra)}


# ---- the console script as a user starts it ---------------------------------------------------
REPO = Path(__file__).resolve().parents[2]
LAKECTL = str(Path(sys.executable).with_name("lakectl"))


def console(wh: str, *args: str, **env: str) -> subprocess.Popen[str]:
    """The console script started in the background (``-f json``), this checkout first on the path."""
    full = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), **env}
    return subprocess.Popen([LAKECTL, "-w", wh, "-f", "json", *args], env=full, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def held(proc: subprocess.Popen[str], stall: Path) -> None:
    """Wait until ``proc`` (started with LAKECTL_FAULT=stall:...) stands still at its stall point."""
    deadline = time.monotonic() + 120
    while not stall.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)


def script(wh: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The console script run to its end with only ``env``'s LAKECTL_* settings (a fault or a trace)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LAKECTL_") and k != "PYTHONPATH"}
    return subprocess.run([LAKECTL, "-w", wh, "-f", "json", *args], capture_output=True, text=True, timeout=120,
                          env={**clean, "PYTHONPATH": str(REPO), **env})
