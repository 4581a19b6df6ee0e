#!/usr/bin/env bash
# Whole-process benchmark of `sword extract`.
#
# Generates a synthetic dump of ≥ 2 GB of JSON with `sword synth` (same seed → same lines in every format), then
# for plain JSON, single-member gzip (`gzip -6`), Wikimedia-layout multi-member gzip (`sword synth … .json.gz`)
# zstd (`zstd -3`) and bzip2 (`lbzip2 -9`, one stream of many blocks, as Wikimedia makes `latest-all.json.bz2`)
# measures, with /usr/bin/time -v:
#   - `sword extract --decode-only`: the same decoder, threads and chunking, bytes discarded (the baseline);
#   - `sword extract`: the full stage;
# and prints wall, CPU (user+sys), MB/s of JSON, peak RSS and the ratio extract/decode-only, plus `gzip -dc`
# on the Wikimedia-layout file, and for bzip2 its peers: `bzip2 -dc`, `lbzip2 -d -n N -c` (N = THREADS or all
# cores) and `lbzip2 -d -n N -c X | sword extract --dump -` (the pipe docs/extract.md used to recommend). Also
# checks that every run wrote byte-identical Parquet.
#
# Usage: scripts/bench-extract.sh            (ENTITIES, WORK, THREADS, BIN overridable from the environment)
#   BIN      sword binary (default: builds `--profile quick` into $CARGO_TARGET_DIR or target/)
#   SYNTH_BIN sword binary used for `synth` (default: BIN)
#   ENTITIES entities to generate (default 420000 ≈ 2.2 GB of JSON with the synth generator of Nov 2026)
#   WORK     scratch directory (default data/work/bench-extract; ignored by git)
#   THREADS  -j for sword (default: all cores)
#   FORMATS  which of synth.json single.json.gz synth.json.gz synth.json.zst synth.json.bz2 to run (default: all)
#   NO_SKIM  when 1, also run `sword extract --no-skim` (whole-line parsing) for each format
#   SKIP     when 1, also run `sword extract --skip-unlabelled-statements` for each format (same Parquet checked)
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${WORK:-data/work/bench-extract}
ENTITIES=${ENTITIES:-420000}
TARGET=${CARGO_TARGET_DIR:-target}
if [ -z "${BIN:-}" ]; then
  cargo build --profile quick --bin sword >&2
  BIN=$TARGET/quick/sword
fi
SYNTH_BIN=${SYNTH_BIN:-$BIN}
J=()
[ -n "${THREADS:-}" ] && J=(-j "$THREADS")
mkdir -p "$WORK"
export SWORD_QUIET=1

SPLIT=()
FORMATS=${FORMATS:-synth.json single.json.gz synth.json.gz synth.json.zst synth.json.bz2}
want() { case " $FORMATS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
plain=$WORK/synth.json
# The plain file is needed for itself and to make the single-member gzip, the zstd and the bzip2 file.
if want synth.json || want single.json.gz || want synth.json.zst || want synth.json.bz2; then
  [ -s "$plain" ] || "$SYNTH_BIN" synth --entities "$ENTITIES" --out "$plain"
fi
[ -s "$WORK/synth.json.gz" ] || "$SYNTH_BIN" synth --entities "$ENTITIES" --out "$WORK/synth.json.gz"
if want single.json.gz; then [ -s "$WORK/single.json.gz" ] || gzip -6 -c "$plain" > "$WORK/single.json.gz"; fi
if want synth.json.zst; then [ -s "$WORK/synth.json.zst" ] || zstd -q -3 -T0 "$plain" -o "$WORK/synth.json.zst"; fi
NBZ=${THREADS:-$(nproc)}
if want synth.json.bz2; then
  command -v lbzip2 >/dev/null || { echo "bench-extract: lbzip2 is needed for synth.json.bz2 (apt-get install lbzip2)" >&2; exit 2; }
  [ -s "$WORK/synth.json.bz2" ] || lbzip2 -9 -n "$NBZ" -c "$plain" > "$WORK/synth.json.bz2"
fi
# JSON bytes: the plain file's size, or the Wikimedia-layout file's uncompressed size.
if [ -s "$plain" ]; then json_bytes=$(stat -c %s "$plain"); else json_bytes=$(gzip -dc "$WORK/synth.json.gz" | wc -c); fi

# measure LABEL CMD... → one table row; sets LAST_WALL
measure() {
  local label=$1; shift
  /usr/bin/time -v -o "$WORK/time.txt" "$@" > "$WORK/stdout.txt" 2> "$WORK/stderr.txt" || {
    echo "FAILED: $*" >&2; cat "$WORK/stderr.txt" >&2; exit 1; }
  local wall user sys rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$WORK/time.txt")
  user=$(awk -F': ' '/User time/ {print $2}' "$WORK/time.txt")
  sys=$(awk -F': ' '/System time/ {print $2}' "$WORK/time.txt")
  rss=$(awk -F': ' '/Maximum resident/ {print $2}' "$WORK/time.txt")
  LAST_WALL=$wall
  LAST_CPU=$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')
  awk -v l="$label" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" -v b="$json_bytes" -v base="${BASE_WALL:-}" \
    'BEGIN { ratio = (base == "" ? "" : sprintf("%.2f", w / base));
             printf "| %-34s | %8.2f | %8.2f | %8.1f | %7.0f | %5s |\n", l, w, u + s, b / 1e6 / w, r / 1024, ratio }'
}

