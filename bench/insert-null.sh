#!/usr/bin/env bash
# How fast the insert benchmark's client makes rows when the engine does
# nothing (the null engine): l.i0 with the three secondary indexes'
# entries encoded (a load without l.x writes them), one client, ROUNDS
# rounds. Target: >= 1M rows per CPU-second of the whole process, so the
# client is never the bottleneck (the reference Python client's known
# flaw). Prints rows/s and rows per CPU-second with a 95% t-interval, and
# the ratio to the target.
# Usage: bench/insert-null.sh   (ROWS=3000000 ROUNDS=5 BIN=target/release/ampbench)
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-3000000}
ROUNDS=${ROUNDS:-5}
BIN=${BIN:-target/release/ampbench}
[ -x "$BIN" ] || cargo build --release
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ampbench-insnull-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
for r in $(seq 1 "$ROUNDS"); do
  "$BIN" run -w insert -e null --steps l.i0 -p load_rows="$ROWS" -p check=false \
    --threads 1 --results "$WORK/r.db" --dir "$WORK" > "$WORK/out.txt"
done
for r in $(seq 1 "$ROUNDS"); do
  "$BIN" report --results "$WORK/r.db" --run "$r" --format json
done > "$WORK/r.json"
python3 - "$WORK/r.json" <<'PY'
import json, sys, statistics
text = open(sys.argv[1]).read()
dec, runs, i = json.JSONDecoder(), [], 0
while i < len(text):
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text):
        break
    v, i = dec.raw_decode(text, i)
    runs.extend(v if isinstance(v, list) else [v])
rate, per_cpu = [], []
for r in runs:
    s = [x for x in r["steps"] if x["step"] == "l.i0"][0]
    rate.append(s["ops_per_sec"])
    per_cpu.append(1e6 / s["cpu_us_per_op"])
# Student's t, 97.5th percentile, for n-1 degrees of freedom.
T = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}
def ci(xs):
    m = statistics.mean(xs)
    if len(xs) < 2:
        return m, m, m
    h = T.get(len(xs) - 1, 2.0) * statistics.stdev(xs) / len(xs) ** 0.5
    return m, m - h, m + h
m, lo, hi = ci(rate)
print(f"insert generator on the null engine, 1 client, 3 secondary indexes, {len(rate)} rounds")
print(f"  rows/s:            {m / 1e6:.2f} M (95% CI {lo / 1e6:.2f}-{hi / 1e6:.2f})")
m, lo, hi = ci(per_cpu)
print(f"  rows per CPU-s:    {m / 1e6:.2f} M (95% CI {lo / 1e6:.2f}-{hi / 1e6:.2f})")
print(f"  ratio to target (1 M rows per CPU-s): {m / 1e6:.2f} ({lo / 1e6:.2f}-{hi / 1e6:.2f})")
PY
