#!/usr/bin/env bash
# Inflate decoders side by side: zlib-rs (sword's), libdeflate and ISA-L, one thread, on every
# member of a Wikimedia-layout `.json.gz`, outputs checked identical first. See scripts/bench-inflate/src/main.rs.
#
# Usage: scripts/bench-inflate.sh [FILE.json.gz] [ROUNDS]
#   FILE     default: data/work/bench-inflate/s200.json.gz, made with `sword synth --entities 200000` (BIN, or the
#            quick build) when missing
#   ROUNDS   timed rounds, decoders alternating within each (default 5)
# Needs Debian's libisal-dev (installed here when missing) and the crates from the registry.
set -euo pipefail
# A FILE given relative to the caller's directory stays valid after the cd below.
[ -n "${1:-}" ] && FILE=$(realpath -m -- "$1")
cd "$(dirname "$0")/.."
FILE=${FILE:-data/work/bench-inflate/s200.json.gz}
ROUNDS=${2:-5}
if [ ! -s "$FILE" ]; then
  mkdir -p "$(dirname "$FILE")"
  if [ -z "${BIN:-}" ]; then cargo build --profile quick --bin sword >&2; BIN=${CARGO_TARGET_DIR:-target}/quick/sword; fi
  SWORD_QUIET=1 "$BIN" synth --entities 200000 --out "$FILE"
fi
[ -e /usr/include/isa-l.h ] || [ -e /usr/include/isa-l/igzip_lib.h ] || apt-get install -y -qq libisal-dev >&2
export CARGO_TARGET_DIR=${BENCH_INFLATE_TARGET:-scripts/bench-inflate/target}
cargo build --release --locked --manifest-path scripts/bench-inflate/Cargo.toml >&2
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, $(date -u '+%F %H:%M') UTC, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$CARGO_TARGET_DIR/release/sword-bench-inflate" "$FILE" "$ROUNDS"
