"""The text of option values and flags, parsed as Java Paimon parses it: sizes, durations,
booleans and integers, and the limits of Java's types.

Below ``core.options`` (typed options) and ``core.option_values`` (what each option takes),
which both read values through these; it imports nothing of lakectl's but the errors.
"""

from __future__ import annotations

import datetime as dt
import re

from core.errors import UsageError

_SIZE_UNITS = {"": 1, "b": 1, "bytes": 1, "kb": 1 << 10, "k": 1 << 10, "kibibytes": 1 << 10,
               "mb": 1 << 20, "m": 1 << 20, "mebibytes": 1 << 20, "gb": 1 << 30, "g": 1 << 30,
               "gibibytes": 1 << 30, "tb": 1 << 40, "t": 1 << 40, "tebibytes": 1 << 40}
JAVA_INT_MAX = 2**31 - 1  # Java's Integer.MAX_VALUE: the largest count an int option holds
JAVA_LONG_MAX = 2**63 - 1  # Java's Long.MAX_VALUE: the largest size in bytes Paimon reads


def parse_size(text: str, key: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise UsageError(f"option {key}={text!r} is not a size such as 128mb")
    size = int(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]
    if size > JAVA_LONG_MAX:  # Java's MemorySize refuses it as a numeric overflow
        raise UsageError(f"option {key}={text!r} is larger than {JAVA_LONG_MAX} bytes, the largest size Paimon reads")
    return size


def check_limit(limit: int | None) -> None:
    """The rule of every ``--limit``: none, or 0 or more rows."""
    if limit is not None and limit < 0:
        raise UsageError("--limit must be 0 or more")


_DURATION_UNITS = {
    "ms": 0.001, "milli": 0.001, "millis": 0.001, "millisecond": 0.001, "milliseconds": 0.001,
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "week": 604800, "weeks": 604800,
    # Java's TimeUtils also reads these (a stored table option may use them).
    "µs": 1e-6, "micro": 1e-6, "micros": 1e-6, "microsecond": 1e-6, "microseconds": 1e-6,
    "ns": 1e-9, "nano": 1e-9, "nanos": 1e-9, "nanosecond": 1e-9, "nanoseconds": 1e-9,
}

# The longest duration lakectl takes, for a flag or an option: 100 years. Every duration is a
# retention, an age or an interval counted from now, so anything longer means "never"; and up
# to this, now plus or minus it stays a date (years 1-9999), a sleep stays within its 64-bit
# nanoseconds (292 years) and Java's milliseconds stay within a long. Beyond it Python's
# arithmetic overflows (an "internal error"), which is why it is refused here, once.
MAX_DURATION_DAYS = 36500


def parse_duration(text: str, key: str = "duration") -> dt.timedelta:
    """A Paimon duration (``1 h``, ``7d``, ``30 min``, ``500 ms``; a bare number is milliseconds,
    as Java's TimeUtils reads it) -> timedelta. ``key`` names the option or flag in the error.
    Refuses one longer than ``MAX_DURATION_DAYS``."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Zµ]*)\s*", text)
    unit = m.group(2).lower() if m else ""
    if not m or (unit and unit not in _DURATION_UNITS):
        raise UsageError(f"{key} {text!r} is not a duration such as 1d, 12h, 30min or 10s")
    seconds = float(m.group(1)) * (_DURATION_UNITS[unit] if unit else 0.001)  # inf for a huge number
    if seconds > MAX_DURATION_DAYS * 86400:
        raise UsageError(f"{key} {text!r} is longer than {MAX_DURATION_DAYS}d (100 years), the longest duration "
                         "lakectl takes")
    return dt.timedelta(seconds=seconds)


def parse_bool(text: str, key: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    raise UsageError(f"option {key}={text!r} must be true or false")


def parse_int(text: str, key: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise UsageError(f"option {key}={text!r} must be an integer") from None


def duration_millis(text: str, what: str = "duration") -> int:
    """Paimon duration text (``1h``, ``30 min``, ``7d``, ``500ms``; no unit = ms) -> milliseconds."""
    return round(parse_duration(text, what).total_seconds() * 1000)


def older_than_cutoff(text: str, now_ms: int) -> int:
    """``--older-than``: a duration back from now, or an ISO 8601 time -> epoch millis."""
    try:
        return now_ms - duration_millis(text)
    except UsageError as e:
        if re.fullmatch(r"\s*\d+(?:\.\d+)?\s*[a-zA-Z\u00b5]*\s*", text):
            # a duration lakectl does not take (an unknown unit, over 100 years), not an ISO time
            raise UsageError(f"--older-than: {e}") from None
    try:
        moment = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--older-than {text!r} is neither a duration (1h, 7d, 0s) nor an ISO 8601 time") from None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # naive = local time, as Paimon's
    return int(moment.timestamp() * 1000)
