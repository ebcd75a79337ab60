"""The read runners of bench/peers_read.py return what a model of the generated table says.

The benchmark compares lakectl with pypaimon-rust only after checking that they return the same
rows; this checks the lakectl side (and pypaimon-rust's where its virtualenv exists) against
rows computed here from the generated batches: the base, the upserts replacing or adding rows by
key, the deletes removing them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from core.ops.create import create
from core.ops.write import write
from core.table import Table

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "runners"))

from common import BUCKETS, KEY, PARTITION, ROW_KIND, SCHEMA_SQL  # noqa: E402
from datagen import generate  # noqa: E402

N = 4000
RUST_PYTHON = ROOT / ".venv-bench-rust" / "bin" / "python"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    work = tmp_path_factory.mktemp("peers")
    meta = generate(N, work / "data", days=4)
    base, upserts, deletes = (pq.read_table(work / "data" / f"{n}.parquet") for n in ("base", "upserts", "deletes"))
    t = Table.locate("bench.t", warehouse=str(work / "wh"))
    create(t, SCHEMA_SQL, primary_keys=KEY, partition_keys=[PARTITION], options={"bucket": str(BUCKETS)})
    write(t, base)
    write(t, upserts)
    write(t, deletes, row_kind_column=ROW_KIND)
    # the model: the latest row of every live key (dt follows id, so id alone is the key here)
    live = {r["id"]: r["c_int"] for r in base.select(["id", "c_int"]).to_pylist()}
    live.update({r["id"]: r["c_int"] for r in upserts.select(["id", "c_int"]).to_pylist()})
    for k in deletes.column("id").to_pylist():
        del live[k]
    updated = [k for k in upserts.column("id").to_pylist() if k < N]
    return work, meta, live, updated


def expected(live: dict[int, int], ids) -> list[int]:
    found = [k for k in ids if k in live]
    return [len(found), sum(found), sum(live[k] for k in found)]


def run_reader(python: str, runner: str, work: Path, query: str, lo: int, hi: int, keys: list[int]) -> dict:
    cmd = [python, str(ROOT / "bench" / "runners" / runner), "--warehouse", str(work / "wh"), "--table", "bench.t",
           "--query", query, "--lo", str(lo), "--hi", str(hi), "--keys", ",".join(map(str, keys)), "--checksum"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


READERS = [pytest.param(sys.executable, "lakectl_reads.py", id="lakectl"),
           pytest.param(str(RUST_PYTHON), "pypaimon_rust_reads.py", id="pypaimon-rust",
                        marks=pytest.mark.skipif(not RUST_PYTHON.exists(), reason="no .venv-bench-rust (make bench-venvs)"))]


@pytest.mark.parametrize("python,runner", READERS)
def test_readers_return_the_model_rows(setup, python, runner):
    work, meta, live, updated = setup
    lo, hi = meta["range"][0], meta["range"][1] - 1
    # a key never changed, an updated one, an inserted one, a deleted one and one never written
    untouched = next(k for k in range(N) if k in live and k not in updated)
    deleted = next(k for k in range(N) if k not in live)
    keys = [untouched, updated[0], N + 1, deleted, 10 * N]
    results = {q: run_reader(python, runner, work, q, lo, hi, keys) for q in ("range", "lookup", "full")}
    assert results["range"]["checksum"] == expected(live, range(lo, hi + 1))
    assert results["range"]["checksum"][0] == meta["expected"]["read_range"]
    assert results["lookup"]["checksum"] == expected(live, keys)
    assert results["lookup"]["checksum"][0] == 3
    assert results["full"]["checksum"] == expected(live, live)
    assert results["full"]["checksum"][0] == meta["expected"]["read_latest"]
    assert all(r["calls"][0]["cpu"] > 0 for r in results.values())
