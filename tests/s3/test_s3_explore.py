"""A small fixed part of the stall explorer (tests/explore/explore_kit.py) on a real S3 server
(SeaweedFS on 127.0.0.1): command A stalled before its N-th storage mutation while command B
and a plain write run to completion, then A goes on and the invariants of issue 43 are checked.

On S3 a rename is a copy and deletes, a drop deletes object by object, a clone writes at the
target name: other mutation points than on a local disk (tests/explore/points-s3.json, written
by ``tests/explore/run.py --s3 --write-points``), and other windows for B to meet A half-way.
Each pair (A, B) below puts one of write, rollback, expire-aggressive, fast-forward,
branch-create, tag-rename, rename, drop, clone and branch-rename on each side; N is drawn from A's S3 points
by one seeded generator. ``make explore`` runs a larger S3 sample (run.py --s3).

A scenario whose violation is a known lakectl bug not fixed yet is listed in KNOWN_FAILING with
its cause, marked ``xfail(strict=True)``: when a fix lands it XPASSes, which fails, and the list
is updated.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "explore"))
import explore_kit as kit  # noqa: E402
from test_explore import params  # noqa: E402  (the sample's parameters, as test_explore.py makes them)

pytestmark = [pytest.mark.s3, pytest.mark.slow,
              pytest.mark.skipif(not kit.LAKECTL.exists(), reason="the lakectl console script is not installed")]

POINTS = json.loads((Path(kit.__file__).with_name("points-s3.json")).read_text())
SEED = 43
PAIRS = [
    ("write", "rollback"),
    ("rollback", "write"),
    ("expire-aggressive", "fast-forward"),
    ("fast-forward", "branch-create"),
    ("branch-create", "expire-aggressive"),
    ("tag-rename", "rename"),
    ("rename", "tag-rename"),
    ("drop", "clone"),
    ("clone", "drop"),
    ("branch-rename", "write"),
    ("fast-forward", "branch-rename"),
]


def scenarios() -> list[tuple[str, int, str]]:
    rng = random.Random(SEED)
    return [(a, rng.randint(1, POINTS[a]), b) for a, b in PAIRS]


# Scenario id -> why it fails today (a lakectl bug; re-run and update when its fix lands).
KNOWN_FAILING: dict[str, str] = {}  # the two the explorer found on S3 are fixed (core/commit.py, core/ops/rename.py)


@pytest.fixture(scope="module")
def store(s3) -> kit.S3Store:  # noqa: ANN001 - the session's S3Server
    return kit.S3Store(s3)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("explore-s3")


def test_the_pairs_put_each_command_on_both_sides() -> None:
    named = {"write", "rollback", "expire-aggressive", "fast-forward", "branch-create", "tag-rename", "rename",
             "drop", "clone", "branch-rename"}
    assert {a for a, _ in PAIRS} == named and {b for _, b in PAIRS} == named
    assert all(1 <= n <= POINTS[a] for a, n, _ in scenarios())


@pytest.mark.parametrize(("a", "n", "b"), params(scenarios(), KNOWN_FAILING))
def test_stalled_command_next_to_another_on_s3(store: kit.S3Store, root: Path, a: str, n: int, b: str) -> None:
    outcome = kit.run_scenario(a, n, b, root, store=store)
    # A stalls where points-s3.json says it has a mutation: else the file is stale (rewrite it)
    # and the scenario tested less than it says.
    assert outcome.stalled, f"A never reached mutation {n}: is points-s3.json stale?\n{outcome.report()}"
    assert outcome.ok, outcome.report()
