#!/usr/bin/env bash
# The seed post "Compaction priority in RocksDB" (../shared/seeds/004_*.txt)
# at this machine's scale: plans/seeds/004-compaction-pri.toml, LinkBench
# on MyRocks with compaction_pri swept over its four values, each on a
# fresh database, and the bytes written per column family: total (flush +
# compaction), ingest (flush) and write-amp = total / ingest, per setting.
#
# The plan scales the levels down (1 MB memtables and files, a 512 KB
# base level, dynamic level sizes) so maxid1 = 500k has 3 levels below
# L0, one fewer than the post's worked-out 4; the
# script says after which step each family had data in two levels or
# more below L0. Sums are over the whole engine run (load, index,
# requests), as the post's were over its whole run. About 90 minutes with
# the plan's settings; not run by CI. ENGINES=…,rocksdb adds embedded
# RocksDB with the same sweep and shape.
#
#   MAXID1=500001 DURATION=1200 THREADS=4 bench/seed-004-compaction-pri.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/ampbench}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
RES="$OUT/seed-004.db"
PRI=kByCompensatedSize,kOldestLargestSeqFirst,kOldestSmallestSeqFirst,kMinOverlappingRatio
[ -x "$BIN" ] || cargo build --release -q
ARGS=()
[ -n "${MAXID1:-}" ] && ARGS+=(-p "maxid1=$MAXID1")
[ -n "${DURATION:-}" ] && ARGS+=(--duration "$DURATION")
[ -n "${THREADS:-}" ] && ARGS+=(--threads "$THREADS")
if [ -n "${ENGINES:-}" ]; then
  ARGS+=(-e "$ENGINES")
  IFS=, read -r -a ENGS <<< "$ENGINES"
  for e in "${ENGS[@]}"; do
    [ "$e" = mariadb-myrocks ] && continue
    ARGS+=(--sweep "$e.compaction_pri=$PRI")
    for kv in write_buffer_size=1048576 max_bytes_for_level_base=524288 target_file_size_base=1048576 level_compaction_dynamic_level_bytes=true; do
      ARGS+=(--set "$e.$kv")
    done
  done
fi
echo "seed 004: plans/seeds/004-compaction-pri.toml ${ARGS[*]:-}; results $RES"
start=$(date +%s)
"$BIN" run plans/seeds/004-compaction-pri.toml "${ARGS[@]}" --yes \
  --results "$RES" > "$OUT/run.txt" || { tail -40 "$OUT/run.txt"; exit 1; }
echo "ran in $(( $(date +%s) - start ))s; the run's output: $OUT/run.txt"
sed -n '/^seed post /,/^results: /p' "$OUT/run.txt" | grep -v '^results: '
python3 - "$RES" <<'EOF'
import re, sqlite3, sys
from collections import defaultdict

c = sqlite3.connect(sys.argv[1])
run = c.execute("SELECT max(id) FROM runs").fetchone()[0]
steps = c.execute("SELECT id, engine, step, status FROM steps WHERE run_id = ? ORDER BY ordinal", (run,)).fetchall()
# Per setting: per column family, MB flushed and compacted over the run.
flush = defaultdict(lambda: defaultdict(float))
comp = defaultdict(lambda: defaultdict(float))
past_l1 = defaultdict(dict)
failed = []
for sid, engine, step, status in steps:
    if status != "done":
        failed.append(f"{engine} {step}: {status}")
    for name, v in c.execute("SELECT name, value FROM extras WHERE step_id = ?", (sid,)):
        m = re.fullmatch(r"cf\.(.+)\.(flush|compaction)_mb", name)
        if m:
            (flush if m.group(2) == "flush" else comp)[engine][m.group(1)] += v
    levels = defaultdict(set)
    for name, v in c.execute("SELECT name, value FROM engine_stats WHERE step_id = ? AND name LIKE 'compaction.size_bytes.L%'", (sid,)):
        lvl, cf = name.split(".", 3)[2:]
        if v and v > 0 and lvl != "L0":
            levels[cf].add(lvl)
    for cf, ls in levels.items():
        if len(ls) >= 2:
            past_l1[engine].setdefault(cf, step)
for f in failed:
    print("not done:", f)
pri = ["kByCompensatedSize", "kOldestLargestSeqFirst", "kOldestSmallestSeqFirst", "kMinOverlappingRatio"]
by_engine = defaultdict(list)
for e in flush:
    base = e.split("[")[0]
    by_engine[base].append(e)
for base, settings in by_engine.items():
    cfs = sorted({cf for s in settings for cf in flush[s] if cf not in ("__system__",)})
    print(f"\n{base}: MB written per column family over the run, total = flush + compaction, ingest = flush, w-amp = total / ingest")
    print(f"{'compaction_pri':<26}" + "".join(f"{cf:>30}" for cf in cfs) + f"{'all: total/ingest w-amp':>30}")
    totals = {}
    for p in pri:
        s = f"{base}[compaction_pri={p}]"
        if s not in flush:
            print(f"{p:<26} not run")
            continue
        row = f"{p:<26}"
        tt = ti = 0.0
        for cf in cfs:
            fl, co = flush[s].get(cf, 0.0), comp[s].get(cf, 0.0)
            tt += fl + co
            ti += fl
            row += f"{f'{fl + co:.0f}/{fl:.0f} {((fl + co) / fl) if fl else 0:.2f}':>30}"
        totals[p] = tt
        row += f"{f'{tt:.0f}/{ti:.0f} {(tt / ti) if ti else 0:.2f}':>30}"
        print(row)
    for s in settings:
        late = {cf: st for cf, st in past_l1[s].items()}
        missing = [cf for cf in cfs if cf not in late]
        print(f"  {s}: past L1 after " + ", ".join(f"{cf} {st}" for cf, st in sorted(late.items()))
              + (f"; not past L1: {', '.join(missing)}" if missing else ""))
    if len(totals) >= 2:
        lo = min(totals, key=totals.get)
        hi = max(totals, key=totals.get)
        print(f"  most/least total writes: {totals[hi] / totals[lo]:.2f}x ({hi} {totals[hi]:.0f} MB / {lo} {totals[lo]:.0f} MB)")
        print("  post: least kOldestSmallestSeqFirst, most kOldestLargestSeqFirst, 1.34x between them")
        holds = lo == "kOldestSmallestSeqFirst" and hi == "kOldestLargestSeqFirst"
        print(f"  here: least {lo}, most {hi}: the post's ordering {'holds' if holds else 'does not hold'}")
EOF
