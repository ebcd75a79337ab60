"""Merging a snapshot's manifests, as Paimon's commit does (its ``ManifestFileMerger``).

Every commit writes one delta manifest. Carried forward unmerged, a table written every few
minutes lists thousands of manifests within weeks, and every read, commit and expire pays
for each. So a commit rewrites the manifests it builds on (the latest snapshot's base and
delta lists) before it writes its base list, by Paimon's rules:

- **Full compaction** when the manifests that must change, those holding DELETE entries or
  smaller than ``manifest.target-file-size``, add up to at least
  ``manifest.full-compaction-threshold-size``: every manifest that must change, or holds a
  file some DELETE entry removes, is rewritten with only its live ADD entries (in manifests
  of the target size); the others are kept as they are. A manifest whose partition range
  holds none of the deleted files' partitions is kept without being read.
- Otherwise **minor compaction**: walk the list in order, gathering manifests until their
  sizes reach the target size; each such group of two or more becomes one manifest, its ADD
  and DELETE entries of the same file folded away. The group left at the end is merged only
  when it holds at least ``manifest.merge-min-count`` manifests.

The live files are the same before and after: the merged manifests are new files, listed
only by the new snapshot's base list, so a commit that loses its race deletes them with the
rest of what it wrote. Merged entries are written in partition order (stable, so a file's own
entries keep theirs), so that each manifest covers a narrow partition range for pruning. Where
lakectl differs from Paimon's code: a file ADDed again after
its DELETE (``rollback --as-latest`` brings back files a compaction replaced) stays live,
where a merge that drops every entry of a deleted file would lose it.

``compact-manifests`` (``core.ops.compact_manifests``) is the same merge forced: every
manifest rewritten into as few as the target size allows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from core import binary_row
from core.manifest import ADD, DELETE, ManifestEntry, ManifestFileMeta, ManifestIO
from core.options import CoreOptions


@dataclass(frozen=True, slots=True)
class MergeRules:
    target_size: int  # manifest.target-file-size
    min_count: int  # manifest.merge-min-count
    full_size: int  # manifest.full-compaction-threshold-size

    @classmethod
    def of(cls, options: CoreOptions) -> "MergeRules":
        return cls(options.manifest_target_file_size, options.manifest_merge_min_count,
                   max(1, options.manifest_full_compaction_size))

    @classmethod
    def forced(cls, options: CoreOptions) -> "MergeRules":
        """compact-manifests: a full compaction whatever the sizes."""
        return cls(options.manifest_target_file_size, 1, 1)


def merge_manifests(mio: ManifestIO, metas: Sequence[ManifestFileMeta], rules: MergeRules, schema_id: int,
                    partition_types: Sequence[Any], written: list[str]) -> list[ManifestFileMeta]:
    """The manifests a new base list holds in place of ``metas`` (the same live files). New
    manifests' names are appended to ``written`` as they are written."""
    full = _full_compaction(mio, metas, rules, schema_id, partition_types, written)
    if full is not None:
        return full
    return _minor_compaction(mio, metas, rules, schema_id, partition_types, written)


def fold(entries: Sequence[ManifestEntry]) -> list[ManifestEntry]:
    """A run of manifest entries with each file's ADD and later DELETE folded away. A DELETE
    whose ADD is not in the run stays (its ADD is in an earlier manifest), written before an
    ADD of the same file that follows it."""
    out: dict[tuple, ManifestEntry] = {}
    deletes_first: list[ManifestEntry] = []
    for e in entries:
        key = e.identifier
        held = out.get(key)
        if e.kind == ADD:
            if held is not None and held.kind == DELETE:
                deletes_first.append(out.pop(key))
            out[key] = e
        elif held is not None and held.kind == ADD:
            del out[key]
        else:
            out[key] = e
    return deletes_first + list(out.values())


def _by_partition(entries: list[ManifestEntry], partition_types: Sequence[Any]) -> list[ManifestEntry]:
    """Entries ordered by partition value (stable: a file's entries keep their order), so that
    each manifest a merge writes covers a narrow range of partitions and a scan filtered on the
    partition skips the others by their statistics."""
    if not partition_types or len(entries) < 2:
        return entries
    keys: dict[bytes, Any] = {}
    for e in entries:
        if e.partition not in keys:
            keys[e.partition] = binary_row.sort_key(binary_row.decode(e.partition, partition_types))
    return sorted(entries, key=lambda e: keys[e.partition])


