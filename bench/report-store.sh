#!/usr/bin/env bash
# Reports over a large PostgreSQL results store: `report --run 1`,
# `report --run latest` and a small run's whole time (its end reads its
# own run back), on a store of one run and then on one of RUNS runs
# (copies of that run made by SQL), each ROUNDS times; and, for
# reference, reading the whole store (`copy` of every run into a file,
# what every report did before reports read run by run). The store is a
# PostgreSQL the test starts in a network namespace of its own
# (tests/targets/store.rs), stopped at the end.
# Usage: bench/report-store.sh   (RUNS=10000 ROUNDS=3: about 5 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
export AMPBENCH_STORE_RUNS=${RUNS:-10000}
export ROUNDS=${ROUNDS:-3}
echo "== reports over a PostgreSQL store of $AMPBENCH_STORE_RUNS runs"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if ! cargo test --release --test servers -- --ignored --nocapture --test-threads 1 \
  targets::store::report_over_a_large_store > "$out" 2>&1; then
  cat "$out"
  exit 1
fi
grep -E '^(a small run|report|made a store|reading the whole|ratios|skipped)' "$out"
