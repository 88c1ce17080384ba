#!/usr/bin/env bash
# Installs the Debian packages ampbench needs, only those missing: idempotent,
# quiet, non-interactive (CI has no stdin). Needs root (or sudo).
set -euo pipefail
PKGS=(librocksdb-dev rocksdb-tools libwiredtiger-dev wiredtiger liblmdb-dev libleveldb-dev
      libsqlite3-dev libclang-dev clang pkg-config mariadb-server mariadb-plugin-rocksdb postgresql
      valgrind xfsprogs util-linux e2fsprogs libjemalloc2 libtcmalloc-minimal4 chromium g++
      openssl prometheus-node-exporter galera-4 rsync)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
# Quiet on success (debconf's notes included); the whole log on failure.
if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"; } >"$LOG" 2>&1; then
  cat "$LOG" >&2
  exit 1
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "deps: cargo not found; install Rust (https://rustup.rs) and re-run" >&2
  exit 1
fi
