#!/usr/bin/env bash
# Replaying a PostgreSQL log: `pgsurge replay` beside Debian's pgreplay (1.2) on the same
# log and the same throwaway cluster.
#
# For each workload of $WORKLOADS, each query mode of $MODES and each session count of
# $CLIENTS a real pgbench (that many clients, -j 2, -M MODE, $DURATION s, a fixed seed)
# runs on a cluster
# logging the way both tools read (log_statement = all, connections and disconnections,
# prefix '%m|%u|%d|%c|'); the log of that run is then replayed, in interleaved rounds, by
# each tool onto a fresh copy of the database as it was before the run (logging off
# meanwhile):
#
# * as fast as it goes: pgsurge --max against pgreplay -s $FAST (pgreplay has no "as
#   fast as possible": a large speed factor is its fastest);
# * at the log's pace (speed 1): both should take as long as the log spans; a tool that
#   cannot keep up takes longer ("behind" = wall time − log span).
#
# The query mode is the protocol of the logged application, and so what the log holds:
# `simple` writes `statement:` lines; `prepared` (the extended protocol, each statement
# parsed once per session under a name, then bound and executed) writes `execute P0_1:`
# lines with their `DETAIL: parameters:`; `extended` (unnamed statements, parsed with
# each execution, as PQexecParams does) writes `execute <unnamed>:` lines with theirs.
#
# pgreplay is one process that walks the log in order and waits on all its connections
# with select(); a log of many sessions (production logs have tens to hundreds) shows
# what that costs it per statement, hence the session counts.
#
# The workloads: `select-only` (-S: reads, no row locks, so no statement can wait for
# another session: the tools' own rates) and `tpcb-like` (every transaction updates the
# one branch row of scale 1: sessions wait for each other's row locks). pgreplay sends
# the log's statements strictly in the log's order and waits for a session's answer
# before it goes past that session's next statement; when a statement that overtook an
# earlier one holds a row lock the earlier one's session needs, and the holder's COMMIT
# comes later in the log, neither can go on and pgreplay waits for ever (its README
# says so), polling its connections with zero-timeout select() calls (one CPU busy).
# A run that has not ended after $LIMIT seconds is stopped, its row says "stalled", and
# the sessions then waiting for a lock and idle in a transaction are counted.
#
# Columns: statements the log holds, wall time, statements per second, behind (paced
# rows), client CPU (user+sys) in all and per statement, the server's CPU per statement
# (the backends' user+sys, read from the postmaster's children times once the replay's
# backends have exited), the share of the machine's CPUs the two took together, peak
# RSS, and whether the tables ended as pgbench left them (sums of balances, history
# rows). The ratio lines print pgsurge's rate over pgreplay's (goal: ≥ 3×) and
# pgreplay's client CPU per statement over pgsurge's: where the server takes most of the
# CPU the rate ratio is bounded by the server, the CPU ratio measures the tools. Medians
# over $ROUNDS rounds. The load average is printed at the start and at the end; a summary
# of every workload and session count closes the output.
#
# SYSCALLS=1 runs each tool under `perf stat` (software events and syscall tracepoints:
# no hardware counters needed) and prints, per round and as medians, the tool's
# system calls per statement by kind (pselect6 is pgreplay's wait, epoll_wait pgsurge's)
# and its context switches per statement. The tracepoints add to each call's cost:
# take CPU and rate figures from a run without it.
#
# MESSAGES=1 asks the server, during each replay, to log every protocol step it runs
# with its duration (log_min_duration_statement = 0, logging of statements off), and
# prints, per round and as medians, how many Parse, Bind and Execute steps and simple
# queries each tool made the server run per logged statement: whether a tool parses
# again what the log shows was prepared once. The logging adds to the server's cost:
# take CPU and rate figures from a run without it.
#
# SERVER=sink replays the same logs (still written by pgbench against the real cluster)
# onto bench/sink, a server that answers every statement at once and does no work: the
# replaying client's own ceiling, as when the server runs on a host of its own and the
# client's cores are the client's. Nothing is restored between rounds and the tables are
# not checked ("tables as logged" is "-"); the server CPU columns are the sink's
# (user+sys of its process over the replay), so a reader sees whether it was the bound.
# SINK_MODEL=epoll|threads picks how the sink serves its connections.
#
# An A/B of two pgsurge builds on the same logs: PGSURGE_BASE=path/to/other/pgsurge and
# TOOLS="base-max pgsurge-max" (base-max is `$PGSURGE_BASE replay --max`).
#
# Usage: bench/replay.sh   (env: PGSURGE, PGBENCH, PGREPLAY=/usr/bin/pgreplay, TOOLS (a subset of
#                           "pgsurge-max pgreplay-fast pgsurge-speed1 pgreplay-speed1 base-max",
#                           and pgsurge-max-jN: --max with N driver threads),
#                           WORKLOADS="select-only tpcb-like", MODES=simple (a subset of
#                           "simple prepared extended"), CLIENTS="4 16 64", DURATION=10,
#                           SCALE=1, ROUNDS=3, FAST=1000, SEED=11, LIMIT=120, PGSURGE_BASE,
#                           SYSCALLS=0, MESSAGES=0, SERVER=real (or sink), SINK=path/to/pgsurge-sink,
#                           SINK_MODEL=epoll)
source "$(dirname "$0")/lib.sh"
PGREPLAY=${PGREPLAY:-/usr/bin/pgreplay}
DURATION=${DURATION:-10}
read -r -a SESSION_COUNTS <<<"${CLIENTS:-4 16 64}"
SCALE=${SCALE:-1}
ROUNDS=${ROUNDS:-3}
FAST=${FAST:-1000}
SEED=${SEED:-11}
LIMIT=${LIMIT:-120}
SYSCALLS=${SYSCALLS:-0}
case $SYSCALLS in 0|1) ;; *) echo "SYSCALLS must be 0 or 1, not \"$SYSCALLS\"" >&2; exit 1 ;; esac
MESSAGES=${MESSAGES:-0}
case $MESSAGES in 0|1) ;; *) echo "MESSAGES must be 0 or 1, not \"$MESSAGES\"" >&2; exit 1 ;; esac
read -r -a MODES <<<"${MODES:-simple}"
for mode in "${MODES[@]}"; do
    case $mode in simple|prepared|extended) ;; *) echo "MODES holds query modes (simple prepared extended), not \"$mode\"" >&2; exit 1 ;; esac
