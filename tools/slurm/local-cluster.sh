#!/usr/bin/env bash
# A one-node SLURM on localhost (munge, slurmctld and slurmd of Debian's slurm-wlm) for the `--target slurm`
# tests: `tools/slurm/local-cluster.sh` (as root) installs what is missing, writes its configuration to
# ${PROFILEKIT_SLURM_DIR:-/var/tmp/profilekit-slurm} (never to /etc/slurm) and starts the daemons, or reuses
# them when they already answer (and restarts them when the configuration changed). The node claims 8 CPUs and 4
# H100 GPUs it may not have (`config_overrides`, a gres.conf naming fake device files), typed as SLURM's NVML
# detection names an H100 SXM (`nvidia_h100_80gb_hbm3`), so a job asks for them as on a GPU cluster: by type
# (`--gres=gpu:nvidia_h100_80gb_hbm3:N`, what profilekit renders for `gpu = "H100-SXM-80GB"`) or without one.
# Prints `SLURM_CONF=...` last.
set -euo pipefail
dir=${PROFILEKIT_SLURM_DIR:-/var/tmp/profilekit-slurm}
conf=$dir/slurm.conf
export SLURM_CONF=$conf
gpu_type=nvidia_h100_80gb_hbm3

if [[ $(id -u) != 0 ]]; then
  echo "local-cluster.sh: must run as root (slurmd starts jobs as their user)" >&2
  exit 2
fi
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi

mkdir -p "$dir/state" "$dir/spool"
cat >"$dir/slurm.conf.new" <<CONF
# written by profilekit tools/slurm/local-cluster.sh
ClusterName=profilekit
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
GresTypes=gpu
ReturnToService=2
SlurmdParameters=config_overrides
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=localhost NodeAddr=127.0.0.1 CPUs=8 Gres=gpu:$gpu_type:4 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
# gres/gpu drops a GPU without a device file: four character devices that are /dev/null (1, 3)
mkdir -p "$dir/dev"
for index in 0 1 2 3; do
  [[ -c $dir/dev/gpu$index ]] || mknod "$dir/dev/gpu$index" c 1 3
done
echo "Name=gpu Type=$gpu_type File=$dir/dev/gpu[0-3]" >"$dir/gres.conf.new"
changed=no
cmp -s "$dir/slurm.conf.new" "$conf" && cmp -s "$dir/gres.conf.new" "$dir/gres.conf" || changed=yes
mv "$dir/slurm.conf.new" "$conf"
mv "$dir/gres.conf.new" "$dir/gres.conf"
if [[ $changed == yes ]]; then # daemons of an earlier configuration: the node's GRES is read at start only
  for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid"; do
    pid=$(cat "$pidfile" 2>/dev/null) || continue
    if kill "$pid" 2>/dev/null; then
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
  done
fi

if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  [[ -s /etc/munge/munge.key ]] || mungekey --create >/dev/null 2>&1 || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
  chown -R munge:munge /etc/munge /run/munge /var/log/munge /var/lib/munge
  chmod 0700 /etc/munge && chmod 0400 /etc/munge/munge.key
  runuser -u munge -- munged
fi
if ! scontrol ping 2>/dev/null | grep -q UP; then
  slurmctld
fi
if ! pgrep -F "$dir/slurmd.pid" slurmd >/dev/null 2>&1; then
  slurmd -N localhost
fi
for _ in $(seq 1 60); do
  if sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then
    echo "SLURM_CONF=$conf"
    exit 0
  fi
  # a node drained by an earlier configuration (its state is saved) comes back once it registers as it is now
  if sinfo -h -o %t 2>/dev/null | grep -qE '^(drain|drng|inval)'; then
    scontrol update NodeName=localhost State=RESUME 2>/dev/null || true
  fi
  sleep 0.5
done
echo "local-cluster.sh: the node did not become idle in 30 s; see $dir/slurmctld.log and $dir/slurmd.log" >&2
sinfo -N -l >&2 || true
exit 1
