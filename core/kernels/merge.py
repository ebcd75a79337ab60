"""Merge engines: how the records of one primary key fold into one (Paimon's ``merge-engine``).

Every kernel that meets several records of a key calls ``MergeEngine.merge``: the write
kernel on its input (Paimon's write buffer), the read kernel across a bucket's files and the
compaction kernel on the files it rewrites, the same stages at which Paimon folds. Readers and
compactions that keep only the alive records call ``merged_alive``, the same result in one step. Without
retractions folding is associative, so storing partial folds in files changes nothing; with
retractions or remove-record-on-delete the result can depend on how records were grouped
into folds (a commit [-D, +I] folds to one +I that no longer resets older records), in
lakectl as in Paimon.

Input of ``merge``: the table columns plus ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``, sorted
by the trimmed primary key and then by sequence number (``MergeEngine.sorted``); with
``sequence.field`` by the key, those fields and then the sequence number, so "newest" means
the largest sequence-field value whatever the arrival order. Output: one record per key (after
ignored deletes are dropped), sorted by key, in the same columns. Its ``_VALUE_KIND`` tells
whether the key is alive (+I, +U) or deleted (-U, -D), and its sequence number is the last
record's, as Paimon's merge functions return them. A key with a single record keeps it
unchanged, kind included (Paimon's ReducerMergeFunctionWrapper calls the merge function only
for two or more records).

- ``deduplicate``: the newest record.
- ``first-row``: the oldest record.
- ``partial-update``: per column the newest non-null value; with sequence groups
  (``fields.<seq>.sequence-group``) each group's columns follow the records whose group
  sequence is not older, folded record by record (``_partial_update_groups``).
- ``aggregation``: per column ``fields.<name>.aggregate-function`` (default
  ``fields.default-aggregate-function``, else ``last_non_null_value``); the result is +I.

Retractions (-U/-D): ``ignore-delete`` drops them. Otherwise partial-update and first-row
refuse them, aggregation retracts with the functions that can (sum, product, last_value,
last_non_null_value) and refuses others unless ``fields.<name>.ignore-retract``; and
``partial-update.remove-record-on-delete`` / ``aggregation.remove-record-on-delete`` make a
-D restart the key from that record (the result is -D if nothing follows it). Both follow
Paimon's later Java folds (1.1+; Java 1.0 lacks the aggregation option and left NOT NULL
columns of a restarted partial-update row empty, apache/paimon#5077):

- the restarted row is empty except for NOT NULL columns, which take the -D's values (Java's
  initRow); a partial-update fold that starts with a -U starts the same way from it;
- partial-update: a -U changes no value but clears the -D state, so a -U after the last -D
  leaves the key alive (+I with the row the -D started), and a fold of -U rows only is a -D;
- aggregation: a -U still retracts; the -D empties the row but does not reset the aggregate
  functions, so first_value / first_non_null_value that took a value before it take nothing
  after it in the same fold.

Refusals are checked on the input (``check_input``) so bad rows fail a write before any file
exists.

The per-key folds are vectorised: rows of one key form a segment, and each column's result
is chosen with numpy ``reduceat`` over segment starts or Arrow's ordered hash aggregates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa

from core.arrow_values import int_array, numpy_ints, sole_int_key
from core.errors import InvalidDataError
from core.kernels.records import (DELETE, INSERT, SEQUENCE_NUMBER, UPDATE_BEFORE, VALUE_KIND, alive, key_changes,
                                  key_columns_sorted, retract_kinds)
from core.merge_options import FieldAggregate, MergeOptions, merge_options
from core.schema import TableSchema


# The level of the file a record was read from, a column the readers of a merge add where
# ``MergeEngine.newest_upper_only`` needs it; ``merge`` drops it.
LEVEL = "_LAKECTL_LEVEL"


@dataclass(frozen=True, slots=True)
class MergeEngine(MergeOptions):
    """The merge engine of a primary-key table: its options (``MergeOptions``) and the folds.

    ``newest_upper_only``: Java's ``LookupMergeFunction``, which wraps the merge of tables
    whose writers look records up (``CoreOptions.needLookup``: the lookup changelog
    producer, deletion vectors, first-row, force-lookup), for reads and compactions alike:
    of a key's records in files above level 0 only the newest counts, since the compaction
    that wrote it had already folded the older ones into it (they stay below as old
    versions). Merging them all again would add an aggregate twice. Only engines that fold
    several records are affected (a deduplicate merge keeps the newest record anyway)."""

    newest_upper_only: bool = False

    @classmethod
    def of(cls, schema: TableSchema) -> "MergeEngine":
        """The engine of ``schema``; raises UsageError for options lakectl cannot honour."""
        spec = merge_options(schema)
        folding = spec.kind in ("partial-update", "aggregation")
        return cls(spec.kind, spec.keys, spec.ignore_delete, spec.remove_record_on_delete, spec.aggregates,
                   spec.sequence_fields, spec.sequence_ascending, spec.sequence_groups, spec.remove_on_group_delete,
                   spec.not_null, newest_upper_only=folding and schema.core_options.needs_lookup)

    def with_level(self, records: pa.Table, level: int) -> pa.Table:
        """``records`` of one file at ``level``, tagged for ``merge`` where it needs levels."""
        if not self.newest_upper_only:
            return records
        return records.append_column(LEVEL, pa.array(np.full(records.num_rows, level, np.int8)))

    def newest_upper(self, rows: pa.Table) -> pa.Table:
        """Sorted ``rows`` without the records above level 0 that a newer one above level 0
        replaces (``newest_upper_only``), and without the level column."""
        if LEVEL not in rows.column_names:
            return rows
        if not self.newest_upper_only or rows.num_rows <= 1:
            return rows.drop_columns([LEVEL])
        level = numpy_ints(rows.column(LEVEL))
        starts = segment_starts(rows, self.keys)
        index = np.arange(rows.num_rows)
        upper = level > 0
        newest = np.maximum.reduceat(np.where(upper, index, -1), starts)  # per key: its last record above 0
        keep = ~upper | (index == newest[_segment_of_rows(starts, rows.num_rows)])
        kept = rows.filter(pa.array(keep)) if not keep.all() else rows
        return kept.drop_columns([LEVEL])

    def sorted(self, rows: pa.Table) -> pa.Table:
        """``rows`` in merge order: by key, then ``sequence.field`` (if set), then sequence number."""
        return key_columns_sorted(rows, list(self.keys), SEQUENCE_NUMBER, self.sequence_fields,
                                  self.sequence_ascending)

    # ---- input checks ------------------------------------------------------------------
    def check_input(self, kinds: pa.Array | pa.ChunkedArray) -> None:
        """Refuse -U/-D input rows the engine cannot take (InvalidDataError, exit 5)."""
        import pyarrow.compute as pc

        if self.ignore_delete or self.kind == "deduplicate":
            return
        retract = pc.is_in(kinds, retract_kinds())
        if not pc.any(retract).as_py():
            return
        if self.kind == "first-row":
            raise InvalidDataError("the first-row merge engine cannot take -U/-D rows; "
                                   "set option ignore-delete=true to drop them")
        if self.kind == "partial-update":
            if self.remove_record_on_delete or self.sequence_groups:
                return  # sequence groups retract their columns (Java's retractWithSequenceGroup)
            raise InvalidDataError("the partial-update merge engine cannot take -U/-D rows; set option "
                                   "ignore-delete=true or partial-update.remove-record-on-delete=true")
        if self.remove_record_on_delete and not pc.any(pc.equal(kinds, UPDATE_BEFORE)).as_py():
            return
        for agg in self.aggregates:
            if not agg.retracts and not agg.ignore_retract:
                raise InvalidDataError(
                    f"aggregate function {agg.function} of column {agg.name} cannot retract -U/-D rows; "
                    f"set option fields.{agg.name}.ignore-retract=true to ignore them")

    def drop_ignored(self, rows: pa.Table) -> pa.Table:
        """Without the -U/-D rows ``ignore-delete`` drops."""
        import pyarrow.compute as pc

        if not self.ignore_delete or rows.num_rows == 0:
            return rows
        return rows.filter(pc.invert(_is_retract(rows)))

    # ---- merging -----------------------------------------------------------------------
    def merge(self, rows: pa.Table) -> pa.Table:
        """One record per key of ``rows`` (sorted by key, then sequence number)."""
        rows = self.drop_ignored(self.newest_upper(rows))  # as Java: the lookup wrapper sees every record
        if rows.num_rows <= 1:
            return rows
        starts = segment_starts(rows, self.keys)
        if len(starts) == rows.num_rows:
            return rows  # every key once: nothing to fold
        if self.kind == "deduplicate":
            return rows.take(int_array(segment_ends(starts, rows.num_rows)))
        if self.kind == "first-row":
            return rows.take(int_array(starts))
        if self.kind == "partial-update" and self.sequence_groups:
            return _single_records_as_they_are(rows, starts, _partial_update_groups(rows, starts, self))
        if self.kind == "partial-update":
            folded = _partial_update(rows, starts, self.keys, self.not_null)
            return _single_records_as_they_are(rows, starts, folded)
        aggregates = {a.name: a for a in self.aggregates}
        folding, initialized = rows, {}
        if self.remove_record_on_delete:
            kinds = _kinds(rows)
            after = _from_last_delete(kinds, starts)
            initialized = _first_taken_before(~after, kinds, rows, starts, self.aggregates)
            folding = rows.filter(pa.array(after))
        fold_starts = starts if folding is rows else segment_starts(folding, self.keys)
        folded = _aggregate(folding, fold_starts, aggregates, self.remove_record_on_delete, initialized)
        return _single_records_as_they_are(rows, starts, folded)

    def merged_alive(self, rows: pa.Table, columns: Sequence[str] | None = None) -> pa.Table:
        """``alive(self.merge(self.sorted(rows)))`` in ``columns`` (default: all of ``rows``'):
        the records of unsorted ``rows`` that a reader shows, one per key, in key order.

        A deduplicate merge keeps each key's newest record, so where the key is a single
        integer column the records it keeps follow from the key, sequence and kind columns
        alone (``_newest_alive``): one take of the wanted columns instead of a take to sort,
        one to merge and a filter, each of every column."""
        picks = self._newest_alive(rows)
        if picks is None:
            merged = alive(self.merge(self.sorted(rows)))
            return merged if columns is None else merged.select(list(columns))
        return (rows if columns is None else rows.select(list(columns))).take(int_array(picks))

    def _newest_alive(self, rows: pa.Table) -> np.ndarray | None:
        """Indices of the records ``merged_alive`` keeps, in key order, for a deduplicate merge
        on a single integer key without ``sequence.field`` or ``ignore-delete``; else None.

        Sorted by key, then sequence number (numpy's lexsort is stable, as Arrow's sort is, so
        equal sequence numbers keep their input order), the last record of each key is the
        newest; it is shown unless it is a retraction."""
        if self.kind != "deduplicate" or self.sequence_fields or self.ignore_delete:
            return None
        key = sole_int_key(rows, list(self.keys))
        if key is None or rows.column(SEQUENCE_NUMBER).null_count:
            return None
        order = np.lexsort((numpy_ints(rows.column(SEQUENCE_NUMBER)), key))
        ordered = key[order]
        newest = order[np.append(ordered[1:] != ordered[:-1], True)] if len(order) else order
        return newest[~_retracting(numpy_ints(rows.column(VALUE_KIND))[newest])]


# ---- segments ------------------------------------------------------------------------------
def segment_starts(rows: pa.Table, keys: Sequence[str]) -> np.ndarray:
    """Index of the first row of each run of equal keys (rows sorted by key)."""
    if rows.num_rows == 0:
        return np.zeros(0, np.int64)
    if not keys:
        return np.zeros(1, np.int64)
    return np.flatnonzero(np.append(True, key_changes(rows, list(keys)))).astype(np.int64)


def segment_ends(starts: np.ndarray, n: int) -> np.ndarray:
    """Index of the last row of each segment."""
    return np.append(starts[1:] - 1, n - 1).astype(np.int64)


def _is_retract(rows: pa.Table) -> pa.ChunkedArray:
    import pyarrow.compute as pc

    return pc.is_in(rows.column(VALUE_KIND), retract_kinds())


def _kinds(rows: pa.Table) -> np.ndarray:
    return np.asarray(rows.column(VALUE_KIND).to_numpy(), dtype=np.int8)


def _retracting(kinds: np.ndarray) -> np.ndarray:
    """Where the row is a -U or -D (two comparisons: np.isin is several times slower)."""
    return (kinds == UPDATE_BEFORE) | (kinds == DELETE)


def _last_where(mask: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per segment, the index of the last row where ``mask`` holds, or -1."""
    idx = np.where(mask, np.arange(len(mask)), -1)
    return np.maximum.reduceat(idx, starts) if len(starts) else idx[:0]


def _first_where(mask: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per segment, the index of the first row where ``mask`` holds, or -1."""
    n = len(mask)
    idx = np.where(mask, np.arange(n), n)
    first = np.minimum.reduceat(idx, starts) if len(starts) else idx[:0]
    return np.where(first == n, -1, first)


def _take_or_null(column: pa.ChunkedArray, picks: np.ndarray) -> pa.Array:
    """``column[picks]`` with null where the pick is -1."""
    import pyarrow.compute as pc

    indices = pa.array(picks, pa.int64(), mask=picks < 0)
    return pc.take(column, indices)


def _valid(column: pa.ChunkedArray) -> np.ndarray:
    import pyarrow.compute as pc

    return np.asarray(pc.is_valid(column).to_numpy(zero_copy_only=False), dtype=bool)


def _single_records_as_they_are(rows: pa.Table, starts: np.ndarray, folded: pa.Table) -> pa.Table:
    """``folded`` (one record per key) with the keys that have a single record in ``rows`` taken
    from ``rows`` unchanged, kind included: Paimon's ReducerMergeFunctionWrapper calls the merge
    function only for two or more records, so a lone -U/-D stays a retraction and a lone value
    is not normalised (a blank listagg string stays, a -D is not aggregated into a +I)."""
    single = np.diff(np.append(starts, rows.num_rows)) == 1
    if not single.any():
        return folded
    picks = np.where(single, folded.num_rows + starts, np.arange(len(starts)))
    return pa.concat_tables([folded, rows]).take(pa.array(picks, pa.int64()))


def _segment_of_rows(starts: np.ndarray, n: int) -> np.ndarray:
    """The segment index of each of ``n`` rows."""
    return np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))


def _from_last_delete(kinds: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """aggregation.remove-record-on-delete: the rows that count, per key the last -D and what
    follows it (the -D restarts the row; -U rows after it still retract)."""
    n = len(kinds)
    last_delete = _last_where(kinds == DELETE, starts)
    return np.arange(n) >= last_delete[_segment_of_rows(starts, n)]


def _first_taken_before(before: np.ndarray, kinds: np.ndarray, rows: pa.Table, starts: np.ndarray,
                        aggregates: Sequence[FieldAggregate]) -> dict[str, np.ndarray]:
    """Per first_value / first_non_null_value column, the keys whose function took a value in
    the ``before`` rows (those ahead of the key's last -D). A restarting -D empties
    AggregateMergeFunction's row but does not reset its aggregators, so such a function keeps
    its 'initialized' flag and takes nothing after the -D: the column stays at the row the -D
    started (null, or a NOT NULL column's -D value) for the rest of the fold."""
    out: dict[str, np.ndarray] = {}
    if not before.any():
        return out
    inserts = before & ~_retracting(kinds)
    for agg in aggregates:
        if agg.function == "first_value":
            out[agg.name] = _first_where(inserts, starts) >= 0
        elif agg.function == "first_non_null_value":
            out[agg.name] = _first_where(inserts & _valid(rows.column(agg.name)), starts) >= 0
    return out


def _result_kinds(rows: pa.Table, starts: np.ndarray, deleting: tuple[int, ...]) -> pa.Array:
    """+I per key, or -D where the key's last record is of a kind in ``deleting``."""
    kinds = _kinds(rows)
    ends = segment_ends(starts, rows.num_rows)
    out = np.full(len(starts), INSERT, np.int8)
    if deleting:
        out[np.isin(kinds[ends], deleting)] = DELETE
    return pa.array(out, pa.int8())


def _assemble(rows: pa.Table, columns: dict[str, pa.Array], starts: np.ndarray, kinds: pa.Array) -> pa.Table:
    """The merged table: given columns, key columns from each key's first row, the last sequence."""
    import pyarrow.compute as pc

    n = rows.num_rows
    ends = pa.array(segment_ends(starts, n))
    arrays = []
    for name in rows.column_names:
        if name == VALUE_KIND:
            arrays.append(kinds)
        elif name == SEQUENCE_NUMBER:
            arrays.append(pc.take(rows.column(name), ends))
        elif name in columns:
            col = columns[name]
            arrays.append(col if col.type == rows.schema.field(name).type else pc.cast(col, rows.schema.field(name).type))
        else:
            arrays.append(pc.take(rows.column(name), ends))
    return pa.Table.from_arrays(arrays, schema=rows.schema)


def _partial_update(rows: pa.Table, starts: np.ndarray, keys: Sequence[str], not_null: Sequence[str]) -> pa.Table:
    """Per column the newest non-null value of the key's inserts, folded as Paimon's
    PartialUpdateMergeFunction folds them (1.1+, where apache/paimon#5077 fixed 1.0's empty
    rows in NOT NULL columns). -U/-D rows reach this fold only with
    ``partial-update.remove-record-on-delete`` (otherwise they are refused or dropped):

    - a -D empties the row; only its NOT NULL columns are kept (Java's initRow), and the
      inserts after it fill the rest. A fold that starts with a -U starts the same way from it;
    - every record clears the -D flag, so the result is -D only if the last record is a -D or
      the fold met no insert at all (a -U after the last -D leaves the key alive, with the
      row the -D started);
    - the sequence number is the last record's, retractions included."""
    kinds = _kinds(rows)
    n = rows.num_rows
    inserts = ~_retracting(kinds)
    last_delete = _last_where(kinds == DELETE, starts)
    # The retraction the row starts from: the last -D, else a leading -U/-D, else none (-1).
    base = np.where(last_delete >= 0, last_delete, np.where(inserts[starts], -1, starts))
    counting = inserts & (np.arange(n) > base[_segment_of_rows(starts, n)])
    columns = {}
    for name in rows.column_names:
        if name in (SEQUENCE_NUMBER, VALUE_KIND) or name in keys:
            continue
        col = rows.column(name)
        picks = _last_where(counting & _valid(col), starts)
        if name in not_null:
            picks = np.where(picks < 0, base, picks)
        columns[name] = _take_or_null(col, picks)
    ends = segment_ends(starts, n)
    deleted = (kinds[ends] == DELETE) | (_last_where(inserts, starts) < 0)
    result_kinds = pa.array(np.where(deleted, DELETE, INSERT).astype(np.int8), pa.int8())
    return _assemble(rows, columns, starts, result_kinds)


def _partial_update_groups(rows: pa.Table, starts: np.ndarray, engine: "MergeEngine") -> pa.Table:
    """partial-update with sequence groups, record by record as Java's PartialUpdateMergeFunction
    folds them (the groups' comparisons do not vectorise). Per record and group: a record whose
    group sequence fields are all null leaves the group alone; otherwise, if its group sequence
    is not older than the row's (nulls oldest), an insert sets the group's columns (nulls
    included) and a retraction sets them to null, both taking the record's sequence values.
    Columns outside groups take an insert's non-null values and ignore retractions. A -D that
    wins a group named by ``partial-update.remove-record-on-sequence-group`` clears the row and
    makes the result -D (unless a later record follows). The result keeps the sequence number of
    the last insert (Java's latestSequenceNumber)."""
    import pyarrow.compute as pc

    # Key columns come from the records (Java keeps the key apart from the folded value).
    names = [n for n in rows.column_names if n not in (SEQUENCE_NUMBER, VALUE_KIND, *engine.keys)]
    group_of = {c: g for g in engine.sequence_groups for c in (*g.columns, *g.sequence_fields)}
    data = {n: rows.column(n).to_pylist() for n in names}
    seqs = rows.column(SEQUENCE_NUMBER).to_pylist()
    kinds = _kinds(rows)
    out: dict[str, list] = {n: [] for n in names}
    out_seq, out_kind = [], []
    bounds = list(starts) + [rows.num_rows]
    for s, e in zip(bounds[:-1], bounds[1:]):
        row = dict.fromkeys(names)
        last_seq, deleted = seqs[e - 1], False
        for i in range(s, e):
            retract = kinds[i] in (UPDATE_BEFORE, DELETE)
            deleted = False
            if not retract:
                last_seq = seqs[i]
            wins = {id(g): _group_wins(g, data, i, row) for g in engine.sequence_groups}
            for name in names:
                group = group_of.get(name)
                if group is None:
                    if not retract and data[name][i] is not None:
                        row[name] = data[name][i]
                    continue
                if not wins[id(group)]:
                    continue
                if name in group.sequence_fields:
                    if retract and kinds[i] == DELETE and name in engine.remove_on_group_delete:
                        row, deleted = dict.fromkeys(names), True
                        break
                    for f in group.sequence_fields:
                        row[f] = data[f][i]
                else:
                    row[name] = None if retract else data[name][i]
        for n in names:
            out[n].append(row[n])
        out_seq.append(last_seq)
        out_kind.append(DELETE if deleted else INSERT)
    arrays = []
    for field in rows.schema:
        if field.name in engine.keys:
            arrays.append(pc.take(rows.column(field.name), pa.array(starts)))
        elif field.name == SEQUENCE_NUMBER:
            arrays.append(pa.array(out_seq, field.type))
        elif field.name == VALUE_KIND:
            arrays.append(pa.array(out_kind, field.type))
        else:
            arrays.append(pa.array(out[field.name], field.type))
    return pa.Table.from_arrays(arrays, schema=rows.schema)


def _group_wins(group, data: dict[str, list], i: int, row: dict) -> bool:
    """Whether record ``i`` may change ``group``: some sequence field is set, and its sequence
    is not older than the row's (compared field by field, nulls first, ascending: Java's
    group comparator)."""
    mine = [data[f][i] for f in group.sequence_fields]
    if all(v is None for v in mine):
        return False
    for a, b in zip(mine, (row[f] for f in group.sequence_fields)):
        if a is None and b is None:
            continue
        if a is None or b is None:
            return b is None
        if a != b:
            return a > b
    return True


def _aggregate(rows: pa.Table, starts: np.ndarray, aggregates: dict[str, FieldAggregate],
               remove_record_on_delete: bool, initialized: dict[str, np.ndarray]) -> pa.Table:
    """Each column's aggregate per key. ``initialized``: per first_value/first_non_null_value
    column, the keys whose function already took a value before the restarting -D
    (``_first_taken_before``)."""
    kinds = _kinds(rows)
    retract = _retracting(kinds)
    restart = np.zeros(len(kinds), bool)
    if remove_record_on_delete:
        # The leading -D of a key (what _from_last_delete left) restarts it: it neither adds
        # nor retracts, except that a NOT NULL column takes its value as the start.
        restart[starts] = kinds[starts] == DELETE
    inserts = ~retract
    retract = retract & ~restart
    seg = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, rows.num_rows)))
    no_restart = np.zeros(len(kinds), bool)
    columns = {}
    for name, agg in aggregates.items():
        col = rows.column(name)
        seeds = no_restart if agg.nullable else restart
        columns[name] = _aggregate_column(col, agg, inserts | seeds, retract & agg.retracts, starts, seg, seeds,
                                          initialized.get(name))
    # Only a -D restarts (and, if last, deletes) a key; a -U retracts like without the option.
    deleting = (DELETE,) if remove_record_on_delete else ()
    return _assemble(rows, columns, starts, _result_kinds(rows, starts, deleting))


def _aggregate_column(col: pa.ChunkedArray, agg: FieldAggregate, adds: np.ndarray, retracts: np.ndarray,
                      starts: np.ndarray, seg: np.ndarray, restart: np.ndarray,
                      initialized: np.ndarray | None = None) -> pa.Array:
    """One column's aggregate per key. ``adds``/``retracts``: the rows that add or retract
    (rows of neither kind, such as ignored retractions, take no part); ``restart``: the
    seeding -D rows (NOT NULL columns), whose value the row starts from."""
    import pyarrow.compute as pc

    fn = agg.function
    valid = _valid(col)
    if fn == "last_value":
        # A retraction sets the value to null; the last record that takes part decides.
        last = _last_where(adds | retracts, starts)
        picked = _take_or_null(col, last)
        was_retract = np.where(last >= 0, retracts[np.maximum(last, 0)], False)
        return pc.if_else(pa.array(was_retract), pa.nulls(len(last), col.type), picked)
    if fn == "last_non_null_value":
        # The last non-null input decides: an insert's value, or null after a retraction.
        last = _last_where((adds | retracts) & valid, starts)
        picked = _take_or_null(col, last)
        was_retract = np.where(last >= 0, retracts[np.maximum(last, 0)], False)
        return pc.if_else(pa.array(was_retract), pa.nulls(len(last), col.type), picked)
    if fn in ("first_value", "first_non_null_value"):
        return _take_or_null(col, _first_picks(fn, adds & ~restart, valid, starts, restart, initialized))
    if fn == "listagg":
        return _listagg(col, agg, adds & valid, starts, restart)
    if fn == "product" and retracts.any():
        return _sequential_product(col, adds, retracts, starts)
    values = col
    if fn == "sum" and retracts.any():
        values = pc.if_else(pa.array(retracts), pc.negate(col), col)
    taking = adds | (retracts if fn == "sum" else False)
    values = pc.if_else(pa.array(taking), values, pa.nulls(len(values), col.type))
    hash_fn = {"sum": "sum", "product": "product", "max": "max", "min": "min",
               "bool_and": "all", "bool_or": "any"}[fn]
    grouped = pa.table({"seg": pa.array(seg), "v": values}).group_by("seg", use_threads=False).aggregate(
        [("v", hash_fn, pc.ScalarAggregateOptions(skip_nulls=True, min_count=1))])
    grouped = grouped.sort_by("seg")
    out = grouped.column(f"v_{hash_fn}")
    if out.type != col.type:
        try:
            out = pc.cast(out, col.type, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise InvalidDataError(f"column {agg.name}: {fn} does not fit {col.type}: "
                                   f"{str(e).splitlines()[0]}") from e
    return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out


def _first_picks(fn: str, inserts: np.ndarray, valid: np.ndarray, starts: np.ndarray, restart: np.ndarray,
                 initialized: np.ndarray | None) -> np.ndarray:
    """Per key the row first_value / first_non_null_value keeps, or -1 for null. A seeding -D
    is the row's start but not a value the function took (FieldFirstValueAgg sets its flag only
    in agg), so the first insert after it still wins; a function ``initialized`` before the -D
    takes nothing more and keeps the start."""
    picks = _first_where(inserts & valid if fn == "first_non_null_value" else inserts, starts)
    start = np.where(restart[starts], starts, -1)
    keeps_start = picks < 0 if initialized is None else (picks < 0) | initialized
    return np.where(keeps_start, start, picks)


def _listagg(col: pa.ChunkedArray, agg: FieldAggregate, taking: np.ndarray, starts: np.ndarray,
             restart: np.ndarray) -> pa.Array:
    """The strings of each key joined by the delimiter, in record order: every one, empty
    and blank ones included, as Java Paimon 1.0's FieldListaggAgg appends them. With
    ``distinct`` (which Java 1.0 lacks) pypaimon 2.1's fold: blank values are skipped and
    only new tokens are appended. A seeding -D (``restart``, a NOT NULL column) sets the
    result to its own value, which stays (even if blank) when nothing is appended to it."""
    import pyarrow.compute as pc

    text = pc.cast(col, pa.string())
    if agg.distinct:
        blank = pc.fill_null(pc.equal(pc.utf8_trim_whitespace(text), ""), True)
    else:
        blank = pc.is_null(text)
    keep = taking & ~np.asarray(blank.to_numpy(zero_copy_only=False), dtype=bool)
    kept = pc.filter(text, pa.array(keep))
    counts = np.add.reduceat(keep.astype(np.int64), starts) if len(starts) else np.zeros(0, np.int64)
    offsets = np.append(0, np.cumsum(counts)).astype(np.int32)
    kept = kept.combine_chunks() if isinstance(kept, pa.ChunkedArray) else kept
    lists = pa.ListArray.from_arrays(pa.array(offsets), kept)
    if agg.distinct:
        joined = pa.array([_join_distinct(v, agg.delimiter) for v in lists.to_pylist()], pa.string())
    else:
        joined = pc.binary_join(lists, agg.delimiter)
    out = pc.if_else(pa.array(counts > 0), joined, pa.nulls(len(counts), pa.string()))
    if len(starts) and restart[starts].any():
        own = _take_or_null(text, np.where(restart[starts] & (counts == 0), starts, -1))
        out = pc.if_else(pa.array(counts > 0), out, own)
    return pc.cast(out, col.type)


def _join_distinct(values: list[str], delimiter: str) -> str | None:
    """listagg with ``distinct`` over non-blank values, as Paimon's FieldListaggAgg folds them:
    the first value as it is, then each later value's non-blank tokens (split by the
    delimiter, or by a space if it is empty) that the result does not hold yet."""
    separator = delimiter or " "
    acc: str | None = None
    for value in values:
        if acc is None:
            acc = value
            continue
        existing = set(acc.split(separator))
        for token in value.split(separator):
            if token.strip() and token not in existing:
                existing.add(token)
                acc += delimiter + token
    return acc


def _sequential_product(col: pa.ChunkedArray, adds: np.ndarray, retracts: np.ndarray,
                        starts: np.ndarray) -> pa.Array:
    """product with retractions, record by record as Paimon applies them: a retraction divides,
    and leaves a null accumulator null."""
    values = col.to_pylist()
    integral = pa.types.is_integer(col.type)
    out = []
    bounds = list(starts) + [len(values)]
    for s, e in zip(bounds[:-1], bounds[1:]):
        acc = None
        for i in range(s, e):
            v = values[i]
            if v is None or not (adds[i] or retracts[i]):
                continue
            if adds[i]:
                acc = v if acc is None else acc * v
            elif acc is not None:
                if v == 0:
                    raise InvalidDataError("product: a retraction divides by zero")
                acc = int(acc / v) if integral else acc / v
        out.append(acc)
    return pa.array(out, col.type)


__all__ = ["FieldAggregate", "MergeEngine", "segment_ends", "segment_starts"]
