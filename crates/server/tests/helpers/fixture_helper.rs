//! Helper process of `tests/it/fixture_exit.rs` (not a test, not shipped): uses the shared
//! test server the way a test process does (`TestServer::shared()`, a database, one
//! query), prints `SERVER <postmaster pid> <data dir>`, then either returns from `main`
//! (argument `exit`: the normal end of a test process, where the atexit hook must stop
//! the server) or waits to be killed (argument `wait`: the watchdog must stop it).

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    if mode != "exit" && mode != "wait" {
        eprintln!("usage: pgsurge-server-fixture-helper exit|wait");
        std::process::exit(2);
    }
    let srv = pgsurge_server::testing::TestServer::shared();
    let db = srv.create_database("exit");
    assert_eq!(srv.psql(&db, "select 1").trim(), "1");
    println!(
        "SERVER {} {}",
        srv.cluster().pid(),
        srv.data_dir().display()
    );
    if mode == "wait" {
        std::thread::sleep(std::time::Duration::from_secs(300));
    }
}
