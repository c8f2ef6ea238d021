#!/usr/bin/env bash
# A real one-node SLURM cluster on loopback (munged + slurmctld + slurmd) in a folder of its own,
# for the tests and for anyone who wants to try the job scripts without a cluster.
#   jobs/local_cluster.sh start DIR   # prints the line to source: export SLURM_CONF=DIR/slurm.conf
#   jobs/local_cluster.sh stop DIR    # stops the daemons by their PIDs
# Needs Debian's slurm-wlm (scripts/setup.sh installs it). Runs as root.
set -euo pipefail
cmd=${1:?start|stop}
DIR=$(mkdir -p "${2:?folder}" && cd "$2" && pwd)

stop() {
  for d in slurmd slurmctld munged; do
    if [ -f "$DIR/$d.pid" ]; then
      pid=$(cat "$DIR/$d.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$DIR/$d.pid"
    fi
  done
}

if [ "$cmd" = stop ]; then stop; exit 0; fi
[ "$cmd" = start ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

# munged runs as user munge: every folder above DIR must be searchable by it.
if ! runuser -u munge -- test -x "$DIR"; then
  echo "local_cluster: user munge cannot reach $DIR; make its parent folders world-searchable (chmod o+x)" >&2
  exit 1
fi
CPUS=$(nproc)
MEM=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
# Ports of our own, away from the defaults, derived from the folder so parallel clusters differ.
BASE=$(( 20000 + $(cksum <<< "$DIR" | cut -d' ' -f1) % 20000 ))
mkdir -p "$DIR/munge" "$DIR/spool/ctld" "$DIR/spool/d" "$DIR/log"
chown -R munge:munge "$DIR/munge"
chmod 755 "$DIR" "$DIR/munge"
if [ ! -f "$DIR/munge/munge.key" ]; then
  dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
  chown munge:munge "$DIR/munge/munge.key"
  chmod 400 "$DIR/munge/munge.key"
fi
SOCKET="$DIR/munge/munge.socket"
cat > "$DIR/slurm.conf" <<CONF
ClusterName=ctxsimlocal
SlurmctldHost=localhost
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$SOCKET
CredType=cred/munge
SlurmctldPort=$BASE
SlurmdPort=$((BASE + 1))
StateSaveLocation=$DIR/spool/ctld
SlurmdSpoolDir=$DIR/spool/d
SlurmctldPidFile=$DIR/slurmctld.pid.slurm
SlurmdPidFile=$DIR/slurmd.pid.slurm
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
ReturnToService=2
SchedulerType=sched/backfill
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=30
Waittime=0
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
runuser -u munge -- /usr/sbin/munged --socket="$SOCKET" --key-file="$DIR/munge/munge.key" \
  --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/munge/munged.log" --seed-file="$DIR/munge/munged.seed" --force
sleep 0.5
cp "$DIR/munge/munged.pid" "$DIR/munged.pid"
export SLURM_CONF="$DIR/slurm.conf"
/usr/sbin/slurmctld -D -i -f "$SLURM_CONF" > "$DIR/log/slurmctld.out" 2>&1 &
echo $! > "$DIR/slurmctld.pid"
/usr/sbin/slurmd -D -N localhost -f "$SLURM_CONF" > "$DIR/log/slurmd.out" 2>&1 &
echo $! > "$DIR/slurmd.pid"
for _ in $(seq 1 300); do
  if sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
    echo "export SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  sleep 0.1
done
echo "local_cluster: SLURM did not come up in 30 s; logs in $DIR/log" >&2
stop
exit 1
