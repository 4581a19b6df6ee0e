#!/usr/bin/env bash
# How extract and its decoder alone scale with the thread count, on whatever host runs it: one short run that
# generates a dump, runs `sword extract --decode-only` and `sword extract` (and, with SPILL set, extract under a
# --memory-limit small enough to spill) at -j 1, 2, 4, 8, 16 (up to the host's cores), checks that every -j
# wrote the same five Parquet files (and, with BASE set, the files of that other binary), and prints a Markdown
# table and Amdahl fits for BENCHMARKS.md.
#
#   scripts/bench-scaling-extract.sh [WORK]       # default WORK: data/work/bench-scaling (ignored by git)
#
# Every run is the whole process under /usr/bin/time: wall s, CPU s (user + sys), peak RSS; for extract also,
# from extract.manifest.json, the CPU seconds of the stage's own thread (timings.stage_thread_read + _join:
# the in-order hand-off while reading, the merges that feed the join's workers), the part no -j spreads.
# Speed-up = median wall at -j 1 / median wall at -j N. Two Amdahl fits of the serial share s, speed-up(N) =
# 1 / (s + (1 − s)/N): "walls", least squares over the measured N (needs N > 1), and "thread", s = the stage
# thread's CPU / the -j 1 wall (a lower bound: waits on the stage thread count only as its CPU). From each, the
# speed-up at 16, 32 and 64 threads and the full dump's wall scaled from this one by its JSON bytes
# (FULL_JSON_BYTES): an extrapolation, and marked so.
#
# The functions above `main` are meant to be sourced by the scaling script of the other stages
# (scripts/bench-scaling.sh, which runs `decode` and `extract` through the same `extract_case`).
#
# Environment:
#   SWORD      binary (default: `cargo build --release --locked`, then target/release/sword)
#   BASE       a second binary (e.g. main's release build, kept outside the repository): its extract at -j 1 must
#              write the same bytes; the table says so
#   LINES      dump lines (default 3000000: 21.7 GB of JSON; use 400000 on a 2-core host)
#   JS         thread counts (default "1 2 4 8 16", those above the host's cores dropped)
#   REPS       runs per (case, -j), alternating, the median kept (default 1)
#   SPILL      a --memory-limit for an extra `extract-spill` case (e.g. 64M; default: none)
#   FULL_JSON_BYTES  default 1500000000000 (≈ 1.5 TB, the full dump)
# Nothing is timed while something else of ours runs: on a shared host, wrap it (e.g. `cslot --all`).
set -euo pipefail

PARQUET="entities.parquet triples.parquet statements.parquet properties.parquet transitive.parquet"

# extract_case CASE J REP SWORD DUMP WORK [MEMORY]: run one case (`decode`, `extract`, `extract-spill`) at -j J
# and print its row: case, j, rep, wall s, CPU s, peak RSS KiB, stage-thread CPU s (empty for decode), a hash of
# the five Parquet files (`-` for decode). The output folder of `extract` at -j 1 is kept as WORK/extract-j1.
extract_case() {
    local case=$1 j=$2 rep=$3 sword=$4 dump=$5 work=$6 memory=${7:-auto}
    local out="$work/$case-j$j" tf
    tf=$(mktemp)
    rm -rf "$out"
    local args=(-q -j "$j" extract --dump "$dump" --out "$out")
    case "$case" in
        decode) args+=(--decode-only) ;;
        extract) args+=(--memory-limit auto) ;;
        extract-spill) args+=(--memory-limit "$memory") ;;
        *) echo "extract_case: unknown case $case" >&2; return 2 ;;
    esac
    /usr/bin/time -f "%e %U %S %M" -o "$tf" "$sword" "${args[@]}" > /dev/null
    local wall user sys rss
    read -r wall user sys rss < "$tf"
    rm -f "$tf"
    local cpu stage="" hash="-"
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
    if [ "$case" != decode ]; then
        stage=$("${PYTHON:-python3}" -c "import json, sys
t = json.load(open(sys.argv[1]))['timings']
print('%.3f' % (t.get('stage_thread_read', 0) + t.get('stage_thread_join', 0)))" "$out/extract.manifest.json")
        hash=$(cd "$out" && cat $PARQUET | sha256sum | cut -c1-16)
        [ "$case" = extract ] && [ "$j" = 1 ] || rm -rf "$out"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$case" "$j" "$rep" "$wall" "$cpu" "$rss" "$stage" "$hash"
}

