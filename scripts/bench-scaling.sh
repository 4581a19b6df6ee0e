#!/usr/bin/env bash
# How the stages scale with the thread count, on whatever host runs it: one short run that generates a dump,
# runs each stage at -j 1, 2, 4, 8, 16 (up to the host's cores), checks that every -j wrote the same bytes,
# and prints Markdown tables and Amdahl fits for BENCHMARKS.md.
#
#   scripts/bench-scaling.sh [WORK]            # default WORK: data/work/bench-scaling (ignored by git)
#
# Stages (STAGES, in this order by default):
#   decode   `sword extract --decode-only`: the dump's decoder alone (no output to compare)
#   extract  `sword extract` (entities, triples, statements, properties, transitive Parquet files compared)
#   train    `sword train` on the walks of that extract (embeddings.npy and embeddings.w2v compared)
# decode and extract are run and reported by `extract_case` and `extract_report` of
# scripts/bench-scaling-extract.sh (sourced), so both scripts measure them one way. graph and walks run once,
# untimed, at the host's full thread count, to make train's input.
#
# Every measurement is the whole process under /usr/bin/time: wall seconds and CPU seconds (user + sys); for
# train also the SGD phase alone (train.manifest.json timings.train) and its words/s. Speed-up = wall at -j 1
# / wall at -j N. The Amdahl fit is the least-squares serial share s of wall(N) = wall(1)·(s + (1 − s)/N)
# over the measured N; from it the predicted speed-up at 16, 32 and 64 threads, and the time of the full dump
# scaled from this one by size (FULL_JSON_BYTES of JSON for decode and extract, FULL_WORDS words for train):
# an extrapolation, marked so.
#
# Environment:
#   SWORD      binary (default: `cargo build --release`, then target/release/sword)
#   LINES      dump lines (default 3000000: 21.7 GB of JSON, 31 M words of walks; 400000 on a 2-core host)
#   JS         thread counts (default "1 2 4 8 16", those above the host's cores dropped)
#   STAGES     default "decode extract train"
#   REPS       runs per (stage, -j), alternating, the median kept (default 1)
#   MEMORY     --memory-limit of extract: with a size (e.g. 64M) the extract runs are the spilling case
#              (default auto)
#   FULL_JSON_BYTES  default 1500000000000 (≈ 1.5 TB, the full dump); FULL_WORDS default 100000000
# Nothing is timed while something else of ours runs: on a shared host, wrap it (e.g. `cslot --all`).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench-scaling-extract.sh
. "$ROOT/scripts/bench-scaling-extract.sh"
WORK="${1:-$ROOT/data/work/bench-scaling}"
LINES="${LINES:-3000000}"
STAGES="${STAGES:-decode extract train}"
REPS="${REPS:-1}"
MEMORY="${MEMORY:-auto}"
FULL_JSON_BYTES="${FULL_JSON_BYTES:-1500000000000}"
FULL_WORDS="${FULL_WORDS:-100000000}"
CORES=$(nproc)
JS_ALL="${JS:-1 2 4 8 16}"
JS=""
for j in $JS_ALL; do [ "$j" -le "$CORES" ] && JS="$JS $j"; done
if [ -z "${SWORD:-}" ]; then
    (cd "$ROOT" && cargo build --release --locked >&2)
    SWORD="${CARGO_TARGET_DIR:-$ROOT/target}/release/sword"
fi
[ -x "$SWORD" ] || { echo "bench-scaling: no binary at $SWORD" >&2; exit 2; }
mkdir -p "$WORK"
WORK="$(cd "$WORK" && pwd)"
DUMP="$WORK/wikidata-00000000-synth-$LINES.json.gz"
EXTRACT_ROWS="$WORK/extract-rows.tsv"  # extract_case's rows
TRAIN_ROWS="$WORK/train-rows.tsv"      # j, rep, wall s, cpu s, SGD phase s, words/s, hash
: > "$EXTRACT_ROWS"
: > "$TRAIN_ROWS"
log() { echo "[bench-scaling] $*" >&2; }

if [ ! -s "$DUMP" ]; then
    log "generating $DUMP ($LINES lines)"
    "$SWORD" -q synth --entities "$LINES" --seed 42 --out "$WORK/partial.json.gz"
    mv "$WORK/partial.json.gz" "$DUMP"
fi

manifest() { # FILE KEY.PATH -> value
    "${PYTHON:-python3}" -c 'import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v[k]
print(v)' "$1" "$2"
}

