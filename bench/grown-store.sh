#!/usr/bin/env bash
# The report of a store that has grown: copies every set of a store (e.g. one
# quickstart) until it holds about RUNS runs, as a year of nightly benchmarks would,
# then times `pgsurge report` on it and prints its size.
#   bench/grown-store.sh SOURCE.db [RUNS]      (PGSURGE=path/to/pgsurge)
set -euo pipefail
src=${1:?usage: bench/grown-store.sh SOURCE.db [RUNS]}
runs=${2:-2000}
pgsurge=${PGSURGE:-target/release/pgsurge}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$src" "$work/grown.db"
python3 - "$work/grown.db" "$runs" <<'PY'
import sqlite3, sys
db, want = sys.argv[1], int(sys.argv[2])
c = sqlite3.connect(db)
cols = lambda t: [r[1] for r in c.execute(f"pragma table_info({t})")]
run_tables = [t for (t,) in c.execute("select name from sqlite_master where type='table'")
              if t.startswith("run_")]
sets = [r[0] for r in c.execute("select id from sets order by id")]
have = c.execute("select count(*) from runs").fetchone()[0]
copy = 0
while have < want:
    copy += 1
    for set_id in sets:
        scols = [x for x in cols("sets") if x != "id"]
        c.execute(f"insert into sets ({','.join(scols)}) select "
                  + ",".join("name || ' #' || ?" if x == "name" else x for x in scols)
                  + " from sets where id = ?", (copy, set_id))
        new_set = c.execute("select last_insert_rowid()").fetchone()[0]
        tcols = [x for x in cols("targets") if x not in ("id", "set_id")]
        targets = {}
        for (tid,) in c.execute("select id from targets where set_id = ?", (set_id,)).fetchall():
            c.execute(f"insert into targets (set_id,{','.join(tcols)}) select ?,{','.join(tcols)} from targets where id = ?", (new_set, tid))
            targets[tid] = c.execute("select last_insert_rowid()").fetchone()[0]
        rcols = [x for x in cols("runs") if x not in ("id", "set_id", "target_id")]
        for (rid, tid) in c.execute("select id, target_id from runs where set_id = ?", (set_id,)).fetchall():
            c.execute(f"insert into runs (set_id,target_id,{','.join(rcols)}) select ?,?,{','.join(rcols)} from runs where id = ?",
                      (new_set, targets.get(tid), rid))
            new_run = c.execute("select last_insert_rowid()").fetchone()[0]
            for t in run_tables:
                ccols = [x for x in cols(t) if x != "run_id"]
                c.execute(f"insert into {t} (run_id,{','.join(ccols)}) select ?,{','.join(ccols)} from {t} where run_id = ?", (new_run, rid))
            wcols = [x for x in cols("warnings") if x not in ("id", "set_id", "run_id")]
            c.execute(f"insert into warnings (set_id,run_id,{','.join(wcols)}) select ?,?,{','.join(wcols)} from warnings where run_id = ?", (new_set, new_run, rid))
            have += 1
c.commit()
n_sets, n_runs = c.execute("select (select count(*) from sets), (select count(*) from runs)").fetchone()
print(f"store: {n_sets} sets, {n_runs} runs")
PY
start=$(date +%s.%N)
"$pgsurge" report --store "$work/grown.db" -o "$work/report" >/dev/null
end=$(date +%s.%N)
echo "report: $(echo "$end - $start" | bc) s, $(du -sh "$work/report" | cut -f1), $(ls "$work/report" | wc -l) files, index $(du -h "$work/report/index.html" | cut -f1), largest test page $(ls -S "$work/report"/run-*.html | head -1 | xargs du -h | cut -f1)"
