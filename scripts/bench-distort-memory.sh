#!/usr/bin/env bash
# Peak RSS and CPU time of distort and export on a run directory whose extract, graph, walks and train stages
# are done (the bound: each at most the size of embeddings.npy + 256 MiB), and, given a second binary, the same
# for it and a byte comparison of what the two wrote (distortions.parquet, sword.parquet, the translation
# requests, the report).
#
#   scripts/bench-distort-memory.sh RUN [OTHER_BIN]
#
# SWORD is the binary measured (default target/release/sword of this repo). RUN is left as it is: each binary
# works on its own copy, RUN.<n> (hard links of the inputs, which the stages never change: they write by
# rename), removed at the end unless KEEP=1. Make RUN with e.g.
#   sword synth --entities 1000000 --out D/wikidata-00000000-synth.json.gz
#   sword run --dump D/wikidata-00000000-synth.json.gz --out RUN --until train
# Prints a Markdown table (stage, binary, wall s, CPU s, peak RSS MiB, the bound) and "same"/"DIFFERS" per
# output file; exits 1 when a bound is exceeded or an output differs.
set -euo pipefail
RUN=${1:?usage: scripts/bench-distort-memory.sh RUN [OTHER_BIN]}
OTHER=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
SWORD=${SWORD:-$root/target/release/sword}
[ -x "$SWORD" ] || { echo "no binary at $SWORD (cargo build --release, or set SWORD)" >&2; exit 2; }
[ -s "$RUN/embeddings.npy" ] || { echo "$RUN/embeddings.npy missing: run the stages up to train first" >&2; exit 2; }
npy_mib=$(($(stat -c %s "$RUN/embeddings.npy") / 1048576))
bound=$((npy_mib + 256))
status=0
bins=("$SWORD")
[ -n "$OTHER" ] && bins+=("$OTHER")
echo "# distort and export on $RUN: embeddings.npy $npy_mib MiB, bound $bound MiB; $(nproc) cores, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| stage | binary | wall s | CPU s | peak RSS MiB | ≤ npy + 256 MiB |"
echo "|---|---|---:|---:|---:|---|"
for n in "${!bins[@]}"; do
  bin=${bins[$n]}
  copy=$RUN.$n
  rm -rf "$copy"
  cp -al "$RUN" "$copy"
  # Outputs of an earlier distort/export and the lock file (a hard link to it would be refused) go.
  rm -rf "$copy/.sword.lock" "$copy/distortions.parquet" "$copy/distort.manifest.json" "$copy/sword.parquet" \
    "$copy/export.manifest.json" "$copy/translation_requests.jsonl" "$copy/report"
  for stage in distort export; do
    tf=$(mktemp)
    /usr/bin/time -v -o "$tf" "$bin" -q "$stage" --out "$copy" >/dev/null
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$tf" | awk -F: '{ if (NF == 3) print $1 * 3600 + $2 * 60 + $3; else print $1 * 60 + $2 }')
    cpu=$(awk -F': ' '/User time/ {u = $2} /System time/ {s = $2} END {printf "%.2f", u + s}' "$tf")
    rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$tf")
    rm -f "$tf"
    ok=yes
    [ "$rss" -le "$bound" ] || { ok=NO; status=1; }
    echo "| $stage | $(basename "$bin") | $wall | $cpu | $rss | $ok |"
  done
done
if [ -n "$OTHER" ]; then
  echo
  for f in distortions.parquet sword.parquet translation_requests.jsonl report/report.md report/cosine_density.svg \
    report/cosine_density_centred.svg report/cosine_diff_density.svg; do
    if cmp -s "$RUN.0/$f" "$RUN.1/$f"; then echo "same    $f"; else echo "DIFFERS $f"; status=1; fi
  done
fi
if [ "${KEEP:-0}" != 1 ]; then
  for n in "${!bins[@]}"; do rm -rf "$RUN.$n"; done
fi
exit $status
