#!/usr/bin/env bash
# Runs every test with each test's time, then names the ten slowest.
# Arguments go to `cargo test` (e.g. `--test quick`); ONLY=storage,cli
# runs only those modules of the integration tests (or unit-test binaries). cargo builds the
# test binaries; this script runs them itself, LANES at a time (default
# 4: most tests wait on devices, servers and timers, not on a core) and
# the device tests on a lane of their own beside them (which then takes
# jobs as the others do: LANES+1 at a time), the
# slowest first by the times of the last run, so it can ask each for its
# tests' times: libtest's --report-time sits behind -Z unstable-options,
# which RUSTC_BOOTSTRAP=1 lets a built test binary accept. The variable
# is never given to cargo (it would rebuild every crate with it).
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
LANES=${LANES:-4}
# Modules of the merged test binaries run as a job per submodule.
SPLIT=targets
# Modules whose tests take the device lock (tests/common's
# device_lock): run one after another on a lane of their own beside the
# LANES lanes, which then takes the queue's jobs as they do. They wait
# on modelled devices (2026-11-29, two lanes: 185 s of lane time for 54
# CPU-s), and a lane of the LANES sat idle while they did. That lane
# runs them at nice -5 where it may (root): its tests measure time, the
# others only use it; DEVICE_NICE=0 gives it the others' priority.
DEVICE="storage devmodel sweep"
DEVICE_NICE=${DEVICE_NICE:--5}
# The runs the tests make do not probe their dedicated device (the
# probe writes a 128 MB file before its phases: 1.8 s and 0.45 CPU-s a
# run even at 0.2 s a phase, on runs that take 0.2 s without it); the
# tests that check the probe's figures give --storage-probe themselves.
export AMPBENCH_STORAGE_PROBE=${AMPBENCH_STORAGE_PROBE:-0}
case "$LANES" in
  ''|*[!0-9]*|0) echo "LANES=$LANES: give a number of test binaries to run at once, 1 or more" >&2; exit 2 ;;
