#!/usr/bin/env bash
# The pipeline at any size without the dump on disk: `sword synth --out -` streams a generated
# dump of ENTITIES lines into `sword extract --dump - --memory-limit LIMIT`, then graph, walks, train, distort
# and export run on the result; every stage under /usr/bin/time -v. With CHECK=1 (for sizes that fit on disk)
# the dump is also written to WORK and extracted once more with `--memory-limit none`, and the five Parquet
# files of the two extracts are compared byte for byte.
#
#   scripts/bench-full-size.sh WORK [ENTITIES] [LIMIT]        # defaults: 1000000 lines, 64M
#   CHECK=1 scripts/bench-full-size.sh /scratch/sword-1m 1000000 64M
#   UNTIL=extract scripts/bench-full-size.sh /scratch/sword-112m 112000000 8G   # the full size, extract only
#
# SWORD is the binary (default target/release/sword of this repo); JOBS its -j (default: all cores); UNTIL the
# last stage (default export); SYNTH_CONFIG a `synth` TOML (e.g. `labelled_share`, to set the generator to the
# real dump's proportions at 112 M lines: pipeline/synth-full-size.toml); KEEP=1 keeps WORK's run directory
# (default: removed at the end, except the table). Every PROGRESS_SECS seconds (default 300) the stages log their
# progress on stderr and a monitor line gives the elapsed time, the load, the bytes synth has written, the RSS of
# the running stages and the run directory's size (QUIET=1: neither). Prints a Markdown table: stage, wall s, CPU s, peak RSS MiB, disk used by the run directory
# after the stage (MiB), and for extract the spill runs and bytes; then "same"/"DIFFERS" per file with CHECK=1.
# Exits 1 when extract's peak RSS passes LIMIT + OVERHEAD_MIB (default 160) or a file differs.
set -euo pipefail
WORK=${1:?usage: scripts/bench-full-size.sh WORK [ENTITIES] [LIMIT]}
ENTITIES=${2:-1000000}
LIMIT=${3:-64M}
UNTIL=${UNTIL:-export}
OVERHEAD_MIB=${OVERHEAD_MIB:-160}
root=$(cd "$(dirname "$0")/.." && pwd)
SWORD=${SWORD:-$root/target/release/sword}
[ -x "$SWORD" ] || { echo "no binary at $SWORD (cargo build --release, or set SWORD)" >&2; exit 2; }
J=()
[ -n "${JOBS:-}" ] && J=(-j "$JOBS")
PROGRESS_SECS=${PROGRESS_SECS:-300}
export SWORD_PROGRESS_SECS=$PROGRESS_SECS
[ "${QUIET:-0}" = 1 ] && J+=(-q)
SC=()
[ -n "${SYNTH_CONFIG:-}" ] && SC=(--config "$SYNTH_CONFIG")
run=$WORK/run
mkdir -p "$WORK"
rm -rf "$run"
status=0
limit_mib=$(awk -v s="$LIMIT" 'BEGIN { n = s + 0; u = toupper(substr(s, length(s)));
  m = (u == "K") ? 1 / 1024 : (u == "M") ? 1 : (u == "G") ? 1024 : (u == "T") ? 1048576 : 1 / 1048576;
  printf "%.0f", n * m }')

secs() { awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$1" |
  awk -F: '{ if (NF == 3) print $1 * 3600 + $2 * 60 + $3; else print $1 * 60 + $2 }'; }
