#!/usr/bin/env bash
# The device model's own cost and accuracy (issues 32, 48). Each round
# makes a device of each modelled class (disk-array, slow-ssd) with each
# server (SERVERS: the reference `threads`, a thread per IO in flight;
# `fuse-dev`, one event loop over /dev/fuse; `uring`, FUSE over io_uring
# with a loop per CPU) and runs the class probe. The model's process CPU
# over the probe, divided by the IOs it served, is the harness's CPU per
# IO (target <= 15 us, so slow-ssd's 10k IOPS cost at most 15% of a
# core). The QD1 error is the probe's QD1 read latency against the
# model's own (its positioning time plus a 4 KiB transfer), with the
# path's measured time taken off. Prints each class and server's mean
# with its 95% interval over ROUNDS, the CPU ratio to the 15 us target
# and to the reference server (same rounds, interleaved), and the probe's
# figures beside the reference's, and what one timed sleep costs in CPU
# on this machine (the floor of a loop that sleeps once per IO, measured
# by the probe in the same round). Needs root (loop device, FUSE).
# LOAD=1 runs a CPU hog on every core meanwhile ("under other work").
# Usage: bench/device-model.sh   (ROUNDS=3, 3 servers: about 6 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SERVERS=${SERVERS:-threads fuse-dev uring}
BIN=target/release/ampbench
[ -x "$BIN" ] || cargo build --release
TMP=$(mktemp -d)
HOGS=()
cleanup() { for p in "${HOGS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT
if [ "${LOAD:-0}" = 1 ]; then
  for _ in $(seq 1 "$(nproc)"); do (while :; do :; done) & HOGS+=($!); done
  echo "== under load: $(nproc) busy loops"
fi
for r in $(seq 1 "$ROUNDS"); do
  for server in $SERVERS; do
    for class in disk-array slow-ssd; do
      AMPBENCH_DEVICE_LOOP=$server "$BIN" run -w micro -e null --steps fillseq -p num=1000 --storage "$class" \
        --device-size 2GB --warmup 0 --duration 1 --dir "$TMP" --results "$TMP/r.db" >"$TMP/out.$r.$server.$class" 2>&1 ||
        { echo "round $r $server $class failed:"; tail -5 "$TMP/out.$r.$server.$class"; exit 1; }
    done
  done
done
python3 - "$TMP/r.db" <<'PY'
import json, math, sqlite3, statistics, sys
db = sqlite3.connect(sys.argv[1])
by = {}
for (cfg,) in db.execute("SELECT config FROM runs ORDER BY id"):
    s = json.loads(cfg)["storage_effective"]
    name = s.get("model_server", "threads:").split(":")[0]
    m = s.get("measured")
    if not isinstance(m, dict) or "model_cpu_us_per_io" not in m:
        sys.exit(f"{name} {s.get('class')}: no model figures: {m}")
    c = m["model_counters"]
    by.setdefault((s["class"], name), []).append(dict(
        cpu=m["model_cpu_us_per_io"], sleep=m.get("sleep_cpu_us"), err=m["model_qd1_error"], got=m["read_qd1"]["mean_us"],
        want=m["model_qd1_want_us"], path=s.get("model_path_us", float("nan")),
        ios=c["reads"] + c["writes"] + c["flushes"], server=s.get("model_server", name),
        late=c.get("late", 0), late_ns=c.get("late_ns", 0),
        qd32=m["read_qd32"]["ops_per_sec"],
        mix=((m.get("full") or {}).get("mix_reads") or {}).get("ops_per_sec"),
        fsync=m["write_sync"]["ops_per_sec"]))
T = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
def ci(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return float("nan"), float("nan"), float("nan")
    m = statistics.mean(xs)
    h = T.get(len(xs) - 1, 2.0) * statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else float("nan")
    return m, m - h, m + h
def show(label, xs, fmt="{:.1f}"):
    m, lo, hi = ci(xs)
    return f"{label} {fmt.format(m)} ({fmt.format(lo)}-{fmt.format(hi)})"
for (c, name), rows in by.items():
    print(f"== {c}, server {name}, {len(rows)} rounds: {rows[0]['server'][:90]}")
    for x in rows:
        print(f"  model CPU {x['cpu']:6.1f} us/IO over {x['ios']} IOs; QD1 read {x['got']:7.0f} us vs model "
              f"{x['want']:7.0f} us ({x['err']*100:+.1f}%); path {x['path']:.0f} us; "
              f"answered late {x['late'] / max(x['ios'], 1) * 100:.2f}% of IOs"
              + (f", by {x['late_ns'] / x['late'] / 1000:.0f} us" if x['late'] else ""))
    m, lo, hi = ci([x["cpu"] for x in rows])
    print(f"  model CPU per IO {m:.1f} us (95% interval {lo:.1f}-{hi:.1f}); ratio to the 15 us target "
          f"{m/15:.2f} ({lo/15:.2f}-{hi/15:.2f})")
    if all(x["sleep"] for x in rows):
        print("  " + show("one timed sleep's CPU here, us", [x["sleep"] for x in rows])
              + "; " + show("CPU per IO in timed sleeps", [x["cpu"] / x["sleep"] for x in rows], "{:.2f}"))
    print("  " + show("QD1 latency error %", [x["err"] * 100 for x in rows], "{:+.1f}"))
    ref = by.get((c, "threads"))
    if ref and name != "threads":
        r = [a["cpu"] / b["cpu"] for a, b in zip(rows, ref)]
        print("  " + show("CPU per IO against threads, ratio", r, "{:.2f}"))
        for k in ("qd32", "mix", "fsync"):
            r = [a[k] / b[k] for a, b in zip(rows, ref) if a[k] and b[k]]
            if r:
                print("  " + show(f"probe {k} IOPS against threads, ratio", r, "{:.2f}"))
PY
