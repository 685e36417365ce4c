#!/usr/bin/env bash
# Before/after: two pgsurge binaries (A = OLD, B = NEW) on one throwaway cluster over the
# Unix socket, ROUNDS interleaved rounds of -T $DURATION per workload. Prints per workload
# the medians of TPS and client CPU per transaction (user+sys) and the ratios B/A — for
# checking that a change leaves the hot path as fast as it was.
#
# Usage: bench/ab.sh OLD_BINARY NEW_BINARY   (env: DURATION=6, ROUNDS=5, SCALE=10,
#        CASES="select-prepared:8 select-prepared:250 tpcb-prepared:8"; workloads
#        select-prepared, select-simple, tpcb-prepared, tpcb-simple)
source "$(dirname "$0")/lib.sh"
A=${1:?usage: bench/ab.sh OLD_BINARY NEW_BINARY}
B=${2:?usage: bench/ab.sh OLD_BINARY NEW_BINARY}
DURATION=${DURATION:-6}
ROUNDS=${ROUNDS:-5}
SCALE=${SCALE:-10}
CASES=${CASES:-select-prepared:8 select-prepared:250 tpcb-prepared:8}
[ -x /usr/bin/time ] || { echo "GNU time needed: apt-get install time" >&2; exit 1; }
start_cluster
W=$(mktemp -d)
trap 'rm -rf "$W"; stop_cluster' EXIT
"$PGBENCH" -i -s "$SCALE" -q >/dev/null 2>&1
echo "A: $A"
echo "B: $B"
echo "rounds $ROUNDS x ${DURATION}s interleaved; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for case in $CASES; do
    workload=${case%%:*} clients=${case##*:}
    case $workload in
        select-prepared) script=(-S -M prepared) ;;
        select-simple) script=(-S -M simple) ;;
        tpcb-prepared) script=(-M prepared) ;;
        tpcb-simple) script=(-M simple) ;;
        *) echo "unknown workload \"$workload\" in CASES (select-prepared, select-simple, tpcb-prepared, tpcb-simple)" >&2; exit 1 ;;
    esac
    for r in $(seq "$ROUNDS"); do
        for side in A B; do
            bin=$A; [ $side = B ] && bin=$B
            t=$(measure "$W/$side" "$bin" bench -n "${script[@]}" -c "$clients" -j 2 -T "$DURATION")
            n=$(processed_of "$W/$side.out")
            tps_of "$W/$side.out" >>"$W/$case.$side.tps"
            echo "$t" | awk -v n="$n" '{ printf "%.4e\n", ($1 + $2) / n }' >>"$W/$case.$side.cpu"
        done
    done
    ta=$(median <"$W/$case.A.tps") tb=$(median <"$W/$case.B.tps")
    ca=$(median <"$W/$case.A.cpu") cb=$(median <"$W/$case.B.cpu")
    awk -v w="$workload -c $clients" -v ta="$ta" -v tb="$tb" -v ca="$ca" -v cb="$cb" 'BEGIN {
        printf "%-22s tps A %9.1f B %9.1f  B/A %.3f | cpu/txn A %.3e B %.3e  B/A %.3f\n", w, ta, tb, tb / ta, ca, cb, cb / ca }'
done
