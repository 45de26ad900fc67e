#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for the grader's Slurm test (Debian's slurm-wlm + munge):
#   tests/grader/slurm_single_node.sh start DIR    # writes DIR/slurm.conf, starts munged, slurmctld, slurmd
#   tests/grader/slurm_single_node.sh stop DIR
# Export SLURM_CONF=DIR/slurm.conf to use it. Needs root (slurmd runs jobs as their submitter).
set -euo pipefail
cmd=$1; dir=$(realpath -m "$2")
case "$cmd" in
start)
  mkdir -p "$dir"/{state,spool,log,munge}
  host=$(hostname -s)
  cpus=$(nproc)
  mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
  cat > "$dir/slurm.conf" <<CONF
ClusterName=grader-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$((20000 + RANDOM % 20000))
SlurmdPort=$((40000 + RANDOM % 20000))
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  if ! pgrep -x munged >/dev/null; then
    mkdir -p /run/munge /var/log/munge /var/lib/munge && chown munge:munge /run/munge /var/log/munge /var/lib/munge || true
    (runuser -u munge -- /usr/sbin/munged 2>/dev/null || /usr/sbin/munged --force)
  fi
  SLURM_CONF="$dir/slurm.conf" /usr/sbin/slurmctld -c -f "$dir/slurm.conf"
  SLURM_CONF="$dir/slurm.conf" /usr/sbin/slurmd -c -f "$dir/slurm.conf"
  for _ in $(seq 60); do
    if SLURM_CONF="$dir/slurm.conf" sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then exit 0; fi
    sleep 1
  done
  echo "slurm_single_node: the node did not come up (see $dir/log/)" >&2
  exit 1
  ;;
stop)
  for p in slurmd slurmctld; do
    [ -f "$dir/$p.pid" ] && kill "$(cat "$dir/$p.pid")" 2>/dev/null || true
  done
  ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
