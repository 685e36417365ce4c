# Shared helpers for the bench/ scripts: a throwaway PostgreSQL cluster on a Unix socket,
# and measuring a client process (wall time, user+sys CPU, peak RSS) with GNU time.
# Sourced, not run.

set -euo pipefail

PGSURGE=${PGSURGE:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target/release/pgsurge}
PGBENCH=${PGBENCH:-/usr/bin/pgbench}
PGPORT=${PGPORT:-55439}
# max_connections of the throwaway cluster (raise it for runs with more clients).
PG_MAX_CONNECTIONS=${PG_MAX_CONNECTIONS:-300}
# HUGE_PAGES=1 puts the cluster's shared memory in huge pages (huge_pages=on): as root,
# start_cluster reserves the pages the server asks for (vm.nr_hugepages) and stop_cluster
# gives them back. With ordinary 4 kB pages every backend takes a page fault the first
# time it touches each page of shared buffers, a cost per transaction that shrinks as
# the backends of a run warm up.
HUGE_PAGES=${HUGE_PAGES:-0}
case $HUGE_PAGES in 0|1) ;; *) echo "HUGE_PAGES must be 0 or 1, not \"$HUGE_PAGES\"" >&2; exit 1 ;; esac

find_pg_bin() {
    if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then
        pg_config --bindir; return
    fi
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1
}

# start_cluster: sets PGDIR, PGHOST, exports PG* for the clients.
start_cluster() {
    if [ "$HUGE_PAGES" = 1 ] && [ "$(id -u)" != 0 ]; then
        echo "HUGE_PAGES=1 needs root (it reserves vm.nr_hugepages)" >&2; exit 1
    fi
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
    local settings="-c max_connections=$PG_MAX_CONNECTIONS -c shared_buffers=256MB -c fsync=off -c synchronous_commit=off"
    if [ "$HUGE_PAGES" = 1 ]; then
        local pages
        pages=$("${run_as[@]}" "$PGBIN/postgres -D $PGDIR/data $settings -C shared_memory_size_in_huge_pages")
        HUGE_PAGES_BEFORE=$(cat /proc/sys/vm/nr_hugepages)
        echo $((HUGE_PAGES_BEFORE + pages)) >/proc/sys/vm/nr_hugepages
        [ "$(cat /proc/sys/vm/nr_hugepages)" -ge $((HUGE_PAGES_BEFORE + pages)) ] ||
            { echo "could not reserve $pages huge pages (memory too fragmented?)" >&2; echo "$HUGE_PAGES_BEFORE" >/proc/sys/vm/nr_hugepages; rm -rf "$PGDIR"; exit 1; }
        settings="$settings -c huge_pages=on"
    fi
    "${run_as[@]}" "$PGBIN/pg_ctl -D $PGDIR/data -l $PGDIR/log -w -o '-k $PGDIR -p $PGPORT -c listen_addresses= $settings' start >/dev/null"
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
    if [ -n "${HUGE_PAGES_BEFORE:-}" ]; then
        echo "$HUGE_PAGES_BEFORE" >/proc/sys/vm/nr_hugepages
        HUGE_PAGES_BEFORE=
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