cpu() { awk -F': ' '/User time/ {u = $2} /System time/ {s = $2} END {printf "%.1f", u + s}' "$1"; }
rss() { awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$1"; }
disk() { du -sm "$run" | cut -f1; }

echo "# $ENTITIES generated lines, extract --memory-limit $LIMIT; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| stage | wall s | CPU s | peak RSS MiB | run dir MiB | notes |"
echo "|---|---:|---:|---:|---:|---|"
t=$(mktemp)
synth_t=$(mktemp)
t0=$(date +%s)
# The monitor: one line on stderr every PROGRESS_SECS seconds while the script runs.
monitor() {
  while sleep "$PROGRESS_SECS"; do
    line="progress $(date -u +%T) +$(( $(date +%s) - t0 ))s load $(cut -d' ' -f1-3 /proc/loadavg);"
    for pid in $(pgrep -f -- "^$SWORD " 2>/dev/null); do
      cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -oE ' (synth|extract|graph|walks|train|distort|export) ' | head -1 | tr -d ' ')
      [ -n "$cmd" ] || continue
      rss_k=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null)
      io=$(awk '/^rchar/ {r = $2} /^wchar/ {w = $2} END {printf "read %.1f GB, wrote %.1f GB", r / 1e9, w / 1e9}' "/proc/$pid/io" 2>/dev/null)
      line="$line $cmd rss $(( ${rss_k:-0} / 1024 )) MiB, $io;"
    done
    [ -d "$run" ] && line="$line run dir $(du -sm "$run" 2>/dev/null | cut -f1) MiB"
    echo "$line" >&2
  done
}
if [ "${QUIET:-0}" != 1 ]; then
  monitor &
  mon=$!
  trap 'kill $mon 2>/dev/null' EXIT
fi
# The generator and extract run side by side (a pipe); each has its own time -v.
/usr/bin/time -v -o "$synth_t" "$SWORD" "${J[@]}" synth --entities "$ENTITIES" "${SC[@]}" --out - |
  /usr/bin/time -v -o "$t" "$SWORD" "${J[@]}" extract --dump - --out "$run" --memory-limit "$LIMIT" >/dev/null
echo "| synth (into the pipe) | $(secs "$synth_t") | $(cpu "$synth_t") | $(rss "$synth_t") | | $ENTITIES lines |"
spill=$(python3 -c "import json,sys; m=json.load(open(sys.argv[1])); s=m['extra']['spill']; c=m['counts'];
print(f\"{s['runs']} runs, {s['bytes']/2**20:.0f} MiB spilled; {c['json_bytes']/1e9:.2f} GB of JSON, {c['labelled_entities']} labelled, {c['triples']} triples\")" "$run/extract.manifest.json")
r=$(rss "$t")
ok="≤ $LIMIT + $OVERHEAD_MIB MiB"
[ "$r" -le $((limit_mib + OVERHEAD_MIB)) ] || { ok="OVER $LIMIT + $OVERHEAD_MIB MiB"; status=1; }
echo "| extract | $(secs "$t") | $(cpu "$t") | $r | $(disk) | $spill; $ok |"
stages=(graph walks train distort export)
if [ "$UNTIL" != extract ]; then
  for s in "${stages[@]}"; do
    /usr/bin/time -v -o "$t" "$SWORD" "${J[@]}" "$s" --out "$run" >/dev/null
    echo "| $s | $(secs "$t") | $(cpu "$t") | $(rss "$t") | $(disk) | |"
    [ "$s" = "$UNTIL" ] && break
  done
fi
if [ "${CHECK:-0}" = 1 ]; then
  dump=$WORK/wikidata-00000000-synth.json
  "$SWORD" "${J[@]}" synth --entities "$ENTITIES" "${SC[@]}" --out "$dump"
  /usr/bin/time -v -o "$t" "$SWORD" "${J[@]}" extract --dump "$dump" --out "$WORK/free" --memory-limit none >/dev/null
  echo "| extract --memory-limit none (from the file) | $(secs "$t") | $(cpu "$t") | $(rss "$t") | | |"
  echo
  for f in entities triples statements properties transitive; do
    if cmp -s "$run/$f.parquet" "$WORK/free/$f.parquet"; then echo "same    $f.parquet"; else echo "DIFFERS $f.parquet"; status=1; fi
  done
  rm -rf "$dump" "$WORK/free"
fi
rm -f "$t" "$synth_t"
[ "${KEEP:-0}" = 1 ] || rm -rf "$run"
exit $status
