#!/usr/bin/env bash
# Initialization speed: pgbench -i, pgsurge -i, and pgsurge -i --init-jobs=N on one
# throwaway cluster, ROUNDS interleaved rounds each. Prints, per tool, the median wall
# time and the median of every step of the "done in" line (drop tables, create tables,
# client-side generate, vacuum, primary keys), and the ratios to pgbench.
#
# Usage: bench/init.sh   (env: PGSURGE, PGBENCH, SCALE=50, PARTITIONS=4, JOBS=2, ROUNDS=5,
#                         STEPS=dtgvp)
# Build first: cargo build --release -p pgsurge
source "$(dirname "$0")/lib.sh"
SCALE=${SCALE:-50}
PARTITIONS=${PARTITIONS:-4}
JOBS=${JOBS:-2}
ROUNDS=${ROUNDS:-5}
STEPS=${STEPS:-dtgvp}
[ -x "$PGSURGE" ] || { echo "build first: cargo build --release -p pgsurge ($PGSURGE)" >&2; exit 1; }
start_cluster
W=$(mktemp -d)
trap 'rm -rf "$W"; stop_cluster' EXIT
common=(-i -I "$STEPS" -s "$SCALE")
[ "$PARTITIONS" -gt 0 ] && common+=(--partitions="$PARTITIONS")
echo "cluster: $PGDIR  pgbench: $($PGBENCH --version)  pgsurge: $PGSURGE"
echo "-i ${common[*]:1}, rounds $ROUNDS interleaved, $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

run_tool() { # NAME CMD...
    local name=$1; shift
    local start end
    psql -qAt -c "checkpoint" >/dev/null
    start=$(date +%s.%N)
    "$@" "${common[@]}" >/dev/null 2>"$W/$name.err"
    end=$(date +%s.%N)
    awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f\n", b - a }' >>"$W/$name.wall"
    # "done in 12.34 s (drop tables 0.01 s, create tables 0.00 s, ...)."
    sed -n 's/^done in .*(\(.*\))\.$/\1/p' "$W/$name.err" | tr ',' '\n' |
        sed -n 's/^ *\(.*\) \([0-9.]*\) s$/\1|\2/p' >>"$W/$name.steps"
}

for r in $(seq "$ROUNDS"); do
    run_tool pgbench "$PGBENCH"
    run_tool pgsurge "$PGSURGE" bench
    run_tool "pgsurge-jobs$JOBS" "$PGSURGE" bench --init-jobs="$JOBS"
done

step_median() { grep "^$2|" "$W/$1.steps" | cut -d'|' -f2 | median; }
base_wall=$(median <"$W/pgbench.wall")
printf '%-16s %8s %7s' tool wall ratio
steps=$(cut -d'|' -f1 "$W/pgbench.steps" | awk '!seen[$0]++')
while IFS= read -r s; do printf ' %22s' "$s"; done <<<"$steps"
echo
for tool in pgbench pgsurge "pgsurge-jobs$JOBS"; do
    wall=$(median <"$W/$tool.wall")
    printf '%-16s %7.2fs %6.2fx' "$tool" "$wall" "$(awk -v a="$wall" -v b="$base_wall" 'BEGIN { print a / b }')"
    while IFS= read -r s; do printf ' %21.2fs' "$(step_median "$tool" "$s")"; done <<<"$steps"
    echo
done
