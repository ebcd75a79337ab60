"""The stall explorer (issue 43): every mutating command A, stalled before each of its storage
mutations in turn, while another command B and then a plain write W run to completion; then A
goes on, and the table is held against a model of what the commands that exited 0 mean.

One scenario (``run_scenario``):

1. a fresh copy of the template warehouse (``build_template``: a partitioned primary-key table
   with five snapshots, two tags and a branch, built once per process);
2. A as the console script with ``LAKECTL_FAULT=stall:mutation:N``, until it stalls (its stall
   file says before which mutation: ``core/fileio.py``);
3. B, then W, to completion, in this process through the CLI app (``CliRunner``: the exit code
   is ``lakectl/errors.py``'s mapping, as for the console script; about 10x faster than a new
   process per command);
4. A resumes (the stall file is deleted) and is waited for;
5. the warehouse is read through ``core`` and the invariants checked (``Violation``):
   - *linearizable*: some order of the commands' effects (A anywhere, B before W; a streaming
     write's commits each anywhere, in their order) makes the model (``Model``) equal to what is
     there: each table's rows, tags (each scanning to its rows), branches (each scanning to its
     rows) and consumers. A command that exited 0 had its effect; one that did not had none
     (a streaming write: any prefix of its commits);
   - *exit*: no command exited 1 (internal error, corrupt table) or with a signal; a lost race
     is 4;
   - *latest*: the latest snapshot id never went down, unless a rollback or fast-forward exited 0;
   - *gapless*: the snapshot ids of every table run from EARLIEST to LATEST without a hole;
   - *check*: ``check`` finds no problem in any table;
   - *stall*: A stopped at its N-th mutation (else the scenario says so, and still checks).

``points(A)`` counts A's mutations by a traced pass on the template (``LAKECTL_FAULT_TRACE``),
which is how the matrix knows every N to stall at. The model of each command is its meaning,
independent of how lakectl carries it out: a write upserts its rows, delete removes its keys,
truncate and drop-partition remove rows, rollback makes the rows those of the target snapshot
in the template's history (removing newer tags), rename moves the table, drop removes it,
clone copies its rows, and compact, compact-manifests, expire, orphan removal, maintain,
alter-schema (an option) and consumer reset leave the rows alone.

The append flavor (``LAKECTL_EXPLORE_FLAVOR=append``, ``run.py --flavor append``; ``load``
gives a copy of this module in either flavor): the template is an append table (no primary key,
bucket=-1, b1 from snapshot 1) whose rows all have keys of their own, and the commands add sort
compaction (compact-sort: rows unchanged) and branch merge (branch-merge: main's rows and b1's,
only while main's history is whole and pure APPEND, which the model tracks in ``snaps``); rescale
is left out (bucket=-1 has no bucket count).

Where the warehouses live is a ``Store``: ``LOCAL`` (a directory per scenario, copied from the
template with ``copytree``; the default) or ``S3Store`` (a fresh ``s3://bucket/wh-...`` prefix per
scenario on an S3 server, copied from the template by the server: CopyObject). Input files and
the stall and trace files stay local either way; A gets the store's settings in its environment,
B and W in-process the same through ``CliRunner``'s, and the warehouse is read back through
``core`` with the store's storage options.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

# Rewriters (rollback, expire, fast-forward) next to a stopped one give up after this long, not
# after the default 10 s (core/rewrite.py): the outcome is the same exit 4, the matrix faster.
# Set before core is imported, for B run in this process, and passed on to A's environment.
os.environ.setdefault("LAKECTL_REWRITE_WAIT_SECONDS", "1")

REPO = Path(__file__).resolve().parents[2]
LAKECTL = Path(sys.executable).parent / "lakectl"
TABLE = "db.t"
SCHEMA = "id BIGINT, v STRING, dt STRING"
OLD, NEW = "2020-01-01", "2100-01-01"  # partitions: expire-partitions drops OLD
STALL_SECONDS = 60  # a stalled A goes on by itself after this (a B that waits for A ends then)
A_TIMEOUT = 120

Key = tuple[int, str]  # (id, dt): the primary key
Rows = dict[Key, str]  # -> v


def _rows(*items: tuple[int, str, str]) -> Rows:
    return {(i, d): v for i, v, d in items}


# ---- the template's history -----------------------------------------------------------------
# The flavor (env LAKECTL_EXPLORE_FLAVOR, read once here): "pk", the default, a primary-key table;
# "append", an append table (no primary key, bucket=-1) for the verbs that only work there
# (compact --order-by, branch merge). In the append flavor every row anywhere has its own key
# (history, branch, W, the A/B writes and streams): an append is then an upsert and the dict model
# holds, and a key read twice (a double commit: duplicate rows, which a dict would hide) is flagged.
FLAVOR = os.environ.get("LAKECTL_EXPLORE_FLAVOR", "pk")
if FLAVOR not in ("pk", "append"):
    raise ValueError(f"LAKECTL_EXPLORE_FLAVOR={FLAVOR}: pk or append")
APPEND_FLAVOR = FLAVOR == "append"

# Five snapshots on main; tag "keep" on 3, tag "old" on 2 with a TTL that has passed by the time a
# scenario runs (expire-tags and maintain delete it); branch "b1" from snapshot BRANCH_START with
# one write. In the append flavor b1 starts at 1: a branch holds the snapshots from its start on,
# and branch merge needs both branches' history from snapshot 1.
HISTORY: list[Rows] = []
_h: Rows = {}
for _batch in ((
        _rows((1, "s1", OLD), (2, "s1", OLD), (3, "s1", NEW), (4, "s1", NEW)),
        _rows((1, "s2", OLD), (5, "s2", NEW)),
        _rows((6, "s3", OLD), (3, "s3", NEW)),
        _rows((7, "s4", NEW), (2, "s4", OLD)),
        _rows((8, "s5", OLD), (4, "s5", NEW))) if not APPEND_FLAVOR else (
        _rows((1, "s1", OLD), (2, "s1", OLD), (3, "s1", NEW), (4, "s1", NEW)),
        _rows((10, "s2", OLD), (5, "s2", NEW)),
        _rows((6, "s3", OLD), (11, "s3", NEW)),
        _rows((7, "s4", NEW), (12, "s4", OLD)),
        _rows((8, "s5", OLD), (13, "s5", NEW)))):
    _h = {**_h, **_batch}
    HISTORY.append(dict(_h))
ROWS_AT = {i + 1: rows for i, rows in enumerate(HISTORY)}  # snapshot id -> rows
if not APPEND_FLAVOR:
    BRANCH_WRITE = _rows((9, "b1", NEW), (1, "b1", OLD))
    BRANCH_START = 3
    ROLLBACK_TO = 2
    W_ROWS = _rows((2, "w", NEW), (300, "w", OLD), (8, "w", OLD))
else:
    BRANCH_WRITE = _rows((9, "b1", NEW), (14, "b1", OLD))
    BRANCH_START = 1
    ROLLBACK_TO = 3  # after b1's start: a fast-forward removes it, as it does in the pk flavor
    W_ROWS = _rows((2, "w", NEW), (300, "w", OLD), (301, "w", NEW))
BRANCH_ROWS = {**ROWS_AT[BRANCH_START], **BRANCH_WRITE}
TAG_AT = 4  # tag create and branch create name this snapshot


def _csv(rows: Rows) -> str:
    return "id,v,dt\n" + "".join(f"{i},{v},{d}\n" for (i, d), v in sorted(rows.items()))


# ---- the model ------------------------------------------------------------------------------
@dataclass
class TableModel:
    rows: Rows
    snaps: list  # ids of the template's snapshots still there in chain order; FROM_B1, "new" for others
    tags: dict[str, tuple[object, Rows, bool]]  # name -> (snapshot id or "new", rows, TTL passed)
    branches: dict[str, Rows]
    consumers: set[str]


State = dict[str, TableModel]  # table name -> model; a dropped table is absent

# In ``snaps``: b1's own snapshot (id BRANCH_START + 1, rows BRANCH_ROWS), which a fast-forward
# puts on main in place of the template's snapshot of that id.
FROM_B1 = "from b1"
# In ``snaps``: a new snapshot that is not an APPEND (COMPACT, OVERWRITE), after which branch
# merge refuses (it needs a pure-append history from snapshot 1); "new" is an APPEND.
NOT_APPEND = "new, not APPEND"


def _snapshot_rows(t: TableModel, sid: int) -> Rows | None:
    """The rows of main's snapshot ``sid`` if it is there (a tag or branch create names it)."""
    if sid in t.snaps:
        return dict(ROWS_AT[sid])
    if sid == BRANCH_START + 1 and FROM_B1 in t.snaps:
        return dict(BRANCH_ROWS)
    return None


