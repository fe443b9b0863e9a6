#!/usr/bin/env bash
# A real single-node Slurm cluster with accounting, for tests and for trying
# `hpcbench submit --site ci-slurm` on a workstation:
#   munged -> MariaDB -> slurmdbd -> (sacctmgr add cluster) -> slurmctld -> slurmd
#
#   scripts/slurm-test-cluster.sh start    install what is missing (Debian/Ubuntu apt), start, wait until usable
#   scripts/slurm-test-cluster.sh stop     stop the daemons this script started (by process id)
#   scripts/slurm-test-cluster.sh status   exit 0 when the cluster answers sinfo and sacct
#   scripts/slurm-test-cluster.sh env      print the `export SLURM_CONF=...` clients need
#
# HPCBENCH_SLURM_NODES=N (default 1) makes N nodes of this one machine (node1..nodeN, the
# cores split between them, one slurmd each on its own port): multi-node placement (srun
# --nodelist, steps spanning nodes) tested for real. Give such a cluster its own
# HPCBENCH_SLURM_DIR, HPCBENCH_SLURM_PORT_BASE and HPCBENCH_SLURM_CLUSTER.
# HPCBENCH_SLURM_CPUS_PER_NODE=C gives each of those nodes C CPUs (default: the cores split;
# at most the machine's: the nodes then share its cores, as Slurm never sees), so that a rank
# count one node holds can still be asked to span two (a sweep's --nodes).
#
# All state (configs, spool, logs, the database) lives under $HPCBENCH_SLURM_DIR
# (default ${TMPDIR:-/tmp}/hpcbench-slurm). Ports are off the defaults so that
# a system Slurm or MariaDB on the same machine is not disturbed. Needs root
# (SlurmUser=root, as in the measured set-up), like a CI container.
set -euo pipefail