def _minor_compaction(mio: ManifestIO, metas: Sequence[ManifestFileMeta], rules: MergeRules, schema_id: int,
                      partition_types: Sequence[Any], written: list[str]) -> list[ManifestFileMeta]:
    result: list[ManifestFileMeta] = []
    group: list[ManifestFileMeta] = []
    size = 0
    for meta in metas:
        group.append(meta)
        size += meta.file_size
        if size >= rules.target_size:
            result += _merge_group(mio, group, rules, schema_id, partition_types, written)
            group, size = [], 0
    if len(group) >= rules.min_count:
        result += _merge_group(mio, group, rules, schema_id, partition_types, written)
    else:
        result += group
    return result


def _merge_group(mio: ManifestIO, group: Sequence[ManifestFileMeta], rules: MergeRules, schema_id: int,
                 partition_types: Sequence[Any], written: list[str]) -> list[ManifestFileMeta]:
    if len(group) == 1:
        return list(group)
    entries = _by_partition(fold([e for meta in group for e in mio.read_manifest(meta.file_name)]), partition_types)
    return mio.write_manifests(entries, schema_id, partition_types, rules.target_size, written)


def _full_compaction(mio: ManifestIO, metas: Sequence[ManifestFileMeta], rules: MergeRules, schema_id: int,
                     partition_types: Sequence[Any], written: list[str]) -> list[ManifestFileMeta] | None:
    def must_change(meta: ManifestFileMeta) -> bool:
        return meta.num_deleted_files > 0 or meta.file_size < rules.target_size

    if sum(m.file_size for m in metas if must_change(m)) < rules.full_size:
        return None
    deleted = {e.identifier for m in metas if m.num_deleted_files > 0
               for e in mio.read_manifest(m.file_name) if e.kind == DELETE}
    partitions = [binary_row.decode(p, partition_types) for p in {key[0] for key in deleted}] \
        if partition_types else []
    kept: list[ManifestFileMeta] = []
    rewrite: list[ManifestFileMeta] = []
    for meta in metas:
        if must_change(meta) or (deleted and _may_hold(meta, partitions, partition_types)):
            rewrite.append(meta)
        else:
            kept.append(meta)
    if len(rewrite) <= 1:
        return None
    # Rewrite the manifests that hold a deleted file or must change; a manifest read here
    # that holds neither is kept after all.
    entries: list[ManifestEntry] = []
    for meta in rewrite:
        own = mio.read_manifest(meta.file_name)
        if must_change(meta) or any(e.identifier in deleted for e in own):
            entries += own
        else:
            kept.append(meta)
    live = _by_partition([e for e in fold(entries) if e.kind == ADD], partition_types)
    return kept + mio.write_manifests(live, schema_id, partition_types, rules.target_size, written)


def _may_hold(meta: ManifestFileMeta, partitions: list[tuple], partition_types: Sequence[Any]) -> bool:
    """Whether the manifest's partition statistics allow one of ``partitions`` (decoded):
    without partition columns every manifest may (a DELETE can hit any of them)."""
    if not partition_types:
        return True
    stats = meta.partition_stats
    try:
        mins = binary_row.decode(stats.min_values, partition_types)
        maxs = binary_row.decode(stats.max_values, partition_types)
    except Exception:  # statistics lakectl cannot decode: read the manifest to be sure
        return True
    nulls = stats.null_counts
    for values in partitions:
        if all(_field_may_hold(v, mins[i], maxs[i], nulls[i] if nulls and i < len(nulls) else None)
               for i, v in enumerate(values)):
            return True
    return False


def _field_may_hold(value: Any, low: Any, high: Any, null_count: int | None) -> bool:
    if value is None:
        return null_count is None or null_count > 0
    if low is None or high is None:
        return low is None and high is None and null_count is None
    try:
        return low <= value <= high
    except TypeError:
        return True


__all__ = ["MergeRules", "merge_manifests", "fold"]