# The template's snapshot ids: its five writes, and a COMPACT snapshot when the last of them
# reached the compaction trigger (set by build_template from what is there).
TEMPLATE_SNAPS: list[int] = [1, 2, 3, 4, 5]


def template_state() -> State:
    return {TABLE: TableModel(dict(HISTORY[-1]), list(TEMPLATE_SNAPS),
                              {"keep": (3, ROWS_AT[3], False), "old": (2, ROWS_AT[2], True)},
                              {"b1": dict(BRANCH_ROWS)}, set())}


Step = Callable[[State], list[State]]  # the states a command can leave if it succeeds; [] = it cannot


def _on_table(change: Callable[[TableModel], list[TableModel] | TableModel | None]) -> Step:
    """A step on db.t: absent table -> cannot succeed; ``change`` returns the new model(s), None
    when the command cannot succeed."""
    def step(state: State) -> list[State]:
        if TABLE not in state:
            return []
        out = change(copy.deepcopy(state[TABLE]))
        if out is None:
            return []
        return [{**state, TABLE: m} for m in (out if isinstance(out, list) else [out])]
    return step


def _append(t: TableModel, rows: Rows, *, maybe_empty: bool = False, kind_append: bool = True) -> list[TableModel]:
    """A new snapshot with ``rows`` (if ``maybe_empty``, a command that may commit nothing; if
    not ``kind_append``, a COMPACT or OVERWRITE one). A commit's own maintenance afterwards may
    delete the tags whose TTL passed (a write does), and may compact (a COMPACT snapshot of the
    same rows): the model allows each."""
    after = copy.deepcopy(t)
    after.rows = rows
    after.snaps = t.snaps + ["new" if kind_append else NOT_APPEND]
    out = [after, t] if maybe_empty else [after]
    for m in list(out):
        if any(expired for _, _, expired in m.tags.values()):
            pruned = copy.deepcopy(m)
            pruned.tags = {n: tag for n, tag in m.tags.items() if not tag[2]}
            out.append(pruned)
    for m in list(out):
        if m is not t:
            compacted = copy.deepcopy(m)
            compacted.snaps = m.snaps + [NOT_APPEND]
            out.append(compacted)
    return out


def upsert(rows: Rows) -> Step:
    return _on_table(lambda t: _append(t, {**t.rows, **rows}))


def no_row_change(t: TableModel) -> list[TableModel]:
    """compact and the like: rows unchanged, maybe a new snapshot."""
    return _append(t, t.rows, maybe_empty=True, kind_append=False)


def _expire(keep_last: bool) -> Step:
    def change(t: TableModel) -> list[TableModel]:
        if not keep_last:
            return [t]
        # A consumer holds back expiry from its next snapshot on: where it stops is not modelled.
        suffixes = [t.snaps[-1:]] if not t.consumers else [t.snaps[i:] for i in range(len(t.snaps))]
        out = []
        for snaps in suffixes:
            m = copy.deepcopy(t)
            m.snaps = snaps
            out.append(m)
        return out
    return _on_table(change)


def _target_available(t: TableModel, sid: int) -> bool:
    return sid in t.snaps or any(s == sid for s, _, _ in t.tags.values())


def _rollback(t: TableModel) -> TableModel | None:
    if not _target_available(t, ROLLBACK_TO):
        return None
    t.rows = dict(ROWS_AT[ROLLBACK_TO])
    if ROLLBACK_TO in t.snaps:
        t.snaps = t.snaps[:t.snaps.index(ROLLBACK_TO) + 1]
    else:
        t.snaps = [ROLLBACK_TO]
    t.tags = {n: tag for n, tag in t.tags.items() if tag[0] != "new" and tag[0] <= ROLLBACK_TO}
    return t