DIR="${HPCBENCH_SLURM_DIR:-${TMPDIR:-/tmp}/hpcbench-slurm}"
CLUSTER="${HPCBENCH_SLURM_CLUSTER:-hpcbench}"
PORT_BASE="${HPCBENCH_SLURM_PORT_BASE:-16817}"   # slurmctld, slurmd, slurmdbd, mariadb = base .. base+3
CTLD_PORT=$PORT_BASE
SLURMD_PORT=$((PORT_BASE + 1))
DBD_PORT=$((PORT_BASE + 2))
DB_PORT=$((PORT_BASE + 3))
DB_PASS="hpcbench-test"   # a throw-away database bound to 127.0.0.1 only
HOST="$(hostname -s)"
NODES="${HPCBENCH_SLURM_NODES:-1}"
CPUS_PER_NODE="${HPCBENCH_SLURM_CPUS_PER_NODE:-0}"
if [ "$NODES" -gt 1 ]; then NODE_NAMES=$(seq -f 'node%g' -s ' ' 1 "$NODES"); else NODE_NAMES=$HOST; fi
NODE_LIST=${NODE_NAMES// /,}
export SLURM_CONF="$DIR/etc/slurm.conf"

log() { printf '[slurm-test-cluster] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

install_missing() {
  local pkgs=()
  command -v slurmctld >/dev/null || pkgs+=(slurm-wlm)
  command -v slurmdbd >/dev/null || pkgs+=(slurmdbd)
  command -v munged >/dev/null || pkgs+=(munge)
  command -v mariadbd >/dev/null || command -v mysqld >/dev/null || pkgs+=(mariadb-server)
  [ ${#pkgs[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || die "missing ${pkgs[*]} and no apt-get: install Slurm, slurmdbd, munge, MariaDB"
  log "installing ${pkgs[*]} (apt)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${pkgs[@]}" >/dev/null
}

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# Start a daemon in the foreground mode under setsid, remembering its pid.
spawn() {
  local name=$1; shift
  if pid_alive "$DIR/run/$name.pid"; then return 0; fi
  setsid "$@" >"$DIR/log/$name.out" 2>&1 < /dev/null &
  echo $! >"$DIR/run/$name.pid"
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
  local secs=$1 what=$2; shift 2
  for _ in $(seq $((secs * 5))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  die "$what did not come up in ${secs}s; logs in $DIR/log"
}

write_configs() {
  mkdir -p "$DIR"/{etc,run,log,spool/ctld,spool/d,db}
  local cpus mem
  cpus=$(nproc)
  # RealMemory below what slurmd measures, so the node never drains for "low memory".
  mem=$(slurmd -C 2>/dev/null | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' | head -1)
  mem=$(( ${mem:-2048} * 9 / 10 ))
  local nodes_conf="NodeName=$HOST CPUs=$cpus RealMemory=$mem State=UNKNOWN" i=0 name
  if [ "$NODES" -gt 1 ]; then
    # TmpFS holds Slurm's PMIx rendezvous folders (spmix_appdir_<uid>_<step>): each node's
    # slurmd sees its own (a bind mount, below), or the ranks of one step on two nodes of this
    # one machine trample each other's and the step hangs.
    nodes_conf="TmpFS=$DIR/tmp"$'\n'
    for name in $NODE_NAMES; do
      i=$((i + 1))
      nodes_conf+="NodeName=$name NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$((PORT_BASE + 10 + i)) "
      local per=$(( cpus / NODES > 0 ? cpus / NODES : 1 ))
      if [ "$CPUS_PER_NODE" -gt 0 ] && [ "$CPUS_PER_NODE" -le "$cpus" ]; then per=$CPUS_PER_NODE; fi
      nodes_conf+="CPUs=$per RealMemory=$(( mem / NODES )) State=UNKNOWN"$'\n'
    done
  fi
  cat >"$SLURM_CONF" <<EOF
# Written by scripts/slurm-test-cluster.sh: a test cluster (one machine) with accounting.
ClusterName=$CLUSTER
SlurmctldHost=$HOST
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/spool/ctld
SlurmdSpoolDir=$DIR/spool/d/%n
SlurmctldPidFile=$DIR/run/slurmctld.daemon.pid
SlurmdPidFile=$DIR/run/slurmd.%n.daemon.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.%n.log
ProctrackType=proctrack/linuxproc
# Tasks bound to the CPUs of their step (sched_setaffinity): concurrent --exact steps of one
# allocation each run on cores of their own (slurm.conf(5) TaskPlugin; srun(1) --cpu-bind).
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
MpiDefault=none
ReturnToService=2
MaxArraySize=1001
# Short waits: a cancelled or timed-out test job is gone within seconds.
KillWait=5
MinJobAge=30
InactiveLimit=0
SchedulerType=sched/backfill
$nodes_conf
PartitionName=debug Nodes=$NODE_LIST Default=YES MaxTime=60 State=UP
PartitionName=short Nodes=$NODE_LIST Default=NO MaxTime=5 State=UP
EOF
  cat >"$DIR/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$DIR/run/slurmdbd.daemon.pid
LogFile=$DIR/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
  chmod 600 "$DIR/etc/slurmdbd.conf"
  # cgroup.conf is read by some plugins even when cgroups are not used.
  : >"$DIR/etc/cgroup.conf"
}

start_munge() {
  if [ -S /run/munge/munge.socket.2 ] && munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
    return 0  # a munged is already serving (ours from an earlier start, or the system's)
  fi
  mkdir -p /run/munge /var/lib/munge /var/log/munge /etc/munge
  if [ ! -s /etc/munge/munge.key ]; then
    if command -v mungekey >/dev/null; then mungekey --create --keyfile=/etc/munge/munge.key
    else dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null; fi
  fi
  chown -R munge:munge /run/munge /var/lib/munge /var/log/munge /etc/munge
  chmod 700 /etc/munge; chmod 400 /etc/munge/munge.key
  spawn munged runuser -u munge -- munged --foreground
  wait_for 20 munged bash -c 'munge -n </dev/null | unmunge'
}

start_db() {
  local db="$DIR/db" server
  server=$(command -v mariadbd || command -v mysqld)
  if [ ! -d "$db/mysql" ]; then
    log "initialising MariaDB in $db"
    mariadb-install-db --no-defaults --datadir="$db" --user=root --auth-root-authentication-method=socket \
      --skip-test-db >"$DIR/log/mariadb-install.log" 2>&1 || die "mariadb-install-db failed: $DIR/log/mariadb-install.log"
  fi
  spawn mariadb "$server" --no-defaults --datadir="$db" --user=root --socket="$DIR/run/mysql.sock" \
    --port="$DB_PORT" --bind-address=127.0.0.1 --skip-name-resolve --pid-file="$DIR/run/mariadb.daemon.pid" \
    --innodb-buffer-pool-size=64M --log-error="$DIR/log/mariadb.log"
  wait_for 60 MariaDB mariadb --no-defaults -S "$DIR/run/mysql.sock" -uroot -e 'select 1'
  mariadb --no-defaults -S "$DIR/run/mysql.sock" -uroot <<EOF
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
FLUSH PRIVILEGES;
EOF
}

cluster_ok() {
  # Without its config file a Slurm client looks for a config server in DNS and waits a minute.
  [ -f "$SLURM_CONF" ] || return 1
  sinfo -h -o '%t' 2>/dev/null | grep -qE '^(idle|mix|alloc)' && sacct -n -X -S now-1minutes >/dev/null 2>&1
}

start() {
  [ "$(id -u)" -eq 0 ] || die "must run as root (SlurmUser=root)"
  install_missing
  if cluster_ok; then log "already running ($SLURM_CONF)"; return 0; fi
  write_configs
  start_munge
  start_db
  spawn slurmdbd slurmdbd -D
  wait_for 60 slurmdbd bash -c 'sacctmgr -n list cluster'
  sacctmgr -i add cluster "$CLUSTER" >/dev/null 2>&1 || true
  spawn slurmctld slurmctld -D -i
  wait_for 60 slurmctld scontrol ping
  local name
  for name in $NODE_NAMES; do
    mkdir -p "$DIR/spool/d/$name" "$DIR/tmp" "$DIR/tmp-$name"
    if [ "$NODES" -gt 1 ]; then
      spawn "slurmd-$name" unshare -m --propagation private \
        bash -c "mount --bind '$DIR/tmp-$name' '$DIR/tmp' && exec slurmd -D -N '$name'"
    else
      spawn "slurmd-$name" slurmd -D -N "$name"
    fi
  done
  for name in $NODE_NAMES; do
    # A node that was down in an earlier run comes back by hand.
    wait_for 60 "node $name" bash -c "sinfo -h -n $name -o %t | grep -qvE 'unk|down|drain|n/a' "
    scontrol update nodename="$name" state=resume >/dev/null 2>&1 || true
  done
  wait_for 60 "the cluster (sinfo+sacct)" cluster_ok
  # Jobs saved in the state of an earlier run (pending or cut off when its daemons stopped)
  # would be scheduled first and hold the node's CPUs: a cold start begins with an empty queue.
  local left
  left=$(squeue -h -o %i | tr '\n' ' ')
  if [ -n "${left// }" ]; then
    # shellcheck disable=SC2086
    scancel $left || true
    log "cancelled jobs left from an earlier run: $left"
  fi
  log "up: SLURM_CONF=$SLURM_CONF (cluster $CLUSTER, nodes $NODE_LIST, partitions debug, short)"
}

stop() {
  local name pid
  for name in $(for n in $NODE_NAMES; do echo "slurmd-$n"; done) slurmd slurmctld slurmdbd mariadb munged; do
    [ -f "$DIR/run/$name.pid" ] || continue
    pid=$(cat "$DIR/run/$name.pid")
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$DIR/run/$name.pid"
  done
  log "stopped (state kept in $DIR)"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) if cluster_ok; then echo "up ($SLURM_CONF)"; else echo "down"; exit 1; fi ;;
  env) echo "export SLURM_CONF=$SLURM_CONF" ;;
  *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
