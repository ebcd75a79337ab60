"""``core.arrow_values.stable_int_order`` against numpy's stable sort, the order it must equal:
with repeated values (the stable fallback), without (quicksort's order kept), and at the edges."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core.arrow_values import stable_int_order


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1), max_size=300),
       st.integers(min_value=1, max_value=1 << 40))
def test_equals_numpys_stable_sort(values: list[int], spread: int) -> None:
    for array in (np.array(values, dtype=np.int64), np.array(values, dtype=np.int64) % spread):
        assert np.array_equal(stable_int_order(array), np.argsort(array, kind="stable"))


def test_repeated_keys_keep_their_input_order() -> None:
    rng = np.random.default_rng(3)
    values = rng.integers(0, 50, 5000)  # every value repeats
    order = stable_int_order(values)
    for v in (0, 17, 49):
        positions = order[values[order] == v]
        assert positions.tolist() == np.flatnonzero(values == v).tolist()


def test_empty_and_single() -> None:
    assert stable_int_order(np.zeros(0, np.int64)).tolist() == []
    assert stable_int_order(np.array([7])).tolist() == [0]