def _rollback_as_latest(t: TableModel) -> list[TableModel] | None:
    if not _target_available(t, ROLLBACK_TO):
        return None
    return _append(t, dict(ROWS_AT[ROLLBACK_TO]), kind_append=False)  # an OVERWRITE


def _tag_create(name: str) -> Step:
    def change(t: TableModel) -> TableModel | None:
        rows = _snapshot_rows(t, TAG_AT)
        if name in t.tags or rows is None:
            return None
        # On a fast-forwarded snapshot the tag is on no template snapshot: "new" (a rollback to
        # before it removes it, as it does a tag of any newer snapshot).
        t.tags[name] = (TAG_AT if TAG_AT in t.snaps else "new", rows, False)
        return t
    return _on_table(change)


def _tag_delete(t: TableModel) -> TableModel | None:
    if "keep" not in t.tags:
        return None
    del t.tags["keep"]
    return t


def _tag_rename(new: str) -> Step:
    def change(t: TableModel) -> TableModel | None:
        if "keep" not in t.tags or new in t.tags:
            return None
        t.tags[new] = t.tags.pop("keep")
        return t
    return _on_table(change)


def _expire_tags(t: TableModel) -> list[TableModel]:
    t.tags = {n: tag for n, tag in t.tags.items() if not tag[2]}
    return no_row_change(t)  # maintain may compact too; expire-tags commits nothing: both allowed


def _maintain(state: State) -> list[State]:
    """maintain exits 0 also for a table it skipped: one whose verb lost a race (a rewriter at
    work, exit 4 inside) or that was dropped or renamed under it. So its expire-tags may or may
    not have happened, and a table gone is no failure."""
    if TABLE not in state:
        return [state]
    return [state, *_on_table(_expire_tags)(state)]


def _branch_create(name: str) -> Step:
    def change(t: TableModel) -> TableModel | None:
        rows = _snapshot_rows(t, TAG_AT)
        if name in t.branches or rows is None:
            return None
        t.branches[name] = rows
        return t
    return _on_table(change)


def _branch_delete(t: TableModel) -> TableModel:
    """Deleting b1; a delete that finds it half-deleted finishes the job and exits 0 (by
    design: the rerun of an interrupted delete), so a delete of a gone b1 may succeed too."""
    t.branches.pop("b1", None)
    return t


def _branch_rename(new: str) -> Step:
    def change(t: TableModel) -> TableModel | None:
        if "b1" not in t.branches or new in t.branches:
            return None
        t.branches[new] = t.branches.pop("b1")
        return t
    return _on_table(change)


def _fast_forward(t: TableModel) -> TableModel | None:
    """Main becomes b1: its snapshots after b1's start, and its tags from the start on, are
    replaced by the branch's (b1 has none). Main must still hold the start as b1 has it."""
    if "b1" not in t.branches or BRANCH_START not in t.snaps:
        return None
    t.rows = dict(t.branches["b1"])
    t.snaps = t.snaps[:t.snaps.index(BRANCH_START) + 1] + [FROM_B1]
    t.tags = {n: tag for n, tag in t.tags.items() if tag[0] != "new" and tag[0] < BRANCH_START}
    return t


def _whole_append_history(t: TableModel) -> bool:
    """Main still holds every snapshot from 1, each an APPEND (b1's own snapshots, which a
    fast-forward copies, are). b1 always does while it exists: no command of the matrix commits
    to it or expires it."""
    return bool(t.snaps) and t.snaps[0] == 1 and NOT_APPEND not in t.snaps


def _branch_merge(t: TableModel) -> list[TableModel] | None:
    """Main's rows become main's and b1's: the data files b1 has and main lacks are added (every
    key is unique in the append flavor, so a file's rows are exactly the rows it adds). Refused
    (exit 2) unless both histories are whole and pure APPEND; a merge with nothing to add (main
    fast-forwarded to b1, or merged before) commits nothing."""
    if "b1" not in t.branches or not _whole_append_history(t):
        return None
    merged = {**t.rows, **t.branches["b1"]}
    return _append(t, merged, maybe_empty=merged == t.rows)


def _rename(new: str) -> Step:
    def step(state: State) -> list[State]:
        if TABLE not in state or new in state:
            return []
        out = dict(state)
        out[new] = out.pop(TABLE)
        return [out]
    return step


def _drop(state: State) -> list[State]:
    if TABLE not in state:
        return []
    out = dict(state)
    del out[TABLE]
    return [out]


def _clone(new: str) -> Step:
    def step(state: State) -> list[State]:
        if TABLE not in state or new in state:
            return []
        return [{**state, new: TableModel(dict(state[TABLE].rows), ["new"], {}, {}, set())}]
    return step


def _consumer_reset(name: str) -> Step:
    def change(t: TableModel) -> TableModel:
        t.consumers.add(name)
        return t
    return _on_table(change)


# ---- the commands ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Command:
    """One command with one fixed argument set; ``role`` ("a" or "b") keeps the names an A and
    a B create apart (two creates of one tag name would only test TagExistsError)."""

    name: str
    argv: Callable[[str, Path], list[str]]  # (role, scratch dir) -> arguments after -w WH
    steps: Callable[[str], list[Step]]  # the model of each commit, in order (a stream has several)
    stdin: Callable[[str], str | None] = lambda role: None
    rewrites: bool = False  # may move LATEST back when it exits 0 (rollback, fast-forward)
    solo_exit: int = 0  # its exit code alone on the template (not 0: a B only, never stalled)


def _input(role: str, scratch: Path, rows: Rows) -> str:
    path = scratch / f"write-{role}.csv"
    path.write_text(_csv(rows))
    return str(path)


def write_rows(role: str) -> Rows:
    base = 100 if role == "a" else 200
    # The pk flavor updates a key of the history (1, OLD); the append flavor's keys are all new.
    first = (1, OLD) if not APPEND_FLAVOR else (base + 2, OLD)
    return _rows((first[0], f"write-{role}", first[1]), (base, f"write-{role}", NEW), (base + 1, f"write-{role}", OLD))


def stream_batches(role: str) -> list[Rows]:
    base = 400 if role == "a" else 500
    old_keys = (3, 6) if not APPEND_FLAVOR else (base + 2, base + 3)  # pk: updates of the history's keys
    return [_rows((base, f"stream-{role}", OLD), (old_keys[0], f"stream-{role}", NEW)),
            _rows((base + 1, f"stream-{role}", NEW), (old_keys[1], f"stream-{role}", OLD))]


