#!/usr/bin/env bash
# A two-node SLURM on this one machine (munge, slurmctld and two slurmd of Debian's slurm-wlm, which is built with
# --enable-multiple-slurmd) for the `--target slurm` tests: `tools/slurm/local-cluster.sh` (as root) installs what
# is missing, writes its configuration to ${PROFILEKIT_SLURM_DIR:-/var/tmp/profilekit-slurm} (never to /etc/slurm)
# and starts the daemons, or reuses them when they already answer (and restarts every one of them when the
# configuration changed, stopping the one-node `localhost` slurmd of earlier versions too). The nodes are `node1`
# and `node2`: both NodeHostname=localhost NodeAddr=127.0.0.1, their slurmd on ports 17001 and 17002 (`slurmd -N
# node1`, `slurmd -N node2`; spool, pid and log file per node: $dir/spool/NODE, $dir/slurmd-NODE.{pid,log}), so
# a job of several nodes really runs one step per node (`scontrol show hostnames` gives node1 node2; both
# nodes' address is 127.0.0.1). Each node claims 8 CPUs and 8 H100 GPUs it may not have (`config_overrides`, a
# gres.conf naming fake device files $dir/dev/gpu[0-7], /dev/null character devices, the same eight for both
# nodes), typed as SLURM's NVML detection names an H100 SXM (`nvidia_h100_80gb_hbm3`), so a job asks for them as
# on a GPU cluster: by type (`--gres=gpu:nvidia_h100_80gb_hbm3:N`, what profilekit renders for `gpu =
# "H100-SXM-80GB"`) or without one, up to 2 nodes x 8 GPUs. Prints `SLURM_CONF=...` last.
set -euo pipefail
dir=${PROFILEKIT_SLURM_DIR:-/var/tmp/profilekit-slurm}
conf=$dir/slurm.conf
export SLURM_CONF=$conf
gpu_type=nvidia_h100_80gb_hbm3
nodes=(node1 node2)
first_port=17001 # node i's slurmd listens on first_port + i

if [[ $(id -u) != 0 ]]; then
  echo "local-cluster.sh: must run as root (slurmd starts jobs as their user)" >&2
  exit 2
fi
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi

mkdir -p "$dir/state" "$dir/dev"
for node in "${nodes[@]}"; do mkdir -p "$dir/spool/$node"; done
{
  cat <<CONF
# written by profilekit tools/slurm/local-cluster.sh
ClusterName=profilekit
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
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
CONF
  for index in "${!nodes[@]}"; do
    echo "NodeName=${nodes[index]} NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((first_port + index))" \
      "CPUs=8 Gres=gpu:$gpu_type:8 State=UNKNOWN"
  done
  echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
} >"$dir/slurm.conf.new"
# gres/gpu drops a GPU without a device file: eight character devices that are /dev/null (1, 3), which both
# nodes name (each slurmd reads the gres.conf line of its own node; nothing opens the files)
for index in 0 1 2 3 4 5 6 7; do
  [[ -c $dir/dev/gpu$index ]] || mknod "$dir/dev/gpu$index" c 1 3
done
echo "NodeName=node[1-2] Name=gpu Type=$gpu_type File=$dir/dev/gpu[0-7]" >"$dir/gres.conf.new"
changed=no
cmp -s "$dir/slurm.conf.new" "$conf" && cmp -s "$dir/gres.conf.new" "$dir/gres.conf" || changed=yes
mv "$dir/slurm.conf.new" "$conf"
mv "$dir/gres.conf.new" "$dir/gres.conf"

running() { # running PIDFILE NAME: whether the pid file names a live process called NAME
  pgrep -x -F "$1" "$2" >/dev/null 2>&1
}
stop() { # stop PIDFILE NAME: end the process the pid file names, if it is a live NAME, and wait for it
  local pid
  if running "$1" "$2"; then
    pid=$(cat "$1")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$1"
}
if [[ $changed == yes ]]; then # daemons of an earlier configuration: a node's GRES is read at start only
  # slurmd.pid: the one slurmd (node `localhost`) of the one-node layout before this one
  for pidfile in "$dir"/slurmd.pid "$dir"/slurmd-*.pid; do stop "$pidfile" slurmd; done
  stop "$dir/slurmctld.pid" slurmctld
fi

if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  [[ -s /etc/munge/munge.key ]] || mungekey --create >/dev/null 2>&1 || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
  chown -R munge:munge /etc/munge /run/munge /var/log/munge /var/lib/munge
  chmod 0700 /etc/munge && chmod 0400 /etc/munge/munge.key
  runuser -u munge -- munged
fi
if ! scontrol ping 2>/dev/null | grep -q UP; then
  if [[ $changed == yes ]]; then
    slurmctld -c # a new layout: no nodes, jobs or drain reasons of the old one in the saved state
  else
    slurmctld
  fi
fi
for node in "${nodes[@]}"; do
  running "$dir/slurmd-$node.pid" slurmd || slurmd -N "$node"
done
for _ in $(seq 1 60); do
  # `sinfo -N` lists a node once per partition: one partition here
  if [[ $(sinfo -h -N -o '%N %t' 2>/dev/null | grep -cE ' (idle|mix|alloc)$') == "${#nodes[@]}" ]]; then
    echo "SLURM_CONF=$conf"
    exit 0
  fi
  # a node drained by an earlier configuration (its state is saved) comes back once it registers as it is now
  for node in $(sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 ~ /^(drain|drng|inval)/ { print $1 }'); do
    scontrol update NodeName="$node" State=RESUME 2>/dev/null || true
  done
  sleep 0.5
done
echo "local-cluster.sh: the nodes did not become idle in 30 s; see $dir/slurmctld.log and $dir/slurmd-NODE.log" >&2
sinfo -N -l >&2 || true
exit 1
