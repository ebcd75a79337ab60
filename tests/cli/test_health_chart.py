"""health's rows-per-bucket chart stays a screen at any bucket count: the fullest buckets in
their order, and one line summing up the others."""

from __future__ import annotations

from lakectl.commands.health import fullest


def test_few_buckets_are_all_drawn() -> None:
    items = [("p=1 bucket 0", 5), ("p=1 bucket 1", 7)]
    assert fullest(items, shown=3) == (items, None)


def test_many_buckets_keep_the_fullest_in_order_and_sum_the_rest() -> None:
    items = [(f"b{i}", n) for i, n in enumerate([4, 90, 1, 50, 7, 60, 3])]
    shown, caption = fullest(items, shown=3)
    assert shown == [("b1", 90), ("b3", 50), ("b5", 60)]  # the three largest, in bucket order
    assert caption == "7 buckets, the 3 fullest shown; the other 4 hold 15 rows (1 to 7 each)"
