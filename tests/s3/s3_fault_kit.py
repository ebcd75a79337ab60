"""The fault loops of tests/unit/fault_lab.py on a real S3 server: a template table per run and
a server-side copy of it for every n, so each n starts from the same state."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from core.ops.create import create
from core.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from fault_lab import OPS, Clone, Lab, Tally, seed  # noqa: E402


def s3_template(s3) -> Lab:
    warehouse, options = s3.warehouse(), s3.storage_options()
    t = Table.locate("db.t", warehouse=warehouse, storage_options=options)
    create(t, "id BIGINT, v STRING, dt STRING", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "2", "write-only": "true"})
    lab = Lab(lambda: Table.open("db.t", warehouse=warehouse, storage_options=options), thorough=False)
    seed(lab)
    return lab


def s3_clone(s3) -> Clone:
    fs = s3.fs()

    def clone(template: Lab, name: str) -> Lab:
        warehouse = s3.warehouse()
        src = template.t.path
        fs.copy(src.split("://", 1)[1], f"{warehouse.split('://', 1)[1]}/db.db/t", recursive=True)
        options = s3.storage_options()
        return template.copy_to(lambda: Table.open("db.t", warehouse=warehouse, storage_options=options))
    return clone


def run_loop(s3, figures: Tally, loop, op_name: str, **kw) -> Tally:
    lab = s3_template(s3)
    start = time.monotonic()
    count = loop(lab, OPS[op_name](), clone=s3_clone(s3), **kw)
    figures.add(lab.tally)
    print(f"\ns3 {op_name} {kw}: {lab.tally.runs} runs, {count} faults, {time.monotonic() - start:.1f}s")
    return lab.tally
