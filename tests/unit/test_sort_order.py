"""The orders of sort compaction (core/kernels/sort_order.py) against independent expectations:
per-column keys sort as Python sorts the values, z-order keys are hand-interleaved bits, and a
Hilbert order visits every cell of a grid one step from the last (the curve's defining property)."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.kernels import sort_order


def _ranks(keys: np.ndarray) -> list[int]:
    return [int(k) for k in keys]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-2**63, 2**63 - 1)), min_size=1, max_size=30))
def test_integer_keys_sort_as_the_values_nulls_first(values: list[int | None]) -> None:
    keys = _ranks(sort_order.order_keys(pa.array(values, pa.int64())))
    for (a, ka), (b, kb) in itertools.combinations(zip(values, keys), 2):
        if a is None or b is None:  # a null is 0: ahead of every value (tied only with INT64_MIN)
            assert (ka if a is None else kb) == 0
        elif a != b:
            assert (ka < kb) == (a < b)
        else:
            assert ka == kb


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False), min_size=1, max_size=30))
def test_double_keys_sort_as_the_values(values: list[float]) -> None:
    keys = _ranks(sort_order.order_keys(pa.array(values, pa.float64())))
    for (a, ka), (b, kb) in itertools.combinations(zip(values, keys), 2):
        if a < b:
            assert ka < kb
        elif a > b:
            assert ka > kb


def test_strings_sort_by_their_first_eight_bytes() -> None:
    values = ["b", "a", "abcdefghZ", "abcdefghA", "", "ab", "é"]
    keys = _ranks(sort_order.order_keys(pa.array(values)))
    by_key = [v for _, v in sorted(zip(keys, values), key=lambda p: p[0])]  # stable: ties keep input order
    assert by_key == ["", "a", "ab", "abcdefghZ", "abcdefghA", "b", "é"]  # UTF-8 bytes: é (0xC3...) last


def test_zorder_interleaves_the_bits_most_significant_first() -> None:
    x = np.array([0b10 << 62, 0b01 << 62], dtype=np.uint64)
    y = np.array([0b01 << 62, 0b11 << 62], dtype=np.uint64)
    words = sort_order.zorder_words([x, y], bits=2)
    # bits: x1 y1 x0 y0 -> row 0: 1 0 0 1, row 1: 0 1 1 1, at the top of the one word
    assert [int(w) >> 60 for w in words[0]] == [0b1001, 0b0111]


@pytest.mark.parametrize("dims,bits", [(2, 4), (3, 3), (4, 2)])
def test_hilbert_order_steps_to_a_neighbour_each_time(dims: int, bits: int, monkeypatch) -> None:
    monkeypatch.setattr(sort_order, "_HILBERT_BITS", bits)
    cells = np.array(list(itertools.product(range(1 << bits), repeat=dims)), dtype=np.uint64)
    keys = [cells[:, d] << np.uint64(64 - bits) for d in range(dims)]
    words = sort_order.hilbert_words(keys)
    path = cells[np.lexsort(list(reversed(words)))].astype(np.int64)
    steps = np.abs(np.diff(path, axis=0)).sum(axis=1)
    assert len({tuple(p) for p in path}) == len(path) and set(steps.tolist()) == {1}


def test_order_is_lexicographic_and_stable() -> None:
    rng = random.Random(7)
    rows = [(rng.randint(0, 3), rng.choice([None, 1.5, -2.0]), i) for i in range(200)]
    table = pa.table({"a": [r[0] for r in rows], "b": [r[1] for r in rows], "i": [r[2] for r in rows]})
    got = table.take(sort_order.sort_indices(table, ["a", "b"], "order")).column("i").to_pylist()
    expected = [r[2] for r in sorted(rows, key=lambda r: (r[0], -math.inf if r[1] is None else r[1]))]
    assert got == expected


@pytest.mark.parametrize("strategy", sort_order.STRATEGIES)
def test_every_strategy_is_a_permutation_that_clusters(strategy: str) -> None:
    rng = np.random.default_rng(3)
    n = 4096
    table = pa.table({"x": rng.integers(0, 1000, n), "y": rng.random(n)})
    order = np.asarray(sort_order.sort_indices(table, ["x", "y"], strategy))
    assert sorted(order.tolist()) == list(range(n))
    # Cut the ordered rows into 16 equal runs: a box of a quarter of each axis should meet few
    # runs, where unordered rows meet all of them.
    x, y = table.column("x").to_numpy()[order], table.column("y").to_numpy()[order]
    hit = {i // (n // 16) for i in np.flatnonzero((x < 250) & (y < 0.25))}
    assert len(hit) <= (8 if strategy == "order" else 6)


@pytest.mark.parametrize("strategy", ["zorder", "hilbert"])
def test_curves_cluster_a_column_whose_values_use_few_of_its_bits(strategy: str) -> None:
    """A BIGINT of 0..1,000 varies in 10 of its 64 bits, a DOUBLE in [0, 1) mostly in its
    mantissa: a slab on either column alone must still meet few of the ordered runs."""
    rng = np.random.default_rng(9)
    n = 8192
    table = pa.table({"x": rng.integers(0, 1000, n), "y": rng.random(n)})
    order = np.asarray(sort_order.sort_indices(table, ["x", "y"], strategy))
    x, y = table.column("x").to_numpy()[order], table.column("y").to_numpy()[order]
    for slab in (x < 60, y < 0.06):  # about 6% of the rows each
        hit = {i // (n // 64) for i in np.flatnonzero(slab)}
        assert len(hit) <= 24, (strategy, len(hit))  # of 64 runs; unordered rows meet all 64


def test_spread_ranks_keep_order_and_ties() -> None:
    keys = np.array([5, 1, 5, 900, 1], dtype=np.uint64)
    spread = sort_order.spread_ranks(keys)
    assert [int(s) >> 32 for s in spread] == [0x7FFFFFFF, 0, 0x7FFFFFFF, 0xFFFFFFFF, 0]
