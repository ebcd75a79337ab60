"""The --partition parser: one partition (write) or several (drop-partition, compact, views)."""

from __future__ import annotations

import pytest

from core.errors import UsageError
from lakectl.config import parse_partition, parse_partitions


def test_one_partition_keeps_columns_in_order() -> None:
    assert list(parse_partition(" dt = 2024-01-01 ,hr=10").items()) == [("dt", "2024-01-01"), ("hr", "10")]


@pytest.mark.parametrize("text", ["dt=2024-01-02,dt=2024-01-03", "dt=1,hr=2,dt=1", "dt=1, dt =1"])
def test_a_column_named_twice_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="names column dt twice"):
        parse_partition(text)
    with pytest.raises(UsageError, match="names column dt twice"):
        parse_partitions([text])


def test_duplicate_within_one_of_several_specs_is_refused() -> None:
    with pytest.raises(UsageError, match="names column hr twice"):
        parse_partitions(["dt=1,hr=1;dt=2,hr=2,hr=3"])


def test_semicolons_list_several_partitions_like_paimon_procedures() -> None:
    assert parse_partitions(["dt=1,hh=2;dt=3,hh=4", "dt=5,hh=6;"]) == [
        {"dt": "1", "hh": "2"}, {"dt": "3", "hh": "4"}, {"dt": "5", "hh": "6"}]


def test_the_single_partition_option_refuses_semicolons() -> None:
    with pytest.raises(UsageError, match="takes one"):
        parse_partition("dt=1;dt=2")


@pytest.mark.parametrize("text", ["", ";", "dt", "=1", "dt=1;hr"])
def test_malformed_specs_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError, match="--partition"):
        parse_partitions([text])
