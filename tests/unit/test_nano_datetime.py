"""NanoDatetime: a partition value of a TIMESTAMP(7..9) column keeps its nanoseconds through
BinaryRow, the partition path, comparisons, hashing and pickling (Spark ships values pickled)."""

from __future__ import annotations

import datetime as dt
import pickle

from core import binary_row, nano_datetime
from core.nano_datetime import NanoDatetime, from_epoch_nanos
from core.partition import render_value
from core.types import parse_type

NS = 1709208000123456789  # 2024-02-29T12:00:00.123456789


def test_values_apart_only_in_nanoseconds_stay_apart():
    a, b, whole = from_epoch_nanos(NS), from_epoch_nanos(NS - 1), from_epoch_nanos(NS - 789)
    assert type(whole) is dt.datetime and whole == dt.datetime(2024, 2, 29, 12, 0, 0, 123456)
    assert a != b and b < a and whole < b and a > whole and whole != a
    assert len({a, b, whole}) == 3 and sorted([a, whole, b]) == [whole, b, a]
    assert (a.value, b.value) == (NS, NS - 1)
    assert a.isoformat() == "2024-02-29T12:00:00.123456789" and str(b) == "2024-02-29 12:00:00.123456788"
    assert pickle.loads(pickle.dumps(a)) == a and pickle.loads(pickle.dumps(a)).nanosecond == 789
    assert a.replace(hour=1).nanosecond == 789


def test_binary_row_round_trip_and_java_path_text():
    t = parse_type("TIMESTAMP(9)")
    for nanos, text in ((NS, "2024-02-29T12:00:00.123456789"), (NS - 789, "2024-02-29T12:00:00.123456"),
                        (NS - 123456789, "2024-02-29T12:00"), (NS - 456789, "2024-02-29T12:00:00.123")):
        value = binary_row.decode(binary_row.encode([from_epoch_nanos(nanos)], [t]), [t])[0]
        assert nano_datetime.epoch_nanos(value, False) == nanos
        assert render_value(value, t) == text  # LocalDateTime.toString: 0, 3, 6 or 9 digits


def test_local_zoned_values_keep_their_instant():
    ltz = from_epoch_nanos(NS, ltz=True)
    assert ltz.tzinfo is dt.timezone.utc and ltz.value == NS and ltz.isoformat().endswith(".123456789+00:00")
    assert isinstance(ltz, NanoDatetime) and ltz.astimezone(dt.timezone(dt.timedelta(hours=2))).value == NS
