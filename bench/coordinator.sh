#!/usr/bin/env bash
# How many generators and connections one coordinator (`pgsurge dist wait`) and one
# PostgreSQL results store handle: GENERATORS separate `pgsurge bench --store=URL
# --group=NAME` processes of CLIENTS clients each (default 16 x 25 = 400
# connections), one common --start-at, select-only on a throwaway Unix-socket
# cluster, against the same total load from 1 generator x GENERATORS*CLIENTS clients.
# Interleaved rounds; the table shows medians over the rounds.
#
# The results store is a second database (pgsurge_store) in the benchmarked cluster:
# the server's commit count (pg_stat_database.xact_commit) is per database, so the
# generators' and the coordinator's store traffic does not enter the commits compared
# with the merged count; the store is written after the window only (the coordinator
# polls it twice a second), and a second cluster would share the same cores anyway.
#
# Per set-up and round it measures:
#   merged tps / transactions (the coordinator's report), the sum of the generators'
#   own counts (must equal the merged count), the server's commits over the run
#   (`dist wait --server`, read before the start and after the merge), start skew;
#   from the end of the window (latest generator end) to the last generator exiting
#   (its result stored) and to the coordinator printing the merged report (its
#   latency); the coordinator's CPU and peak RSS (GNU time, whole process: waiting,
#   merging, reading the server's commits); rows and bytes added to the store; all
#   generator processes' CPU (user+sys, summed) and the largest generator RSS.
#
# Usage: bench/coordinator.sh   (env: PGSURGE, GENERATORS=16, CLIENTS=25 per
#        generator, THREADS=1 per generator, DURATION=20, SCALE=10, ROUNDS=3,
#        START_IN=5 s from launch to --start-at, PG_MAX_CONNECTIONS=total+50)
GENERATORS=${GENERATORS:-16}
CLIENTS=${CLIENTS:-25}
THREADS=${THREADS:-1}
DURATION=${DURATION:-20}
SCALE=${SCALE:-10}
ROUNDS=${ROUNDS:-3}
START_IN=${START_IN:-5}
TOTAL=$((GENERATORS * CLIENTS))
export PG_MAX_CONNECTIONS=${PG_MAX_CONNECTIONS:-$((TOTAL + 50))}
source "$(dirname "$0")/lib.sh" # after PG_MAX_CONNECTIONS: its default is 300
[ -x "$PGSURGE" ] || { echo "build first: cargo build --release -p pgsurge" >&2; exit 1; }
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((TOTAL + 64)) ]; then
    ulimit -n $((TOTAL + 64)) 2>/dev/null || { echo "open files limit too low for $TOTAL clients" >&2; exit 1; }
fi

start_cluster
W=$(mktemp -d)
trap 'stop_cluster; rm -rf "$W"' EXIT
psql_() { "$PGBIN/psql" -X -qAt "$@"; }
"$PGSURGE" bench -i -s "$SCALE" -q >/dev/null 2>&1
psql_ -c "CREATE DATABASE pgsurge_store"
STORE="postgresql://postgres@/pgsurge_store?host=$PGHOST&port=$PGPORT"
SERVER="host=$PGHOST port=$PGPORT user=postgres dbname=$PGDATABASE"
store_rows() {
    psql_ -d pgsurge_store -c "SELECT coalesce(sum((xpath('/row/c/text()', query_to_xml(
        format('SELECT count(*) AS c FROM %I.%I', schemaname, tablename), false, true, '')))[1]::text::bigint), 0)
        FROM pg_tables WHERE schemaname = 'public'"
}
store_bytes() { psql_ -c "SELECT pg_database_size('pgsurge_store')"; }
now() { date +%s.%N; }

