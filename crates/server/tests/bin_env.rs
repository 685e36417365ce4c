//! `PGSURGE_PG_BIN` overrides the binaries search (its own test process: the variable
//! is process-wide).

#[test]
fn pg_bin_env_overrides_discovery() {
    let found = pgsurge_server::PgBinaries::discover().expect("local binaries for the tests");
    let bogus = pgsurge_testkit::scratch_dir("bin-env");
    std::env::set_var(pgsurge_server::PG_BIN_ENV, bogus.path());
    let err = pgsurge_server::PgBinaries::discover().unwrap_err();
    assert!(err.to_string().contains("initdb"), "{err}");
    assert!(
        err.to_string()
            .contains(&bogus.path().display().to_string()),
        "{err}"
    );
    std::env::set_var(pgsurge_server::PG_BIN_ENV, found.bin_dir());
    let again = pgsurge_server::PgBinaries::discover().unwrap();
    assert_eq!(again, found);
    // --pg-bin DIR with a directory that is not a PostgreSQL bin directory.
    let err = pgsurge_server::BinarySource::Dir(bogus.path().into())
        .resolve()
        .unwrap_err();
    assert!(err.to_string().contains("no `initdb` program"), "{err}");
}
