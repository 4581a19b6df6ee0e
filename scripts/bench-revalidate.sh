#!/usr/bin/env bash
# Revalidation against the extract it must cost less than (docs/versions.md "Scale"): wall, CPU (user + sys) and
# peak RSS under /usr/bin/time -v of `sword revalidate` of a benchmark against the extract of a later version of
# its dump, beside that extract's; with a second binary, its revalidation too and a byte comparison of the two
# revalidation.parquet files and of their manifests' counts.
#
#   scripts/bench-revalidate.sh DIR [OTHER_BIN]
#
# SWORD is the binary measured (default target/release/sword of this repo); it also makes the worlds, once, in
# DIR (kept between runs; delete DIR to make them again):
#   DIR/v1  synth (ENTITIES lines, default 2 000 000) | extract; distort --samples SAMPLES (default ENTITIES/25)
#           --probe-candidates 0; export
#   DIR/v2  synth --later-of DIR/v1 --edits EDITS (default ENTITIES/10 000) | extract
# MAKE_ONLY=1 stops there. Each run times that extract again (piped from synth, as in docs/versions.md; into DIR/x, removed after) and
# revalidation at -j THREADS (default 1, as the figures in BENCHMARKS.md). Run it under `cslot --all`. Prints a
# Markdown table (step, binary, wall s, CPU s, peak RSS MiB) and, given OTHER_BIN, "same"/"DIFFERS" for the two
# revalidation.parquet files and manifest counts; exits 1 when they differ.
set -euo pipefail
DIR=${1:?usage: scripts/bench-revalidate.sh DIR [OTHER_BIN]}
OTHER=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
SWORD=${SWORD:-$root/target/release/sword}
ENTITIES=${ENTITIES:-2000000}
SAMPLES=${SAMPLES:-$((ENTITIES / 25))}
EDITS=${EDITS:-$((ENTITIES / 10000))}
THREADS=${THREADS:-1}
[ -x "$SWORD" ] || { echo "no binary at $SWORD (cargo build --release, or set SWORD)" >&2; exit 2; }
mkdir -p "$DIR"

# `measures FILE`: "wall-s CPU-s peak-RSS-MiB" from the report of /usr/bin/time -v in FILE.
measures() {
  local wall cpu rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$1" | awk -F: '{ if (NF == 3) print $1 * 3600 + $2 * 60 + $3; else print $1 * 60 + $2 }')
  cpu=$(awk -F': ' '/User time/ {u = $2} /System time/ {s = $2} END {printf "%.2f", u + s}' "$1")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$1")
  echo "$wall $cpu $rss"
}

# `timed CMD...`: run CMD under /usr/bin/time -v; sets wall, cpu, rss.
timed() {
  local tf
  tf=$(mktemp)
  /usr/bin/time -v -o "$tf" "$@" >/dev/null
  read -r wall cpu rss < <(measures "$tf")
  rm -f "$tf"
}

if [ ! -s "$DIR/v1/sword.parquet" ]; then
  rm -rf "$DIR/v1"
  "$SWORD" -q synth --entities "$ENTITIES" --seed 42 --out - | "$SWORD" -q extract --dump - --out "$DIR/v1"
  "$SWORD" -q distort --out "$DIR/v1" --seed 42 --samples "$SAMPLES" --probe-candidates 0
  "$SWORD" -q export --out "$DIR/v1"
  rm -f "$DIR/v1/translation_requests.jsonl"
fi
later() { "$SWORD" -q synth --entities "$ENTITIES" --seed 42 --later-of "$DIR/v1" --edits "$EDITS" --out -; }
if [ ! -s "$DIR/v2/extract.manifest.json" ]; then
  rm -rf "$DIR/v2"
  later | "$SWORD" -q extract --dump - --out "$DIR/v2"
fi
# MAKE_ONLY=1: make the worlds and stop (to time the rest alone under `cslot --all`).
[ "${MAKE_ONLY:-0}" = 1 ] && exit 0
rm -rf "$DIR/x"
tf=$(mktemp)
later | /usr/bin/time -v -o "$tf" "$SWORD" -q extract --dump - --out "$DIR/x" >/dev/null
read -r wall cpu rss < <(measures "$tf")
rm -rf "$DIR/x" "$tf"
echo "$wall $cpu $rss" >"$DIR/extract-time"
statements=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["counts"]["rows"])' \
  "$DIR/v1/export.manifest.json" 2>/dev/null || echo "?")
echo "# revalidate -j $THREADS: $ENTITIES-line world, benchmark of $statements statements, $EDITS edits of each kind;"
echo "# $(nproc) cores, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| step | binary | wall s | CPU s | peak RSS MiB |"
echo "|---|---|---:|---:|---:|"
read -r wall cpu rss <"$DIR/extract-time"
echo "| extract of the later dump (piped from synth) | $(basename "$SWORD") | $wall | $cpu | $rss |"
bins=("$SWORD")
[ -n "$OTHER" ] && bins+=("$OTHER")
for n in "${!bins[@]}"; do
  bin=${bins[$n]}
  rm -rf "$DIR/rv.$n"
  # Not quiet: the log says how many reachability searches the checks made (binaries that log it).
  timed "$bin" -j "$THREADS" revalidate --benchmark "$DIR/v1" --against "$DIR/v2" --out "$DIR/rv.$n" \
    2>"$DIR/rv.$n.log"
  echo "| revalidate | $(basename "$bin") | $wall | $cpu | $rss |"
done
echo
for n in "${!bins[@]}"; do
  echo "$(basename "${bins[$n]}"): $(grep -h 'existence checks' "$DIR/rv.$n.log" || echo 'no search counts logged')"
done
status=0
if [ -n "$OTHER" ]; then
  echo
  counts() { python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["counts"], sort_keys=True))' "$1"; }
  if cmp -s "$DIR/rv.0/revalidation.parquet" "$DIR/rv.1/revalidation.parquet"; then
    echo "same    revalidation.parquet"
  else
    echo "DIFFERS revalidation.parquet"; status=1
  fi
  if [ "$(counts "$DIR/rv.0/revalidate.manifest.json")" = "$(counts "$DIR/rv.1/revalidate.manifest.json")" ]; then
    echo "same    manifest counts"
  else
    echo "DIFFERS manifest counts"; status=1
  fi
fi
exit $status
