#!/usr/bin/env bash
# The lifecycle on a local warehouse: create, write with updates and deletes, scan, history.
set -euo pipefail
cd "$(dirname "$0")/.."
L=.venv/bin/lakectl
WH=${LAKECTL_WAREHOUSE:-./warehouse}
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT

cat > "$data/orders.csv" <<'CSV'
id,customer,amount,dt
1,alice,10.50,2024-01-01
2,bob,20.25,2024-01-01
3,carol,5.00,2024-01-02
4,dave,7.75,2024-01-02
CSV
cat > "$data/changes.csv" <<'CSV'
op,id,customer,amount,dt
+U,2,bob,22.00,2024-01-01
-D,3,,,2024-01-02
+I,5,erin,3.10,2024-01-03
CSV

echo "== create demo.orders in $WH"
$L --warehouse "$WH" create demo.orders --if-not-exists \
   --schema "id BIGINT, customer STRING, amount DECIMAL(10, 2), dt STRING" \
   --primary-key id,dt --partition-by dt --option bucket=2
echo "== write the first batch"
$L --warehouse "$WH" write demo.orders --input "$data/orders.csv"
echo "== write updates and deletes (CDC)"
$L --warehouse "$WH" write demo.orders --input "$data/changes.csv" --row-kind-column op
echo "== scan the latest snapshot"
$L --warehouse "$WH" scan demo.orders
echo "== scan as of the first snapshot"
first=$($L --warehouse "$WH" snapshots demo.orders --format jsonl | tail -n 1 | sed 's/.*"snapshot_id": \([0-9]*\).*/\1/')
$L --warehouse "$WH" scan demo.orders --snapshot-id "$first"
echo "== snapshot history"
$L --warehouse "$WH" snapshots demo.orders