esac
if ! [[ "$DEVICE_NICE" =~ ^-?[0-9]{1,2}$ ]] || (( 10#${DEVICE_NICE#-} > 20 )) || [ "$DEVICE_NICE" = 20 ]; then
  echo "DEVICE_NICE=$DEVICE_NICE: give the device lane's nice value, -20 to 19" >&2; exit 2
fi
DEVICE_NICE=$(( ${DEVICE_NICE%%[0-9]*}10#${DEVICE_NICE#-} ))
out=target/test-output.txt
dir=target/test-runs
bins=$($CARGO test --release --no-run --message-format=json "$@" |
  grep '"profile":{[^}]*"test":true' | grep -o '"executable":"[^"]*"' | sed 's/^"executable":"//; s/"$//')
start=$(date +%s)
mkdir -p "$dir"
rm -f "$dir"/*.out "$dir"/*.rc "$dir"/*.list "$dir"/*.list.*
# A job is a test binary, or one module of the integration-test binaries
# (tests/quick.rs, machine.rs, servers.rs; each module was a binary of its
# own): BINARY or BINARY@MODULE, run in a process of its own, under the
# module's name (the lib's and the main's unit tests are both
# `ampbench-HASH`, shown without the hash). A module's tests are given to
# its binary by name, exactly.
# Each merged binary's tests are listed once, into $dir/BINARY.list; a
# binary that cannot list its tests, or lists none, fails the run here.
# A binary's name without cargo's hash; a job's key (its files in $dir)
# and its name as shown.
unhashed() { basename "$1" | sed 's/-[0-9a-f]*$//'; }
key() { case "$1" in *@*) echo "${1##*@}" ;; *) basename "$1" ;; esac; }
show() { case "$1" in *@*) echo "${1##*@}" ;; *) unhashed "$1" ;; esac; }
jobs=""
for b in $bins; do
  case "$(basename "$b")" in
    quick-*|machine-*|servers-*)
      list="$dir/$(basename "$b").list"
      if ! "$b" --list --format terse > "$list.all" 2> "$list.err"; then
        echo "== $(basename "$b"): cannot list its tests:" >&2; cat "$list.err" >&2; exit 1
      fi
      # Each line: the test's job, a tab, the test. A test's job is its
      # module; in a module of SPLIT (whose tests sit in submodules that
      # each start servers of their own) a submodule's tests are a job
      # of their own (`targets::galera`), so the two lanes share them
      # out. A test at the binary's root (no module) is a job under the
      # binary's name.
      sed -n 's/: test$//p' "$list.all" |
        awk -F'::' -v root="$(unhashed "$b")" -v splits=",$SPLIT," '{
          if (NF == 1) k = root
          else if (NF >= 3 && index(splits, "," $1 ",")) k = $1 "::" $2
          else k = $1
          print k "\t" $0 }' > "$list"
      [ -s "$list" ] || { echo "== $(basename "$b"): lists no test" >&2; exit 1; }
      for m in $(cut -f1 "$list" | sort -u); do jobs="$jobs $b@$m"; done ;;
    *) jobs="$jobs $b" ;;
  esac
done
if [ -n "${ONLY:-}" ]; then
  jobs=$(for j in $jobs; do
    n=$(show "$j")
    case ",$ONLY," in *",$n,"*|*",${n%%::*},"*) echo "$j" ;; esac
  done)
  [ -n "$jobs" ] || { echo "ONLY=$ONLY: no such module (they are the files of tests/, ampbench_CRATE for a crate's unit tests, ampbench for the binary crate's)" >&2; exit 2; }
fi
# The last run's time of each job (seconds) orders them, slowest first
# (on a first run, scripts/test-times.txt's); one not seen before goes
# first.
# The device modules are one chain, their jobs joined by '+', run on
# the device lane.
chain=""
order=$(for j in $jobs; do
  case " $DEVICE " in *" $(show "$j") "*) continue ;; esac
  t=$(head -n1 "$dir/$(key "$j").time" 2>/dev/null || true)
  [ -n "$t" ] || t=$(awk -v n="$(show "$j")" '$2 == n { print $1 }' scripts/test-times.txt)
  echo "${t:-9999} $j"
done | sort -rn | cut -d' ' -f2)
for j in $jobs; do
  case " $DEVICE " in *" $(show "$j") "*) chain="${chain:+$chain+}$j" ;; esac
done
run_one() {
  j=$1
  # A chain of jobs (joined by '+'; a binary whose path holds one is a
  # job of its own).
  if [ ! -e "${j%@*}" ] && [ "${j#*+}" != "$j" ]; then
    local one
    for one in ${j//+/ }; do run_one "$one"; done
    return
  fi
  k=$(key "$j")
  name=$(show "$j")
  b=${j%@*}
  args=()
  if [ "$b" != "$j" ]; then
    list="$dir/$(basename "$b").list"
    mapfile -t args < <(awk -F'\t' -v k="$k" '$1 == k { print $2 }' "$list")
    if [ ${#args[@]} -eq 0 ]; then
      echo "     FAILED $name: no test of it in $list"
      echo 1 > "$dir/$k.rc"
      return
    fi
    args=(--exact "${args[@]}")
  fi
  t0=$(date +%s)
  rc=0
  # The subshell's `times` gives the CPU seconds of what it waited for:
  # the binary, and the servers and children the binary waited for.
  cpu=$( (export LC_ALL=C; RUSTC_BOOTSTRAP=1 "$b" -Z unstable-options --report-time "${args[@]}" > "$dir/$k.out" 2>&1 || echo "rc=$?" > "$dir/$k.rc"; times) |
    awk 'function s(x) { split(x, a, /[ms]/); return a[1] * 60 + a[2] } NR == 2 { printf "%.0f", s($1) + s($2) }')
  [ -s "$dir/$k.rc" ] && rc=$(sed 's/^rc=//' "$dir/$k.rc")
  t=$(( $(date +%s) - t0 ))
  echo "$rc" > "$dir/$k.rc"
  # Wall seconds, CPU seconds, and when it started (epoch seconds).
  printf '%s\n%s\n%s\n' "$t" "$cpu" "$t0" > "$dir/$k.time"
  if [ "$rc" -eq 0 ]; then
    echo "     ok $name ($t s, $cpu CPU-s)"
  else
    echo "     FAILED $name ($t s, $cpu CPU-s):"
    cat "$dir/$k.out"
  fi
}
# The lanes take jobs from one queue, in order, until it is empty.
queue="$dir/queue"
printf '%s\n' $order > "$queue"
take() {
  (
    flock 9 || exit 1
    j=$(head -n1 "$queue")
    [ -z "$j" ] || sed -i 1d "$queue"
    echo "$j"
  ) 9>> "$queue.lock"
}
lane() { while j=$(take) && [ -n "$j" ]; do run_one "$j"; done; }
export -f run_one key show unhashed take lane
export dir queue
lanes=()
# Each lane a process group of its own (job control), so that its tests
# do not start with SIGINT ignored, as a script's background jobs do;
# an interrupted or ended script stops them all.
set -m
for _ in $(seq "$LANES"); do
  bash -c lane &
  lanes+=($!)
done
# The device lane, once its chain is done, takes from the queue too, at
# the others' priority again (nice adds to its own; a lane niced up
# without root stays so).
if [ -n "$chain" ]; then
  nice_it=() unnice=()
  if [ "$(id -u)" = 0 ] && [ "$DEVICE_NICE" != 0 ]; then
    nice_it=(nice -n "$DEVICE_NICE") unnice=(nice -n "$(( -DEVICE_NICE ))")
  elif [ "$DEVICE_NICE" -gt 0 ]; then
    nice_it=(nice -n "$DEVICE_NICE")
  fi
  "${nice_it[@]}" bash -c 'run_one "$1"; "${@:2}" bash -c lane' _ "$chain" "${unnice[@]}" &
  lanes+=($!)
fi
set +m
trap 'trap - INT TERM; kill -TERM -- $(printf -- "-%s " "${lanes[@]}") 2>/dev/null; exit 130' INT TERM
wait "${lanes[@]}"
trap - INT TERM
failed=()
: > "$out"
for j in $jobs; do
  k=$(key "$j")
  echo "     Running $(show "$j") ($j)" >> "$out"
  cat "$dir/$k.out" >> "$out" 2>/dev/null || true
  [ "$(cat "$dir/$k.rc" 2>/dev/null || echo 1)" = 0 ] || failed+=("$(show "$j")")
done
# No doc tests: every crate has doctest = false (no doc comment holds a
# code block; tests/lengths.rs checks).
echo "== $(grep -c '^test .* ok <' "$out" || true) tests passed in $(( $(date +%s) - start )) s ($LANES lanes${chain:+ and the device lane}); the ten slowest:"
awk '
  /^ +Running / { bin = $2 }
  /^test .* <[0-9.]+s>$/ {
    t = $NF; gsub(/[<>s]/, "", t)
    n = $2; if (index(n, bin "::") != 1) n = bin "::" n
    printf "%8.1f s  %s\n", t, n
  }' "$out" | sort -rn | sed -n 1,10p
if [ ${#failed[@]} -gt 0 ]; then
  echo "== failed: ${failed[*]} (every output: $out)"
  exit 1
fi