done
COUNTED=(pselect6 epoll_wait sendto recvfrom read newfstatat)
if [ "$SYSCALLS" = 1 ]; then
    command -v perf >/dev/null || { echo "SYSCALLS=1 needs perf (apt-get install linux-perf)" >&2; exit 1; }
    EVENTS=context-switches$(printf ',syscalls:sys_enter_%s' "${COUNTED[@]}")
fi
SERVER=${SERVER:-real}
case $SERVER in real|sink) ;; *) echo "SERVER must be real or sink, not \"$SERVER\"" >&2; exit 1 ;; esac
SINK=${SINK:-$(dirname "$PGSURGE")/pgsurge-sink}
SINK_MODEL=${SINK_MODEL:-epoll}
SERVER_WORD=server
[ "$SERVER" = real ] || SERVER_WORD=sink
if [ "$SERVER" = sink ]; then
    [ -x "$SINK" ] || { echo "SERVER=sink needs $SINK: cargo build --release -p pgsurge-sink" >&2; exit 1; }
    [ "$MESSAGES" = 0 ] || { echo "MESSAGES=1 counts a real server's steps: not with SERVER=sink" >&2; exit 1; }
fi
read -r -a WORKLOADS <<<"${WORKLOADS:-select-only tpcb-like}"
read -r -a TOOLS <<<"${TOOLS:-pgsurge-max pgreplay-fast pgsurge-speed1 pgreplay-speed1}"
[ -x "$PGSURGE" ] || { echo "build first: cargo build --release -p pgsurge" >&2; exit 1; }
[ -x "$PGREPLAY" ] || { echo "$PGREPLAY not found (apt-get install pgreplay)" >&2; exit 1; }
case " ${TOOLS[*]} " in
    *" base-max "*) [ -x "${PGSURGE_BASE:-}" ] || { echo "base-max needs PGSURGE_BASE (another pgsurge build)" >&2; exit 1; } ;;
