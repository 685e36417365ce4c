//! PostgreSQL built from source, cached: `pgsurge server build` and the `source`
//! targets of campaigns.
//!
//! A build is known by its inputs: the source (a commit id, or a hash of a tree or a
//! tarball), the bytes of each patch, the configure arguments, the build system, the
//! contrib modules and the compiler's version. Those make a key; the installation lives
//! under `<cache>/builds/<key>/install` and a second request with the same inputs
//! returns it without compiling anything.
//!
//! The steps, each in its own module, on `record` (what a build was made from, the
//! ground floor): `source` (what the source is and its identity;
//! copying it into a private work directory, so the user's tree or checkout is never
//! touched), `patches` (applying them in order), `compile` (configure or meson, make or
//! ninja, install, with progress and a log), `cache` (keys, the lock that keeps two
//! builds of one key apart, listing, and pruning all but the builds in use).

mod cache;
mod compile;
mod patches;
mod record;
mod source;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::error::{Result, ServerError};

pub use cache::{build_users, list_builds, prune_builds, BuildUser, CachedBuild, Pruned};
pub use compile::{elapsed_text, BuildSystem};
pub use record::{BuildInfo, PatchInfo};

/// The contrib modules built by default: those a benchmark campaign loads or reads.
pub const DEFAULT_CONTRIB: &[&str] = &[
    "pg_stat_statements",
    "pg_prewarm",
    "pg_buffercache",
    "pg_visibility",
    "pgstattuple",
    "pg_freespacemap",
];

/// What to build.
#[derive(Debug, Clone, Default)]
pub struct BuildRequest {
    /// A source tree, a git checkout or a release tarball (`.tar.gz`, `.tar.bz2`, …).
    pub source: PathBuf,
    /// A commit, branch or tag of a git checkout; none: `HEAD` plus the uncommitted
    /// changes to tracked files.
    pub git_ref: Option<String>,
    /// Patches applied in order (`git apply`, else `patch -p1`).
    pub patches: Vec<PathBuf>,
    /// Arguments for `configure` (or `meson setup`).
    pub configure: Vec<String>,
    /// `auto` (configure when the tree has it, else meson), `autoconf` or `meson`.
    pub system: BuildSystem,
    /// Contrib modules to build and install (`None`: [`DEFAULT_CONTRIB`]; meson builds
    /// all of contrib whatever this says).
    pub contrib: Option<Vec<String>>,
    /// Parallel jobs (default: the online CPUs).
    pub jobs: Option<usize>,
    /// Built for profiling: [`PROFILING_CFLAGS`] added to the compiler's flags (the
    /// optimisation is left as it is), in a cache entry of its own.
    pub profiling: bool,
    /// A layout build: the objects of the build without a seed (ccache hits), linked
    /// by LLVM's `lld` with every input section shuffled in this seed's order, in a
    /// cache entry of its own. Builds of one source that differ only in their seed
    /// differ only in code layout.
    pub layout_seed: Option<u64>,
}

/// The compiler flags of a build for profiling: frame pointers, so that a profiler
/// can walk every stack to `main`, and debug symbols.
pub const PROFILING_CFLAGS: &str = "-fno-omit-frame-pointer -g";

/// A finished (or cached) build.
#[derive(Debug, Clone)]
pub struct Built {
    /// The installation's `bin` directory.
    pub bin_dir: PathBuf,
    /// What it was built from.
    pub info: BuildInfo,
    /// True when it came from the cache.
    pub cached: bool,
}

/// Whether a request is built already, without building it (for `campaign plan`).
#[derive(Debug, Clone)]
pub struct Planned {
    /// The cache key (hex).
    pub key: String,
    /// The source, for people.
    pub source: String,
    /// The installation's `bin` directory once built.
    pub bin_dir: PathBuf,
    /// True when the cache holds it.
    pub cached: bool,
    /// Options among the configure arguments that make timings meaningless.
    pub timing_hazards: Vec<String>,
}

