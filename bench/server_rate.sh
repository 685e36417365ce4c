#!/usr/bin/env bash
# The server's commits per second while each client runs, read from pg_stat_database
# once a second: one definition of throughput for the floor client, pgsurge and pgbench,
# whatever window each tool's own TPS line covers. Shows connecting (a few hundred
# commits a second while backends start), the first seconds after it, and the steady
# state. select-only, -c CLIENTS -j 2 -T DURATION, ROUNDS rounds in turn. Each backend
# adds its counts to pg_stat_database at most once a second, so one sample may hold more
# or less than its second's commits: read a run of samples, not one.
#   bench/server_rate.sh   (env: PGSURGE, PGBENCH, FLOOR, CLIENTS=1000, MODE=prepared,
#                           DURATION=10, ROUNDS=2, SCALE=10; raise ulimit -n and
#                           PG_MAX_CONNECTIONS for 1000 clients)
source "$(dirname "$0")/lib.sh"
CLIENTS=${CLIENTS:-1000}
MODE=${MODE:-prepared}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-2}
SCALE=${SCALE:-10}
FLOOR=${FLOOR:-$(dirname "$PGSURGE")/pgsurge-floor}
start_cluster
W=$(mktemp -d)
trap 'rm -rf "$W"; stop_cluster' EXIT
"$PGBENCH" -i -s "$SCALE" -q >/dev/null 2>&1
commits() { psql -XAtqc "select xact_commit from pg_stat_database where datname = current_database()"; }
for r in $(seq 1 "$ROUNDS"); do
    for tool in floor pgsurge pgbench; do
        $(select_only_cmd $tool) -c "$CLIENTS" -j 2 -T "$DURATION" >"$W/out" 2>&1 &
        pid=$!
        prev=$(commits)
        rates=()
        while kill -0 $pid 2>/dev/null; do
            sleep 1
            cur=$(commits)
            rates+=($((cur - prev)))
            prev=$cur
        done
        wait $pid || { echo "$tool failed:"; cat "$W/out"; exit 1; }
        printf "%-8s round %d  own tps %9.0f  server commits/s: %s\n" "$tool" "$r" "$(tps_of "$W/out")" "${rates[*]}"
    done
done
