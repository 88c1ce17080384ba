#!/usr/bin/env bash
# Loads the same keys with Debian's db_bench (RocksDB 7.8.3, the same library
# ampbench links) and with `ampbench -w micro`, same options, one thread, and
# prints fillrandom and readrandom ops/s of both with their ratio.
# Both wait for compactions after the fill (db_bench waitforcompaction,
# ampbench --settle), so reads meet the same LSM shape.
# Targets: ampbench >= 0.97x db_bench on readrandom, >= 0.95x on fillrandom.
# Usage: bench/vs-db_bench.sh   (NUM=1000000 DURATION=10 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
NUM=${NUM:-1000000}
DURATION=${DURATION:-10}
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

echo "== db_bench $("$DB_BENCH" --version 2>/dev/null | head -1) num=$NUM duration=${DURATION}s"
"$DB_BENCH" --benchmarks=fillrandom,waitforcompaction --num="$NUM" --db="$WORK/db_bench" $COMMON > "$WORK/fill.txt" 2>&1
"$DB_BENCH" --benchmarks=readrandom --use_existing_db=1 --num="$NUM" --duration="$DURATION" --db="$WORK/db_bench" $COMMON > "$WORK/read.txt" 2>&1
dbb_fill=$(awk '/^fillrandom/ {for (i=1;i<=NF;i++) if ($i=="ops/sec") print $(i-1)}' "$WORK/fill.txt")
dbb_read=$(awk '/^readrandom/ {for (i=1;i<=NF;i++) if ($i=="ops/sec") print $(i-1)}' "$WORK/read.txt")
dbb_found=$(grep -o '([0-9]* of [0-9]* found)' "$WORK/read.txt" | head -1)

echo "== ampbench micro on rocksdb"
"$BIN" run -w micro -e rocksdb --steps fillrandom,readrandom -p num="$NUM" --threads 1 \
  --warmup 0 --duration "$DURATION" --settle --set rocksdb.statistics=false \
  --results "$WORK/r.db" --dir "$WORK" > "$WORK/amp.txt"
"$BIN" report --results "$WORK/r.db" --format json > "$WORK/amp.json"
read -r amp_fill amp_read amp_found < <(python3 - "$WORK/amp.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
s = {x["step"]: x for x in j["steps"]}
print(s["fillrandom"]["ops_per_sec"], s["readrandom"]["ops_per_sec"], s["readrandom"]["extras"].get("found_pct", "?"))
PY
)
printf '\n%-12s %14s %14s %8s\n' step db_bench ampbench ratio
for step in fillrandom readrandom; do
  if [ $step = fillrandom ]; then a=$amp_fill; b=$dbb_fill; else a=$amp_read; b=$dbb_read; fi
  printf '%-12s %14.0f %14.0f %8.3f\n' "$step" "$b" "$a" "$(python3 -c "print($a/$b)")"
done
echo "found rate: db_bench readrandom $dbb_found; ampbench ${amp_found}% (both fill with replacement: ~63% exists)"