esac
for n in "${SESSION_COUNTS[@]}"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "CLIENTS holds session counts (\"4 16 64\"), not \"$n\"" >&2; exit 1; }
done
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
start_cluster
W=$(mktemp -d)
SINK_PID=
stop_sink() { [ -z "$SINK_PID" ] || { kill "$SINK_PID" 2>/dev/null || true; wait "$SINK_PID" 2>/dev/null || true; }; }
trap 'stop_sink; stop_cluster; rm -rf "$W"' EXIT
# Where the replays go: the real cluster, or the sink on a socket of its own.
TARGET_HOST=$PGHOST
TARGET_PORT=$PGPORT
if [ "$SERVER" = sink ]; then
    TARGET_HOST=$W
    TARGET_PORT=$((PGPORT + 1))
    "$SINK" -k "$TARGET_HOST" -p "$TARGET_PORT" --model "$SINK_MODEL" 2>"$W/sink.err" &
    SINK_PID=$!
    for _ in $(seq 100); do [ -S "$TARGET_HOST/.s.PGSQL.$TARGET_PORT" ] && break; sleep 0.1; done
    [ -S "$TARGET_HOST/.s.PGSQL.$TARGET_PORT" ] || { echo "the sink did not start: $(cat "$W/sink.err")" >&2; exit 1; }
    echo "replaying onto the sink ($SINK --model $SINK_MODEL), not the cluster"
fi
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

# counting on|off: the server logs each protocol step it runs (parse, bind, execute, a
# simple query) with its duration, and no statements (MESSAGES=1).
counting() {
    if [ "$1" = on ]; then
        $PSQL -c "ALTER SYSTEM SET log_min_duration_statement = 0" -c "ALTER SYSTEM SET log_line_prefix = '%m|%u|%d|%c|'" \
            -c "ALTER SYSTEM SET lc_messages = 'C'"
    else
        $PSQL -c "ALTER SYSTEM RESET ALL"
    fi
    $PSQL -c "SELECT pg_reload_conf()" >/dev/null
    sleep 0.5
}

# steps FROM STATEMENTS: the protocol steps the server logged for the database bench from
# byte FROM of its log on, per logged statement, as "parse N bind N execute N simple N".
steps() {
    tail -c +"$(($1 + 1))" "$PGDIR/log" | awk -v n="$2" -F'|' '$3 == "bench" && /duration: [0-9.]+ ms  / {
        if (/ ms  parse /) p++; else if (/ ms  bind /) b++; else if (/ ms  execute /) e++; else if (/ ms  statement: /) q++ }
        END { printf "parse %.5f bind %.5f execute %.5f simple %.5f\n", p / n, b / n, e / n, q / n }'
}

state() {
    $PSQL -d bench -c "SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(tbalance) FROM pgbench_tellers), \
        (SELECT sum(bbalance) FROM pgbench_branches), (SELECT count(*) FROM pgbench_history), (SELECT sum(delta) FROM pgbench_history)"
}

fresh_copy() {
    $PSQL -c "DROP DATABASE IF EXISTS bench WITH (FORCE)" -c "CREATE DATABASE bench TEMPLATE bench_before"
}

# kill_tree PID: ends PID after its descendants (a tool under perf stat is a grandchild).
kill_tree() {
    local child
    for child in $(pgrep -P "$1"); do kill_tree "$child"; done
    kill "$1" 2>/dev/null || true
}

# per_statement FILE STATEMENTS: a perf stat -x, file's counts divided by STATEMENTS, as
# "name value ..." (context-switches as cs).
per_statement() {
    awk -F, -v n="$2" '$1 ~ /^[0-9]+$/ { name = $3; sub(/^syscalls:sys_enter_/, "", name)
        sub(/^context-switches$/, "cs", name); printf "%s %.3f ", name, $1 / n } END { print "" }' "$1"
}

