"""The ``tag.*`` options of automatic tag creation, read as Java's committer reads them
(``AutoTagOptions``); kept apart from ``core.ops.auto_tags``, which creates and retains the
tags, because the option checks of every write refuse bad values before anything is written."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Mapping

from core.errors import UsageError
from core.options import parse_bool, parse_duration, parse_int

MODES = ("none", "process-time", "watermark", "batch")
PERIODS = ("daily", "hourly", "two-hours")
FORMATTERS = ("with_dashes", "without_dashes")
BATCH_TAG_PREFIX = "batch-write-"
LONG_MIN = -9223372036854775808  # Java's "no watermark" marker

_PERIOD_LENGTH = {"daily": dt.timedelta(days=1), "hourly": dt.timedelta(hours=1),
                  "two-hours": dt.timedelta(hours=2)}
EPOCH = dt.datetime(1970, 1, 1)


@dataclass(frozen=True, slots=True)
class AutoTagOptions:
    """The tag.* options of Paimon 1.0's automatic tags, typed, with Java's defaults."""

    mode: str = "none"
    period: str = "daily"
    delay: dt.timedelta = dt.timedelta(0)
    formatter: str = "with_dashes"
    num_retained_max: int | None = None
    default_time_retained: dt.timedelta | None = None
    automatic_completion: bool = False
    watermark_zone: dt.tzinfo = dt.timezone.utc

    @property
    def period_length(self) -> dt.timedelta:
        return _PERIOD_LENGTH[self.period]


def _enum(options: Mapping[str, str], key: str, allowed: tuple[str, ...], default: str) -> str:
    # Java reads enum options case-insensitively.
    value = options.get(key, default).strip().lower()
    if value not in allowed:
        raise UsageError(f"option {key}={options[key]} must be one of {', '.join(allowed)}")
    return value


def auto_tag_options(options: Mapping[str, str]) -> AutoTagOptions:
    """Read the tag.* options; UsageError naming the option whose value Java would refuse
    (including a ``tag.creation-delay`` not shorter than one period, in the modes that use it)."""
    mode = _enum(options, "tag.automatic-creation", MODES, "none")
    period = _enum(options, "tag.creation-period", PERIODS, "daily")
    formatter = _enum(options, "tag.period-formatter", FORMATTERS, "with_dashes")
    delay = parse_duration(options.get("tag.creation-delay", "0 ms"), "option tag.creation-delay")
    raw_max = options.get("tag.num-retained-max")
    raw_ttl = options.get("tag.default-time-retained")
    out = AutoTagOptions(
        mode=mode, period=period, delay=delay, formatter=formatter,
        num_retained_max=parse_int(raw_max, "tag.num-retained-max") if raw_max is not None else None,
        default_time_retained=parse_duration(raw_ttl, "option tag.default-time-retained") if raw_ttl else None,
        automatic_completion=parse_bool(options.get("tag.automatic-completion", "false"), "tag.automatic-completion"),
        # Java reads the zone only for watermark mode's extractor.
        watermark_zone=_zone(options.get("sink.watermark-time-zone", "UTC")) if mode == "watermark"
        else dt.timezone.utc,
    )
    # TagPeriodHandler.validateDelay: Java refuses to build the committer otherwise.
    if mode in ("process-time", "watermark") and not delay < out.period_length:
        raise UsageError(f"option tag.creation-delay={options['tag.creation-delay']} must be shorter than one "
                         f"tag.creation-period ({period})")
    return out


def _zone(text: str) -> dt.tzinfo:
    """A Java ZoneId: a region (``Asia/Shanghai``), ``UTC``/``GMT``/``Z``, or an offset
    (``+08:00``, ``GMT-08:00``, ``UTC+8``)."""
    name = text.strip()
    m = re.fullmatch(r"(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?", name)
    if m:
        sign = -1 if m.group(1) == "-" else 1
        return dt.timezone(sign * dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0)))
    if name in ("UTC", "GMT", "UT", "Z"):
        return dt.timezone.utc
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(f"option sink.watermark-time-zone={text} is not a time zone such as UTC, "
                         "Asia/Shanghai or +08:00") from None


# ---- TagPeriodHandler: tag names <-> period start times (naive local times) ----------------
