"""Paimon's automatic tags (``tag.automatic-creation``), run after each commit.

Java Paimon 1.0 runs a ``TagAutoManager`` after every commit of a table that is not
``write-only``: first ``TagAutoCreation`` (modes ``process-time`` and ``watermark``), then
``TagTimeExpire`` (every tag whose own ``tagTimeRetained`` has passed since its
``tagCreateTime`` is deleted, whatever the mode). Flink's batch jobs add the ``batch`` mode:
after the job's commit, the latest snapshot is tagged ``batch-write-<yyyy-MM-dd>``.

TagAutoCreation, as 1.0 has it:

* Its state is rebuilt from the tags whose names parse in the period's format ("auto tags"):
  with none, it starts at the earliest snapshot with no "next tag time"; else after the
  snapshot of the auto tag with the highest snapshot id, the next tag time being one period
  after that tag's time.
* Each snapshot from there to the latest, in order, gets a time: its commit time in the
  local zone (process-time), or its watermark in ``sink.watermark-time-zone`` (watermark
  mode; no watermark, no time and no tag).
* A snapshot whose time minus ``tag.creation-delay`` is at or past the next tag time plus
  one period (or any snapshot, when there is no next tag time yet) is tagged with the period
  before the one its time falls in (``tag.automatic-completion``: with the next tag time
  instead, so no period is skipped), unless that name exists; the next tag time becomes
  that tag's time plus one period. So a daily tag ``2024-05-01`` points at the first snapshot
  committed on or after ``2024-05-02`` plus the delay.
* ``tag.num-retained-max`` then deletes the auto tags of the oldest snapshots beyond it.

On a branch Java 1.0 puts the automatic tags into main's tag directory, naming the branch's
snapshots; lakectl creates none there (``auto_tag_after_commit``).

A lakectl process starts fresh for each commit, as a Java batch job does, so the state comes
from the tags every time: a crash after the snapshot commit and before the tag leaves no
trace, and the next commit's run tags the snapshot it missed. Tag files are written with the
create-if-absent primitive (batch mode: one whole-file overwrite).

Deleting a tag here removes its file only, as ``lakectl tag delete`` does (Java also deletes
the data files only that tag held, when its snapshot has expired): ``expire`` and
``remove-orphan-files`` reclaim them.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from dataclasses import dataclass
from typing import Callable

from core.errors import LakectlError, NotFoundError, TagExistsError, UsageError
from core.options import parse_bool
from core.snapshot import Snapshot
from core.table_handle import TableHandle
from core.tag_options import EPOCH, BATCH_TAG_PREFIX, LONG_MIN, AutoTagOptions, auto_tag_options

log = logging.getLogger(__name__)

def tag_name(time: dt.datetime, opts: AutoTagOptions) -> str:
    """The name of the tag of the period starting at ``time`` (Java's ``timeToTag``)."""
    date = f"{time.year}-{time.month:02d}-{time.day:02d}"
    if opts.formatter == "without_dashes" and opts.period != "two-hours":
        date = date.replace("-", "")
    # The year is Java's appendValue(YEAR, 1, 10): no padding.
    return date if opts.period == "daily" else f"{date} {time.hour:02d}"


_DATE = {"with_dashes": r"([0-9]{1,10})-([0-9]{2})-([0-9]{2})",
         "without_dashes": r"([0-9]{1,10})([0-9]{2})([0-9]{2})"}


def tag_time(name: str, opts: AutoTagOptions) -> dt.datetime | None:
    """The period start a tag name stands for, or None if it is not an auto tag of this period
    and format (Java's ``tagToTime``/``isAutoTag``). Java parses leniently: a month 13 or an
    hour 24 rolls over into the next year or day, and so does this."""
    formatter = "with_dashes" if opts.period == "two-hours" else opts.formatter
    if opts.period == "daily":
        # Java's daily handler parses the text before the first space as a date.
        m = re.fullmatch(_DATE[formatter], name.split(" ")[0])
        hour = "0"
    else:
        m = re.fullmatch(_DATE[formatter] + r" ([0-9]{2})", name)
        hour = m.group(4) if m else "0"
    if m is None:
        return None
    year, month, day = (int(m.group(i)) for i in (1, 2, 3))
    try:
        months = year * 12 + month - 1
        start = dt.datetime(months // 12, months % 12 + 1, 1)
        return start + dt.timedelta(days=day - 1, hours=int(hour))
    except (ValueError, OverflowError):
        return None  # outside Python's years 1..9999


def previous_period(time: dt.datetime, opts: AutoTagOptions) -> dt.datetime:
    """The start of the period before the one ``time`` falls in (``normalizeToPreviousTag``:
    Java floors the local time's millis, counted as if it were UTC, to the period)."""
    period = opts.period_length
    floored = EPOCH + ((time - EPOCH) // period) * period
    return floored - period


# ---- the time of a snapshot ------------------------------------------------------------------

def local_time(millis: int) -> dt.datetime:
    """Epoch millis -> naive local time, as Java's LocalDateTime in the system zone."""
    return dt.datetime.fromtimestamp(millis // 1000) + dt.timedelta(milliseconds=millis % 1000)


def snapshot_time(snapshot: Snapshot, opts: AutoTagOptions) -> dt.datetime | None:
    if opts.mode == "process-time":
        return local_time(snapshot.time_millis)
    watermark = snapshot.watermark
    if watermark is None or watermark == LONG_MIN:
        return None  # Java's watermark mode creates no tag for a snapshot without a watermark
    moment = dt.datetime.fromtimestamp(0, dt.timezone.utc) + dt.timedelta(milliseconds=watermark)
    return moment.astimezone(opts.watermark_zone).replace(tzinfo=None)


# ---- the step ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class AutoTagResult:
    created: tuple[tuple[str, int], ...]  # (tag, snapshot id)
    deleted: tuple[str, ...]  # beyond tag.num-retained-max, or past their own tagTimeRetained

    def __bool__(self) -> bool:
        return bool(self.created or self.deleted)


def _auto_tags(table: TableHandle, opts: AutoTagOptions) -> dict[int, list[str]]:
    """snapshot id -> the auto tags (names in the period's format) on it."""
    out: dict[int, list[str]] = {}
    for name in table.tags.names():
        if tag_time(name, opts) is None:
            continue
        try:
            sid = table.tags.snapshot(name).id
        except NotFoundError:
            continue  # deleted meanwhile
        out.setdefault(sid, []).append(name)
    return dict(sorted(out.items()))


def _one_auto_tag(names: list[str]) -> str:
    if len(names) != 1:
        # TagAutoCreation.checkAndGetOneAutoTag: Java stops here too.
        raise UsageError(f"there are more than 1 auto-created tags of the same snapshot: {','.join(sorted(names))}")
    return names[0]


def create_auto_tags(table: TableHandle, opts: AutoTagOptions) -> tuple[list[tuple[str, int]], list[str]]:
    """TagAutoCreation.run for process-time and watermark modes: (created, deleted)."""
    period = opts.period_length
    tags = _auto_tags(table, opts)
    next_tag: dt.datetime | None = None
    if tags:
        last_id = max(tags)
        next_snapshot = last_id + 1
        next_tag = tag_time(_one_auto_tag(tags[last_id]), opts) + period  # type: ignore[operator]
    else:
        next_snapshot = table.snapshots.earliest_id() or 1
    created: list[tuple[str, int]] = []
    deleted: list[str] = []
    while True:
        if not table.snapshots.exists(next_snapshot):
            earliest = table.snapshots.earliest_id()
            if earliest is not None and earliest > next_snapshot:
                next_snapshot = earliest  # expired meanwhile: carry on from the earliest
                continue
            break
        snapshot = table.snapshots.snapshot(next_snapshot)
        next_snapshot += 1
        time = snapshot_time(snapshot, opts)
        if time is None or not (next_tag is None or time - opts.delay >= next_tag + period):
            continue
        this_tag = next_tag if opts.automatic_completion and next_tag is not None else previous_period(time, opts)
        name = tag_name(this_tag, opts)
        if not table.tags.exists(name):
            try:
                table.tags.create(name, snapshot, time_retained=opts.default_time_retained, check_name=False)
                created.append((name, snapshot.id))
            except TagExistsError:
                pass  # a concurrent writer made it: Java's check-then-create would skip it too
        next_tag = this_tag + period
        if opts.num_retained_max is not None:
            deleted += _retain_auto_tags(table, opts, opts.num_retained_max)
    return created, deleted


def _retain_auto_tags(table: TableHandle, opts: AutoTagOptions, keep: int) -> list[str]:
    """Delete the auto tags of the oldest snapshots until ``keep`` remain (manual tags stay)."""
    tags = _auto_tags(table, opts)
    out = []
    for sid in list(tags)[:max(len(tags) - keep, 0)]:
        name = _one_auto_tag(tags[sid])
        _delete_quietly(table, name)
        out.append(name)
    return out


def create_batch_tag(table: TableHandle, opts: AutoTagOptions) -> tuple[list[tuple[str, int]], list[str]]:
    """Flink's BatchWriteGeneratorTagOperator: tag the latest snapshot ``batch-write-<its
    local commit date>`` (replacing a tag of that name), then keep ``tag.num-retained-max``
    tags of all kinds, deleting those of the oldest snapshots first (of one snapshot, the
    oldest files first)."""
    latest = table.snapshots.latest()
    if latest is None:
        return [], []
    day = local_time(latest.time_millis)
    name = f"{BATCH_TAG_PREFIX}{day.year:04d}-{day.month:02d}-{day.day:02d}"
    # One whole-file overwrite where Java deletes and creates: the same tag at the end, and a
    # reader never finds the name missing.
    table.tags.replace(name, latest, time_retained=opts.default_time_retained, check_name=False)
    deleted = []
    if opts.num_retained_max is not None:
        deleted = _retain_all_tags(table, opts.num_retained_max)
    return [(name, latest.id)], deleted


def _retain_all_tags(table: TableHandle, keep: int) -> list[str]:
    mtimes = {s.path.rstrip("/").rsplit("/", 1)[-1][len("tag-"):]: s.mtime or 0
              for s in table.file_io.list_dir(table.tags.dir)}
    by_snapshot: dict[int, list[str]] = {}
    for tag in table.tags.tags():
        by_snapshot.setdefault(tag.snapshot.id, []).append(tag.name)
    count = sum(len(v) for v in by_snapshot.values())
    out: list[str] = []
    for sid in sorted(by_snapshot):
        if count <= keep:
            break
        for name in sorted(by_snapshot[sid], key=lambda n: (mtimes.get(n, 0), n)):
            if count <= keep:
                break
            _delete_quietly(table, name)
            out.append(name)
            count -= 1
    return out


def expire_tags_by_time(table: TableHandle, now: dt.datetime) -> list[str]:
    """TagTimeExpire as a commit runs it: a tag with both a create time and its own
    ``tagTimeRetained`` is deleted once ``now`` (local) is past their sum. (Unlike
    ``lakectl expire-tags``, the table's tag.default-time-retained is not consulted.)"""
    out = []
    for tag in table.tags.tags():
        if tag.create_time is None or tag.time_retained is None:
            continue
        if now > tag.create_time + tag.time_retained:
            _delete_quietly(table, tag.name)
            out.append(tag.name)
    return out


def _delete_quietly(table: TableHandle, name: str) -> None:
    try:
        table.tags.delete(name, check_name=False)
    except NotFoundError:
        pass  # deleted meanwhile


def auto_tag_after_commit(table: TableHandle, *, batch: bool = True,
                          now: Callable[[], dt.datetime] = dt.datetime.now) -> AutoTagResult | None:
    """The tag step after a commit (the caller skips it for ``write-only`` tables, as Java
    does): automatic creation by the table's mode, then expiration by time. ``batch``: the
    commit ended a batch job (not a streaming write), the only kind ``batch`` mode tags after.
    ``now`` is the local clock for expiration by time (tests). None if nothing changed.

    Raises UsageError for tag options Java would refuse; the caller logs it, since the data is
    committed by then."""
    if table.location.server_owns_chain:
        # A REST server owns the tags (createTag/deleteTag); lakectl writes no tag file there
        # and leaves automatic tags to the server's own maintenance.
        log.debug("automatic tags skipped on %s: its REST catalog's server owns its tags", table.name)
        return None
    if not table.is_main:
        # Java 1.0's committer walks the branch's snapshots but creates and expires tags in
        # main's tag/ directory (its TagManager is built without the branch), so main would
        # get tags naming the branch's snapshots. lakectl makes no automatic tags on a branch.
        log.debug("automatic tags skipped on branch %s", table.branch)
        return None
    opts = auto_tag_options(table.schema.options)
    created: list[tuple[str, int]] = []
    deleted: list[str] = []
    if opts.mode in ("process-time", "watermark"):
        created, deleted = create_auto_tags(table, opts)
    elif opts.mode == "batch" and batch:
        created, deleted = create_batch_tag(table, opts)
    deleted += expire_tags_by_time(table, now())
    result = AutoTagResult(tuple(created), tuple(deleted))
    for name, sid in created:
        log.info("created tag %s of snapshot %d (tag.automatic-creation=%s)", name, sid, opts.mode)
    if deleted:
        log.info("deleted tag(s) %s", ", ".join(deleted))
    if result:  # tags are refs in a table's Iceberg metadata (core/iceberg/)
        from core.ops.iceberg_sync import refresh_iceberg

        refresh_iceberg(table)
    return result if result else None


def run_quietly(table: TableHandle, *, batch: bool = True) -> AutoTagResult | None:
    """``auto_tag_after_commit`` for commits outside ``after_commit`` (compact, truncate,
    drop-partition): never raises over the committed data, logs instead."""
    try:
        if parse_bool(table.schema.options.get("write-only", "false"), "write-only"):
            return None
        return auto_tag_after_commit(table, batch=batch)
    except (LakectlError, OSError) as e:
        log.warning("automatic tags after commit failed: %s", e)
        return None


__all__ = ["AutoTagOptions", "AutoTagResult", "auto_tag_after_commit", "auto_tag_options", "previous_period",
           "run_quietly", "snapshot_time", "tag_name", "tag_time"]
