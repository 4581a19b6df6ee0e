#!/usr/bin/env bash
# Do two builds of sword write the same artifacts? Runs the same commands with each binary and compares every
# file they write byte for byte (`cmp`); manifests are compared as JSON with the fields that may differ between
# builds left out (timings, git commit, throughput figures), and the fields left out are printed.
#
#   scripts/compare-builds.sh BASE_SWORD NEW_SWORD [WORKDIR]
#
# For a refactoring that must not change what users get: build the base commit's release binary, copy it out
# of the tree, build the change, and run this. WORKDIR (default /tmp/sword-compare-builds) receives base/ and
# new/, one folder per case; each case runs in WORKDIR/run/<case> and is then moved, so that the paths the
# manifests record are the same for both binaries. The real fixtures are read from $SWORD_REAL_FIXTURES (as the
# tests do; their cases are skipped, saying so, when it is unset). Cases:
#   default     sword run --out DIR                           (the embedded synthetic default)
#   synth100k   sword run --dump <100 000-line generated .json.gz> --out DIR
#   real-gz, real-bz2, real-wikimedia
#               sword run --dump <the real 1 000-entity 2015 fixture, .gz / .bz2 / Wikimedia layout> --out DIR
#   real-mocks  sword extract on the Wikidata Toolkit mock dumps (one folder each)
#   embed       sword embed --edges <a generated edge list> --out DIR --dim 16 --seed 5 --p 0.5 --q 2
#   import      sword import-translations into a copy of the default run (fabricated batch output)
#   hf          sword export --hf into a copy of the default run
#   failures    exit code and stderr of commands that must fail (bad config, missing input, bad dump, bad flag)
#   flags       every subcommand and the flags (with value names) its --help lists, sorted
# Exit status 0 when everything is the same, 1 otherwise (the differing files are listed).
set -euo pipefail
BASE=$(realpath "$1")
NEW=$(realpath "$2")
WORK=${3:-/tmp/sword-compare-builds}
REAL=${SWORD_REAL_FIXTURES:-}
export SWORD_QUIET=1

rm -rf "$WORK"
mkdir -p "$WORK/run" "$WORK/base" "$WORK/new" "$WORK/input" "$WORK/bin/base" "$WORK/bin/new"
# Both binaries under the same name (usage lines name the binary as it was called).
cp "$BASE" "$WORK/bin/base/sword"
cp "$NEW" "$WORK/bin/new/sword"
BASE=$WORK/bin/base/sword
NEW=$WORK/bin/new/sword

# Inputs shared by both binaries, made once with the base binary.
"$BASE" synth --entities 100000 --seed 7 --out "$WORK/input/wikidata-20240102-all.json.gz"

