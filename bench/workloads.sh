#!/usr/bin/env bash
# pgsurge's workload packs beside their peers on one throwaway cluster over the Unix
# socket: the sysbench-like OLTP packs beside sysbench's own oltp_* scripts (on the
# same sbtest1 table, loaded once by pgsurge), and the tpcc pack beside Percona-Lab's
# sysbench-tpcc (each on its own database). For each pair, ROUNDS interleaved rounds of
# -T $DURATION give transactions per second and client CPU seconds per transaction
# (user+sys of the client process, GNU time); then the TPC-C load's wall time with
# JOBS connections each.
#
# Both sides run prepared statements. A sysbench "transaction" is one execution of its
# script, like a pgbench one, so the counts compare directly.
#
# Beside oltp_point_select the floor client (bench/floor: one pre-encoded prepared
# point select per transaction on pgbench_accounts, nothing else) runs in the same
# rounds: its CPU per transaction over sysbench's is the least any client that waits
# for each reply can reach, the bound under the pgsurge/sysbench ratio.
#
# Usage: bench/workloads.sh
#   env: PGSURGE, FLOOR (pgsurge-floor beside PGSURGE), SYSBENCH (sysbench), SYSBENCH_TPCC_DIR (a checkout of
#        github.com/Percona-Lab/sysbench-tpcc; without it the TPC-C part is skipped),
#        DURATION=10, ROUNDS=3, SCALE=10 (OLTP: 100,000 rows per unit),
#        WAREHOUSES=10, CLIENTS=8, JOBS=2, OLTP="point_select read_only read_write"
# Needs PostgreSQL server binaries (initdb), GNU time and sysbench 1.0 (Debian's has the
# pgsql driver). Build first: cargo build --release -p pgsurge -p pgsurge-floor
source "$(dirname "$0")/lib.sh"
SYSBENCH=${SYSBENCH:-sysbench}
FLOOR=${FLOOR:-$(dirname "$PGSURGE")/pgsurge-floor}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
SCALE=${SCALE:-10}
WAREHOUSES=${WAREHOUSES:-10}
CLIENTS=${CLIENTS:-8}
JOBS=${JOBS:-2}
OLTP=${OLTP:-point_select read_only read_write}
[ -x "$PGSURGE" ] || { echo "build first: cargo build --release -p pgsurge ($PGSURGE)" >&2; exit 1; }
command -v "$SYSBENCH" >/dev/null || { echo "sysbench needed: apt-get install sysbench" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "GNU time needed: apt-get install time" >&2; exit 1; }
start_cluster
W=$(mktemp -d)
SB_CONN=(--db-driver=pgsql --pgsql-host="$PGHOST" --pgsql-port="$PGPORT" --pgsql-user=postgres)
echo "cluster: $PGDIR  pgsurge: $PGSURGE  $("$SYSBENCH" --version)"
echo "rounds $ROUNDS x ${DURATION}s, -c $CLIENTS -j $JOBS; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

sb_txns() { sed -n 's/^ *transactions: *\([0-9]*\).*/\1/p' "$1"; }
per_txn() { awk -v u="$1" -v s="$2" -v n="$3" 'BEGIN {printf "%.3e", (u+s)/n}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", a/b}'; }
med() { tr ' ' '\n' <<<"$1" | grep . | median; }
SUMMARY=()

