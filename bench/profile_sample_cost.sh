#!/usr/bin/env bash
# What one sample costs the sampled process, apart from the noise of a database run: the
# CPU time (user + system, its own rusage) of a fixed CPU-bound loop (a C program with
# frame pointers, three calls deep) run alone and under `perf record -a` of every CPU
# as pgsurge records it (cpu-clock, a fixed period, frame-pointer stacks), at 99 Hz and
# at HZ_HIGH (where the cost is large enough to be measured), and for comparison at
# HZ_HIGH with `-F` (the kernel tunes the period), without stacks, and with DWARF
# stacks. ROUNDS interleaved rounds; prints per case the median CPU time, its ratio to
# the loop alone, and the cost per sample in µs (extra CPU time over the samples taken
# of the loop: its CPU seconds times the frequency). Needs root (or
# kernel.perf_event_paranoid <= 0), perf and a C compiler.
#   bench/profile_sample_cost.sh   (env: ROUNDS=5, LOOPS=1500000 (about 2 s), HZ_HIGH=9999)
set -euo pipefail
ROUNDS=${ROUNDS:-5}
LOOPS=${LOOPS:-1500000}
HZ_HIGH=${HZ_HIGH:-9999}
command -v perf >/dev/null || { echo "perf needed (apt-get install linux-perf)" >&2; exit 1; }
command -v cc >/dev/null || { echo "a C compiler needed (cc)" >&2; exit 1; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cat >"$W/loop.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
static volatile unsigned long sink;
__attribute__((noinline)) static unsigned long inner(unsigned long x) {
    for (int i = 0; i < 1000; i++) x = x * 6364136223846793005ul + 1442695040888963407ul;
    return x;
}
__attribute__((noinline)) static unsigned long middle(unsigned long x) { return inner(x) + 1; }
__attribute__((noinline)) static unsigned long outer(unsigned long x) { return middle(x) + 1; }
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    unsigned long x = 1;
    for (long i = 0; i < n; i++) x = outer(x);
    sink = x;
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    printf("%.4f\n", r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 + r.ru_stime.tv_sec + r.ru_stime.tv_usec / 1e6);
    return 0;
}
C
cc -O2 -fno-omit-frame-pointer -o "$W/loop" "$W/loop.c"
period() { echo $((1000000000 / $1)); }
# case name, frequency (for the cost per sample; 0 = alone), perf record's event arguments
CASES=(
    "alone|0|"
    "99Hz|99|-e cpu-clock -c $(period 99) -g"
    "${HZ_HIGH}Hz|$HZ_HIGH|-e cpu-clock -c $(period "$HZ_HIGH") -g"
    "${HZ_HIGH}Hz-F|$HZ_HIGH|-e cpu-clock -F $HZ_HIGH -g"
    "${HZ_HIGH}Hz-nostack|$HZ_HIGH|-e cpu-clock -c $(period "$HZ_HIGH")"
    "${HZ_HIGH}Hz-dwarf|$HZ_HIGH|-e cpu-clock -c $(period "$HZ_HIGH") --call-graph dwarf"
)
echo "rounds $ROUNDS, $LOOPS loops; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
    for c in "${CASES[@]}"; do
        IFS='|' read -r name _ args <<<"$c"
        if [ -z "$args" ]; then
            "$W/loop" "$LOOPS" >>"$W/$name"
        else
            # shellcheck disable=SC2086
            perf record $args -a --no-buildid -o "$W/perf.data" -- "$W/loop" "$LOOPS" \
                >>"$W/$name" 2>"$W/err" || { cat "$W/err" >&2; exit 1; }
        fi
    done
done
median() { sort -g | awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
alone=$(median <"$W/alone")
printf "%-18s %10s %10s %14s\n" case "cpu s" "/ alone" "µs per sample"
for c in "${CASES[@]}"; do
    IFS='|' read -r name hz _ <<<"$c"
    t=$(median <"$W/$name")
    awk -v n="$name" -v t="$t" -v a="$alone" -v hz="$hz" 'BEGIN{
        per = hz > 0 ? sprintf("%.2f", (t - a) / (t * hz) * 1e6) : "-";
        printf "%-18s %10.3f %10.4f %14s\n", n, t, t / a, per }'
done
echo "(cpu s: median of the loop's own CPU time; µs per sample: its extra CPU time over"
echo " the samples taken of it, CPU seconds times the frequency)"