# train_case J REP: train at -j J on the walks of $BASE (made once, untimed) and append its row.
BASE="$WORK/base"
train_case() {
    local j=$1 rep=$2 out="$WORK/train-j$1" tf
    if [ ! -s "$BASE/walks.bin" ]; then
        rm -rf "$BASE"
        if [ -s "$WORK/extract-j1/triples.parquet" ]; then
            cp -r "$WORK/extract-j1" "$BASE"
        else
            log "extract for train's input"
            "$SWORD" -q extract --dump "$DUMP" --out "$BASE" --memory-limit "$MEMORY"
        fi
        log "graph and walks (untimed)"
        "$SWORD" -q graph --out "$BASE"
        "$SWORD" -q walks --out "$BASE" --seed 42
    fi
    rm -rf "$out"; mkdir -p "$out"
    for f in walks.bin nodes.txt graph.csr graph.manifest.json walks.manifest.json; do
        ln -s "$BASE/$f" "$out/$f"
    done
    tf=$(mktemp)
    /usr/bin/time -f "%e %U %S" -o "$tf" "$SWORD" -q -j "$j" train --out "$out" --seed 42 >&2
    local wall user sys cpu
    read -r wall user sys < "$tf"
    rm -f "$tf"
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$j" "$rep" "$wall" "$cpu" \
        "$(manifest "$out/train.manifest.json" timings.train)" \
        "$(manifest "$out/train.manifest.json" extra.words_per_sec)" \
        "$(cd "$out" && cat embeddings.npy embeddings.w2v | sha256sum | cut -c1-16)" >> "$TRAIN_ROWS"
    manifest "$out/train.manifest.json" counts.words > "$WORK/train.words"
    rm -rf "$out"
    log "train -j $j (run $rep): $(tail -n1 "$TRAIN_ROWS")"
}

for stage in $STAGES; do
    for rep in $(seq "$REPS"); do
        for j in $JS; do
            case "$stage" in
                decode) extract_case decode "$j" "$rep" "$SWORD" "$DUMP" "$WORK" | tee -a "$EXTRACT_ROWS" >&2 ;;
                extract)
                    if [ "$MEMORY" = auto ]; then
                        extract_case extract "$j" "$rep" "$SWORD" "$DUMP" "$WORK" | tee -a "$EXTRACT_ROWS" >&2
                    else
                        extract_case extract-spill "$j" "$rep" "$SWORD" "$DUMP" "$WORK" "$MEMORY" \
                            | tee -a "$EXTRACT_ROWS" >&2
                    fi
                    ;;
                train) train_case "$j" "$rep" ;;
                *) log "unknown stage $stage"; exit 2 ;;
            esac
        done
    done
done

JSON_BYTES=0
for m in "$WORK/extract-j1/extract.manifest.json" "$BASE/extract.manifest.json"; do
    if [ -s "$m" ]; then JSON_BYTES=$(manifest "$m" counts.json_bytes); break; fi
done
WORDS=$(cat "$WORK/train.words" 2>/dev/null || echo 0)
echo "# bench-scaling: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $CORES cores; $(date -u '+%F %H:%M UTC'); $("$SWORD" --version)"
echo
echo "dump: $LINES lines, $JSON_BYTES bytes of JSON; train: $WORDS words; load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
status=0
if [ -s "$EXTRACT_ROWS" ]; then
    extract_report "$EXTRACT_ROWS" "$JSON_BYTES" "$FULL_JSON_BYTES" || status=$?
    echo
fi
[ -s "$TRAIN_ROWS" ] || exit "$status"
"${PYTHON:-python3}" - "$TRAIN_ROWS" "$WORDS" "$FULL_WORDS" <<'PY' || status=$?
import statistics, sys
from collections import defaultdict

rows_path, words, full_words = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
runs = defaultdict(list)
for line in open(rows_path):
    j, rep, wall, cpu, phase, wps, h = line.rstrip("\n").split("\t")
    runs[int(j)].append((float(wall), float(cpu), float(phase), float(wps), h))
js = sorted(runs)
med = {j: statistics.median(r[0] for r in runs[j]) for j in js}
first = {r[4] for r in runs[js[0]]}
print("| train -j | wall s | CPU s | SGD phase s | words/s | speed-up | efficiency | same bytes as -j 1 |")
print("|---:|---:|---:|---:|---:|---:|---:|---|")
bad = False
for j in js:
    rs = runs[j]
    hashes = {r[4] for r in rs}
    same = "yes" if hashes == first and len(hashes) == 1 else "**no**"
    bad |= same != "yes"
    sp = med[1] / med[j] if 1 in med else float("nan")
    print(f"| {j} | {med[j]:.2f} | {statistics.median(r[1] for r in rs):.2f} | "
          f"{statistics.median(r[2] for r in rs):.2f} | {statistics.median(r[3] for r in rs):,.0f} | "
          f"{sp:.2f}× | {sp / j:.0%} | {same} |")
if 1 in med and len(js) > 1:
    # Least squares of wall(N)/wall(1) − 1/N = s·(1 − 1/N) over N > 1.
    xs = [1 - 1 / j for j in js if j > 1]
    ys = [med[j] / med[1] - 1 / j for j in js if j > 1]
    s = max(0.0, min(1.0, sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)))
    sp = {n: 1 / (s + (1 - s) / n) for n in (16, 32, 64)}
    full = med[1] * full_words / words if words else float("nan")
    hm = lambda x: "—" if x != x else (f"{x / 3600:.1f} h" if x >= 3600 else f"{x / 60:.1f} min")
    print()
    print(f"Amdahl fit of train: s = {s:.3f}; predicted ×16 {sp[16]:.1f}×, ×32 {sp[32]:.1f}×, ×64 {sp[64]:.1f}×; "
          f"{full_words:.0f} words at -j 1 {hm(full)}, at -j 32 {hm(full / sp[32])} (**extrapolated, not measured**)")
if bad:
    print("\n**train: bytes differ between thread counts**")
    sys.exit(1)
PY
exit "$status"
