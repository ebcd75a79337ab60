"""A fixed sample of the stall explorer's matrix (explore_kit.py; the whole matrix is
``make explore``): each scenario stalls command A before its N-th storage mutation, runs command
B and a plain write to completion, lets A go on and checks the invariants of issue 43.

The sample is a seeded pick from points.json (each A's mutation count, written by
``tests/explore/run.py --write-points``) that covers every A and every B at least once. A
scenario whose violation is known and not fixed yet is listed in KNOWN_FAILING with its cause,
marked ``xfail(strict=True)``: when a fix lands it XPASSes, which fails, and the list is updated.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import explore_kit as kit

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not kit.LAKECTL.exists(), reason="the lakectl console script is not installed")]

POINTS = json.loads((Path(__file__).with_name("points.json")).read_text())
SAMPLE_SIZE = 40
SEED = 43


def sample() -> list[tuple[str, int, str]]:
    """SAMPLE_SIZE scenarios: every A (with a mutation point) and every B at least once, N drawn
    from A's points, all by one seeded generator."""
    rng = random.Random(SEED)
    a_names = sorted(a for a, n in POINTS.items() if n > 0 and a in kit.COMMANDS and kit.COMMANDS[a].solo_exit == 0)
    b_names = sorted(kit.COMMANDS)
    rng.shuffle(b_names)
    picked: dict[str, tuple[str, int, str]] = {}

    def add(a: str, b: str) -> None:
        n = rng.randint(1, POINTS[a])
        picked.setdefault(kit.scenario_id(a, n, b), (a, n, b))

    for i in range(max(len(a_names), len(b_names))):
        add(a_names[i % len(a_names)], b_names[i % len(b_names)])
    while len(picked) < SAMPLE_SIZE:
        add(rng.choice(a_names), rng.choice(b_names))
    return sorted(picked.values())


# Scenario id -> why it fails today (the lead's fixes in core are landing: re-run and update).
KNOWN_FAILING: dict[str, str] = {}  # every violation the sample found so far is fixed


def params(chosen: list[tuple[str, int, str]], known_failing: dict[str, str]) -> list:
    """The chosen scenarios as pytest parameters, those known to fail as strict xfails."""
    out = []
    for a, n, b in chosen:
        sid = kit.scenario_id(a, n, b)
        marks = [pytest.mark.xfail(strict=True, reason=known_failing[sid])] if sid in known_failing else []
        out.append(pytest.param(a, n, b, id=sid, marks=marks))
    return out


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("explore")


def test_the_sample_covers_every_command_as_a_and_b() -> None:
    chosen = sample()
    assert len(chosen) == SAMPLE_SIZE
    assert {a for a, _, _ in chosen} == {a for a, n in POINTS.items() if n > 0 and kit.COMMANDS[a].solo_exit == 0}
    assert {b for _, _, b in chosen} == set(kit.COMMANDS)


@pytest.mark.parametrize(("a", "n", "b"), params(sample(), KNOWN_FAILING))
def test_stalled_command_next_to_another(root: Path, a: str, n: int, b: str) -> None:
    outcome = kit.run_scenario(a, n, b, root)
    assert outcome.ok, outcome.report()


def test_forced_orphan_removal_next_to_a_stalled_write_loses_nothing(root: Path) -> None:
    """Orphan removal forced to age 0 next to a write stalled before its publish (what --force
    promises never happens) deletes the write's new files. Before issue 43 the write then
    published a snapshot naming them and exited 0, and the explorer reported the table broken
    (this was its negative control). Now the write finds its files gone after publishing, undoes
    its snapshot and exits 4: no violation, and the explorer still sees the stall happen."""
    publish = next(i for i, line in enumerate(kit.points("write", root), start=1)
                   if line.startswith("create ") and "/snapshot/snapshot-" in line)
    outcome = kit.run_scenario("write", publish, "remove-orphan-files-forced", root)
    assert outcome.stalled and outcome.ok, outcome.report()
    stalled_write = outcome.runs[0]
    assert stalled_write.code == 4 and "deleted before the commit landed" in stalled_write.err, outcome.report()
