"""A model of what a follower must see, computed from the batches written (never from lakectl).

A batch is a list of ``(kind, id, v)`` CDC records (kinds +I and -D) written as one APPEND
snapshot to a deduplicate table keyed by ``id``.

- Without a changelog producer a follower reads the records each APPEND stored: per key,
  the last record of the batch (the write buffer keeps the newest), with its kind.
- With ``changelog-producer=lookup`` it reads the exact changes against the state before
  the batch: +I for a new key, -U/+U for a changed one, -D for a removed one; deleting an
  absent key changes nothing.
"""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa

Record = tuple[str, int, str]  # (kind, id, v)
Change = tuple[str, int, str]


def random_batches(rng: random.Random, count: int, keys: int = 12, size: int = 8) -> list[list[Record]]:
    batches, serial = [], 0
    for _ in range(count):
        batch = []
        for _ in range(rng.randint(1, size)):
            serial += 1
            kind = "-D" if rng.random() < 0.25 else "+I"
            batch.append((kind, rng.randrange(keys), f"v{serial}"))
        batches.append(batch)
    return batches


def to_arrow(batch: list[Record]) -> pa.Table:
    return pa.table({"id": pa.array([r[1] for r in batch], pa.int64()),
                     "v": pa.array([r[2] for r in batch], pa.string()),
                     "op": pa.array([r[0] for r in batch], pa.string())})


def stored_records(batch: list[Record]) -> list[Change]:
    last: dict[int, Record] = {}
    for record in batch:
        last[record[1]] = record
    return sorted(last.values(), key=lambda r: r[1])


def apply(state: dict[int, str], batch: list[Record]) -> None:
    for kind, key, value in batch:
        if kind == "-D":
            state.pop(key, None)
        else:
            state[key] = value


def lookup_changes(state: dict[int, str], batch: list[Record]) -> list[Change]:
    """The changelog of ``batch`` against ``state`` (which is then updated), by key."""
    before = dict(state)
    apply(state, batch)
    out: list[Change] = []
    for key in sorted({r[1] for r in batch}):
        old, new = before.get(key), state.get(key)
        if old is None and new is not None:
            out.append(("+I", key, new))
        elif old is not None and new is None:
            out.append(("-D", key, old))
        elif old is not None and new is not None:
            out += [("-U", key, old), ("+U", key, new)]
    return out


def full_rows(state: dict[int, str]) -> list[Change]:
    return [("+I", k, state[k]) for k in sorted(state)]


def as_changes(rows: list[dict[str, Any]]) -> list[Change]:
    """Rows read by a follower, ordered by key (order across buckets is not specified)
    keeping the order of each key's own rows (-U before +U)."""
    indexed = sorted(enumerate(rows), key=lambda ir: (ir[1]["id"], ir[0]))
    return [(r["_row_kind"], r["id"], r["v"]) for _, r in indexed]
