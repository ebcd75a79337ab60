"""Faults injected into FileIO on a real S3 server (SeaweedFS on 127.0.0.1) across every command
that writes (``fault_lab.OPS``; the fail loops run ``FAIL_OPS``): after every fault the table scans to
its last committed snapshot, a rerun completes and nothing committed is lost. The loops and
the model are ``tests/unit/fault_lab.py``; every run gets a server-side copy of a template
table, so each n starts from the same state.

Quick runs kill before every mutation (every state a crash can leave on S3); the slow ones
also fail every read, write, conditional put, delete and listing. A fault injected before a
conditional PUT is the same on S3 as on local files; the S3 commit point's own failure modes
(a lost response, a 409) are test_s3_lost_responses.py's."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from core.ops.create import create
from core.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from fault_lab import FAIL_OPS, OPS, Clone, Lab, Tally, fail_loop, kill_loop, seed  # noqa: E402

pytestmark = pytest.mark.s3
FIGURES = Tally()


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


def _run(s3, loop, op_name: str, **kw) -> Tally:
    lab = s3_template(s3)
    start = time.monotonic()
    count = loop(lab, OPS[op_name](), clone=s3_clone(s3), **kw)
    FIGURES.add(lab.tally)
    print(f"\ns3 {op_name} {kw}: {lab.tally.runs} runs, {count} faults, {time.monotonic() - start:.1f}s")
    return lab.tally


@pytest.mark.parametrize("op_name", list(OPS))
def test_s3_kill_before_every_mutation(s3, op_name: str) -> None:
    """The crash matrix on S3 (issue 17): SIGKILL before the n-th PUT, conditional PUT or
    DELETE of every command that writes, for every n (every state a crash can leave on S3),
    then a random further command, followed by a scan of every listed snapshot and tag
    against the model, and a final ``check``."""
    _run(s3, kill_loop, op_name, kind="mutation", aftermath_steps=1)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["read", "write", "create", "delete", "list"])
@pytest.mark.parametrize("op_name", list(FAIL_OPS))
def test_s3_fail_at_every_operation(s3, op_name: str, kind: str) -> None:
    _run(s3, fail_loop, op_name, kind=kind)


def test_totals() -> None:
    """The figures of the loops above (run in this module's order)."""
    if not FIGURES.runs:
        pytest.skip("run together with the loops above")
    print(f"\nS3 fault injection: {FIGURES.runs} faulted runs, {FIGURES.faults} faults reached, "
          f"{FIGURES.errors} runs raised, {FIGURES.retries} reruns, 0 rows lost")
