"""Key predicates before the merge: drop the records of keys a condition rejects before
they are sorted and merged.

Every record of a primary key carries the same key values, so a condition on key columns
alone accepts all of a key's records or none of them; dropping the rejected ones before the
merge cannot change any key that passes. A condition naming any value column is never
applied here: it could drop a key's newest record and let an older one resurface."""
from __future__ import annotations

import pyarrow as pa

from core.arrow_values import values_array
from core.predicate import And, Comparison, InList, Predicate
from core.types import to_arrow

# The compute functions of the comparisons (those Comparison.to_arrow's operators call), by
# name: pyarrow.compute is imported when a filter runs (its import is ~0.03 s of a scan).
_KERNELS = {"=": "equal", "<>": "not_equal", "<": "less", "<=": "less_equal", ">": "greater",
            ">=": "greater_equal"}


def key_condition(predicate: Predicate | None, primary_keys: list[str]) -> Predicate | None:
    """``predicate`` if it names primary-key columns only, else None (nothing to apply early)."""
    if predicate is None or not primary_keys or not predicate.columns:
        return None
    return predicate if predicate.columns <= set(primary_keys) else None


def keep_matching_keys(table: pa.Table, condition: Predicate | None) -> pa.Table:
    """The records of ``table`` whose key satisfies ``condition`` (all of them without one)."""
    if condition is None or table.num_rows == 0:
        return table
    return filter_rows(table, condition)


def filter_rows(table: pa.Table, condition: Predicate) -> pa.Table:
    """The rows of ``table`` where ``condition`` is TRUE."""
    mask = _mask(condition, table)
    if mask is None:
        return table.filter(condition.to_arrow())
    return table.filter(mask)


def _mask(condition: Predicate, table: pa.Table) -> pa.ChunkedArray | None:
    """Where ``condition`` is TRUE, computed with the compute functions directly, for
    comparisons and IN lists (not of floats) and their AND, the shapes of key ranges and key
    lists (None for any other shape: the expression filter handles it). Filtering an expression goes through an Acero
    plan, whose setup costs more than the comparison on a few thousand keys; the kernels are
    the ones the expression calls, and a row whose answer is FALSE or NULL is dropped by
    either."""
    import pyarrow.compute as pc

    if isinstance(condition, And):
        mask = None
        for child in condition.children:
            part = _mask(child, table)
            if part is None:
                return None
            mask = part if mask is None else pc.and_kleene(mask, part)
        return mask
    if isinstance(condition, Comparison) and not pa.types.is_floating(to_arrow(condition.type)):
        # (floats compare in Java's order, -0.0 below 0.0 and NaN on top: the expression's)
        literal = values_array([condition.value], to_arrow(condition.type))[0]
        return getattr(pc, _KERNELS[condition.op])(table.column(condition.column), literal)
    if isinstance(condition, InList) and not pa.types.is_floating(to_arrow(condition.type)):
        return pc.is_in(table.column(condition.column),
                        value_set=values_array(condition.values, to_arrow(condition.type)))
    return None
