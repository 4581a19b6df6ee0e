#!/usr/bin/env bash
# Run every cargo-fuzz target (fuzz/Cargo.toml: the dump readers and the eval JSONL readers) for a set time.
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]     (default 300)
#   TARGETS   which targets (default: every one in fuzz/Cargo.toml)
#   JOBS      libFuzzer worker processes per target (default 1)
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). Builds into $CARGO_TARGET_DIR
# (set it apart from the main build's, e.g. a target-fuzz directory). Corpora live in fuzz/corpus/TARGET
# (git-ignored; an empty one is seeded with a few valid inputs: a gzip and a bzip2 file of two members/streams,
# an entity line, a dump start, a bzip2 block); a crash is written to fuzz/artifacts/TARGET/ and makes this script exit 1:
# turn it into a regression test under tests/ (the input as a byte string, the outcome asserted), then fix the
# code. Prints one line per target: runs, seconds, coverage, corpus size, and whether it found anything.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-300}
JOBS=${JOBS:-1}
TARGETS=${TARGETS:-$(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^sword-fuzz$')}
cargo +nightly fuzz build >&2

line='{"type":"item","id":"Q1","labels":{"en":{"language":"en","value":"x"},"ko":{"language":"ko","value":"\uc5d0"}},"descriptions":{},"aliases":{},"claims":{"P31":[{"mainsnak":{"snaktype":"value","property":"P31","datavalue":{"value":{"entity-type":"item","numeric-id":5,"id":"Q5"},"type":"wikibase-entityid"},"datatype":"wikibase-item"},"type":"statement","id":"Q1$a","rank":"normal","references":[{"snaks":{"P1":[{"datavalue":{"value":1e999}}]}}]}]},"sitelinks":{"enwiki":{"site":"enwiki","title":"X"}},"lastrevid":7,"modified":"2024-01-02T03:04:05Z"},'
seed() { # seed TARGET: a few valid inputs when the corpus is empty
  local d=fuzz/corpus/$1
  mkdir -p "$d"
  [ -z "$(ls -A "$d")" ] || return 0
  case $1 in
    gz_members) { printf '[\n%s\n' "$line" | gzip -c; printf '%s\n]\n' "$line" | gzip -c; } > "$d/two-members" ;;
    bz2_blocks) { printf '[\n%s\n' "$line" | bzip2 -1 -c; printf '%s\n]\n' "$line" | bzip2 -1 -c; } > "$d/two-streams" ;;
    # bz2_stream: two bytes choosing the read size and the window's cap, then the same two streams.
    bz2_stream) { printf '\003\001'; printf '[\n%s\n' "$line" | bzip2 -1 -c; printf '%s\n]\n' "$line" | bzip2 -1 -c; } > "$d/two-streams" ;;
    # bz2_block: a raw block (mode byte 0: level 1, the bits after the magic) and a structured input (mode 1).
    bz2_block) { printf '\000'; printf '%s' "$line" | bzip2 -1 -c | tail -c +11; } > "$d/raw"
      printf '\001%s' "$line" > "$d/line" ;;
    entity_line) printf '%s' "$line" > "$d/item" ;;
    dump_start) printf '[\n%s\n' "$line" > "$d/start" ;;
    eval_jsonl) printf '{"id":"a","answer":"True"}\n' > "$d/row" ;;
  esac
}

status=0
for t in $TARGETS; do
  seed "$t"
  log=$(mktemp)
  start=$(date +%s)
  set +e
  cargo +nightly fuzz run "$t" -j "$JOBS" -- -max_total_time="$SECS" -max_len=65536 -print_final_stats=1 > "$log" 2>&1
  code=$?
  set -e
  took=$(($(date +%s) - start))
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | awk '{s += $1} END {print s}')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  if [ "$code" = 0 ]; then found="nothing"; else found="CRASH (exit $code): $(ls -t "fuzz/artifacts/$t" 2>/dev/null | head -1)"; status=1; fi
  echo "$t: ${runs:-?} runs in $took s, ${cov:-cov ?}, corpus $(ls "fuzz/corpus/$t" | wc -l) inputs: $found"
  [ "$code" = 0 ] || tail -40 "$log" >&2
  rm -f "$log"
done
exit $status