/// Works out the key of `req` and whether the cache holds it. Reads the source (a
/// tree or tarball is hashed) but builds nothing.
pub fn plan(req: &BuildRequest) -> Result<Planned> {
    let inputs = Inputs::read(req)?;
    let cache = cache::BuildCache::open()?;
    let entry = cache.entry(&inputs.key);
    Ok(Planned {
        key: inputs.key.clone(),
        source: inputs.source.describe(),
        bin_dir: entry.bin_dir(),
        cached: entry.info().is_some(),
        timing_hazards: timing_hazards(&req.configure.join(" "), ""),
    })
}

/// Builds `req` (or returns the cached build of the same inputs), telling `progress`
/// what it does.
pub fn build(req: &BuildRequest, progress: &mut dyn Write) -> Result<Built> {
    let inputs = Inputs::read(req)?;
    if req.layout_seed.is_some() {
        compile::check_layout_linker()?;
    }
    let cache = cache::BuildCache::open()?;
    let entry = cache.entry(&inputs.key);
    if let Some(info) = entry.info() {
        return Ok(Built {
            bin_dir: entry.bin_dir(),
            info,
            cached: true,
        });
    }
    let _lock = entry.lock(progress)?;
    // Another process may have finished the same build while we waited for the lock.
    if let Some(info) = entry.info() {
        return Ok(Built {
            bin_dir: entry.bin_dir(),
            info,
            cached: true,
        });
    }
    let started = Instant::now();
    let _ = writeln!(
        progress,
        "pgsurge: building PostgreSQL from {} (build {})",
        inputs.source.describe(),
        short(&inputs.key)
    );
    entry.clear()?;
    let built = compile_into(req, &inputs, &entry, progress, started);
    if built.is_err() {
        // A failed build keeps its log (named in the error) and nothing else.
        entry.abandon();
    }
    built
}

/// The steps of a build that is not cached: source, patches, compile, record.
fn compile_into(
    req: &BuildRequest,
    inputs: &Inputs,
    entry: &cache::Entry,
    progress: &mut dyn Write,
    started: Instant,
) -> Result<Built> {
    let work = entry.work_dir();
    let src = work.join("src");
    std::fs::create_dir_all(&src).map_err(|e| ServerError::io(&src, e))?;
    let mut log = compile::BuildLog::create(&entry.log_path(), expected_files(req, inputs))?;
    let _ = writeln!(progress, "  preparing the source");
    inputs.source.materialize(&src, &mut log)?;
    for patch in &req.patches {
        let _ = writeln!(progress, "  applying {}", patch.display());
        patches::apply(&src, patch, &mut log)?;
    }
    let system = compile::BuildSystem::choose(req.system, &src)?;
    let plan = compile::CompilePlan {
        src: &src,
        build: &work.join("build"),
        install_dir: &entry.install_dir(),
        configure: &req.configure,
        contrib: &inputs.contrib,
        jobs: req.jobs.unwrap_or_else(online_cpus).max(1),
        system,
        extra_cflags: req.profiling.then_some(PROFILING_CFLAGS),
        layout_seed: req.layout_seed,
    };
    let files_compiled = plan.run(&mut log, progress)?;
    let bin_dir = entry.bin_dir();
    let pg_config = bin_dir.join("pg_config");
    let pg_configure = capture(&pg_config, "--configure").unwrap_or_default();
    let cflags = capture(&pg_config, "--cflags").unwrap_or_default();
    let info = BuildInfo {
        key: inputs.key.clone(),
        source: inputs.source.describe(),
        commit: inputs.source.commit().map(str::to_owned),
        git_ref: req.git_ref.clone(),
        patches: inputs.patches.clone(),
        configure: req.configure.clone(),
        system: system.name().to_owned(),
        contrib: inputs.contrib.clone(),
        compiler: inputs.compiler.clone(),
        profiling: req.profiling,
        layout_seed: req.layout_seed,
        postgres_sha256: file_sha256(&bin_dir.join("postgres")),
        timing_hazards: timing_hazards(
            &format!("{} {pg_configure}", req.configure.join(" ")),
            &cflags,
        ),
        pg_configure,
        version: capture(&pg_config, "--version").unwrap_or_default(),
        files_compiled,
        seconds: 0.0,
        finished_at: 0,
    };
    // The build's time is its whole wall time, the removal of its work tree included
    // (several hundred MB: seconds on a busy disk), the same in the log, the record
    // (`server builds`) and the line printed now.
    entry.discard_work()?;
    let took = started.elapsed();
    let info = BuildInfo {
        seconds: took.as_secs_f64(),
        finished_at: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        ..info
    };
    log.note(&format!(
        "\n### built in {} (wall time, from the start of the build to its installation \
         in the cache)\n",
        compile::elapsed_text(took)
    ));
    entry.finish(&info)?;
    let _ = writeln!(
        progress,
        "  built in {}: {}",
        compile::elapsed_text(took),
        bin_dir.display()
    );
    Ok(Built {
        bin_dir,
        info,
        cached: false,
    })
}

