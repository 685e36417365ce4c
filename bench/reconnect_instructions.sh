#!/usr/bin/env bash
# What `bench --reconnect` costs the client per transaction, in instructions: pgsurge
# without --reconnect ("off") and with it ("on") run a fixed number of transactions
# (-c $CLIENTS -t $TXNS, the same --random-seed, no vacuum, prepared) under valgrind's
# callgrind on one throwaway cluster, $ROUNDS times each, alternating. Unlike CPU
# seconds (bench/reconnect_cost.sh), the count of user-space instructions hardly moves
# with how busy the machine is, so a difference of a few percent per transaction can be
# told from noise on a shared machine. (Kernel time is not counted.)
#
# Printed: each run's instructions, transactions and instructions per transaction; the
# medians of "off" and "on", their difference per transaction and its ratio; then, from
# the last round's two profiles (callgrind_annotate, self cost), the functions whose
# instructions differ most between on and off, per transaction.
#
# Usage: bench/reconnect_instructions.sh   (env: PGSURGE, WORKLOAD=tpcb-like (or
#                                           select-only), SCALE=1, CLIENTS=4, TXNS=2000,
#                                           ROUNDS=3, SEED=5, TOP=15)
# Needs PostgreSQL server binaries (initdb) and valgrind. Build first:
#   cargo build --release -p pgsurge
source "$(dirname "$0")/lib.sh"
WORKLOAD=${WORKLOAD:-tpcb-like}
SCALE=${SCALE:-1}
CLIENTS=${CLIENTS:-4}
TXNS=${TXNS:-2000}
ROUNDS=${ROUNDS:-3}
SEED=${SEED:-5}
TOP=${TOP:-15}
case $WORKLOAD in
    tpcb-like) SCRIPT=() ;;
    select-only) SCRIPT=(-S) ;;
    *) echo "WORKLOAD must be tpcb-like or select-only, not \"$WORKLOAD\"" >&2; exit 1 ;;
esac
[ -x "$PGSURGE" ] || { echo "build first: cargo build --release -p pgsurge ($PGSURGE)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind needed: apt-get install valgrind" >&2; exit 1; }
start_cluster
W=$(mktemp -d)
trap 'rm -rf "$W"; stop_cluster' EXIT
"$PGSURGE" bench -i -s "$SCALE" -q >/dev/null 2>&1
echo "cluster: $PGDIR  scale $SCALE  pgsurge: $PGSURGE"
echo "$WORKLOAD prepared, -c $CLIENTS -j 1 -t $TXNS --random-seed=$SEED, $ROUNDS rounds under callgrind"

# count MODE ROUND: runs the client under callgrind; prints "instructions transactions".
count() {
    local mode=$1 round=$2 flags=()
    [ "$mode" = on ] && flags=(--reconnect)
    valgrind --tool=callgrind --callgrind-out-file="$W/$mode.$round.cg" \
        "$PGSURGE" bench -n "${SCRIPT[@]}" "${flags[@]}" -M prepared -c "$CLIENTS" -j 1 \
        -t "$TXNS" --random-seed="$SEED" >"$W/$mode.$round.out" 2>"$W/$mode.$round.err" ||
        { echo "the $mode run failed:" >&2; cat "$W/$mode.$round.err" >&2; exit 1; }
    echo "$(awk '/^(summary|totals):/ {print $2; exit}' "$W/$mode.$round.cg") $(processed_of "$W/$mode.$round.out")"
}

OFF=""; ON=""
for r in $(seq 1 "$ROUNDS"); do
    order=(off on)
    [ $((r % 2)) = 0 ] && order=(on off)
    for mode in "${order[@]}"; do
        read -r ir n < <(count "$mode" "$r")
        per=$(awk -v i="$ir" -v n="$n" 'BEGIN {printf "%.0f", i / n}')
        printf 'round %d %-3s %14d instructions %7d transactions %8d per transaction\n' \
            "$r" "$mode" "$ir" "$n" "$per"
        if [ "$mode" = off ]; then OFF="$OFF $per"; else ON="$ON $per"; fi
    done
done
med() { tr ' ' '\n' <<<"$1" | grep . | median; }
off=$(med "$OFF"); on=$(med "$ON")
echo "median instructions per transaction: off $off  on $on  on-off $(awk -v a="$on" -v b="$off" 'BEGIN {printf "%+.0f (%+.2f %%)", a - b, (a - b) * 100 / b}')"

# self_costs FILE: "function<TAB>instructions" per line, from callgrind_annotate's self
# costs, summed per function over the source files its code was inlined from.
self_costs() {
    callgrind_annotate --inclusive=no --auto=no --threshold=100 "$1" 2>/dev/null |
        awk '/^ *[0-9,]+ .*[^ ]:[^ ]/ {
                 n = $1; gsub(",", "", n)
                 sub(/^ *[0-9,]+ +(\([^)]*\) +)?/, ""); sub(/ \[[^]]*\]$/, ""); sub(/^[^:]*:/, "")
                 sum[$0] += n
             }
             END { for (f in sum) print f "\t" sum[f] }' |
        sort -t$'\t' -k1,1
}
n=$((CLIENTS * TXNS))
echo
echo "functions whose self instructions differ most, on - off per transaction (round $ROUNDS):"
join -t$'\t' -a1 -a2 -e0 -o 0,1.2,2.2 <(self_costs "$W/off.$ROUNDS.cg") <(self_costs "$W/on.$ROUNDS.cg") |
    awk -F'\t' -v n="$n" '{ d = ($3 - $2) / n; printf "%+9.1f\t%9.1f\t%9.1f\t%s\n", d, $2 / n, $3 / n, $1 }' |
    sort -t$'\t' -k1,1gr | awk -F'\t' -v top="$TOP" '
        { rows[NR] = $0 }
        END {
            print "   on-off\t      off\t       on\tfunction"
            for (i = 1; i <= NR && i <= top; i++) print rows[i]
            print "..."
            for (i = NR - 2; i <= NR; i++) if (i > top) print rows[i]
        }'
