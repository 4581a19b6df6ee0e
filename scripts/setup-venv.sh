#!/usr/bin/env bash
# Create the Python environment of the checking and benchmark scripts, with pip, from the pinned
# scripts/requirements.txt.
#
#   scripts/setup-venv.sh [DIR]      # default: .venv in the repository (ignored by git)
#
# The scripts find the interpreter as ${SWORD_PYTHON:-<repo>/.venv/bin/python}: with the default DIR nothing
# else is needed; for another DIR, export SWORD_PYTHON=DIR/bin/python. PYTHON picks the interpreter that
# creates the environment (default python3; 3.11 or newer). Rerunning on an existing DIR installs what is
# missing and changes nothing else.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${1:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
REQ="$ROOT/scripts/requirements.txt"

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "setup-venv: $PYTHON is $("$PYTHON" --version 2>&1); the pinned packages need Python 3.11 or newer" >&2
    exit 2
fi
if [ ! -x "$DIR/bin/python" ]; then
    if ! "$PYTHON" -m venv "$DIR"; then
        echo "setup-venv: '$PYTHON -m venv' failed (on Debian/Ubuntu: apt-get install python3-venv)" >&2
        exit 2
    fi
fi
"$DIR/bin/python" -m pip install --disable-pip-version-check -q -r "$REQ"
# Every top-level module the scripts import.
"$DIR/bin/python" -c 'import duckdb, gensim, numba_progress, numpy, pandas, pecanpy, PIL, polars, pyarrow, statsmodels'
echo "setup-venv: ready: $DIR"
if [ "$(cd "$DIR" && pwd)" != "$ROOT/.venv" ]; then
    echo "setup-venv: the scripts look in $ROOT/.venv; point them here with: export SWORD_PYTHON=$DIR/bin/python"
fi
