//! A pack's load records that it finished (the load marker): a run refuses a database
//! whose last load did not finish, a campaign loads it again, and the loader's own
//! variables (`:unit`, `:scale`) cannot be set by `-D` or a pack parameter.

use std::path::Path;

use pgsurge_server::testing::TestServer;

use crate::workload_common::{num, pgsurge, Out};

fn ok(o: &Out) {
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
}

fn replace_in(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{from} not in {}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn a_load_that_did_not_finish_is_refused_by_a_run_and_loaded_again_by_a_campaign() {
    let srv = TestServer::shared();
    let db = srv.create_database("workload_marker");
    let scratch = pgsurge_testkit::scratch_dir("workload-marker");
    let dir = scratch.path().join("kv");
    let d = dir.to_str().unwrap();
    ok(&pgsurge(srv, &["workload", "new", d]));
    let load = |scale: &str| {
        pgsurge(
            srv,
            &[
                "bench",
                "--workload",
                d,
                "-i",
                "-s",
                scale,
                "--init-jobs",
                "1",
                &db,
            ],
        )
    };
    let run = || pgsurge(srv, &["bench", "--workload", d, "-t", "10", &db]);

    // A load that finished: the run measures.
    ok(&load("1"));
    ok(&run());

    // The next load fails at unit 2 of 3: unit 1's rows are in (the scale query says
    // 1, as after the load before), no key, no index.
    let step = dir.join("load/kv.sql");
    let original = std::fs::read_to_string(&step).unwrap();
    replace_in(
        &step,
        "INSERT INTO kv",
        "SELECT 1 / (:unit - 2);\nINSERT INTO kv",
    );
    let o = load("3");
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(
        o.stderr.contains("unit 2: ERROR:  division by zero"),
        "{}",
        o.stderr
    );
    assert_eq!(num(srv, &db, "select count(*) from kv"), 1000.0);
    // The pack as it was: the same loader as the load that finished.
    std::fs::write(&step, &original).unwrap();

    let o = run();
    assert_eq!(o.code, 1, "a half-loaded pack was measured:\n{}", o.stdout);
    assert!(
        o.stderr
            .contains("pgbench: error: workload kv is not loaded: "),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains(&format!(
            "hint: load it with: pgsurge bench --workload {d} -i"
        )),
        "{}",
        o.stderr
    );
    assert!(!o.stdout.contains("tps = "), "{}", o.stdout);

    // A campaign on the same database loads it again instead of reusing it.
    let file = scratch.path().join("c.toml");
    std::fs::write(
        &file,
        format!(
            "[campaign]\nname = \"marker\"\n[[target]]\nname = \"t\"\nconninfo = \"{}\"\n\
             [matrix]\nscales = [1]\nclients = [1]\nscripts = [{{ workload = \"{d}\" }}]\n\
             [run]\ntransactions = 10\n",
            srv.conninfo(&db)
        ),
    )
    .unwrap();
    let store = scratch.path().join("r.db");
    let o = pgsurge(
        srv,
        &[
            "campaign",
            "run",
            file.to_str().unwrap(),
            "--store",
            store.to_str().unwrap(),
        ],
    );
    ok(&o);
    assert!(
        o.stderr
            .contains("loading workload kv at scale 1 (workload kv is not loaded: "),
        "the campaign reused a half-loaded pack:\n{}",
        o.stderr
    );
    // Its load finished: the key is there, and a run measures again.
    assert_eq!(
        num(
            srv,
            &db,
            "select count(*) from pg_constraint where conrelid = 'kv'::regclass and contype = 'p'"
        ),
        1.0
    );
    assert_eq!(
        srv.psql(&db, "select pack, scale from pgsurge_workload_load")
            .trim(),
        "kv|1"
    );
    ok(&run());
}

#[test]
fn the_loaders_own_variables_cannot_be_set() {
    let srv = TestServer::shared();
    let db = srv.create_database("workload_own_variables");
    let scratch = pgsurge_testkit::scratch_dir("workload-own-variables");
    let dir = scratch.path().join("kv");
    let d = dir.to_str().unwrap();
    ok(&pgsurge(srv, &["workload", "new", d]));
    for define in ["unit=7", "scale=9"] {
        let o = pgsurge(
            srv,
            &["bench", "--workload", d, "-i", "-s", "2", "-D", define, &db],
        );
        assert_eq!(o.code, 1, "-D {define}: {}", o.stderr);
        let name = define.split('=').next().unwrap();
        assert!(
            o.stderr
                .contains(&format!("workload kv: parameter {name}: the loader sets")),
            "-D {define}: {}",
            o.stderr
        );
        // Refused before the first statement: the schema was not even created.
        assert_eq!(
            srv.psql(&db, "select to_regclass('kv') is null").trim(),
            "t",
            "-D {define}"
        );
    }
    // Nor a parameter of the pack.
    replace_in(
        &dir.join("workload.toml"),
        "read_percent = 80",
        "read_percent = 80\nunit = 1",
    );
    let o = pgsurge(srv, &["bench", "--workload", d, "-i", "-s", "2", &db]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(
        o.stderr
            .contains("key `parameters.unit`: the loader sets :unit itself"),
        "{}",
        o.stderr
    );
}
