#!/usr/bin/env bash
# How the stages scale with the thread count, on whatever host runs it: one short run that generates a dump,
# runs each stage at -j 1, 2, 4, 8, 16 (up to the host's cores), checks that every -j wrote the same bytes,
# and prints a Markdown table and an Amdahl fit for BENCHMARKS.md.
#
#   scripts/bench-scaling.sh [WORK]            # default WORK: data/work/bench-scaling (ignored by git)
#
# Stages (STAGES, in this order by default):
#   decode   `sword extract --decode-only`: the dump's decoder alone (no output to compare)
#   extract  `sword extract` (entities, triples, statements, properties, transitive Parquet files compared)
#   train    `sword train` on the walks of that extract (embeddings.npy and embeddings.w2v compared)
# graph and walks run once, untimed, at the host's full thread count, to make train's input.
#
# Every measurement is the whole process under /usr/bin/time: wall seconds and CPU seconds (user + sys); for
# train also the SGD phase alone (train.manifest.json timings.train) and its words/s. Speed-up = wall at -j 1
# / wall at -j N. The Amdahl fit is the least-squares serial share s of wall(N) = wall(1)·(s + (1 − s)/N)
# over the measured N; from it the predicted speed-up at 32 and 64 threads, and the time of the full dump
# scaled from this one by size (FULL_JSON_BYTES of JSON for decode and extract, FULL_WORDS words for train):
# an extrapolation, marked so.
#
# Environment:
#   SWORD      binary (default: `cargo build --release`, then target/release/sword)
#   LINES      dump lines (default 3000000: 21.7 GB of JSON, 31 M words of walks; 400000 on a 2-core host)
#   JS         thread counts (default "1 2 4 8 16", those above the host's cores dropped)
#   STAGES     default "decode extract train"
#   REPS       runs per (stage, -j), the median kept (default 1)
#   MEMORY     --memory-limit of extract (default auto)
#   FULL_JSON_BYTES  default 1500000000000 (≈ 1.5 TB, the full dump); FULL_WORDS default 100000000
# Nothing is timed while something else of ours runs: on a shared host, wrap it (e.g. `cslot --all`).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
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
ROWS="$WORK/rows.tsv"   # stage, j, rep, wall s, cpu s, phase s, words/s, hash
: > "$ROWS"
log() { echo "[bench-scaling] $*" >&2; }

if [ ! -s "$DUMP" ]; then
    log "generating $DUMP ($LINES lines)"
    "$SWORD" -q synth --entities "$LINES" --seed 42 --out "$WORK/partial.json.gz"
    mv "$WORK/partial.json.gz" "$DUMP"
fi

# timed STAGE J REP CMD...: run CMD under /usr/bin/time, append wall and CPU to $ROWS (phase, words/s and the
# hash are filled in by the caller through PHASE, WPS and HASH).
timed() {
    local stage=$1 j=$2 rep=$3; shift 3
    local tf; tf=$(mktemp)
    /usr/bin/time -f "%e %U %S" -o "$tf" "$@" >&2
    read -r wall user sys < "$tf"
    rm -f "$tf"
    CPU=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
    WALL=$wall
}

hash_files() { # DIR FILE... -> one hash over the files' bytes, in order
    local dir=$1; shift
    (cd "$dir" && cat "$@" | sha256sum | cut -c1-16)
}

manifest() { # FILE KEY.PATH -> value
    "${PYTHON:-python3}" -c 'import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v[k]
print(v)' "$1" "$2"
}

PARQUET="entities.parquet triples.parquet statements.parquet properties.parquet transitive.parquet"
BASE="$WORK/base"
for stage in $STAGES; do
    for rep in $(seq "$REPS"); do
        for j in $JS; do
            PHASE=""; WPS=""; HASH="-"
            case "$stage" in
                decode)
                    rm -rf "$WORK/decode"
                    timed decode "$j" "$rep" "$SWORD" -q -j "$j" extract --dump "$DUMP" --out "$WORK/decode" --decode-only
                    ;;
                extract)
                    out="$WORK/extract-j$j"
                    rm -rf "$out"
                    timed extract "$j" "$rep" "$SWORD" -q -j "$j" extract --dump "$DUMP" --out "$out" --memory-limit "$MEMORY"
                    HASH=$(hash_files "$out" $PARQUET)
                    if [ ! -s "$BASE/triples.parquet" ]; then
                        rm -rf "$BASE"; cp -r "$out" "$BASE"
                    fi
                    [ "$j" = 1 ] || rm -rf "$out"
                    ;;
                train)
                    if [ ! -s "$BASE/walks.bin" ]; then
                        if [ ! -s "$BASE/triples.parquet" ]; then
                            log "extract for train's input"
                            "$SWORD" -q extract --dump "$DUMP" --out "$BASE" --memory-limit "$MEMORY"
                        fi
                        log "graph and walks (untimed)"
                        "$SWORD" -q graph --out "$BASE"
                        "$SWORD" -q walks --out "$BASE" --seed 42
                    fi
                    out="$WORK/train-j$j"
                    rm -rf "$out"; mkdir -p "$out"
                    for f in walks.bin nodes.txt graph.csr graph.manifest.json walks.manifest.json; do
                        ln -s "$BASE/$f" "$out/$f"
                    done
                    timed train "$j" "$rep" "$SWORD" -q -j "$j" train --out "$out" --seed 42
                    HASH=$(hash_files "$out" embeddings.npy embeddings.w2v)
                    PHASE=$(manifest "$out/train.manifest.json" timings.train)
                    WPS=$(manifest "$out/train.manifest.json" extra.words_per_sec)
                    WORDS=$(manifest "$out/train.manifest.json" counts.words)
                    echo "$WORDS" > "$WORK/train.words"
                    rm -rf "$out"
                    ;;
                *) log "unknown stage $stage"; exit 2 ;;
            esac
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$stage" "$j" "$rep" "$WALL" "$CPU" "$PHASE" "$WPS" "$HASH" >> "$ROWS"
            log "$stage -j $j (run $rep): wall $WALL s, CPU $CPU s${PHASE:+, SGD phase $PHASE s} ${HASH}"
        done
    done
