"""Faults injected into FileIO on a real S3 server (SeaweedFS on 127.0.0.1): every command of
``fault_lab.FAIL_OPS`` fails at its n-th read, write, conditional put, delete or listing; after
every fault the table scans to its last committed snapshot, a rerun completes and nothing
committed is lost (the model and loops are tests/unit/fault_lab.py).

The same loops run on local files at every n (tests/unit); the code between a fault and the
table is the same for both stores except the S3 FileIO, so here reads and listings, the most
numerous, are failed at every fourth n (1, 5, 9, ...), writes and deletes at every third,
which keeps every kind of call of the S3 FileIO under fault while the run stays a fraction of
the time. Conditional puts, the commit points, are failed at every n. Kept apart from test_s3_faults.py so the two
halves run on different test workers."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from s3_fault_kit import run_loop

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from fault_lab import FAIL_OPS, Tally, fail_loop  # noqa: E402

pytestmark = pytest.mark.s3
FIGURES = Tally()
STRIDE = {"read": 4, "list": 4, "write": 3, "create": 1, "delete": 3}


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(STRIDE))
@pytest.mark.parametrize("op_name", list(FAIL_OPS))
def test_s3_fail_at_every_operation(s3, op_name: str, kind: str) -> None:
    run_loop(s3, FIGURES, fail_loop, op_name, kind=kind, stride=STRIDE[kind])


def test_totals() -> None:
    """The figures of the loops above (run in this module's order)."""
    if not FIGURES.runs:
        pytest.skip("run together with the loops above")
    print(f"\nS3 fail injection: {FIGURES.runs} faulted runs, {FIGURES.faults} faults reached, "
          f"{FIGURES.errors} runs raised, {FIGURES.retries} reruns, 0 rows lost")
