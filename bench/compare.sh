#!/usr/bin/env bash
# pgsurge vs pgbench on one throwaway cluster over the Unix socket:
#   -S -M prepared -c 8 -j 2 -T $DURATION, three rounds interleaved → TPS and client CPU
#   seconds per transaction (user+sys of the client process), medians and ratios;
#   then peak client RSS at -c 200 -j 2.
# Usage: bench/compare.sh   (env: PGSURGE, PGBENCH, DURATION=10, ROUNDS=3, SCALE=10)
# Needs PostgreSQL server binaries (initdb) and GNU time (/usr/bin/time).
source "$(dirname "$0")/lib.sh"
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
SCALE=${SCALE:-10}
[ -x "$PGSURGE" ] || { echo "build first: cargo build --release -p pgsurge ($PGSURGE)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "GNU time needed: apt-get install time" >&2; exit 1; }
start_cluster
W=$(mktemp -d)
"$PGBENCH" -i -s "$SCALE" -q >/dev/null 2>&1
echo "cluster: $PGDIR  scale $SCALE  pgsurge: $PGSURGE  pgbench: $($PGBENCH --version)"
declare -A TPS CPU
for r in $(seq 1 "$ROUNDS"); do
    for tool in pgbench pgsurge; do
        if [ $tool = pgbench ]; then bin=("$PGBENCH"); else bin=("$PGSURGE" bench); fi
        read -r u s _ < <(measure "$W/$tool.$r" "${bin[@]}" -n -S -M prepared -c 8 -j 2 -T "$DURATION")
        tps=$(tps_of "$W/$tool.$r.out"); n=$(processed_of "$W/$tool.$r.out")
        cpu=$(awk -v u="$u" -v s="$s" -v n="$n" 'BEGIN {printf "%.3e", (u+s)/n}')
        printf "round %d %-8s tps %10.1f  txns %8d  cpu %5.2f s  cpu/txn %s s\n" "$r" $tool "$tps" "$n" "$(echo "$u + $s" | bc)" "$cpu"
        TPS[$tool]+="$tps "; CPU[$tool]+="$cpu "
    done
done
med() { tr ' ' '\n' <<<"$1" | grep . | median; }
tp=$(med "${TPS[pgbench]}"); ts=$(med "${TPS[pgsurge]}")
cp=$(med "${CPU[pgbench]}"); cs=$(med "${CPU[pgsurge]}")
echo "median tps:      pgbench $tp  pgsurge $ts  ratio $(awk -v a="$ts" -v b="$tp" 'BEGIN{printf "%.3f", a/b}')  (target >= 1.0)"
echo "median cpu/txn:  pgbench $cp  pgsurge $cs  ratio $(awk -v a="$cs" -v b="$cp" 'BEGIN{printf "%.3f", a/b}')  (target <= 0.9)"
# Peak RSS with many clients: short -t run, the maximum resident set size.
read -r _ _ rp < <(measure "$W/rss.pgbench" "$PGBENCH" -n -S -M prepared -c 200 -j 2 -t 50)
read -r _ _ rs < <(measure "$W/rss.pgsurge" "$PGSURGE" bench -n -S -M prepared -c 200 -j 2 -t 50)
echo "peak RSS -c 200: pgbench ${rp} kB  pgsurge ${rs} kB  ratio $(awk -v a="$rs" -v b="$rp" 'BEGIN{printf "%.3f", a/b}')  (target <= 2.0)"
rm -rf "$W"
