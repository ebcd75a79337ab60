"""mark-partition-done: tell downstream schedulers that partitions are complete, as Paimon's
``mark_partition_done`` procedure does with the table's ``partition.mark-done-action``.

Of Paimon's actions, ``success-file`` (the default) needs no metastore: a ``_SUCCESS`` file in
the partition's directory holding ``{"creationTime": ms, "modificationTime": ms}`` (Paimon's
``SuccessFile``); marking a partition again keeps its creation time and moves its modification
time, as Java's action does. ``done-partition`` and ``mark-event`` add a partition or an event
to a metastore, which a filesystem warehouse has not: Java refuses them there too ("Cannot
mark done partition for table without metastore"), and so does lakectl, before it marks
anything. ``http-report`` and ``custom`` call out of the table; they are refused alike.

The file is replaced whole (``FileIO.overwrite_hint``: a reader sees the old or the new one).
It is no snapshot's file, so ``remove-orphan-files`` leaves it alone, as Java's orphan clean,
which lists only bucket directories, does. A partition without live files is marked too (an
hour with no data is done as well) and listed under ``missing``, where a typo in a value shows.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Mapping, Sequence

from core.errors import UnsupportedTableError, UsageError
from core.fileio import join
from core.partition import escape
from core.table_handle import TableHandle

log = logging.getLogger(__name__)

SUCCESS_FILE = "_SUCCESS"
ACTIONS_OPTION = "partition.mark-done-action"
_NEED_A_METASTORE = ("done-partition", "mark-event")
_CALL_OUT = ("http-report", "custom")


@dataclass(frozen=True, slots=True)
class PartitionDoneResult:
    table: str
    partitions: tuple[dict[str, str], ...]  # as named, in partition-column order
    missing: tuple[dict[str, str], ...]  # named partitions that hold no live file (marked all the same)
    actions: tuple[str, ...]
    files_written: tuple[str, ...]  # the success files, relative to the table
    dry_run: bool


def mark_partition_done(table: TableHandle, partitions: Sequence[Mapping[str, str]], *,
                        dry_run: bool = False) -> PartitionDoneResult:
    """Run the table's mark-done actions on each partition.

    Raises:
        UsageError: the table is not partitioned, no partition, or a spec that does not name
            exactly the partition columns.
        UnsupportedTableError: an action that needs a metastore or calls out of the table.
    """
    schema = table.schema
    columns = [f.name for f in schema.partition_fields]
    if not columns:
        raise UsageError(f"table {table.name} is not partitioned; there is no partition to mark done")
    if not partitions:
        raise UsageError("name at least one partition to mark done (--partition COLUMN=VALUE[,...])")
    for spec in partitions:
        if sorted(spec) != sorted(columns):
            raise UsageError(f"--partition {_render(spec)} must name every partition column "
                             f"({', '.join(columns)}) and no other")
    actions = _actions(table)
    ordered = tuple({c: spec[c] for c in columns} for spec in partitions)
    relative = tuple(join(_partition_dir(spec), SUCCESS_FILE) for spec in ordered)
    missing = _without_live_files(table, ordered)
    if not dry_run:
        now = int(time.time() * 1000)
        for path in relative:
            _mark(table, join(table.path, path), now)
        log.info("marked %d partition(s) of %s done", len(ordered), table.name)
    return PartitionDoneResult(table.name, ordered, missing, actions, relative, dry_run)


def _actions(table: TableHandle) -> tuple[str, ...]:
    text = table.schema.options.get(ACTIONS_OPTION, "success-file")
    actions = tuple(a.strip() for a in text.split(",") if a.strip())
    for action in actions:
        if action in _NEED_A_METASTORE:
            raise UnsupportedTableError(
                f"{ACTIONS_OPTION} of {table.name} includes {action}, which adds to a metastore; a filesystem "
                "warehouse has none (Java Paimon refuses it there too); use success-file")
        if action in _CALL_OUT:
            raise UnsupportedTableError(
                f"{ACTIONS_OPTION} of {table.name} includes {action}, which lakectl does not run (it calls out of "
                "the table); use success-file")
        if action != "success-file":
            raise UsageError(f"{ACTIONS_OPTION} of {table.name} has an unknown action {action!r} "
                             "(success-file, done-partition, mark-event, http-report, custom)")
    return actions


def _partition_dir(spec: Mapping[str, str]) -> str:
    """The partition's directory as Paimon names it, from the values as given (text)."""
    return "/".join(f"{escape(k)}={escape(v)}" for k, v in spec.items())


def _without_live_files(table: TableHandle, specs: Sequence[dict[str, str]]) -> tuple[dict[str, str], ...]:
    from core.commit import latest_base_entries
    from core.ops.compact_planning import partition_filter

    _, live = latest_base_entries(table.snapshots, table.manifests(), table.schema.core_options.commit_max_retries)
    held = {e.partition for e in live}
    values = [table.schema.partition_values(p) for p in held]
    return tuple(spec for spec in specs if not any(map(partition_filter(table.schema, [spec]), values)))


def _mark(table: TableHandle, path: str, now: int) -> None:
    """Write or renew one success file: a renewed one keeps its creation time."""
    created = now
    text = table.file_io.read_text_if_exists(path)
    if text is not None:
        try:
            created = int(json.loads(text)["creationTime"])
        except (ValueError, KeyError, TypeError):
            log.warning("%s was not a success file lakectl can read; writing a new one", path)
    table.file_io.overwrite_hint(path, json.dumps({"creationTime": created, "modificationTime": now}, indent=2))


def _render(spec: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in spec.items())


__all__ = ["PartitionDoneResult", "SUCCESS_FILE", "mark_partition_done"]
