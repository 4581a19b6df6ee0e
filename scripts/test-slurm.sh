#!/usr/bin/env bash
# shellcheck disable=SC2016 # the `bash -c` programs below are single-quoted on purpose (their own $0, $1)
# The Slurm path under a real single-node Slurm (scripts/slurm-local.sh): a 4-shard submission through
# pipeline/slurm/submit.sh must equal an unsharded `sword run` of the same dump and seed, and the fault cases
# must behave (a cancelled shard, a shard failing on bad input, a requeued shard; requests no node can meet and
# pending reasons that never clear fail fast). Every check fails when the
# behaviour is broken; the last line is "N passed, M failed" and the exit code is 1 when any check failed.
#
#   scripts/test-slurm.sh            # installs slurm-wlm + munge if missing (root), starts the cluster if it is
#                                    # not running (and stops it again at the end)
#
# Skips (exit 0, saying so plainly) when it is not root, or when Slurm is missing and the packages do not
# install within SLURM_TEST_INSTALL_TIMEOUT seconds (default 300).
# Environment: SWORD (binary; default the debug build of this repo, built if missing: the dumps are small),
# SLURM_TEST_ENTITIES (dump size, 4000), SLURM_TEST_KEEP=1 (keep the work directory), SLURM_LOCAL_DIR (cluster).
# The unsharded reference runs at -j 1, the Slurm rest job at -j 2 (REST_CPUS=2): every artifact, the
# embeddings included, is compared byte for byte (no output depends on the thread count).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
T0=$SECONDS
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}
skip() { echo "SKIPPED: the Slurm tests did not run: $*"; exit 0; }
secs() { echo $((SECONDS - $1)); }
timing() { echo "time $*" | tee -a "$W/timings"; }

# --- the cluster --------------------------------------------------------------------------------------------
# The local cluster runs its daemons as root (SlurmUser=root): without root there is nothing to start.
[ "$(id -u)" -eq 0 ] || skip "not root (the local cluster's daemons and apt-get need root)"
need_install=0
for c in slurmctld slurmd sbatch squeue sacct scontrol scancel munged; do command -v "$c" >/dev/null || need_install=1; done
if [ $need_install -eq 1 ]; then
  t=$SECONDS
  timeout "${SLURM_TEST_INSTALL_TIMEOUT:-300}" scripts/slurm-local.sh install ||
    skip "installing slurm-wlm and munge failed or took over ${SLURM_TEST_INSTALL_TIMEOUT:-300}s (see ${SLURM_LOCAL_DIR:-data/slurm}/log/apt.log)"
  install_s=$(secs $t)
else
  install_s="0 (already installed)"
fi
started=0
if ! scripts/slurm-local.sh status >/dev/null 2>&1; then
  t=$SECONDS
  scripts/slurm-local.sh start >/dev/null || { echo "FAIL the local cluster did not start"; echo "0 passed, 1 failed"; exit 1; }
  start_s=$(secs $t)
  started=1
else
  start_s="0 (already running)"
fi
eval "$(scripts/slurm-local.sh env)"
export SLURM_CONF

W=$(mktemp -d "${TMPDIR:-/tmp}/sword-slurm-test.XXXXXX")
cleanup() {
  # Cancel whatever this test submitted and is still queued, then stop the cluster if this test started it.
  if [ -s "$W/jobids" ]; then xargs -r scancel <"$W/jobids" 2>/dev/null || true; fi
  [ $started -eq 1 ] && scripts/slurm-local.sh stop >/dev/null 2>&1
  if [ "${SLURM_TEST_KEEP:-0}" = 1 ]; then echo "kept $W"; else rm -rf "$W"; fi
}
trap cleanup EXIT
timing "install: ${install_s}s, cluster start: ${start_s}s"
echo "Slurm $(sinfo -V | awk '{print $2}'); node: $(sinfo -h -N -o '%N %c CPUs %m MiB %t'); work dir $W"
check "the node offers this machine's CPUs ($(nproc))" test "$(sinfo -h -N -o %c)" = "$(nproc)"

