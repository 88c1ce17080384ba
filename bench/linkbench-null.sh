#!/usr/bin/env bash
# How fast the LinkBench generator runs when the engine does nothing (the
# null engine): load links/s with one link loader, and requests/s per
# requester thread. Target: >= 2M load links/s per core, so the harness is
# never the bottleneck.
# Usage: bench/linkbench-null.sh   (MAXID1=2000001 DURATION=10 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
MAXID1=${MAXID1:-2000001}
DURATION=${DURATION:-10}
BIN=target/release/ampbench
[ -x "$BIN" ] || cargo build --release
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ampbench-lbnull-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
"$BIN" run -w linkbench -e null --steps load,request -p maxid1="$MAXID1" -p loaders=1 \
  --threads 1 --warmup 1 --duration "$DURATION" --results "$WORK/r.db" --dir "$WORK" > "$WORK/out.txt"
"$BIN" report --results "$WORK/r.db" --format json > "$WORK/r.json"
python3 - "$WORK/r.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
s = {x["step"]: x for x in j["steps"]}
load, req = s["load"], s["request"]
links = load["extras"]["links_loaded"]
print(f"load:    {links:.0f} links in {load['secs']:.2f} s = {links / load['secs'] / 1e6:.2f} M links/s "
      f"(1 link loader + 1 node loader; process CPU {load['cpu_us_per_op'] * load['ops'] / 1e6:.2f} s)")
print(f"request: {req['ops_per_sec']:.0f} requests/s with 1 requester thread "
      f"({req['cpu_us_per_op']:.2f} CPU us per request)")
PY
