#!/usr/bin/env bash
# Submit a sharded SWORD rebuild to Slurm: a job array of N extract shards, then a job that depends on it (the
# join, then graph → walks → train → distort → export). Waits until that job ends and exits with the outcome.
#
#   pipeline/slurm/submit.sh [--no-wait] DUMP RUN N     # fresh submission: all N shards, then the rest
#   pipeline/slurm/submit.sh --resume [--no-wait] DUMP RUN N
#                                                       # only the shards whose part is missing, then the rest
#   pipeline/slurm/submit.sh --status RUN               # every job of RUN: state, exit code, log
#   pipeline/slurm/submit.sh /dumps/wikidata-20240911-all.json.gz /scratch/sword/20240911 16
#
# Everything about the jobs is found from RUN/slurm/: `jobs` (one line per submitted job: kind, job id, shards),
# `logs/` (each job's stdout+stderr), `exit/` (each job's exit code, written by the job itself),
# `events.log` (start and exit of every job, requeues included).
#
# Exit code: 0 when the dependent job completed; else the exit code of the first failed shard (2 bad input,
# 3 stale or corrupt, 4 I/O — the same code Slurm records for that task, `sacct ... -o JobID,State,ExitCode`),
# else the dependent job's code; 1 when a shard was cancelled or killed without an exit code (rerun with
# --resume); 2 for a bad command line.
#
# Environment: SWORD (binary, default target/release/sword of this repo; the same path must exist on every
# node), SEED (42), CONF (the pipeline/*.toml directory), POLL (seconds between state checks, 5), STATUS_SECS
# (seconds between two status lines while waiting, at most 60), PEND_GRACE (seconds a hopeless pending reason
# must persist before giving up, 10), NODE_GRACE (the same while no node of the partition is up, 60).
# Resources: the #SBATCH lines of the two job scripts are for a real cluster; SHARD_CPUS, SHARD_MEM, REST_CPUS,
# REST_MEM override them (e.g. SHARD_CPUS=1 SHARD_MEM=1G on a small node), SBATCH_ARGS is added to both sbatch
# calls (e.g. "--partition=long --account=me"). No artifact depends on REST_CPUS. MEMORY_LIMIT (e.g. 8G) is the
# join's --memory-limit in the rest job (default `auto`: half of the job's memory); past it the join spills
# sorted runs into RUN, so REST_MEM can stay well under the join state's size.
# Before submitting, the requests are checked against the nodes `sinfo` reports for the partition: a request
# set by hand that no node can meet exits 2 naming the largest node; an #SBATCH default that no node can meet
# is lowered to what the largest node offers, saying so. While waiting, every job's state and pending reason
# is printed (on change, and at least once a minute); a job pending for a reason that cannot clear
# (PartitionConfig, PartitionNodeLimit, PartitionTimeLimit, MaxMemPerLimit, BadConstraints, InvalidAccount, InvalidQOS;
# ReqNodeNotAvail or "Nodes required for job are DOWN" while no node of the partition is up) is cancelled with
# the whole submission: exit 2 and why. A rest job that can never start (DependencyNeverSatisfied) ends with
# the failed shard's code, as above.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage() { sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

resume=0 wait=1 status=0
while [ $# -gt 0 ]; do
  case "$1" in
  --resume) resume=1; shift ;;
  --no-wait) wait=0; shift ;;
  --status) status=1; shift ;;
  -h | --help) usage ;;
  --*) echo "unknown option $1" >&2; usage ;;
  *) break ;;
  esac
done

