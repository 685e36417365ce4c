//! Test support shared by the suites of several crates; a dev-dependency only, never
//! linked into the binary.
//!
//! * [`CountingAllocator`]: the global allocator of the no-allocation tests, counting
//!   the allocations of the current thread.
//! * [`missing_prerequisite`]: the one gate of every test whose prerequisite (the
//!   reference pgbench, root, an extension, a tool) is missing: skip with a message, or
//!   fail when `PGSURGE_REQUIRE_PREREQUISITES=1` (CI sets it, so nothing skips there).
//! * [`PGBENCH`] and [`reference_pgbench`]: the real pgbench the differential tests
//!   compare with, through that gate.
//! * [`chromium`]: headless Chromium opening a page (a file or a local URL), with the
//!   flags a container needs and a deadline.
//! * [`live_page`]: the live page read over HTTP from the address a process says, and
//!   that process killed when the test ends.
//! * [`schema`]: a JSON document checked against a JSON Schema, its violations listed.
//! * [`hosts`]: simulated hosts in network namespaces (setup commands, ports, what the
//!   machine needs).
//! * [`scratch_dir`] (module `scratch`): the one way tests make files: a fresh
//!   directory under `TMPDIR`, removed when the test ends (pass or fail) unless
//!   `PGSURGE_KEEP_TEST_FILES=1`.
//! * [`uml`]: a command run inside User-mode Linux (a kernel with what this machine's
//!   may lack, such as netem), over this machine's own filesystem, with a deadline.
//! * [`kubelet_expand`]: `$(VAR)` in a container's command, expanded as the kubelet
//!   does, for the tests that run a Job's pods as processes.

#![warn(missing_docs)]

pub mod chromium;
pub mod hosts;
pub mod live_page;
pub mod schema;
mod scratch;
pub mod uml;

pub use scratch::{keep_test_files, scratch_dir, ScratchDir, KEEP_TEST_FILES};

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// A global allocator that counts allocations and reallocations per thread (a test
/// measures its own thread, unaffected by the harness's other threads). Install it in
/// a test binary with
/// `#[global_allocator] static GLOBAL: CountingAllocator = CountingAllocator;`.
pub struct CountingAllocator;

// SAFETY: every call is forwarded unchanged to the system allocator; counting touches
// only a const-initialized thread-local `Cell`, which does not allocate.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through this allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

fn count() {
    // `try_with`: during thread teardown the slot may be gone; such allocations are
    // not the measured code's.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

/// Allocations (and reallocations) counted on this thread so far, when
/// [`CountingAllocator`] is the global allocator (else always 0).
pub fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// Allocations made on this thread while `f` ran.
pub fn allocations_during(f: impl FnOnce()) -> u64 {
    let before = allocations();
    f();
    allocations() - before
}

/// The environment variable that turns a missing prerequisite into a failure.
pub const REQUIRE_PREREQUISITES: &str = "PGSURGE_REQUIRE_PREREQUISITES";

/// The one gate of every test that needs something the machine may lack (the reference
/// pgbench, root, an extension, a tool): call it where the prerequisite is missing,
/// then return. It prints `skipping: <what>`, unless `PGSURGE_REQUIRE_PREREQUISITES=1`
/// (CI sets it), in which case it panics so the test fails: nothing skips in CI.
pub fn missing_prerequisite(what: &str) {
    if std::env::var(REQUIRE_PREREQUISITES).is_ok_and(|v| v == "1") {
        panic!("{what}, and {REQUIRE_PREREQUISITES}=1 forbids skipping this test");
    }
    eprintln!("skipping: {what}");
}

/// The reference pgbench of the differential tests (Debian's `postgresql-client`).
pub const PGBENCH: &str = "/usr/bin/pgbench";

/// [`PGBENCH`] when it is installed; else `None`, through [`missing_prerequisite`]
/// (so CI fails instead of skipping).
pub fn reference_pgbench() -> Option<&'static str> {
    if std::path::Path::new(PGBENCH).exists() {
        Some(PGBENCH)
    } else {
        missing_prerequisite(&format!("{PGBENCH} not found (install postgresql-client)"));
        None
    }
}

