#!/usr/bin/env bash
# Checks the Slurm launcher against a real one-node Slurm cluster on this machine.
#
# Installs slurm-wlm and munge when missing (apt, needs root), writes a throw-away
# configuration in a temporary directory (nothing under /etc is changed: SLURM_CONF and a
# private munged socket are used), starts munged, slurmctld and slurmd, then runs
#   salloc -N1 -n2 launch_demo --launcher slurm --count 2 --host $(hostname) -- /bin/sh -c ...
# which starts 2 workers through `srun` and checks their output (env, stdin, and that both ran at
# the same time: each waits for the other at a barrier); then starts 2 endless workers and
# checks that launch_demo's timeout (stop_all: SIGTERM to srun) ends them; and finally stops
# the daemons it started. Exit status 0 means the check passed. It takes about 5 s here once
# slurm-wlm is installed (the apt install took 15 s more).
#
# Usage: runtime/launch/scripts/slurm-check.sh [--keep]   (--keep: leave the temp dir for a look)
# Environment: LAUNCH_DEMO=path of a built launch_demo (else it is built with cargo).
set -euo pipefail

keep=0
case "${1:-}" in
  --keep) keep=1 ;;
  -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
  "") ;;
  *) echo "slurm-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

t0=$(date +%s)
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
log() { echo "slurm-check [$(( $(date +%s) - t0 ))s]: $*"; }
die() { echo "slurm-check: FAILED: $*" >&2; exit 1; }

# --- 1. install ---------------------------------------------------------------------------
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  [ "$(id -u)" -eq 0 ] || die "slurm-wlm and munge are missing and installing them needs root"
  log "installing slurm-wlm and munge"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi
[ "$(id -u)" -eq 0 ] || die "the daemons are started as root here; run as root"
log "$(slurmctld -V)"

# --- 2. the demo binary ---------------------------------------------------------------------
demo=${LAUNCH_DEMO:-}
if [ -z "$demo" ]; then
  log "building launch_demo"
  (cd "$repo" && cargo build -q -p pnet-launch --example launch_demo)
  demo="${CARGO_TARGET_DIR:-$repo/target}/debug/examples/launch_demo"
fi
[ -x "$demo" ] || die "launch_demo not found at $demo"

# --- 3. configuration ------------------------------------------------------------------------
dir=$(mktemp -d /tmp/pnet-slurm-check.XXXXXX)
chmod 700 "$dir"
pids=()
cleanup() {
  local rc=$?
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
  done
  if [ $rc -ne 0 ]; then
    for f in "$dir"/*.log; do [ -f "$f" ] && { echo "---- $f"; tail -n 20 "$f"; }; done >&2
  fi
  if [ $keep -eq 1 ]; then echo "slurm-check: kept $dir"; else rm -rf "$dir"; fi
  echo "slurm-check: daemons stopped; total $(( $(date +%s) - t0 )) s (exit $rc)"
}
trap cleanup EXIT

host=$(hostname)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ctld_port=$(free_port); slurmd_port=$(free_port)
mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chmod 700 "$dir/munge"
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 600 "$dir/munge/munge.key"
export SLURM_CONF="$dir/slurm.conf"
cat > "$SLURM_CONF" <<CONF
ClusterName=pnetcheck
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=check Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF

# --- 4. daemons ---------------------------------------------------------------------------------
log "starting munged, slurmctld, slurmd"
munged --foreground --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed" \
  >"$dir/munged.out.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -S "$dir/munge/munge.socket" ] && break; sleep 0.1; done
[ -S "$dir/munge/munge.socket" ] || die "munged did not start"
slurmctld -D -i >"$dir/slurmctld.out.log" 2>&1 &
pids+=($!)
slurmd -D >"$dir/slurmd.out.log" 2>&1 &
pids+=($!)
for i in $(seq 300); do
  state=$(sinfo -h -n "$host" -o %t 2>/dev/null || true)
  [ "$state" = "idle" ] && break
  sleep 0.1
done
[ "${state:-}" = "idle" ] || die "the node did not become idle (state '${state:-none}')"
log "node $host is idle"

# --- 5. the check --------------------------------------------------------------------------------
out="$dir/demo.out"
mkdir -p "$dir/barrier"
log "salloc -N1 -n2: 2 workers through the slurm launcher"
# shellcheck disable=SC2016  # expanded by the workers' shell
timeout 120 salloc -N1 -n2 --job-name=pnet-check "$demo" --launcher slurm --count 2 --host "$host" \
  --env 'PNET_DEMO=a,b c' --env "PNET_BARRIER=$dir/barrier" --stdin 'the secret' --timeout 60 -- \
  /bin/sh -c 'read s; touch "$PNET_BARRIER/$PNET_WORKER_NAME"; i=0
    while [ "$(ls "$PNET_BARRIER" | wc -l)" -lt 2 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
    echo "$PNET_WORKER_NAME job=$SLURM_JOB_ID step=$SLURM_STEP_ID stdin=$s env=$PNET_DEMO peers=$(ls "$PNET_BARRIER" | wc -l)"' \
  >"$out" 2>&1 || { cat "$out" >&2; die "salloc/launch_demo failed"; }
cat "$out"
for w in w0 w1; do
  grep -Eq "^  \[$w\] $w job=[0-9]+ step=[0-9]+ stdin=the secret env=a,b c peers=2\$" "$out" \
    || die "worker $w did not report its environment and stdin"
done
steps=$(grep -Eo 'step=[0-9]+' "$out" | sort -u | wc -l)
[ "$steps" -eq 2 ] || die "expected 2 distinct job steps, saw $steps"
log "2 workers ran at the same time as 2 srun steps, with their env and stdin"

# --- 6. stopping: workers that ignore stdin EOF are ended by stop_all (SIGTERM through srun) ---
out2="$dir/demo2.out"
mkdir -p "$dir/pids"
log "salloc -N1 -n2: 2 endless workers, stopped by launch_demo's timeout (stop_all)"
# shellcheck disable=SC2016
if timeout 120 salloc -N1 -n2 --job-name=pnet-stop "$demo" --launcher slurm --count 2 --host "$host" \
  --env "PNET_PIDS=$dir/pids" --timeout 3 -- \
  /bin/sh -c 'echo $$ > "$PNET_PIDS/$PNET_WORKER_NAME"; exec sleep 600' >"$out2" 2>&1; then
  cat "$out2" >&2; die "launch_demo should have reported the timeout"
fi
cat "$out2"
grep -q "^worker w0 timed out, then" "$out2" && grep -q "^worker w1 timed out, then" "$out2" \
  || die "launch_demo did not stop the workers"
for w in w0 w1; do
  pid=$(cat "$dir/pids/$w" 2>/dev/null) || die "worker $w did not start"
  for _ in $(seq 100); do
    st=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)
    { [ -z "$st" ] || [ "$st" = Z ]; } && break
    sleep 0.1
  done
  { [ -z "$st" ] || [ "$st" = Z ]; } || die "worker $w (pid $pid) survived stop_all"
done
log "PASSED: env, stdin, concurrency and stopping through srun"