# --- binary and dump ----------------------------------------------------------------------------------------
SWORD=${SWORD:-${CARGO_TARGET_DIR:-$root/target}/debug/sword}
if [ ! -x "$SWORD" ]; then
  echo "building $SWORD (cargo build --locked)"
  cargo build --locked -q || { echo "FAIL cargo build"; echo "0 passed, 1 failed"; exit 1; }
fi
SWORD=$(cd "$(dirname "$SWORD")" && pwd)/$(basename "$SWORD")
export SWORD SEED=42 SWORD_QUIET=1 POLL=1
# Small requests: the node has few CPUs. REST_CPUS=2 runs the stages at -j 2, the reference runs at -j 1.
export SHARD_CPUS=1 SHARD_MEM=1G REST_CPUS=2 REST_MEM=2G
N=4
DUMP=$W/wikidata-20990101-all.json.gz
"$SWORD" -q synth --entities "${SLURM_TEST_ENTITIES:-4000}" --member-lines 100 --seed 7 --out "$DUMP" ||
  { echo "FAIL sword synth"; echo "0 passed, 1 failed"; exit 1; }

# The unsharded reference: one `sword run`, one thread.
t=$SECONDS
"$SWORD" -q -j 1 run --dump "$DUMP" --out "$W/unsharded" --config-dir pipeline --seed 42 >/dev/null
check "unsharded sword run succeeds" test $? -eq 0
timing "unsharded sword -j 1 run: $(secs $t)s"
# Every artifact of the unsharded run except the manifests (timings) and the lock file.
mapfile -t ARTIFACTS < <(cd "$W/unsharded" && find . -type f ! -name '*.manifest.json' ! -name run.summary.json ! -name .sword.lock | sort)
check "the reference has the extract tables and the embeddings (${#ARTIFACTS[@]} artifacts)" \
  bash -c 'for f in entities triples statements properties transitive; do [ -s "$0/$f.parquet" ] || exit 1; done; [ -s "$0/embeddings.npy" ] && [ -s "$0/sword.parquet" ]' "$W/unsharded"

same_artifacts() { # same_artifacts RUN: every reference artifact exists in RUN, byte for byte
  local f diffs=0
  for f in "${ARTIFACTS[@]}"; do
    if ! cmp -s "$W/unsharded/$f" "$1/$f"; then echo "     differs or missing: $f"; diffs=1; fi
  done
  return $diffs
}
same_extract_tables() {
  local f
  for f in entities triples statements properties transitive; do cmp -s "$W/unsharded/$f.parquet" "$1/$f.parquet" || return 1; done
}
# Submit (waiting) in the background; the job ids go to $W/jobids for the cleanup. Sets SUB_PID.
submit_bg() { # submit_bg NAME ARGS... → output in $W/NAME.out, exit code in $W/NAME.rc
  local name=$1
  shift
  (
    timeout 900 pipeline/slurm/submit.sh "$@" >"$W/$name.out" 2>&1
    echo $? >"$W/$name.rc"
  ) &
  SUB_PID=$!
}
submit_wait() { # submit_wait NAME ARGS... : run to the end, return submit.sh's exit code
  submit_bg "$@"
  wait "$SUB_PID"
  jobids_of "${*: -2:1}"
  return "$(cat "$W/$1.rc")"
}
jobids_of() { [ -s "$1/slurm/jobs" ] && awk '{print $2}' "$1/slurm/jobs" >>"$W/jobids"; }
array_id() { awk '$1 == "extract" {id = $2} END {print id}' "$1/slurm/jobs"; }
rest_id() { awk '$1 == "rest" {id = $2} END {print id}' "$1/slurm/jobs"; }
# The raw job id Slurm gave task TASK of array ARRAY (sacct without slurmdbd lists raw ids).
raw_id() { scontrol -o show job "$1" | tr ' ' '\n' | awk -F= -v t="$2" '$1 == "JobId" {id = $2} $1 == "ArrayTaskId" && $2 == t {print id}'; }
sacct_of() { sacct --completion -n -P -j "$1" -o JobID,JobName,State,ExitCode 2>/dev/null | grep "^$1|"; }
wait_for_file() { # wait_for_file PATH SECONDS
  for _ in $(seq "$(($2 * 5))"); do [ -e "$1" ] && return 0; sleep 0.2; done
  return 1
}

