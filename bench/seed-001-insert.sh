#!/usr/bin/env bash
# The insert benchmark as the seed posts run it (../shared/seeds/001_*.txt:
# "RocksDB does much better than ... the WiredTiger B-Tree when the
# database is larger than RAM because it is more IO efficient. RocksDB
# doesn't read index pages during non-unique secondary index
# maintenance"), at this machine's scale.
#
# 1. Both corners, one ampbench run each: rocksdb and wiredtiger (KV
#    mapping), mariadb-innodb, mariadb-myrocks and postgres (SQL), CLIENTS
#    clients with a table each, l.i0 → l.x → l.i1 → l.i2 → debt → qr100 →
#    qp100 on the STORAGE class; cached with a CACHE engine cache and no
#    memory limit (at the default 256MB WiredTiger's 0.6 GB database did
#    not fit its cache: 1.1 ms of CPU per insert), IO-bound under MEMORY
#    (the engine cache a quarter of it; the databases grow past it). Prints the seed-style table: ips
#    of each write step and r/i, rKB/i, wKB/i of l.i1 (where secondary
#    index maintenance happens), and qps of the query steps, per engine
#    per corner, then io/cache ratios.
# 2. Concurrency, cached (CACHE), unthrottled: l.i0, l.x, l.i1 at 1, 2, 4 and 8
#    clients (a fresh database each, as the seed reloads per level);
#    prints l.i1's ips per engine per level, like the seed's table.
# The consistency check is skipped here (-p check=false: it scans every
# table after each step, slow past the memory limit); the tests check it.
# About 20 minutes here with the defaults; not run by CI.
#
#   ROWS=1000000 I1=50000 I2=10000 CLIENTS=2 CACHE=2GB MEMORY=512MB STORAGE=slow-ssd \
#   DURATION=20 LEVELS="1 2 4 8" bench/seed-001-insert.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/ampbench}
ENGINES=${ENGINES:-rocksdb,wiredtiger,mariadb-innodb,mariadb-myrocks,postgres}
ROWS=${ROWS:-1000000}
I1=${I1:-50000}
I2=${I2:-10000}
CACHE=${CACHE:-2GB}
CLIENTS=${CLIENTS:-2}
MEMORY=${MEMORY:-512MB}
PARTS=${PARTS:-cached io concurrency}
STORAGE=${STORAGE:-slow-ssd}
DURATION=${DURATION:-20}
WARMUP=${WARMUP:-2}
LEVELS=${LEVELS:-1 2 4 8}
C_ROWS=${C_ROWS:-100000}
C_I1=${C_I1:-20000}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
[ -x "$BIN" ] || cargo build --release -q
RES="$OUT/seed-001.db"
echo "seed 001: insert benchmark, $CLIENTS clients x $ROWS rows, l.i1 $I1 + l.i2 $I2 rows per client, io corner at $MEMORY, storage $STORAGE; results $RES"
COMMON=(-w insert -e "$ENGINES" --threads "$CLIENTS" --storage "$STORAGE"
  --steps l.i0,l.x,l.i1,l.i2,debt,qr100,qp100 -p "load_rows=$ROWS" -p "i1_rows=$I1"
  -p "i2_rows=$I2" -p check=false --warmup "$WARMUP" --duration "$DURATION" --results "$RES")
# PARTS picks what runs again; the tables read the latest run of each
# corner in the results file.
# A failed step (an engine killed at the limit) fails the run's exit code;
# the other engines' figures are kept and printed.
run() { "$BIN" run "$@" || echo "(ampbench exited $?: see the output file)"; }
case " $PARTS " in *" cached "*) run "${COMMON[@]}" --cache "$CACHE" > "$OUT/cached.txt" ;; esac
case " $PARTS " in *" io "*) run "${COMMON[@]}" --bound io --memory "$MEMORY" > "$OUT/io.txt" ;; esac
CONC="$OUT/concurrency.db"
case " $PARTS " in *" concurrency "*)
  rm -f "$CONC"
  for n in $LEVELS; do
    run -w insert -e "$ENGINES" --threads "$n" --steps l.i0,l.x,l.i1 --cache "$CACHE" \
      -p "load_rows=$C_ROWS" -p "i1_rows=$C_I1" -p check=false --results "$CONC" > "$OUT/concurrency-$n.txt"
  done ;;