# compare NAME PGSURGE_CMD -- SYSBENCH_CMD: interleaved rounds, medians.
compare() {
    local name=$1; shift
    local ours=() theirs=()
    while [ "$1" != -- ]; do ours+=("$1"); shift; done
    shift
    theirs=("$@")
    local cpu_s="" cpu_b="" tps_s="" tps_b="" cpu_f="" r u s n
    local with_floor=""
    [ "$name" = oltp_point_select ] && [ -x "$FLOOR" ] && with_floor=1
    for r in $(seq 1 "$ROUNDS"); do
        if [ -n "$with_floor" ]; then
            read -r u s _ < <(PGUSER=postgres PGDATABASE=postgres measure "$W/fl.$r" \
                "$FLOOR" -c "$CLIENTS" -j "$JOBS" -T "$DURATION" -s "$SCALE")
            n=$(processed_of "$W/fl.$r.out")
            [ -n "$n" ] && [ "$n" != 0 ] || { echo "the floor ran no transaction:"; cat "$W/fl.$r.out" "$W/fl.$r.err"; exit 1; }
            cpu_f+="$(per_txn "$u" "$s" "$n") "
        fi
        read -r u s _ < <(measure "$W/sb.$r" "${theirs[@]}")
        n=$(sb_txns "$W/sb.$r.out")
        [ -n "$n" ] && [ "$n" != 0 ] || { echo "sysbench ran no transaction:"; cat "$W/sb.$r.out" "$W/sb.$r.err"; exit 1; }
        cpu_b+="$(per_txn "$u" "$s" "$n") "; tps_b+="$(awk -v n="$n" -v d="$DURATION" 'BEGIN{print n/d}') "
        read -r u s _ < <(measure "$W/ps.$r" "${ours[@]}")
        n=$(processed_of "$W/ps.$r.out")
        [ -n "$n" ] && [ "$n" != 0 ] || { echo "pgsurge ran no transaction:"; cat "$W/ps.$r.out" "$W/ps.$r.err"; exit 1; }
        cpu_s+="$(per_txn "$u" "$s" "$n") "; tps_s+="$(tps_of "$W/ps.$r.out") "
        printf "%-20s round %d  sysbench cpu/txn %s  pgsurge cpu/txn %s\n" "$name" "$r" \
            "$(tr ' ' '\n' <<<"$cpu_b" | grep . | tail -1)" "$(tr ' ' '\n' <<<"$cpu_s" | grep . | tail -1)"
    done
    SUMMARY+=("$(printf "%-20s | tps sysbench %9.1f pgsurge %9.1f | cpu/txn sysbench %s pgsurge %s | pgsurge/sysbench cpu %s" \
        "$name" "$(med "$tps_b")" "$(med "$tps_s")" "$(med "$cpu_b")" "$(med "$cpu_s")" \
        "$(ratio "$(med "$cpu_s")" "$(med "$cpu_b")")")")
    if [ -n "$with_floor" ]; then
        SUMMARY+=("$(printf "%-20s | cpu/txn floor %s | floor/sysbench cpu %s, pgsurge/floor cpu %s" \
            "  the floor" "$(med "$cpu_f")" "$(ratio "$(med "$cpu_f")" "$(med "$cpu_b")")" \
            "$(ratio "$(med "$cpu_s")" "$(med "$cpu_f")")")")
    fi
}

# OLTP: sbtest1 loaded by pgsurge; sysbench's scripts run on the same table (and the
# floor on pgbench's tables beside it).
"$PGSURGE" bench --workload oltp-read-write -i -s "$SCALE" --init-jobs "$JOBS" -q postgres >/dev/null 2>&1
[ -x "$FLOOR" ] && "$PGSURGE" bench -i -s "$SCALE" -q postgres >/dev/null 2>&1
for w in $OLTP; do
    compare "oltp_$w" "$PGSURGE" bench --workload "oltp-${w//_/-}" -M prepared -c "$CLIENTS" -j "$JOBS" -T "$DURATION" postgres -- \
        "$SYSBENCH" "oltp_$w" "${SB_CONN[@]}" --pgsql-db=postgres --tables=1 \
        --table-size=$((SCALE * 100000)) --threads="$CLIENTS" --time="$DURATION" run
done

if [ -n "${SYSBENCH_TPCC_DIR:-}" ]; then
    "$PGBIN/createdb" tpcc_pgsurge
    "$PGBIN/createdb" tpcc_sysbench
    TPCC=("$SYSBENCH" "$SYSBENCH_TPCC_DIR/tpcc.lua" "${SB_CONN[@]}" --pgsql-db=tpcc_sysbench --tables=1 --scale="$WAREHOUSES")
    start=$(date +%s.%N)
    (cd "$SYSBENCH_TPCC_DIR" && "${TPCC[@]}" --threads="$JOBS" prepare) >"$W/tpcc-prepare.out" 2>&1
    load_b=$(echo "$(date +%s.%N) - $start" | bc)
    start=$(date +%s.%N)
    "$PGSURGE" bench --workload tpcc -i -s "$WAREHOUSES" --init-jobs "$JOBS" tpcc_pgsurge >"$W/tpcc-load.out" 2>&1
    load_s=$(echo "$(date +%s.%N) - $start" | bc)
    SUMMARY+=("$(printf "%-20s | %s warehouses, %s connections: sysbench-tpcc prepare %.1f s, pgsurge -i %.1f s | pgsurge/sysbench %s" \
        "tpcc load" "$WAREHOUSES" "$JOBS" "$load_b" "$load_s" "$(ratio "$load_s" "$load_b")")")
    compare "tpcc" "$PGSURGE" bench --workload tpcc -M prepared --max-tries 10 -c "$CLIENTS" -j "$JOBS" -T "$DURATION" tpcc_pgsurge -- \
        bash -c "cd '$SYSBENCH_TPCC_DIR' && exec ${TPCC[*]} --threads=$CLIENTS --time=$DURATION run"
fi
echo
echo "medians (targets: oltp_point_select cpu <= 0.5, tpcc cpu <= 0.3, tpcc load <= 0.5):"
printf '%s\n' "${SUMMARY[@]}"
rm -rf "$W"
