#!/usr/bin/env bash
# The device model's own cost and accuracy (issue 32). Each round makes a
# device of each modelled class (disk-array, slow-ssd) and runs its probe;
# the model's process CPU over the probe, divided by the IOs it served, is
# the harness's CPU per IO (reported as the harness's, never the engine's;
# target <= 15 us, so slow-ssd's 10k IOPS cost at most 15% of a core). The
# QD1 error is the probe's QD1 read latency against the model's own (its
# positioning time plus a 4 KiB transfer), with the path's measured time
# taken off. Prints each class's mean with its 95% interval over ROUNDS,
# and the CPU ratio to the 15 us target. Needs root (loop device, FUSE).
# Usage: bench/device-model.sh   (ROUNDS=3: about 2 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
BIN=target/release/ampbench
[ -x "$BIN" ] || cargo build --release
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for r in $(seq 1 "$ROUNDS"); do
  for class in disk-array slow-ssd; do
    "$BIN" run -w micro -e null --steps fillseq -p num=1000 --storage "$class" \
      --device-size 2GB --warmup 0 --duration 1 --dir "$TMP" --results "$TMP/r.db" >"$TMP/out.$r.$class" 2>&1 ||
      { echo "round $r $class failed:"; tail -5 "$TMP/out.$r.$class"; exit 1; }
  done
done
python3 - "$TMP/r.db" <<'PY'
import json, math, sqlite3, statistics, sys
db = sqlite3.connect(sys.argv[1])
by = {}
for (cfg,) in db.execute("SELECT config FROM runs ORDER BY id"):
    s = json.loads(cfg)["storage_effective"]
    m = s.get("measured")
    if not isinstance(m, dict) or "model_cpu_us_per_io" not in m:
        sys.exit(f"{s.get('class')}: no model figures: {m}")
    by.setdefault(s["class"], []).append(
        (m["model_cpu_us_per_io"], m["model_qd1_error"], m["read_qd1"]["mean_us"],
         m["model_qd1_want_us"], s.get("model_path_us", float("nan")),
         m["model_counters"]["reads"] + m["model_counters"]["writes"] + m["model_counters"]["flushes"]))
T = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
def ci(xs):
    m = statistics.mean(xs)
    h = T.get(len(xs) - 1, 2.0) * statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else float("nan")
    return m, m - h, m + h
for c, rows in by.items():
    print(f"== {c}, {len(rows)} rounds")
    for cpu, err, got, want, path, ios in rows:
        print(f"  model CPU {cpu:6.1f} us/IO over {ios} IOs; QD1 read {got:7.0f} us vs model {want:7.0f} us "
              f"({err*100:+.1f}%); path {path:.0f} us")
    m, lo, hi = ci([r[0] for r in rows])
    print(f"  model CPU per IO {m:.1f} us (95% interval {lo:.1f}-{hi:.1f}); ratio to the 15 us target "
          f"{m/15:.2f} ({lo/15:.2f}-{hi/15:.2f})")
    m, lo, hi = ci([r[1] * 100 for r in rows])
    print(f"  QD1 latency error {m:+.1f}% (95% interval {lo:+.1f} to {hi:+.1f})")
PY