# extract_report ROWS JSON_BYTES FULL_JSON_BYTES [BASE_HASH]: the Markdown table and the Amdahl fits.
extract_report() {
    "${PYTHON:-python3}" - "$@" <<'PY'
import statistics, sys
from collections import defaultdict

rows_path, json_bytes, full_json = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
base_hash = sys.argv[4] if len(sys.argv) > 4 else ""
runs = defaultdict(list)
for line in open(rows_path):
    case, j, rep, wall, cpu, rss, stage, h = line.rstrip("\n").split("\t")
    runs[(case, int(j))].append((float(wall), float(cpu), int(rss), float(stage) if stage else None, h))
cases = list(dict.fromkeys(c for c, _ in runs))
med = lambda xs: statistics.median(xs)
print("| case | -j | wall s, median (range) | CPU s | peak RSS MiB | stage thread CPU s | speed-up | efficiency | same bytes as -j 1 |")
print("|---|---:|---|---:|---:|---:|---:|---:|---|")
fits, bad = {}, []
for c in cases:
    js = sorted(j for k, j in runs if k == c)
    walls = {j: med([r[0] for r in runs[(c, j)]]) for j in js}
    first = {r[4] for r in runs[(c, js[0])]}
    for j in js:
        rs = runs[(c, j)]
        hashes = {r[4] for r in rs}
        same = "—" if hashes == {"-"} else ("yes" if hashes == first and len(hashes) == 1 else "**no**")
        if same == "**no**":
            bad.append(c)
        stage = [r[3] for r in rs if r[3] is not None]
        sp = walls[1] / walls[j] if 1 in walls else float("nan")
        lo, hi = min(r[0] for r in rs), max(r[0] for r in rs)
        print(f"| {c} | {j} | {walls[j]:.2f} ({lo:.2f}–{hi:.2f}) | {med([r[1] for r in rs]):.2f} | "
              f"{max(r[2] for r in rs) / 1024:.0f} | {med(stage):.3f} | {sp:.2f}× | {sp / j:.0%} | {same} |"
              if stage else
              f"| {c} | {j} | {walls[j]:.2f} ({lo:.2f}–{hi:.2f}) | {med([r[1] for r in rs]):.2f} | "
              f"{max(r[2] for r in rs) / 1024:.0f} | — | {sp:.2f}× | {sp / j:.0%} | {same} |")
    if 1 in walls:
        if len(js) > 1:
            # Least squares of wall(N)/wall(1) − 1/N = s·(1 − 1/N) over N > 1.
            xs = [1 - 1 / j for j in js if j > 1]
            ys = [walls[j] / walls[1] - 1 / j for j in js if j > 1]
            fits[(c, "walls")] = max(0.0, min(1.0, sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)))
        stage1 = [r[3] for r in runs[(c, 1)] if r[3] is not None]
        if stage1:
            fits[(c, "thread")] = min(1.0, med(stage1) / walls[1])
        fits.setdefault((c, "t1"), walls[1])
print()
if base_hash:
    h = {r[4] for r in runs.get(("extract", 1), [])}
    print(f"BASE binary at -j 1: {'the same bytes' if h == {base_hash} else '**different bytes**'} ({base_hash})")
    print()
    if h != {base_hash}:
        bad.append("BASE")
if any(k[1] != "t1" for k in fits):
    print("Amdahl fits (serial share s; speed-up(N) = 1 / (s + (1 − s)/N)); the full dump scaled from this one by "
          "its JSON bytes (**extrapolated, not measured**):")
    print()
    print("| case | fit | s | ×16 | ×32 | ×64 | full dump at -j 1 | at -j 32 | at -j 64 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    def hm(x):
        return "—" if x != x else (f"{x / 3600:.1f} h" if x >= 3600 else f"{x / 60:.1f} min")
    for (c, kind), s in fits.items():
        if kind == "t1":
            continue
        t1 = fits[(c, "t1")]
        sp = {n: 1 / (s + (1 - s) / n) for n in (16, 32, 64)}
        full = t1 * full_json / json_bytes if json_bytes else float("nan")
        print(f"| {c} | {kind} | {s:.3f} | {sp[16]:.1f}× | {sp[32]:.1f}× | {sp[64]:.1f}× | {hm(full)} | "
              f"{hm(full / sp[32])} | {hm(full / sp[64])} |")
if bad:
    print(f"\n**Bytes differ: {', '.join(dict.fromkeys(bad))}**")
    sys.exit(1)
PY
}

main() {
    local root work
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    work="${1:-$root/data/work/bench-scaling}"
    local lines="${LINES:-3000000}" reps="${REPS:-1}" full="${FULL_JSON_BYTES:-1500000000000}"
    local cores js=""
    cores=$(nproc)
    for j in ${JS:-1 2 4 8 16}; do [ "$j" -le "$cores" ] && js="$js $j"; done
    if [ -z "${SWORD:-}" ]; then
        (cd "$root" && cargo build --release --locked >&2)
        SWORD="${CARGO_TARGET_DIR:-$root/target}/release/sword"
    fi
    [ -x "$SWORD" ] || { echo "bench-scaling-extract: no binary at $SWORD" >&2; exit 2; }
    mkdir -p "$work"
    work="$(cd "$work" && pwd)"
    local dump="$work/wikidata-00000000-synth-$lines.json.gz" rows="$work/extract-rows.tsv"
    if [ ! -s "$dump" ]; then
        echo "[bench-scaling-extract] generating $dump ($lines lines)" >&2
        "$SWORD" -q synth --entities "$lines" --seed 42 --out "$work/partial.json.gz"
        mv "$work/partial.json.gz" "$dump"
    fi
    local load0 cases="decode extract"
    load0=$(cut -d' ' -f1-3 /proc/loadavg)
    [ -n "${SPILL:-}" ] && cases="$cases extract-spill"
    : > "$rows"
    for rep in $(seq "$reps"); do
        for case in $cases; do
            for j in $js; do
                extract_case "$case" "$j" "$rep" "$SWORD" "$dump" "$work" "${SPILL:-auto}" | tee -a "$rows" >&2
            done
        done
    done
    local base_hash=""
    if [ -n "${BASE:-}" ]; then
        rm -rf "$work/base-j1"
        "$BASE" -q -j 1 extract --dump "$dump" --out "$work/base-j1" > /dev/null
        base_hash=$(cd "$work/base-j1" && cat $PARQUET | sha256sum | cut -c1-16)
        rm -rf "$work/base-j1"
    fi
    local json_bytes
    json_bytes=$("${PYTHON:-python3}" -c 'import json, sys
print(json.load(open(sys.argv[1]))["counts"]["json_bytes"])' "$work/extract-j1/extract.manifest.json")
    echo "# bench-scaling-extract: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $cores cores;" \
        "$(date -u '+%F %H:%M UTC'); $("$SWORD" --version)"
    echo
    echo "dump: $lines lines, $json_bytes bytes of JSON; $reps run(s) per case and -j; load before: $load0, after:" \
        "$(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    extract_report "$rows" "$json_bytes" "$full" $base_hash
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
