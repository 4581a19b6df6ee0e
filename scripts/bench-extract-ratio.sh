#!/usr/bin/env bash
# Extract's wall against its own `--decode-only` wall on one dump (the target: ≤ 1.8× on the 200 k-entity
# generated `.json.gz` at 2 cores, idle), for one binary or two compared in alternating rounds.
#
# For each round and each binary (NEW, then BASE when given): `sword -q -j THREADS extract --dump DUMP --out O`
# and the same with `--decode-only`, each under /usr/bin/time; prints every run (wall, CPU-s), then per binary
# the median walls and their ratio (extract / decode-only, both medians) and the median of the per-round ratios.
# The Parquet files of NEW and BASE are compared with `cmp` (exit 1 when they differ). Run it on an idle machine:
# on a loaded one the walls only bound the cost from above (use callgrind instruction counts there).
#
# Usage: SWORD=path/to/sword [BASE=path/to/other/sword] [DUMP=s200.json.gz] [ROUNDS=6] [THREADS=2]
#        [WORK=data/work/bench-extract-ratio] scripts/bench-extract-ratio.sh
#   DUMP    the dump to read; when absent it is made as BENCHMARKS.md's `s200.json.gz`:
#           `$SWORD synth --entities ${ENTITIES:-200000} --seed 7 --out $WORK/s200.json.gz`
#   SYNTH_BIN the binary that generates it (default: BASE when given, else SWORD), so that both read one file
set -euo pipefail
cd "$(dirname "$0")/.."
: "${SWORD:?set SWORD to the sword binary to measure}"
WORK=${WORK:-data/work/bench-extract-ratio}
ROUNDS=${ROUNDS:-6}
THREADS=${THREADS:-2}
ENTITIES=${ENTITIES:-200000}
mkdir -p "$WORK"
SYNTH_BIN=${SYNTH_BIN:-${BASE:-$SWORD}}
if [ -z "${DUMP:-}" ]; then
  DUMP=$WORK/s200.json.gz
  [ -s "$DUMP" ] || "$SYNTH_BIN" -q synth --entities "$ENTITIES" --seed 7 --out "$DUMP"
fi
bins=(new)
[ -n "${BASE:-}" ] && bins+=(base)
bin_of() { if [ "$1" = new ]; then echo "$SWORD"; else echo "$BASE"; fi; }

# measure NAME MODE ROUND: one run, its wall and CPU seconds appended to $WORK/runs.tsv.
measure() {
  local name=$1 mode=$2 round=$3 bin out args
  bin=$(bin_of "$name")
  out=$WORK/out-$name-$mode
  args=(-q -j "$THREADS" extract --dump "$DUMP" --out "$out")
  [ "$mode" = decode ] && args+=(--decode-only)
  rm -rf "$out"
  /usr/bin/time -f '%e %U %S' -o "$WORK/time.txt" "$bin" "${args[@]}" > /dev/null
  read -r wall user sys < "$WORK/time.txt"
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$mode" "$round" "$wall" "$cpu" | tee -a "$WORK/runs.tsv"
}

: > "$WORK/runs.tsv"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
echo "# dump $DUMP; -j $THREADS; $ROUNDS rounds, alternating"
printf 'binary\tmode\tround\twall_s\tcpu_s\n'
for r in $(seq 1 "$ROUNDS"); do
  for b in "${bins[@]}"; do
    measure "$b" extract "$r"
    measure "$b" decode "$r"
  done
done
if [ -n "${BASE:-}" ]; then
  for f in "$WORK"/out-new-extract/*.parquet; do
    cmp -s "$f" "$WORK/out-base-extract/$(basename "$f")" || { echo "DIFFERENT: $(basename "$f")" >&2; exit 1; }
  done
  echo "# the Parquet files of new and base are the same bytes"
fi
python3 - "$WORK/runs.tsv" <<'EOF'
import statistics, sys
rows = [l.split('\t') for l in open(sys.argv[1]).read().split('\n') if l]
for b in dict.fromkeys(r[0] for r in rows):
    get = lambda m, k: [float(r[k]) for r in rows if r[0] == b and r[1] == m]
    ew, dw = get('extract', 3), get('decode', 3)
    ec, dc = get('extract', 4), get('decode', 4)
    per_round = [e / d for e, d in zip(ew, dw)]
    print(f"{b}: extract wall median {statistics.median(ew):.3f} s ({min(ew):.3f}-{max(ew):.3f}), "
          f"decode-only {statistics.median(dw):.3f} s ({min(dw):.3f}-{max(dw):.3f}); "
          f"ratio of medians {statistics.median(ew) / statistics.median(dw):.2f}x, "
          f"median of per-round ratios {statistics.median(per_round):.2f}x; "
          f"CPU-s extract {statistics.median(ec):.2f}, decode-only {statistics.median(dc):.2f}")
EOF
