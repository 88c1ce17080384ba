#!/usr/bin/env bash
# The PostgreSQL client path against the MariaDB one: client CPU and
# system calls per LinkBench request over ampbench's own wire clients
# (ampbench-pgwire for PostgreSQL, ampbench-mywire for MariaDB), both
# servers started by ampbench, the same load, the engines interleaved
# (--repeat: A B, B A, A B…) so the machine's drift hits both. Prints each
# engine's mean with its 95% interval over the repetitions, and the ratio
# PostgreSQL / MariaDB with its interval (the delta method over the two
# means' intervals), and the consistency check's mismatches.
# Target: PostgreSQL's client CPU per request <= 1.2x MariaDB's.
# Usage: bench/pg-client.sh   (REPEAT=3 DURATION=20 THREADS=4: about 5 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
REPEAT=${REPEAT:-3}
DURATION=${DURATION:-20}
THREADS=${THREADS:-4}
BIN=target/release/ampbench
[ -x "$BIN" ] || cargo build --release
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ampbench-pgclient-XXXXXX")
# The servers run as their own users, who must reach their directories
# in it (search, not listing).
chmod 711 "$WORK"
trap 'rm -rf "$WORK"' EXIT
"$BIN" run -w linkbench -e mariadb-innodb,postgres --threads "$THREADS" --duration "$DURATION" \
  --repeat "$REPEAT" --results "$WORK/r.db" --dir "$WORK" > "$WORK/out.txt"
"$BIN" report --results "$WORK/r.db" --format json > "$WORK/r.json"
python3 - "$WORK/r.json" <<'PY'
import json, math, statistics, sys
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
steps = [s for s in json.load(open(sys.argv[1]))["steps"] if s["step"] == "request"]
by = {}
for s in steps:
    by.setdefault(s["engine"], []).append(s)
def figure(engine, key):
    return [s["extras"][key] for s in sorted(by[engine], key=lambda s: s["rep"])]
def mean_half(xs):
    m = statistics.mean(xs)
    if len(xs) < 2:
        return m, float("nan")
    return m, T95.get(len(xs) - 1, 1.96) * statistics.stdev(xs) / math.sqrt(len(xs))
print(f"== LinkBench client per request, {len(figure('postgres', 'client_cpu_us_per_request'))} repetitions each, engines interleaved")
for key, unit in [("client_cpu_us_per_request", "us CPU"), ("client_user_us_per_request", "us user"),
                  ("client_sys_us_per_request", "us system"), ("client_syscalls_per_request", "system calls"),
                  ("client_cs_per_request", "context switches")]:
    for e in ("mariadb-innodb", "postgres"):
        xs = figure(e, key)
        m, h = mean_half(xs)
        print(f"{e:<15} {unit:<17} {m:7.2f} (95% interval {m - h:.2f}-{m + h:.2f}; runs {', '.join(f'{x:.2f}' for x in xs)})")
my, pg = figure("mariadb-innodb", "client_cpu_us_per_request"), figure("postgres", "client_cpu_us_per_request")
(a, ha), (b, hb) = mean_half(pg), mean_half(my)
r = a / b
# The ratio's interval by the delta method on the two means' intervals.
h = r * math.sqrt((ha / a) ** 2 + (hb / b) ** 2)
verdict = "met" if r + h <= 1.2 else ("met on the mean, not on the interval" if r <= 1.2 else "NOT met")
print(f"ratio postgres / mariadb client CPU per request: {r:.3f} (95% interval {r - h:.3f}-{r + h:.3f}); target <= 1.2: {verdict}")
for e in ("mariadb-innodb", "postgres"):
    print(f"{e:<15} consistency mismatches: {sum(figure(e, 'consistency_mismatches')):.0f}")
PY
