"""Key predicates applied before the merge (core/kernels/key_prune.py)."""
import pyarrow as pa

from core.kernels.key_prune import keep_matching_keys, key_condition
from core.predicate import And, Comparison
from core.types import parse_type

BIGINT = parse_type("BIGINT")


def _records() -> pa.Table:
    # Two versions of key 1 (newest: v=5), one of key 2 and of key 3.
    return pa.table({"id": [1, 1, 2, 3], "v": [9, 5, 7, 1], "_SEQUENCE_NUMBER": [0, 1, 2, 3]})


def test_key_only_condition_drops_rejected_keys_all_versions():
    cond = key_condition(Comparison("id", BIGINT, ">=", 2), ["id"])
    kept = keep_matching_keys(_records(), cond)
    assert kept.column("id").to_pylist() == [2, 3]


def test_value_condition_is_never_applied_before_the_merge():
    # v > 6 would keep key 1's OLD record (v=9) and drop its newest (v=5): it must not apply early.
    assert key_condition(Comparison("v", BIGINT, ">", 6), ["id"]) is None
    mixed = And((Comparison("id", BIGINT, ">=", 1), Comparison("v", BIGINT, ">", 6)))
    assert key_condition(mixed, ["id"]) is None
    assert keep_matching_keys(_records(), None).num_rows == 4


def test_key_range_scan_on_multi_run_table_equals_python_model(tmp_path):
    import random

    from core.ops.create import create
    from core.table import Table
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v BIGINT", primary_keys=["id"], options={"bucket": "1"})
    rnd = random.Random(7)
    model: dict[int, int] = {}
    for batch in range(3):  # three sorted runs, overlapping keys
        ids = rnd.sample(range(300), 120)
        vals = [rnd.randrange(10) for _ in ids]
        t.write(pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(vals, pa.int64())}))
        model.update(zip(ids, vals))
    got = {r["id"]: r["v"] for r in t.scan(where="id >= 50 AND id < 120").to_pylist()}
    assert got == {k: v for k, v in model.items() if 50 <= k < 120}
    # A value condition merges first: only keys whose NEWEST value is 3 come back.
    got = sorted(r["id"] for r in t.scan(where="v = 3").to_pylist())
    assert got == sorted(k for k, v in model.items() if v == 3)


def test_key_conditions_filter_as_python_does():
    """The compute-function masks of keep_matching_keys (comparisons, IN lists, their AND) and
    the expression filter it falls back on (OR) keep the rows a Python filter keeps."""
    import random

    from core.predicate import InList, Or

    rnd = random.Random(3)
    ids = sorted(rnd.sample(range(1000), 300))
    names = [f"k{rnd.randrange(20):02d}" for _ in ids]
    table = pa.table({"id": pa.array(ids, pa.int64()), "name": names, "_SEQUENCE_NUMBER": list(range(300))})
    text = parse_type("STRING")
    cases = [
        (And((Comparison("id", BIGINT, ">=", 100), Comparison("id", BIGINT, "<=", 400))), lambda i, n: 100 <= i <= 400),
        (InList("id", BIGINT, tuple(ids[::7]) + (1001,)), lambda i, n: i in set(ids[::7])),
        (And((Comparison("name", text, "=", "k03"), Comparison("id", BIGINT, "<>", ids[0]))),
         lambda i, n: n == "k03" and i != ids[0]),
        (And((InList("name", text, ("k01", "k19")), Comparison("id", BIGINT, "<", 500))),
         lambda i, n: n in ("k01", "k19") and i < 500),
        (Or((Comparison("id", BIGINT, ">", 900), Comparison("name", text, "=", "k00"))),
         lambda i, n: i > 900 or n == "k00"),
    ]
    for condition, keep in cases:
        got = keep_matching_keys(table, condition)
        assert got.column("id").to_pylist() == [i for i, n in zip(ids, names) if keep(i, n)], condition
