"""Faults injected into FileIO on a real S3 server (SeaweedFS on 127.0.0.1) across every command
that writes (``fault_lab.OPS``; the fail loops run ``FAIL_OPS``): after every fault the table scans to
its last committed snapshot, a rerun completes and nothing committed is lost. The loops and
the model are ``tests/unit/fault_lab.py``; every run gets a server-side copy of a template
table, so each n starts from the same state.

This module kills before mutations (every third one of each command: the local matrix kills
before every one);
test_s3_fail_matrix.py fails reads, writes, conditional puts, deletes and listings. A fault
injected before a conditional PUT is the same on S3 as on local files; the S3 commit point's
own failure modes (a lost response, a 409) are test_s3_lost_responses.py's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from s3_fault_kit import run_loop

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from fault_lab import OPS, Tally, kill_loop  # noqa: E402

pytestmark = pytest.mark.s3
FIGURES = Tally()


@pytest.mark.parametrize("op_name", list(OPS))
def test_s3_kill_before_every_mutation(s3, op_name: str) -> None:
    """The crash matrix on S3 (issue 17): SIGKILL before the n-th PUT, conditional PUT or
    DELETE of every command that writes, then a random further command, followed by a scan of
    every listed snapshot and tag against the model, and a final ``check``.

    The same loop runs on local files at every n (tests/unit/test_fault_injection.py), and the
    code between a kill and the table is the same for both stores but for the S3 FileIO; here
    every third n is killed, starting at 1, 2 or 3 by the command's place in the list, so that
    the S3 FileIO's puts, conditional puts and deletes are all killed before while the run
    takes a third of the time (each S3 run is a few hundred requests)."""
    start = 1 + list(OPS).index(op_name) % 3
    run_loop(s3, FIGURES, kill_loop, op_name, kind="mutation", aftermath_steps=1, start=start, stride=3)


def test_totals() -> None:
    """The figures of the loops above (run in this module's order)."""
    if not FIGURES.runs:
        pytest.skip("run together with the loops above")
    print(f"\nS3 fault injection: {FIGURES.runs} faulted runs, {FIGURES.faults} faults reached, "
          f"{FIGURES.errors} runs raised, {FIGURES.retries} reruns, 0 rows lost")
