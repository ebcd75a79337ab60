"""What sort compaction buys (issue 46): ``lakectl scan -v --where`` on the ordered columns, before
and after ``compact --order-by x,y`` with each strategy, counting the data files and Parquet row
groups the scan reads (its own ``-v`` report) and checking that the rows are the same.

The table: an unaware-bucket append table of ``--writes`` commits of ``--rows`` random rows each
(x uniform over 0..1,000,000, y uniform over [0, 1), a 24-character payload), written through
lakectl's API; ``target-file-size`` and ``parquet.block.size`` small enough that the compacted
table has several files of several row groups. Each strategy compacts its own copy of the table.
Each query is one console-script process; the fractions are of what the same query read before.

    python bench/sort_compact.py --writes 16 --rows 20000 --out bench/results-sort-compact.md
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from core.ops.create import create  # noqa: E402
from core.table import Table  # noqa: E402

LAKECTL = str(Path(sys.executable).with_name("lakectl"))
TABLE = "db.events"
QUERIES = {
    "x in 1% of its range": "x BETWEEN 500000 AND 510000",
    "y in 1% of its range": "y BETWEEN 0.25 AND 0.26",
    "x and y in 10% each": "x BETWEEN 100000 AND 200000 AND y BETWEEN 0.6 AND 0.7",
}
_REPORT = re.compile(r"read (\d+) of (\d+) live data files .*?; (\d+) of (\d+) row groups")


def build(warehouse: Path, writes: int, rows: int) -> None:
    table = Table.locate(TABLE, warehouse=str(warehouse))
    create(table, "x BIGINT, y DOUBLE, payload STRING",
           options={"bucket": "-1", "target-file-size": "2mb", "parquet.block.size": "256kb"})
    rng = np.random.default_rng(46)
    for _ in range(writes):
        table.write(pa.table({"x": rng.integers(0, 1_000_000, rows), "y": rng.random(rows),
                              "payload": [f"{v:024d}" for v in rng.integers(0, 10**12, rows)]}))


def lakectl(warehouse: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([LAKECTL, "-w", str(warehouse), *args], capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"lakectl {' '.join(args)} failed:\n{proc.stderr}")
    return proc


def query(warehouse: Path, where: str) -> tuple[int, int, str]:
    """(files read, row groups read, a digest of the sorted rows) of one scan."""
    proc = lakectl(warehouse, "-v", "scan", TABLE, "--where", where, "-f", "csv")
    found = _REPORT.search(proc.stderr)
    if found is None:
        raise SystemExit(f"no read report in:\n{proc.stderr}")
    rows = sorted(proc.stdout.splitlines()[1:])
    return int(found.group(1)), int(found.group(3)), hashlib.sha256("\n".join(rows).encode()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=16)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-sort-") as tmp:
        base = Path(tmp) / "base"
        build(base, args.writes, args.rows)
        before = {name: query(base, where) for name, where in QUERIES.items()}
        lines = [f"# Sort compaction: what `scan --where` reads (bench/sort_compact.py)", "",
                 f"{args.writes} writes of {args.rows:,} rows ({args.writes * args.rows:,} rows) into an "
                 "unaware-bucket append table (target-file-size 2mb, parquet.block.size 256kb); each strategy "
                 "compacts its own copy with `compact --order-by x,y`. Files and row groups read are the "
                 "scan's own `-v` report; the fraction is of what the same query read before compaction; "
                 "rows are identical in every case.", "",
                 "| layout | query | files read | row groups read | files (fraction) | row groups (fraction) |",
                 "|---|---|---|---|---|---|"]
        for name, (files, groups, _) in before.items():
            lines.append(f"| as written | {name} | {files} | {groups} | 1 | 1 |")
        for strategy in ("order", "zorder", "hilbert"):
            copy = Path(tmp) / strategy
            shutil.copytree(base, copy)
            lakectl(copy, "compact", TABLE, "--order-by", "x,y", "--order-strategy", strategy)
            for name, where in QUERIES.items():
                files, groups, digest = query(copy, where)
                b_files, b_groups, b_digest = before[name]
                if digest != b_digest:
                    raise SystemExit(f"{strategy}: {name} returned other rows than before compaction")
                lines.append(f"| {strategy} | {name} | {files} | {groups} | {files / b_files:.2f} | "
                             f"{groups / b_groups:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
