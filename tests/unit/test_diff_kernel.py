"""``core.kernels.diff``: which rows a diff read emits per key, as Paimon 1.1+'s DiffMerger
decides it (hand-computed cases)."""

from __future__ import annotations

import pyarrow as pa

from core.kernels.diff import _diff_rows


def side(rows: list[tuple[str, int, float | None]]) -> pa.Table:
    kinds, ids, values = zip(*rows) if rows else ((), (), ())
    return pa.table({"_row_kind": pa.array(kinds, pa.string()), "id": pa.array(ids, pa.int64()),
                     "f": pa.array(values, pa.float64())})


def test_each_case_of_a_key() -> None:
    before = side([("+I", 1, 1.0), ("+I", 2, 2.0), ("-D", 3, 3.0), ("+I", 4, 4.0), ("+I", 5, 5.0),
                   ("+U", 6, float("nan")), ("+I", 7, 0.0)])
    after = side([("+U", 1, 1.5), ("+U", 4, 4.0), ("-D", 5, 5.0), ("+U", 6, float("nan")), ("+I", 7, -0.0),
                  ("-D", 8, 8.0)])
    changed, removed = _diff_rows(before, after, ["id"])
    # 1 changed value; 4 same value (+I and +U both add); 5 same value but now a retraction;
    # 6 NaN is NaN; 7 -0.0 is not 0.0 (Paimon compares bytes); 8 only after, as it is
    assert [after.column("id")[i].as_py() for i in changed] == [1, 5, 7, 8]
    # 2 only before and an insert: -D; 3 only before but a retraction: nothing
    assert [before.column("id")[i].as_py() for i in removed] == [2]
