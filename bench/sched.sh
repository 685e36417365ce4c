#!/usr/bin/env bash
# Where a many-client run's time goes on a shared machine: for pgsurge, the floor
# client and pgbench at -c CLIENTS -j 2 (select-only, -M MODE), ROUNDS interleaved
# rounds of -T DURATION on one throwaway cluster. Per transaction: the client's context
# switches (voluntary: it slept waiting for replies; involuntary: preempted), the whole
# machine's context switches and wake-ups (mostly the server's backends), CPU
# migrations, the client's system calls, and the mean run queue (runnable tasks,
# sampled from /proc/loadavg's running count every 100 ms). Needs perf (linux-perf) and root for the tracepoints.
#   bench/sched.sh     (env: PGSURGE, PGBENCH, FLOOR, CLIENTS=250, MODE=prepared,
#                       DURATION=5, ROUNDS=3, SCALE=10)
source "$(dirname "$0")/lib.sh"
CLIENTS=${CLIENTS:-250}
MODE=${MODE:-prepared}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
SCALE=${SCALE:-10}
FLOOR=${FLOOR:-$(dirname "$PGSURGE")/pgsurge-floor}
command -v perf >/dev/null || { echo "perf needed (apt-get install linux-perf)" >&2; exit 1; }
start_cluster
W=$(mktemp -d)
"$PGBENCH" -i -s "$SCALE" -q >/dev/null 2>&1
# The mean of /proc/loadavg's "running" count (field 4, before the slash) while $1 runs.
runq_sampler() {
    local out=$1 n=0 sum=0
    while [ ! -e "$out.stop" ]; do
        r=$(cut -d' ' -f4 /proc/loadavg); r=${r%/*}
        sum=$((sum + r)); n=$((n + 1)); sleep 0.1
    done
    echo "$sum $n" >"$out"
}
printf "%-8s %5s %10s %9s %9s %9s %9s %9s %9s %7s\n" tool round tps "cl vol" "cl invol" "cl sys" "all cs" wakeups migr runq
for r in $(seq 1 "$ROUNDS"); do
    order=(floor pgbench pgsurge)
    order=("${order[@]:$(( r % 3 ))}" "${order[@]:0:$(( r % 3 ))}")
    for tool in "${order[@]}"; do
        rm -f "$W/rq" "$W/rq.stop"
        runq_sampler "$W/rq" &
        sampler=$!
        # System-wide counters around the client, which runs under its own perf.
        perf stat -a -x, -e context-switches,sched:sched_wakeup,cpu-migrations -o "$W/all" -- \
            perf stat -x, -e context-switches,task-clock,raw_syscalls:sys_enter -o "$W/client" -- \
            /usr/bin/time -f "%w %c" -o "$W/vol" $(select_only_cmd $tool) -c "$CLIENTS" -j 2 -T "$DURATION" >"$W/out" 2>"$W/err"
        touch "$W/rq.stop"; wait $sampler
        n=$(processed_of "$W/out"); tps=$(tps_of "$W/out")
        read -r vol invol <"$W/vol"
        all=$(awk -F, '$3=="context-switches"{print $1}' "$W/all")
        wake=$(awk -F, '$3=="sched:sched_wakeup"{print $1}' "$W/all")
        migr=$(awk -F, '$3=="cpu-migrations"{print $1}' "$W/all")
        sys=$(awk -F, '$3=="raw_syscalls:sys_enter"{print $1}' "$W/client")
        read -r sum cnt <"$W/rq"
        awk -v t=$tool -v r=$r -v tps="$tps" -v n="$n" -v vol="$vol" -v inv="$invol" -v all="$all" -v wake="$wake" -v migr="$migr" -v sum="$sum" -v cnt="$cnt" -v sys="$sys" \
            'BEGIN{printf "%-8s %5d %10.1f %9.3f %9.3f %9.3f %9.3f %9.3f %9.4f %7.1f\n", t, r, tps, vol/n, inv/n, sys/n, all/n, wake/n, migr/n, sum/cnt}'
    done
done
echo "(per transaction: cl vol/invol = the client's voluntary/involuntary context switches; cl sys = the client's system calls; all cs, wakeups, migr = the whole machine's; runq = mean runnable tasks)"
rm -rf "$W"