/// The files a `make` build of `req` is expected to compile: what the newest cached
/// autoconf build with the same configure arguments and contrib modules compiled (a
/// bisect's or a patch test's earlier build of the same tree); None when there is none.
fn expected_files(req: &BuildRequest, inputs: &Inputs) -> Option<u64> {
    let builds = list_builds().ok()?;
    builds
        .iter()
        .map(|b| &b.info)
        .filter(|i| {
            i.system == compile::BuildSystem::Autoconf.name()
                && i.configure == req.configure
                && i.contrib == inputs.contrib
        })
        .filter_map(|i| Some((i.finished_at, i.files_compiled?)))
        .max()
        .map(|(_, files)| files)
}

/// Everything that determines the binaries, read once.
struct Inputs {
    source: source::Source,
    patches: Vec<PatchInfo>,
    contrib: Vec<String>,
    compiler: String,
    key: String,
}

impl Inputs {
    fn read(req: &BuildRequest) -> Result<Inputs> {
        let source = source::Source::identify(&req.source, req.git_ref.as_deref())?;
        let patches = req
            .patches
            .iter()
            .map(|p| patches::describe(p))
            .collect::<Result<Vec<_>>>()?;
        let contrib = match &req.contrib {
            Some(list) => list.clone(),
            None => DEFAULT_CONTRIB.iter().map(|s| s.to_string()).collect(),
        };
        for module in &contrib {
            if module.is_empty()
                || !module
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                return Err(ServerError::Invalid(format!(
                    "`{module}` is not a contrib module name"
                )));
            }
        }
        if let Some(arg) = req.configure.iter().find(|a| sets_prefix(a)) {
            return Err(ServerError::Invalid(format!(
                "`{arg}`: pgsurge chooses where a build is installed (in its build cache); \
                 leave the prefix out of the configure arguments"
            )));
        }
        let compiler = compile::compiler_version()?;
        let key = cache::key(&cache::KeyParts {
            source: &source.identity(),
            patches: &patches,
            configure: &req.configure,
            system: req.system,
            contrib: &contrib,
            compiler: &compiler,
            profiling: req.profiling,
            layout_seed: req.layout_seed,
        });
        Ok(Inputs {
            source,
            patches,
            contrib,
            compiler,
            key,
        })
    }
}

/// The options in a configure line or in compiler flags that make timings meaningless:
/// assertions, little or no optimization (`-O0`, `-O1`, `-O`, `-Og`; meson's
/// `optimization` 0, 1 or g and `buildtype=debug`), sanitizers, valgrind support,
/// debug-only checks. A flag counts wherever it is: on its own, or in the value of a
/// variable or option (`CFLAGS=-O0`, `LDFLAGS=-fsanitize=address`, `-Dc_args=-Og`).
pub fn timing_hazards(configure: &str, cflags: &str) -> Vec<String> {
    let mut found = Vec::new();
    let words = configure
        .split_whitespace()
        .chain(cflags.split_whitespace())
        .map(|w| w.trim_matches(['\'', '"']));
    for w in words {
        // `NAME=VALUE` and `-DNAME=VALUE`: the value is a flag of its own too.
        let value = w
            .split_once('=')
            .map(|(_, v)| v.trim_matches(['\'', '"']))
            .filter(|v| v.starts_with('-'));
        for flag in std::iter::once(w).chain(value) {
            if is_timing_hazard(flag) && !found.iter().any(|f| f == flag) {
                found.push(flag.to_string());
            }
        }
    }
    found
}