# --- 1. the 4-shard submission equals the unsharded run -------------------------------------------------
R=$W/sharded
t=$SECONDS
submit_wait clean "$DUMP" "$R" "$N"
rc=$?
timing "4-shard submit.sh (submit, 4 extract tasks, join + stages, wait): $(secs $t)s"
check "submit.sh DUMP RUN 4 exits 0" test $rc -eq 0
[ $rc -eq 0 ] || cat "$W/clean.out"
check "4 part manifests in RUN/parts" test "$(find "$R/parts" -name "extract-part-*-of-$N.manifest.json" | wc -l)" -eq $N
check "extract tables byte-identical to the unsharded run" same_extract_tables "$R"
check "all ${#ARTIFACTS[@]} artifacts byte-identical to the unsharded run (-j 2 against -j 1)" same_artifacts "$R"
A=$(array_id "$R") J=$(rest_id "$R")
check "each job's log is in RUN/slurm/logs (4 shards + rest)" \
  bash -c 'for i in 0 1 2 3; do [ -s "$0/slurm/logs/extract-$1_$i.log" ] || exit 1; done; [ -s "$0/slurm/logs/rest-$2.log" ]' "$R" "$A" "$J"
check "the rest job started after all 4 shards had exited (RUN/slurm/events.log)" \
  awk '/extract [0-9]\/4 .*: exit 0/ {n++} /rest job .*: start/ {ok = (n == 4); seen = 1} END {exit !(seen && ok)}' "$R/slurm/events.log"
check "each job's exit code (0) is in RUN/slurm/exit" \
  bash -c 'for f in extract-0-of-4 extract-1-of-4 extract-2-of-4 extract-3-of-4 rest; do [ "$(cat "$0/slurm/exit/$f.code")" = 0 ] || exit 1; done' "$R"
check "sacct --completion lists the 4 tasks and the rest job COMPLETED 0:0" \
  bash -c 'n=0; for id in "$@"; do sacct --completion -n -P -j "$id" -o JobID,State,ExitCode 2>/dev/null | grep -q "^$id|COMPLETED|0:0$" && n=$((n+1)); done; [ $n -eq 5 ]' _ \
  "$(raw_id "$A" 0)" "$(raw_id "$A" 1)" "$(raw_id "$A" 2)" "$(raw_id "$A" 3)" "$J"
check "submit.sh --status RUN shows every job" \
  bash -c 'out=$(pipeline/slurm/submit.sh --status "$0"); [ "$(grep -c "COMPLETED" <<<"$out")" -eq 5 ]' "$R"

# --- 2. requeue of a finished shard gives the same part ---------------------------------------------------
cp "$R/parts/extract-part-1-of-$N.json.zst" "$W/part1.before"
sed '/"timings"/,/}/d' "$R/parts/extract-part-1-of-$N.manifest.json" >"$W/part1.manifest.before"
t=$SECONDS
scontrol requeue "${A}_1"
check "scontrol requeue of shard 1 accepted" test $? -eq 0
restarted=0
for _ in $(seq 300); do
  grep -q "extract 1/$N job ${A}_1 on .*: exit 0" <(grep -A9999 "restart count 1" "$R/slurm/events.log" 2>/dev/null) && { restarted=1; break; }
  sleep 1
done
timing "requeue of a finished shard, until it ran again: $(secs $t)s"
check "the requeued shard ran again (restart count 1) and exited 0" test $restarted -eq 1
check "the requeued shard wrote the same part, byte for byte" cmp -s "$W/part1.before" "$R/parts/extract-part-1-of-$N.json.zst"
check "the requeued shard's part manifest is the same except timings" \
  cmp -s "$W/part1.manifest.before" <(sed '/"timings"/,/}/d' "$R/parts/extract-part-1-of-$N.manifest.json")
"$SWORD" -q -j 1 extract --dump "$DUMP" --out "$R" --config pipeline/extract.toml --join-shards $N
check "the join after the requeue still gives byte-identical extract tables" same_extract_tables "$R"