esac
python3 - "$OUT" "$LEVELS" <<'PY'
import json, subprocess, sys
out, levels = sys.argv[1], sys.argv[2].split()
bin_ = "target/release/ampbench"
def report(db, run):
    return json.loads(subprocess.check_output([bin_, "report", "--results", db, "--run", str(run), "--format", "json"]))
# The latest run of each corner in the file.
latest = report(f"{out}/seed-001.db", "latest")["run"]["id"]
by, used = {}, {}
for i in range(1, latest + 1):
    r = report(f"{out}/seed-001.db", i)
    bound = r["run"]["config"]["bound"]
    used[bound] = (i, r["run"]["config"]["memory"], r["run"]["config"]["cache_bytes"])
    for s in r["steps"]:
        by[(bound, s["engine"], s["step"])] = s
for b, (i, m, c) in sorted(used.items()):
    print(f"{b}: run {i}, memory {m and f'{m >> 20}MB' or 'unlimited'}, engine cache {c >> 20}MB")
bounds = sorted({k[0] for k in by})
engines = []
for k in by:
    if k[1] not in engines:
        engines.append(k[1])
def g(b, e, st, f):
    s = by.get((b, e, st))
    v = s.get(f) if s else None
    return v
print("\nseed style: inserts/s per step, l.i1's IO per insert, queries/s (both corners)")
print(f"{'corner':<7} {'engine':<16} {'l.i0':>9} {'l.x s':>7} {'l.i1':>8} {'l.i2':>8} {'r/i':>7} {'rKB/i':>7} {'wKB/i':>7} {'qr100':>8} {'qp100':>8} {'db.gb':>6}")
for b in bounds:
    for e in engines:
        f = lambda st, k: g(b, e, st, k)
        def n(v, p=0):
            return "-" if v is None else f"{v:.{p}f}"
        print(f"{b:<7} {e:<16} {n(f('l.i0','ops_per_sec')):>9} {n(f('l.x','secs'),1):>7} {n(f('l.i1','ops_per_sec')):>8} "
              f"{n(f('l.i2','ops_per_sec')):>8} {n(f('l.i1','r_per_op'),3):>7} {n(f('l.i1','rkb_per_op'),2):>7} {n(f('l.i1','wkb_per_op'),2):>7} "
              f"{n(f('qr100','ops_per_sec')):>8} {n(f('qp100','ops_per_sec')):>8} {n((f('qp100','db_bytes') or 0)/1e9,3):>6}")
if len(bounds) == 2:
    print("\nio / cache, per engine: l.i1 ips and qp100 qps (the seed: the LSM keeps its insert rate past memory, the B-Tree does not)")
    for e in engines:
        def ratio(st):
            a, b = g("io", e, st, "ops_per_sec"), g("cache", e, st, "ops_per_sec")
            return f"{a / b:.2f}" if a and b else "-"
        print(f"  {e:<16} l.i1 {ratio('l.i1'):>6}   l.i2 {ratio('l.i2'):>6}   qp100 {ratio('qp100'):>6}")
print("\nconcurrency (cached, unthrottled): l.i1 inserts/s at each client count")
rows = {}
for i, n in enumerate(levels, start=1):
    r = report(f"{out}/concurrency.db", i)
    for s in r["steps"]:
        if s["step"] == "l.i1":
            rows.setdefault(s["engine"], {})[n] = s["ops_per_sec"]
print(f"{'engine':<16}" + "".join(f"{n:>10}" for n in levels))
for e, v in rows.items():
    print(f"{e:<16}" + "".join(f"{v.get(n, 0):>10.0f}" for n in levels))
PY