fn is_timing_hazard(w: &str) -> bool {
    matches!(
        w,
        "--enable-cassert"
            | "-Dcassert=true"
            | "-O0"
            | "-O1"
            | "-O"
            | "-Og"
            | "-Doptimization=0"
            | "-Doptimization=1"
            | "-Doptimization=g"
            | "-Dbuildtype=debug"
            | "-DUSE_VALGRIND"
            | "-DCLOBBER_CACHE_ALWAYS"
    ) || w.starts_with("-fsanitize")
        || (w.starts_with("-Db_sanitize=") && w != "-Db_sanitize=none")
        || w.starts_with("-DDEBUG_DISCARD_CACHES")
        || w.starts_with("-DRELCACHE_FORCE_RELEASE")
        || w.starts_with("-DCATCACHE_FORCE_RELEASE")
}

/// The first 12 characters of a key, as shown to people.
pub fn short(key: &str) -> &str {
    &key[..key.len().min(12)]
}

fn online_cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Whether a configure or meson argument sets where the build is installed, in any
/// form the tools accept: autoconf takes `--prefix` and `--exec-prefix` abbreviated
/// down to `--p` and `--ex` (with `=DIR` or DIR as the next argument), their one-dash
/// spellings `-prefix` and `-exec-prefix`, `--exec_prefix`, and a `prefix=DIR` or
/// `exec_prefix=DIR` argument as a variable; meson takes `--prefix` (abbreviated by
/// its option parser too), `-Dprefix=DIR` and `prefix=DIR` after a lone `-D`.
fn sets_prefix(arg: &str) -> bool {
    let name = arg.split_once('=').map_or(arg, |(name, _)| name);
    if arg.contains('=') && matches!(name, "prefix" | "exec_prefix" | "-Dprefix") {
        return true;
    }
    if let Some(long) = name.strip_prefix("--") {
        return (!long.is_empty() && "prefix".starts_with(long))
            || (long.len() >= 2 && "exec-prefix".starts_with(long))
            || long == "exec_prefix";
    }
    matches!(name, "-prefix" | "-exec-prefix")
}

/// The largest patch read: a patch is text a person can review, never this large.
const MAX_PATCH_BYTES: u64 = 64 << 20;

/// The largest source tarball read (PostgreSQL's are about 30 MB).
const MAX_TARBALL_BYTES: u64 = 4 << 30;

/// Opens `path` to read it when it is a regular file of at most `limit` bytes. A FIFO,
/// device, socket or directory is refused, naming the path and what it is: it is opened
/// without blocking, so a FIFO with no writer cannot hang the build, and it is never
/// read, so a device like `/dev/zero` cannot fill memory. `what` says what the file is
/// for (`patch`).
pub(crate) fn open_regular(path: &Path, limit: u64, what: &str) -> Result<std::fs::File> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(|e| ServerError::io(path, e))?;
    let meta = file.metadata().map_err(|e| ServerError::io(path, e))?;
    let kind = meta.file_type();
    let not_regular = if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_char_device() || kind.is_block_device() {
        Some("a device")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_dir() {
        Some("a directory")
    } else {
        None
    };
    if let Some(it) = not_regular {
        return Err(ServerError::Invalid(format!(
            "{}: the {what} is {it}, not a regular file; it is not read",
            path.display()
        )));
    }
    if meta.len() > limit {
        return Err(ServerError::Invalid(format!(
            "{}: the {what} is {} bytes, more than the {} a {what} may have",
            path.display(),
            meta.len(),
            limit
        )));
    }
    Ok(file)
}

