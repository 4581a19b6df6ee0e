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
#
# The nightly at full size, month by month (MONTH=1 or MONTH=2): the nightly as a user runs it, `make -f
# pipeline/Makefile nightly DUMP=… OUT=WORK/out MEMORY_LIMIT=LIMIT`, with the dump streamed through a named pipe
# (WORK/dumps/wikidata-2026MM01-all.json, so the run folder is WORK/out/2026MM01):
#   MONTH=1 SYNTH_CONFIG=pipeline/synth-full-size.toml scripts/bench-full-size.sh $WORK/nightly 112000000 8G
#   MONTH=2 SYNTH_CONFIG=pipeline/synth-full-size.toml scripts/bench-full-size.sh $WORK/nightly 112000000 8G
# Month 1 generates the dump; month 2 generates `synth --later-of WORK/out/20260101 --edits EDITS --world-edits
# WORLD_EDITS` (the same world with EDITS edits of each kind aimed at month 1's benchmark, default 100, and
# WORLD_EDITS of each kind beyond it, on labelled items the benchmark does not name, default 1000; synth writes to stdout, redirected into the
# pipe, since a file it writes goes through a temporary file and a rename, which would replace the pipe) and the nightly then revalidates month 1's
# benchmark and carries it. Keep WORK between the months. Every sword call of the nightly runs under
# /usr/bin/time -v (a wrapper given as SWORD to make); the table gives per stage wall, CPU s, peak RSS, the run
# folder's size after it, extract's spill bytes and, for month 2, the counts per revalidation status and of the
# carry. Month 2's synth is not quiet: it says how many edits of each kind found no statement to aim at (each
# edit goes to a statement no earlier edit touched, so EDITS × 12 kinds must fit the benchmark's statements,
# and the world edits after them).
# Then scripts/check-benchmark.py checks the published benchmark against the month's dump (when the
# project's Python environment exists). TRUTH=1 also writes synth's oracle (`--truth`: the whole world's sets, held in memory: small sizes only).
# A second month-2 distort (`REDISTORT=1`, the default) checks that the carried benchmark has the same
# bytes when drawn again.
set -euo pipefail
if [ -n "${MONTH:-}" ]; then
  WORK=${1:?usage: MONTH=1|2 scripts/bench-full-size.sh WORK [ENTITIES] [LIMIT]}
  ENTITIES=${2:-1000000}
  LIMIT=${3:-64M}
  root=$(cd "$(dirname "$0")/.." && pwd)
  SWORD=${SWORD:-$root/target/release/sword}
  [ -x "$SWORD" ] || { echo "no binary at $SWORD (cargo build --release, or set SWORD)" >&2; exit 2; }
  SWORD=$(cd "$(dirname "$SWORD")" && pwd)/$(basename "$SWORD")
  SC=()
  [ -n "${SYNTH_CONFIG:-}" ] && SC=(--config "$(cd "$(dirname "$SYNTH_CONFIG")" && pwd)/$(basename "$SYNTH_CONFIG")")
  export SWORD_PROGRESS_SECS=${PROGRESS_SECS:-300}
  mkdir -p "$WORK/dumps" "$WORK/out" "$WORK/times"
  WORK=$(cd "$WORK" && pwd)
  date=2026$(printf %02d "$MONTH")01
  run=$WORK/out/$date
  times=$WORK/times/$date
  rm -rf "$times"; mkdir -p "$times"
  fifo=$WORK/dumps/wikidata-$date-all.json
  rm -f "$fifo"; mkfifo "$fifo"
  # The wrapper make calls as SWORD: each call under time -v, then the run folder's size.
  wrap=$WORK/times/sword-timed
  cat >"$wrap" <<WRAP
