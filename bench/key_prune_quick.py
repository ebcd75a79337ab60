"""Key-range scan (1% of ids) at 1M rows, 4 buckets, 2 sorted runs (10% updates): the
key-predicate-before-merge hook off (before) and on (after) in the same run. CPU seconds."""
import random, time, tempfile
import pyarrow as pa
import core.kernels.read as R
from core.ops.create import create
from core.table import Table
d = tempfile.mkdtemp()
t = Table.locate("db.t", warehouse=d + "/wh")
create(t, "id BIGINT NOT NULL, v BIGINT, s STRING", primary_keys=["id"], options={"bucket": "4"})
N = 1_000_000
ids = list(range(N)); random.Random(1).shuffle(ids)
t.write(pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(ids, pa.int64()), "s": [f"x{i}" for i in ids]}))
up = ids[: N // 10]
t.write(pa.table({"id": pa.array(up, pa.int64()), "v": pa.array([-1] * len(up), pa.int64()), "s": ["u"] * len(up)}))
lo = N // 2; hi = lo + N // 100
def run():
    c = time.process_time(); r = t.scan(where=f"id >= {lo} AND id < {hi}"); return time.process_time() - c, r.num_rows
# The hook is the early filter of each file's records; row-group pruning stays on in both.
orig = R.keep_matching_keys
off = lambda table, condition: table  # noqa: E731
for label, fn in [("before (hook off)", off), ("after", orig), ("before (hook off)", off), ("after", orig)]:
    R.keep_matching_keys = fn
    print(label, "cpu %.3fs rows %d" % run())