/// SHA-256 (hex) of a file's bytes; None when it cannot be read.
fn file_sha256(path: &Path) -> Option<String> {
    use sha2::{Digest, Sha256};
    let mut file = std::fs::File::open(path).ok()?;
    let mut h = Sha256::new();
    std::io::copy(&mut file, &mut h).ok()?;
    Some(record::hex(&h.finalize()))
}

fn capture(program: &Path, arg: &str) -> Option<String> {
    let out = std::process::Command::new(program).arg(arg).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_among_the_configure_arguments_is_recognised() {
        for arg in [
            "--prefix=/opt/pg",
            "--prefix",
            "-prefix=/opt/pg",
            "-prefix",
            "--prefi=/opt/pg",
            "--pre=/opt/pg",
            "--pre",
            "--p=/opt/pg",
            "--exec-prefix=/opt/pg",
            "--exec_prefix=/opt/pg",
            "--exec-pre=/opt/pg",
            "--ex=/opt/pg",
            "-exec-prefix=/opt/pg",
            "prefix=/opt/pg",
            "exec_prefix=/opt/pg",
            "-Dprefix=/opt/pg",
        ] {
            assert!(sets_prefix(arg), "{arg}");
        }
        for arg in [
            "--enable-debug",
            "--with-includes=/opt/prefix",
            "--program-prefix=pg-",
            "--with-perl",
            "--e",
            "CFLAGS=-O2",
            "-Dc_args=-O2",
            "-p",
        ] {
            assert!(!sets_prefix(arg), "{arg}");
        }
    }

    #[test]
    fn every_prefix_form_configure_takes_is_refused_before_any_work() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("src/backend")).unwrap();
        std::fs::write(d.path().join("configure"), "#!/bin/sh\n").unwrap();
        for arg in [
            "--pre=/tmp/x",
            "-prefix=/tmp/x",
            "--prefi=/tmp/x",
            "prefix=/tmp/x",
        ] {
            let req = BuildRequest {
                source: d.path().to_path_buf(),
                configure: vec![arg.to_string()],
                ..Default::default()
            };
            let e = plan(&req).unwrap_err().to_string();
            assert!(
                e.contains(arg) && e.contains("leave the prefix out"),
                "{arg}: {e}"
            );
        }
    }

    #[test]
    fn assertions_and_unoptimized_code_are_timing_hazards() {
        assert_eq!(
            timing_hazards(
                "'--prefix=/x' '--enable-cassert' '--enable-debug'",
                "-O2 -g"
            ),
            vec!["--enable-cassert"]
        );
        assert_eq!(
            timing_hazards("", "-O0 -fsanitize=address"),
            vec!["-O0", "-fsanitize=address"]
        );
        assert!(timing_hazards("--enable-debug --with-icu", "-O2").is_empty());
        // In a variable given to configure, as campaign plan sees it, and in the
        // quoted form pg_config --configure prints.
        for (configure, hazard) in [
            ("CFLAGS=-O0", "-O0"),
            ("CFLAGS=-O1", "-O1"),
            ("'CFLAGS=-Og -g'", "-Og"),
            ("CFLAGS=-O", "-O"),
            ("LDFLAGS=-fsanitize=address", "-fsanitize=address"),
            ("CPPFLAGS=-fsanitize=undefined", "-fsanitize=undefined"),
            ("-Dc_args=-O0", "-O0"),
            ("-Db_sanitize=address", "-Db_sanitize=address"),
            ("-Doptimization=g", "-Doptimization=g"),
            ("-Dbuildtype=debug", "-Dbuildtype=debug"),
        ] {
            assert_eq!(timing_hazards(configure, ""), vec![hazard], "{configure}");
        }
        for fine in [
            "CFLAGS=-O2",
            "CFLAGS=-O3 -march=native",
            "-Db_sanitize=none",
        ] {
            assert!(timing_hazards(fine, "").is_empty(), "{fine}");
        }
        assert_eq!(timing_hazards("-Dcassert=true", ""), vec!["-Dcassert=true"]);
    }
}
