#!/usr/bin/env bash
# Rate-limit accuracy: -R $RATE for $DURATION s on an unsaturated server, pgsurge and
# pgbench side by side: achieved rate (processed / duration) vs target, and the average
# schedule lag from the report. Also the client CPU cost of --percentiles.
# Usage: bench/rate.sh   (env: PGSURGE, PGBENCH, RATE=5000, DURATION=10, SCALE=10)
source "$(dirname "$0")/lib.sh"
RATE=${RATE:-5000}
DURATION=${DURATION:-10}
SCALE=${SCALE:-10}
[ -x "$PGSURGE" ] || { echo "build first: cargo build --release -p pgsurge" >&2; exit 1; }
start_cluster
W=$(mktemp -d)
"$PGBENCH" -i -s "$SCALE" -q >/dev/null 2>&1
for tool in pgbench pgsurge pgsurge+percentiles; do
    case $tool in
        pgbench) bin=("$PGBENCH");;
        pgsurge) bin=("$PGSURGE" bench);;
        *) bin=("$PGSURGE" bench --percentiles);;
    esac
    read -r u s _ < <(measure "$W/$tool" "${bin[@]}" -n -S -M prepared -c 8 -j 2 -R "$RATE" -T "$DURATION")
    n=$(processed_of "$W/$tool.out")
    lag=$(sed -n 's/^rate limit schedule lag: avg \([0-9.]*\) .*/\1/p' "$W/$tool.out")
    awk -v t="$tool" -v n="$n" -v d="$DURATION" -v r="$RATE" -v lag="$lag" -v u="$u" -v s="$s" 'BEGIN {
        a = n / d; printf "%-20s achieved %8.1f tps (%+.2f%% of %d)  avg lag %s ms  cpu %.2f s\n", t, a, 100*(a-r)/r, r, lag, u+s }'
done
rm -rf "$W"
