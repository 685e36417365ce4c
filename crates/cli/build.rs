//! Link settings of the `pgsurge` binary.
//!
//! The functions every statement of a run goes through (the driver loop, the client
//! machine, reply reading, request writing, `\set`, the recorder) are placed in sections
//! named `.text.hot.pgsurge` (`link_section` on each). Asked to keep that prefix, the
//! linker puts them together in one `.text.hot` range instead of spread over the
//! binary's megabytes of code: each time a client thread wakes up after the server ran on
//! its core, the code it needs is then a few contiguous pages to fetch back into the
//! caches and TLB rather than a dozen scattered ones (client user time per tpcb-like
//! transaction at `-c 8` about -5 %, same instructions).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        // Understood by lld (Rust's default linker here) and by GNU ld since 2.31.
        println!("cargo:rustc-link-arg-bins=-Wl,-z,keep-text-section-prefix");
    }
}
