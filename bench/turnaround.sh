#!/usr/bin/env bash
# Where a transaction's round trip waits, for pgsurge, the floor client and pgbench side
# by side at -c CLIENTS -j 2 (select-only, -M MODE) on one throwaway cluster: for each
# tool, ROUNDS runs of -T DURATION; in each, TRACE seconds from the middle of the run
# are traced system-wide (the socket system calls of the client and of its backends,
# perf tracepoints) and bench/turnaround.py splits every cycle into reply queued in
# the client's socket, client turnaround, request queued for the backend and backend
# service, and counts the requests at the server every millisecond. Tracing slows every
# tool alike; compare the tools with each other, not with untraced TPS.
#   bench/turnaround.sh   (env: PGSURGE, PGBENCH, FLOOR, CLIENTS=250, MODE=prepared,
#                          DURATION=6, TRACE=1, ROUNDS=1, SCALE=10)
# Needs perf (linux-perf), ss (iproute2), root for the tracepoints.
source "$(dirname "$0")/lib.sh"
CLIENTS=${CLIENTS:-250}
MODE=${MODE:-prepared}
DURATION=${DURATION:-6}
TRACE=${TRACE:-1}
ROUNDS=${ROUNDS:-1}
SCALE=${SCALE:-10}
FLOOR=${FLOOR:-$(dirname "$PGSURGE")/pgsurge-floor}
command -v perf >/dev/null || { echo "perf needed (apt-get install linux-perf)" >&2; exit 1; }
command -v ss >/dev/null || { echo "ss needed (apt-get install iproute2)" >&2; exit 1; }
start_cluster
W=$(mktemp -d)
trap 'rm -rf "$W"; stop_cluster' EXIT
"$PGBENCH" -i -s "$SCALE" -q >/dev/null 2>&1
EVENTS=syscalls:sys_enter_read,syscalls:sys_exit_read,syscalls:sys_enter_recvfrom,syscalls:sys_exit_recvfrom,syscalls:sys_enter_write,syscalls:sys_enter_sendto
for r in $(seq 1 "$ROUNDS"); do
    for tool in floor pgbench pgsurge; do
        $(select_only_cmd $tool) -c "$CLIENTS" -j 2 -T "$DURATION" >"$W/out" 2>"$W/err" &
        pid=$!
        # Connected and past the first transactions: the middle of the run.
        sleep $(( DURATION / 2 ))
        ss -xpn >"$W/ss"
        perf record -q -a -m 64M -e "$EVENTS" -o "$W/perf.data" -- sleep "$TRACE" 2>"$W/perf.err"
        wait $pid
        echo "== $tool  round $r  -c $CLIENTS -M $MODE  tps $(tps_of "$W/out") (whole run, traced in part)"
        perf script -i "$W/perf.data" -F comm,pid,tid,time,event,trace 2>/dev/null |
            python3 "$(dirname "$0")/turnaround.py" "$W/ss" "$pid"
        grep -i "lost" "$W/perf.err" || true
    done
done
