//! What a build was made from (`build.json` beside every build, and the build facts
//! of the tests that use it), and the hex form of hashes.

use serde::{Deserialize, Serialize};

/// What a build was made from, stored beside it (`build.json`) and in the manifests of
/// the runs that use it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildInfo {
    /// The cache key (hex).
    pub key: String,
    /// What the source was, for people (`git checkout /src at 1a2b3c4 (master)`).
    pub source: String,
    /// The commit id, for a git source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The ref asked for, for a git source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    /// The patches in the order applied: file name and SHA-256 of the bytes.
    pub patches: Vec<PatchInfo>,
    /// The configure (or meson) arguments given.
    pub configure: Vec<String>,
    /// `autoconf` or `meson`.
    pub system: String,
    /// The contrib modules built.
    pub contrib: Vec<String>,
    /// The compiler's version line.
    pub compiler: String,
    /// Built for profiling (frame pointers and debug symbols added to the flags).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub profiling: bool,
    /// The seed of a layout build: the same objects as the build without it, linked by
    /// LLVM's `lld` with every input section shuffled in this seed's order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout_seed: Option<u64>,
    /// SHA-256 of the installed `postgres` binary (hex): builds that differ in layout
    /// only differ here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgres_sha256: Option<String>,
    /// `pg_config --configure` of the result.
    pub pg_configure: String,
    /// `pg_config --version` of the result.
    pub version: String,
    /// Options that make timings meaningless (`--enable-cassert`, `-O0`, …).
    pub timing_hazards: Vec<String>,
    /// The C files `make` compiled (autoconf builds; ninja counts its own steps): the
    /// total a later build of the same kind is measured against while it compiles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_compiled: Option<u64>,
    /// Seconds the build took.
    pub seconds: f64,
    /// When it finished (Unix seconds).
    pub finished_at: u64,
}

/// One applied patch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PatchInfo {
    /// The file name.
    pub name: String,
    /// SHA-256 of its bytes (hex).
    pub sha256: String,
}

/// Lower-case hex of bytes.
pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
