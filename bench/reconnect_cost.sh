#!/usr/bin/env bash
# What `bench --reconnect` costs when it is off, and when it is on: pgbench, pgsurge
# without --reconnect ("off") and pgsurge with it ("on") on one throwaway cluster over
# the Unix socket. For each workload, ROUNDS interleaved rounds of -T $DURATION per tool
# (the order turning from round to round) give TPS and client CPU seconds per
# transaction (user+sys of the client process, GNU time); printed are the medians, and
# the paired ratios (median of each round's ratio): off/pgbench and on/off, TPS and
# CPU per transaction. Without --reconnect the engine takes none of the reconnecting
# client's paths (no commit timeline, no failure classes), so off/pgbench is the same
# figure bench/compare.sh gives; on/off is what the reconnecting client's bookkeeping
# (its commits counted per 10 ms) costs.
#
# Workloads: select-only prepared (the cheapest transaction: the client's share of the
# work is the largest) and tpcb-like prepared; -c $CLIENTS -j 2.
#
# Usage: bench/reconnect_cost.sh   (env: PGSURGE, PGBENCH, DURATION=10, ROUNDS=5,
#                                   SCALE=10, CLIENTS=8,
#                                   WORKLOADS="select-prepared tpcb-prepared")
# Needs PostgreSQL server binaries (initdb) and GNU time (/usr/bin/time). Build first:
#   cargo build --release -p pgsurge
source "$(dirname "$0")/lib.sh"
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-5}
SCALE=${SCALE:-10}
CLIENTS=${CLIENTS:-8}
WORKLOADS=${WORKLOADS:-select-prepared tpcb-prepared}
[ -x "$PGSURGE" ] || { echo "build first: cargo build --release -p pgsurge ($PGSURGE)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "GNU time needed: apt-get install time" >&2; exit 1; }
start_cluster
W=$(mktemp -d)
trap 'rm -rf "$W"; stop_cluster' EXIT
"$PGBENCH" -i -s "$SCALE" -q >/dev/null 2>&1
echo "cluster: $PGDIR  scale $SCALE  pgsurge: $PGSURGE  pgbench: $($PGBENCH --version)"
echo "rounds $ROUNDS x ${DURATION}s, -c $CLIENTS -j 2, interleaved; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# tool_cmd TOOL WORKLOAD: the command line of TOOL for WORKLOAD (without -c/-j/-T).
tool_cmd() {
    local script=()
    case $2 in
        select-prepared) script=(-S) ;;
        tpcb-prepared) ;;
        *) echo "unknown workload $2" >&2; exit 1 ;;
    esac
    case $1 in
        pgbench) echo "$PGBENCH -n ${script[*]} -M prepared" ;;
        off) echo "$PGSURGE bench -n ${script[*]} -M prepared" ;;
        on) echo "$PGSURGE bench --reconnect -n ${script[*]} -M prepared" ;;
    esac
}

med() { tr ' ' '\n' <<<"$1" | grep . | median; }
spread() { tr ' ' '\n' <<<"$1" | grep . | sort -g | sed -n '1p;$p' | paste -sd-; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", a/b}'; }
SUMMARY=()
for workload in $WORKLOADS; do
    declare -A TPS=() CPU=()
    OFF_TPS=""; OFF_CPU=""; ON_TPS=""; ON_CPU=""
    for r in $(seq 1 "$ROUNDS"); do
        order=(pgbench off on)
        k=$(( r % 3 ))
        order=("${order[@]:$k}" "${order[@]:0:$k}")
        for tool in "${order[@]}"; do
            # shellcheck disable=SC2046
            read -r u s _ < <(measure "$W/$tool.$r" $(tool_cmd $tool "$workload") -c "$CLIENTS" -j 2 -T "$DURATION")
            tps=$(tps_of "$W/$tool.$r.out"); n=$(processed_of "$W/$tool.$r.out")
            if [ -z "$n" ] || [ "$n" = 0 ]; then
                echo "$tool ran no transaction:"; cat "$W/$tool.$r.out" "$W/$tool.$r.err"; exit 1
            fi
            cpu=$(awk -v u="$u" -v s="$s" -v n="$n" 'BEGIN {printf "%.3e", (u+s)/n}')
            printf "%-16s round %d %-8s tps %10.1f  txns %8d  cpu/txn %s s\n" "$workload" "$r" "$tool" "$tps" "$n" "$cpu"
            TPS[$tool]+="$tps "; CPU[$tool]+="$cpu "
            eval "round_tps_$tool=$tps round_cpu_$tool=$cpu"
        done
        OFF_TPS+="$(ratio "$round_tps_off" "$round_tps_pgbench") "
        OFF_CPU+="$(ratio "$round_cpu_off" "$round_cpu_pgbench") "
        ON_TPS+="$(ratio "$round_tps_on" "$round_tps_off") "
        ON_CPU+="$(ratio "$round_cpu_on" "$round_cpu_off") "
    done
    SUMMARY+=("$(printf "%-16s | tps pgbench %9.1f off %9.1f on %9.1f | cpu/txn pgbench %s off %s on %s | paired off/pgbench: tps %s (rounds %s) cpu %s (rounds %s) | paired on/off: tps %s (rounds %s) cpu %s (rounds %s)" \
        "$workload" "$(med "${TPS[pgbench]}")" "$(med "${TPS[off]}")" "$(med "${TPS[on]}")" \
        "$(med "${CPU[pgbench]}")" "$(med "${CPU[off]}")" "$(med "${CPU[on]}")" \
        "$(med "$OFF_TPS")" "$(spread "$OFF_TPS")" "$(med "$OFF_CPU")" "$(spread "$OFF_CPU")" \
        "$(med "$ON_TPS")" "$(spread "$ON_TPS")" "$(med "$ON_CPU")" "$(spread "$ON_CPU")")")
    unset TPS CPU
done
echo
echo "medians (off: pgsurge without --reconnect, on: with it):"
printf '%s\n' "${SUMMARY[@]}"