# A stand-in for a stuck node: the first start of shard $HOLD_SHARD waits (until cancelled or requeued); any
# later start runs sword as is.
HOLDER=$W/sword-holding
cat >"$HOLDER" <<EOF
#!/usr/bin/env bash
prev=""
for a in "\$@"; do
  if [ "\$prev" = --shard ] && [ "\${a%%/*}" = "\${HOLD_SHARD:--}" ] && [ ! -e "\$HOLD_DIR/held-\${a%%/*}" ]; then
    touch "\$HOLD_DIR/held-\${a%%/*}"
    sleep 600 & wait
  fi
  prev=\$a
done
exec "$SWORD" "\$@"
EOF
chmod +x "$HOLDER"
export HOLD_DIR=$W

# --- 3. requeue of a running shard: the submission still completes, same artifacts ---------------------------
R3=$W/requeued
t=$SECONDS
HOLD_SHARD=2 SWORD=$HOLDER submit_bg requeue "$DUMP" "$R3" "$N"
if wait_for_file "$W/held-2" 120; then
  A3=$(array_id "$R3")
  scontrol requeue "${A3}_2"
  check "scontrol requeue of running shard 2 accepted" test $? -eq 0
else
  bad "shard 2 of the requeue submission never started"
fi
wait "$SUB_PID"
jobids_of "$R3"
rc=$(cat "$W/requeue.rc")
timing "4-shard submission with shard 2 requeued while running: $(secs $t)s"
check "submission with a requeued running shard exits 0" test "$rc" -eq 0
[ "$rc" -eq 0 ] || cat "$W/requeue.out"
check "the requeued shard started twice (restart count 1 in RUN/slurm/events.log)" grep -q "extract 2/$N job .*restart count 1" "$R3/slurm/events.log"
check "the rest started once, after the requeued shard's second run" \
  bash -c '[ "$(grep -c "rest job .*: start" "$0")" -eq 1 ] && awk "/restart count 1/ {r=NR} /rest job .*: start/ {s=NR} END {exit !(r && s > r)}" "$0"' "$R3/slurm/events.log"
check "all artifacts byte-identical to the unsharded run after the requeue" same_artifacts "$R3"

# --- 4. a shard cancelled mid-run: the join never starts; --resume reruns only that shard --------------------
R4=$W/cancelled
t=$SECONDS
HOLD_SHARD=3 SWORD=$HOLDER submit_bg cancel "$DUMP" "$R4" "$N"
if wait_for_file "$W/held-3" 120; then
  A4=$(array_id "$R4")
  scancel "${A4}_3"
  check "scancel of running shard 3 accepted" test $? -eq 0
else
  bad "shard 3 of the cancel submission never started"
fi
wait "$SUB_PID"
jobids_of "$R4"
rc=$(cat "$W/cancel.rc")
J4=$(rest_id "$R4")
timing "4-shard submission with shard 3 cancelled: $(secs $t)s"
check "submission with a cancelled shard fails (exit 1, got $rc)" test "$rc" -eq 1
check "it names the missing shard and the --resume command" \
  bash -c 'grep -q "shard(s) 3 of 4 did not finish" "$0" && grep -q -- "submit.sh --resume" "$0"' "$W/cancel.out"
check "the dependent job never started (no start in events.log, no rest log, no extract tables)" \
  bash -c '! grep -q "rest job" "$0/slurm/events.log" && [ ! -e "$0/slurm/logs/rest-$1.log" ] && [ ! -e "$0/entities.parquet" ]' "$R4" "$J4"
check "the dependent job is CANCELLED by Slurm (dependency never satisfied)" \
  bash -c 'scontrol -o show job "$0" | grep -q "JobState=CANCELLED"' "$J4"
check "sacct --completion shows shard 3 CANCELLED" bash -c 'sacct_out=$(sacct --completion -n -P -j "$0" -o JobID,State 2>/dev/null); grep -q "^$0|CANCELLED" <<<"$sacct_out"' "$(raw_id "$A4" 3)"
check "parts 0-2 were kept, part 3 is missing" \
  bash -c 'for i in 0 1 2; do [ -f "$0/parts/extract-part-$i-of-4.manifest.json" ] || exit 1; done; [ ! -e "$0/parts/extract-part-3-of-4.manifest.json" ]' "$R4"
