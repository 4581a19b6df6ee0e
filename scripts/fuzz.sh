#!/usr/bin/env bash
# Run every cargo-fuzz target of the dump readers for a set time (issue 24 §6).
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]     (default 300)
#   TARGETS   which targets (default: every one in fuzz/Cargo.toml)
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). Builds into $CARGO_TARGET_DIR
# (set it apart from the main build's, e.g. a target-fuzz directory). Corpora live in fuzz/corpus/TARGET
# (git-ignored); a crash is written to fuzz/artifacts/TARGET/ and makes this script exit 1: turn it into a
# regression test under tests/ (the input as a byte string, the outcome asserted), then fix the code.
# Prints one line per target: runs, seconds, new coverage, and whether it found anything.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
SECS=${1:-300}
TARGETS=${TARGETS:-$(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^sword-fuzz$')}
cargo +nightly fuzz build >&2
status=0
for t in $TARGETS; do
  mkdir -p "corpus/$t"
  log=$(mktemp)
  set +e
  cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$SECS" -max_len=65536 -print_final_stats=1 > "$log" 2>&1
  code=$?
  set -e
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  if [ "$code" = 0 ]; then found="nothing"; else found="CRASH (exit $code): $(ls -t "artifacts/$t" 2>/dev/null | head -1)"; status=1; fi
  echo "$t: ${runs:-?} runs in ${SECS} s, ${cov:-cov ?}, corpus $(ls "corpus/$t" | wc -l) inputs: $found"
  [ "$code" = 0 ] || tail -40 "$log" >&2
  rm -f "$log"
done
exit $status
