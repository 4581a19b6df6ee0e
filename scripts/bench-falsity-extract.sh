#!/usr/bin/env bash
# What keeping the falsity tier's tables costs extract: the same generated dump (with property constraints,
# claims without a value and P279 chains: `sword synth`) extracted by a base binary without the tables and by
# this one, REPS times each, alternating; wall s, CPU s (user + sys) and peak RSS of the whole process (median),
# the four tables' rows, and a check that the five artifacts both write are the same bytes.
#
#   BASE=path/to/base/sword scripts/bench-falsity-extract.sh [WORK]    # WORK default: data/work/bench-falsity
#
# Environment:
#   SWORD   this build (default: target/release/sword)
#   BASE    the base binary (required; e.g. main's release build before the falsity tier, kept outside the tree)
#   LINES   dump lines (default 200000)
#   J       threads (default 2)
#   REPS    runs per binary (default 3)
#   LIMIT   --memory-limit (default auto; e.g. 64M to measure the spilling path)
# Nothing is timed while something else of ours runs: on a shared host, wrap it (e.g. `cslot --all`).
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${1:-data/work/bench-falsity}
SWORD=${SWORD:-target/release/sword}
BASE=${BASE:?set BASE to the base binary}
LINES=${LINES:-200000}
J=${J:-2}
REPS=${REPS:-3}
LIMIT=${LIMIT:-auto}
export SWORD_QUIET=1
mkdir -p "$WORK"
dump="$WORK/wikidata-20240102-all.json.gz"
[ -f "$dump" ] || "$SWORD" synth --entities "$LINES" --seed 7 --out "$dump"

run() { # run NAME BIN REP: one extract; prints "wall cpu rss_kib"
    local out="$WORK/$1" tf
    tf=$(mktemp)
    rm -rf "$out"
    /usr/bin/time -f "%e %U %S %M" -o "$tf" "$2" -q -j "$J" extract --dump "$dump" --out "$out" \
        --memory-limit "$LIMIT" > /dev/null
    awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$tf"
    rm -f "$tf"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

: > "$WORK/base.txt"
: > "$WORK/new.txt"
for rep in $(seq "$REPS"); do
    run base "$BASE" "$rep" >> "$WORK/base.txt"
    run new "$SWORD" "$rep" >> "$WORK/new.txt"
done
for f in entities triples statements properties transitive; do
    cmp -s "$WORK/base/$f.parquet" "$WORK/new/$f.parquet" || { echo "$f.parquet differs" >&2; exit 1; }
done
rows=$("${PYTHON:-python3}" -c "import json, sys
c = json.load(open(sys.argv[1]))['counts']
print(', '.join('%s %d' % (k[8:-5], c.get(k, 0)) for k in
      ['falsity_constraint_rows', 'falsity_values_rows', 'falsity_types_rows', 'falsity_distinct_rows']))" "$WORK/new/extract.manifest.json")
echo "dump: $LINES lines ($(du -h "$dump" | cut -f1) gzip), -j $J, --memory-limit $LIMIT, median of $REPS"
echo "tables: $rows"
echo
echo "| build | wall s | CPU s | peak RSS MiB |"
echo "|---|---:|---:|---:|"
for b in base new; do
    w=$(cut -d' ' -f1 "$WORK/$b.txt" | median)
    c=$(cut -d' ' -f2 "$WORK/$b.txt" | median)
    r=$(cut -d' ' -f3 "$WORK/$b.txt" | median)
    echo "| $b | $w | $c | $((r / 1024)) |"
done
echo
echo "the five artifacts both builds write: same bytes"
