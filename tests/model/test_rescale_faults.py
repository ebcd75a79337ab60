"""rescale through the console script under faults, against a hand-kept model: a kill at each
of its mutations leaves the table reading its last snapshot's rows (and, once the bucket
option changed, writes refused naming `lakectl rescale`), and a rerun finishes the rescale;
a write stalled while a rescale runs is refused (exit 4), never committed into the old bucket
layout; a write landing while a rescale is stalled before its publish stays, because the
rescale reads again instead of overwriting it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from expire_race_kit import Lakectl, csv_of, snapshot_ids
from test_stalled_neighbours import stalled

pytestmark = pytest.mark.slow

T = "db.t"


def _table(tmp: Path) -> tuple[Lakectl, dict[int, tuple[str, str]]]:
    """A partitioned primary-key table in 2 buckets: three writes, one updating, one delete."""
    lk = Lakectl(str(tmp / "wh"))
    lk.ok("create", T, "-s", "id BIGINT, v STRING, dt STRING", "--primary-key", "id,dt", "--partition-by", "dt",
          "-o", "bucket=2", "-o", "write-only=true")
    rows: dict[int, tuple[str, str]] = {}
    for n, batch in enumerate([[(i, f"a{i}", f"d{i % 2}") for i in range(12)],
                               [(i, f"b{i}", f"d{i % 2}") for i in range(0, 12, 3)]]):
        lk.ok("write", T, "-i", csv_of(tmp / f"w{n}.csv", batch))
        rows.update({i: (v, d) for i, v, d in batch})
    lk.ok("delete", T, "--where", "id = 4")
    rows.pop(4)
    return lk, rows


def _scan(lk: Lakectl) -> dict[int, tuple[str, str]]:
    return {r["id"]: (r["v"], r["dt"]) for r in lk.json("scan", T)}  # type: ignore[union-attr]


def _bucket_counts(lk: Lakectl) -> set[int]:
    """The bucket numbers of the live files (0..N-1 once rescaled to N)."""
    return {r["bucket"] for r in lk.json("files", T)}  # type: ignore[union-attr]


def test_a_kill_at_each_mutation_leaves_the_table_readable_and_a_rerun_finishes(tmp_path: Path) -> None:
    lk, rows = _table(tmp_path)
    template = tmp_path / "wh"
    killed = refused = 0
    for n in range(1, 60):
        case = tmp_path / f"kill-{n}"
        subprocess.run(["cp", "-a", str(template), str(case)], check=True)
        ck = Lakectl(str(case))
        run = subprocess.run(ck.argv("rescale", T, "--buckets", "3"), env={**ck.env, "LAKECTL_FAULT": f"kill:mutation:{n}"},
                             capture_output=True, text=True, timeout=180)
        if run.returncode == 0:
            break
        assert run.returncode == -9, run.stderr
        killed += 1
        assert _scan(ck) == rows  # whatever was killed, the last snapshot reads as before
        if snapshot_ids(ck) == [1, 2, 3] and ck.json("describe", T)["buckets"] == 3:
            # The option changed, the rewrite did not land: writes are refused, naming the way out.
            w = ck.run("write", T, "-i", csv_of(case / "late.csv", [(50, "late", "d0")]))
            assert w.returncode == 4 and "lakectl rescale db.t --buckets 3" in w.stderr, w.stderr
            refused += 1
        done = ck.json("rescale", T, "--buckets", "3")
        assert done["buckets"] == 3  # type: ignore[index]
        assert snapshot_ids(ck) == [1, 2, 3, 4]
        assert _scan(ck) == rows
        assert _bucket_counts(ck) == {0, 1, 2}
    assert killed >= 5 and refused >= 1


def test_a_write_stalled_while_the_whole_table_is_rescaled_is_refused_not_mixed_in(tmp_path: Path) -> None:
    lk, rows = _table(tmp_path)
    with stalled(lk, tmp_path, "stall:publish:1", "write", T, "-i", csv_of(tmp_path / "late.csv",
                                                                           [(50, "late", "d0")])) as s:
        lk.ok("rescale", T, "--buckets", "3")
        code, out, err = s.resume()
    assert code == 4, err  # planned on the old schema (2 buckets): nothing committed
    assert snapshot_ids(lk) == [1, 2, 3, 4]
    assert _scan(lk) == rows and _bucket_counts(lk) == {0, 1, 2}
    lk.ok("write", T, "-i", csv_of(tmp_path / "again.csv", [(50, "late", "d0")]))  # the rerun lands
    rows[50] = ("late", "d0")
    assert _scan(lk) == rows


def test_a_write_stalled_while_its_partition_is_rescaled_is_refused(tmp_path: Path) -> None:
    lk, rows = _table(tmp_path)
    with stalled(lk, tmp_path, "stall:publish:1", "write", T, "-i", csv_of(tmp_path / "late.csv",
                                                                           [(50, "late", "d0")])) as s:
        lk.ok("rescale", T, "--buckets", "3", "--partition", "dt=d0")
        code, out, err = s.resume()
    assert code == 4 and "lakectl rescale db.t --buckets 2 --partition dt=d0" in err, err
    assert snapshot_ids(lk) == [1, 2, 3, 4]
    assert _scan(lk) == rows


def test_a_write_landing_while_the_rescale_is_stalled_stays(tmp_path: Path) -> None:
    lk, rows = _table(tmp_path)
    late = [(50, "late", "d0"), (1, "late1", "d1"), (51, "late", "d1")]
    with stalled(lk, tmp_path, "stall:publish:1", "rescale", T, "--buckets", "3", "--partition", "dt=d1") as s:
        lk.ok("write", T, "-i", csv_of(tmp_path / "late.csv", late))
        code, out, err = s.resume()
    assert code == 0, err
    rows.update({i: (v, d) for i, v, d in late})
    # The rescale found the write in its partition at its commit and read and wrote again.
    assert json.loads(out)["records_written"] == sum(1 for v, d in rows.values() if d == "d1")
    assert snapshot_ids(lk) == [1, 2, 3, 4, 5]
    assert _scan(lk) == rows
    files = lk.json("files", T)
    assert {r["bucket"] for r in files if r["partition"] == {"dt": "d1"}} <= {0, 1, 2}  # type: ignore[union-attr]
