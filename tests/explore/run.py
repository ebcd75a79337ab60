"""The stall explorer's runner (``make explore``): every mutating command A x each of its
mutation points N x every command B (tests/explore/explore_kit.py says what one scenario does
and checks). Prints the matrix's size, its time and each violation (A, N with the traced
operation and path, B, the invariant, the commands' outputs), then the violations grouped.

    tests/explore/run.py [--jobs N] [--a CMD,...] [--b CMD,...] [--time-budget 30m] [--seed S]
                         [--last-points K] [--s3] [--write-points] [--out report.txt] [--keep DIR]
                         [--flavor pk|append]

Scenarios run in a seeded shuffled order, so that a run stopped by ``--time-budget`` has
still covered every A and B broadly; it says how many of the matrix it ran. ``--write-points``
records each A's mutation count in tests/explore/points.json, which the sample in ``make
test`` (test_explore.py) is drawn from.

``--s3`` runs the scenarios on an S3 server instead (SeaweedFS, tests/s3/s3server.py, started
in a temporary directory and stopped at the end): the chosen As and Bs, or without ``--a`` and
``--b`` a seeded sample of S3_SAMPLE_SIZE scenarios covering every A and every B (S3 requests
take milliseconds each: the whole matrix would take hours). Its mutation points are counted on
S3 (a rename or a drop is a copy and deletes there); ``--s3 --write-points`` records them in
tests/explore/points-s3.json, which tests/s3/test_s3_explore.py draws from.

``--flavor append`` (or LAKECTL_EXPLORE_FLAVOR=append) explores an append-table template instead,
with the verbs only append tables have (compact --order-by, branch merge) as A and B; its
mutation counts are tests/explore/points-append.json (test_explore_append.py's sample).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import multiprocessing
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "s3"))  # s3server, for --s3 (also in the spawned workers)

# --flavor append (the append-table template, explore_kit.FLAVOR) must be known before
# explore_kit is imported: it is passed on as LAKECTL_EXPLORE_FLAVOR (also to the spawned workers).
for _i, _arg in enumerate(sys.argv):
    if _arg == "--flavor" and _i + 1 < len(sys.argv):
        os.environ["LAKECTL_EXPLORE_FLAVOR"] = sys.argv[_i + 1]
    elif _arg.startswith("--flavor="):
        os.environ["LAKECTL_EXPLORE_FLAVOR"] = _arg.split("=", 1)[1]

import explore_kit as kit  # noqa: E402

_SUFFIX = "" if kit.FLAVOR == "pk" else f"-{kit.FLAVOR}"
POINTS_FILE = HERE / f"points{_SUFFIX}.json"  # points-append.json for the append flavor
POINTS_S3_FILE = HERE / f"points-s3{_SUFFIX}.json"
S3_SAMPLE_SIZE = 40


def _duration(text: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([smh]?)", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"not a duration: {text}")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


# ---- worker processes -----------------------------------------------------------------------
_root: Path | None = None
_deadline: float | None = None  # time.time() after which a worker starts no scenario
_store: kit.Store = kit.LOCAL


def _init(root: str, deadline: float | None, s3_server: object | None = None) -> None:
    global _root, _deadline, _store
    _root, _deadline = Path(root), deadline
    if s3_server is not None:
        _store = kit.S3Store(s3_server)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _points(a: str) -> tuple[str, list[str] | None, str]:
    assert _root is not None
    try:
        return a, kit.points(a, _root, _store), ""
    except kit.SoloFailure as e:
        return a, None, str(e)


def _scenario(args: tuple[str, int, str]) -> tuple[str, bool, str, float, list[str]] | None:
    """One scenario's (id, ok, report, seconds, invariants violated); None once past the budget
    (checked here: the pool's feeder hands out every task at once)."""
    assert _root is not None
    a, n, b = args
    if _deadline is not None and time.time() > _deadline:
        return None
    try:
        o = kit.run_scenario(a, n, b, _root, store=_store)
    except Exception as e:  # noqa: BLE001 - a harness failure is reported, not fatal
        return kit.scenario_id(a, n, b), False, f"{kit.scenario_id(a, n, b)}: harness error {type(e).__name__}: {e}", 0.0, ["harness"]
    return o.scenario, o.ok, o.report(), o.seconds, [f"{v.invariant}" for v in o.violations]


# ---- the matrix -----------------------------------------------------------------------------
def mutating(a_names: list[str]) -> list[str]:
    return [a for a in a_names if kit.COMMANDS[a].solo_exit == 0]


def cause(report: str) -> str:
    """A violation's group: the invariant and the gist of its detail, without paths and ids."""
    out = []
    for line in report.splitlines():
        if line.strip().startswith("VIOLATED"):
            text = re.sub(r"/\S+", "PATH", line.strip()[len("VIOLATED "):])
            text = re.sub(r"\d+", "N", text)
            out.append(text[:160])
    return " | ".join(sorted(set(out)))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", type=int, default=int(os.environ.get("EXPLORE_JOBS", "2")))
    p.add_argument("--a", help="only these As (comma-separated)")
    p.add_argument("--b", help="only these Bs (comma-separated)")
    p.add_argument("--time-budget", type=_duration, default=None, help="start no scenario after this long")
    p.add_argument("--seed", type=int, default=43)
    p.add_argument("--last-points", type=int, default=None, metavar="K",
                   help="only each A's last K mutation points (a change that added a step at the end)")
    p.add_argument("--write-points", action="store_true", help="record the mutation counts in points.json and stop")
    p.add_argument("--out", help="also write the report to this file")
    p.add_argument("--keep", help="work in this directory (kept: failing scenarios stay for inspection)")
    p.add_argument("--flavor", choices=("pk", "append"), default=kit.FLAVOR,
                   help="the template: pk (a primary-key table, the default) or append (an append table, with "
                        "compact-sort and branch-merge; its points in points-append.json)")
    p.add_argument("--s3", action="store_true",
                   help=f"on an S3 server (SeaweedFS); without --a/--b a sample of {S3_SAMPLE_SIZE} scenarios")
    args = p.parse_args(argv)
    with contextlib.ExitStack() as stack:
        server = _start_s3(stack) if args.s3 else None
        return _run(args, server)


def _start_s3(stack: contextlib.ExitStack) -> object:
    """A SeaweedFS server in a temporary directory, stopped (and the directory removed) on exit."""
    from s3server import seaweed_server

    workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="lakectl-explore-s3-")))
    server = stack.enter_context(seaweed_server(workdir / "seaweed", require_auth=True))
    print(f"S3 server {server.endpoint} in {workdir}", flush=True)
    return server