# measured NAME CMD...: runs CMD under GNU time, stopped after $LIMIT s; prints
# "user sys maxrss_kb status" (status: done, failed or stalled).
measured() {
    local name=$1; shift
    /usr/bin/time -f "%U %S %M" -o "$W/$name.time" "$@" >"$W/$name.out" 2>"$W/$name.err" &
    local timer=$! tenths=0 status=done
    while kill -0 "$timer" 2>/dev/null; do
        if [ "$tenths" -ge $((LIMIT * 10)) ]; then
            status=stalled
            $PSQL -c "SELECT count(*) FILTER (WHERE wait_event_type = 'Lock'), \
                count(*) FILTER (WHERE state = 'idle in transaction') \
                FROM pg_stat_activity WHERE datname = 'bench'" | tr '|' ' ' >"$W/$name.stall"
            for child in $(pgrep -P "$timer"); do kill_tree "$child"; done
            break
        fi
        sleep 0.1
        tenths=$((tenths + 1))
    done
    wait "$timer" || { [ "$status" = stalled ] || status=failed; }
    local usage
    usage=$(grep -E '^[0-9.]+ [0-9.]+ [0-9]+$' "$W/$name.time" || echo "0 0 0")
    echo "$usage $status"
}

# server_ticks: CPU time (user+sys, clock ticks) of the server's processes that have
# exited: the postmaster's children times, where a backend's time lands when it exits.
TICKS=$(getconf CLK_TCK)
server_ticks() {
    if [ "$SERVER" = sink ]; then
        # The sink's own time (user+sys), its threads' included.
        awk '{ print $14 + $15 }' "/proc/$SINK_PID/stat"
    else
        awk '{ print $16 + $17 }' "/proc/$(head -1 "$PGDIR/data/postmaster.pid")/stat"
    fi
}

# backends_gone: waits (up to 10 s) until no backend of the database bench is left, so
# their CPU time is in server_ticks.
backends_gone() {
    for _ in $(seq 100); do
        [ "$($PSQL -c "SELECT count(*) FROM pg_stat_activity WHERE datname = 'bench'")" = 0 ] && return
        sleep 0.1
    done
}

$PSQL -c "CREATE DATABASE bench_before"
"$PGBENCH" -i -s "$SCALE" -q bench_before >/dev/null 2>&1
summary="$W/summary"
: >"$summary"

