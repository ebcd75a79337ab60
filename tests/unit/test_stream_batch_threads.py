"""A streaming write parses each batch on its own thread, not on Arrow's CPU pool: a pool
that starts its threads just before a bad first batch ends the process made the process abort
now and then at exit ("terminate called without an active exception", exit -6 instead of 5;
seen once in CI under load, and in 1 of 80 runs of that command with the machine busy)."""

from __future__ import annotations

import json
import subprocess
import sys

# In a fresh process: the threads each parse starts, read from /proc (Linux).
CHILD = r"""
import json, os
import pyarrow as pa
from core.sources import read_records

def threads():
    return len(os.listdir("/proc/self/task"))

hint = pa.schema([("id", pa.int64()), ("a", pa.string()), ("b", pa.int32())])
before = threads()
csv = read_records(b"id,a\n4,y\n", "csv", hint)
jsonl = read_records(b'{"id": 1, "a": "x"}\n', "jsonl", hint)
after = threads()
print(json.dumps({"started": after - before, "csv": csv.to_pylist(), "jsonl": jsonl.to_pylist()}))
"""


def test_a_stream_batch_is_parsed_without_starting_arrows_cpu_pool() -> None:
    out = json.loads(subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                                    check=True).stdout)
    assert out["csv"] == [{"id": 4, "a": "y"}]
    assert out["jsonl"] == [{"id": 1, "a": "x", "b": None}]
    # At most Arrow's IO thread, which any read starts; the CPU pool would add one thread per
    # core on top of it.
    assert out["started"] <= 1