def _run(args: argparse.Namespace, server: object | None) -> int:
    names = list(kit.COMMANDS)
    a_names = mutating(args.a.split(",") if args.a else names)
    b_names = args.b.split(",") if args.b else names
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="lakectl-explore-"))
    root.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    ctx = multiprocessing.get_context("spawn")  # no fork of a process with Arrow's threads
    deadline = time.time() + args.time_budget if args.time_budget is not None else None
    with ctx.Pool(args.jobs, initializer=_init, initargs=(str(root), deadline, server)) as pool:
        counted = pool.map(_points, a_names)
        counts: dict[str, int] = {}
        for a, pts, failure in counted:
            if pts is None:
                say(f"SOLO FAILURE (A alone on the template): {failure.strip()}")
                continue
            counts[a] = len(pts)
        if args.write_points:
            points_file = POINTS_S3_FILE if server is not None else POINTS_FILE
            points_file.write_text(json.dumps(counts, indent=1, sort_keys=True) + "\n")
            say(f"wrote {points_file} ({sum(counts.values())} mutation points of {len(counts)} commands)")
            return 0
        where = f"on S3, {args.jobs} jobs, in {root}" if server is not None else f"{args.jobs} jobs, in {root}"
        if server is not None and not args.a and not args.b:
            matrix = kit.sample(counts, S3_SAMPLE_SIZE, args.seed)
            random.Random(args.seed).shuffle(matrix)
            say(f"sample: {len(matrix)} scenarios of {len(counts)} commands A with {sum(counts.values())} mutation "
                f"points x {len(b_names)} commands B ({where})")
        else:
            first = (lambda c: max(1, c - args.last_points + 1)) if args.last_points else (lambda c: 1)
            matrix = [(a, n, b) for a, c in counts.items() for n in range(first(c), c + 1) for b in b_names]
            random.Random(args.seed).shuffle(matrix)
            say(f"matrix: {len(counts)} commands A with {sum(counts.values())} mutation points x {len(b_names)} "
                f"commands B = {len(matrix)} scenarios ({where})")
        say("points: " + ", ".join(f"{a} {c}" for a, c in counts.items()))
        ran = failed = 0
        groups: dict[str, list[str]] = collections.defaultdict(list)
        for result in pool.imap_unordered(_scenario, matrix):
            if result is None:
                continue
            sid, ok, report, seconds, invariants = result
            ran += 1
            if not ok:
                failed += 1
                say(f"--- VIOLATION {report}")
                groups[cause(report)].append(sid)
            if ran % 50 == 0:
                say(f"... {ran}/{len(matrix)} scenarios, {failed} violating, {time.monotonic() - began:.0f}s")
    took = time.monotonic() - began
    say(f"\nran {ran} of {len(matrix)} scenarios in {took:.0f}s ({took / max(ran, 1):.1f}s each, {args.jobs} jobs); "
        f"{failed} violating")
    for group, sids in sorted(groups.items(), key=lambda g: -len(g[1])):
        say(f"\n{len(sids)} x {group}\n   " + " ".join(sorted(sids)[:40]) + (" ..." if len(sids) > 40 else ""))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
