#!/usr/bin/env bash
# Replaying a PostgreSQL log: `pgsurge replay` beside Debian's pgreplay (1.2) on the same
# log and the same throwaway cluster.
#
# A real pgbench (tpcb-like, -M simple, $CLIENTS clients, $DURATION s, a fixed seed) runs
# on a cluster logging the way both tools read (log_statement = all, connections and
# disconnections, prefix '%m|%u|%d|%c|'); the log of that run is then replayed, in
# interleaved rounds, by each tool onto a fresh copy of the database as it was before
# the run (logging off meanwhile):
#
# * as fast as it goes: pgsurge --max against pgreplay -s $FAST (pgreplay has no "as
#   fast as possible": a large speed factor is its fastest);
# * at the log's pace (speed 1): both should take as long as the log spans; a tool that
#   cannot keep up takes longer ("behind" = wall time − log span).
#
# Columns: statements the log holds, wall time, statements per second, behind (paced
# rows), client CPU (user+sys) and peak RSS, and whether the tables ended as pgbench left
# them (sums of balances, history rows). The last lines print pgsurge's rate over
# pgreplay's (goal: ≥ 3×). Medians over $ROUNDS rounds.
#
# Usage: bench/replay.sh   (env: PGSURGE, PGBENCH, PGREPLAY=/usr/bin/pgreplay, TOOLS (a subset of
#                           "pgsurge-max pgreplay-fast pgsurge-speed1 pgreplay-speed1"),
#                           DURATION=10, CLIENTS=4, SCALE=1, ROUNDS=3, FAST=1000, SEED=11)
source "$(dirname "$0")/lib.sh"
PGREPLAY=${PGREPLAY:-/usr/bin/pgreplay}
DURATION=${DURATION:-10}
CLIENTS=${CLIENTS:-4}
SCALE=${SCALE:-1}
ROUNDS=${ROUNDS:-3}
FAST=${FAST:-1000}
SEED=${SEED:-11}
[ -x "$PGSURGE" ] || { echo "build first: cargo build --release -p pgsurge" >&2; exit 1; }
[ -x "$PGREPLAY" ] || { echo "$PGREPLAY not found (apt-get install pgreplay)" >&2; exit 1; }
start_cluster
W=$(mktemp -d)
trap 'stop_cluster; rm -rf "$W"' EXIT
PSQL="$PGBIN/psql -X -q -At"

logging() { # on|off
    if [ "$1" = on ]; then
        $PSQL -c "ALTER SYSTEM SET log_statement = 'all'" -c "ALTER SYSTEM SET log_connections = on" \
            -c "ALTER SYSTEM SET log_disconnections = on" -c "ALTER SYSTEM SET log_min_error_statement = 'error'" \
            -c "ALTER SYSTEM SET log_line_prefix = '%m|%u|%d|%c|'" -c "ALTER SYSTEM SET lc_messages = 'C'"
    else
        $PSQL -c "ALTER SYSTEM RESET ALL"
    fi
    $PSQL -c "SELECT pg_reload_conf()" >/dev/null
    sleep 0.5
}

state() {
    $PSQL -d bench -c "SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(tbalance) FROM pgbench_tellers), \
        (SELECT sum(bbalance) FROM pgbench_branches), (SELECT count(*) FROM pgbench_history), (SELECT sum(delta) FROM pgbench_history)"
}

fresh_copy() {
    $PSQL -c "DROP DATABASE IF EXISTS bench" -c "CREATE DATABASE bench TEMPLATE bench_before"
}

$PSQL -c "CREATE DATABASE bench_before"
"$PGBENCH" -i -s "$SCALE" -q bench_before >/dev/null 2>&1
fresh_copy
logging on
start=$(stat -c %s "$PGDIR/log")
"$PGBENCH" -n -M simple -c "$CLIENTS" -j 1 -T "$DURATION" --random-seed="$SEED" bench >"$W/pgbench.out" 2>&1
# pgbench's own connection and its clients: wait until every disconnection is logged.
for _ in $(seq 100); do
    ended=$(tail -c +"$((start + 1))" "$PGDIR/log" | grep -c 'disconnection: .*database=bench ' || true)
    [ "$ended" -ge $((CLIENTS + 1)) ] && break
    sleep 0.1
