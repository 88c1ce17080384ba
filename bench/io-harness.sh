#!/usr/bin/env bash
# Is the harness the bottleneck when IO-bound? On the disk-array class
# (1,000 IOPS), RocksDB point reads with direct IO and an 8 MB cache make
# about one device read each. The device reads per second they reach at
# QD1 (pq.1, one thread) and QD16 (pq.n, 16 threads) are divided by what the
# class probe measured on the same device at the same queue depth, in the
# same run. A ratio near 1 means the harness keeps the device as busy as a
# bare O_DIRECT loop; the target is >= 0.90. Runs ROUNDS times and prints
# the mean ratio with its 95% interval. Needs root (loop device, cgroup).
# Usage: bench/io-harness.sh   (ROUNDS=3: about 2 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
BIN=target/release/ampbench
[ -x "$BIN" ] || cargo build --release
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for r in $(seq 1 "$ROUNDS"); do
  "$BIN" run -e rocksdb --steps load,pq.1,pq.n --threads 16 -p docs=300000 \
    --storage disk-array --memory 256MB --cache 8MB --device-size 2GB \
    --warmup 2 --duration 10 --interval 100 --dir "$TMP" --results "$TMP/r.db" >"$TMP/out.$r" 2>&1 ||
    { echo "round $r failed:"; tail -5 "$TMP/out.$r"; exit 1; }
done
python3 - "$TMP/r.db" <<'PY'
import json, math, sqlite3, statistics, sys
db = sqlite3.connect(sys.argv[1])
rows = []
for run_id, cfg in db.execute("SELECT id, config FROM runs ORDER BY id"):
    m = json.loads(cfg)["storage_effective"].get("measured")
    if not isinstance(m, dict):
        sys.exit(f"run {run_id}: the class probe did not run: {m}")
    def reads_per_sec(step):
        q = """SELECT f.name, f.value FROM figures f JOIN steps s ON s.id = f.step_id
               WHERE s.run_id = ? AND s.step = ? AND f.interval_idx = -1"""
        f = dict(db.execute(q, (run_id, step)).fetchall())
        return f["r_per_op"] * f["ops_per_sec"], f["r_per_op"]
    (q1, ro1), (q8, ro8) = reads_per_sec("pq.1"), reads_per_sec("pq.n")
    rows.append((q1 / m["read_qd1"]["ops_per_sec"], q8 / m["full"]["read_qd16"]["ops_per_sec"],
                 q1, m["read_qd1"]["ops_per_sec"], q8, m["full"]["read_qd16"]["ops_per_sec"], ro1, ro8))
print(f"== harness vs bare O_DIRECT reads on disk-array, {len(rows)} rounds")
for r in rows:
    print(f"  QD1: {r[2]:7.0f} device reads/s (r/o {r[6]:.2f}) / probe {r[3]:7.0f} = {r[0]:.3f}   "
          f"QD16: {r[4]:7.0f} (r/o {r[7]:.2f}) / probe {r[5]:7.0f} = {r[1]:.3f}")
def show(name, xs):
    m = statistics.mean(xs)
    # Student's t at 95%, two-sided, for n - 1 degrees of freedom.
    t = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}.get(len(xs) - 1, 2.0)
    half = t * statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else float("nan")
    print(f"{name:<10} ratio {m:.3f}  (95% interval {m-half:.3f}-{m+half:.3f}, range {min(xs):.3f}-{max(xs):.3f})  target >= 0.90")
show("QD1", [r[0] for r in rows])
show("QD16", [r[1] for r in rows])
PY
