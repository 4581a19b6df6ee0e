#!/usr/bin/env bash
# Whole-chain benchmark: generate a dump sized so that the final triple set is about the paper's
# 2.1 M, then run every stage as its own process, reporting wall time, CPU time and peak RSS per stage.
#
#   scripts/bench-pipeline.sh [ENTITIES] [WORKDIR]
#
# ENTITIES defaults to 10,000,000: at its defaults the synthetic generator yields ≈ 0.21 final triples per
# entity line (400 k entities → 85 476 triples, 332 MB gzipped), so 10 M lines give ≈ 2.1 M triples
# (≈ 8.3 GB gzipped). WORKDIR (default /tmp/sword-bench-pipeline) must have that much free space.
# Prints a Markdown table (stage, wall s, CPU s, peak RSS MB, counts) for BENCHMARKS.md.
set -euo pipefail
ENTITIES=${1:-10000000}
WORK=${2:-/tmp/sword-bench-pipeline}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PROFILE=${PROFILE:-release}
cd "$ROOT"
[ -n "${SWORD_BIN:-}" ] || cargo build --profile "$PROFILE" --locked >&2
PDIR=$PROFILE; [ "$PROFILE" = dev ] && PDIR=debug
BIN="${SWORD_BIN:-$ROOT/target/$PDIR/sword}"
mkdir -p "$WORK"
DUMP="$WORK/wikidata-00000000-synth-$ENTITIES.json.gz"
RUN="$WORK/run"
export SWORD_PROGRESS_SECS=30

measure() { # measure NAME CMD...: run with /usr/bin/time -v, print a table row
  local name=$1; shift
  local tf; tf=$(mktemp)
  /usr/bin/time -v -o "$tf" "$@" >&2
  local wall cpu_u cpu_s rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$tf" | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
  cpu_u=$(awk -F': ' '/User time/ {print $2}' "$tf")
  cpu_s=$(awk -F': ' '/System time/ {print $2}' "$tf")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tf")
  awk -v n="$name" -v w="$wall" -v u="$cpu_u" -v s="$cpu_s" -v r="$rss" \
    'BEGIN { printf "| %s | %.1f | %.1f | %.0f |\n", n, w, u + s, r / 1024 }'
  rm -f "$tf"
}

echo "# bench-pipeline: $ENTITIES entities, $(nproc) cores, $(date -u +%F), profile $PROFILE"
echo
echo "| stage | wall s | CPU s | peak RSS MB |"
echo "|---|---|---|---|"
if [ ! -s "$DUMP" ]; then
  measure synth "$BIN" synth --entities "$ENTITIES" --seed 42 --out "$DUMP"
fi
rm -rf "$RUN"
measure extract "$BIN" extract --dump "$DUMP" --out "$RUN"
measure graph "$BIN" graph --out "$RUN"
measure walks "$BIN" walks --out "$RUN" --seed 42
measure train "$BIN" train --out "$RUN" --seed 42
measure distort "$BIN" distort --out "$RUN" --seed 42
measure export "$BIN" export --out "$RUN"
echo
echo "dump: $(du -h "$DUMP" | cut -f1) gzipped"
"$BIN" run --out "$RUN" --summary-only
