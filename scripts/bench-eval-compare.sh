#!/usr/bin/env bash
# Wall time and peak RSS of `sword eval compare` on generated answers: MODELS models × ORIGINALS originals × 5
# strategies × 8 languages (default 20 × 2,000 × 5 × 8 = 1.6 M answers, ≈ 720 MB of samples.jsonl as
# `eval run` writes them), BOOTSTRAP replicates (default 1,000), THREADS worker threads (default 2). The target
# is ≤ 30 s and ≤ 2 GiB on 2 cores.
#
#   scripts/bench-eval-compare.sh                       # SWORD=target/quick/sword by default
#   SWORD=target/release/sword MODELS=5 scripts/bench-eval-compare.sh
#
# The answers are generated once into WORK (default data/work/compare-bench, ignored by git) by
# scripts/gen-compare-samples.py (Python's standard library only). Run it under `cslot --all` (the shared machine's exclusive slot) or on
# an otherwise idle machine for a timing. Prints one Markdown table row; exits 1 when a target is missed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
SWORD=${SWORD:-$root/target/quick/sword}
MODELS=${MODELS:-20}
ORIGINALS=${ORIGINALS:-2000}
BOOTSTRAP=${BOOTSTRAP:-1000}
THREADS=${THREADS:-2}
WORK=${WORK:-$root/data/work/compare-bench}
PYTHON=${PYTHON:-python3}
[ -x "$SWORD" ] || { echo "no binary at $SWORD (cargo build --profile quick, or set SWORD)" >&2; exit 2; }
stamp="$WORK/.generated-$MODELS-$ORIGINALS"
if [ ! -e "$stamp" ]; then
  rm -rf "$WORK"
  "$PYTHON" "$root/scripts/gen-compare-samples.py" --out "$WORK" --models "$MODELS" --originals "$ORIGINALS"
  touch "$stamp"
fi
answers=$(cat "$WORK"/eval/*/sword/samples.jsonl | wc -l)
mb=$(du -sm "$WORK/eval" | cut -f1)
rm -rf "$WORK/out"
/usr/bin/time -v "$SWORD" -q -j "$THREADS" eval compare --results "$WORK/eval" --out "$WORK/out" \
  --bootstrap "$BOOTSTRAP" 2> "$WORK/time.log"
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s}' "$WORK/time.log")
cpu=$(awk -F': ' '/User time/ {u = $2} /System time/ {s = $2} END {print u + s}' "$WORK/time.log")
rss_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$WORK/time.log")
rss_mib=$((rss_kb / 1024))
echo "| models | answers | samples MB | bootstrap | threads | wall s | CPU s | peak RSS MiB |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
echo "| $MODELS | $answers | $mb | $BOOTSTRAP | $THREADS | $wall | $cpu | $rss_mib |"
ok=$(awk -v w="$wall" -v r="$rss_mib" 'BEGIN {print (w <= 30 && r <= 2048) ? 1 : 0}')
[ "$ok" = 1 ] || { echo "target missed: ≤ 30 s and ≤ 2048 MiB" >&2; exit 1; }