for i in 0 1 2; do cp "$R4/parts/extract-part-$i-of-$N.json.zst" "$W/kept-$i"; done
t=$SECONDS
submit_wait resume --resume "$DUMP" "$R4" "$N"
rc=$?
timing "submit.sh --resume (shard 3 + rest): $(secs $t)s"
check "submit.sh --resume exits 0" test $rc -eq 0
[ $rc -eq 0 ] || cat "$W/resume.out"
check "--resume found exactly part 3 missing" grep -q "resume: parts missing: 3$" "$W/resume.out"
check "--resume submitted an array of task 3 only" \
  bash -c '[ "$(awk "\$1 == \"extract\"" "$0/slurm/jobs" | tail -n1 | cut -d" " -f4)" = 3 ] && [ "$(grep -c "extract [0-9]/4 .*: start" "$0/slurm/events.log")" -eq 5 ]' "$R4"
check "--resume left parts 0-2 untouched" \
  bash -c 'for i in 0 1 2; do cmp -s "$1/kept-$i" "$0/parts/extract-part-$i-of-4.json.zst" || exit 1; done' "$R4" "$W"
check "all artifacts byte-identical to the unsharded run after --resume" same_artifacts "$R4"

# --- 5. a shard failing on bad input fails the submission with its exit code ----------------------------------
BAD=$W/wikidata-20990102-all.json.gz
cp "$DUMP" "$BAD"
size=$(stat -c %s "$BAD")
# Overwrite 8 bytes inside a gzip member about 62% into the file: the shard whose range holds it fails (exit 2).
printf '\xde\xad\xbe\xef\xde\xad\xbe\xef' | dd of="$BAD" bs=1 seek=$((size * 62 / 100)) conv=notrunc status=none
R5=$W/bad
t=$SECONDS
submit_wait badinput "$BAD" "$R5" "$N"
rc=$?
timing "4-shard submission of a dump with a corrupt member: $(secs $t)s"
A5=$(array_id "$R5") J5=$(rest_id "$R5")
failed=$(for i in 0 1 2 3; do c=$(cat "$R5/slurm/exit/extract-$i-of-$N.code" 2>/dev/null); [ "${c:-0}" != 0 ] && echo "$i:$c"; done)
check "exactly one shard failed, with exit code 2 (bad input) [$failed]" test "$(wc -w <<<"$failed")" -eq 1 -a "${failed#*:}" = 2
fi_task=${failed%%:*}
check "submit.sh exits with that shard's code (2, got $rc)" test "$rc" -eq 2
check "it names the failed shard" grep -q "extract shard ${fi_task:-x}/$N exited with code 2" "$W/badinput.out"
check "sacct --completion shows that shard FAILED with exit code 2:0" \
  bash -c 'sacct --completion -n -P -j "$0" -o JobID,State,ExitCode 2>/dev/null | grep -q "^$0|FAILED|2:0$"' "$(raw_id "$A5" "${fi_task:-99}")"
check "the shard's log names the bad input (a gzip member)" grep -q "bad input .*gzip member" "$R5/slurm/logs/extract-${A5}_${fi_task:-x}.log"
check "the dependent job never started and is CANCELLED" \
  bash -c '! grep -q "rest job" "$0/slurm/events.log" && [ ! -e "$0/entities.parquet" ] && scontrol -o show job "$1" | grep -q "JobState=CANCELLED"' "$R5" "$J5"

# --- 6. fail fast: requests no node can meet, hopeless pending reasons, status lines ----------------------------
check "while waiting, submit.sh printed each job's state and pending reason" \
  grep -Eq '^\[[0-9:]+\] extract tasks .*; rest job [0-9]+ PENDING \(Dependency\)$' "$W/clean.out"
