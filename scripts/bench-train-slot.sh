#!/usr/bin/env bash
# The training speed figures in one idle slot of about five minutes: `sword -j 2 train` against gensim
# Word2Vec (2 workers) on the same walks of the 100k graph, and `sword -j 2 train` alone on the 1m graph
# (gensim needs ~11 minutes there; its idle 1m figure is in BENCHMARKS.md "Training").
#
#   scripts/bench-train-slot.sh prepare WORK   # any load, not timed: graphs and walks (a few minutes)
#   scripts/bench-train-slot.sh measure WORK   # idle machine: the timed runs; a Markdown table on stdout
#
# Graphs: scripts/bench-node2vec.sh's seeded generator, 100k (100,000 nodes, 210,000 edges) and 1m
# (1,000,000 nodes, 2,100,000 edges), the graphs of BENCHMARKS.md "Training"; walks: `sword walks
# --length 10 --walks-per-node 10 --seed 1` (p = q = 1: 10 M and 100 M words), the 100k ones also as
# walks.txt for gensim. Both trainers: skip-gram, dim 128, window 5, negative 5, 1 epoch, sample 1e-3,
# min_count 1, 2 threads. `measure` runs sword on 100k twice, gensim on 100k once and sword on 1m once,
# each under /usr/bin/time -v (wall, user + sys, peak RSS); words/s are of the training phase (sword's
# train.manifest.json, gensim's own clock around `train`), as in the rest of BENCHMARKS.md.
#
# Env: SWORD (binary; default $CARGO_TARGET_DIR/release/sword, else target/release/sword), TRAIN_ARGS (more
# flags for every `sword train`, e.g. '--noise window' to time another noise scheme), SWORD_PYTHON (the
# Python with gensim; default <repo>/.venv/bin/python, made by scripts/setup-venv.sh), THREADS (default 2),
# GRAPHS (a directory already holding graph-100k.edg and graph-1m.edg from bench-node2vec.sh, to skip the
# generator).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
MODE=${1:?usage: bench-train-slot.sh prepare|measure WORK}
WORK=${2:?usage: bench-train-slot.sh prepare|measure WORK}
SWORD=${SWORD:-${CARGO_TARGET_DIR:-$ROOT/target}/release/sword}
PY=${SWORD_PYTHON:-$ROOT/.venv/bin/python}
THREADS=${THREADS:-2}
TRAIN_ARGS=${TRAIN_ARGS:-}
[ -x "$SWORD" ] || { echo "bench-train-slot: no sword binary at $SWORD (set SWORD)" >&2; exit 2; }
[ -x "$PY" ] || { echo "bench-train-slot: no $PY: run scripts/setup-venv.sh (or set SWORD_PYTHON)" >&2; exit 2; }
mkdir -p "$WORK"

prepare() {
  local g=${GRAPHS:-$WORK/graphs} size
  for size in 100k 1m; do
    if [ ! -s "$g/graph-$size.edg" ]; then
      WORK="$g" SIZES="$size" SECTIONS=graphs SWORD="$SWORD" "$HERE/bench-node2vec.sh"
    fi
    local run="$WORK/$size" text=""
    [ "$size" = 100k ] && text=--text
    if [ ! -s "$run/walks.bin" ]; then
      "$SWORD" -q -j "$THREADS" graph --out "$run" --edges "$g/graph-$size.edg"
      "$SWORD" -q -j "$THREADS" walks --out "$run" --length 10 --walks-per-node 10 --seed 1 $text
    fi
  done
  cat > "$WORK/gensim_train.py" <<'PYEOF'
import json, sys, time
from gensim.models import Word2Vec
from gensim.models.word2vec import LineSentence
t0 = time.time()
s = LineSentence(sys.argv[1])
m = Word2Vec(sg=1, hs=0, negative=5, window=5, vector_size=128, min_count=1, epochs=1,
             workers=int(sys.argv[2]), sample=1e-3, seed=1)
m.build_vocab(s)
t1 = time.time()
m.train(s, total_examples=m.corpus_count, epochs=1)
t2 = time.time()
print(json.dumps({"vocab_s": t1 - t0, "train_s": t2 - t1, "words": m.corpus_total_words}))
PYEOF
  echo "prepared $WORK: $(du -sh "$WORK" | cut -f1)"
}