/// `$(NAME)` replaced by `env[NAME]` as the kubelet expands a container's command and
/// arguments: `$$` is a literal `$`, and a reference to an unknown variable, or one
/// that is not closed, stays as written.
pub fn kubelet_expand<K: std::borrow::Borrow<str> + Ord>(
    s: &str,
    env: &std::collections::BTreeMap<K, String>,
) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(r) = after.strip_prefix('$') {
            out.push('$');
            rest = r;
        } else if let Some(body) = after.strip_prefix('(') {
            match body.find(')') {
                Some(end) => {
                    let name = &body[..end];
                    match env.get(name) {
                        Some(v) => out.push_str(v),
                        None => {
                            out.push_str("$(");
                            out.push_str(name);
                            out.push(')');
                        }
                    }
                    rest = &body[end + 1..];
                }
                None => {
                    out.push_str(&rest[i..]);
                    rest = "";
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Whether the process runs as root (tests that mount, make device nodes or drop
/// privileges need it).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Puts the calling thread, and every process it starts from now on (servers, clients,
/// their backends), ahead of the machine's other work: nice −10 when root, unchanged
/// otherwise. For tests that measure a rate: what they judge (a warm-up's end, a
/// verdict's precision) is the workload's, and a build running beside them would move
/// the rate. Returns the nice value in force.
pub fn ahead_of_other_work() -> i32 {
    if is_root() {
        // SAFETY: setpriority with PRIO_PROCESS and who = 0 changes only the calling
        // thread's nice value (Linux keeps it per thread); children inherit it.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, -10) };
    }
    // SAFETY: getpriority has no preconditions; -1 is also a valid nice value, which is
    // all this returns for it.
    unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }
}

/// The environment variable naming a PostgreSQL release tarball for the tests that build
/// PostgreSQL from source (`.ci/run` sets it from `shared/tools/postgres-tarball.sh`).
pub const PG_TARBALL_ENV: &str = "PGSURGE_PG_TARBALL";

/// The PostgreSQL release tarball of [`PG_TARBALL_ENV`]; else `None`, through
/// [`missing_prerequisite`].
pub fn postgres_tarball() -> Option<std::path::PathBuf> {
    match std::env::var_os(PG_TARBALL_ENV).map(std::path::PathBuf::from) {
        Some(p) if p.is_file() => Some(p),
        _ => {
            missing_prerequisite(&format!(
                "{PG_TARBALL_ENV} does not name a PostgreSQL release tarball"
            ));
            None
        }
    }
}

/// The path of `command` on `PATH`; else `None`, through [`missing_prerequisite`].
pub fn command_path(command: &str) -> Option<std::path::PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(command))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        missing_prerequisite(&format!("{command} is not on PATH"));
    }
    found
}

/// Held by the tests that build PostgreSQL or measure a speed difference, so that
/// they run one at a time within a test binary: two builds at once on a small
/// machine are no faster than one after the other, and a build beside a
/// measurement turns its spread into noise that can hide a regression.
pub fn one_heavy_test_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());
    HEAVY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Where the tests keep PostgreSQL built from source (pgsurge's build cache for tests,
/// kept between runs like cargo's `target/`): `PGSURGE_TEST_BUILD_CACHE`, else
/// `/var/cache/pgsurge-test` for root (the server user must reach the binaries),
/// else `~/.cache/pgsurge-test`.
pub fn build_cache_dir() -> std::path::PathBuf {
    if let Some(d) = std::env::var_os("PGSURGE_TEST_BUILD_CACHE").filter(|d| !d.is_empty()) {
        return d.into();
    }
    if is_root() {
        return "/var/cache/pgsurge-test".into();
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into());
    std::path::Path::new(&home).join(".cache/pgsurge-test")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubelet_expansion_follows_the_kubelet() {
        let env: std::collections::BTreeMap<&str, String> =
            [("A", "1".to_string()), ("B", "x y".to_string())].into();
        assert_eq!(kubelet_expand("$(A)-$(B)", &env), "1-x y");
        assert_eq!(
            kubelet_expand("$$(A) $(C) $(A $$", &env),
            "$(A) $(C) $(A $$"
        );
        assert_eq!(kubelet_expand("cost: 5$", &env), "cost: 5$");
    }

    #[test]
    fn a_missing_prerequisite_fails_only_when_required() {
        // One test touches the variable, so no other test races with it.
        std::env::remove_var(REQUIRE_PREREQUISITES);
        missing_prerequisite("nothing to compare with");
        std::env::set_var(REQUIRE_PREREQUISITES, "1");
        let failed = std::panic::catch_unwind(|| missing_prerequisite("no pgbench")).is_err();
        std::env::set_var(REQUIRE_PREREQUISITES, "0");
        missing_prerequisite("no pgbench");
        std::env::remove_var(REQUIRE_PREREQUISITES);
        assert!(
            failed,
            "with {REQUIRE_PREREQUISITES}=1 a missing prerequisite must fail"
        );
    }
}
