#!/usr/bin/env bash
# A one-node Slurm cluster on this machine (slurmctld + slurmd as root,
# munge for authentication), so that tests/mpi.rs can launch ranks with
# `srun --mpi=pmix`. Needs Debian's slurm-wlm and munge. Idempotent.
set -euo pipefail
host=$(hostname)
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 * 8 / 10 ))
mkdir -p /etc/slurm /var/spool/slurmd /var/spool/slurmctld /var/log/slurm /run/munge
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=membw-ci
SlurmctldHost=$host
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
ReturnToService=2
SlurmUser=root
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmdSpoolDir=/var/spool/slurmd
StateSaveLocation=/var/spool/slurmctld
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
if [ ! -s /etc/munge/munge.key ]; then
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
fi
chown munge:munge /etc/munge/munge.key /run/munge
chmod 400 /etc/munge/munge.key
pgrep -x munged >/dev/null || su -s /bin/sh munge -c /usr/sbin/munged
pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd
for _ in $(seq 1 30); do
  if sinfo -h -o '%t' 2>/dev/null | grep -q idle; then exit 0; fi
  sleep 1
done
echo "slurm did not come up: $(tail -3 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log)" >&2
exit 1