# timed KEY CMD...: runs CMD under /usr/bin/time -v (output in WORK/KEY.*); sets WALL, CPU (user + sys), RSS_MB.
timed() {
  local label=$1; shift
  /usr/bin/time -v -o "$WORK/$label.time" "$@" > "$WORK/$label.out"
  WALL=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$WORK/$label.time")
  CPU=$(awk -F': ' '/User time|System time/ {s+=$2} END {printf "%.2f", s}' "$WORK/$label.time")
  RSS_MB=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$WORK/$label.time")
}

sword_row() { # LABEL SIZE
  # shellcheck disable=SC2086 # TRAIN_ARGS is a list of flags
  timed "sword-$2" "$SWORD" -q -j "$THREADS" train --out "$WORK/$2" $TRAIN_ARGS
  "$PY" - "$WORK/$2/train.manifest.json" "$1" "$WALL" "$CPU" "$RSS_MB" <<'PYEOF'
import json, sys
m = json.load(open(sys.argv[1]))
label, wall, cpu, rss = sys.argv[2:6]
t, w = m["timings"]["train"], m["counts"]["words"]
print(f"| {label} (kernel {m['extra']['kernel']}) | {w:,} | {t:.2f} | {w / t:,.0f} | {wall} | {cpu} | {w / float(cpu):,.0f} | {rss} |")
PYEOF
}

measure() {
  for size in 100k 1m; do
    [ -s "$WORK/$size/walks.bin" ] || { echo "bench-train-slot: run 'prepare $WORK' first" >&2; exit 2; }
  done
  echo "$(date -u '+%F %T') UTC; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(nproc) cores;" \
    "load at start $(cut -d' ' -f1-3 /proc/loadavg); sword $("$SWORD" --version | cut -d' ' -f2) ($SWORD)${TRAIN_ARGS:+; train flags: $TRAIN_ARGS}"
  echo
  echo "| run | words | train phase s | words/s (train phase) | wall s (process) | user + sys s | words per CPU-s | peak RSS MB |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
  sword_row "sword -j $THREADS train, 100k, run 1" 100k
  sword_row "sword -j $THREADS train, 100k, run 2" 100k
  timed gensim "$PY" "$WORK/gensim_train.py" "$WORK/100k/walks.txt" "$THREADS"
  "$PY" - "$WORK/gensim.out" "$WALL" "$CPU" "$RSS_MB" "$THREADS" <<'PYEOF'
import json, sys
g = json.load(open(sys.argv[1]))
wall, cpu, rss, threads = sys.argv[2:6]
t, w = g["train_s"], g["words"]
print(f"| gensim Word2Vec, {threads} workers, 100k (vocab {g['vocab_s']:.1f} s) | {w:,} | {t:.2f} | {w / t:,.0f} | {wall} | {cpu} | {w / float(cpu):,.0f} | {rss} |")
PYEOF
  sword_row "sword -j $THREADS train, 1m" 1m
  echo
  echo "load at end $(cut -d' ' -f1-3 /proc/loadavg)"
  "$PY" - "$WORK" <<'PYEOF'
import json, sys, os
w = sys.argv[1]
g = json.load(open(os.path.join(w, "gensim.out")))
s = json.load(open(os.path.join(w, "100k", "train.manifest.json")))
m = json.load(open(os.path.join(w, "1m", "train.manifest.json")))
gs = g["words"] / g["train_s"]
ss = s["counts"]["words"] / s["timings"]["train"]
ms = m["counts"]["words"] / m["timings"]["train"]
print(f"100k: sword (last run) / gensim = {ss / gs:.2f}x (target >= 6); 1m: {ms:,.0f} words/s (target >= 1,000,000)")
PYEOF
}

case "$MODE" in
  prepare) prepare ;;
  measure) measure ;;
  *) echo "usage: bench-train-slot.sh prepare|measure WORK" >&2; exit 2 ;;
esac
