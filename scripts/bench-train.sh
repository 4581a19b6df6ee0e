#!/usr/bin/env bash
# Training benchmark: `sword train` vs gensim Word2Vec on the SAME walks.
#
#   scripts/bench-train.sh NODES EDGES [WORK]
#
# Generates a seeded heavy-tailed graph (scripts/n2v-quality --gen-only), builds the graph and walks once
# (`sword graph`, `sword walks --text`, 10 walks of length 10 per node, p = q = 1), then times
#   sword -j 2 train      (dim 128, window 5, negative 5, 1 epoch, sample 1e-3)
#   gensim Word2Vec(sg=1, hs=0, negative=5, window=5, vector_size=128, min_count=1, epochs=1, workers=2,
#                   sample=1e-3) on walks.txt (LineSentence: the usual pecanpy + gensim route)
# each under /usr/bin/time -v (wall, peak RSS), and prints words/s of the training phase for both.
# Env: SWORD (binary, default $CARGO_TARGET_DIR/quick/sword or target/quick/sword), SWORD_PYTHON (Python with
# numpy and gensim; default <repo>/.venv/bin/python, made by scripts/setup-venv.sh).
set -euo pipefail
NODES=${1:-100000}
EDGES=${2:-210000}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
WORK=${3:-$ROOT/data/work/bench-train-$NODES}
SWORD=${SWORD:-${CARGO_TARGET_DIR:-$ROOT/target}/quick/sword}
PY=${SWORD_PYTHON:-$ROOT/.venv/bin/python}
if [ ! -x "$PY" ]; then
  echo "bench-train: no $PY: run scripts/setup-venv.sh (or set SWORD_PYTHON)" >&2
  exit 2
fi
mkdir -p "$WORK"
RUN="$WORK/run"
if [ ! -f "$WORK/edges.tsv" ]; then
  "$PY" "$HERE/n2v-quality" --gen-only "$WORK/edges.tsv" --nodes "$NODES" --edges "$EDGES" --seed 7
fi
if [ ! -f "$RUN/walks.txt" ]; then
  "$SWORD" -q graph --edges "$WORK/edges.tsv" --out "$RUN"
  "$SWORD" -q -j 2 walks --out "$RUN" --text
fi
tv() { # label, command...
  local label=$1; shift
  /usr/bin/time -v "$@" 2> "$WORK/$label.time" > "$WORK/$label.out" || { cat "$WORK/$label.time"; exit 1; }
  local wall rss
  wall=$(grep "Elapsed (wall clock)" "$WORK/$label.time" | awk '{print $NF}')
  rss=$(grep "Maximum resident set size" "$WORK/$label.time" | awk '{print $NF}')
  echo "$label: wall $wall, peak RSS $((rss / 1024)) MiB"
}
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%F)"
tv sword "$SWORD" -q -j 2 train --out "$RUN"
"$PY" - "$RUN/train.manifest.json" <<'PYEOF'
import json, sys
m = json.load(open(sys.argv[1]))
print(f"sword train phase: {m['timings']['train']:.2f} s, {m['counts']['words']} words, "
      f"{m['extra']['words_per_sec']:.0f} words/s, read {m['timings']['read']:.2f} s, write {m['timings']['write']:.2f} s")
PYEOF
cat > "$WORK/gensim_train.py" <<'PYEOF'
import logging, sys, time
from gensim.models import Word2Vec
from gensim.models.word2vec import LineSentence
t0 = time.time()
s = LineSentence(sys.argv[1])
m = Word2Vec(sg=1, hs=0, negative=5, window=5, vector_size=128, min_count=1, epochs=1, workers=2, sample=1e-3, seed=1)
m.build_vocab(s)
t1 = time.time()
m.train(s, total_examples=m.corpus_count, epochs=1)
t2 = time.time()
print(f"gensim train phase: {t2 - t1:.2f} s, {m.corpus_total_words} words, "
      f"{m.corpus_total_words / (t2 - t1):.0f} words/s, vocab {t1 - t0:.2f} s")
PYEOF
tv gensim "$PY" "$WORK/gensim_train.py" "$RUN/walks.txt"
cat "$WORK/gensim.out"
