"""A datetime that keeps the digits past the microsecond.

Python's datetime stops at microseconds; a TIMESTAMP(7..9) value such as
``2024-02-29T12:00:00.123456789`` does not fit it. Where such a value must travel as one
Python value -- a partition value (decoded from its BinaryRow, rendered into the partition
path ``ts=2024-02-29T12%3A00%3A00.123456789`` as Java names it, compared by partition
filters) -- it is a ``NanoDatetime``: the datetime of its microseconds plus ``nanosecond``
(0-999). Values without such digits stay plain datetimes, so everything else is unchanged.

Equality, ordering and hashing include the nanoseconds (a plain datetime counts as 0), so
two partitions that differ only there stay two partitions; ``value`` is the epoch nanos, as
pandas' Timestamp names it (stats bounds read it exactly).
"""

from __future__ import annotations

import datetime as dt
import operator
from typing import Any

_EPOCH = dt.datetime(1970, 1, 1)

_EPOCH = dt.datetime(1970, 1, 1)


class NanoDatetime(dt.datetime):
    nanosecond: int

    def __new__(cls, *args: Any, nanosecond: int = 0, **kwargs: Any) -> "NanoDatetime":
        self = super().__new__(cls, *args, **kwargs)
        if not 0 <= nanosecond < 1000:
            raise ValueError(f"nanosecond {nanosecond} is not within 0..999")
        self.nanosecond = nanosecond
        return self

    @classmethod
    def of(cls, stamp: dt.datetime, nanosecond: int) -> dt.datetime:
        """``stamp`` plus ``nanosecond``; a plain datetime when there are none."""
        if not nanosecond:
            return stamp
        return cls(stamp.year, stamp.month, stamp.day, stamp.hour, stamp.minute, stamp.second,
                   stamp.microsecond, stamp.tzinfo, nanosecond=nanosecond)

    def plain(self) -> dt.datetime:
        """The datetime part alone (datetime's own methods would return this subclass)."""
        return dt.datetime(self.year, self.month, self.day, self.hour, self.minute, self.second, self.microsecond,
                           self.tzinfo, fold=self.fold)

    def _key(self) -> tuple[dt.datetime, int]:
        return self.plain(), self.nanosecond

    @property
    def value(self) -> int:
        """Epoch nanoseconds (wall clock as UTC for a naive value)."""
        return epoch_nanos(self, True)

    def replace(self, *args: Any, **kwargs: Any) -> dt.datetime:  # type: ignore[override]
        return NanoDatetime.of(self.plain().replace(*args, **kwargs), self.nanosecond)

    def astimezone(self, tz: dt.tzinfo | None = None) -> dt.datetime:  # type: ignore[override]
        return NanoDatetime.of(self.plain().astimezone(tz), self.nanosecond)

    def isoformat(self, sep: str = "T", timespec: str = "auto") -> str:
        if timespec != "auto":
            return self.plain().isoformat(sep, timespec)
        text = self.plain().isoformat(sep, "microseconds")
        head, _, zone = text.partition("+") if "+" in text[19:] else (text, "", "")
        return f"{head}{self.nanosecond:03d}" + (f"+{zone}" if zone else "")

    __str__ = lambda self: self.isoformat(" ")  # noqa: E731

    def __repr__(self) -> str:
        return f"NanoDatetime({self.isoformat()!r})"

    def __reduce_ex__(self, protocol: Any) -> Any:  # datetime defines its own: ours must win
        return (NanoDatetime.of, (self.plain(), self.nanosecond))

    # Comparisons include the nanoseconds; a plain datetime has none.
    def _cmp_key(self, other: Any) -> tuple[tuple[dt.datetime, int], tuple[dt.datetime, int]] | None:
        if isinstance(other, NanoDatetime):
            return self._key(), other._key()
        if isinstance(other, dt.datetime):
            return self._key(), (other, 0)
        return None

    def __eq__(self, other: object) -> bool:
        keys = self._cmp_key(other)
        return NotImplemented if keys is None else keys[0] == keys[1]

    def __ne__(self, other: object) -> bool:
        keys = self._cmp_key(other)
        return NotImplemented if keys is None else keys[0] != keys[1]

    def __lt__(self, other: Any) -> bool:
        keys = self._cmp_key(other)
        return NotImplemented if keys is None else keys[0] < keys[1]

    def __le__(self, other: Any) -> bool:
        keys = self._cmp_key(other)
        return NotImplemented if keys is None else keys[0] <= keys[1]

    def __gt__(self, other: Any) -> bool:
        keys = self._cmp_key(other)
        return NotImplemented if keys is None else keys[0] > keys[1]

    def __ge__(self, other: Any) -> bool:
        keys = self._cmp_key(other)
        return NotImplemented if keys is None else keys[0] >= keys[1]

    def __hash__(self) -> int:
        return hash(self._key())


def from_epoch_nanos(nanos: int, ltz: bool = False) -> dt.datetime:
    """The (Nano)datetime of epoch nanoseconds: naive wall clock, or UTC-aware for LTZ."""
    micros, nanosecond = divmod(nanos, 1000)
    stamp = _EPOCH + dt.timedelta(microseconds=micros)
    if ltz:
        stamp = stamp.replace(tzinfo=dt.timezone.utc)
    return NanoDatetime.of(stamp, nanosecond)


def epoch_nanos(value: Any, ltz: bool) -> int:
    """Epoch nanoseconds of a TIMESTAMP value: an int (already epoch nanos) or a datetime.

    TIMESTAMP is wall-clock time, so an aware datetime is refused; TIMESTAMP_LTZ takes
    aware datetimes at their UTC instant and naive ones as UTC.
    """
    if isinstance(value, dt.datetime):
        nanosecond = getattr(value, "nanosecond", 0)  # a NanoDatetime's digits past the microsecond
        if value.tzinfo is not None:
            if not ltz:
                raise ValueError(f"TIMESTAMP takes naive datetimes, got {value!r}")
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        delta = value.replace(tzinfo=None) - _EPOCH
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        return micros * 1_000 + nanosecond
    if isinstance(value, bool):
        raise TypeError(f"not a timestamp: {value!r}")
    return operator.index(value)
