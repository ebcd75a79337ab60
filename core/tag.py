"""Tags: ``tag/tag-<name>`` files, each a snapshot JSON kept verbatim (plus optional TTL fields)."""

from __future__ import annotations

from core.errors import NotFoundError
from core.fileio import FileIO, join
from core.snapshot import Snapshot

TAG_PREFIX = "tag-"


class TagManager:
    def __init__(self, file_io: FileIO, table_path: str) -> None:
        self.file_io = file_io
        self.dir = join(table_path, "tag")

    def path(self, name: str) -> str:
        return join(self.dir, TAG_PREFIX + name)

    def names(self) -> list[str]:
        return sorted(n[len(TAG_PREFIX):] for n in self.file_io.list_names(self.dir) if n.startswith(TAG_PREFIX))

    def snapshot(self, name: str) -> Snapshot:
        path = self.path(name)
        if not self.file_io.exists(path):
            raise NotFoundError(f"tag {name} does not exist")
        return Snapshot.from_json(self.file_io.read_text(path), path)
