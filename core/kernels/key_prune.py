"""Key predicates before the merge: drop the records of keys a condition rejects before
they are sorted and merged.

Every record of a primary key carries the same key values, so a condition on key columns
alone accepts all of a key's records or none of them; dropping the rejected ones before the
merge cannot change any key that passes. A condition naming any value column is never
applied here: it could drop a key's newest record and let an older one resurface."""
from __future__ import annotations

import pyarrow as pa

from core.predicate import Predicate


def key_condition(predicate: Predicate | None, primary_keys: list[str]) -> Predicate | None:
    """``predicate`` if it names primary-key columns only, else None (nothing to apply early)."""
    if predicate is None or not primary_keys or not predicate.columns:
        return None
    return predicate if predicate.columns <= set(primary_keys) else None


def keep_matching_keys(table: pa.Table, condition: Predicate | None) -> pa.Table:
    """The records of ``table`` whose key satisfies ``condition`` (all of them without one)."""
    if condition is None or table.num_rows == 0:
        return table
    return table.filter(condition.to_arrow())