echo "JSON: $json_bytes bytes ($ENTITIES entities), sword $("$BIN" --version), $(nproc) cores, $(date -u +%F)"
echo
echo "| run | wall s | CPU s | MB/s JSON | peak RSS MB | ratio to decode-only |"
echo "|---|---|---|---|---|---|"
for f in $FORMATS; do
  BASE_WALL=
  measure "$f decode-only" "$BIN" "${J[@]}" extract --dump "$WORK/$f" --out "$WORK/out-decode" --decode-only
  BASE_WALL=$LAST_WALL
  base_cpu=$LAST_CPU
  measure "$f extract" "$BIN" "${J[@]}" extract --dump "$WORK/$f" --out "$WORK/out-$f"
  # Parse = extract CPU - decode-only CPU; both per GB of JSON (the target: parse <= inflate / 3).
  SPLIT+=("$(awk -v f="$f" -v d="$base_cpu" -v e="$LAST_CPU" -v b="$json_bytes" 'BEGIN {
    g = b / 1e9; printf "| %s | %.2f | %.2f | %.2f |", f, d / g, (e - d) / g, (d > 0 ? (e - d) / d : 0) }')")
  if [ "${NO_SKIM:-0}" = 1 ]; then
    measure "$f extract --no-skim" "$BIN" "${J[@]}" extract --dump "$WORK/$f" --out "$WORK/out-noskim-$f" --no-skim
    for a in entities triples statements properties transitive; do
      cmp -s "$WORK/out-$f/$a.parquet" "$WORK/out-noskim-$f/$a.parquet" || { echo "DIFFERENT (skim): $f $a.parquet" >&2; exit 1; }
    done
  fi
  if [ "${SKIP:-0}" = 1 ]; then
    measure "$f extract --skip-unlabelled-statements" "$BIN" "${J[@]}" extract --dump "$WORK/$f" \
      --out "$WORK/out-skip-$f" --skip-unlabelled-statements
    SPLIT+=("$(awk -v f="$f, skipping" -v d="$base_cpu" -v e="$LAST_CPU" -v b="$json_bytes" 'BEGIN {
      g = b / 1e9; printf "| %s | %.2f | %.2f | %.2f |", f, d / g, (e - d) / g, (d > 0 ? (e - d) / d : 0) }')")
    for a in entities triples statements properties transitive; do
      cmp -s "$WORK/out-$f/$a.parquet" "$WORK/out-skip-$f/$a.parquet" || { echo "DIFFERENT (skip): $f $a.parquet" >&2; exit 1; }
    done
  fi
done
BASE_WALL=
measure "gzip -dc synth.json.gz > /dev/null" sh -c "gzip -dc '$WORK/synth.json.gz' > /dev/null"
if want synth.json.bz2; then
  bz=$WORK/synth.json.bz2
  measure "bzip2 -dc synth.json.bz2 > /dev/null" sh -c "bzip2 -dc '$bz' > /dev/null"
  measure "lbzip2 -d -n $NBZ -c > /dev/null" sh -c "lbzip2 -d -n $NBZ -c '$bz' > /dev/null"
  measure "lbzip2 -d -n $NBZ -c | extract -" sh -c \
    "lbzip2 -d -n $NBZ -c '$bz' | '$BIN' ${J[*]} extract --dump - --out '$WORK/out-bz2-pipe'"
  for a in entities triples statements properties transitive; do
    cmp -s "$WORK/out-synth.json.bz2/$a.parquet" "$WORK/out-bz2-pipe/$a.parquet" || { echo "DIFFERENT: bz2 pipe $a.parquet" >&2; exit 1; }
  done
fi

for f in $FORMATS; do
  [ "$f" = synth.json ] || [ -d "$WORK/out-synth.json" ] || continue
  for a in entities triples statements properties transitive; do
    cmp -s "$WORK/out-synth.json/$a.parquet" "$WORK/out-$f/$a.parquet" || { echo "DIFFERENT: $f $a.parquet" >&2; exit 1; }
  done
done
echo
echo "| format | decode CPU-s per GB of JSON | parse CPU-s per GB (extract - decode-only) | parse / decode |"
echo "|---|---|---|---|"
printf '%s\n' "${SPLIT[@]}"
echo
also=
[ "${NO_SKIM:-0}" = 1 ] && also+=" (with and without the skim)"
[ "${SKIP:-0}" = 1 ] && also+=" (reading and skipping unlabelled statements)"
echo "All formats run wrote byte-identical Parquet$also."
