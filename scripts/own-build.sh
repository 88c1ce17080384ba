#!/usr/bin/env bash
# Your own build of an embedded engine, end to end (make test runs it
# after the test binaries, since it rebuilds target/release/ampbench):
#  1. ampbench built against a copy of Debian's RocksDB placed in another
#     directory (ROCKSDB_LIB_DIR, ROCKSDB_INCLUDE_DIR): the binary loads
#     the copy, the run's library line and its recorded versions name it,
#     and point reads go through the shim (the copy is 7.8);
#  2. the binary the tests ran is put back.
# The build is of the engine crate and those above it (the rest is built
# already), at opt-level 1 without debug info: the check is of linking
# and loading, and it takes a minute instead of three.
# With --check-other-headers (make lint) it instead checks that ampbench
# compiles against headers that say another release (7.99), where the
# read shim is left out and point reads take the C API path (that path
# itself is tested in the library's tests, engine::ffi::rocksdb::reader).
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
# No early exit in the pipes below (awk's exit, head): under pipefail the
# writer's SIGPIPE would fail the script (exit 141) when its output is
# larger than the pipe's buffer, as ldconfig's cache is on some machines.
lib=$(ldconfig -p | awk '/librocksdb\.so\.[0-9]/ && !found { print $NF; found = 1 }')
[ -n "$lib" ] || { echo "own-build: no librocksdb in ldconfig's cache (make deps)" >&2; exit 1; }
if [ "${1:-}" = --check-other-headers ]; then
  tmp=$(mktemp -d /tmp/ampbench-own-build.XXXXXXXX)
  trap 'rm -rf "$tmp"' EXIT
  cp -a /usr/include/rocksdb "$tmp/"
  sed -i 's/^#define ROCKSDB_MINOR .*/#define ROCKSDB_MINOR 99/' "$tmp/rocksdb/version.h"
  out=$(ROCKSDB_INCLUDE_DIR=$tmp $CARGO clippy --release -p ampbench -p ampbench-engine --no-default-features --features rocksdb -- -D warnings 2>&1) ||
    { echo "$out" >&2; exit 1; }
  grep -q "the read shim reads 7.8's handle layout and is left out" <<<"$out" ||
    { echo "own-build: the build did not say the shim was left out: $out" >&2; exit 1; }
  echo "== RocksDB headers 7.99: builds without the read shim (clippy clean)"
  exit 0
fi
# The copy lives under target/, never in a shared directory: the build's
# run path names it, and a directory another user could make in its place
# would be loaded by root. The default build is restored before the copy
# is removed.
mkdir -p target
tmp=$(mktemp -d "$PWD/target/own-build.XXXXXXXX")
restore() {
  # The binary the tests ran, put back (a rebuild could take minutes:
  # `cargo test` builds the binary with the dev-dependencies' features).
  if [ -f "$tmp/ampbench.default" ]; then
    cp -p "$tmp/ampbench.default" target/release/ampbench.restore &&
      mv -f target/release/ampbench.restore target/release/ampbench
  else
    $CARGO build --release --quiet
  fi
  rm -rf "$tmp"
}
[ -f target/release/ampbench ] && cp -p target/release/ampbench "$tmp/ampbench.default"
trap restore EXIT
mkdir -p "$tmp/lib" "$tmp/include"
# As a build's install directory has it: the file, its soname, the
# name the linker looks for.
real=$(readlink -f "$lib")
cp "$real" "$tmp/lib/"
ln -s "$(basename "$real")" "$tmp/lib/$(basename "$lib")"
ln -s "$(basename "$real")" "$tmp/lib/librocksdb.so"
cp -a /usr/include/rocksdb "$tmp/include/"
bin=target/release/ampbench
fail() { echo "own-build: FAILED: $*" >&2; exit 1; }

# The crates an own build's libraries rebuild (the engine's, and those
# above it), at opt-level 1 without debug info.
quick=()
for p in ampbench ampbench-engine ampbench-workload; do
  quick+=(--config "profile.release.package.$p.opt-level=1" --config "profile.release.package.$p.debug=0")
done

build() {
  ROCKSDB_LIB_DIR=$tmp/lib ROCKSDB_INCLUDE_DIR=$1 \
    $CARGO build --release --quiet -p ampbench "${quick[@]}" --no-default-features --features rocksdb 2>&1 | grep -v '^warning: ampbench' || true
  [ -x "$bin" ] || fail "no binary"
}

run() {
  rm -rf "$tmp/run" && mkdir "$tmp/run"
  "$bin" run -e rocksdb -w micro --steps fillrandom,readrandom --duration 1 --warmup 0 \
    --results "$tmp/run/r.db" --dir "$tmp/run" 2>&1
}

echo "== own build 1: a copy of Debian's RocksDB in $tmp/lib"
build "$tmp/include"
loaded=$(ldd "$bin" | awk '/librocksdb/ { print $3 }')
case "$loaded" in "$tmp/lib/"*) ;; *) fail "the binary loads $loaded, not the copy" ;; esac
out=$(run) || fail "the run failed: $out"
line=$(grep '^  library:' <<<"$out") || fail "no library line: $out"
echo "$line"
want="library: $tmp/lib/$(basename "$real") (ROCKSDB_LIB_DIR=$tmp/lib at build); point reads through the shim"
grep -qF "$want" <<<"$line" || fail "expected '$want'"
grep -m1 -E '^rocksdb [0-9]' <<<"$out" || true
rec=$("$bin" report --results "$tmp/run/r.db" --run latest --format json | grep -o '"rocksdb_library": "[^"]*"') || fail "no rocksdb_library in the recorded versions"
grep -qF "$tmp/lib/" <<<"$rec" || fail "recorded: $rec"

echo "== own builds: ok (putting back the binary the tests ran)"
