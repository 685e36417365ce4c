#!/usr/bin/env bash
# What a precision target costs against fixed repeats on the same question: is B
# (a throwaway server whose transaction sleeps 5 % longer, a server setting) slower
# than A (the same binaries)? Runs the same campaign twice — `[repeats] until = UNTIL`
# (min 3, max 10), then a fixed `repeats = 10` — and prints each one's wall time,
# tests run and `compare` verdict, and the ratio of the wall times.
#
# Usage: bench/until.sh   (env: PGSURGE=target/release/pgsurge, UNTIL=2%, DURATION=5,
#        CLIENTS=4)
source "$(dirname "$0")/lib.sh"
UNTIL=${UNTIL:-2%}
DURATION=${DURATION:-5}
CLIENTS=${CLIENTS:-4}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
chmod 755 "$W"
echo "SELECT pg_sleep((50 + coalesce(current_setting('bench.extra_ms', true), '0')::float8) / 1000);" >"$W/sleep.sql"
campaign() { # NAME REPEATS_TOML
    cat >"$W/$1.toml" <<TOML
[campaign]
name = "$1"
[[target]]
name = "a"
[[target]]
name = "b"
settings = { "bench.extra_ms" = "2.5" }
[matrix]
scales = [1]
clients = [$CLIENTS]
scripts = [{ file = "sleep.sql" }]
$2
[run]
duration = $DURATION
TOML
}
campaign until "[repeats]
until = \"$UNTIL\"
min = 3
max = 10"
campaign fixed "repeats = 10"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for name in until fixed; do
    start=$(date +%s.%N)
    "$PGSURGE" campaign run "$W/$name.toml" --store "$W/$name.db" --quiet
    end=$(date +%s.%N)
    tests=$("$PGSURGE" results list --store "$W/$name.db" | awk 'NR == 2 { print $5 }')
    verdict=$("$PGSURGE" compare --store "$W/$name.db" --format json \
        | python3 -c 'import json,sys; c=json.load(sys.stdin)["cells"][0]["tps"]; print("%s, change %+.1f %% [%+.1f %%, %+.1f %%]" % (c["verdict"], 100*c["change"], 100*c["ci_low"], 100*c["ci_high"]))')
    wall=$(echo "$end - $start" | bc)
    printf '%-6s %6.1f s wall, %s tests: %s\n' "$name" "$wall" "$tests" "$verdict"
    eval "wall_$name=$wall"
done
printf 'until / fixed wall time: %.2f\n' "$(echo "$wall_until / $wall_fixed" | bc -l)"
