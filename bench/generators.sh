#!/usr/bin/env bash
# One load generator against several: $CLIENTS clients in 1 `pgsurge bench` process
# versus split over $GENERATORS processes (`pgsurge dist local`, one common start,
# merged exactly), select-only on a throwaway Unix-socket cluster. Shows whether one
# client process limits the measured throughput (the case for distributed runs) or
# the server does (ratio near 1).
#
# The two set-ups run in interleaved rounds; the table shows median tps over the
# rounds and the ratio (split / single). tps is the merged one: all transactions
# over the common window, from the earliest client start to the latest end.
#
# Usage: bench/generators.sh   (env: PGSURGE, CLIENTS=32, GENERATORS=4, THREADS=1
#                               per generator, DURATION=10, SCALE=10, ROUNDS=3)
source "$(dirname "$0")/lib.sh"
CLIENTS=${CLIENTS:-32}
GENERATORS=${GENERATORS:-4}
THREADS=${THREADS:-1}
DURATION=${DURATION:-10}
SCALE=${SCALE:-10}
ROUNDS=${ROUNDS:-3}
[ -x "$PGSURGE" ] || { echo "build first: cargo build --release -p pgsurge" >&2; exit 1; }
start_cluster
W=$(mktemp -d)
"$PGSURGE" bench -i -s "$SCALE" -q >/dev/null 2>&1
for ((r = 1; r <= ROUNDS; r++)); do
    for n in 1 "$GENERATORS"; do
        run="$W/$n.$r"
        if ! "$PGSURGE" dist local -n "$n" -c "$CLIENTS" --start-in=2 --out-dir="$run" \
            -- -n -S -j "$THREADS" -T "$DURATION" >"$run.out" 2>"$run.err"; then
            cat "$run.err" >&2
            exit 1
        fi
        tps=$(tps_of "$run.out")
        skew=$(sed -n 's/^start skew: \([0-9.]*\) ms/\1/p' "$run.out")
        echo "$n $tps" >>"$W/rows"
        printf 'round %d  %d generator(s) x %3d clients  tps %12s  start skew %s ms\n' \
            "$r" "$n" "$((CLIENTS / n))" "$tps" "$skew"
    done
done
echo
single=$(awk '$1 == 1 { print $2 }' "$W/rows" | median)
split=$(awk -v n="$GENERATORS" '$1 == n { print $2 }' "$W/rows" | median)
printf '%-28s %12s\n' setup "median tps"
printf '%-28s %12.1f\n' "1 x $CLIENTS clients" "$single"
printf '%-28s %12.1f\n' "$GENERATORS x $((CLIENTS / GENERATORS)) clients" "$split"
awk -v a="$split" -v b="$single" -v n="$GENERATORS" 'BEGIN { printf "ratio %d generators / 1: %.3f\n", n, a / b }'
rm -rf "$W"
