#!/usr/bin/env bash
# A real single-node Slurm cluster for this machine, started and stopped by the project (no systemd needed).
#
#   scripts/slurm-local.sh install  # only install slurm-wlm + munge where missing
#   scripts/slurm-local.sh start    # install slurm-wlm + munge if missing, write the config, start the daemons
#   scripts/slurm-local.sh status   # the daemons' pids and `sinfo`
#   scripts/slurm-local.sh stop     # end exactly the processes `start` started (pid files), nothing else
#   scripts/slurm-local.sh env      # print `export SLURM_CONF=...` for the client commands (sbatch, squeue, sacct)
#
# Everything lives in SLURM_LOCAL_DIR (default: data/slurm in the repo, git-ignored): slurm.conf, the munge key
# and socket, the daemons' pid files, logs and spool, the job completion log. The client commands find the
# cluster through SLURM_CONF=$SLURM_LOCAL_DIR/etc/slurm.conf (printed by `start` and `env`).
#
# The daemons talk over loopback only: the node's address is 127.0.0.1 and CommunicationParameters=NoInAddrAny
# +NoCtldInAddrAny make them bind to it instead of every interface. Ports: SLURM_LOCAL_PORT (slurmctld, default 6817) and
# SLURM_LOCAL_PORT+1 (slurmd). There is no slurmdbd: job history for `sacct` comes from the job completion log
# (JobCompType=jobcomp/filetxt, read with `sacct --completion`); see docs/slurm.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
DIR=${SLURM_LOCAL_DIR:-$root/data/slurm}
PORT=${SLURM_LOCAL_PORT:-6817}
CONF=$DIR/etc/slurm.conf
RUNDIR=$DIR/run
LOGDIR=$DIR/log

say() { echo "slurm-local: $*" >&2; }
die() { say "$*"; exit 1; }

# Packages: Debian's slurm-wlm (slurmctld, slurmd, client commands) and munge. Installed only when missing.
install_if_missing() {
  local missing=()
  for c in slurmctld slurmd sbatch squeue sacct scontrol munged munge; do
    command -v "$c" >/dev/null 2>&1 || missing+=("$c")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] || die "missing ${missing[*]} and not root: install slurm-wlm and munge (apt-get install -y slurm-wlm munge)"
  say "installing slurm-wlm and munge (missing: ${missing[*]})"
  local t0=$SECONDS
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # The packages' maintainer scripts may try to start their services; there is no init system here to do so.
  apt-get install -y -qq --no-install-recommends slurm-wlm munge >"$LOGDIR/apt.log" 2>&1 ||
    { tail -n 30 "$LOGDIR/apt.log" >&2; die "apt-get install failed (log: $LOGDIR/apt.log)"; }
  say "installed in $((SECONDS - t0)) s"
  echo "$((SECONDS - t0))" >"$DIR/install-seconds"
}

# A pid file names a live process of the expected program (so a stale file never ends an unrelated process).
alive() { # alive PIDFILE NAME
  local pid
  [ -s "$1" ] || return 1
  pid=$(cat "$1")
  [ -r "/proc/$pid/comm" ] && [ "$(cat "/proc/$pid/comm")" = "$2" ]
}

write_config() {
  local host cpus mem_kib mem_mib real
  host=$(hostname -s)
  cpus=$(nproc)
  mem_kib=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
  mem_mib=$((mem_kib / 1024))
  # Leave the system ~10% (at least 512 MiB), as a real node would.
  real=$((mem_mib - (mem_mib / 10 > 512 ? mem_mib / 10 : 512)))
  mkdir -p "$DIR/etc" "$RUNDIR" "$LOGDIR" "$DIR/spool/ctld" "$DIR/spool/d" "$DIR/munge"
  chmod 700 "$DIR/munge"
  cat >"$CONF.tmp" <<EOF
# Written by scripts/slurm-local.sh for $host: $cpus CPUs, $mem_mib MiB ($real MiB to jobs). Do not edit:
# rewritten on every start.
ClusterName=sword-local
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire is also how long a requeued job waits before it may start again (default 120 s).
AuthInfo=socket=$RUNDIR/munge.socket,cred_expire=${SLURM_LOCAL_CRED_EXPIRE:-10}
StateSaveLocation=$DIR/spool/ctld
SlurmdSpoolDir=$DIR/spool/d
SlurmctldPidFile=$RUNDIR/slurmctld.pid
SlurmdPidFile=$RUNDIR/slurmd.pid
SlurmctldLogFile=$LOGDIR/slurmctld.log
SlurmdLogFile=$LOGDIR/slurmd.log
# No cgroups in a container: track processes by parent pid, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SchedulerType=sched/backfill
# Test pending jobs every few seconds (default 60 s), so a requeued job starts soon after cred_expire.
SchedulerParameters=sched_interval=5,bf_interval=5
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=none
# No slurmdbd: sacct reads the job completion log (sacct --completion).
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$LOGDIR/jobcomp.log
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=5
# Requeued jobs (scontrol requeue) go back to the queue instead of being held.
JobRequeue=1
MinJobAge=3600
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$real State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$CONF.tmp" "$CONF"
  if [ ! -s "$DIR/munge/munge.key" ]; then
    # 1024 random bytes, the size mungekey makes.
    (umask 077 && head -c 1024 /dev/urandom >"$DIR/munge/munge.key.tmp" && mv "$DIR/munge/munge.key.tmp" "$DIR/munge/munge.key")
  fi
}

wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...
  local n=$1 what=$2
  shift 2
  for _ in $(seq "$((n * 5))"); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  die "$what did not come up in ${n}s (logs: $LOGDIR)"
}

start() {
  mkdir -p "$LOGDIR"
  install_if_missing
  local t0=$SECONDS
  if alive "$RUNDIR/slurmctld.pid" slurmctld && alive "$RUNDIR/slurmd.pid" slurmd && alive "$RUNDIR/munged.pid" munged; then
    say "already running (SLURM_CONF=$CONF)"
    echo "export SLURM_CONF=$CONF"
    return 0
  fi
  write_config
  export SLURM_CONF=$CONF
  if ! alive "$RUNDIR/munged.pid" munged; then
    # --force: the repo's parent folders may be group-writable, which munged otherwise refuses.
    munged --force --socket="$RUNDIR/munge.socket" --key-file="$DIR/munge/munge.key" \
      --pid-file="$RUNDIR/munged.pid" --log-file="$LOGDIR/munged.log" --seed-file="$DIR/munge/munge.seed"
    wait_for 10 munged munge --socket="$RUNDIR/munge.socket" -n
  fi
  if ! alive "$RUNDIR/slurmctld.pid" slurmctld; then
    slurmctld -f "$CONF"
    wait_for 30 slurmctld scontrol ping
    wait_for 30 slurmctld bash -c 'scontrol ping | grep -q "is UP"'
  fi
  if ! alive "$RUNDIR/slurmd.pid" slurmd; then
    slurmd -f "$CONF"
  fi
  # The node is usable once slurmctld has heard from slurmd (idle, or mixed/allocated if jobs were kept).
  wait_for 60 "slurmd registration" bash -c 'sinfo -h -N -o %t | grep -Eq "^(idle|mix|alloc)"'
  say "cluster up in $((SECONDS - t0)) s: $(sinfo -h -N -o '%N %c CPUs %m MiB %t')"
  echo "$((SECONDS - t0))" >"$DIR/start-seconds"
  echo "export SLURM_CONF=$CONF"
}

stop() {
  local any=0
  # Jobs still on this cluster (all of them are this cluster's own): cancel them first, so that no job step
  # (slurmstepd and its processes) outlives slurmd.
  if alive "$RUNDIR/slurmctld.pid" slurmctld; then
    local jobs
    jobs=$(SLURM_CONF=$CONF squeue -h -o %A 2>/dev/null || true)
    if [ -n "$jobs" ]; then
      say "cancelling jobs still queued or running: $(echo "$jobs" | tr '\n' ' ')"
      # shellcheck disable=SC2086 # one job id per word
      SLURM_CONF=$CONF scancel $jobs || true
      for _ in $(seq 50); do [ -z "$(SLURM_CONF=$CONF squeue -h -o %A 2>/dev/null)" ] && break; sleep 0.2; done
    fi
  fi
  # Reverse order of start; only the pids in our own pid files, only if they are the expected program.
  for d in slurmd slurmctld munged; do
    local f="$RUNDIR/$d.pid"
    if alive "$f" "$d"; then
      local pid
      pid=$(cat "$f")
      kill "$pid"
      for _ in $(seq 100); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
      if [ -d "/proc/$pid" ]; then
        say "$d ($pid) still running after 10s: SIGKILL"
        kill -9 "$pid" 2>/dev/null || true
      fi
      say "stopped $d ($pid)"
      any=1
    fi
    rm -f "$f"
  done
  [ $any -eq 1 ] || say "nothing was running"
}

status() {
  local rc=0
  for d in munged slurmctld slurmd; do
    if alive "$RUNDIR/$d.pid" "$d"; then echo "$d running (pid $(cat "$RUNDIR/$d.pid"))"; else echo "$d not running"; rc=3; fi
  done
  if [ $rc -eq 0 ]; then SLURM_CONF=$CONF sinfo -N -o '%N %c %m %t'; fi
  return $rc
}

case "${1:-}" in
install) mkdir -p "$LOGDIR" && install_if_missing ;;
start) start ;;
stop) stop ;;
status) status ;;
env) echo "export SLURM_CONF=$CONF" ;;
*) echo "usage: $0 install|start|stop|status|env   (state in \$SLURM_LOCAL_DIR, default data/slurm)" >&2; exit 2 ;;
esac
