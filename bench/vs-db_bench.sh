#!/usr/bin/env bash
# Loads the same keys with Debian's db_bench (RocksDB 7.8.3, the same library
# ampbench links) and with `ampbench -w micro`, same options, one thread, and
# prints fillrandom and readrandom ops/s of both and their ratio.
# Both wait for compactions after the fill (db_bench waitforcompaction,
# ampbench --settle), so reads meet the same LSM shape. The two tools run
# alternately for ROUNDS rounds (the machine is shared and noisy: compare
# only ratios taken in one run); the means are compared.
# Targets: ampbench >= 0.97x db_bench on readrandom, >= 0.95x on fillrandom.
# Usage: bench/vs-db_bench.sh   (NUM=1000000 DURATION=10 ROUNDS=2 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
NUM=${NUM:-1000000}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-2}
BIN=target/release/ampbench
DB_BENCH=$(command -v db_bench || true)
[ -n "$DB_BENCH" ] || { echo "db_bench not found: run make deps (package rocksdb-tools)"; exit 1; }
[ -x "$BIN" ] || cargo build --release
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ampbench-bench-XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# One set of options for both (ampbench's RocksDB defaults, statistics off).
COMMON="--key_size=16 --value_size=100 --compression_ratio=0.5 --compression_type=snappy \
 --bloom_bits=10 --cache_size=268435456 --write_buffer_size=67108864 --max_background_jobs=2 \
 --level_compaction_dynamic_level_bytes=true --statistics=0 --threads=1 --seed=1"

echo "== db_bench $("$DB_BENCH" --version 2>/dev/null | head -1) vs ampbench micro, num=$NUM, readrandom ${DURATION}s, $ROUNDS rounds"
: > "$WORK/rows"
for r in $(seq 1 "$ROUNDS"); do
  rm -rf "$WORK/db_bench" "$WORK"/ampbench-rocksdb-* "$WORK/r.db"*
  "$DB_BENCH" --benchmarks=fillrandom,waitforcompaction --num="$NUM" --db="$WORK/db_bench" $COMMON > "$WORK/fill.txt" 2>&1
  "$DB_BENCH" --benchmarks=readrandom --use_existing_db=1 --num="$NUM" --duration="$DURATION" --db="$WORK/db_bench" $COMMON > "$WORK/read.txt" 2>&1
  dbb_fill=$(awk '/^fillrandom/ {for (i=1;i<=NF;i++) if ($i=="ops/sec") print $(i-1)}' "$WORK/fill.txt")
  dbb_read=$(awk '/^readrandom/ {for (i=1;i<=NF;i++) if ($i=="ops/sec") print $(i-1)}' "$WORK/read.txt")
  dbb_found=$(grep -o '([0-9]* of [0-9]* found)' "$WORK/read.txt" | head -1)
  "$BIN" run -w micro -e rocksdb --steps fillrandom,readrandom -p num="$NUM" --threads 1 \
    --warmup 0 --duration "$DURATION" --settle --set rocksdb.statistics=false \
    --results "$WORK/r.db" --dir "$WORK" > "$WORK/amp.txt"
  "$BIN" report --results "$WORK/r.db" --format json > "$WORK/amp.json"
  python3 - "$WORK/amp.json" "$dbb_fill" "$dbb_read" "$dbb_found" "$r" >> "$WORK/rows" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
s = {x["step"]: x for x in j["steps"]}
print(sys.argv[5], sys.argv[2], s["fillrandom"]["ops_per_sec"], sys.argv[3], s["readrandom"]["ops_per_sec"],
      s["readrandom"]["extras"].get("found_pct", 0), sys.argv[4].replace(" ", "_"))
PY
done
python3 - "$WORK/rows" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
print(f"\n{'round':<6} {'fill db_bench':>14} {'fill ampbench':>14} {'ratio':>6} {'read db_bench':>14} {'read ampbench':>14} {'ratio':>6}")
for r in rows:
    fd, fa, rd, ra = map(float, r[1:5])
    print(f"{r[0]:<6} {fd:>14.0f} {fa:>14.0f} {fa/fd:>6.3f} {rd:>14.0f} {ra:>14.0f} {ra/rd:>6.3f}")
mean = lambda i: sum(float(r[i]) for r in rows) / len(rows)
print(f"{'mean':<6} {mean(1):>14.0f} {mean(2):>14.0f} {mean(2)/mean(1):>6.3f} {mean(3):>14.0f} {mean(4):>14.0f} {mean(4)/mean(3):>6.3f}")
print(f"found rate in readrandom: db_bench {rows[-1][6].replace('_', ' ')}, ampbench {float(rows[-1][5]):.1f}% "
      "(both fill with replacement, so ~63% of keys exist; db_bench's thread 0 replays the fill's keys)")
PY
