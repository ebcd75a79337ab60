"""Consumers: the progress of streaming readers, in ``consumer/consumer-<id>`` (spec §2).

Each branch has its own: ``<table>/branch/branch-NAME/consumer/`` for branch NAME (Paimon
1.0's ``ConsumerManager`` puts them under ``BranchManager.branchPath``), since a position is
a snapshot id of that branch's history. Callers pass the branch's directory
(``Table.branch_path``).

A consumer file holds ``{"nextSnapshot": N}``: the first snapshot whose changes the reader
has not processed yet. Expiration keeps every snapshot from the smallest ``nextSnapshot`` on,
so a reader that is behind never finds a gap. Consumers nobody updated for
``consumer.expiration-time`` are removed by expiration (Paimon's rule), so an abandoned
reader does not pin snapshots forever.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from core.errors import CorruptMetadataError, UsageError
from core.fileio import FileIO, join

PREFIX = "consumer-"


@dataclass(frozen=True, slots=True)
class Consumer:
    consumer_id: str
    next_snapshot: int
    modified_millis: int | None  # the file's modification time, when the store reports one


def check_consumer_id(consumer_id: str) -> str:
    """A consumer id names a file: refuse what would escape the consumer directory."""
    if not consumer_id or "/" in consumer_id or "\\" in consumer_id or consumer_id in (".", ".."):
        raise UsageError(f"consumer id {consumer_id!r} must be a non-empty name without '/' or '\\'")
    return consumer_id


class ConsumerManager:
    def __init__(self, file_io: FileIO, branch_path: str) -> None:
        self.file_io = file_io
        self.dir = join(branch_path, "consumer")

    def path(self, consumer_id: str) -> str:
        return join(self.dir, PREFIX + check_consumer_id(consumer_id))

    def next_snapshot(self, consumer_id: str) -> int | None:
        """The consumer's ``nextSnapshot``, or None if it has no file."""
        path = self.path(consumer_id)
        try:
            return _decode(self.file_io.read_text(path), path)
        except CorruptMetadataError:
            if not self.file_io.exists(path):
                return None  # no such consumer (or it expired while we read it)
            raise

    def record(self, consumer_id: str, next_snapshot: int) -> None:
        """Replace the consumer's position (whole-file replace, as Java does)."""
        self.file_io.overwrite_hint(self.path(consumer_id), json.dumps({"nextSnapshot": next_snapshot}))

    def delete(self, consumer_id: str) -> None:
        self.file_io.delete(self.path(consumer_id))

    def consumers(self) -> list[Consumer]:
        """Every consumer, by id; one removed while we list is skipped."""
        out = []
        for status in self.file_io.list_dir(self.dir):
            name = status.path.rstrip("/").rsplit("/", 1)[-1]
            if status.is_dir or not name.startswith(PREFIX):
                continue
            try:
                value = _decode(self.file_io.read_text(status.path), status.path)
            except CorruptMetadataError:
                if self.file_io.exists(status.path):
                    raise
                continue
            mtime = None if status.mtime is None else int(float(status.mtime) * 1000)
            out.append(Consumer(name[len(PREFIX):], value, mtime))
        return sorted(out, key=lambda c: c.consumer_id)


def stale_consumers(consumers: list[Consumer], expiration_millis: int, now_millis: int | None = None) -> list[Consumer]:
    """Consumers not updated within ``expiration_millis`` (Java compares the file's
    modification time). A store that reports no time never expires a consumer."""
    now = int(time.time() * 1000) if now_millis is None else now_millis
    return [c for c in consumers if c.modified_millis is not None and c.modified_millis < now - expiration_millis]


def _decode(text: str, path: str) -> int:
    try:
        value = json.loads(text)["nextSnapshot"]
    except (ValueError, KeyError, TypeError) as e:
        raise CorruptMetadataError(f"cannot decode consumer file {path}: {e}") from e
    if not isinstance(value, int) or isinstance(value, bool):
        raise CorruptMetadataError(f"consumer file {path}: nextSnapshot {value!r} is not a snapshot id")
    return value


__all__ = ["Consumer", "ConsumerManager", "check_consumer_id", "stale_consumers"]