def _stream_stdin(role: str) -> str:
    lines = []
    for batch in stream_batches(role):
        lines += [json.dumps({"id": i, "v": v, "dt": d}) for (i, d), v in sorted(batch.items())]
    return "\n".join(lines) + "\n"


def _without(pred: Callable[[Key], bool]) -> Step:
    return _on_table(lambda t: _append(t, {k: v for k, v in t.rows.items() if not pred(k)}, kind_append=False))


COMMANDS: dict[str, Command] = {c.name: c for c in [
    Command("write", lambda r, s: ["write", TABLE, "-i", _input(r, s, write_rows(r))],
            lambda r: [upsert(write_rows(r))]),
    Command("stream", lambda r, s: ["write", TABLE, "-i", "-", "--stream", "--input-format", "jsonl",
                                    "--commit-rows", "2", "--commit-user", f"feed-{r}"],
            lambda r: [upsert(b) for b in stream_batches(r)], stdin=_stream_stdin),
    Command("delete", lambda r, s: ["delete", TABLE, "--where", "id = 2"],
            lambda r: [_without(lambda k: k[0] == 2)]),
    Command("compact", lambda r, s: ["compact", TABLE], lambda r: [_on_table(no_row_change)]),
    Command("compact-full", lambda r, s: ["compact", TABLE, "--full"], lambda r: [_on_table(no_row_change)]),
    Command("compact-manifests", lambda r, s: ["compact-manifests", TABLE], lambda r: [_on_table(no_row_change)]),
    Command("expire", lambda r, s: ["expire", TABLE], lambda r: [_expire(False)]),
    Command("expire-aggressive", lambda r, s: ["expire", TABLE, "--retain-max", "1", "--retain-min", "1",
                                               "--older-than", "0s"], lambda r: [_expire(True)]),
    Command("expire-changelogs", lambda r, s: ["expire-changelogs", TABLE, "--retain-min", "1", "--older-than", "0s"],
            lambda r: [_on_table(no_row_change)]),
    Command("expire-partitions", lambda r, s: ["expire-partitions", TABLE, "--expiration-time", "1d"],
            lambda r: [_without(lambda k: k[1] == OLD)]),
    Command("expire-tags", lambda r, s: ["expire-tags", TABLE], lambda r: [_on_table(_expire_tags)]),
    Command("truncate", lambda r, s: ["truncate", TABLE], lambda r: [_without(lambda k: True)]),
    Command("drop-partition", lambda r, s: ["drop-partition", TABLE, "-p", f"dt={NEW}"],
            lambda r: [_without(lambda k: k[1] == NEW)]),
    Command("rollback", lambda r, s: ["rollback", TABLE, "--snapshot-id", str(ROLLBACK_TO)],
            lambda r: [_on_table(_rollback)], rewrites=True),
    Command("rollback-as-latest", lambda r, s: ["rollback", TABLE, "--snapshot-id", str(ROLLBACK_TO), "--as-latest"],
            lambda r: [_on_table(_rollback_as_latest)]),
    Command("tag-create", lambda r, s: ["tag", "create", TABLE, f"t{r}", "--snapshot-id", str(TAG_AT)],
            lambda r: [_tag_create(f"t{r}")]),
    Command("tag-delete", lambda r, s: ["tag", "delete", TABLE, "keep"], lambda r: [_on_table(_tag_delete)]),
    Command("tag-rename", lambda r, s: ["tag", "rename", TABLE, "keep", f"k{r}"], lambda r: [_tag_rename(f"k{r}")]),
    Command("branch-create", lambda r, s: ["branch", "create", TABLE, f"br{r}", "--snapshot-id", str(TAG_AT)],
            lambda r: [_branch_create(f"br{r}")]),
    Command("branch-delete", lambda r, s: ["branch", "delete", TABLE, "b1"], lambda r: [_on_table(_branch_delete)]),
    Command("branch-rename", lambda r, s: ["branch", "rename", TABLE, "b1", f"b1{r}"],
            lambda r: [_branch_rename(f"b1{r}")]),
    Command("fast-forward", lambda r, s: ["branch", "fast-forward", TABLE, "b1"],
            lambda r: [_on_table(_fast_forward)], rewrites=True),
    Command("alter-schema", lambda r, s: ["alter-schema", TABLE, "--set-option", "target-file-size=64mb"],
            lambda r: [_on_table(no_row_change)]),
    Command("rename", lambda r, s: ["rename", TABLE, f"db.u{r}"], lambda r: [_rename(f"db.u{r}")]),
    Command("drop", lambda r, s: ["drop", TABLE], lambda r: [_drop]),
    Command("clone", lambda r, s: ["clone", TABLE, f"db.c{r}"], lambda r: [_clone(f"db.c{r}")]),
    Command("remove-orphan-files", lambda r, s: ["remove-orphan-files", TABLE], lambda r: [_on_table(no_row_change)]),
    # Without --force an age under an hour must be refused (exit 2): were it not, it would
    # delete a stalled write's new files (issue 43, case 4).
    Command("remove-orphan-files-0s", lambda r, s: ["remove-orphan-files", TABLE, "--older-than", "0s"],
            lambda r: [_on_table(no_row_change)], solo_exit=2),
    # On the template nothing is missing: a B that must plan, find nothing and leave the rows.
    Command("remove-unexisting-files", lambda r, s: ["remove-unexisting-files", TABLE],
            lambda r: [_on_table(no_row_change)]),
    Command("mark-partition-done", lambda r, s: ["mark-partition-done", TABLE, "-p", f"dt={OLD}"],
            lambda r: [_on_table(no_row_change)]),
    # The whole table into two buckets: one OVERWRITE snapshot of the same rows (the bucket
    # option changes first; a write next to it lands before, or is read again and kept after).
    Command("rescale", lambda r, s: ["rescale", TABLE, "--buckets", "2"], lambda r: [_on_table(no_row_change)]),
    Command("maintain", lambda r, s: ["maintain", TABLE], lambda r: [_maintain]),
    Command("consumer-reset", lambda r, s: ["consumer", "reset", TABLE, f"c{r}", "--next-snapshot", "5"],
            lambda r: [_consumer_reset(f"c{r}")]),
]}
if APPEND_FLAVOR:
    # The verbs of append tables only (a primary-key table refuses them: not in the pk flavor).
    COMMANDS.update({c.name: c for c in [
        # Paimon's sort compaction: every bucket rewritten in z-order, one COMPACT snapshot.
        Command("compact-sort", lambda r, s: ["compact", TABLE, "--order-by", "id", "--order-strategy", "zorder"],
                lambda r: [_on_table(no_row_change)]),
        Command("branch-merge", lambda r, s: ["branch", "merge", TABLE, "b1"], lambda r: [_on_table(_branch_merge)]),
    ]})
    # rescale is for fixed buckets: on bucket=-1 it is refused with UnsupportedTableError (exit 1
    # by design, lakectl/errors.py), which the exit invariant takes for an internal error.
    del COMMANDS["rescale"]
