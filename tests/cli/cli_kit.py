"""What the CliRunner tests of branches share: JSON invocations, and
a tiny (id, v) table's writes and reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from lakectl.app import app

runner = CliRunner()


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
