"""What a compaction rewrites, decided from metadata alone: the task of one (partition,
bucket), the files a full compaction picks (``pick_files``) and Paimon's universal picking
(``pick_universal``: size amplification, size ratio, sorted-run count).

Apart from ``core.kernels.compact``, which rewrites the files: a writer plans its compaction
after every commit (is a bucket past num-sorted-run.compaction-trigger?) and most commits find
nothing to do, so planning must not load the merge, read and write kernels.

Universal compaction picks the newest sorted runs of a primary-key bucket and writes them to a
level that the remaining runs leave free. Only when the pick reaches the oldest run (nothing
older below the output) may deletes be dropped; otherwise -U/-D winners are kept so they still
hide older versions of their keys.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from core.deletion_vectors import CarriesDeletionFiles, DeletionFile
from core.index_manifest import IndexFileMeta
from core.kernels.write_task import InBucketDir
from core.manifest import DataFileMeta, sorted_runs
from core.options import parse_int
from core.schema import TableSchema


# lakectl rolls files on the Parquet size of a sample of rows, so a rewritten file lands near
# target-file-size rather than at or above it as Java's (which measures while writing).
# An append file of at least this share of the target counts as full and is left alone;
# without the margin a file that came out a little small would be rewritten every time.
FULL_APPEND_FILE_RATIO = 0.5


@dataclass(frozen=True, slots=True)
class CompactTask(InBucketDir, CarriesDeletionFiles):
    """One (partition, bucket) to compact; small and picklable (it ships to Spark executors).

    ``files`` are the bucket's live files (all of them, or those the planner picked); the
    kernel picks again with ``pick_files`` and rewrites only what still needs it.
    """

    table_path: str
    schema: TableSchema  # the latest schema: files are read in it and written with it
    schemas: dict[int, TableSchema] = field(hash=False)  # schema id -> schema, for every file's _SCHEMA_ID
    partition: bytes
    partition_dir: str  # "dt=2024-01-01" or "" for unpartitioned tables
    bucket: int
    total_buckets: int
    files: tuple[DataFileMeta, ...]
    output_level: int  # output_level(schema): num-levels - 1 (5 by default); 0 for append tables
    # Universal compaction: ``files`` are exactly the picked runs, written to ``output_level``;
    # the kernel rewrites them as given instead of picking again.
    picked: bool = False
    drop_deletes: bool = True  # only when nothing older than the inputs lies below the output
    # Deletion vectors of the files that have one: rows they mark are not rewritten (the
    # commit then drops the vectors of the files it deletes).
    deletion_files: tuple[tuple[str, DeletionFile], ...] = ()
    # Deletion-vector lookup compaction (``lookup_compact_bucket``): ``files`` are all the
    # bucket's live files and ``index_file`` its deletion-vector index file, if any.
    lookup: bool = False
    index_file: IndexFileMeta | None = None
    # changelog-producer=lookup: write the changelog of the level-0 records moved up (not after
    # an overwrite, whose commit carries the changelog of what it replaced)
    changelog: bool = True
    # Sort compaction (``compact --order-by``): (strategy, columns); ``files`` are every live
    # file of the bucket, rewritten in that order (``core.kernels.sort_order``).
    order: tuple[str, tuple[str, ...]] | None = None
    # Data-evolution compaction: ``files`` are one bin of ``data_evolution_bins``, merged by row
    # id into one file that keeps their row ids (``core.kernels.compact``).
    data_evolution: bool = False


def output_level(schema: TableSchema) -> int:
    """Where full compaction writes: the top LSM level for primary-key tables, 0 for append tables."""
    return schema.core_options.num_levels - 1 if schema.has_primary_key else 0


def in_sequence_order(files: Sequence[DataFileMeta]) -> tuple[DataFileMeta, ...]:
    """Files by minimum sequence number; ties keep their given (commit) order."""
    return tuple(sorted(files, key=lambda f: f.min_sequence_number))


def pick_files(schema: TableSchema, files: Sequence[DataFileMeta], level: int, *,
               full: bool = True) -> tuple[DataFileMeta, ...]:
    """The files of one bucket that compaction rewrites; empty when the bucket needs nothing.

    Args:
        schema: the table schema (primary-key or append rules, target-file-size).
        files: the bucket's live files.
        level: the output level (``output_level(schema)``).
        full: False picks a primary-key bucket only when it holds more than one sorted run,
            so a bucket that is a single file or already one run keeps its files; for a
            bucketed append bucket it picks Paimon 1.0's window (``append_window``), and for
            a ``bucket=-1`` one at most compaction.max.file-num small files, the oldest first;
            either is rewritten as given (``CompactTask.picked``). (The planner plans a
            ``bucket=-1`` table with ``unaware_bins`` instead, as Java's coordinator does.)

    A full pick of an append bucket is the files after the leading full ones, when more of
    them are small than full and there are at least three (Paimon 1.0's bucketed append
    compaction; two for ``bucket=-1``).
    """
    ordered = in_sequence_order(files)
    if not ordered:
        return ()
    if schema.has_primary_key:
        settled = all(f.level == level and f.delete_row_count == 0 for f in ordered)
        if settled or (not full and sorted_runs(ordered) < 2):
            return ()
        return ordered
    if not full and schema.num_buckets > 0:
        return append_window(schema, ordered)
    full_size = schema.core_options.file_size_for(False) * FULL_APPEND_FILE_RATIO
    start = 0
    while start < len(ordered) and ordered[start].file_size >= full_size:
        start += 1
    rest = ordered[start:]
    small = sum(1 for f in rest if f.file_size < full_size)
    fewest = FULL_COMPACT_MIN_FILES if schema.num_buckets > 0 else 2
    if len(rest) < fewest or small <= len(rest) - small:
        return ()
    if not full:
        rest = rest[:max_append_files(schema)]
        if len(rest) < 2:
            return ()
    return rest


# Paimon 1.0 leaves a bucketed append bucket of fewer files alone in a full compaction.
FULL_COMPACT_MIN_FILES = 3


def unaware_small_size(schema: TableSchema) -> int:
    """The size under which Paimon 1.0's compaction coordinator of a bucket-unaware append
    table (``bucket=-1``) takes a file: 70% of target-file-size (CoreOptions.compactionFileSize)."""
    return schema.core_options.file_size_for(False) // 10 * 7


def unaware_bins(schema: TableSchema, files: Sequence[DataFileMeta], vectors: Mapping[str, DeletionFile], *,
                 full: bool) -> list[tuple[DataFileMeta, ...]]:
    """The rewrites a compaction of one partition of a bucket-unaware append table makes.

    The candidates are those of Paimon 1.0's UnawareAppendTableCompactionCoordinator: the
    files under ``unaware_small_size`` and the files with a deletion vector (``vectors``: file
    name to vector). Without ``full``, the rewrites are the ones that coordinator plans in one
    run: files with vectors together per index file holding their vectors (which drops the
    vectors), the others packed smallest first into bins, a bin closing once its files reach
    target-file-size together and number compaction.min.file-num, or number
    compaction.max.file-num; files that fill no bin wait for more. With ``full``, every
    candidate goes into one rewrite, in sequence order, so one rolling writer leaves at most
    one file under target-file-size. A rewrite of one file without a vector, which would
    leave it as it is, is never made."""
    small = unaware_small_size(schema)
    candidates = [f for f in in_sequence_order(files) if f.file_name in vectors or f.file_size < small]
    if full:
        bins = [tuple(candidates)] if candidates else []
    else:
        bins = _coordinator_bins(schema, candidates, vectors)
    return [b for b in bins if len(b) >= 2 or b[0].file_name in vectors]


def _coordinator_bins(schema: TableSchema, candidates: Sequence[DataFileMeta],
                      vectors: Mapping[str, DeletionFile]) -> list[tuple[DataFileMeta, ...]]:
    target = schema.core_options.file_size_for(False)
    fewest, most = schema.core_options.compaction_min_file_num, max_append_files(schema)
    by_index: dict[str, list[DataFileMeta]] = {}
    plain: list[DataFileMeta] = []
    for f in candidates:
        vector = vectors.get(f.file_name)
        if vector is None:
            plain.append(f)
        else:
            by_index.setdefault(vector.path, []).append(f)
    bins = [tuple(group) for group in by_index.values()]
    current: list[DataFileMeta] = []
    total = 0
    for f in sorted(plain, key=lambda f: f.file_size):  # stable: equal sizes stay in sequence order
        current.append(f)
        total += f.file_size
        if (total >= target and len(current) >= fewest) or len(current) >= most:
            bins.append(tuple(current))
            current, total = [], 0
    return bins


def append_window(schema: TableSchema, ordered: Sequence[DataFileMeta]) -> tuple[DataFileMeta, ...]:
    """What a non-full compaction of a bucketed append bucket rewrites, as Paimon 1.0's append
    compact manager picks it: a window slides over the files in sequence order and is taken
    once it holds compaction.min.file-num files that add up to target-file-size, or
    compaction.max.file-num files; reaching target-file-size with fewer drops its oldest file.
    No such window: nothing (the small files wait for more)."""
    target = schema.core_options.file_size_for(False)
    fewest, most = schema.core_options.compaction_min_file_num, max_append_files(schema)
    window: deque[DataFileMeta] = deque()
    total = 0
    for f in ordered:
        window.append(f)
        total += f.file_size
        if (total >= target and len(window) >= fewest) or len(window) >= most:
            # One file alone (compaction.max.file-num=1) would be rewritten unchanged.
            return tuple(window) if len(window) >= 2 else ()
        if total >= target:
            total -= window.popleft().file_size
    return ()


def max_append_files(schema: TableSchema) -> int:
    """compaction.max.file-num for the table: the most files a non-full compaction of one
    append bucket rewrites (Paimon 1.0's default: 5 bucketed, 50 with bucket=-1)."""
    return schema.core_options.compaction_max_file_num(schema.num_buckets == -1)


# ---- universal compaction ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class UniversalOptions:
    """Paimon's UniversalCompaction settings, with its defaults."""

    max_size_amplification_percent: int = 200  # compaction.max-size-amplification-percent
    size_ratio: int = 1  # compaction.size-ratio (percent)
    compaction_trigger: int = 5  # num-sorted-run.compaction-trigger
    num_levels: int = 6  # num-levels (trigger + 1 unless set)
    # Paimon's ForceUpLevel0Compaction: level-0 files always move up. Java does this for
    # first-row tables, whose batch readers skip level 0 altogether.
    force_level0: bool = False

    @classmethod
    def of(cls, schema: TableSchema) -> "UniversalOptions":
        opts = schema.core_options
        amp = parse_int(opts.get("compaction.max-size-amplification-percent", "200") or "200",
                        "compaction.max-size-amplification-percent")
        ratio = parse_int(opts.get("compaction.size-ratio", "1") or "1", "compaction.size-ratio")
        first_row = (opts.get("merge-engine") or "").strip().lower() == "first-row"
        return cls(amp, ratio, opts.num_sorted_run_compaction_trigger, opts.num_levels, first_row)


@dataclass(frozen=True, slots=True)
class SortedRun:
    """One sorted run of a primary-key bucket: a level-0 file, or all files of a level >= 1."""

    level: int
    files: tuple[DataFileMeta, ...]

    @property
    def size(self) -> int:
        return sum(f.file_size for f in self.files)


@dataclass(frozen=True, slots=True)
class CompactUnit:
    """What universal compaction rewrites: whole runs, to one level."""

    files: tuple[DataFileMeta, ...]
    output_level: int
    drop_deletes: bool


def level_sorted_runs(files: Sequence[DataFileMeta]) -> list[SortedRun]:
    """Runs newest first: level-0 files by descending max sequence number, then levels 1, 2, ..."""
    level0 = sorted((f for f in files if f.level == 0),
                    key=lambda f: (-f.max_sequence_number, -f.min_sequence_number, f.file_name))
    runs = [SortedRun(0, (f,)) for f in level0]
    for level in sorted({f.level for f in files if f.level > 0}):
        runs.append(SortedRun(level, tuple(f for f in files if f.level == level)))
    return runs


def pick_universal(files: Sequence[DataFileMeta], options: UniversalOptions) -> CompactUnit | None:
    """Paimon's universal picking for one primary-key bucket; None when it needs nothing.

    In order: size amplification (the runs above the oldest total more than
    max-size-amplification-percent of the oldest: compact everything), size ratio (from
    the newest run, take the next run while it is at most (100 + size-ratio)% of what is
    taken; compact when that is more than one run), both only once the bucket holds
    num-sorted-run.compaction-trigger runs; then file number (more runs than the trigger:
    start with the newest runs - trigger + 1 and extend by size ratio); finally, with
    ``force_level0``, all level-0 runs (extended by size ratio) even if that is one file.
    """
    runs = level_sorted_runs(files)
    max_level = options.num_levels - 1
    trigger = options.compaction_trigger
    if len(runs) >= trigger:
        newer = sum(r.size for r in runs[:-1])
        if newer * 100 > options.max_size_amplification_percent * runs[-1].size:
            return _unit(runs, len(runs), max_level)
        unit = _pick_for_size_ratio(runs, 1, options.size_ratio, max_level)
        if unit is not None:
            return unit
    if len(runs) > trigger:
        return _pick_for_size_ratio(runs, len(runs) - trigger + 1, options.size_ratio, max_level)
    level0 = sum(1 for r in runs if r.level == 0)
    if options.force_level0 and level0:
        return _pick_for_size_ratio(runs, level0, options.size_ratio, max_level, force=True)
    return None


def _pick_for_size_ratio(runs: list[SortedRun], count: int, size_ratio: int, max_level: int,
                         force: bool = False) -> CompactUnit | None:
    taken = sum(r.size for r in runs[:count])
    for run in runs[count:]:
        if taken * (100.0 + size_ratio) / 100.0 < run.size:
            break
        taken += run.size
        count += 1
    return _unit(runs, count, max_level) if count > 1 or force else None


def _unit(runs: list[SortedRun], count: int, max_level: int) -> CompactUnit:
    """The first ``count`` runs, written just below the next run kept (never to level 0)."""
    level = max_level if count == len(runs) else max(0, runs[count].level - 1)
    if level == 0:
        # Output never goes to level 0: take the following level-0 runs and the first run
        # above level 0 too, and write to that run's level.
        for run in runs[count:]:
            count += 1
            if run.level != 0:
                level = run.level
                break
    if count == len(runs):
        level = max_level
    picked = tuple(f for r in runs[:count] for f in r.files)
    # Paimon: deletes go only when the output is the highest non-empty level.
    drop = level >= max(r.level for r in runs)
    return CompactUnit(in_sequence_order(picked), level, drop)


# ---- data-evolution tables ----------------------------------------------------------------
# Paimon's split.open-file-cost default: the least a file weighs when files are binned.
_OPEN_FILE_COST = "4 mb"


def data_evolution_bins(schema: TableSchema, files: Sequence[DataFileMeta]) -> list[tuple[DataFileMeta, ...]]:
    """The rewrites Paimon 2.1's data-evolution compaction coordinator plans for one bucket
    (``DataEvolutionCompactCoordinator``'s normal tasks).

    Data files (not ``.blob`` files, which stay as they are) are cut into runs whose row-id
    ranges follow on without a gap, and each run into groups: the files of one row-id range
    (whole rows and the column files of later updates). Groups go into a bin in row-id order,
    each weighing its files' sizes, a file at least source.split.open-file-cost; a group
    heavier than target-file-size is a bin of its own, and a bin closes once it is heavier.
    A bin is rewritten if it holds compaction.min.file-num data files or more, so one
    rewrite's rows always have consecutive row ids.

    Raises:
        CorruptMetadataError: files of one run overlap without covering the same row ids.
    """
    from core.errors import CorruptMetadataError
    from core.option_parsing import parse_size

    options = schema.core_options
    target = options.file_size_for(False)
    open_cost = parse_size(schema.options.get("source.split.open-file-cost", _OPEN_FILE_COST),
                           "source.split.open-file-cost")
    fewest = options.compaction_min_file_num
    bins: list[tuple[DataFileMeta, ...]] = []

    def close(files: list[DataFileMeta]) -> None:
        if files and len(files) >= fewest:
            bins.append(tuple(files))

    for run in _row_id_runs([f for f in files if not f.file_name.endswith(".blob")]):
        current: list[DataFileMeta] = []
        weight = 0
        for group in _same_range_groups(run, CorruptMetadataError):
            group_weight = sum(max(f.file_size, open_cost) for f in group)
            if group_weight > target:
                close(current)
                current, weight = [], 0
                close(group)
                continue
            current += group
            weight += group_weight
            if weight > target:
                close(current)
                current, weight = [], 0
        close(current)
    return bins


def _row_id_runs(files: Sequence[DataFileMeta]) -> list[list[DataFileMeta]]:
    """``files`` in row-id order, cut where a gap in the row ids falls (adjacent ranges join)."""
    runs: list[list[DataFileMeta]] = []
    end = None  # one past the last row id of the current run
    for f in sorted((f for f in files if f.first_row_id is not None), key=lambda f: f.first_row_id):
        if end is None or f.first_row_id > end:
            runs.append([])
            end = f.first_row_id
        runs[-1].append(f)
        end = max(end, f.first_row_id + f.row_count)
    return runs


def _same_range_groups(run: Sequence[DataFileMeta], error: type[Exception]) -> list[list[DataFileMeta]]:
    """A run's files grouped by row-id range; overlapping ranges must be the same range."""
    groups: list[list[DataFileMeta]] = []
    for f in run:
        if groups and f.first_row_id < groups[-1][0].first_row_id + groups[-1][0].row_count:
            head = groups[-1][0]
            if (f.first_row_id, f.row_count) != (head.first_row_id, head.row_count):
                raise error(f"data files {head.file_name} and {f.file_name} overlap in row ids without "
                            "covering the same ones")
            groups[-1].append(f)
        else:
            groups.append([f])
    return groups
