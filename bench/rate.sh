#!/usr/bin/env bash
# Rate-limit accuracy: -R $RATE for $DURATION s on an unsaturated server, pgsurge and
# pgbench side by side, plus the client CPU cost of --percentiles.
#
# Within a round every tool uses the same --random-seed (round r: SEED+r-1), so they
# draw the same Poisson schedule (pgbench's throttle stream): differences in the number
# of transactions are then the tools', not the schedule's, whose own noise is about
# ±0.45 % of 50,000 slots. The tools run in interleaved rounds; the table shows medians.
#
# Columns: processed transactions; achieved rate (processed / duration) against the
# target; "sched" = the slots the seed's schedule puts inside each thread's window
# (from its start to the -T end, computed from the tool's initial connection time),
# i.e. what a tool without any end-of-run loss would process; "lost" = sched − processed
# (slots due before the end that were not run: the tool's own shortfall); avg schedule lag;
# initial connection time; client CPU (user+sys).
#
# Usage: bench/rate.sh   (env: PGSURGE, PGBENCH, RATE=5000, DURATION=10, SCALE=10,
#                         ROUNDS=3, SEED=5432, CLIENTS=8, THREADS=2)
source "$(dirname "$0")/lib.sh"
RATE=${RATE:-5000}
DURATION=${DURATION:-10}
SCALE=${SCALE:-10}
ROUNDS=${ROUNDS:-3}
SEED=${SEED:-5432}
CLIENTS=${CLIENTS:-8}
THREADS=${THREADS:-2}
[ -x "$PGSURGE" ] || { echo "build first: cargo build --release -p pgsurge" >&2; exit 1; }
start_cluster
W=$(mktemp -d)
"$PGBENCH" -i -s "$SCALE" -q >/dev/null 2>&1
TOOLS=(pgbench pgsurge pgsurge+percentiles)
for ((r = 1; r <= ROUNDS; r++)); do
    seed=$((SEED + r - 1))
    args=(-n -S -M prepared -c "$CLIENTS" -j "$THREADS" -R "$RATE" -T "$DURATION" --random-seed="$seed")
    for tool in "${TOOLS[@]}"; do
        case $tool in
            pgbench) bin=("$PGBENCH");;
            pgsurge) bin=("$PGSURGE" bench);;
            *) bin=("$PGSURGE" bench --percentiles);;
        esac
        read -r u s _ < <(measure "$W/$tool.$r" "${bin[@]}" "${args[@]}")
        n=$(processed_of "$W/$tool.$r.out")
        lag=$(sed -n 's/^rate limit schedule lag: avg \([0-9.]*\) .*/\1/p' "$W/$tool.$r.out")
        conn=$(sed -n 's/^initial connection time = \([0-9.]*\) ms/\1/p' "$W/$tool.$r.out")
        sched=$(python3 "$(dirname "$0")/schedule_count.py" "$seed" "$RATE" "$CLIENTS" "$THREADS" "$DURATION" "$conn")
        cpu=$(awk -v u="$u" -v s="$s" 'BEGIN{print u+s}')
        echo "$tool $n $lag $conn $cpu $sched $((sched - n))" >>"$W/rows"
        printf 'round %d seed %d %-20s processed %6s  sched %6s  lost %3d  lag %s ms  conn %s ms  cpu %.2f s\n' \
            "$r" "$seed" "$tool" "$n" "$sched" "$((sched - n))" "$lag" "$conn" "$cpu"
    done
done
echo
printf '%-20s %9s %9s %5s %9s %10s %9s %9s %7s\n' tool processed sched lost achieved vs-target "lag ms" "conn ms" "cpu s"
for tool in "${TOOLS[@]}"; do
    col() { awk -v t="$tool" -v c="$1" '$1 == t { print $c }' "$W/rows" | median; }
    n=$(col 2); lag=$(col 3); conn=$(col 4); cpu=$(col 5); sched=$(col 6); lost=$(col 7)
    awk -v t="$tool" -v n="$n" -v d="$DURATION" -v r="$RATE" -v lag="$lag" -v conn="$conn" \
        -v cpu="$cpu" -v sc="$sched" -v lost="$lost" 'BEGIN {
        a = n / d; printf "%-20s %9d %9s %5s %9.1f %+9.2f%% %9s %9s %7.2f\n", t, n, sc, lost, a, 100*(a-r)/r, lag, conn, cpu }'
done
rm -rf "$W"