# replay_log WORKLOAD MODE SESSIONS: logs a pgbench run of that many clients in that
# query mode, replays it with each tool in $ROUNDS interleaved rounds, prints the rows,
# medians and ratios.
replay_log() {
    local workload=$1 mode=$2 clients=$3 script
    case $workload in
        select-only) script=(-S) ;;
        tpcb-like) script=() ;;
        *) echo "unknown workload $workload (select-only, tpcb-like)" >&2; exit 1 ;;
    esac
    fresh_copy
    logging on
    local start threads=2
    [ "$clients" -ge 2 ] || threads=1
    start=$(stat -c %s "$PGDIR/log")
    "$PGBENCH" -n -M "$mode" "${script[@]}" -c "$clients" -j "$threads" -T "$DURATION" --random-seed="$SEED" bench \
        >"$W/pgbench.out" 2>&1
    # pgbench's own connection and its clients: wait until every disconnection is logged.
    for _ in $(seq 100); do
        ended=$(tail -c +"$((start + 1))" "$PGDIR/log" | grep -c 'disconnection: .*database=bench ' || true)
        [ "$ended" -ge $((clients + 1)) ] && break
        sleep 0.1
    done
    local log="$W/$workload.$mode.$clients.log"
    tail -c +"$((start + 1))" "$PGDIR/log" | grep -v '|postgres|postgres|' >"$log"
    logging off
    local expected statements span
    expected=$(state)
    statements=$(grep -c -E 'LOG:  (statement|execute [^ ]+): ' "$log")
    span=$(awk -F'|' 'NR == 1 { first = $1 } { last = $1 } END {
        cmd = "date -d \"" first "\" +%s.%N"; cmd | getline a; close(cmd)
        cmd = "date -d \"" last "\" +%s.%N"; cmd | getline b; close(cmd); printf "%.3f", b - a }' "$log")
    echo
    local label="$workload -M $mode"
    echo "$label, $clients sessions: $statements statements over $span s ($(stat -c %s "$log") bytes)"
    local rows="$W/$workload.$mode.$clients.rows" name
    : >"$rows"
    for ((r = 1; r <= ROUNDS; r++)); do
        for tool in "${TOOLS[@]}"; do
            case $tool in
                pgsurge-max) cmd=("$PGSURGE" replay --max "$log") ;;
                pgsurge-max-j[1-9]*) cmd=("$PGSURGE" replay --max -j "${tool#pgsurge-max-j}" "$log") ;;
                base-max) cmd=("$PGSURGE_BASE" replay --max "$log") ;;
                pgsurge-speed1) cmd=("$PGSURGE" replay "$log") ;;
                pgreplay-fast) cmd=("$PGREPLAY" -h "$TARGET_HOST" -p "$TARGET_PORT" -s "$FAST" "$log") ;;
                pgreplay-speed1) cmd=("$PGREPLAY" -h "$TARGET_HOST" -p "$TARGET_PORT" "$log") ;;
                *) echo "unknown tool $tool" >&2; exit 1 ;;
            esac
            cmd=(env "PGHOST=$TARGET_HOST" "PGPORT=$TARGET_PORT" "${cmd[@]}")
            name="$workload.$mode.$clients.$tool.$r"
            if [ "$SYSCALLS" = 1 ]; then
                cmd=(perf stat -x, -o "$W/$name.perf" -e "$EVENTS" -- "${cmd[@]}")
            fi
            if [ "$SERVER" = real ]; then
                fresh_copy
                backends_gone
            fi
            [ "$MESSAGES" = 0 ] || { counting on; from=$(stat -c %s "$PGDIR/log"); }
            s0=$(server_ticks)
            t0=$(date +%s.%N)
            read -r u s rss status < <(measured "$name" "${cmd[@]}")
            t1=$(date +%s.%N)
            [ "$SERVER" = sink ] || backends_gone
            if [ "$MESSAGES" = 1 ]; then
                counting off
                echo "$tool $(steps "$from" "$statements")" >>"$rows.steps"
            fi
            srv=$(awk -v a="$s0" -v b="$(server_ticks)" -v t="$TICKS" 'BEGIN { printf "%.2f", (b - a) / t }')
            same=-
            [ "$SERVER" = sink ] || same=$([ "$(state)" = "$expected" ] && echo yes || echo NO)
            wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
            echo "$tool $wall $(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }') $rss $same $status $srv" >>"$rows"
            extra=
            if [ "$status" = stalled ]; then
                read -r waiting idle <"$W/$name.stall"
                extra=" STALLED: stopped after $LIMIT s, $waiting sessions waiting for a lock, $idle idle in a transaction"
            elif [ "$status" = failed ]; then
                extra=" FAILED: $(tail -1 "$W/$name.err")"
            fi
            printf 'round %d %-16s %8.3f s  %9.0f statements/s  cpu %5.2f s  '"$SERVER_WORD"' cpu %6.2f s  rss %6d kB  tables as logged: %s%s\n' \
                "$r" "$tool" "$wall" "$(awk -v n="$statements" -v w="$wall" 'BEGIN { print n / w }')" \
                "$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')" "$srv" "$rss" "$same" "$extra"
            if [ "$SYSCALLS" = 1 ] && [ "$status" = done ]; then
                echo "$tool $(per_statement "$W/$name.perf" "$statements")" >>"$rows.calls"
                echo "        per statement: $(per_statement "$W/$name.perf" "$statements")"
            fi
            if [ "$MESSAGES" = 1 ]; then
                echo "        server steps per statement: $(tail -1 "$rows.steps" | cut -d' ' -f2-)"
            fi
        done
    done
    echo
    printf '%-16s %10s %9s %13s %9s %7s %11s %11s %8s %9s %s\n' tool statements "wall s" "statements/s" "behind s" \
        "cpu s" "cpu us/stmt" "$SERVER_WORD us/stmt" "cpus busy" "rss kB" "tables as logged"
    local medians="$W/$workload.$mode.$clients.medians"
    : >"$medians"
    for tool in "${TOOLS[@]}"; do
        col() { awk -v t="$tool" -v c="$1" '$1 == t && $6 == "done" { print $c }' "$rows" | median; }
        stalled=$(awk -v t="$tool" '$1 == t && $6 != "done"' "$rows" | wc -l)
        same=$(awk -v t="$tool" '$1 == t { print $5 }' "$rows" | sort -u | tr '\n' ' ')
        if [ "$stalled" -eq "$ROUNDS" ]; then
            printf '%-16s %10d %9s %13s %9s %7s %11s %11s %8s %9s %s(no round ended: stalled or failed)\n' \
                "$tool" "$statements" - - - - - - - - "$same"
            echo "$workload -M$mode $clients $tool stalled" >>"$summary"
            continue
        fi
        wall=$(col 2); cpu=$(col 3); rss=$(col 4); srv=$(col 7)
        behind=-
        case $tool in *speed1) behind=$(awk -v w="$wall" -v s="$span" 'BEGIN { printf "%.3f", w - s }') ;; esac
        rate=$(awk -v n="$statements" -v w="$wall" 'BEGIN { printf "%.0f", n / w }')
        per=$(awk -v n="$statements" -v c="$cpu" 'BEGIN { printf "%.1f", c * 1e6 / n }')
        srv_per=$(awk -v n="$statements" -v c="$srv" 'BEGIN { printf "%.1f", c * 1e6 / n }')
        busy=$(awk -v c="$cpu" -v s="$srv" -v w="$wall" -v n="$(nproc)" 'BEGIN { printf "%.0f%%", 100 * (c + s) / (w * n) }')
        printf '%-16s %10d %9.3f %13s %9s %7.2f %11s %11s %8s %9d %s%s\n' "$tool" "$statements" "$wall" \
            "$rate" "$behind" "$cpu" "$per" "$srv_per" "$busy" "$rss" "$same" \
            "$([ "$stalled" -gt 0 ] && echo "($stalled of $ROUNDS rounds stalled or failed, not in the medians)")"
        echo "$tool $wall $cpu" >>"$medians"
        echo "$workload -M$mode $clients $tool $rate $per $srv_per $busy $behind" >>"$summary"
    done
    if [ "$SYSCALLS" = 1 ]; then
        echo
        for tool in "${TOOLS[@]}"; do
            line=
            for c in cs "${COUNTED[@]}"; do
                m=$(awk -v t="$tool" -v c="$c" '$1 == t { for (i = 2; i < NF; i += 2) if ($i == c) print $(i + 1) }' \
                    "$rows.calls" 2>/dev/null | median)
                [ -n "$m" ] && line="$line $c $m"
            done
            printf '%-16s per statement (medians):%s\n' "$tool" "$line"
        done
    fi
    if [ "$MESSAGES" = 1 ]; then
        echo
        for tool in "${TOOLS[@]}"; do
            line=
            for c in parse bind execute simple; do
                m=$(awk -v t="$tool" -v c="$c" '$1 == t { for (i = 2; i < NF; i += 2) if ($i == c) print $(i + 1) }' \
                    "$rows.steps" | median)
                line="$line $c $m"
            done
            printf '%-16s server steps per logged statement (medians):%s\n' "$tool" "$line"
        done
    fi
    ratio() { # A B [COLUMN]: B's value over A's (wall time: column 2, CPU: 3)
        awk -v a="$1" -v b="$2" -v c="${3:-2}" '$1 == a { x = $c } $1 == b { y = $c } END {
            if (x == "" || y == "" || x == 0) print "-"; else printf "%.2f", y / x }' "$medians"
    }
    echo
    echo "$label, $clients sessions, as fast as each goes: pgsurge --max / pgreplay -s $FAST statements per second = $(ratio pgsurge-max pgreplay-fast)x (goal: >= 3)"
    echo "$label, $clients sessions, at the log's pace: pgreplay's wall time / pgsurge's = $(ratio pgsurge-speed1 pgreplay-speed1) (1.00: both keep the schedule)"
    echo "$label, $clients sessions, client CPU per statement: pgreplay -s $FAST / pgsurge --max = $(ratio pgsurge-max pgreplay-fast 3)x, at the log's pace $(ratio pgsurge-speed1 pgreplay-speed1 3)x"
    case " ${TOOLS[*]} " in
        *" base-max "*) echo "$workload, $clients sessions, client CPU: base-max / pgsurge-max = $(ratio pgsurge-max base-max 3)x" ;;
    esac
}

for workload in "${WORKLOADS[@]}"; do
    for mode in "${MODES[@]}"; do
        for clients in "${SESSION_COUNTS[@]}"; do
            replay_log "$workload" "$mode" "$clients"
        done
    done
done
echo
echo "summary (medians): workload sessions tool statements/s client-us/stmt $SERVER_WORD-us/stmt cpus-busy behind-s"
column -t "$summary"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
