"""``write --auto-create`` without ``--like`` never changes a value, from a file or stdin, in
CSV, JSON lines and JSON, on both engines: ``scan`` of the new table prints every cell with the
text the input had (the hand-written input below mixes texts that look like dates,
timestamps, padded numbers, decimals and doubles), and the types are README's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lakectl.app import app

runner = CliRunner()

CSV = ("id,amount,dt,ts,code,score,ok,note,big\n"
       "1,12.50,2024-01-02,2024-01-02T00:00:00,007,1.5,true,\"a, b\",12345678901234567890\n"
       "2,3.00,2024-13-45,2024-01-02 10:00,010,2.25,false,,1\n"
       "3,-0.25,,2024-01-02T00:00:00.5,1,1e+20,,\"\",-5\n")
TYPES = {"id": "BIGINT", "amount": "DECIMAL(18, 2)", "dt": "STRING", "ts": "STRING", "code": "STRING",
         "score": "DOUBLE", "ok": "BOOLEAN", "note": "STRING", "big": "DECIMAL(20, 0)"}


def _run(*args: str, input: str | None = None) -> str:
    result = runner.invoke(app, list(args), input=input)
    assert result.exit_code == 0, (args, result.output)
    return result.stdout


def _types(wh: str, name: str) -> dict[str, str]:
    return {c["name"]: c["type"] for c in json.loads(_run("-w", wh, "-f", "json", "describe", name))["columns"]}


def _cells(text: str) -> list[list[str]]:
    import csv
    import io

    return list(csv.reader(io.StringIO(text)))


def _jsonl_from_csv() -> str:
    """The same table as JSON lines, written as a JSON writer would: numbers as numbers with
    their digits, decimals with a fixed scale as strings (as scan prints them), text as text."""
    lines = []
    for row in _cells(CSV)[1:]:
        record: dict[str, Any] = {}
        for name, cell in zip(_cells(CSV)[0], row):
            if cell == "" and name != "note":
                record[name] = None
            elif name in ("id", "big"):
                record[name] = int(cell)
            elif name == "ok":
                record[name] = cell == "true"
            else:
                record[name] = cell
        lines.append(json.dumps(record).replace(f'"score": "{record["score"]}"', f'"score": {record["score"]}'))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_csv_keeps_every_value(tmp_path: Path, source: str) -> None:
    wh = str(tmp_path / "wh")
    path = tmp_path / "in.csv"
    path.write_text(CSV)
    if source == "file":
        _run("-w", wh, "-q", "write", "db.t", "-i", str(path), "--auto-create")
    else:
        _run("-w", wh, "-q", "write", "db.t", "-i", "-", "--input-format", "csv", "--auto-create", input=CSV)
    assert _types(wh, "db.t") == TYPES
    printed = _run("-w", wh, "scan", "db.t", "-f", "csv")
    assert sorted(_cells(printed)[1:]) == sorted(_cells(CSV)[1:])
    assert printed.splitlines()[0] == CSV.splitlines()[0]


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_json_keeps_every_value(tmp_path: Path, fmt: str) -> None:
    wh = str(tmp_path / "wh")
    text = _jsonl_from_csv()
    if fmt == "json":
        text = "[" + ",\n".join(text.splitlines()) + "]"
    path = tmp_path / f"in.{fmt}"
    path.write_text(text)
    _run("-w", wh, "-q", "write", "db.t", "-i", str(path), "--auto-create")
    assert _types(wh, "db.t") == TYPES
    # JSON lines and the CSV copy print the same cells as the input's CSV
    printed = _run("-w", wh, "scan", "db.t", "-f", "csv")
    assert sorted(_cells(printed)[1:]) == sorted(_cells(CSV)[1:])
    scanned = sorted((json.loads(line) for line in _run("-w", wh, "scan", "db.t", "-f", "jsonl").splitlines()),
                     key=lambda r: r["id"])
    written = sorted((json.loads(line) for line in _jsonl_from_csv().splitlines()), key=lambda r: r["id"])
    for record in written:  # beyond 64 bits a DECIMAL(p, 0): scan prints its digits as a JSON string
        record["big"] = str(record["big"])
    assert scanned == written


def test_a_copy_through_text_without_like_keeps_the_values(tmp_path: Path) -> None:
    """The issue's case: a STRING date column and a DECIMAL(10, 2) amount, copied through
    JSON lines without --like, read back with the same text (types are guessed, values kept)."""
    wh = str(tmp_path / "wh")
    _run("-w", wh, "-q", "create", "shop.orders", "-s", "id BIGINT, amount DECIMAL(10, 2), dt STRING")
    _run("-w", wh, "-q", "write", "shop.orders", "-i", "-", "--input-format", "csv",
         input="id,amount,dt\n1,12.50,2024-01-02\n2,7.00,2024-01-03\n")
    text = _run("-w", wh, "scan", "shop.orders", "-f", "jsonl")
    _run("-w", wh, "-q", "write", "shop.copy", "-i", "-", "--input-format", "jsonl", "--auto-create", input=text)
    assert _run("-w", wh, "scan", "shop.copy", "-f", "jsonl") == text
    assert _types(wh, "shop.copy") == {"id": "BIGINT", "amount": "DECIMAL(18, 2)", "dt": "STRING"}


@pytest.mark.spark
def test_spark_infers_the_types_the_local_engine_does(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    path = tmp_path / "in.csv"
    path.write_text(CSV)
    _run("-w", wh, "-q", "write", "db.t", "-i", str(path), "--auto-create", "--engine", "spark",
         "--master", "local[1]")
    assert _types(wh, "db.t") == TYPES
    printed = _run("-w", wh, "scan", "db.t", "-f", "csv")
    assert sorted(_cells(printed)[1:]) == sorted(_cells(CSV)[1:])
