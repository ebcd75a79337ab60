"""lakectl's core library reading its table in this process (lakectl's .venv, local engine):
the same three queries as ``pypaimon_rust_reads.py`` through the calls the CLI makes:

- range: ``scan(table, where="id BETWEEN lo AND hi")``;
- lookup: ``lookup(table, ["id=k1", ..., "id=k100"])`` (no partition given: every partition
  is searched, as the SQL ``IN`` does);
- full: ``scan(table)``.

The timed part is the call alone (imports and ``Table.locate`` are not). Prints one JSON line.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, os.environ.get("LAKECTL_BENCH_SOURCE") or str(Path(__file__).resolve().parents[2]))
from common import emit_read, read_args, timed_calls  # noqa: E402

from core.engines import EngineSettings  # noqa: E402
from core.ops.lookup import lookup  # noqa: E402
from core.ops.scan import scan  # noqa: E402
from core.table import Table  # noqa: E402

LOCAL = EngineSettings(engine="local")


def main() -> None:
    args = read_args(__doc__.splitlines()[0])
    table = Table.locate(args.table, warehouse=args.warehouse)
    keys = [f"id={k}" for k in args.keys.split(",") if k]

    def query() -> pa.Table:
        if args.query == "range":
            return scan(table, where=f"id BETWEEN {args.lo} AND {args.hi}", engine_settings=LOCAL)
        if args.query == "lookup":
            return lookup(table, keys).rows
        return scan(table, engine_settings=LOCAL)

    result, times = timed_calls(query, args.calls)
    emit_read(args, result, times)


if __name__ == "__main__":
    main()
