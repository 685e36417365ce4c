#!/usr/bin/env bash
# pgsurge vs pgbench vs the floor client (bench/floor) on one throwaway cluster over the
# Unix socket. For each workload and client count, ROUNDS interleaved rounds of
# -T $DURATION per tool give TPS and client CPU seconds per transaction (user+sys of the
# client process); the medians and the ratios pgsurge/floor and pgsurge/pgbench are
# printed, as the ratio of the medians and as the median of each round's ratio ("paired":
# the three tools of a round run one after the other, in an order that turns from round
# to round, so a round's ratio compares them under the same load on the machine). Then peak client RSS at -c 200 -j 2.
#
# Each workload also gets the CPU per transaction split into user and system time, and
# pgsurge's difference to the floor in each (median of the rounds' differences, in µs).
#
# Workloads: select-only prepared, select-only simple, tpcb-like prepared;
# client counts: -c 8 -j 2 and -c 250 -j 2 (CLIENTS="8 250").
#
# CONTROL=1 runs the floor client a second time in each round ("floor2") and prints the
# paired TPS ratio of the floor to itself: how far apart two runs of the same client
# land on this machine, the resolution of every other paired ratio of the run.
#
# STEADY=N (N >= 1) runs every tool with -P 1 and also prints each run's steady TPS: the
# mean of its one-second progress intervals after the first N seconds, without the last
# one. A run's own TPS line holds its start (connecting, hundreds of backends loading
# their caches) and its end (the wait for the last replies and the closing of every
# connection while the backends exit), which at hundreds of clients take a few tenths of
# a second each and vary from run to run; the steady TPS is the server's rate between them.
# Each tool's TPS line divided by its steady TPS (medians over the rounds) then tells how
# much of its line the two ends cost.
#
# Usage: bench/compare.sh   (env: PGSURGE, PGBENCH, FLOOR, DURATION=10, ROUNDS=5, SCALE=10,
#                            CLIENTS="8 250", WORKLOADS="select-prepared select-simple tpcb-prepared",
#                            CONTROL=0, STEADY=0, HUGE_PAGES=0)
# Needs PostgreSQL server binaries (initdb) and GNU time (/usr/bin/time). Build first:
#   cargo build --release -p pgsurge -p pgsurge-floor
source "$(dirname "$0")/lib.sh"
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-5}
SCALE=${SCALE:-10}
CLIENTS=${CLIENTS:-8 250}
WORKLOADS=${WORKLOADS:-select-prepared select-simple tpcb-prepared}
CONTROL=${CONTROL:-0}
case $CONTROL in 0|1) ;; *) echo "CONTROL must be 0 or 1, not \"$CONTROL\"" >&2; exit 1 ;; esac
STEADY=${STEADY:-0}
case $STEADY in
    0) ;;
    *[!0-9]*|'') echo "STEADY must be a whole number of seconds, not \"$STEADY\"" >&2; exit 1 ;;
    *) [ $((STEADY + 2)) -le "$DURATION" ] ||
        { echo "STEADY=$STEADY leaves no steady interval in DURATION=$DURATION (needs DURATION >= STEADY + 2)" >&2; exit 1; } ;;
esac
FLOOR=${FLOOR:-$(dirname "$PGSURGE")/pgsurge-floor}
for bin in "$PGSURGE" "$FLOOR"; do
    [ -x "$bin" ] || { echo "build first: cargo build --release -p pgsurge -p pgsurge-floor ($bin)" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "GNU time needed: apt-get install time" >&2; exit 1; }
