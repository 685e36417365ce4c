//! The server host's metrics and manifest read through the server itself
//! (`pg_read_file`), against a real server: the `/proc` files of its host parse into
//! the same readings and manifest as the local ones.

use std::time::Duration;

use pgsurge_observe::hostmetrics::{self, HostRates, HostSource};
use pgsurge_observe::Pg;
use pgsurge_server::testing::TestServer;
use pgsurge_wire::ConnConfig;

#[test]
fn pg_read_file_reads_the_servers_host_through_the_server() {
    let srv = TestServer::shared();
    let config = ConnConfig::parse(&srv.conninfo("postgres")).unwrap();
    let mut pg = Pg::connect(&config).unwrap();
    assert!(hostmetrics::can_read_server_files(&mut pg));
    let m = hostmetrics::manifest_via_server(&mut pg, Some(&srv.data_dir().display().to_string()));
    let here = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(m["hostname"], here.trim(), "{m}");
    assert!(m["cpu"]["count"].as_u64().is_some_and(|n| n >= 1), "{m}");
    assert!(m["data_directory"]["fstype"].is_string(), "{m}");
    let source = HostSource::PgReadFile(config);
    let mut conn = hostmetrics::SourceConn::default();
    let mut rates = HostRates::default();
    let mut out = Vec::new();
    rates.push(
        1.0,
        hostmetrics::read(&source, &mut conn).unwrap(),
        "os",
        &[],
        true,
        &mut out,
    );
    std::thread::sleep(Duration::from_millis(300));
    rates.push(
        1.3,
        hostmetrics::read(&source, &mut conn).unwrap(),
        "os",
        &[],
        true,
        &mut out,
    );
    assert!(out.iter().any(|m| m.metric == "os.cpu.idle_pct"), "{out:?}");
    assert!(out.iter().any(|m| m.metric == "os.mem.dirty_mb"));
}
