#!/usr/bin/env bash
# Runs every test (arguments go to `cargo test`, e.g. `--test storage`)
# with each test's time, then names the ten slowest. cargo builds the
# test binaries; this script runs them itself, one after another as
# cargo would, so it can ask each for its tests' times: libtest's
# --report-time sits behind -Z unstable-options, which RUSTC_BOOTSTRAP=1
# lets a built test binary accept. The variable is never given to cargo
# (it would rebuild every crate with it).
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
out=target/test-output.txt
bins=$($CARGO test --release --no-run --message-format=json "$@" |
  grep '"profile":{[^}]*"test":true' | grep -o '"executable":"[^"]*"' | sed 's/^"executable":"//; s/"$//')
start=$(date +%s)
failed=()
: > "$out"
for b in $bins; do
  name=$(basename "$b" | sed 's/-[0-9a-f]*$//')
  echo "     Running $name ($b)" | tee -a "$out"
  if ! RUSTC_BOOTSTRAP=1 "$b" -Z unstable-options --report-time 2>&1 | tee -a "$out"; then
    failed+=("$name")
  fi
done
# Doc tests are compiled when they run: cargo, without the variable.
if [ $# -eq 0 ]; then
  $CARGO test --release --doc 2>&1 | tee -a "$out" || failed+=(doc-tests)
fi
echo "== tests took $(( $(date +%s) - start )) s; the ten slowest:"
awk '
  /^ +Running / { bin = $2 }
  /^test .* <[0-9.]+s>$/ {
    t = $NF; gsub(/[<>s]/, "", t)
    printf "%8.1f s  %s::%s\n", t, bin, $2
  }' "$out" | sort -rn | sed -n 1,10p
if [ ${#failed[@]} -gt 0 ]; then
  echo "== failed: ${failed[*]}"
  exit 1
fi
