#!/usr/bin/env bash
# Memory of `pgsurge replay` on a large log: the log is streamed, not loaded, so the
# peak RSS of a log of $STATEMENTS statements is about that of a log ten times smaller.
#
# A stderr log is written by bench/replay_log.py: $SESSIONS sessions, each a stream of
# simple queries and extended-protocol executions with their parameters (constants that
# vary, a few statement shapes), interleaved as concurrent sessions are. Then:
#
# * `--check` (read and fingerprint everything, connect nowhere) on a tenth of the
#   statements and on all of them: peak RSS and read rate;
# * a real replay (`--max -j 2`) of the whole log onto a throwaway cluster: peak RSS,
#   statements per second, and the statements the report counts as replayed;
# * `--check` on a log of $DISTINCT statements each of a fingerprint of its own (more
#   than the fingerprints a replay counts apart, and the shapes it remembers): peak RSS
#   and read rate, with the table bounded (the statements past its limit in one row);
# * with LONG_MB, `--check --skip-unreadable` on a log whose one statement line is
#   $LONG_MB MiB long (past 1024, the bound on an entry, it is read past unkept): peak RSS.
#
# * with CHURN (statements), `--check` on logs of sessions that come and go without a
#   logged disconnection, 10 statements each: a tenth of them and all of them with pids
#   reused among $SESSIONS backends (the sessions end where their pid is reused, so
#   memory stays flat), and all of them with a pid per session (nothing shows an end:
#   every session is kept to the log's end): peak RSS.
#
# Usage: bench/replay_memory.sh   (env: PGSURGE, STATEMENTS=10000000, SESSIONS=16,
#                                  REPLAY=1: 0 skips the real replay, DISTINCT=1000000:
#                                  0 skips the log of distinct fingerprints, LONG_MB=0:
#                                  the long line's MiB, 0 skips it, CHURN=2000000:
#                                  statements of the logs without logged ends, 0 skips)
source "$(dirname "$0")/lib.sh"
STATEMENTS=${STATEMENTS:-10000000}
SESSIONS=${SESSIONS:-16}
REPLAY=${REPLAY:-1}
DISTINCT=${DISTINCT:-1000000}
LONG_MB=${LONG_MB:-0}
CHURN=${CHURN:-2000000}
[ -x "$PGSURGE" ] || { echo "build first: cargo build --release -p pgsurge" >&2; exit 1; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
GEN="python3 $(dirname "$0")/replay_log.py"

row() { # NAME STATEMENTS LOGFILE CMD...: one measured command
    local name=$1 n=$2 log=$3; shift 3
    local t0 t1 u s rss
    t0=$(date +%s.%N)
    read -r u s rss < <(measure "$W/$name" "$@")
    t1=$(date +%s.%N)
    local replayed
    replayed=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["replay"]["statements"] if r["replay"]["sessions"] else r["read"]["statements"])' "$W/$name.json")
    printf '%-22s %11d %11s %9.1f %12.0f %10d %9.1f\n' "$name" "$n" "$replayed" \
        "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
        "$(awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { print n / (b - a) }')" "$rss" \
        "$(awk -v b="$(stat -c %s "$log")" 'BEGIN { print b / 1048576 }')"
}

$GEN "$((STATEMENTS / 10))" "$SESSIONS" >"$W/small.log"
$GEN "$STATEMENTS" "$SESSIONS" >"$W/large.log"
printf '%-22s %11s %11s %9s %12s %10s %9s\n' run statements counted "wall s" "statements/s" "rss kB" "log MB"
row check-tenth "$((STATEMENTS / 10))" "$W/small.log" "$PGSURGE" replay --check --json "$W/check-tenth.json" "$W/small.log"
row check-all "$STATEMENTS" "$W/large.log" "$PGSURGE" replay --check --json "$W/check-all.json" "$W/large.log"
if [ "$DISTINCT" -gt 0 ]; then
    $GEN "$DISTINCT" "$SESSIONS" distinct >"$W/distinct.log"
    row check-distinct "$DISTINCT" "$W/distinct.log" "$PGSURGE" replay --check --json "$W/check-distinct.json" "$W/distinct.log"
    python3 - "$W/check-distinct.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rows = r["fingerprints"]
other = sum(x["logged"]["statements"] for x in rows if x["fingerprint"] == "other")
limit = r["read"].get("fingerprint_limit")
print(f"check-distinct: {len(rows)} fingerprint rows (limit reached: {limit}), {other} statements in the row 'other'")
PY
    rm -f "$W/distinct.log"
fi
if [ "$LONG_MB" -gt 0 ]; then
    p="2026-11-28 18:00:00.000 UTC|alice|shop|6a0.0|"
    {
        echo "${p}LOG:  statement: select 1"
        printf '%sLOG:  statement: select length(%s' "$p" "'"
        head -c "$((LONG_MB * 1048576))" /dev/zero | tr '\0' x
        printf "')\n"
        echo "${p}LOG:  statement: select 2"
    } >"$W/long.log"
    row check-long-line 3 "$W/long.log" "$PGSURGE" replay --check --skip-unreadable --json "$W/check-long-line.json" "$W/long.log"
    python3 - "$W/check-long-line.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["read"]
print(f"check-long-line: {r['statements']} statements read, {r['skipped']} skipped: {'; '.join(r['skipped_examples'])[:200]}")
PY
    rm -f "$W/long.log"
fi
if [ "$CHURN" -gt 0 ]; then
    for run in churn-tenth churn-all churn-unique; do
        n=$CHURN kind=churn
        [ "$run" = churn-tenth ] && n=$((CHURN / 10))
        [ "$run" = churn-unique ] && kind=churn-unique
        $GEN "$n" "$SESSIONS" "$kind" >"$W/$run.log"
        row "check-$run" "$n" "$W/$run.log" "$PGSURGE" replay --check --json "$W/check-$run.json" "$W/$run.log"
        python3 - "$run" "$W/check-$run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[2]))["read"]
print(f"check-{sys.argv[1]}: {r['sessions']} sessions, ended without a logged end: {r.get('unlogged_ends')}")
PY
        rm -f "$W/$run.log"
    done
fi
if [ "$REPLAY" = 1 ]; then
    start_cluster
    trap 'stop_cluster; rm -rf "$W"' EXIT
    "$PGBIN/psql" -X -q -c "CREATE DATABASE shop" >/dev/null
    row replay-max-all "$STATEMENTS" "$W/large.log" "$PGSURGE" replay --max -j 2 -U postgres -d shop \
        --json "$W/replay-max-all.json" "$W/large.log"
fi
