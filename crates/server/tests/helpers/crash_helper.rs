//! Helper process of `tests/it/crash.rs` (not a test, not shipped): starts a cluster on
//! the data directory given as its argument (`temp`: a temporary one, as the test
//! fixture makes), prints `READY <postmaster pid> <data dir> <owner marker>`, and waits
//! to be killed. The test SIGKILLs it and checks what the crash left behind.

use std::path::PathBuf;

use pgsurge_server::ClusterBuilder;

fn main() {
    let Some(data) = std::env::args_os().nth(1) else {
        eprintln!("usage: pgsurge-server-crash-helper DATA_DIR|temp");
        std::process::exit(2);
    };
    let builder = if data == "temp" {
        ClusterBuilder::new()
    } else {
        ClusterBuilder::new().data_dir(PathBuf::from(data))
    };
    let cluster = match builder.start() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("crash helper: could not start the cluster: {e}");
            std::process::exit(1);
        }
    };
    let marker = std::fs::read_to_string(cluster.data_dir().join("pgsurge.owner"))
        .expect("a started cluster has its owner marker");
    println!(
        "READY {} {} {marker}",
        cluster.pid(),
        cluster.data_dir().display()
    );
    std::thread::sleep(std::time::Duration::from_secs(300));
}