start_cluster
W=$(mktemp -d)
"$PGBENCH" -i -s "$SCALE" -q >/dev/null 2>&1
echo "cluster: $PGDIR  scale $SCALE  pgsurge: $PGSURGE  pgbench: $($PGBENCH --version)"
echo "rounds $ROUNDS x ${DURATION}s, interleaved; huge pages: $([ "$HUGE_PAGES" = 1 ] && echo on || echo off); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# tool_cmd TOOL WORKLOAD: the command line of TOOL for WORKLOAD (without -c/-j/-T).
tool_cmd() {
    local tool=$1 workload=$2 mode script
    case $workload in
        select-prepared) mode=prepared; script=(-S) ;;
        select-simple) mode=simple; script=(-S) ;;
        tpcb-prepared) mode=prepared; script=() ;;
        *) echo "unknown workload $workload" >&2; exit 1 ;;
    esac
    case $tool in
        pgbench) echo "$PGBENCH -n ${script[*]} -M $mode" ;;
        pgsurge) echo "$PGSURGE bench -n ${script[*]} -M $mode" ;;
        floor|floor2)
            local f=("$FLOOR" -s "$SCALE")
            [ $mode = simple ] && f+=(--simple)
            [ ${#script[@]} = 0 ] && f+=(--tpcb)
            echo "${f[*]}" ;;
    esac
}

med() { tr ' ' '\n' <<<"$1" | grep . | median; }
spread() { tr ' ' '\n' <<<"$1" | grep . | sort -g | sed -n '1p;$p' | paste -sd-; }
# span LIST: the lowest and highest of values that may be negative ("-0.1 to 0.2").
span() { tr ' ' '\n' <<<"$1" | grep . | sort -g | sed -n '1p;$p' | paste -sd' ' | sed 's/ / to /'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", a/b}'; }
# steady_of ERRFILE: the mean TPS of the progress intervals ending after STEADY seconds and
# before DURATION (pgbench, pgsurge and the floor print them on stderr).
steady_of() {
    awk -v from="$STEADY" -v to="$DURATION" '
        /^progress: / { t = $2 + 0; if (t > from && t < to) { sum += $4; n++ } }
        END { if (n) printf "%.1f", sum / n }' "$1"
}
SUMMARY=()
for workload in $WORKLOADS; do
    for c in $CLIENTS; do
        declare -A TPS=() CPU=() USER_US=() SYS_US=()
        DIFF_USER=""; DIFF_SYS=""
        PAIRED_FLOOR=""; PAIRED_PGBENCH=""; PAIRED_TPS=""; PAIRED_FLOOR_TPS=""; PAIRED_CONTROL=""
        declare -A STEADY_TPS=() ENDS=()
        PAIRED_STEADY_FLOOR=""; PAIRED_STEADY_PGBENCH=""; PAIRED_STEADY_CONTROL=""
        progress=()
        [ "$STEADY" -gt 0 ] && progress=(-P 1)
        for r in $(seq 1 "$ROUNDS"); do
            # The order of the tools turns with each round, so that none always runs
            # first (after the previous workload) or last.
            order=(floor pgbench pgsurge)
            [ "$CONTROL" = 1 ] && order+=(floor2)
            k=$(( r % ${#order[@]} ))
            order=("${order[@]:$k}" "${order[@]:0:$k}")
            for tool in "${order[@]}"; do
                # shellcheck disable=SC2046
                read -r u s _ < <(measure "$W/$tool.$r" $(tool_cmd $tool "$workload") -c "$c" -j 2 -T "$DURATION" "${progress[@]}")
                tps=$(tps_of "$W/$tool.$r.out"); n=$(processed_of "$W/$tool.$r.out")
                if [ -z "$n" ] || [ "$n" = 0 ]; then
                    echo "$tool ran no transaction:"; cat "$W/$tool.$r.out" "$W/$tool.$r.err"; exit 1
                fi
                cpu=$(awk -v u="$u" -v s="$s" -v n="$n" 'BEGIN {printf "%.3e", (u+s)/n}')
                user_us=$(awk -v u="$u" -v n="$n" 'BEGIN {printf "%.3f", u * 1e6 / n}')
                sys_us=$(awk -v s="$s" -v n="$n" 'BEGIN {printf "%.3f", s * 1e6 / n}')
                USER_US[$tool]+="$user_us "; SYS_US[$tool]+="$sys_us "
                eval "round_user_$tool=$user_us round_sys_$tool=$sys_us"
                steady=""
                if [ "$STEADY" -gt 0 ]; then
                    steady=$(steady_of "$W/$tool.$r.err")
                    [ -n "$steady" ] || { echo "$tool printed no progress interval after ${STEADY}s:"; cat "$W/$tool.$r.err"; exit 1; }
                    STEADY_TPS[$tool]+="$steady "
                    ENDS[$tool]+="$(ratio "$tps" "$steady") "
                    eval "round_steady_$tool=$steady"
                    steady="  steady tps $steady"
                fi
                printf "%-16s -c %-3s round %d %-8s tps %10.1f  txns %8d  cpu %6.2f s  cpu/txn %s s%s\n" \
                    "$workload" "$c" "$r" $tool "$tps" "$n" "$(echo "$u + $s" | bc)" "$cpu" "$steady"
                TPS[$tool]+="$tps "; CPU[$tool]+="$cpu "
                eval "round_cpu_$tool=$cpu round_tps_$tool=$tps"
            done
            PAIRED_FLOOR+="$(ratio "$round_cpu_pgsurge" "$round_cpu_floor") "
            DIFF_USER+="$(awk -v a="$round_user_pgsurge" -v b="$round_user_floor" 'BEGIN {printf "%.3f", a - b}') "
            DIFF_SYS+="$(awk -v a="$round_sys_pgsurge" -v b="$round_sys_floor" 'BEGIN {printf "%.3f", a - b}') "
            PAIRED_PGBENCH+="$(ratio "$round_cpu_pgsurge" "$round_cpu_pgbench") "
            PAIRED_TPS+="$(ratio "$round_tps_pgsurge" "$round_tps_pgbench") "
            PAIRED_FLOOR_TPS+="$(ratio "$round_tps_pgsurge" "$round_tps_floor") "
            [ "$CONTROL" = 1 ] && PAIRED_CONTROL+="$(ratio "$round_tps_floor2" "$round_tps_floor") "
            if [ "$STEADY" -gt 0 ]; then
                PAIRED_STEADY_FLOOR+="$(ratio "$round_steady_pgsurge" "$round_steady_floor") "
                PAIRED_STEADY_PGBENCH+="$(ratio "$round_steady_pgsurge" "$round_steady_pgbench") "
                [ "$CONTROL" = 1 ] && PAIRED_STEADY_CONTROL+="$(ratio "$round_steady_floor2" "$round_steady_floor") "
            fi
        done
        tf=$(med "${TPS[floor]}"); tp=$(med "${TPS[pgbench]}"); ts=$(med "${TPS[pgsurge]}")
        cf=$(med "${CPU[floor]}"); cp=$(med "${CPU[pgbench]}"); cs=$(med "${CPU[pgsurge]}")
        SUMMARY+=("$(printf "%-16s -c %-3s | tps floor %9.1f pgbench %9.1f pgsurge %9.1f | cpu/txn floor %s pgbench %s pgsurge %s | pgsurge/floor cpu %s tps %s | pgsurge/pgbench cpu %s tps %s | paired: pgsurge/floor cpu %s tps %s pgsurge/pgbench cpu %s tps %s" \
            "$workload" "$c" "$tf" "$tp" "$ts" "$cf" "$cp" "$cs" "$(ratio "$cs" "$cf")" "$(ratio "$ts" "$tf")" "$(ratio "$cs" "$cp")" "$(ratio "$ts" "$tp")" \
            "$(med "$PAIRED_FLOOR")" "$(med "$PAIRED_FLOOR_TPS")" "$(med "$PAIRED_PGBENCH")" "$(med "$PAIRED_TPS")")")
        # Where pgsurge's CPU per transaction differs from the floor's: user time is its
        # own code; system time is the same calls (one send, one receive), so what moves
        # it is how the kernel wakes the other side, which varies from run to run.
        SUMMARY+=("$(printf "%-16s -c %-3s | cpu/txn split, µs: user floor %s pgbench %s pgsurge %s, system floor %s pgbench %s pgsurge %s | paired pgsurge - floor: user %s (rounds %s) system %s (rounds %s)" \
            "$workload" "$c" "$(med "${USER_US[floor]}")" "$(med "${USER_US[pgbench]}")" "$(med "${USER_US[pgsurge]}")" \
            "$(med "${SYS_US[floor]}")" "$(med "${SYS_US[pgbench]}")" "$(med "${SYS_US[pgsurge]}")" \
            "$(med "$DIFF_USER")" "$(span "$DIFF_USER")" "$(med "$DIFF_SYS")" "$(span "$DIFF_SYS")")")
        if [ "$CONTROL" = 1 ]; then
            SUMMARY+=("$(printf "%-16s -c %-3s | control: floor/floor tps paired %s (rounds %s); pgsurge/floor tps rounds %s" \
                "$workload" "$c" "$(med "$PAIRED_CONTROL")" "$(spread "$PAIRED_CONTROL")" "$(spread "$PAIRED_FLOOR_TPS")")")
        fi
        if [ "$STEADY" -gt 0 ]; then
            SUMMARY+=("$(printf "%-16s -c %-3s | steady tps (after %ss) floor %s pgbench %s pgsurge %s | paired: pgsurge/floor %s (rounds %s) pgsurge/pgbench %s (rounds %s)%s" \
                "$workload" "$c" "$STEADY" "$(med "${STEADY_TPS[floor]}")" "$(med "${STEADY_TPS[pgbench]}")" "$(med "${STEADY_TPS[pgsurge]}")" \
                "$(med "$PAIRED_STEADY_FLOOR")" "$(spread "$PAIRED_STEADY_FLOOR")" "$(med "$PAIRED_STEADY_PGBENCH")" "$(spread "$PAIRED_STEADY_PGBENCH")" \
                "$([ "$CONTROL" = 1 ] && echo "; control floor/floor $(med "$PAIRED_STEADY_CONTROL") (rounds $(spread "$PAIRED_STEADY_CONTROL"))")")")
            SUMMARY+=("$(printf "%-16s -c %-3s | tps line / steady tps: floor %s (rounds %s) pgbench %s (rounds %s) pgsurge %s (rounds %s)" \
                "$workload" "$c" "$(med "${ENDS[floor]}")" "$(spread "${ENDS[floor]}")" "$(med "${ENDS[pgbench]}")" "$(spread "${ENDS[pgbench]}")" \
                "$(med "${ENDS[pgsurge]}")" "$(spread "${ENDS[pgsurge]}")")")
        fi
        unset TPS CPU USER_US SYS_US STEADY_TPS ENDS
    done
done
echo
echo "medians (targets: pgsurge/floor cpu <= 1.05 and tps >= 0.98, pgsurge/pgbench tps >= 1.1):"
printf '%s\n' "${SUMMARY[@]}"
# Peak RSS with many clients: short -t run, the maximum resident set size.
read -r _ _ rp < <(measure "$W/rss.pgbench" "$PGBENCH" -n -S -M prepared -c 200 -j 2 -t 50)
read -r _ _ rs < <(measure "$W/rss.pgsurge" "$PGSURGE" bench -n -S -M prepared -c 200 -j 2 -t 50)
echo "peak RSS -c 200: pgbench ${rp} kB  pgsurge ${rs} kB  ratio $(ratio "$rs" "$rp")  (target <= 2.0)"
rm -rf "$W"
