#!/usr/bin/env bash
# How long `pgsurge merge` takes for a 1-hour distributed run: N generators' result
# documents, each with 3600 per-second interval samples carrying their own HDR
# histogram (plus the overall, per-script and per-command histograms).
#
# 1. A short real distributed run (`pgsurge dist local`, select-only, -T $REAL_T) on a
#    throwaway cluster gives real documents with real per-second histograms.
# 2. bench/synth_hour.py stretches them to $SECONDS_LONG seconds: the real samples
#    repeated with consecutive timestamps, every total scaled to stay consistent
#    (counts, exact sums, aggregate histograms), -T and the end adjusted. The script
#    checks that the merge of the synthetic documents has as many intervals as
#    seconds and that its transaction count is the sum of the inputs'.
# 3. For N = $COUNTS synthetic generators: `pgsurge merge` printing the report, and
#    `pgsurge merge --json=FILE` also writing the merged document, each $REPEATS
#    times under GNU time; medians of wall time, CPU (user+sys) and peak RSS.
#
# Usage: bench/merge_hour.sh   (env: PGSURGE, REAL_GENERATORS=4, REAL_CLIENTS=32 in
#                               total, REAL_T=10, SCALE=1, SECONDS_LONG=3600,
#                               COUNTS="1 4 16", REPEATS=5)
source "$(dirname "$0")/lib.sh"
REAL_GENERATORS=${REAL_GENERATORS:-4}
REAL_CLIENTS=${REAL_CLIENTS:-32}
REAL_T=${REAL_T:-10}
SCALE=${SCALE:-1}
SECONDS_LONG=${SECONDS_LONG:-3600}
COUNTS=${COUNTS:-"1 4 16"}
REPEATS=${REPEATS:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
[ -x "$PGSURGE" ] || { echo "build first: cargo build --release -p pgsurge" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 is needed" >&2; exit 1; }

start_cluster
W=$(mktemp -d)
trap 'stop_cluster; rm -rf "$W"' EXIT
"$PGSURGE" bench -i -s "$SCALE" -q >/dev/null 2>&1
if ! "$PGSURGE" dist local -n "$REAL_GENERATORS" -c "$REAL_CLIENTS" --start-in=2 \
    --out-dir="$W/real" -- -n -S -j 1 -T "$REAL_T" >"$W/real.out" 2>"$W/real.err"; then
    cat "$W/real.err" >&2
    exit 1
fi
stop_cluster # the merge needs no server
echo "real run: $REAL_GENERATORS generators x $((REAL_CLIENTS / REAL_GENERATORS)) clients, -T $REAL_T," \
    "$(processed_of "$W/real.out") transactions, tps $(tps_of "$W/real.out")"
echo

median_col() { awk -v c="$1" '{ print $c }' "$2" | median; }

printf '%-30s   %-26s   %-26s\n' "" "report only" "with --json=FILE"
printf '%10s %9s %9s   %8s %8s %8s   %8s %8s %8s\n' generators intervals "input MB" \
    "wall s" "CPU s" "RSS MB" "wall s" "CPU s" "RSS MB"
for n in $COUNTS; do
    d="$W/synth-$n"
    python3 "$HERE/synth_hour.py" --count "$n" --seconds "$SECONDS_LONG" --out-dir "$d" \
        "$W"/real/local-*.json
    : >"$W/t.report"
    : >"$W/t.json"
    for ((r = 1; r <= REPEATS; r++)); do
        /usr/bin/time -f "%e %U %S %M" -o "$W/time" "$PGSURGE" merge "$d"/synth-*.json >"$W/merge.out"
        awk '{ print $1, $2 + $3, $4 / 1024 }' "$W/time" >>"$W/t.report"
        /usr/bin/time -f "%e %U %S %M" -o "$W/time" "$PGSURGE" merge --json="$W/merged.json" \
            "$d"/synth-*.json >/dev/null
        awk '{ print $1, $2 + $3, $4 / 1024 }' "$W/time" >>"$W/t.json"
    done
    # The merge took the documents as one run of SECONDS_LONG seconds.
    python3 - "$W/merged.json" "$SECONDS_LONG" "$d"/synth-*.json <<'EOF'
import json, sys
merged = json.load(open(sys.argv[1]))
seconds = int(sys.argv[2])
inputs = [json.load(open(p))["totals"]["transactions"] for p in sys.argv[3:]]
assert len(merged["intervals"]) == seconds, len(merged["intervals"])
assert merged["totals"]["transactions"] == sum(inputs)
assert sum(i["transactions"] for i in merged["intervals"]) == sum(inputs)
EOF
    mb=$(du -cb "$d"/synth-*.json | awk 'END { printf "%.1f", $1 / 1e6 }')
    printf '%10s %9d %9s   %8.2f %8.2f %8.0f   %8.2f %8.2f %8.0f\n' "$n" \
        "$((n * SECONDS_LONG))" "$mb" \
        "$(median_col 1 "$W/t.report")" "$(median_col 2 "$W/t.report")" \
        "$(median_col 3 "$W/t.report")" \
        "$(median_col 1 "$W/t.json")" "$(median_col 2 "$W/t.json")" \
        "$(median_col 3 "$W/t.json")"
    echo "$n $(du -b "$W/merged.json" | cut -f1)" >>"$W/merged.sizes"
    rm -rf "$d"
done
echo
echo "medians of $REPEATS merges each; input MB = all N documents; merged document:" \
    "$(awk '{ printf "%s%d gen. %.1f MB", (NR > 1 ? ", " : ""), $1, $2 / 1e6 }' "$W/merged.sizes")"
