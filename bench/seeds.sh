#!/usr/bin/env bash
# Every seed plan (plans/seeds/*.toml) as it stands, at the scale its
# plan chose to reach its post's regime, one after the other: each
# plan's post table, its regime figures and its verdicts (judged in the
# post's regime, or not judged with the figure that is off), and how
# long it ran. docs/seeds.md keeps each plan's table with its date.
#
# Long: 003 about 30 minutes, 004 about 90 minutes, the others minutes;
# not run by CI. SEEDS picks plans by number; EXTRA goes to every run.
#
#   SEEDS="003 004" bench/seeds.sh
#   EXTRA="-p scale=0.5" bench/seeds.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/ampbench}
OUT=${OUT:-$(mktemp -d)}
SEEDS=${SEEDS:-}
EXTRA=${EXTRA:-}
mkdir -p "$OUT"
[ -x "$BIN" ] || cargo build --release -q
failed=0
for plan in plans/seeds/*.toml; do
  name=$(basename "$plan" .toml)
  num=${name%%-*}
  if [ -n "$SEEDS" ] && [[ " $SEEDS " != *" $num "* ]]; then
    continue
  fi
  echo "== $name ($(date -u +%FT%TZ))"
  start=$(date +%s)
  # shellcheck disable=SC2086 # EXTRA is words for the command line
  if ! "$BIN" run "$plan" --yes --results "$OUT/$name.db" $EXTRA > "$OUT/$name.txt" 2>&1; then
    echo "  failed (exit $?): the last lines of $OUT/$name.txt"
    tail -5 "$OUT/$name.txt" | sed 's/^/  /'
    failed=$((failed + 1))
    continue
  fi
  took=$(( $(date +%s) - start ))
  # The post's table, its regime and its comparisons, as the run printed
  # them (from the "seed post" line on).
  sed -n '/^seed post /,$p' "$OUT/$name.txt" | sed -n '1,/^results: /p' | grep -v '^results: '
  echo "  ran in $((took / 60)) min $((took % 60)) s; output $OUT/$name.txt, results $OUT/$name.db"
done
exit "$failed"
