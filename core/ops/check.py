"""check: verify a table end to end without changing anything.

Looks at every schema file, every snapshot and tag (its JSON, its schema, its manifest lists
and manifests) and every file they reference (data files of each snapshot's live set, changelog
files, with their recorded sizes), each snapshot's index manifest and the index files it lists
(sizes; deletion-vector files decoded: version, lengths, checksums, bitmaps, and each vector
naming a live data file and no position past its rows), plus the LATEST/EARLIEST hints. Problems are collected, not
raised, so one run reports all of them; each names the file it is about and the branch whose
snapshot, tag, schema or hint led to it (a file shared by branches is checked, and reported,
once: under the first branch that reads it, main first).

Each schema is checked for its own consistency too (``schema_problems``): key, partition and
bucket-key columns that exist, field ids that are unique and below ``highestFieldId``, options
whose values parse. A hand-edited schema can break every write while every file is in place.

``check(deep=True)`` (``lakectl check --deep``) also reads what the files hold
(``core.ops.check_deep``): every data and changelog file any snapshot or tag lists is decoded
once, and HASH index files are decoded and matched against the latest snapshot's keys. That
costs a full read of every file the history keeps, where the plain check reads metadata and
asks each file's size.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from core.branch import (MAIN_BRANCH, branch_names, branch_path, fast_forward_marker, fast_forward_marker_path,
                         fast_forward_rerun, leftover_branches)
from core.changelog_manager import ChangelogManager
from core.errors import CorruptMetadataError, LakectlError, UsageError
from core.deletion_vectors import read_index_file
from core.fileio import join
from core.index_manifest import DELETION_VECTORS, HASH_INDEX, IndexFileMeta, index_dir, live_index_entries
from core.manifest import ADD, DataFileMeta, ManifestEntry, merge_entries
from core.options import CoreOptions
from core.schema import TableSchema
from core.snapshot import Snapshot
from core.table_handle import TableHandle
from core.types import DataField


@dataclass(frozen=True, slots=True)
class Problem:
    kind: str  # schema, snapshot, tag, changelog, manifest-list, manifest, data-file, changelog-file,
    # index-manifest, index-file, hint, branch, fast-forward
    path: str
    detail: str
    branch: str = MAIN_BRANCH  # whose snapshot, tag, schema or hint it was found through


@dataclass(slots=True)
class CheckResult:
    table: str
    schemas: int = 0
    snapshots: int = 0
    tags: int = 0
    manifests: int = 0
    files_checked: int = 0
    branches: int = 0  # branches checked besides main
    changelogs: int = 0  # long-lived changelogs (changelog/changelog-N) checked
    deep: bool = False  # file contents were read too (check --deep)
    files_read: int = 0  # data, changelog and HASH index files whose contents --deep decoded
    problems: list[Problem] = field(default_factory=list)
    # Stale LATEST/EARLIEST hints: every reader falls back to listing and the next commit or
    # expire rewrites them, so they are reported but do not make the table unsound.
    warnings: list[Problem] = field(default_factory=list)

    ok: bool = True


def check(table: TableHandle, *, all_branches: bool = True, deep: bool = False) -> CheckResult:
    """Verify ``table``; never writes. On main (with ``all_branches``) every branch is checked
    too: their snapshots share its files, and a user asking whether the table is sound means
    all of it. A branch's view checks that branch alone. With ``deep``, the contents of the
    data, changelog and HASH index files are decoded as well (see the module docstring)."""
    result = CheckResult(table.name, deep=deep)
    checked_files: dict[str, int] = {}  # path -> size already verified
    manifest_cache: dict[str, list | None] = {}  # manifest name, or "list:" + list name -> contents
    _check_branch(table, result, checked_files, manifest_cache)
    for name in branch_names(table) if table.is_main and all_branches else ():
        try:
            view = table.on_branch(name)
        except LakectlError as e:
            result.problems.append(Problem("branch", branch_path(table.path, name), str(e), name))
            continue
        result.branches += 1
        _check_branch(view, result, checked_files, manifest_cache)
    if table.is_main and all_branches:
        result.problems.extend(interrupted_branch_commands(table))
    result.manifests = sum(1 for k, v in manifest_cache.items()
                           if v is not None and not k.startswith(("list:", "index:")))
    result.files_checked = len(checked_files)
    result.ok = not result.problems
    return result


def _check_branch(table: TableHandle, result: CheckResult, checked_files: dict[str, int],
                  manifest_cache: dict[str, list | None]) -> None:
    """The schemas, snapshots, tags and hints of one branch (main or another); what it finds
    is labelled with the branch."""
    problems, warnings = len(result.problems), len(result.warnings)
    _check_branch_files(table, result, checked_files, manifest_cache)
    if not table.is_main:
        result.problems[problems:] = [replace(p, branch=table.branch) for p in result.problems[problems:]]
        result.warnings[warnings:] = [replace(w, branch=table.branch) for w in result.warnings[warnings:]]


def _check_branch_files(table: TableHandle, result: CheckResult, checked_files: dict[str, int],
                        manifest_cache: dict[str, list | None]) -> None:
    schemas = _check_schemas(table, result)
    latest: Snapshot | None = None
    for sid in table.snapshots.list_ids():
        path = table.snapshots.path(sid)
        try:
            snap = table.snapshots.snapshot(sid)
        except LakectlError as e:
            result.problems.append(Problem("snapshot", path, str(e)))
            continue
        result.snapshots += 1
        if snap.id != sid:
            result.problems.append(Problem("snapshot", path, f"holds id {snap.id}"))
        _check_snapshot(table, snap, path, schemas, result, checked_files, manifest_cache)
        latest = snap
    if result.deep and latest is not None:
        _check_hash_coverage(table, latest, schemas, result, manifest_cache)
    for name in table.tags.names():
        path = table.tags.path(name)
        try:
            tag = table.tags.tag(name)
        except LakectlError as e:
            result.problems.append(Problem("tag", path, str(e)))
            continue
        result.tags += 1
        _check_snapshot(table, tag.snapshot, path, schemas, result, checked_files, manifest_cache)
    changelogs = ChangelogManager(table.file_io, table.branch_path)
    for cid in changelogs.list_ids():
        path = changelogs.path(cid)
        try:
            changelog = changelogs.changelog(cid)
        except LakectlError as e:
            result.problems.append(Problem("changelog", path, str(e)))
            continue
        result.changelogs += 1
        _check_changelog(table, changelog, path, schemas, result, checked_files, manifest_cache)
    _check_hints(table, result)


def _check_changelog(table: TableHandle, changelog: Snapshot, path: str, schemas: dict[int, TableSchema],
                     result: CheckResult, checked: dict[str, int], cache: dict[str, list | None]) -> None:
    """A long-lived changelog: what a streaming read takes from it must be there, the files of
    its changelog manifest list (a table with a changelog producer) or those its delta list
    adds (one without; Java keeps that list and its APPEND files for it)."""
    if changelog.schema_id not in schemas:
        result.problems.append(Problem("changelog", path, f"refers to schema {changelog.schema_id}, which is missing"))
        return
    schema = schemas[changelog.schema_id]
    if not _locatable(schema):
        return
    if changelog.changelog_manifest_list:
        lists, kind = [changelog.changelog_manifest_list], "changelog-file"
    elif schema.core_options.changelog_producer == "none" and changelog.commit_kind != "COMPACT" \
            and changelog.delta_manifest_list:
        lists, kind = [changelog.delta_manifest_list], "data-file"
    else:
        return  # nothing a streaming read takes (its data lists went with the snapshot, as in Java)
    for e in _entries(table, lists, result, cache) or ():
        if e.kind == ADD:
            _check_file(table, schema, e, kind, result, checked, schemas)


def interrupted_branch_commands(table: TableHandle) -> list[Problem]:
    """What killed branch commands left (``core/branch.py``): leftover branch directories, and
    main half-way through a fast-forward. Each names the command that clears it."""
    out = [Problem("branch", branch_path(table.path, name),
                   f"is not a branch but what an interrupted `branch create` or `branch delete` left; "
                   f"`lakectl branch delete {table.name} {name}` or `lakectl check {table.name} --repair` removes it",
                   name)
           for name in leftover_branches(table)]
    marker = fast_forward_marker(table.file_io, table.path)
    if marker is not None:
        out.append(Problem("fast-forward", fast_forward_marker_path(table.path),
                           f"a fast-forward to branch {marker['branch']} was interrupted: main is half-way and "
                           f"refuses changes until `{fast_forward_rerun(table.name, marker['branch'])}` is rerun"))
    return out


def require_whole(table: TableHandle, snap: Snapshot, what: str) -> None:
    """Refuse to build on ``snap`` (the target of a rollback or tag, say) unless its schema,
    manifest lists, manifests and data files are all there: acting on a snapshot a crash
    or a hand broke would make the damage the table's latest state.

    Raises:
        CorruptMetadataError: naming the first missing or unreadable file.
    """
    result = CheckResult(table.name)
    schemas = _check_schemas(table, result, consistency=False)
    _check_snapshot(table, snap, table.snapshots.path(snap.id), schemas, result, {}, {})
    if result.problems:
        first = result.problems[0]
        more = f" (and {len(result.problems) - 1} more problems)" if len(result.problems) > 1 else ""
        raise CorruptMetadataError(f"{what}: snapshot {snap.id} cannot be read: {first.kind} {first.path} "
                                   f"{first.detail}{more}; nothing was changed")


def require_manifest_lists(table: TableHandle, snap: Snapshot, what: str) -> None:
    """The cheap guard of commands that build on the latest snapshot without reading its
    files (alter-schema): its manifest lists must be readable.

    Raises:
        CorruptMetadataError: naming the missing or unreadable list.
    """
    mio = table.manifests()
    for name in (snap.base_manifest_list, snap.delta_manifest_list):
        try:
            mio.read_manifest_list(name)
        except (LakectlError, OSError) as e:
            raise CorruptMetadataError(f"{what}: snapshot {snap.id} cannot be read: {e}; nothing was changed "
                                       "(`lakectl check --repair` removes snapshots that cannot be read)") from e


def _check_schemas(table: TableHandle, result: CheckResult, *, consistency: bool = True) -> dict[int, TableSchema]:
    """Every schema file that parses, by id; the ones that do not are problems. With
    ``consistency``, a schema that parses but contradicts itself is a problem too, and stays
    in the result: the files of its snapshots are still checked (repair must not take such a
    snapshot for unreadable and remove it: the schema, not the snapshot, needs the fix)."""
    out = {}
    for sid in table.schemas.list_ids():
        try:
            out[sid] = table.schemas.schema(sid)
            result.schemas += 1
        except LakectlError as e:
            result.problems.append(Problem("schema", table.schemas.path(sid), str(e)))
            continue
        if consistency:
            result.problems.extend(Problem("schema", table.schemas.path(sid), detail)
                                   for detail in schema_problems(out[sid]))
    return out


def schema_problems(schema: TableSchema) -> list[str]:
    """What makes a parsed schema contradict itself, each a sentence (empty when none): key,
    partition and bucket-key columns that are not among its fields, field ids that repeat or
    exceed ``highestFieldId``, field names that repeat, composite key or partition columns, and
    options whose values do not parse. Java Paimon refuses each of these when a schema is
    made, so only a hand-edited schema file (or another tool) has them; every write, and for
    some every read, of such a table fails."""
    out = []
    names = schema.field_names
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        out.append(f"has two fields named {repeated[0]}")
    by_name = {f.name: f for f in schema.fields}
    for label, keys in (("primary key", schema.primary_keys), ("partition", schema.partition_keys)):
        for k in keys:
            if k not in by_name:
                out.append(f"names {label} column {k}, which is not among its fields ({', '.join(names)})")
            elif by_name[k].type.is_composite:
                out.append(f"names {label} column {k}, whose type {by_name[k].type} is composite")
        if len(set(keys)) != len(keys):
            out.append(f"repeats a {label} column: {', '.join(keys)}")
    ids = [i for f in schema.fields for i in _field_ids(f)]
    seen: set[int] = set()
    for i in ids:
        if i in seen:
            out.append(f"gives field id {i} to two fields")
            break
        seen.add(i)
    if ids and max(ids) > schema.highest_field_id:
        out.append(f"has field id {max(ids)} above its highestFieldId {schema.highest_field_id} "
                   "(a column added next would reuse an id)")
    out.extend(_option_problems(schema.options))
    try:
        bucket_keys = CoreOptions(schema.options).bucket_key
    except UsageError:
        bucket_keys = []  # reported among the options
    for k in bucket_keys:
        if k not in by_name:
            out.append(f"option bucket-key names column {k}, which is not among its fields")
        elif schema.primary_keys and k not in schema.primary_keys:
            out.append(f"option bucket-key names column {k}, which is not part of the primary key")
    return out


def _field_ids(f: DataField) -> list[int]:
    """The id of a field and of every field nested in its type (ROW fields, at any depth)."""
    out = [f.id]
    stack = [f.type]
    while stack:
        t = stack.pop()
        out.extend(i for nested in t.fields for i in _field_ids(nested))
        stack.extend(x for x in (t.element, t.key, t.value) if x is not None)
    return out


def _option_problems(options: dict[str, str]) -> list[str]:
    """The options whose values do not parse as the type lakectl reads them in: every typed
    option of ``CoreOptions`` is asked for once (each raises UsageError naming its option)."""
    opts = CoreOptions(options)
    out: list[str] = []
    for name, attr in vars(CoreOptions).items():
        if not isinstance(attr, property):
            continue
        try:
            getattr(opts, name)
        except UsageError as e:
            if str(e) not in out:  # two properties may read the same option
                out.append(str(e))
    return out


def _locatable(schema: TableSchema) -> bool:
    """Whether a data file's directory can be worked out under ``schema``: its partition
    columns exist (``schema_problems`` reports them when they do not)."""
    names = set(schema.field_names)
    return all(k in names for k in schema.partition_keys)


def _check_snapshot(table: TableHandle, snap: Snapshot, path: str, schemas: dict[int, TableSchema], result: CheckResult,
                    checked: dict[str, int], cache: dict[str, list | None]) -> None:
    if snap.schema_id not in schemas:
        result.problems.append(Problem("snapshot", path, f"refers to schema {snap.schema_id}, which is missing"))
        return
    schema = schemas[snap.schema_id]
    if not _locatable(schema):
        return  # its files cannot be found: the schema's problem is reported, the snapshot may be fine
    data = _entries(table, [snap.base_manifest_list, snap.delta_manifest_list], result, cache)
    if data is not None:
        for e in merge_entries(data):
            _check_file(table, schema, e, "data-file", result, checked, schemas)
    if snap.changelog_manifest_list:
        changelog = _entries(table, [snap.changelog_manifest_list], result, cache)
        for e in changelog or ():
            if e.kind == ADD:
                _check_file(table, schema, e, "changelog-file", result, checked, schemas)
    if snap.index_manifest:
        live = None if data is None else {(e.partition, e.bucket, e.file.file_name): e.file.row_count
                                           for e in merge_entries(data)}
        _check_index(table, snap.index_manifest, live, result, checked, cache)


def _check_index(table: TableHandle, name: str, live: dict[tuple, int] | None, result: CheckResult,
                 checked: dict[str, int], cache: dict[str, list | None]) -> None:
    """An index manifest and its index files; deletion vectors must decode and fit live files."""
    manifest_path = join(table.path, "manifest", name)
    key = f"index:{name}"
    if key not in cache:
        try:
            cache[key] = live_index_entries(table.file_io, table.path, name)
        except (LakectlError, OSError) as e:
            cache[key] = None
            result.problems.append(Problem("index-manifest", manifest_path, str(e)))
    for e in cache[key] or ():
        meta = e.index_file
        path = join(index_dir(table.path), meta.file_name)
        if path not in checked:
            try:
                size = table.file_io.size(path)
            except FileNotFoundError:
                checked[path] = -1
                result.problems.append(Problem("index-file", path, f"is missing (listed in {manifest_path})"))
                continue
            except (OSError, CorruptMetadataError) as err:
                checked[path] = -1
                result.problems.append(Problem("index-file", path, f"cannot be read: {err}"))
                continue
            checked[path] = size
            if size != meta.file_size:
                result.problems.append(Problem("index-file", path,
                                               f"has {size} bytes, the index manifest records {meta.file_size}"))
                continue
            if result.deep and meta.index_type == HASH_INDEX:
                _read_hash_index(table, meta, path, result)
        if checked[path] < 0 or meta.index_type != DELETION_VECTORS:
            continue
        try:
            vectors = read_index_file(table.file_io, table.path, meta)
        except (LakectlError, OSError) as err:
            result.problems.append(Problem("index-file", path, str(err)))
            continue
        if live is None:
            continue
        for data_file, bitmap in vectors.items():
            rows = live.get((e.partition, e.bucket, data_file))
            if rows is None:
                continue  # Java leaves vectors of replaced files until the bucket's next rewrite
            if len(bitmap) and bitmap.max() >= rows:
                result.problems.append(Problem("index-file", path,
                                               f"deletes position {bitmap.max()} of {data_file}, "
                                               f"which has {rows} rows"))


def _entries(table: TableHandle, lists: list[str | None], result: CheckResult,
             cache: dict[str, list | None]) -> list[ManifestEntry] | None:
    """The entries of the manifest lists, or None if a list or one of its manifests is
    unreadable (recorded once, as a problem naming that file)."""
    mio = table.manifests()
    out: list[ManifestEntry] = []
    for list_name in lists:
        if not list_name:
            continue
        key = f"list:{list_name}"
        if key not in cache:
            try:
                cache[key] = [m.file_name for m in mio.read_manifest_list(list_name)]
            except (LakectlError, OSError) as e:
                cache[key] = None
                result.problems.append(Problem("manifest-list", join(mio.dir, list_name), str(e)))
        names = cache[key]
        if names is None:
            return None
        for name in names:
            if name not in cache:
                try:
                    cache[name] = mio.read_manifest(name)
                except (LakectlError, OSError) as e:
                    cache[name] = None
                    result.problems.append(Problem("manifest", join(mio.dir, name), str(e)))
            if cache[name] is None:
                return None
            out.extend(cache[name])
    return out


def _check_file(table: TableHandle, schema: TableSchema, entry: ManifestEntry, kind: str, result: CheckResult,
                checked: dict[str, int], schemas: dict[int, TableSchema]) -> None:
    """One data or changelog file: there, with its recorded size; with ``result.deep``, its
    contents decoded too (in the schema it was written with, ``schemas[_SCHEMA_ID]``)."""
    meta: DataFileMeta = entry.file
    path = meta.external_path or join(schema.bucket_dir(table.path, entry.partition, entry.bucket), meta.file_name)
    if path in checked:
        return
    try:
        size = table.file_io.size(path)
    except FileNotFoundError:
        checked[path] = -1
        result.problems.append(Problem(kind, path, "is missing"))
        return
    except (OSError, CorruptMetadataError) as e:
        checked[path] = -1
        result.problems.append(Problem(kind, path, f"cannot be read: {e}"))
        return
    checked[path] = size
    if size != meta.file_size:
        result.problems.append(Problem(kind, path, f"has {size} bytes, the manifest records {meta.file_size}"))
    elif result.deep:
        from core.ops.check_deep import data_file_problem  # pyarrow: only a deep check loads it

        result.files_read += 1
        problem = data_file_problem(path, meta, schemas.get(meta.schema_id), table.file_io)
        if problem is not None:
            result.problems.append(Problem(kind, path, problem))


def _read_hash_index(table: TableHandle, meta: IndexFileMeta, path: str, result: CheckResult) -> None:
    from core.ops.check_deep import hash_index_problem

    result.files_read += 1
    problem = hash_index_problem(table.file_io, table.path, meta)
    if problem is not None:
        result.problems.append(Problem("index-file", path, problem))


def _check_hash_coverage(table: TableHandle, snap: Snapshot, schemas: dict[int, TableSchema], result: CheckResult,
                         cache: dict[str, list | None]) -> None:
    """The latest snapshot of a dynamic-bucket table: every live key among its bucket's HASH
    index hashes (``check_deep.uncovered_keys``). Only the latest: the next write assigns
    buckets from its index alone, while an older snapshot's index is never read again."""
    from core.dynamic_bucket import cross_partition, is_dynamic
    from core.ops.check_deep import uncovered_keys

    schema = schemas.get(snap.schema_id)
    if schema is None or schema_problems(schema) or not is_dynamic(schema) or cross_partition(schema):
        return
    data = _entries(table, [snap.base_manifest_list, snap.delta_manifest_list], result, cache)
    index = cache.get(f"index:{snap.index_manifest}") if snap.index_manifest else []
    if data is None or index is None:
        return  # reported already
    for path, detail in uncovered_keys(table.path, table.file_io, schema, schemas, merge_entries(data), index,
                                       lambda e: schema.bucket_dir(table.path, e.partition, e.bucket)):
        result.problems.append(Problem("index-file", path, detail))


def _check_hints(table: TableHandle, result: CheckResult) -> None:
    ids = table.snapshots.list_ids()
    hint_dir = table.snapshots.dir
    latest = table.snapshots.latest_hint()
    if latest is not None and ids and latest > ids[-1]:
        result.warnings.append(Problem("hint", join(hint_dir, "LATEST"),
                                       f"points to snapshot {latest}, past the last one ({ids[-1]}); "
                                       "readers fall back to listing"))
    earliest = table.snapshots.earliest_hint()
    if earliest is not None and ids and earliest not in ids:
        result.warnings.append(Problem("hint", join(hint_dir, "EARLIEST"),
                                       f"points to snapshot {earliest}, which does not exist"))
    if ids and ids != list(range(ids[0], ids[-1] + 1)):
        missing = sorted(set(range(ids[0], ids[-1] + 1)) - set(ids))
        result.problems.append(Problem("snapshot", hint_dir, f"snapshot ids have gaps: {missing[:10]} missing"))


__all__ = ["CheckResult", "Problem", "check", "schema_problems"]
