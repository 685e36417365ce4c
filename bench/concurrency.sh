#!/usr/bin/env bash
# How the server's throughput depends on how many requests a client keeps at it, beside
# pgbench at the top client count. Select-only prepared, -j 2, on one throwaway cluster;
# ROUNDS interleaved rounds (the order turns from round to round) of -T $DURATION each:
#
#   pgsurge at each count of CLIENTS      fewer connections, fewer requests in flight
#   pgsurge at the top count, holding     each transaction first sleeps HOLD_US µs in
#     each request HOLD_US µs             the client (\sleep): as many connections, fewer
#                                         requests at the server at any moment
#   pgbench at the top count
#
# Prints each variant's median TPS and its paired ratio (median of the rounds' ratios)
# to pgbench at the top count.
#
# Usage: bench/concurrency.sh   (env: PGSURGE, PGBENCH, CLIENTS="130 160 190 220 250",
#                                HOLD_US="1000 2000", DURATION=6, ROUNDS=6, SCALE=10)
# Build first: cargo build --release -p pgsurge
source "$(dirname "$0")/lib.sh"
CLIENTS=${CLIENTS:-130 160 190 220 250}
HOLD_US=${HOLD_US:-1000 2000}
DURATION=${DURATION:-6}
ROUNDS=${ROUNDS:-6}
SCALE=${SCALE:-10}
[ -x "$PGSURGE" ] || { echo "missing $PGSURGE (build first: cargo build --release -p pgsurge)" >&2; exit 1; }
TOP=$(printf '%s\n' $CLIENTS | sort -n | tail -1)
PG_MAX_CONNECTIONS=$((TOP + 20))
start_cluster
W=$(mktemp -d)
trap 'stop_cluster; rm -rf "$W"' EXIT
"$PGBENCH" -i -s "$SCALE" -q >/dev/null 2>&1

variants=()
for c in $CLIENTS; do variants+=("pgsurge-c$c"); done
for h in $HOLD_US; do
    printf '\\set aid random(1, 100000 * :scale)\n\\sleep %d us\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n' \
        "$h" >"$W/hold$h.sql"
    variants+=("pgsurge-c$TOP-hold${h}us")
done
variants+=("pgbench-c$TOP")

# run VARIANT: prints its TPS
run() {
    local v=$1 cmd
    case $v in
        pgbench-c*) cmd=("$PGBENCH" -n -S -M prepared -c "${v#pgbench-c}") ;;
        pgsurge-c*-hold*) local h=${v##*-hold}; h=${h%us}
            cmd=("$PGSURGE" bench -n -f "$W/hold$h.sql" -M prepared -c "$TOP") ;;
        pgsurge-c*) cmd=("$PGSURGE" bench -n -S -M prepared -c "${v#pgsurge-c}") ;;
    esac
    "${cmd[@]}" -j 2 -T "$DURATION" >"$W/out" 2>"$W/err" || { cat "$W/err" >&2; exit 1; }
    tps_of "$W/out"
}

n=${#variants[@]}
declare -A TPS=()
for ((r = 0; r < ROUNDS; r++)); do
    for ((k = 0; k < n; k++)); do
        v=${variants[$(((k + r) % n))]}
        tps=$(run "$v")
        [ -n "$tps" ] || { echo "$v printed no TPS line:" >&2; cat "$W/out" "$W/err" >&2; exit 1; }
        TPS[$v]+="$tps "
    done
    echo "round $((r + 1)) of $ROUNDS done" >&2
done

ref=pgbench-c$TOP
echo "select-only prepared, -j 2, $ROUNDS rounds x ${DURATION} s: median TPS, paired ratio to $ref"
for v in "${variants[@]}"; do
    med=$(printf '%s\n' ${TPS[$v]} | median)
    paired=$(paste <(printf '%s\n' ${TPS[$v]}) <(printf '%s\n' ${TPS[$ref]}) |
        awk '{print $1 / $2}' | median)
    printf '%-28s %10.0f %8.3f\n' "$v" "$med" "$paired"
done