NODE_NAME=$(sinfo -h -N -o %N | head -n1) NODE_CPUS=$(sinfo -h -N -o %c | head -n1)
R6=$W/toobig
t=$SECONDS
SHARD_CPUS=64 SHARD_MEM=512G timeout 120 pipeline/slurm/submit.sh "$DUMP" "$R6" 2 >"$W/toobig.out" 2>&1
rc=$?
took=$(secs $t)
timing "SHARD_CPUS=64 SHARD_MEM=512G on a $NODE_CPUS-CPU node: exit $rc after ${took}s"
check "SHARD_CPUS=64 SHARD_MEM=512G exits 2 (got $rc) within 60 s (${took}s)" test "$rc" -eq 2 -a "$took" -le 60
check "it names the largest node ($NODE_NAME, $NODE_CPUS CPUs)" grep -q "the largest node is $NODE_NAME with $NODE_CPUS CPUs" "$W/toobig.out"
check "it submitted nothing" test ! -s "$R6/slurm/jobs"
# The #SBATCH defaults (8 CPUs / 16G a shard, 16 CPUs / 24G the rest) on a small node: lowered, saying so.
R7=$W/defaults
env -u SHARD_CPUS -u SHARD_MEM -u REST_CPUS -u REST_MEM timeout 120 pipeline/slurm/submit.sh --no-wait "$DUMP" "$R7" 2 >"$W/defaults.out" 2>&1
rc=$?
jobids_of "$R7"
[ -s "$R7/slurm/jobs" ] && awk '{print $2}' "$R7/slurm/jobs" | xargs -r scancel
if [ "$NODE_CPUS" -lt 16 ]; then
  check "defaults too big for the node are lowered to it and submitted (exit $rc)" \
    bash -c '[ "$1" -eq 0 ] && grep -q "rest (join, graph → export) job.s #SBATCH defaults do not fit .*asking 16 → $2 CPUs" "$0"' "$W/defaults.out" "$rc" "$NODE_CPUS"
fi
# A request the node could hold but the partition refuses (MaxCPUsPerNode): PartitionConfig never clears.
if [ "$NODE_CPUS" -ge 2 ]; then
  scontrol update PartitionName=local MaxCPUsPerNode=1
  t=$SECONDS
  SHARD_CPUS=2 PEND_GRACE=5 timeout 120 pipeline/slurm/submit.sh "$DUMP" "$W/partconf" 2 >"$W/partconf.out" 2>&1
  rc=$?
  took=$(secs $t)
  jobids_of "$W/partconf"
  scontrol update PartitionName=local MaxCPUsPerNode=UNLIMITED
  timing "a shard pending with reason PartitionConfig: exit $rc after ${took}s"
  check "a job pending for PartitionConfig: exit 2 (got $rc) within 60 s (${took}s), naming the reason" \
    bash -c '[ "$1" -eq 2 ] && [ "$2" -le 60 ] && grep -q "GAVE UP: .* pends with reason PartitionConfig, which does not clear" "$0"' "$W/partconf.out" "$rc" "$took"
  check "and its jobs were cancelled" \
    bash -c 'for id in $(awk "{print \$2}" "$0/slurm/jobs"); do squeue -h -j "$id" 2>/dev/null | grep -q . && exit 1; done; exit 0' "$W/partconf"
fi
# The only node drained: ReqNodeNotAvail with no node up.
scontrol update NodeName="$NODE_NAME" State=DRAIN Reason=sword-test
t=$SECONDS
NODE_GRACE=5 timeout 120 pipeline/slurm/submit.sh "$DUMP" "$W/drained" 2 >"$W/drained.out" 2>&1
rc=$?
took=$(secs $t)
jobids_of "$W/drained"
scontrol update NodeName="$NODE_NAME" State=RESUME
timing "every node drained: exit $rc after ${took}s"
check "no node up (drained): exit 2 (got $rc) within 60 s (${took}s), saying so" \
  bash -c '[ "$1" -eq 2 ] && [ "$2" -le 60 ] && grep -Eq "GAVE UP: .* pends with reason (ReqNodeNotAvail|Nodes_required_for_job_are_DOWN) and no node of partition local is up" "$0"' "$W/drained.out" "$rc" "$took"

timing "whole test: $(secs "$T0")s"
echo "timings:"
sed 's/^time /  /' "$W/timings"
echo "slurm: $pass passed, $fail failed"
[ $fail -eq 0 ]
