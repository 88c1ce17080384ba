#!/usr/bin/env bash
# The floor under a SQL client's cost: the client CPU of one TCP round trip
# on 127.0.0.1 (64-byte request, 128-byte reply, TCP_NODELAY), measured by
# `ampbench loopback` (a client thread and an echo thread; getrusage of the
# client thread), with both threads pinned to one CPU and to two CPUs
# (a wake-up on another CPU costs far more on a virtual machine).
# LinkBench prints statements per request x these figures beside the
# client's measured CPU per request. This machine is shared and
# noisy, so it runs ROUNDS times and prints the mean with its 95% interval.
# Usage: bench/loopback.sh   (ROUNDS=10, ROUND_TRIPS=20000: about 10 s)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-10}
TRIPS=${ROUND_TRIPS:-20000}
BIN=target/release/ampbench
[ -x "$BIN" ] || cargo build --release
for _ in $(seq 1 "$ROUNDS"); do "$BIN" loopback --rounds "$TRIPS"; done | python3 -c '
import json, math, statistics, sys
rows = [json.loads(l) for l in sys.stdin]
def show(name, xs):
    m = statistics.mean(xs)
    half = 2.262 * statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else float("nan")
    print(f"{name:<28} {m:8.2f} us  (95% interval {m-half:.2f}-{m+half:.2f}, range {min(xs):.2f}-{max(xs):.2f})")
n = rows[0]["same_cpu"]["rounds"]
print(f"== loopback round trip, {len(rows)} runs of {n} per placement")
for place in ("same_cpu", "other_cpu"):
    rs = [r[place] for r in rows if r.get(place)]
    if not rs:
        print(f"{place}: not measured (one CPU allowed)")
        continue
    print("-- " + place.replace("_", " "))
    show("client CPU per round trip", [r["user_us"] + r["sys_us"] for r in rs])
    show("  user", [r["user_us"] for r in rs])
    show("  system", [r["sys_us"] for r in rs])
    show("wall per round trip", [r["wall_us"] for r in rs])
'
