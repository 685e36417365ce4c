#!/usr/bin/env bash
# What sampling costs: pgsurge bench with and without --profile (the default frequency,
# or --profile=$HZ) on one throwaway cluster, ROUNDS interleaved rounds of -T DURATION
# per case (the order of the two alternates from round to round). Prints per case the
# median TPS of each side, their ratio (with / without), and the noise: the spread of
# the runs without a profile (min/median and max/median), against which the ratio is
# to be read. Every run measures its costs (--costs): the ratio of the server's CPU
# time per transaction (user + system, median) with and without a profile is the cost
# of sampling paid by the server's processes, which a busy machine disturbs less than
# the TPS. The profiled runs are stored (--store): the store's bytes of profile data
# per test are printed too. Needs perf (linux-perf); as root, or with
# kernel.perf_event_paranoid <= 2.
#   bench/profile_cost.sh   (env: PGSURGE, DURATION=10, ROUNDS=5, SCALE=10, HZ (default:
#                            pgsurge's), CASES="select:8 select:64 tpcb:8 tpcb:64")
source "$(dirname "$0")/lib.sh"
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-5}
SCALE=${SCALE:-10}
HZ=${HZ:-}
CASES=${CASES:-select:8 select:64 tpcb:8 tpcb:64}
command -v perf >/dev/null || { echo "perf needed (apt-get install linux-perf)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 needed (to read the store's profile sizes)" >&2; exit 1; }
[ -x "$PGSURGE" ] || { echo "no pgsurge binary at $PGSURGE (cargo build --release, or set PGSURGE)" >&2; exit 1; }
start_cluster
W=$(mktemp -d)
trap 'rm -rf "$W"; stop_cluster' EXIT
"$PGBENCH" -i -s "$SCALE" -q >/dev/null 2>&1
profile=--profile
[ -n "$HZ" ] && profile=--profile=$HZ
echo "pgsurge: $PGSURGE"
echo "rounds $ROUNDS x ${DURATION}s interleaved, scale $SCALE, $profile; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-10s %12s %12s %8s %18s %12s %14s\n" case "tps off" "tps on" "on/off" "noise (off runs)" "cpu/tx on/off" "profile bytes"
for case in $CASES; do
    workload=${case%%:*} clients=${case##*:}
    case $workload in
        select) script=(-S) ;;
        tpcb) script=() ;;
        *) echo "unknown workload \"$workload\" in CASES (select, tpcb)" >&2; exit 1 ;;
    esac
    store="$W/$case.db"
    for r in $(seq "$ROUNDS"); do
        order=(off on)
        [ $((r % 2)) = 0 ] && order=(on off)
        for side in "${order[@]}"; do
            args=(--costs)
            [ "$side" = on ] && args+=("$profile" "--store=$store")
            "$PGSURGE" bench -n "${script[@]}" -c "$clients" -j 2 -T "$DURATION" "${args[@]}" \
                >"$W/out" 2>"$W/err" || { cat "$W/err" >&2; exit 1; }
            if [ "$side" = on ] && grep -q -- "--profile" "$W/err"; then
                echo "no profile taken: $(cat "$W/err")" >&2; exit 1
            fi
            tps_of "$W/out" >>"$W/$case.$side"
            awk '/^ *server_cpu_(user|system)_us /{s+=$2} END{print s}' "$W/out" >>"$W/$case.$side.cpu"
        done
    done
    off=$(median <"$W/$case.off")
    on=$(median <"$W/$case.on")
    lo=$(sort -g "$W/$case.off" | head -1)
    hi=$(sort -g "$W/$case.off" | tail -1)
    cpu_off=$(median <"$W/$case.off.cpu")
    cpu_on=$(median <"$W/$case.on.cpu")
    bytes=$(python3 -c "
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
n, b = c.execute('select count(distinct run_id), coalesce(sum(length(data)), 0) from run_profiles').fetchone()
print(int(b / n) if n else 0)" "$store")
    awk -v c="$case" -v off="$off" -v on="$on" -v lo="$lo" -v hi="$hi" -v b="$bytes" \
        -v con="$cpu_on" -v coff="$cpu_off" \
        'BEGIN{printf "%-10s %12.1f %12.1f %8.3f %8.3f..%-8.3f %12.3f %14d\n", c, off, on, on/off, lo/off, hi/off, con/coff, b}'
done
echo "(tps: medians over the rounds; on/off: the cost of sampling, 1.000 = none; noise: the"
echo " lowest and highest run without a profile over their median; cpu/tx: the server's"
echo " CPU time per transaction, median with over median without; profile bytes: stored"
echo " (deflated folded stacks, server and client) per profiled test)"