# One line per job of an array or a single job, from slurmctld while it remembers the job, else from sacct
# (accounting, or the job completion log where there is no accounting): "JOBID TASK STATE EXITCODE REASON".
job_lines() {
  local id=$1 out
  if out=$(scontrol -o show job "$id" 2>/dev/null) && [ -n "$out" ]; then
    awk '{
      id=""; aid=""; task="-"; st=""; ex=""; rs="";
      for (i = 1; i <= NF; i++) {
        split($i, kv, "=");
        if (kv[1] == "JobId") id = kv[2];
        else if (kv[1] == "ArrayJobId") aid = kv[2];
        else if (kv[1] == "ArrayTaskId") task = kv[2];
        else if (kv[1] == "JobState") st = kv[2];
        else if (kv[1] == "ExitCode") ex = kv[2];
        else if (kv[1] == "Reason") rs = kv[2];
      }
      if (aid != "") id = aid "_" task;
      print id, task, st, ex, rs }' <<<"$out"
    return 0
  fi
  if out=$(sacct -n -P -X -j "$id" -o JobID,State,ExitCode 2>/dev/null) && [ -n "$out" ]; then
    awk -F'|' '{ split($1, a, "_"); t = (a[2] == "" ? "-" : a[2]); split($2, s, " "); print $1, t, s[1], $3, "-" }' <<<"$out"
    return 0
  fi
  return 1
}

# `job_lines` of every job in RUN/slurm/jobs, as "KIND JOBID TASK STATE EXITCODE REASON".
all_jobs() {
  local kind id
  while read -r kind id _; do
    job_lines "$id" | sed "s/^/$kind /" || echo "$kind $id - UNKNOWN - -"
  done <"$RUN/slurm/jobs"
}

report() {
  echo "jobs of $RUN (logs: $RUN/slurm/logs, exit codes: $RUN/slurm/exit):"
  local kind id task st ex rs code log
  while read -r kind id task st ex rs; do
    if [ "$kind" = extract ]; then
      code=$(cat "$RUN/slurm/exit/extract-$task-of-$SHARDS.code" 2>/dev/null || echo -)
      log=$(ls "$RUN/slurm/logs/extract-${id%_*}_$task.log" 2>/dev/null || echo "(none)")
      printf '  extract %s/%s  job %-8s %-10s exit %-5s (job wrote %s)  %s\n' "$task" "$SHARDS" "$id" "$st" "$ex" "$code" "$log"
    else
      code=$(cat "$RUN/slurm/exit/rest.code" 2>/dev/null || echo -)
      log=$(ls "$RUN/slurm/logs/rest-$id.log" 2>/dev/null || echo "(none)")
      printf '  rest          job %-8s %-10s exit %-5s (job wrote %s)  %s  %s\n' "$id" "$st" "$ex" "$code" "$log" "${rs/#None/}"
    fi
  done < <(all_jobs | sort -s -k1,1 -k3,3n)
}

if [ $status -eq 1 ]; then
  RUN=$(cd "${1:?run directory}" && pwd)
  [ -s "$RUN/slurm/jobs" ] || { echo "no submission recorded in $RUN/slurm/jobs" >&2; exit 2; }
  SHARDS=$(awk '$1 == "extract" || $1 == "rest" {n = $3} END {print n}' "$RUN/slurm/jobs")
  report
  exit 0
fi

