"""Tags: ``tag/tag-<name>`` files, each a snapshot JSON kept verbatim (plus optional TTL fields).

A tag file is the snapshot's JSON plus ``tagCreateTime`` (Java ``LocalDateTime`` as Jackson
writes it: ``[y, mo, d, h, mi, s, nanos]``, local time) and, with a TTL, ``tagTimeRetained``
(Java ``Duration`` as seconds, e.g. ``86400.0``) (spec §9.1). Tags are created with the same
create-if-absent primitive as snapshots, so of two creators of one name exactly one wins.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, replace
from typing import Any, Callable

from core.errors import CommitConflictError, CorruptMetadataError, NotFoundError, TagExistsError, UsageError
from core.fileio import FileIO, check_name_length, join
from core.snapshot import Snapshot

TAG_PREFIX = "tag-"
TAG_CREATE_TIME = "tagCreateTime"
TAG_TIME_RETAINED = "tagTimeRetained"


@dataclass(frozen=True, slots=True)
class Tag:
    name: str
    snapshot: Snapshot  # without the tag fields: what snapshot-N held
    create_time: dt.datetime | None = None  # local time, naive (as Java's LocalDateTime)
    time_retained: dt.timedelta | None = None

    def to_json(self) -> str:
        obj: dict[str, Any] = self.snapshot.to_dict()
        if self.create_time is not None:
            t = self.create_time
            obj[TAG_CREATE_TIME] = [t.year, t.month, t.day, t.hour, t.minute, t.second, t.microsecond * 1000]
        if self.time_retained is not None:
            obj[TAG_TIME_RETAINED] = float(self.time_retained.total_seconds())
        return json.dumps(obj, indent=2)

    @classmethod
    def from_json(cls, name: str, text: str, path: str) -> "Tag":
        snapshot = Snapshot.from_json(text, path)
        extra = dict(snapshot.extra)
        raw_time = extra.pop(TAG_CREATE_TIME, None)
        raw_ttl = extra.pop(TAG_TIME_RETAINED, None)
        try:
            create_time = _local_date_time(raw_time)
            ttl = None if raw_ttl is None else dt.timedelta(seconds=float(raw_ttl))
        except (TypeError, ValueError) as e:
            raise CorruptMetadataError(f"cannot decode the tag fields of {path}: {e}") from e
        return cls(name, replace(snapshot, extra=extra), create_time, ttl)


def _local_date_time(raw: Any) -> dt.datetime | None:
    """Jackson writes LocalDateTime as an array (trailing zero fields may be dropped) or as ISO text."""
    if raw is None:
        return None
    if isinstance(raw, str):
        return dt.datetime.fromisoformat(raw)
    parts = [int(x) for x in raw] + [0] * (7 - len(raw))
    return dt.datetime(*parts[:6], microsecond=parts[6] // 1000)


def validate_tag_name(name: str, *, allow_number: bool = False) -> None:
    """Paimon's rules: not blank, not a pure number (it would read as a snapshot id), and a
    plain file name (no path separators). ``allow_number``: for naming a tag that may exist
    already, such as an automatic daily tag without dashes (``20240501``)."""
    if not name or not name.strip():
        raise UsageError("tag name must not be empty")
    if name.isdigit() and not allow_number:
        raise UsageError(f"tag name {name!r} must not be a number (it would read as a snapshot id)")
    if "/" in name or "\\" in name or name in (".", "..") or name != name.strip():
        raise UsageError(f"tag name {name!r} must be a plain name: no '/', no '\\\\', no surrounding spaces")


class TagManager:
    def __init__(self, file_io: FileIO, table_path: str) -> None:
        self.file_io = file_io
        self.dir = join(table_path, "tag")

    def path(self, name: str) -> str:
        return join(self.dir, TAG_PREFIX + name)

    def names(self) -> list[str]:
        return sorted(n[len(TAG_PREFIX):] for n in self.file_io.list_names(self.dir)
                      if n.startswith(TAG_PREFIX) and not n.startswith("."))

    def exists(self, name: str) -> bool:
        return self.file_io.exists(self.path(name))

    def tag(self, name: str) -> Tag:
        path = self.path(name)
        if not self.file_io.exists(path):
            raise NotFoundError(f"tag {name} does not exist")
        return Tag.from_json(name, self.file_io.read_text(path), path)

    def snapshot(self, name: str) -> Snapshot:
        return self.tag(name).snapshot

    def tags(self) -> list[Tag]:
        """Every tag, by name; a tag deleted while listing is skipped."""
        out = []
        for name in self.names():
            try:
                out.append(self.tag(name))
            except NotFoundError:
                continue
        return out

    def create(self, name: str, snapshot: Snapshot, *, time_retained: dt.timedelta | None = None,
               create_time: dt.datetime | None = None, check_name: bool = True) -> Tag:
        """Write ``tag-<name>``; TagExistsError if the name is taken (also by a racing creator).
        ``check_name=False`` for names Paimon itself makes (an automatic daily tag without
        dashes, ``20240501``, is a number)."""
        if check_name:
            validate_tag_name(name)
        check_name_length("tag", name)  # new names only: a longer tag Java made stays readable
        tag = Tag(name, snapshot, create_time or dt.datetime.now(), time_retained)
        if not self.file_io.try_create(self.path(name), tag.to_json().encode("utf-8")):
            raise TagExistsError(f"tag {name} already exists")
        return tag

    def replace(self, name: str, snapshot: Snapshot, *, time_retained: dt.timedelta | None = None,
                check_name: bool = True) -> Tag:
        """Point ``tag-<name>`` at ``snapshot`` (creating it if absent), as Paimon's replace_tag:
        a new create time and TTL. One whole-file overwrite, so a reader sees the old tag or
        the new one, never none."""
        if check_name:
            validate_tag_name(name)
        check_name_length("tag", name)
        tag = Tag(name, snapshot, dt.datetime.now(), time_retained)
        self.file_io.overwrite_hint(self.path(name), tag.to_json())
        return tag

    def rename(self, old: str, new: str, check: Callable[[Tag], None] | None = None) -> Tag:
        """Rename ``old`` to ``new``, keeping its snapshot, create time and TTL. ``new`` is
        written (create-if-absent) before ``old`` is deleted: a crash in between leaves both
        names, never neither, and the same rename run again completes it. NotFoundError if ``old``
        is absent, TagExistsError if ``new`` is another tag."""
        validate_tag_name(new)
        check_name_length("tag", new)
        old_path = self.path(old)
        if not self.file_io.exists(old_path):
            raise NotFoundError(f"tag {old} does not exist")
        # The file is copied byte for byte: fields lakectl does not model (a newer Paimon's) stay.
        text = self.file_io.read_text(old_path)
        renamed = Tag.from_json(new, text, old_path)
        created = self.file_io.try_create(self.path(new), text.encode("utf-8"))
        if not created and not self._holds(new, text):
            raise TagExistsError(f"tag {new} already exists")
        if check is not None:
            try:
                check(renamed)  # raises when the new name must not stay
            except Exception:
                if created:
                    self.file_io.delete(self.path(new))
                raise
        if not self.file_io.delete_claimed(old_path) and created:
            # Another rename (or a delete) of the same tag took the old name first: ours must
            # not leave a second name for it.
            self.file_io.delete(self.path(new))
            raise CommitConflictError(f"tag {old} was renamed or deleted by another command meanwhile; "
                                      f"tag {new} was not created")
        return renamed

    def _holds(self, name: str, text: str) -> bool:
        """Does ``tag-<name>`` hold exactly this tag? Then an interrupted rename wrote it, and
        running the rename again finishes it (deletes the old name) instead of refusing."""
        try:
            return json.loads(self.file_io.read_text(self.path(name))) == json.loads(text)
        except (NotFoundError, FileNotFoundError, CorruptMetadataError, ValueError):
            return False  # gone meanwhile, or not a tag we could have written

    def delete_if_holds(self, name: str, tag: Tag) -> None:
        """Delete ``tag-<name>`` if it still holds exactly ``tag`` (undoing our own create, never
        a tag someone wrote over it)."""
        if self._holds(name, tag.to_json()):
            self.file_io.delete(self.path(name))

    def delete(self, name: str, *, check_name: bool = True) -> None:
        if check_name:
            validate_tag_name(name, allow_number=True)
        if not self.exists(name):
            raise NotFoundError(f"tag {name} does not exist")
        if not self.file_io.delete_claimed(self.path(name)):  # another delete or rename took it first
            raise NotFoundError(f"tag {name} does not exist (deleted or renamed by another command meanwhile)")