done
tail -c +"$((start + 1))" "$PGDIR/log" | grep -v '|postgres|postgres|' >"$W/bench.log"
logging off
expected=$(state)
statements=$(grep -c 'LOG:  statement: ' "$W/bench.log")
span=$(awk -F'|' 'NR == 1 { first = $1 } { last = $1 } END {
    cmd = "date -d \"" first "\" +%s.%N"; cmd | getline a; close(cmd)
    cmd = "date -d \"" last "\" +%s.%N"; cmd | getline b; close(cmd); printf "%.3f", b - a }' "$W/bench.log")
echo "log: $statements statements over $span s ($(stat -c %s "$W/bench.log") bytes), $CLIENTS clients"

read -r -a TOOLS <<<"${TOOLS:-pgsurge-max pgreplay-fast pgsurge-speed1 pgreplay-speed1}"
for ((r = 1; r <= ROUNDS; r++)); do
    for tool in "${TOOLS[@]}"; do
        case $tool in
            pgsurge-max) cmd=("$PGSURGE" replay --max "$W/bench.log") ;;
            pgsurge-speed1) cmd=("$PGSURGE" replay "$W/bench.log") ;;
            pgreplay-fast) cmd=("$PGREPLAY" -h "$PGHOST" -p "$PGPORT" -s "$FAST" "$W/bench.log") ;;
            pgreplay-speed1) cmd=("$PGREPLAY" -h "$PGHOST" -p "$PGPORT" "$W/bench.log") ;;
        esac
        fresh_copy
        t0=$(date +%s.%N)
        # A tool that fails (or is stopped) is a row of zeros and "NO", not the end.
        read -r u s rss < <(measure "$W/$tool.$r" "${cmd[@]}" 2>/dev/null | grep -E '^[0-9.]+ [0-9.]+ [0-9]+$' || echo "0 0 0")
        t1=$(date +%s.%N)
        same=$([ "$(state)" = "$expected" ] && echo yes || echo NO)
        wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
        echo "$tool $wall $(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }') $rss $same" >>"$W/rows"
        printf 'round %d %-16s %8.3f s  %9.0f statements/s  cpu %5.2f s  rss %6d kB  tables as logged: %s\n' \
            "$r" "$tool" "$wall" "$(awk -v n="$statements" -v w="$wall" 'BEGIN { print n / w }')" \
            "$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')" "$rss" "$same"
    done
done
echo
printf '%-16s %10s %9s %13s %9s %7s %9s %s\n' tool statements "wall s" "statements/s" "behind s" "cpu s" "rss kB" "tables as logged"
for tool in "${TOOLS[@]}"; do
    col() { awk -v t="$tool" -v c="$1" '$1 == t { print $c }' "$W/rows" | median; }
    wall=$(col 2); cpu=$(col 3); rss=$(col 4)
    same=$(awk -v t="$tool" '$1 == t { print $5 }' "$W/rows" | sort -u | tr '\n' ' ')
    behind=-
    case $tool in *speed1) behind=$(awk -v w="$wall" -v s="$span" 'BEGIN { printf "%.3f", w - s }') ;; esac
    printf '%-16s %10d %9.3f %13.0f %9s %7.2f %9d %s\n' "$tool" "$statements" "$wall" \
        "$(awk -v n="$statements" -v w="$wall" 'BEGIN { print n / w }')" "$behind" "$cpu" "$rss" "$same"
    echo "$tool $wall" >>"$W/medians"
done
ratio() { awk -v a="$1" -v b="$2" '$1 == a { x = $2 } $1 == b { y = $2 } END { printf "%.2f", y / x }' "$W/medians"; }
echo
echo "as fast as each goes: pgsurge --max / pgreplay -s $FAST statements per second = $(ratio pgsurge-max pgreplay-fast)x (goal: >= 3)"
echo "at the log's pace: pgreplay's wall time / pgsurge's = $(ratio pgsurge-speed1 pgreplay-speed1) (1.00: both keep the schedule)"
