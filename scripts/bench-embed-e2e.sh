#!/usr/bin/env bash
# End to end, one command each: `sword embed --edges FILE` (graph → walks → skip-gram) against the `pecanpy`
# command line (SparseOTF walks, then gensim Word2Vec inside pecanpy), the pair a user would otherwise run.
# Same edge list, same hyperparameters: 10 walks per node of 10 steps, dim 128, window 5, 1 epoch,
# negative 5 (both defaults), p and q as given, 2 workers. Each run under /usr/bin/time -v: wall, CPU, peak RSS.
#
#   scripts/bench-embed-e2e.sh EDGES [P Q]
#
# Environment: SWORD (binary; default: `cargo build --release`), SWORD_PYTHON (Python with pecanpy; default
# <repo>/.venv/bin/python, made by scripts/setup-venv.sh; its `pecanpy` command is used), THREADS (default 2),
# WORK (scratch, default data/work/bench-embed-e2e in the repo, ignored by git),
# PECANPY_TIMEOUT (seconds, default 3600). Prints a Markdown table.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
EDGES="${1:?usage: $0 EDGES [P Q]}"
P="${2:-1}"
Q="${3:-1}"
PY="${SWORD_PYTHON:-$ROOT/.venv/bin/python}"
PECANPY="$(dirname "$PY")/pecanpy"
THREADS="${THREADS:-2}"
WORK="${WORK:-$ROOT/data/work/bench-embed-e2e}"
PECANPY_TIMEOUT="${PECANPY_TIMEOUT:-3600}"
mkdir -p "$WORK"
if [ -z "${SWORD:-}" ]; then
    (cd "$ROOT" && cargo build -q --release)
    SWORD="${CARGO_TARGET_DIR:-$ROOT/target}/release/sword"
fi
if [ ! -x "$PECANPY" ]; then
    echo "bench-embed-e2e: no $PECANPY: run scripts/setup-venv.sh (or set SWORD_PYTHON)" >&2
    exit 2
fi

# measure LABEL CMD...: prints a table row (wall s, CPU s, peak RSS MB).
measure() {
    local label="$1"; shift
    if ! /usr/bin/time -v -o "$WORK/time.txt" "$@" >"$WORK/out.txt" 2>&1; then
        echo "| $label | failed or timed out (see $WORK/out.txt) | | |"
        return 0
    fi
    awk -F': ' -v l="$label" '
        /Elapsed \(wall clock\)/ { n = split($2, a, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + a[i] }
        /User time/ { u = $2 } /System time/ { s = $2 } /Maximum resident/ { r = $2 }
        END { printf "| %s | %.1f | %.1f | %.0f |\n", l, w, u + s, r / 1024 }' "$WORK/time.txt"
}

echo "edges: $EDGES ($(wc -l <"$EDGES") lines), p = $P, q = $Q, $THREADS threads, $(date -u '+%F %T') UTC"
echo
echo "| command | wall s | CPU s (user+sys) | peak RSS MB |"
echo "|---|---:|---:|---:|"
# sword's --length counts nodes: 11 nodes = 10 steps, pecanpy's --walk-length 10.
measure "sword embed" "$SWORD" -q -j "$THREADS" embed --edges "$EDGES" --out "$WORK/sword" \
    --p "$P" --q "$Q" --length 11 --walks-per-node 10
measure "pecanpy (SparseOTF + gensim)" env NUMBA_NUM_THREADS="$THREADS" timeout "$PECANPY_TIMEOUT" \
    "$PECANPY" --input "$EDGES" --output "$WORK/pecanpy.emb" --mode SparseOTF \
    --workers "$THREADS" --dimensions 128 --walk-length 10 --num-walks 10 --window-size 5 --epochs 1 \
    --p "$P" --q "$Q"
