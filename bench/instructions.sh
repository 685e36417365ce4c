#!/usr/bin/env bash
# User-space instructions per transaction of the floor client, pgbench and pgsurge,
# counted by valgrind's callgrind: unlike CPU time, the count does not depend on how
# busy the machine is, so it shows what a change to the hot path saves even on a noisy
# machine. Each tool runs twice (-T $SHORT and -T $LONG) and the difference of the two
# counts divided by the difference of the two transaction counts is printed: the
# marginal cost of one transaction, without connecting, parsing and reporting.
# (Kernel time is not counted; bench/compare.sh measures the whole client CPU.)
#
# Usage: bench/instructions.sh   (env: PGSURGE, PGBENCH_BIN (the pgbench binary itself,
#                                 not Debian's wrapper script), FLOOR, CLIENTS=8,
#                                 SHORT=3, LONG=9, SCALE=10,
#                                 WORKLOADS="select-prepared select-simple tpcb-prepared")
# Needs valgrind. Build first: cargo build --release -p pgsurge -p pgsurge-floor
source "$(dirname "$0")/lib.sh"
CLIENTS=${CLIENTS:-8}
SHORT=${SHORT:-3}
LONG=${LONG:-9}
SCALE=${SCALE:-10}
WORKLOADS=${WORKLOADS:-select-prepared select-simple tpcb-prepared}
FLOOR=${FLOOR:-$(dirname "$PGSURGE")/pgsurge-floor}
PGBENCH_BIN=${PGBENCH_BIN:-$(find_pg_bin)/pgbench}
for bin in "$PGSURGE" "$FLOOR" "$PGBENCH_BIN"; do
    [ -x "$bin" ] || { echo "missing $bin (build first: cargo build --release -p pgsurge -p pgsurge-floor)" >&2; exit 1; }
done
command -v valgrind >/dev/null || { echo "valgrind needed: apt-get install valgrind" >&2; exit 1; }
start_cluster
W=$(mktemp -d)
"$PGBENCH_BIN" -i -s "$SCALE" -q >/dev/null 2>&1

# count TOOL WORKLOAD SECONDS: prints "transactions instructions"
count() {
    local tool=$1 workload=$2 secs=$3 mode script=() cmd=()
    case $workload in
        select-prepared) mode=prepared; script=(-S) ;;
        select-simple) mode=simple; script=(-S) ;;
        tpcb-prepared) mode=prepared ;;
        *) echo "unknown workload $workload" >&2; exit 1 ;;
    esac
    case $tool in
        pgbench) cmd=("$PGBENCH_BIN" -n "${script[@]}" -M "$mode") ;;
        pgsurge) cmd=("$PGSURGE" bench -n "${script[@]}" -M "$mode") ;;
        floor)
            cmd=("$FLOOR" -s "$SCALE")
            [ "$mode" = simple ] && cmd+=(--simple)
            [ ${#script[@]} = 0 ] && cmd+=(--tpcb) ;;
    esac
    valgrind --tool=callgrind --callgrind-out-file="$W/cg.out" \
        "${cmd[@]}" -c "$CLIENTS" -j 2 -T "$secs" >"$W/out" 2>"$W/err"
    echo "$(processed_of "$W/out") $(awk '/^(summary|totals):/ {print $2; exit}' "$W/cg.out")"
}

echo "marginal user instructions per transaction (callgrind), -c $CLIENTS -j 2, -T $SHORT vs -T $LONG"
for workload in $WORKLOADS; do
    declare -A IR=()
    for tool in floor pgbench pgsurge; do
        read -r n1 i1 < <(count "$tool" "$workload" "$SHORT")
        read -r n2 i2 < <(count "$tool" "$workload" "$LONG")
        IR[$tool]=$(awk -v a="$i1" -v b="$i2" -v n="$n1" -v m="$n2" 'BEGIN {printf "%.0f", (b - a) / (m - n)}')
    done
    printf "%-16s floor %6s  pgbench %6s  pgsurge %6s  | pgsurge/floor %s  pgsurge/pgbench %s\n" \
        "$workload" "${IR[floor]}" "${IR[pgbench]}" "${IR[pgsurge]}" \
        "$(awk -v a="${IR[pgsurge]}" -v b="${IR[floor]}" 'BEGIN {printf "%.2f", a / b}')" \
        "$(awk -v a="${IR[pgsurge]}" -v b="${IR[pgbench]}" 'BEGIN {printf "%.2f", a / b}')"
done
rm -rf "$W"
