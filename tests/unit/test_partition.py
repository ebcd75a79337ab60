import datetime as dt

from core.partition import escape, partition_path
from core.types import DataField, parse_type


def _fields(*types):
    return [DataField(i, name, parse_type(t)) for i, (name, t) in enumerate(types)]


def test_escaping_matches_java_examples():
    # Verified against pypaimon-written directories (spec §1.3).
    assert escape("a/b c") == "a%2Fb c"
    assert escape("x=y%") == "x%3Dy%25"
    assert escape("\x01") == "%01"


def test_null_empty_and_blank_use_default_name():
    f = _fields(("p", "STRING"))
    for value in (None, "", "   "):
        assert partition_path([value], f, "__DEFAULT_PARTITION__") == "p=__DEFAULT_PARTITION__"


def test_dates_render_as_epoch_days_and_multi_level_order():
    f = _fields(("d", "DATE"), ("hr", "INT"), ("b", "BOOLEAN"))
    assert partition_path([dt.date(2024, 1, 2), 7, True], f, "D") == "d=19724/hr=7/b=true"


def test_unpartitioned_is_empty():
    assert partition_path([], [], "D") == ""
