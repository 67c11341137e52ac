#!/usr/bin/env bash
# A real Slurm cluster on this machine, for coda's live tests: munge with its own key and socket,
# slurmctld, and NODES slurmd daemons (`slurmd -N nX` on distinct ports), each node declaring 8
# GPUs as typed GRES, one type per PCIe switch (sw0..sw3, 2 GPUs each: the DGX-1 layout of coda's
# default server), backed by fake device files (symlinks to /dev/null: Slurm 22.05 drops GPUs
# without `File=`). Everything lives in one folder (CODA_SLURM_DIR, default /tmp/coda-slurm);
# nothing under /etc is touched, so a machine's own Slurm is left alone.
#
#   scripts/slurm_cluster.sh install   # Debian's slurmctld, slurmd, slurm-client, munge (as root)
#   scripts/slurm_cluster.sh up        # start (installs first if slurmctld is missing)
#   scripts/slurm_cluster.sh down      # stop every daemon it started, remove the folder
#   scripts/slurm_cluster.sh env       # the environment a client needs (eval it)
#
# Clients reach it through SLURM_CONF=$CODA_SLURM_DIR/slurm.conf (the conf names munge's socket).
set -euo pipefail

DIR=${CODA_SLURM_DIR:-/tmp/coda-slurm}
NODES=${CODA_SLURM_NODES:-4}
CTLD_PORT=${CODA_SLURM_CTLD_PORT:-16817}
NODE_PORT0=${CODA_SLURM_NODE_PORT0:-17001}
HOST=$(hostname -s)

install() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null \
        && command -v munged >/dev/null && command -v sbatch >/dev/null; then
        return
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
}

write_conf() {
    mkdir -p "$DIR"/{munge,state,spool,log,run,dev}
    # munged wants its socket's folder searchable by all, and nobody else writing in it.
    chmod 711 "$DIR/munge"
    for i in $(seq 1 "$NODES"); do mkdir -p "$DIR/spool/n$i"; done
    for i in 0 1 2 3 4 5 6 7; do ln -sf /dev/null "$DIR/dev/nvidia$i"; done
    dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$DIR/munge/munge.key"
    {
        echo "ClusterName=coda"
        echo "SlurmctldHost=$HOST(127.0.0.1)"
        echo "SlurmctldPort=$CTLD_PORT"
        echo "SlurmUser=root"
        echo "SlurmdUser=root"
        echo "AuthType=auth/munge"
        echo "CredType=cred/munge"
        echo "AuthInfo=socket=$DIR/munge/munge.socket"
        echo "StateSaveLocation=$DIR/state"
        echo "SlurmdSpoolDir=$DIR/spool/%n"
        echo "SlurmctldPidFile=$DIR/run/slurmctld.pid"
        echo "SlurmdPidFile=$DIR/run/slurmd-%n.pid"
        echo "SlurmctldLogFile=$DIR/log/slurmctld.log"
        echo "SlurmdLogFile=$DIR/log/slurmd-%n.log"
        echo "SlurmdParameters=config_overrides"
        echo "ProctrackType=proctrack/pgid"
        echo "TaskPlugin=task/none"
        echo "JobAcctGatherType=jobacct_gather/none"
        echo "AccountingStorageType=accounting_storage/none"
        echo "JobCompType=jobcomp/none"
        echo "MpiDefault=none"
        echo "SwitchType=switch/none"
        echo "SelectType=select/cons_tres"
        echo "SelectTypeParameters=CR_Core"
        echo "GresTypes=gpu"
        echo "SchedulerType=sched/backfill"
        echo "SchedulerParameters=bf_interval=1,sched_min_interval=100000"
        echo "JobRequeue=1"
        echo "MinJobAge=3600"
        # The test's jobs checkpoint every tick, so a stopped job may die at once (a real
        # cluster keeps its own KillWait, for jobs that checkpoint on SIGTERM).
        echo "KillWait=0"
        echo "ReturnToService=2"
        echo "SlurmctldTimeout=30"
        echo "SlurmdTimeout=30"
        echo "InactiveLimit=0"
        echo "Waittime=0"
        for i in $(seq 1 "$NODES"); do
            echo "NodeName=n$i NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$((NODE_PORT0 + i - 1)) CPUs=40 Boards=1 SocketsPerBoard=2 CoresPerSocket=20 ThreadsPerCore=1 RealMemory=1000 Gres=gpu:sw0:2,gpu:sw1:2,gpu:sw2:2,gpu:sw3:2 State=UNKNOWN"
        done
        echo "PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
    } >"$DIR/slurm.conf"
    {
        echo "AutoDetect=off"
        for s in 0 1 2 3; do
            echo "NodeName=n[1-$NODES] Name=gpu Type=sw$s File=$DIR/dev/nvidia[$((2 * s))-$((2 * s + 1))]"
        done
    } >"$DIR/gres.conf"
}

wait_for() { # what, tries, command...
    local what=$1 tries=$2
    shift 2
    for _ in $(seq 1 "$tries"); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.5
    done
    echo "slurm_cluster.sh: $what did not come up; logs in $DIR/log" >&2
    tail -n 20 "$DIR"/log/*.log >&2 || true
    return 1
}

up() {
    install
    if [ -e "$DIR/run/slurmctld.pid" ]; then down; fi
    write_conf
    export SLURM_CONF="$DIR/slurm.conf"
    munged --socket="$DIR/munge/munge.socket" --key-file="$DIR/munge/munge.key" \
        --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.log" \
        --seed-file="$DIR/munge/munge.seed" --force
    wait_for munge 20 munge --socket="$DIR/munge/munge.socket" -n
    slurmctld -i -f "$SLURM_CONF"
    wait_for slurmctld 40 scontrol ping
    for i in $(seq 1 "$NODES"); do slurmd -N "n$i" -f "$SLURM_CONF"; done
    wait_for "the nodes" 60 bash -c "[ \"\$(sinfo -h -t idle -o %D)\" = $NODES ]"
    echo "slurm_cluster.sh: up in $DIR: $NODES nodes x 8 GPUs; export SLURM_CONF=$SLURM_CONF"
}

down() {
    export SLURM_CONF="$DIR/slurm.conf"
    # Jobs first, while slurmctld can still cancel them (their steps outlive slurmd).
    if [ -e "$DIR/run/slurmctld.pid" ] && scontrol ping >/dev/null 2>&1; then
        ids=$(squeue -h -o %i 2>/dev/null || true)
        if [ -n "$ids" ]; then
            # shellcheck disable=SC2086
            scancel $ids 2>/dev/null || true
            for _ in $(seq 1 20); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.25; done
        fi
    fi
    for f in "$DIR"/run/slurmd-*.pid "$DIR/run/slurmctld.pid" "$DIR/run/munged.pid"; do
        [ -e "$f" ] || continue
        pid=$(cat "$f")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
        kill -9 "$pid" 2>/dev/null || true
    done
    # A step whose slurmd is gone: nothing else on this machine runs Slurm jobs.
    pkill -9 -x slurmstepd 2>/dev/null || true
    rm -rf "$DIR"
    if pgrep -f "$DIR" >/dev/null; then
        echo "slurm_cluster.sh: processes left behind:" >&2
        pgrep -af "$DIR" >&2
        return 1
    fi
}

case ${1:-} in
install) install ;;
up) up ;;
down) down ;;
env) echo "export SLURM_CONF=$DIR/slurm.conf" ;;
*)
    echo "usage: $0 install|up|down|env" >&2
    exit 2
    ;;
esac
