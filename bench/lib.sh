# Shared helpers for the bench/ scripts: a throwaway PostgreSQL cluster on a Unix socket,
# and measuring a client process (wall time, user+sys CPU, peak RSS) with GNU time.
# Sourced, not run.

set -euo pipefail

PGSURGE=${PGSURGE:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target/release/pgsurge}
PGBENCH=${PGBENCH:-/usr/bin/pgbench}
PGPORT=${PGPORT:-55439}
# max_connections of the throwaway cluster (raise it for runs with more clients).
PG_MAX_CONNECTIONS=${PG_MAX_CONNECTIONS:-300}

find_pg_bin() {
    if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then
        pg_config --bindir; return
    fi
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1
}

# start_cluster: sets PGDIR, PGHOST, exports PG* for the clients.
start_cluster() {
    PGBIN=$(find_pg_bin)
    [ -x "$PGBIN/initdb" ] || { echo "no initdb found (install postgresql)" >&2; exit 1; }
    PGDIR=$(mktemp -d /tmp/pgsurge-bench.XXXXXX)
    local run_as=()
    if [ "$(id -u)" = 0 ]; then
        chown postgres "$PGDIR"
        run_as=(su postgres -s /bin/sh -c)
    else
        run_as=(sh -c)
    fi
    "${run_as[@]}" "$PGBIN/initdb -D $PGDIR/data -A trust -U postgres >/dev/null"
    "${run_as[@]}" "$PGBIN/pg_ctl -D $PGDIR/data -l $PGDIR/log -w -o '-k $PGDIR -p $PGPORT -c listen_addresses= -c max_connections=$PG_MAX_CONNECTIONS -c shared_buffers=256MB -c fsync=off -c synchronous_commit=off' start >/dev/null"
    export PGHOST=$PGDIR PGPORT PGUSER=postgres PGDATABASE=postgres
    trap stop_cluster EXIT
}

stop_cluster() {
    if [ -n "${PGDIR:-}" ] && [ -d "$PGDIR/data" ]; then
        if [ "$(id -u)" = 0 ]; then
            su postgres -s /bin/sh -c "$PGBIN/pg_ctl -D $PGDIR/data -m immediate stop >/dev/null" || true
        else
            "$PGBIN/pg_ctl" -D "$PGDIR/data" -m immediate stop >/dev/null || true
        fi
        rm -rf "$PGDIR"
    fi
}

# measure OUT_PREFIX CMD...: runs CMD under GNU time; writes stdout to OUT_PREFIX.out and
# prints "user sys maxrss_kb".
measure() {
    local prefix=$1; shift
    /usr/bin/time -f "%U %S %M" -o "$prefix.time" "$@" >"$prefix.out" 2>"$prefix.err"
    cat "$prefix.time"
}

tps_of() { sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$1"; }
processed_of() { sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$1"; }

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# select_only_cmd TOOL: the select-only command line (without -c/-j/-T) of pgbench,
# pgsurge or floor in query mode $MODE (prepared or simple) at scale $SCALE.
select_only_cmd() {
    case $1 in
        pgbench) echo "$PGBENCH -n -S -M $MODE" ;;
        pgsurge) echo "$PGSURGE bench -n -S -M $MODE" ;;
        floor) if [ "$MODE" = simple ]; then echo "$FLOOR -s $SCALE --simple"; else echo "$FLOOR -s $SCALE"; fi ;;
    esac
}
