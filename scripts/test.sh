#!/usr/bin/env bash
# Runs every test (arguments go to `cargo test`, e.g. `--test storage`)
# with each test's time, then names the ten slowest. cargo builds the
# test binaries; this script runs them itself, LANES at a time (default
# 4: most tests wait on devices, servers and timers, not on a core), the
# slowest first by the times of the last run, so it can ask each for its
# tests' times: libtest's --report-time sits behind -Z unstable-options,
# which RUSTC_BOOTSTRAP=1 lets a built test binary accept. The variable
# is never given to cargo (it would rebuild every crate with it).
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
LANES=${LANES:-4}
case "$LANES" in
  ''|*[!0-9]*|0) echo "LANES=$LANES: give a number of test binaries to run at once, 1 or more" >&2; exit 2 ;;
esac
out=target/test-output.txt
dir=target/test-runs
bins=$($CARGO test --release --no-run --message-format=json "$@" |
  grep '"profile":{[^}]*"test":true' | grep -o '"executable":"[^"]*"' | sed 's/^"executable":"//; s/"$//')
start=$(date +%s)
# A binary's files in $dir are named by its file name (the lib's and
# the main's unit tests are both `ampbench-HASH`); it is shown without
# the hash. The last run's time of each (seconds) orders them, slowest
# first (on a first run, scripts/test-times.txt's); one not seen before
# goes first.
key() { basename "$1"; }
show() { basename "$1" | sed 's/-[0-9a-f]*$//'; }
order=$(for b in $bins; do
  t=$(head -n1 "$dir/$(key "$b").time" 2>/dev/null || true)
  [ -n "$t" ] || t=$(awk -v n="$(show "$b")" '$2 == n { print $1 }' scripts/test-times.txt)
  echo "${t:-9999} $b"
done | sort -rn | cut -d' ' -f2)
mkdir -p "$dir"
rm -f "$dir"/*.out "$dir"/*.rc
run_one() {
  b=$1
  k=$(key "$b")
  name=$(show "$b")
  t0=$(date +%s)
  rc=0
  # The subshell's `times` gives the CPU seconds of what it waited for:
  # the binary, and the servers and children the binary waited for.
  cpu=$( (export LC_ALL=C; RUSTC_BOOTSTRAP=1 "$b" -Z unstable-options --report-time > "$dir/$k.out" 2>&1 || echo "rc=$?" > "$dir/$k.rc"; times) |
    awk 'function s(x) { split(x, a, /[ms]/); return a[1] * 60 + a[2] } NR == 2 { printf "%.0f", s($1) + s($2) }')
  [ -s "$dir/$k.rc" ] && rc=$(sed 's/^rc=//' "$dir/$k.rc")
  t=$(( $(date +%s) - t0 ))
  echo "$rc" > "$dir/$k.rc"
  printf '%s\n%s\n' "$t" "$cpu" > "$dir/$k.time"
  if [ "$rc" -eq 0 ]; then
    echo "     ok $name ($t s, $cpu CPU-s)"
  else
    echo "     FAILED $name ($t s, $cpu CPU-s):"
    cat "$dir/$k.out"
  fi
}
export -f run_one key show
export dir
printf '%s\n' $order | xargs -P "$LANES" -I{} bash -c 'run_one "$1"' _ {}
failed=()
: > "$out"
for b in $bins; do
  k=$(key "$b")
  echo "     Running $(show "$b") ($b)" >> "$out"
  cat "$dir/$k.out" >> "$out" 2>/dev/null || true
  [ "$(cat "$dir/$k.rc" 2>/dev/null || echo 1)" = 0 ] || failed+=("$(show "$b")")
done
# Doc tests are compiled when they run: cargo, without the variable.
if [ $# -eq 0 ]; then
  if ! $CARGO test --release --doc > "$dir/doc.out" 2>&1; then
    failed+=(doc-tests)
    cat "$dir/doc.out"
  fi
  cat "$dir/doc.out" >> "$out"
fi
echo "== $(grep -c '^test .* ok <' "$out" || true) tests passed in $(( $(date +%s) - start )) s ($LANES at a time); the ten slowest:"
awk '
  /^ +Running / { bin = $2 }
  /^test .* <[0-9.]+s>$/ {
    t = $NF; gsub(/[<>s]/, "", t)
    printf "%8.1f s  %s::%s\n", t, bin, $2
  }' "$out" | sort -rn | sed -n 1,10p
if [ ${#failed[@]} -gt 0 ]; then
  echo "== failed: ${failed[*]} (every output: $out)"
  exit 1
fi
