#!/usr/bin/env bash
# Fuzzes every reader of outside input with cargo-fuzz (libFuzzer, address
# sanitizer): plan files, --set lines, -p lines, sizes and durations,
# LinkBench's Distribution.dat, results files, command lines (run and
# crashcheck, through the step timings), and what a MariaDB server sends
# to a login and to statements (mywire). Not in CI: the corpora it
# grows are replayed by `make test` (tests/fuzz_corpora.rs): it fuzzes
# into fuzz/corpus-work/TARGET (not committed), then merges into
# fuzz/corpus/TARGET only the inputs that reach new code (MERGE=0 skips
# it; the results target is never merged: its inputs are whole files),
# keeping the KEEP smallest new ones (default 200). A
# crash it finds is left in fuzz/artifacts/TARGET, to be added to the
# corpus once fixed.
# Usage: bench/fuzz.sh [SECONDS per target, default 600] [TARGET…]
# Needs a nightly toolchain (rustup toolchain install nightly) and
# cargo-fuzz (installed here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-600}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(plan args sets params units distribution results mywire_login mywire_results)
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked -q
printf '%-14s %12s %10s %8s  %s\n' target executions exec/s secs findings
for t in "${TARGETS[@]}"; do
  log=$(mktemp)
  status=0
  # -timeout: an input slower than 10 s is a finding too; -rss_limit_mb:
  # a reader must not balloon on a small input.
  mkdir -p "fuzz/corpus-work/$t"
  cargo +nightly fuzz run --fuzz-dir fuzz "$t" "fuzz/corpus-work/$t" "fuzz/corpus/$t" -- \
    -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1 || status=$?
  if [ "$status" -eq 0 ] && [ "${MERGE:-1}" = 1 ] && [ "$t" != results ]; then
    before=$(ls "fuzz/corpus/$t" | wc -l)
    cargo +nightly fuzz run --fuzz-dir fuzz "$t" "fuzz/corpus/$t" "fuzz/corpus-work/$t" -- -merge=1 \
      >>"$log" 2>&1 || true
    # Keep the corpus small enough to commit and replay: of what the merge
    # added (file names are content hashes; seeds have names), the KEEP
    # smallest stay.
    ls -S "fuzz/corpus/$t" | grep -E '^[0-9a-f]{40}$' | head -n -"${KEEP:-200}" \
      | sed "s|^|fuzz/corpus/$t/|" | xargs -r rm -f
    echo "  $t: corpus $before -> $(ls "fuzz/corpus/$t" | wc -l) inputs" >&2
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  runs=${runs:-0}
  secs=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | awk '{print $5}' | tail -1 || true)
  secs=${secs:-$SECS}
  if [ "$status" -eq 0 ]; then found=none; else found="FOUND: $(ls fuzz/artifacts/"$t" 2>/dev/null | tr '\n' ' ') (log: $log)"; fi
  printf '%-14s %12s %10s %8s  %s\n' "$t" "$runs" "$(( runs / (secs > 0 ? secs : 1) ))" "$secs" "$found"
  [ "$status" -ne 0 ] || rm -f "$log"
done