# Not in the matrix: what the user promises not to run next to a writer (--force says every
# writer is stopped). test_explore.py runs it once to show that the explorer sees a lost write.
UNSAFE: dict[str, Command] = {c.name: c for c in [
    Command("remove-orphan-files-forced", lambda r, s: ["remove-orphan-files", TABLE, "--older-than", "0s", "--force"],
            lambda r: [_on_table(no_row_change)]),
]}
W = Command("W", lambda r, s: ["write", TABLE, "-i", _input("w", s, W_ROWS)], lambda r: [upsert(W_ROWS)])


def load(flavor: str):  # noqa: ANN201 - a module
    """A copy of this module with the template of ``flavor`` (a test of one flavor next to the
    other's in one process: the flavor is read at import)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"explore_kit_{flavor}", __file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    before = os.environ.get("LAKECTL_EXPLORE_FLAVOR")
    os.environ["LAKECTL_EXPLORE_FLAVOR"] = flavor
    try:
        sys.modules[spec.name] = module  # dataclasses look their module up while it runs
        spec.loader.exec_module(module)
    finally:
        if before is None:
            os.environ.pop("LAKECTL_EXPLORE_FLAVOR")
        else:
            os.environ["LAKECTL_EXPLORE_FLAVOR"] = before
    return module


# ---- where the warehouses live -------------------------------------------------------------
@dataclass(frozen=True)
class Warehouse:
    """A warehouse of a scenario (or the template): its URI, and the store it is on."""

    uri: str
    store: Store

    def __str__(self) -> str:
        return self.uri

    def open(self, name: str = TABLE):  # noqa: ANN201 - a core Table
        from core.table import Table

        return Table.open(name, warehouse=self.uri, storage_options=self.store.storage_options())

    def table_names(self) -> list[str]:
        return self.store.table_names(self.uri)


class Store:
    """A local disk: a warehouse is the directory ``wh`` of its scenario's scratch directory.
    S3Store says what differs on an object store."""

    key = "local"  # the template cache's key: one template per store and root

    def env(self) -> dict[str, str]:
        """What a command needs in its environment to reach the store (nothing, here)."""
        return {}

    def storage_options(self) -> dict | None:
        return None

    def new(self, scratch: Path) -> Warehouse:
        return Warehouse(str(scratch / "wh"), self)

    def copy(self, template: Warehouse, where: Path) -> Warehouse:
        wh = where / "wh"
        shutil.copytree(template.uri, wh, symlinks=True)
        return Warehouse(str(wh), self)

    def table_names(self, uri: str) -> list[str]:
        """Every table directory with a schema directory, hidden ones (a drop's or a clone's work
        in progress) left out: a table that is half there is what the checks must see."""
        out = []
        for db in sorted(Path(uri).glob("*.db")):
            for t in sorted(db.iterdir()):
                if t.is_dir() and not t.name.startswith(".") and (t / "schema").is_dir():
                    out.append(f"{db.name[:-3]}.{t.name}")
        return out


LOCAL = Store()


class S3Store(Store):
    """An S3 server (``server``: tests/s3/s3server.py's S3Server, or anything with its ``env``,
    ``storage_options``, ``warehouse`` and ``fs``): each warehouse a fresh prefix in its bucket."""

    def __init__(self, server) -> None:  # noqa: ANN001 - an S3Server
        self.server = server
        self.key = f"s3 {server.endpoint}"
        self._options = server.storage_options()
        self._fs = None

    def env(self) -> dict[str, str]:
        return self.server.env()

    def storage_options(self) -> dict:
        return self._options

    def new(self, scratch: Path) -> Warehouse:
        return Warehouse(self.server.warehouse(), self)

    def copy(self, template: Warehouse, where: Path) -> Warehouse:
        """A server-side copy (CopyObject per object): nothing goes through this process."""
        if self._fs is None:
            self._fs = self.server.fs()
        uri = self.server.warehouse()
        self._fs.copy(template.uri.split("://", 1)[1], uri.split("://", 1)[1], recursive=True)
        return Warehouse(uri, self)

    def table_names(self, uri: str) -> list[str]:
        """The tables core lists: a prefix with schema files. Not the prefixes alone: SeaweedFS
        keeps an emptied prefix as a directory after a drop deleted every object in it."""
        from core.warehouse import Warehouse as Catalog

        catalog = Catalog.open(uri, self._options)
        return [f"{db}.{t}" for db in catalog.databases() for t in catalog.tables(db)]


# ---- running commands -----------------------------------------------------------------------
def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("LAKECTL_FAULT", "LAKECTL_STALL_FILE", "LAKECTL_KILL_AFTER_WRITES", "LAKECTL_FAULT_TRACE")
           and not k.startswith("LAKECTL_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")
    env["OPENBLAS_NUM_THREADS"] = "1"
    env.update(extra)
    return env


@dataclass
class Ran:
    """One command's run: its exit code and output (code None: it never ended)."""

    label: str
    argv: list[str]
    code: int | None = None
    out: str = ""
    err: str = ""
    seconds: float = 0.0

    def text(self) -> str:
        return (f"  {self.label}: lakectl {' '.join(self.argv)} -> exit {self.code} ({self.seconds:.1f}s)\n"
                + "".join(f"    | {line}\n" for line in (self.out + self.err).strip().splitlines()[-12:]))


_cli_lock = threading.Lock()