# one_run N C ROUND: N generators x C clients; appends a row to $W/rows.
one_run() {
    local n=$1 c=$2 round=$3 i
    local run="$W/run-$n-$round" group="coord-$n-$round-$$"
    mkdir -p "$run"
    local rows0 bytes0 t
    rows0=$(store_rows)
    bytes0=$(store_bytes)
    # The coordinator first (it reads the server's commits before the start); each
    # line of its report gets the wall-clock time it was printed.
    {
        # (set -e holds in here too: the exit status is caught, not left to kill it.)
        if /usr/bin/time -f "%e %U %S %M" -o "$run/coord.time" "$PGSURGE" dist wait \
            --store "$STORE" --group "$group" -n "$n" --timeout $((START_IN + DURATION + 60)) \
            --server "$SERVER" --json "$run/merged.json" 2>"$run/coord.err"; then
            echo 0 >"$run/coord.rc"
        else
            echo $? >"$run/coord.rc"
        fi
    } | while IFS= read -r line; do printf '%s %s\n' "$(now)" "$line"; done >"$run/coord.out" &
    local coord=$!
    t=$(($(date +%s) + START_IN))
    local pids=()
    for ((i = 0; i < n; i++)); do
        {
            if /usr/bin/time -f "%U %S %M" -o "$run/gen$i.time" "$PGSURGE" bench \
                --store="$STORE" --group="$group" --generator-name="gen-$i" \
                --generator-index="$i" --generator-count="$n" --start-at="$t" \
                -c "$c" -j "$THREADS" -n -S -T "$DURATION" >"$run/gen$i.out" 2>"$run/gen$i.err"; then
                echo 0 >"$run/gen$i.rc"
            else
                echo $? >"$run/gen$i.rc"
            fi
            now >"$run/gen$i.exit"
        } &
        pids+=($!)
    done
    wait "${pids[@]}" "$coord" || true
    for ((i = 0; i < n; i++)); do
        if [ "$(cat "$run/gen$i.rc")" != 0 ]; then
            echo "generator $i of $n failed:" >&2
            tail -5 "$run/gen$i.err" >&2
            cat "$run/coord.err" >&2
            exit 1
        fi
    done
    local rc
    rc=$(cat "$run/coord.rc")
    if [ "$rc" != 0 ] && [ "$rc" != 3 ]; then # 3: server commits off by > 1 %: reported below
        echo "dist wait failed (exit $rc):" >&2
        cat "$run/coord.err" >&2
        exit 1
    fi
    local rep="$run/report"
    cut -d' ' -f2- "$run/coord.out" >"$rep"
    local tps merged gensum skew server end printed lastexit
    tps=$(tps_of "$rep")
    merged=$(processed_of "$rep")
    gensum=$(sed -n 's/^generator .*: clients [0-9]*, \([0-9]*\) transactions,.*/\1/p' "$rep" |
        awk '{ s += $1 } END { print s }')
    skew=$(sed -n 's/^start skew: \([0-9.]*\) ms/\1/p' "$rep")
    server=$(sed -n 's/^server commits over the run: \([0-9]*\);.*/\1/p' "$run/coord.err")
    end=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["end_time_unix_us"] / 1e6)' \
        "$run/merged.json")
    printed=$(awk 'NR == 1 { print $1 }' "$run/coord.out")
    lastexit=$(cat "$run"/gen*.exit | sort -g | tail -1)
    local cw cu cs cm
    read -r cw cu cs cm <"$run/coord.time"
    local gcpu grss
    gcpu=$(cat "$run"/gen*.time | awk '{ s += $1 + $2 } END { print s }')
    grss=$(cat "$run"/gen*.time | awk '$3 > m { m = $3 } END { print m / 1024 }')
    local rows bytes
    rows=$(($(store_rows) - rows0))
    bytes=$(($(store_bytes) - bytes0))
    local diff lat_stored lat_printed
    diff=$(awk -v s="$server" -v m="$merged" 'BEGIN { printf "%.2f", (s - m) * 100 / m }')
    lat_stored=$(awk -v a="$lastexit" -v b="$end" 'BEGIN { printf "%.3f", a - b }')
    lat_printed=$(awk -v a="$printed" -v b="$end" 'BEGIN { printf "%.3f", a - b }')
    [ "$gensum" = "$merged" ] || echo "MISMATCH: merged $merged, generators' sum $gensum" >&2
    # columns: n tps merged gensum server diff% skew lat_stored lat_printed
    #          coord_wall coord_cpu coord_rss_mb rows kb gen_cpu gen_rss_mb
    echo "$n $tps $merged $gensum $server $diff $skew $lat_stored $lat_printed $cw" \
        "$(awk -v u="$cu" -v s="$cs" 'BEGIN { print u + s }')" \
        "$(awk -v m="$cm" 'BEGIN { print m / 1024 }')" "$rows" $((bytes / 1024)) "$gcpu" "$grss" \
        >>"$W/rows"
    printf 'round %d  %2d x %3d clients  tps %10.1f  merged %9d  generators %9d  server %9d (%+.2f %%)  skew %7.3f ms  stored +%.2f s  printed +%.2f s\n' \
        "$round" "$n" "$c" "$tps" "$merged" "$gensum" "$server" "$diff" "$skew" "$lat_stored" "$lat_printed"
}

echo "target and store: one PostgreSQL $("$PGBIN/postgres" --version | awk '{ print $3 }') cluster" \
    "(Unix socket, max_connections=$PG_MAX_CONNECTIONS), store = database pgsurge_store;" \
    "select-only, scale $SCALE, -T $DURATION, -j $THREADS per generator, $(nproc) CPUs"
for ((r = 1; r <= ROUNDS; r++)); do
    one_run "$GENERATORS" "$CLIENTS" "$r"
    one_run 1 "$TOTAL" "$r"
done
echo
med() { awk -v n="$1" -v c="$2" '$1 == n { print $c }' "$W/rows" | median; }
row() { # label column format
    printf "%-44s $3 $3\n" "$1" "$(med "$GENERATORS" "$2")" "$(med 1 "$2")"
}
printf '%-44s %14s %14s\n' "median of $ROUNDS rounds" "$GENERATORS x $CLIENTS" "1 x $TOTAL"
row "merged tps" 2 '%14.1f'
row "merged transactions" 3 '%14d'
row "sum of the generators' transactions" 4 '%14d'
row "server commits over the run (xact_commit)" 5 '%14d'
row "server commits vs merged, %" 6 '%14.2f'
row "start skew, ms" 7 '%14.3f'
row "window end -> last generator stored, s" 8 '%14.3f'
row "window end -> merged report printed, s" 9 '%14.3f'
row "coordinator wall (whole dist wait), s" 10 '%14.2f'
row "coordinator CPU user+sys, s" 11 '%14.2f'
row "coordinator peak RSS, MB" 12 '%14.1f'
row "store rows added" 13 '%14d'
row "store size added, kB" 14 '%14d'
row "generators' CPU user+sys (all), s" 15 '%14.2f'
row "largest generator peak RSS, MB" 16 '%14.1f'
if awk '$3 != $4 { bad = 1 } END { exit !bad }' "$W/rows"; then
    echo "merged count and the generators' sum differ in some round" >&2
    exit 1
fi
