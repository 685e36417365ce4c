//! The standbys' lag read on a real primary: the bytes not replayed grow while a
//! standby's replay is paused and the primary writes, and shrink once it resumes.

use std::time::{Duration, Instant};

use pgsurge_observe::lag::read;
use pgsurge_observe::Pg;
use pgsurge_server::{ClusterBuilder, Topology};
use pgsurge_wire::ConnConfig;

fn bytes(pg: &mut Pg) -> i64 {
    let samples = read(pg, 0.0).expect("the lag");
    assert_eq!(samples.len(), 1, "{samples:?}");
    assert_eq!(samples[0].replica, "replica1");
    samples[0].bytes
}

#[test]
fn lag_bytes_grow_while_replay_is_paused_and_shrink_after_it_resumes() {
    let builder = ClusterBuilder::new()
        .settings(pgsurge_server::testing::TEST_SETTINGS.iter().copied())
        .database("bench");
    let topo = Topology::start(builder, 1, false).expect("a primary and a standby");
    let (primary, standby) = (topo.primary(), &topo.replicas()[0]);
    let conn = ConnConfig::parse(&primary.conninfo("postgres")).unwrap();
    let mut pg = Pg::connect(&conn).unwrap();
    standby.pause_replay(true).unwrap();
    let write = |n: u32| {
        let sql = format!("CREATE TABLE t{n} AS SELECT g, repeat('x', 100) AS pad FROM generate_series(1, 20000) g");
        primary.psql("bench", &sql).unwrap();
    };
    // A pause asked of an idle standby takes hold at its next record, and the standby
    // reports what it replayed a little later: write until the lag shows.
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut n = 0;
    let paused = loop {
        n += 1;
        write(n);
        let b = bytes(&mut pg);
        if b > 0 {
            break b;
        }
        assert!(Instant::now() < deadline, "no lag while replay is paused");
        std::thread::sleep(Duration::from_millis(50));
    };
    write(n + 1);
    let more = loop {
        let b = bytes(&mut pg);
        if b > paused {
            break b;
        }
        assert!(
            Instant::now() < deadline,
            "{paused} then {b} bytes behind while replay is paused"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    standby.pause_replay(false).unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let now = bytes(&mut pg);
        if now < more {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still {now} bytes behind after resuming"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