def run_in_process(label: str, wh: Warehouse, argv: list[str], stdin: str | None = None) -> Ran:
    """The CLI app in this process: the exit code comes from lakectl/errors.py as it does for
    the console script (an exception that escapes it is exit 1, as the console script's would be)."""
    from typer.testing import CliRunner

    from lakectl.app import app

    full = ["-w", str(wh), "-f", "json", *argv]
    began = time.monotonic()
    with _cli_lock:  # CliRunner swaps sys.stdout: one at a time
        result = CliRunner().invoke(app, full, input=stdin, env=wh.store.env() or None)
    err = result.stderr if result.stderr_bytes is not None else ""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback
        err += "".join(traceback.format_exception(result.exception))
    return Ran(label, full, result.exit_code, result.stdout, err, time.monotonic() - began)


def console(wh: Warehouse, argv: list[str], env: dict[str, str], cwd: Path,
            stdin: str | None = None) -> subprocess.Popen:
    return subprocess.Popen([str(LAKECTL), "-w", str(wh), "-f", "json", *argv], env={**env, **wh.store.env()},
                            cwd=str(cwd),
                            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


# ---- the template ---------------------------------------------------------------------------
_templates: dict[tuple[str, str], Warehouse] = {}


def build_template(root: Path, store: Store = LOCAL) -> Warehouse:
    """The template warehouse (built once per process, store and root, then copied per scenario)."""
    key = (store.key, str(root))
    if key in _templates:
        return _templates[key]
    scratch = root / f"template-{os.getpid()}"  # one per process: the runner's workers share root
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    wh = store.new(scratch)

    def ok(*argv: str, stdin: str | None = None) -> None:
        ran = run_in_process("setup", wh, list(argv), stdin)
        assert ran.code == 0, ran.text()

    layout = ["--option", "bucket=-1"] if APPEND_FLAVOR else ["--primary-key", "id,dt", "--option", "bucket=1"]
    ok("create", TABLE, "--schema", SCHEMA, *layout, "--partition-by", "dt",
       "--option", "partition.timestamp-formatter=yyyy-MM-dd",
       # A commit held off by a stalled rollback gives up (exit 4) in a second or two, not
       # after Paimon's 10 retries of up to 10 s: the same outcome, and the matrix stays fast.
       "--option", "commit.max-retries=4", "--option", "commit.max-retry-wait=200ms",
       # The history is written without compaction, so that compact (five sorted runs a bucket)
       # and compact --full have work; write-only goes before the scenarios start.
       "--option", "write-only=true")
    previous: Rows = {}
    for i, rows in enumerate(HISTORY, start=1):
        batch = {k: v for k, v in rows.items() if previous.get(k) != v}
        path = scratch / f"s{i}.csv"
        path.write_text(_csv(batch))
        ok("write", TABLE, "-i", str(path))
        previous = rows
    ok("tag", "create", TABLE, "keep", "--snapshot-id", "3")
    ok("tag", "create", TABLE, "old", "--snapshot-id", "2", "--time-retained", "1s")
    ok("branch", "create", TABLE, "b1", "--snapshot-id", str(BRANCH_START))
    path = scratch / "b1.csv"
    path.write_text(_csv(BRANCH_WRITE))
    ok("write", TABLE, "--branch", "b1", "-i", str(path))
    ok("alter-schema", TABLE, "--reset-option", "write-only")
    time.sleep(1.1)  # the TTL of "old" passes
    ids = latest_ids(wh)
    if _templates and ids != TEMPLATE_SNAPS:  # the model has one template history for all stores
        raise AssertionError(f"the template on {store.key} has snapshots {ids}, another {TEMPLATE_SNAPS}")
    TEMPLATE_SNAPS[:] = ids
    state = observe(wh)
    assert state.tables == _canon(template_state()), (state.tables, _canon(template_state()))
    _templates[key] = wh
    return wh


# ---- reading the warehouse back -------------------------------------------------------------
def _scan(t) -> Rows:  # noqa: ANN001 - a core Table
    data = t.scan(select=["id", "v", "dt"]) if not isinstance(t, tuple) else t[0].scan(tag=t[1], select=["id", "v", "dt"])
    out: Rows = {}
    for i, v, d in zip(*(data.column(c).to_pylist() for c in ("id", "v", "dt"))):
        if (i, d) in out:
            # Two rows of one key: in the append flavor, where every key is written once, a commit
            # that landed twice (a dict would hide it); in the pk flavor a broken merge.
            raise AssertionError(f"key {(i, d)} read twice (duplicate rows)")
        out[(i, d)] = v
    return out


def _canon(state: State) -> dict:
    """What of a model the warehouse shows: per table its rows, tags, branches and consumers."""
    return {name: {"rows": sorted(t.rows.items()),
                   "tags": {n: sorted(rows.items()) for n, (_, rows, _) in sorted(t.tags.items())},
                   "branches": {n: sorted(rows.items()) for n, rows in sorted(t.branches.items())},
                   "consumers": sorted(t.consumers)}
            for name, t in sorted(state.items())}


@dataclass
class Observed:
    tables: dict  # as _canon, or an "error" string per table/part that could not be read
    latest: dict[str, int | None] = field(default_factory=dict)
    snapshot_ids: dict[str, list[int]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # check's, and gaps


def latest_ids(wh: Warehouse) -> list[int]:
    return wh.open(TABLE).snapshots.list_ids()


def latest_id(wh: Warehouse, name: str = TABLE) -> int | None:
    try:
        return wh.open(name).snapshots.latest_id()
    except Exception:  # noqa: BLE001 - a table that is gone or unreadable has no latest
        return None


def observe(wh: Warehouse) -> Observed:
    from core.ops.branches import list_branches
    from core.ops.check import check
    from core.ops.consumers import list_consumers

    obs = Observed({})
    for name in wh.table_names():
        entry: dict = {}
        try:
            t = wh.open(name)
            entry["rows"] = sorted(_scan(t).items())
            entry["tags"] = {}
            for tag in sorted(t.tags.names()):
                try:
                    entry["tags"][tag] = sorted(_scan((t, tag)).items())
                except Exception as e:  # noqa: BLE001
                    entry["tags"][tag] = f"unreadable: {type(e).__name__}: {e}"
            entry["branches"] = {}
            for b in sorted(list_branches(t), key=lambda b: b.branch):
                try:
                    entry["branches"][b.branch] = sorted(_scan(t.on_branch(b.branch)).items())
                except Exception as e:  # noqa: BLE001
                    entry["branches"][b.branch] = f"unreadable: {type(e).__name__}: {e}"
            entry["consumers"] = sorted(c.consumer_id for c in list_consumers(t))
            ids = t.snapshots.list_ids()
            obs.snapshot_ids[name] = ids
            obs.latest[name] = t.snapshots.latest_id()
            if ids and ids != list(range(ids[0], ids[-1] + 1)):
                obs.problems.append(f"{name}: snapshot ids with a gap: {ids}")
            result = check(t)
            obs.problems += [f"{name}: check: {p.kind} {p.path}: {p.detail}" for p in result.problems]
        except Exception as e:  # noqa: BLE001 - an unreadable table is what we report
            entry = {"error": f"{type(e).__name__}: {e}"}
            obs.problems.append(f"{name}: unreadable: {type(e).__name__}: {e}")
        obs.tables[name] = entry
    return obs


# ---- linearizability ------------------------------------------------------------------------
def _interleavings(a: list, rest: list) -> Iterator[list]:
    """Every merge of ``a`` into ``rest`` that keeps each list's own order."""
    n = len(a) + len(rest)
    for places in itertools.combinations(range(n), len(a)):
        ai, ri, out = iter(a), iter(rest), []
        for i in range(n):
            out.append(next(ai) if i in places else next(ri))
        yield out


def _effective(steps: list[Step], code: int | None) -> list[list[Step]]:
    """What of a command can have taken effect: all of it if it exited 0; nothing if a
    one-commit command did not; any prefix of a streaming write's commits otherwise."""
    if code == 0:
        return [steps]
    if len(steps) == 1:
        return [[]]
    return [steps[:i] for i in range(len(steps) + 1)]


def model_outcomes(a: list[Step], a_code: int | None, b: list[Step], b_code: int | None,
                   w_code: int | None, *, with_w: bool = True) -> tuple[list[dict], list[str]]:
    """The canonical states some order allows, and the orders (as names) that were possible."""
    outcomes: dict[str, dict] = {}
    orders: list[str] = []
    for a_done in _effective(a, a_code):
        for b_done in _effective(b, b_code):
            w_done = _effective(W.steps("w"), w_code)[0] if with_w else []
            rest = [("B", s) for s in b_done] + [("W", s) for s in w_done]
            for order in _interleavings([("A", s) for s in a_done], rest):
                states = [template_state()]
                for label, step in order:
                    states = [after for state in states for after in step(state)]
                    if not states:
                        break
                for state in states:
                    canon = _canon(state)
                    outcomes.setdefault(json.dumps(canon, sort_keys=True), canon)
                if states:
                    orders.append(" ".join(label for label, _ in order) or "(none)")
    return list(outcomes.values()), orders


# ---- one scenario ---------------------------------------------------------------------------
@dataclass
class Violation:
    invariant: str
    detail: str


@dataclass
class Outcome:
    scenario: str
    a: str
    n: int
    b: str
    traced: str = ""  # the mutation A stalled before ("mutation #N: write /path")
    stalled: bool = False
    runs: list[Ran] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.violations

    def report(self) -> str:
        head = f"{self.scenario}: A={self.a} stalled at mutation {self.n} ({self.traced or 'never stalled'}), B={self.b}"
        body = "".join(f"  VIOLATED {v.invariant}: {v.detail}\n" for v in self.violations)
        return head + "\n" + body + "".join(r.text() for r in self.runs)


def scenario_id(a: str, n: int, b: str) -> str:
    return f"{a}@{n}-vs-{b}"


def parse_scenario(sid: str) -> tuple[str, int, str]:
    a_n, b = sid.split("-vs-", 1)
    a, n = a_n.rsplit("@", 1)
    return a, int(n), b


def sample(counts: dict[str, int], size: int, seed: int) -> list[tuple[str, int, str]]:
    """``size`` scenarios (A, N, B): every A with a mutation point (``counts``: A -> its number of
    mutations) and every B at least once, N drawn from A's points, all by one seeded generator
    (the draw of test_explore.py's sample, for any counts: the S3 run's differ from the local)."""
    rng = random.Random(seed)
    a_names = sorted(a for a, n in counts.items() if n > 0 and a in COMMANDS and COMMANDS[a].solo_exit == 0)
    b_names = sorted(COMMANDS)
    rng.shuffle(b_names)
    picked: dict[str, tuple[str, int, str]] = {}

    def add(a: str, b: str) -> None:
        n = rng.randint(1, counts[a])
        picked.setdefault(scenario_id(a, n, b), (a, n, b))

    for i in range(max(len(a_names), len(b_names))):
        add(a_names[i % len(a_names)], b_names[i % len(b_names)])
    while len(picked) < size:
        add(rng.choice(a_names), rng.choice(b_names))
    return sorted(picked.values())


class SoloFailure(AssertionError):
    """A command alone on the template failed, or did not do what its model says."""


def points(a: str, root: Path, store: Store = LOCAL) -> list[str]:
    """A's mutations on the template (a traced pass): line i is mutation i+1, ``OP PATH``."""
    template = build_template(root, store)
    where = root / f"trace-{a}"
    if where.exists():
        shutil.rmtree(where)
    where.mkdir(parents=True)
    wh = store.copy(template, where)
    trace = where / "trace"
    cmd = COMMANDS[a]
    proc = console(wh, cmd.argv("a", where), clean_env(LAKECTL_FAULT_TRACE=str(trace)), where, cmd.stdin("a"))
    out, err = proc.communicate(cmd.stdin("a"), timeout=A_TIMEOUT)
    if proc.returncode != cmd.solo_exit:
        raise SoloFailure(f"{a} alone on the template exited {proc.returncode}:\n{err}")
    lines = [line.split(" ", 1)[1] for line in trace.read_text().splitlines()] if trace.exists() else []
    # The model of A alone must match what A alone did, or every scenario of A would fail.
    seen = observe(wh)
    outcomes, _ = model_outcomes(cmd.steps("a"), proc.returncode, [], 0, None, with_w=False)
    if seen.problems or seen.tables not in outcomes:
        raise SoloFailure(f"{a} alone: {seen.problems} {_explain(seen.tables, outcomes, ['A'])}\n{out}\n{err}")
    shutil.rmtree(where, ignore_errors=True)
    return lines


def run_scenario(a: str, n: int, b: str, root: Path, *, keep: bool = False, store: Store = LOCAL) -> Outcome:
    """Stall A before its n-th mutation, run B and W, let A go on, check the invariants (on a
    copy of the template in ``store``; on S3 the copy is left in the bucket, which the server's
    temporary directory holds)."""
    began = time.monotonic()
    sid = scenario_id(a, n, b)
    outcome = Outcome(sid, a, n, b)
    template = build_template(root, store)
    where = root / sid
    if where.exists():
        shutil.rmtree(where)
    where.mkdir(parents=True)
    wh = store.copy(template, where)
    cmd_a, cmd_b = COMMANDS[a], COMMANDS.get(b) or UNSAFE[b]
    stall = where / "stall"
    env = clean_env(LAKECTL_FAULT=f"stall:mutation:{n}", LAKECTL_STALL_FILE=str(stall),
                    LAKECTL_STALL_SECONDS=str(STALL_SECONDS))
    a_argv = cmd_a.argv("a", where)
    latest = [latest_id(wh)]
    proc = console(wh, a_argv, env, where, cmd_a.stdin("a"))
    if cmd_a.stdin("a") is not None:
        assert proc.stdin is not None
        proc.stdin.write(cmd_a.stdin("a") or "")
        proc.stdin.close()
        proc.stdin = None
    ran_a = Ran("A", ["-w", str(wh), "-f", "json", *a_argv])
    a_began = time.monotonic()
    deadline = a_began + A_TIMEOUT
    while proc.poll() is None and time.monotonic() < deadline:
        if stall.exists():
            text = stall.read_text()
            if text.endswith("\n"):
                outcome.stalled, outcome.traced = True, text.split("stalled before ", 1)[-1].strip()
                break
        time.sleep(0.005)
    latest.append(latest_id(wh))
    ran_b = run_in_process("B", wh, cmd_b.argv("b", where), cmd_b.stdin("b"))
    latest.append(latest_id(wh))
    ran_w = run_in_process("W", wh, W.argv("w", where))
    latest.append(latest_id(wh))
    stall.unlink(missing_ok=True)
    try:
        out, err = proc.communicate(timeout=A_TIMEOUT)
        ran_a.code, ran_a.out, ran_a.err = proc.returncode, out, err
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        ran_a.out, ran_a.err = out, err
    ran_a.seconds = time.monotonic() - a_began
    latest.append(latest_id(wh))
    outcome.runs = [ran_a, ran_b, ran_w]

    def violate(invariant: str, detail: str) -> None:
        outcome.violations.append(Violation(invariant, detail))

    if not outcome.stalled:
        # Not a violation: A's mutation count differs from the traced pass (a retry, a thread).
        outcome.traced = "A ended before reaching it"
    for ran in outcome.runs:
        if ran.code is None:
            violate("exit", f"{ran.label} never ended")
        elif ran.code == 1 or ran.code < 0 or ran.code > 11:
            violate("exit", f"{ran.label} exited {ran.code} (a lost race must be 4; 1 is an internal error or damage)")
        elif B_BEFORE_STALL_SECONDS < ran.seconds and ran.label in ("B", "W"):
            violate("stall", f"{ran.label} took {ran.seconds:.0f}s: it waited for the stalled A")
    obs = observe(wh)
    for problem in obs.problems:
        violate("check", problem)
    rewrote = any(r.code == 0 for r, c in ((ran_a, cmd_a), (ran_b, cmd_b)) if c.rewrites)
    known = [x for x in latest if x is not None]  # None: db.t renamed or dropped by then
    if not rewrote and known != sorted(known):
        violate("latest", f"main's latest went back: before A, at the stall, after B, after W, at the end: {latest}")
    outcomes, orders = model_outcomes(cmd_a.steps("a"), ran_a.code, cmd_b.steps("b"), ran_b.code, ran_w.code)
    if obs.tables not in outcomes:
        violate("linearizable", _explain(obs.tables, outcomes, orders))
    outcome.seconds = time.monotonic() - began
    if not keep and outcome.ok:
        shutil.rmtree(where, ignore_errors=True)
    return outcome


B_BEFORE_STALL_SECONDS = STALL_SECONDS - 5


def _explain(seen: dict, outcomes: list[dict], orders: list[str]) -> str:
    """The difference between what is there and the nearest state some order allows."""
    if not outcomes:
        return f"no order of the commands that exited 0 can have succeeded ({orders}); the warehouse holds {_short(seen)}"

    def distance(o: dict) -> int:
        return sum(json.dumps(seen.get(k), sort_keys=True) != json.dumps(o.get(k), sort_keys=True)
                   for k in set(seen) | set(o))
    near = min(outcomes, key=distance)
    lines = []
    for name in sorted(set(seen) | set(near)):
        s, m = seen.get(name), near.get(name)
        if s == m:
            continue
        if s is None or m is None:
            lines.append(f"table {name}: {'absent' if s is None else 'present'}, the model says "
                         f"{'absent' if m is None else 'present'}")
            continue
        for part in ("error", "rows", "tags", "branches", "consumers"):
            if s.get(part) != m.get(part):
                lines.append(f"{name} {part}: is {_diff(s.get(part), m.get(part))}")
    return f"no order of {orders} gives what is there; nearest: " + "; ".join(lines)


def _diff(seen: object, want: object) -> str:
    if isinstance(seen, list) and isinstance(want, list):
        s = {tuple(k) if isinstance(k, list) else k: v for k, v in seen}
        w = {tuple(k) if isinstance(k, list) else k: v for k, v in want}
        missing = sorted((k, v) for k, v in w.items() if s.get(k) != v)
        extra = sorted((k, v) for k, v in s.items() if w.get(k) != v)
        return f"missing {missing[:6]}, unexpected {extra[:6]}"
    if isinstance(seen, dict) and isinstance(want, dict):
        keys = sorted(set(seen) | set(want))
        return ", ".join(f"{k}: {'absent' if k not in seen else 'ok' if seen[k] == want.get(k) else _short(seen[k])}"
                         f"{' (model: absent)' if k not in want else ''}" for k in keys if seen.get(k) != want.get(k))
    return f"{_short(seen)} (model {_short(want)})"


def _short(x: object) -> str:
    text = json.dumps(x, default=str)
    return text if len(text) < 300 else text[:300] + "..."
