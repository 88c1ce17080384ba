#!/usr/bin/env bash
# A long run holds: LinkBench requests at 16 threads for 30 minutes on
# mariadb-innodb and postgres (one after the other). ampbench's own RSS is
# sampled every minute; the script prints each engine's RSS slope over
# the request step after its first 5 minutes (cache fill) (MB per hour,
# with a 95% interval),
# the request step's status and error, and the consistency check's
# mismatches. In `make bench` (an hour); not part of CI.
# Target (issue 31): as the SQL client, a slope of at most 5 MB/h; the
# line says whether the 95% interval's upper end is within it.
# Usage: bench/soak.sh   (MINUTES=30 THREADS=16 MAXID1=200001 ENGINES=mariadb-innodb,postgres)
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${MINUTES:-30}
THREADS=${THREADS:-16}
MAXID1=${MAXID1:-200001}
ENGINES=${ENGINES:-mariadb-innodb,postgres}
BIN=${BIN:-target/release/ampbench}
[ -x "$BIN" ] || cargo build --release
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ampbench-soak-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# The servers run as their own users (mysql, postgres): they must enter it.
chmod 711 "$WORK"
for e in ${ENGINES//,/ }; do
  # -v: each step's line as it ends (the loop below waits for them).
  "$BIN" run -v -w linkbench -e "$e" --steps load,request -p maxid1="$MAXID1" \
    --threads "$THREADS" --warmup 0 --duration "${MINUTES}m" --interval 60 \
    --results "$WORK/$e.db" --dir "$WORK" > "$WORK/$e.out" 2>&1 &
  pid=$!
  : > "$WORK/$e.rss"
  t0=$(date +%s)
  next=0
  req=""
  # Sampled while the request step runs: its summary line ends it (after
  # it the check and the exit free the client's memory).
  while kill -0 "$pid" 2>/dev/null && ! grep -q '^  request ' "$WORK/$e.out"; do
    now=$(( $(date +%s) - t0 ))
    # The load's summary line: the request step starts.
    if [ -z "$req" ] && grep -q '^  load ' "$WORK/$e.out"; then
      req=$now; echo "$req" > "$WORK/$e.req"
    fi
    if [ "$now" -ge "$next" ]; then
      rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
      [ -n "$rss" ] && echo "$now $rss" >> "$WORK/$e.rss"
      next=$(( next + 60 ))
    fi
    sleep 1
  done
  rc=0; wait "$pid" || rc=$?
  "$BIN" report --results "$WORK/$e.db" --format json > "$WORK/$e.json" || true
  python3 - "$e" "$rc" "$WORK/$e.rss" "$WORK/$e.json" "$WORK/$e.out" "${req:-0}" <<'PY'
import json, math, sys
engine, rc, rss_path, json_path, out_path, req = sys.argv[1:]
pts = [tuple(map(float, l.split())) for l in open(rss_path) if l.strip()]
# The load and the first 5 minutes of requests fill caches and pools.
late = [p for p in pts if p[0] >= float(req) + 300]
print(f"{engine}: exit {rc}, {len(pts)} RSS samples over {pts[-1][0] / 60 if pts else 0:.1f} min")
if pts:
    print(f"  RSS first {pts[0][1] / 1024:.0f} MB, peak {max(r for _, r in pts) / 1024:.0f} MB, last {pts[-1][1] / 1024:.0f} MB")
if len(late) >= 3:
    n = len(late)
    mt = sum(t for t, _ in late) / n
    mr = sum(r for _, r in late) / n
    sxx = sum((t - mt) ** 2 for t, _ in late)
    b = sum((t - mt) * (r - mr) for t, r in late) / sxx
    a = mr - b * mt
    res = sum((r - a - b * t) ** 2 for t, r in late)
    se = math.sqrt(res / (n - 2) / sxx)
    # t quantiles (95%, two-sided) for small n.
    tq = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23,
          15: 2.13, 20: 2.09, 25: 2.06, 30: 2.04}
    q = tq.get(n - 2) or next((v for k, v in sorted(tq.items()) if k >= n - 2), 1.96)
    per_h = 3600 / 1024
    hi = b * per_h + q * se * per_h
    print(f"  RSS slope after the request step's first 5 min: {b * per_h:+.1f} MB/h (95% {b * per_h - q * se * per_h:+.1f} .. {hi:+.1f}), {n} samples; target <= 5 MB/h: {'met' if hi <= 5 else 'NOT met'}")
else:
    print("  RSS slope: not measured (fewer than 3 samples after the first 5 minutes)")
try:
    j = json.load(open(json_path))
    for s in j["steps"]:
        if s["step"] in ("load", "request"):
            ex = s.get("extras", {})
            mm = ex.get("consistency_mismatches")
            print(f"  {s['step']}: {s['status']}, {s['ops']:.0f} ops, {s['ops_per_sec']:.0f} ops/s"
                  + (f", error: {s['error']}" if s.get("error") else "")
                  + (f", consistency mismatches {mm:.0f} of {ex.get('consistency_pairs', 0):.0f} pairs" if mm is not None else ""))
except Exception as e:
    print(f"  no report: {e}; output tail:")
    print("".join(open(out_path).readlines()[-5:]))
PY
done