# run_case NAME BIN SIDE CMD...: run CMD (with @BIN@ = the binary, @DIR@ = the case folder) in WORK/run/NAME,
# keep its exit code and stderr, then move the folder to WORK/SIDE/NAME.
run_case() {
  local name=$1 bin=$2 side=$3
  shift 3
  local dir="$WORK/run/$name"
  mkdir -p "$dir"
  local args=()
  for a in "$@"; do
    a=${a//@BIN@/$bin}
    a=${a//@DIR@/$dir}
    args+=("$a")
  done
  set +e
  "${args[@]}" >"$dir/.stdout" 2>"$dir/.stderr"
  echo $? >"$dir/.exit"
  set -e
  mv "$dir" "$WORK/$side/$name"
}

cases() { # cases BIN SIDE
  local bin=$1 side=$2
  run_case default "$bin" "$side" @BIN@ run --out @DIR@
  run_case synth100k "$bin" "$side" @BIN@ run --dump "$WORK/input/wikidata-20240102-all.json.gz" --out @DIR@
  if [ -n "$REAL" ]; then
    run_case real-gz "$bin" "$side" @BIN@ run --dump "$REAL/dumps/jsondumpdata_20151109_1000-entities.json.gz" --out @DIR@
    run_case real-bz2 "$bin" "$side" @BIN@ run --dump "$REAL/dumps/jsondumpdata_20151109_1000-entities.json.bz2" --out @DIR@
    run_case real-wikimedia "$bin" "$side" @BIN@ run --dump "$REAL/generated/wikimedia-layout_1000-entities.json.gz" --out @DIR@
    for m in wdtk_mock-dump-for-long-testing wdtk_mock-dump-for-testing wdtk_mock-dump-with-bugs \
      jsondumpdata_20151109_five-entities jsondumpdata_20140929_five-entities; do
      run_case "real-mock-$m" "$bin" "$side" @BIN@ extract --dump "$REAL/dumps/$m.json" --out @DIR@
    done
  fi
  # embed: a generated edge list (two keys per line).
  run_case embed "$bin" "$side" bash -c "seq 1 3000 | awk '{print \"n\" \$1 % 211, \"n\" (\$1 * 13) % 197}' \
    > @DIR@.edges && @BIN@ embed --edges @DIR@.edges --out @DIR@ --dim 16 --seed 5 --p 0.5 --q 2"
  # import and hf: on a copy of the default run.
  cp -r "$WORK/$side/default" "$WORK/run/import"
  rm -f "$WORK/run/import/.exit" "$WORK/run/import/.stdout" "$WORK/run/import/.stderr"
  python3 - "$WORK/run/import" <<'EOF'
import json, sys
d = sys.argv[1]
out = []
for i, line in enumerate(open(f"{d}/translation_requests.jsonl")):
    r = json.loads(line)
    if i % 11 == 3:
        continue  # missing
    if i % 13 == 5:
        out.append({"custom_id": r["custom_id"], "response": {"status_code": 500, "body": {}}, "error": None})
    else:
        text = "text " + r["body"]["messages"][0]["content"][-40:]
        out.append({"custom_id": r["custom_id"], "response": {"status_code": 200, "body": {"choices": [{"message": {"content": text}}]}}, "error": None})
open(f"{d}.batch.jsonl", "w").write("".join(json.dumps(o) + "\n" for o in out))
EOF
  run_case import "$bin" "$side" @BIN@ import-translations --batch-output @DIR@.batch.jsonl --out @DIR@
  cp -r "$WORK/$side/default" "$WORK/run/hf"
  rm -f "$WORK/run/hf/.exit" "$WORK/run/hf/.stdout" "$WORK/run/hf/.stderr"
  run_case hf "$bin" "$side" @BIN@ export --out @DIR@ --hf @DIR@/hf --model other-model --force
  # Failures: the exit code and message must not change.
  run_case fail-config "$bin" "$side" bash -c "printf 'samples = \"x\"\n' > @DIR@.toml; cp -r $WORK/$side/default @DIR@; @BIN@ distort --out @DIR@ --config @DIR@.toml"
  run_case fail-attempts "$bin" "$side" bash -c "cp -r $WORK/$side/default @DIR@; @BIN@ distort --out @DIR@ --max-attempts 0"
  run_case fail-missing "$bin" "$side" @BIN@ walks --out @DIR@
  run_case fail-dump "$bin" "$side" bash -c "printf 'not a dump\n' > @DIR@.json; @BIN@ extract --dump @DIR@.json --out @DIR@"
  run_case fail-flag "$bin" "$side" @BIN@ graph --out @DIR@ --no-such-flag
  # The command line: every subcommand and the flags its --help lists (the wording of the help may change).
  run_case flags "$bin" "$side" bash -c "for c in '' extract synth graph walks train embed similar distort export \
    import-translations translate run eval 'eval score' 'eval prompts' 'eval run' 'eval batch-write' \
    'eval batch-read' 'eval report' 'eval judge-prompts' 'eval collect' 'eval chain-report' \
    'eval decompose-prompts' 'eval verify-prompts' 'eval collect-longform'; do echo \"== \$c\"; \
    @BIN@ \$c --help | grep -oE '^ +(-[a-zA-Z], )?--[a-z0-9-]+( [<[][^ ]+)?|^  [a-z-]+ ' | sort; done > @DIR@.txt; mkdir -p @DIR@; mv @DIR@.txt @DIR@/flags.txt"
}

cases "$BASE" base
cases "$NEW" new

# Manifest fields that may differ between two builds: when they ran and how fast, and which commit they are.
# extract's spill budget defaults to a share of the disk space free when it starts (`--spill-budget`), which
# the first binary's runs have used up a little of by the time the second one runs.
NORM='del(.timings, .git_commit)
  | if .extra | type == "object" then .extra |= del(.json_mb_per_s, .words_per_sec, .walks_per_s, .steps_per_s, .thread_seconds) else . end
  | if .extra.spill | type == "object" then .extra.spill |= del(.budget) else . end
  | if has("summary") then del(.summary) | .stages |= map(del(.seconds)) else . end'
echo "manifests compared without: timings, git_commit, extra.json_mb_per_s, extra.words_per_sec, extra.walks_per_s, extra.steps_per_s, extra.thread_seconds, extra.spill.budget (run.summary.json: seconds and the summary text)"

same=0
differ=0
cd "$WORK/base"
while IFS= read -r -d '' f; do
  b="$WORK/base/$f"
  n="$WORK/new/$f"
  if [ ! -e "$n" ]; then
    echo "MISSING in new: $f"
    differ=$((differ + 1))
    continue
  fi
  case "$f" in
    *.manifest.json | */run.summary.json)
      if cmp -s <(jq -S "$NORM" "$b") <(jq -S "$NORM" "$n"); then same=$((same + 1)); else
        echo "DIFFERS (manifest): $f"
        diff <(jq -S "$NORM" "$b") <(jq -S "$NORM" "$n") | head -20 || true
        differ=$((differ + 1))
      fi
      ;;
    *.sword.lock) ;; # the lock names the pid that held it
    *)
      if cmp -s "$b" "$n"; then same=$((same + 1)); else
        echo "DIFFERS: $f"
        differ=$((differ + 1))
      fi
      ;;
  esac
done < <(find . -type f -print0 | sed -z 's|^\./||' | sort -z)
cd "$WORK/new"
while IFS= read -r -d '' f; do
  [ -e "$WORK/base/$f" ] || { echo "EXTRA in new: $f"; differ=$((differ + 1)); }
done < <(find . -type f -print0 | sed -z 's|^\./||' | sort -z)

echo "compare-builds: $same files the same, $differ differ ($WORK)"
[ "$differ" -eq 0 ]