done

JSON_BYTES=""
[ -s "$BASE/extract.manifest.json" ] && JSON_BYTES=$(manifest "$BASE/extract.manifest.json" counts.json_bytes)
WORDS=$(cat "$WORK/train.words" 2>/dev/null || true)
echo "# bench-scaling: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $CORES cores; $(date -u '+%F %H:%M UTC'); $("$SWORD" --version)"
echo
echo "dump: $LINES lines${JSON_BYTES:+, $JSON_BYTES bytes of JSON}${WORDS:+; train: $WORDS words}; load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
"${PYTHON:-python3}" - "$ROWS" "${JSON_BYTES:-0}" "${WORDS:-0}" "$FULL_JSON_BYTES" "$FULL_WORDS" <<'PY'
import statistics, sys
from collections import defaultdict

rows_path, json_bytes, words, full_json, full_words = sys.argv[1], *map(float, sys.argv[2:])
runs = defaultdict(list)
for line in open(rows_path):
    stage, j, rep, wall, cpu, phase, wps, h = line.rstrip("\n").split("\t")
    runs[(stage, int(j))].append((float(wall), float(cpu), float(phase) if phase else None, h))
stages = list(dict.fromkeys(s for s, _ in runs))
print("| stage | -j | wall s | CPU s | speed-up | efficiency | SGD phase s | same bytes as -j 1 |")
print("|---|---:|---:|---:|---:|---:|---:|---|")
fits = {}
for st in stages:
    js = sorted(j for s, j in runs if s == st)
    med = {j: statistics.median(r[0] for r in runs[(st, j)]) for j in js}
    base_hash = {r[3] for r in runs[(st, js[0])]}
    for j in js:
        rs = runs[(st, j)]
        cpu = statistics.median(r[1] for r in rs)
        phase = [r[2] for r in rs if r[2] is not None]
        hashes = {r[3] for r in rs}
        same = "—" if hashes == {"-"} else ("yes" if hashes == base_hash and len(hashes) == 1 else "**no**")
        sp = med[js[0]] / med[j] if js[0] == 1 else float("nan")
        print(f"| {st} | {j} | {med[j]:.2f} | {cpu:.2f} | {sp:.2f}× | {sp / j:.0%} | "
              f"{statistics.median(phase):.2f} | {same} |" if phase else
              f"| {st} | {j} | {med[j]:.2f} | {cpu:.2f} | {sp:.2f}× | {sp / j:.0%} | — | {same} |")
    if js[0] == 1 and len(js) > 1:
        # Least squares of wall(N)/wall(1) − 1/N = s·(1 − 1/N) over N > 1.
        xs = [1 - 1 / j for j in js[1:]]
        ys = [med[j] / med[1] - 1 / j for j in js[1:]]
        s = max(0.0, min(1.0, sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)))
        fits[st] = (s, med[1])
print()
if fits:
    print("Amdahl fit (serial share s of the -j 1 wall; speed-up(N) = 1 / (s + (1 − s)/N)); the full dump scaled "
          "from this one by size (**extrapolated, not measured**):")
    print()
    print("| stage | s | predicted ×16 | ×32 | ×64 | full dump at -j 1 | at -j 32 | at -j 64 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for st, (s, t1) in fits.items():
        scale = (full_json / json_bytes if json_bytes else float("nan")) if st in ("decode", "extract") else (
            full_words / words if words else float("nan"))
        sp = {n: 1 / (s + (1 - s) / n) for n in (16, 32, 64)}
        full = t1 * scale
        def hm(x):
            return "—" if x != x else (f"{x / 3600:.1f} h" if x >= 3600 else f"{x / 60:.1f} min")
        print(f"| {st} | {s:.3f} | {sp[16]:.1f}× | {sp[32]:.1f}× | {sp[64]:.1f}× | {hm(full)} | {hm(full / sp[32])} | "
              f"{hm(full / sp[64])} |")
bad = [st for st in stages if len({r[3] for k, rs in runs.items() if k[0] == st for r in rs}) > 1]
if bad:
    print(f"\n**Bytes differ between thread counts: {', '.join(bad)}**")
    sys.exit(1)
PY