[ $# -eq 3 ] || usage
DUMP=$1 RUN=$2 SHARDS=$3
[[ $SHARDS =~ ^[1-9][0-9]*$ ]] || { echo "N must be a positive number of shards, got '$SHARDS'" >&2; exit 2; }
command -v sbatch >/dev/null || { echo "sbatch not found: no Slurm client here (scripts/slurm-local.sh start for a local one)" >&2; exit 2; }
[ -f "$DUMP" ] || { echo "dump not found: $DUMP" >&2; exit 2; }
# Absolute paths: the jobs run elsewhere (another node, another working directory).
DUMP=$(cd "$(dirname "$DUMP")" && pwd)/$(basename "$DUMP")
mkdir -p "$RUN"
RUN=$(cd "$RUN" && pwd)
SWORD=${SWORD:-$here/../../target/release/sword}
[ -x "$SWORD" ] || { echo "no sword binary at $SWORD: build first (cargo build --release) or set SWORD" >&2; exit 2; }
SWORD=$(cd "$(dirname "$SWORD")" && pwd)/$(basename "$SWORD")
CONF=$(cd "${CONF:-$here/..}" && pwd)
SEED=${SEED:-42}
POLL=${POLL:-5}
mkdir -p "$RUN/slurm/logs" "$RUN/slurm/exit" "$RUN/parts"

if [ $resume -eq 1 ]; then
  # A part is done when its manifest exists (written last, atomically); the join checks the rest.
  missing=()
  for ((i = 0; i < SHARDS; i++)); do
    [ -f "$RUN/parts/extract-part-$i-of-$SHARDS.manifest.json" ] || missing+=("$i")
  done
  array=$(IFS=,; echo "${missing[*]}")
  echo "resume: parts missing: ${array:-none}"
  for i in "${missing[@]}"; do rm -f "$RUN/slurm/exit/extract-$i-of-$SHARDS.code"; done
else
  # A fresh submission: parts of an earlier submission with this N must not pass for this one's.
  rm -f "$RUN/parts/extract-part-"*"-of-$SHARDS."* "$RUN/slurm/exit/"*.code
  : >"$RUN/slurm/jobs"
  array=0-$((SHARDS - 1))
fi
rm -f "$RUN/slurm/exit/rest.code"

export SWORD DUMP RUN SHARDS CONF SEED
extra=()
[ -n "${SBATCH_ARGS:-}" ] && read -r -a extra <<<"$SBATCH_ARGS"

# --- the requests against the nodes ---------------------------------------------------------------------------
# The #SBATCH default of OPTION in a job script ("#SBATCH --mem=16G" → 16G).
sbatch_default() { sed -n "s/^#SBATCH --$2=//p" "$1" | head -n1; }
# Slurm's memory units (K, M = the default, G, T) in MiB; fails on anything else.
mem_mib() {
  [[ $1 =~ ^([0-9]+)([KkMmGgTt]?)$ ]] || return 1
  local n=${BASH_REMATCH[1]} u=${BASH_REMATCH[2]^^}
  case $u in
  K) echo $(((n + 1023) / 1024)) ;;
  "" | M) echo "$n" ;;
  G) echo $((n * 1024)) ;;
  T) echo $((n * 1024 * 1024)) ;;
  esac
}
# The partition the jobs go to: --partition/-p in SBATCH_ARGS, else SBATCH_PARTITION, else the default one.
partition=${SBATCH_PARTITION:-}
for ((k = 0; k < ${#extra[@]}; k++)); do
  case "${extra[$k]}" in
  --partition=*) partition=${extra[$k]#--partition=} ;;
  --partition | -p) partition=${extra[$((k + 1))]:-} ;;
  -p?*) partition=${extra[$k]#-p} ;;
  esac
done
if [ -z "$partition" ]; then
  partition=$(sinfo -h -o %P 2>/dev/null | sed -n 's/\*$//p' | head -n1)
fi
# "NODE CPUS MEM_MIB STATE" for every node of the partition (empty when sinfo cannot tell).
NODES=$(if [ -n "$partition" ]; then sinfo -h -N -p "${partition%%,*}" -o '%N %c %m %t' 2>/dev/null | sort -u; fi || true)
# The node with the most CPUs (then memory): "NODE CPUS MEM_MIB".
largest() { awk '{print $2, $3, $1}' <<<"$NODES" | sort -k1,1nr -k2,2nr | head -n1 | awk '{print $3, $1, $2}'; }
# check_request KIND CPUS_VAR MEM_VAR SCRIPT: sets REQ_CPUS, REQ_MEM (as given to sbatch) for KIND, or exits 2.
check_request() {
  local kind=$1 cvar=$2 mvar=$3 script=$4 cpus mem mib given=() lowered=() big bn bc bm
  cpus=${!cvar:-$(sbatch_default "$script" cpus-per-task)}
  mem=${!mvar:-$(sbatch_default "$script" mem)}
  mib=$(mem_mib "$mem") || { echo "$mvar=$mem: not a memory size (a number with K, M, G or T)" >&2; exit 2; }
  [[ $cpus =~ ^[1-9][0-9]*$ ]] || { echo "$cvar=$cpus: not a CPU count" >&2; exit 2; }
  if [ -z "$NODES" ]; then
    echo "note: sinfo reports no node for partition '${partition:-?}': the requests ($kind: $cpus CPUs, $mem) are not checked" >&2
    REQ_CPUS=$cpus REQ_MEM=$mem
    return 0
  fi
  if awk -v c="$cpus" -v m="$mib" '$2 >= c && $3 >= m {found = 1} END {exit !found}' <<<"$NODES"; then
    REQ_CPUS=$cpus REQ_MEM=$mem
    return 0
  fi
  read -r bn bc bm < <(largest)
  [ -n "${!cvar:-}" ] && given+=("$cvar=$cpus")
  [ -n "${!mvar:-}" ] && given+=("$mvar=$mem")
  if [ -n "${!cvar:-}" ] || [ -n "${!mvar:-}" ]; then
    # A request made by hand: never changed behind the user's back.
    echo "no node of partition $partition can run the $kind job: it asks $cpus CPUs and $mem (${given[*]}); the largest node is $bn with $bc CPUs and $bm MiB. Ask at most that, e.g. $cvar=$bc $mvar=${bm}M" >&2
    exit 2
  fi
  # The #SBATCH defaults are meant for a big cluster: lower them to what the largest node offers.
  [ "$cpus" -gt "$bc" ] && { lowered+=("$cpus → $bc CPUs"); cpus=$bc; }
  [ "$mib" -gt "$bm" ] && { lowered+=("$mem → ${bm}M"); mem=${bm}M; }
  echo "note: the $kind job's #SBATCH defaults do not fit any node of partition $partition (largest: $bn, $bc CPUs, $bm MiB): asking ${lowered[*]}; set $cvar / $mvar to choose" >&2
  REQ_CPUS=$cpus REQ_MEM=$mem
}
shard_res=() rest_res=()
if [ -n "$array" ]; then
  check_request "extract shard" SHARD_CPUS SHARD_MEM "$here/extract-shard.sbatch"
  shard_res=(--cpus-per-task="$REQ_CPUS" --mem="$REQ_MEM")
fi
check_request "rest (join, graph → export)" REST_CPUS REST_MEM "$here/rest.sbatch"
rest_res=(--cpus-per-task="$REQ_CPUS" --mem="$REQ_MEM")
echo "partition ${partition:-(default)}: ${shard_res[*]:+extract shards ${shard_res[*]}, }rest ${rest_res[*]}"
# sbatch with its error on stderr and exit 2 when it refuses (a bad option, account or partition).
submit() {
  local out
  if ! out=$(sbatch "$@" 2>&1); then
    echo "sbatch refused the job: $out" >&2
    exit 2
  fi
  tail -n1 <<<"$out"
}

dep=() jid=""
if [ -n "$array" ]; then
  jid=$(submit --parsable --export=ALL --chdir="$RUN" --array="$array" \
    --output="$RUN/slurm/logs/extract-%A_%a.log" "${shard_res[@]}" "${extra[@]}" "$here/extract-shard.sbatch")
  jid=${jid%%;*}
  echo "extract $jid $SHARDS $array" >>"$RUN/slurm/jobs"
  echo "extract shards: job array $jid (tasks $array of 0..$((SHARDS - 1)))"
  # afterok: the rest starts only when every task completed with exit 0; a task that failed or was
  # cancelled makes the dependency unsatisfiable and --kill-on-invalid-dep cancels the rest job.
  dep=(--dependency=afterok:"$jid" --kill-on-invalid-dep=yes)
fi
rid=$(submit --parsable --export=ALL --chdir="$RUN" --output="$RUN/slurm/logs/rest-%j.log" \
  "${dep[@]}" "${rest_res[@]}" "${extra[@]}" "$here/rest.sbatch") || {
  [ -n "$jid" ] && scancel "$jid" 2>/dev/null
  exit 2
}
rid=${rid%%;*}
echo "rest $rid $SHARDS" >>"$RUN/slurm/jobs"
echo "join + remaining stages: job $rid${jid:+ (after $jid)}"
echo "state: pipeline/slurm/submit.sh --status $RUN"
[ $wait -eq 1 ] || exit 0

# Wait until the dependent job has ended (it is cancelled by Slurm when the dependency can never be met).
terminal='^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|PREEMPTED|BOOT_FAIL|DEADLINE)$'
# Pending reasons that do not clear by waiting (the request itself is refused by the partition or account).
hopeless='^(PartitionConfig|PartitionNodeLimit|PartitionTimeLimit|MaxMemPerLimit|BadConstraints|InvalidAccount|InvalidQOS)$'
STATUS_SECS=${STATUS_SECS:-60}
[ "$STATUS_SECS" -le 60 ] 2>/dev/null || STATUS_SECS=60
# One line naming every job of this submission: "extract tasks 0,1 RUNNING; tasks 2-3 PENDING (Resources); rest
# job 13 PENDING (Dependency)".
status_line() {
  all_jobs | sort -s -k1,1 -k3,3n | awk '
    { kind = $1; id = $2; task = $3; st = $4; rs = $6
      what = st; if (st == "PENDING" && rs != "" && rs != "-" && rs != "None") what = st " (" rs ")"
      if (kind == "extract") {
        if (what in t) t[what] = t[what] "," task; else { t[what] = task; order[++n] = what }
      } else rest = "rest job " id " " what }
    END {
      line = ""
      for (i = 1; i <= n; i++) line = line (i == 1 ? "extract tasks " : "; tasks ") t[order[i]] " " order[i]
      if (rest != "") line = line (line == "" ? "" : "; ") rest
      print line }'
}
give_up() { # give_up MESSAGE: cancel every job of this submission, say why, exit 2
  awk '{print $2}' "$RUN/slurm/jobs" | xargs -r scancel 2>/dev/null || true
  echo "GAVE UP: $*; cancelled the submission's jobs (pipeline/slurm/submit.sh --status $RUN)" >&2
  exit 2
}
nodes_up() { # nodes of the partition that can take jobs now
  sinfo -h -N ${partition:+-p "${partition%%,*}"} -o %t 2>/dev/null | grep -Ec '^(idle|mix|alloc|comp)$' || true
}
unknown=0 last_line="" last_print=$((SECONDS - STATUS_SECS)) hopeless_since=""
while :; do
  read -r _ _ st _ rs < <(job_lines "$rid" || echo "$rid - UNKNOWN - -")
  [[ $st =~ $terminal ]] && break
  line=$(status_line)
  if [ "$line" != "$last_line" ] || [ $((SECONDS - last_print)) -ge "$STATUS_SECS" ]; then
    echo "[$(date -u +%H:%M:%S)] $line"
    last_line=$line last_print=$SECONDS
  fi
  # A reason that cannot clear, on any job of the submission, for PEND_GRACE seconds: give up.
  why="" grace=${PEND_GRACE:-10}
  while read -r kind id task jst _ jrs; do
    [ "$jst" = PENDING ] || continue
    if [[ ${jrs%%,*} =~ $hopeless ]]; then
      why="$kind job $id pends with reason ${jrs%%,*}, which does not clear: the partition ($partition) or the account refuses the request (cpus/memory/time/nodes); change SHARD_*/REST_* or SBATCH_ARGS"
    elif [[ $jrs == ReqNodeNotAvail* || $jrs == Nodes_required_for_job_are_DOWN* ]] && [ "$(nodes_up)" -eq 0 ]; then
      why="$kind job $id pends with reason ${jrs%%,*} and no node of partition $partition is up ($(sinfo -h -N ${partition:+-p "${partition%%,*}"} -o '%N %t' 2>/dev/null | tr '\n' ' ' | sed 's/ $//'))"
      # A node may be rebooting: give it longer.
      grace=${NODE_GRACE:-60}
    fi
    [ -n "$why" ] && break
  done < <(all_jobs)
  if [ -n "$why" ]; then
    hopeless_since=${hopeless_since:-$SECONDS}
    [ $((SECONDS - hopeless_since)) -ge "$grace" ] && give_up "$why"
  else
    hopeless_since=""
  fi
  if [ "$st" = UNKNOWN ]; then
    # Neither slurmctld nor accounting knows the job (controller down, or the record purged after MinJobAge
    # on a cluster without sacct): the job's own exit file still tells how it ended.
    unknown=$((unknown + 1))
    if [ -f "$RUN/slurm/exit/rest.code" ]; then
      st=$([ "$(cat "$RUN/slurm/exit/rest.code")" = 0 ] && echo COMPLETED || echo FAILED)
      break
    fi
    if [ $unknown -ge 60 ]; then
      echo "lost track of job $rid (neither scontrol nor sacct knows it); see pipeline/slurm/submit.sh --status $RUN" >&2
      exit 1
    fi
  else
    unknown=0
  fi
  if [ "$st" = PENDING ] && [ "$rs" = DependencyNeverSatisfied ]; then
    # Schedulers configured to keep such jobs: cancel it ourselves.
    scancel "$rid" || true
  fi
  sleep "$POLL"
done
report

# The outcome: the dependent job, else the first failed shard of this run, else a cancelled shard.
rest_state=$st
if [ "$rest_state" = COMPLETED ]; then
  echo "done: $RUN"
  exit 0
fi
first_failed="" cancelled=""
while read -r kind id task st ex _; do
  [ "$kind" = extract ] || continue
  code=${ex%%:*}
  if [ "$st" = FAILED ] && [ -n "$code" ] && [ "$code" != 0 ] && [ -z "$first_failed" ]; then
    first_failed="$task $code"
  elif [ "$st" != COMPLETED ] && [ ! -f "$RUN/parts/extract-part-$task-of-$SHARDS.manifest.json" ]; then
    cancelled+="$task "
  fi
done < <(if [ -n "$jid" ]; then job_lines "$jid" | sed 's/^/extract /' | sort -k3,3n; fi)
if [ -n "$first_failed" ]; then
  read -r task code <<<"$first_failed"
  echo "FAILED: extract shard $task/$SHARDS exited with code $code (log above); the join did not run" >&2
  exit "$code"
fi
if [ -n "$cancelled" ]; then
  echo "FAILED: extract shard(s) ${cancelled% } of $SHARDS did not finish (cancelled or killed); the join did not run." >&2
  echo "rerun only the missing shards and the rest: pipeline/slurm/submit.sh --resume $DUMP $RUN $SHARDS" >&2
  exit 1
fi
if [ "$rest_state" = CANCELLED ] && [ ! -e "$RUN/slurm/exit/rest.code" ] && [ "$rs" = DependencyNeverSatisfied ]; then
  echo "FAILED: the dependent job $rid can never start (DependencyNeverSatisfied) and no shard of this submission explains it" >&2
  exit 2
fi
code=$(cat "$RUN/slurm/exit/rest.code" 2>/dev/null || echo 1)
[ "$code" != 0 ] || code=1
echo "FAILED: the dependent job $rid ended $rest_state with exit code $code (log: $RUN/slurm/logs/rest-$rid.log)" >&2
exit "$code"