#!/usr/bin/env bash
sub=\$1; for a in "\$@"; do case \$a in -*|[0-9]*) ;; *) sub=\$a; break;; esac; done
n=\$(ls "$times" | grep -c "^\$sub" || true)
t="$times/\$sub.\$n.time"
/usr/bin/time -v -o "\$t" "$SWORD" "\$@"; code=\$?
echo "disk_mib: \$(du -sm "$run" 2>/dev/null | cut -f1)" >>"\$t"
exit \$code
WRAP
  chmod +x "$wrap"
  echo "# month $MONTH: the nightly on $ENTITIES generated lines streamed through a pipe, MEMORY_LIMIT=$LIMIT; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg), $("$SWORD" --version)"
  synth_t=$times/synth.time
  if [ "$MONTH" = 1 ]; then
    /usr/bin/time -v -o "$synth_t" "$SWORD" -q synth --entities "$ENTITIES" "${SC[@]}" --out - >"$fifo" &
  else
    prev=$WORK/out/$(printf '2026%02d01' $((MONTH - 1)))
    [ -f "$prev/sword.parquet" ] || { echo "no month-$((MONTH - 1)) benchmark at $prev" >&2; exit 2; }
    /usr/bin/time -v -o "$synth_t" "$SWORD" synth --entities "$ENTITIES" "${SC[@]}" --later-of "$prev" \
      --edits "${EDITS:-100}" --world-edits "${WORLD_EDITS:-1000}" ${TRUTH:+--truth "$WORK/dumps/truth-$date.json"} --out - >"$fifo" &
  fi
  synth_pid=$!
  t0=$(date +%s)
  set +e
  /usr/bin/time -v -o "$times/make.time" make --no-print-directory -C "$root" -f pipeline/Makefile nightly \
    DUMP="$fifo" OUT="$WORK/out" MEMORY_LIMIT="$LIMIT" SWORD="$wrap" ${JOBS:+JOBS=$JOBS}
  code=$?
  set -e
  wait "$synth_pid" || echo "synth exited $?" >&2
  echo "nightly exit code $code, $(( $(date +%s) - t0 )) s"
  secs() { awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$1" |
    awk -F: '{ if (NF == 3) print $1 * 3600 + $2 * 60 + $3; else print $1 * 60 + $2 }'; }
  cpu() { awk -F': ' '/User time/ {u = $2} /System time/ {s = $2} END {printf "%.1f", u + s}' "$1"; }
  rss() { awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$1"; }
  dsk() { awk -F': ' '/^disk_mib/ {print $2}' "$1"; }
  echo
  echo "| step | wall s | CPU s | peak RSS MiB | run dir MiB |"
  echo "|---|---:|---:|---:|---:|"
  echo "| synth (into the pipe) | $(secs "$synth_t") | $(cpu "$synth_t") | $(rss "$synth_t") | |"
  for f in $(ls -tr "$times"/*.time | grep -v -e /make.time -e /synth.time); do
    echo "| $(basename "$f" .time) | $(secs "$f") | $(cpu "$f") | $(rss "$f") | $(dsk "$f") |"
  done
  echo "| the whole nightly (make) | $(secs "$times/make.time") | $(cpu "$times/make.time") | | $(du -sm "$run" | cut -f1) |"
  echo
  python3 - "$run" <<'PY'
import json, os, sys
run = sys.argv[1]
def m(stage):
    p = os.path.join(run, stage + ".manifest.json")
    return json.load(open(p)) if os.path.exists(p) else None
e = m("extract")
if e:
    c, x = e.get("counts", {}), e.get("extra", {})
    print("extract:", {k: c[k] for k in ("json_bytes", "labelled_entities", "triples") if k in c}, "spill:", x.get("spill"))
for stage, pre in (("revalidate", "status_"), ("distort", "carry_")):
    mm = m(stage)
    if mm:
        print(stage + ":", {k: v for k, v in mm.get("counts", {}).items() if k.startswith(pre) or k == "statements"})
PY
  [ -f "$run/logs/summary.txt" ] && { echo; cat "$run/logs/summary.txt"; }
  # The published benchmark against this month's dump, by DuckDB (existence and the PSS/POS definition).
  py=${SWORD_PYTHON:-$root/.venv/bin/python}
  if [ $code -eq 0 ] && [ -x "$py" ]; then
    echo
    SWORD_PYTHON=$py "$root/scripts/check-benchmark.py" "$run" || code=1
  elif [ $code -eq 0 ]; then
    echo "no Python environment at $py (scripts/setup-venv.sh): scripts/check-benchmark.py not run"
  fi
  if [ "$MONTH" != 1 ] && [ "${REDISTORT:-1}" = 1 ] && [ $code -eq 0 ]; then
    # The carried benchmark drawn a second time: the same bytes.
    again=$WORK/redistort-$date
    rm -rf "$again"; mkdir -p "$again"
    for f in "$run"/*.parquet "$run"/*.npy "$run"/*.csr "$run"/nodes.txt "$run"/*.manifest.json; do
      [ -e "$f" ] && ln "$f" "$again/" 2>/dev/null || cp "$f" "$again/"
    done
    rm -f "$again/distortions.parquet" "$again/distort.manifest.json" "$again/lineage.parquet"
    /usr/bin/time -v -o "$times/redistort.time" "$SWORD" -q distort --out "$again" --config "$root/pipeline/distort.toml" \
      --seed "${SEED:-42}" --carry-from "$prev"
    for f in distortions.parquet lineage.parquet; do
      if cmp -s "$run/$f" "$again/$f"; then echo "same    $f (second distort: $(secs "$times/redistort.time") s, $(cpu "$times/redistort.time") CPU-s)"; else echo "DIFFERS $f"; code=1; fi
    done
    rm -rf "$again"
  fi
  rm -f "$fifo"
  exit $code
fi
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
