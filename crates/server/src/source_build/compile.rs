//! Configuring, compiling and installing a prepared source tree: autoconf
//! (`configure`, `make`) or meson (`meson setup`, `ninja`), in a build directory beside
//! the source, with `ccache` when installed. Every command's output goes to the build
//! log; the terminal gets a line per step and, during long steps, a line every
//! half-minute.
//!
//! Every build is configured for the same prefix, [`BUILD_PREFIX`], installed into a
//! staging directory (`DESTDIR`) and moved to its cache entry: a PostgreSQL
//! installation finds its libraries and shared files relative to its binaries, so it
//! runs from anywhere. With one prefix the generated headers (`pg_config.h` records the
//! configure arguments) are the same from build to build, and ccache answers every
//! unchanged file from its direct cache without running the preprocessor.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Result, ServerError};

/// How often a long step reports that it is still going.
const PROGRESS_EVERY: Duration = Duration::from_secs(30);

/// The prefix every build is configured with (PostgreSQL's own default); the
/// installation is staged under it and moved to the cache entry.
pub(super) const BUILD_PREFIX: &str = "/usr/local/pgsql";

/// Which build system to use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BuildSystem {
    /// `configure` when the tree has it, else meson.
    #[default]
    Auto,
    /// `configure` and `make`.
    Autoconf,
    /// `meson setup` and `ninja`.
    Meson,
}

impl BuildSystem {
    /// Parses `auto`, `autoconf` (or `configure`) and `meson`.
    pub fn parse(text: &str) -> Option<BuildSystem> {
        match text {
            "auto" => Some(BuildSystem::Auto),
            "autoconf" | "configure" | "make" => Some(BuildSystem::Autoconf),
            "meson" => Some(BuildSystem::Meson),
            _ => None,
        }
    }

    /// The name stored with a build.
    pub fn name(self) -> &'static str {
        match self {
            BuildSystem::Auto => "auto",
            BuildSystem::Autoconf => "autoconf",
            BuildSystem::Meson => "meson",
        }
    }

    /// The system used for the tree in `src`.
    pub(super) fn choose(asked: BuildSystem, src: &Path) -> Result<BuildSystem> {
        let has_configure = src.join("configure").is_file();
        let has_meson = src.join("meson.build").is_file();
        match asked {
            BuildSystem::Auto if has_configure => Ok(BuildSystem::Autoconf),
            BuildSystem::Auto if has_meson => Ok(BuildSystem::Meson),
            BuildSystem::Autoconf if has_configure => Ok(BuildSystem::Autoconf),
            BuildSystem::Meson if has_meson => Ok(BuildSystem::Meson),
            _ => Err(ServerError::Invalid(format!(
                "this source has no {} to build with",
                match asked {
                    BuildSystem::Meson => "meson.build",
                    BuildSystem::Autoconf => "configure script",
                    BuildSystem::Auto => "configure script or meson.build",
                }
            ))),
        }
    }
}

/// The build log: every command's output, kept on disk.
pub(super) struct BuildLog {
    path: PathBuf,
    file: File,
    /// The files `make` is expected to compile (from an earlier build of the same
    /// kind), for the progress lines.
    expected_files: Option<u64>,
}

impl BuildLog {
    pub(super) fn create(path: &Path, expected_files: Option<u64>) -> Result<BuildLog> {
        let file = File::create(path).map_err(|e| ServerError::io(path, e))?;
        Ok(BuildLog {
            path: path.to_path_buf(),
            file,
            expected_files,
        })
    }

    /// Where the log ends now.
    pub(super) fn offset(&mut self) -> u64 {
        self.file.stream_position().unwrap_or(0)
    }

    /// The compiler runs printed since `offset` (the files compiled).
    pub(super) fn compiles_since(&self, offset: u64) -> u64 {
        compiles_in(&self.text_since(offset))
    }

    fn text_since(&self, offset: u64) -> String {
        let Ok(mut f) = File::open(&self.path) else {
            return String::new();
        };
        let mut text = String::new();
        if f.seek(SeekFrom::Start(offset)).is_err() || f.read_to_string(&mut text).is_err() {
            return String::new();
        }
        text
    }

    pub(super) fn file(&mut self) -> &mut File {
        &mut self.file
    }

    pub(super) fn note(&mut self, text: &str) {
        let _ = self.file.write_all(text.as_bytes());
    }

    /// Runs a short command with its output in the log.
    pub(super) fn run(&mut self, step: &str, cmd: &mut Command) -> Result<()> {
        self.run_watched(step, cmd, &mut std::io::sink())
    }

    /// Runs a command with its output in the log, telling `progress` every
    /// half-minute how far it got; a failure carries the log's tail.
    pub(super) fn run_watched(
        &mut self,
        step: &str,
        cmd: &mut Command,
        progress: &mut dyn Write,
    ) -> Result<()> {
        let _ = writeln!(self.file, "\n### {step}: {cmd:?}");
        let out = self
            .file
            .try_clone()
            .map_err(|e| ServerError::io(&self.path, e))?;
        let err = self
            .file
            .try_clone()
            .map_err(|e| ServerError::io(&self.path, e))?;
        let start_offset = self.file.stream_position().unwrap_or(0);
        // A build step dies with the pgsurge that started it (even on SIGKILL), so a
        // killed build leaves no make running into the work directory that the next
        // build of the same key clears and reuses.
        // SAFETY: the closure makes one raw system call (prctl, async-signal-safe) and
        // touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                rustix::process::set_parent_process_death_signal(Some(
                    rustix::process::Signal::KILL,
                ))
                .map_err(std::io::Error::from)
            });
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| self.failed(step, &format!("could not run it: {e}")))?;
        let started = Instant::now();
        let mut next_report = started + PROGRESS_EVERY;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) => {}
                Err(e) => return Err(self.failed(step, &e.to_string())),
            }
            if Instant::now() >= next_report {
                next_report += PROGRESS_EVERY;
                let _ = writeln!(
                    progress,
                    "  {step}… {}{}",
                    elapsed_text(started.elapsed()),
                    self.progress_since(start_offset)
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        if status.success() {
            Ok(())
        } else {
            Err(self.failed(step, &format!("{status}")))
        }
    }

    /// How far a step got, read from its output: ninja's `[N/M]`, or the number of
    /// compiler runs `make` printed, of the total an earlier build compiled.
    fn progress_since(&self, offset: u64) -> String {
        progress_text(&self.text_since(offset), self.expected_files)
    }

    fn failed(&self, step: &str, why: &str) -> ServerError {
        let _ = writeln!(&self.file, "\n### {step} failed: {why}");
        ServerError::BuildFailed {
            step: format!("{step} ({why})"),
            log: self.path.clone(),
            tail: tail(&self.path, 30),
        }
    }
}

/// The compiler runs in a step's output: lines that compile one file (`-c`), not the
/// log's own lines (`### step: command`).
fn compiles_in(text: &str) -> u64 {
    text.lines()
        .filter(|l| !l.starts_with("### ") && l.contains(" -c "))
        .count() as u64
}

/// `, [312/2050]` (ninja's own count) or `, 312 of about 2050 files compiled` (`make`'s
/// compiler runs, of the total `expected` an earlier build compiled; without it, the
/// count alone).
fn progress_text(text: &str, expected: Option<u64>) -> String {
    if let Some(last) = text.lines().rev().find(|l| l.starts_with('[')) {
        if let Some(end) = last.find(']') {
            return format!(", {}", &last[..=end]);
        }
    }
    match (compiles_in(text), expected) {
        (0, _) => String::new(),
        (n, Some(total)) if total >= n => format!(", {n} of about {total} files compiled"),
        (n, _) => format!(", {n} files compiled"),
    }
}

/// The last `n` lines of a file.
fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The compiler `configure` will use: `$CC`, else `cc`.
fn compiler() -> String {
    std::env::var("CC")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .unwrap_or_else(|| "cc".into())
}

/// The first line of the compiler's `--version`, part of every build's key.
pub(super) fn compiler_version() -> Result<String> {
    let cc = compiler();
    let mut words = cc.split_whitespace();
    let program = words.next().unwrap_or("cc");
    let out = Command::new(program)
        .args(words)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            ServerError::Invalid(format!(
                "no C compiler (`{cc}`: {e}); install gcc or clang, or set CC"
            ))
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text.lines().next().unwrap_or("").trim().to_string())
}

/// A layout build links with LLVM's `lld`, whose `--shuffle-sections` (lld 13 and
/// later) places the input sections in the order a seed draws.
pub(super) fn check_layout_linker() -> Result<()> {
    let help = Command::new("ld.lld")
        .arg("--help")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    match help {
        Ok(out) if String::from_utf8_lossy(&out.stdout).contains("--shuffle-sections") => Ok(()),
        Ok(_) => Err(ServerError::Invalid(
            "a layout build links with LLVM's lld and its --shuffle-sections, which the \
             installed ld.lld lacks (lld 13 or later has it)"
                .into(),
        )),
        Err(e) => Err(ServerError::Invalid(format!(
            "a layout build links with LLVM's lld (`ld.lld`: {e}); install it \
             (Debian and Ubuntu: apt-get install lld)"
        ))),
    }
}

fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What one build compiles and where it installs.
pub(super) struct CompilePlan<'a> {
    pub(super) src: &'a Path,
    pub(super) build: &'a Path,
    pub(super) install_dir: &'a Path,
    pub(super) configure: &'a [String],
    pub(super) contrib: &'a [String],
    pub(super) jobs: usize,
    pub(super) system: BuildSystem,
    /// Flags added to the compiler's (after the optimisation configure chose).
    pub(super) extra_cflags: Option<&'a str>,
    /// A layout build's seed: the server linked by `lld`, its input sections shuffled.
    pub(super) layout_seed: Option<u64>,
}

impl CompilePlan<'_> {
    /// A command run in the build directory. ccache sees paths relative to the work
    /// directory, so builds of the same source in different cache entries (another
    /// patch, another commit) share its hits.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(self.build);
        if let Some(flags) = self.extra_cflags {
            // PostgreSQL's makefiles append COPT to every compile's CFLAGS, after the
            // optimisation configure chose (configure and meson do not read it).
            cmd.env("COPT", flags);
        }
        if std::env::var_os("CCACHE_BASEDIR").is_none() {
            cmd.env("CCACHE_BASEDIR", self.src.parent().unwrap_or(self.src));
        }
        cmd
    }

    /// Configures, compiles and installs; returns the files `make` compiled (None for
    /// meson).
    pub(super) fn run(&self, log: &mut BuildLog, progress: &mut dyn Write) -> Result<Option<u64>> {
        for module in self.contrib {
            if !self.src.join("contrib").join(module).is_dir() {
                return Err(ServerError::Invalid(format!(
                    "contrib module `{module}` is not in this source"
                )));
            }
        }
        std::fs::create_dir_all(self.build).map_err(|e| ServerError::io(self.build, e))?;
        let compiled = match self.system {
            BuildSystem::Meson => {
                self.meson(log, progress)?;
                None
            }
            _ => Some(self.autoconf(log, progress)?),
        };
        self.move_installation()?;
        Ok(compiled)
    }

    /// Where `make install` / `ninja install` put the files: the staging directory
    /// beside the build directory.
    fn stage(&self) -> PathBuf {
        self.build.with_file_name("stage")
    }

    /// Moves the staged installation to the cache entry's installation directory.
    fn move_installation(&self) -> Result<()> {
        let staged = self.stage().join(BUILD_PREFIX.trim_start_matches('/'));
        if let Some(parent) = self.install_dir.parent() {
            std::fs::create_dir_all(parent).map_err(|e| ServerError::io(parent, e))?;
        }
        if !staged.is_dir() {
            return Err(ServerError::Invalid(format!(
                "the install step put nothing in {} (it must install under $DESTDIR)",
                staged.display()
            )));
        }
        std::fs::rename(&staged, self.install_dir).map_err(|e| ServerError::io(&staged, e))
    }

    /// `make`, with a layout build's variables (see [`Self::layout_make_vars`]).
    fn make(&self, vars: &[String]) -> Command {
        let mut cmd = self.command("make");
        cmd.args(vars);
        cmd
    }

    /// A layout build's variables on make's command line, which reach every sub-make:
    ///
    /// * `LDFLAGS_EX_BE`, the flags of the server's link, `postgres`: the value
    ///   configure chose (the backend's own link flags, such as `-Wl,--export-dynamic`,
    ///   read from the configured `src/Makefile.global`), then LLVM's lld with every
    ///   input section shuffled in the seed's order. Only the backend's link reads it:
    ///   no compile command changes (each object is the one the build without a seed
    ///   made, a ccache hit) and pg_config's record of the link flags stays as
    ///   configure wrote it.
    /// * `BISON` and `FLEX`, the configured programs without `#line` directives
    ///   (`bison -l`; flex through a wrapper that removes them): the grammars and scanners are read from the source
    ///   tree by its absolute path, inside the cache entry, and the generated C would
    ///   name that path wherever it reports an error's file (`__FILE__`), so the
    ///   binary would hold the cache directory and a layout build made in another one
    ///   would differ from it. Without the directives the generated files are named
    ///   as the build directory's own, a relative path.
    ///
    /// Empty for a build without a seed.
    fn layout_make_vars(&self) -> Result<Vec<String>> {
        let Some(seed) = self.layout_seed else {
            return Ok(Vec::new());
        };
        let global = self.build.join("src/Makefile.global");
        let text = std::fs::read_to_string(&global).map_err(|e| ServerError::io(&global, e))?;
        let configured = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.trim_start().strip_prefix('='))
                .map(str::trim)
        };
        let link = configured("LDFLAGS_EX_BE").ok_or_else(|| {
            ServerError::Invalid(format!(
                "{} sets no LDFLAGS_EX_BE: a layout build cannot link this source's server",
                global.display()
            ))
        })?;
        // The shell of make's recipes reads the value: the glob is quoted.
        let mut vars = vec![format!(
            "LDFLAGS_EX_BE={link} -fuse-ld=lld '-Wl,--shuffle-sections=*={seed}'"
        )];
        if let Some(bison) = configured("BISON").filter(|p| !p.is_empty()) {
            vars.push(format!("BISON={bison} -l"));
        }
        if let Some(flex) = configured("FLEX").filter(|p| !p.is_empty()) {
            // flex -L keeps the directives of the scanner's own code blocks: a wrapper
            // removes every one from what it wrote.
            let wrapper = self.build.join("flex-without-lines");
            let script = format!(
                "#!/bin/sh\nfor a; do case $a in -o*) out=${{a#-o}};; esac; done\n\
                 {flex} -L \"$@\" || exit\n\
                 [ -z \"$out\" ] || sed -i '/^#line /d' \"$out\"\n"
            );
            std::fs::write(&wrapper, script).map_err(|e| ServerError::io(&wrapper, e))?;
            let executable = std::fs::Permissions::from_mode(0o755);
            std::fs::set_permissions(&wrapper, executable)
                .map_err(|e| ServerError::io(&wrapper, e))?;
            vars.push(format!("FLEX={}", wrapper.display()));
        }
        Ok(vars)
    }

    /// The autoconf build; returns the files its `make` steps compiled.
    fn autoconf(&self, log: &mut BuildLog, progress: &mut dyn Write) -> Result<u64> {
        let jobs = format!("-j{}", self.jobs);
        let mut configure = self.command(self.src.join("configure"));
        configure
            .arg(format!("--prefix={BUILD_PREFIX}"))
            .args(self.configure);
        if have("ccache") {
            configure.env("CC", format!("ccache {}", compiler()));
        }
        let _ = writeln!(progress, "  configuring");
        log.run_watched("configure", &mut configure, progress)?;
        let link = self.layout_make_vars()?;
        let link = link.as_slice();
        let _ = writeln!(progress, "  compiling with {} jobs", self.jobs);
        let compiling = log.offset();
        log.run_watched("make", self.make(link).arg(&jobs), progress)?;
        for module in self.contrib {
            log.run_watched(
                &format!("make contrib/{module}"),
                self.make(link)
                    .arg(&jobs)
                    .arg("-C")
                    .arg(format!("contrib/{module}")),
                progress,
            )?;
        }
        let compiled = log.compiles_since(compiling);
        let _ = writeln!(progress, "  installing");
        let destdir = format!("DESTDIR={}", self.stage().display());
        log.run_watched(
            "make install",
            self.make(link).arg("install").arg(&destdir),
            progress,
        )?;
        for module in self.contrib {
            log.run(
                &format!("make contrib/{module} install"),
                self.make(link)
                    .arg("-C")
                    .arg(format!("contrib/{module}"))
                    .arg("install")
                    .arg(&destdir),
            )?;
        }
        Ok(compiled)
    }

    fn meson(&self, log: &mut BuildLog, progress: &mut dyn Write) -> Result<()> {
        if self.layout_seed.is_some() {
            // meson passes link arguments to every link and records them in
            // pg_config's flags, so the build would differ in more than layout.
            return Err(ServerError::Invalid(
                "a layout build relinks the server with make's backend link flags: build \
                 with autoconf (configure and make)"
                    .into(),
            ));
        }
        if !have("meson") || !have("ninja") {
            return Err(ServerError::Invalid(
                "building with meson needs meson and ninja installed".into(),
            ));
        }
        let _ = writeln!(progress, "  configuring (meson)");
        let mut setup = self.command("meson");
        if let Some(flags) = self.extra_cflags {
            // CFLAGS from the environment join the flags of meson's buildtype.
            let cflags = std::env::var("CFLAGS").unwrap_or_default();
            setup.env("CFLAGS", format!("{cflags} {flags}").trim());
        }
        log.run_watched(
            "meson setup",
            setup
                .arg("setup")
                .arg(self.build)
                .arg(self.src)
                .arg(format!("--prefix={BUILD_PREFIX}"))
                .arg("--libdir=lib")
                .args(self.configure),
            progress,
        )?;
        let _ = writeln!(progress, "  compiling with {} jobs", self.jobs);
        log.run_watched(
            "ninja",
            self.command("ninja")
                .arg("-C")
                .arg(self.build)
                .arg(format!("-j{}", self.jobs)),
            progress,
        )?;
        let _ = writeln!(progress, "  installing");
        log.run_watched(
            "ninja install",
            self.command("ninja")
                .arg("-C")
                .arg(self.build)
                .arg("install")
                .env("DESTDIR", self.stage()),
            progress,
        )
    }
}

/// `4m12s`, `12.3s`: how long a build or a step took, as every output says it.
pub fn elapsed_text(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 60.0 {
        format!("{s:.1}s")
    } else {
        format!("{}m{:02}s", d.as_secs() / 60, d.as_secs() % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elapsed_reads_as_minutes_and_seconds() {
        assert_eq!(elapsed_text(Duration::from_millis(12_340)), "12.3s");
        assert_eq!(elapsed_text(Duration::from_secs(252)), "4m12s");
    }

    #[test]
    fn progress_counts_files_compiled_of_the_expected_total() {
        let make =
            "make -C src/backend\ngcc -O2 -c -o a.o a.c\ngcc -O2 -c -o b.o b.c\nar crs x.a\n";
        assert_eq!(
            progress_text(make, Some(2050)),
            ", 2 of about 2050 files compiled"
        );
        assert_eq!(progress_text(make, None), ", 2 files compiled");
        // More than the earlier build compiled: the count alone.
        assert_eq!(progress_text(make, Some(1)), ", 2 files compiled");
        assert_eq!(
            progress_text("[312/2050] Compiling C object x.o\n", None),
            ", [312/2050]"
        );
        assert_eq!(progress_text("checking for cc\n", Some(9)), "");
        // The count of a finished make step, as the build records it.
        let d = tempfile::tempdir().unwrap();
        let mut log = BuildLog::create(&d.path().join("build.log"), None).unwrap();
        log.run("configure", Command::new("echo").arg("configured"))
            .unwrap();
        let at = log.offset();
        log.run("make", Command::new("printf").arg(make)).unwrap();
        assert_eq!(log.compiles_since(at), 2);
        assert_eq!(log.compiles_since(0), 2);
    }

    #[test]
    fn a_failing_step_carries_the_log_tail() {
        let d = tempfile::tempdir().unwrap();
        let mut log = BuildLog::create(&d.path().join("build.log"), None).unwrap();
        let e = log
            .run(
                "configure",
                Command::new("sh").args([
                    "-c",
                    "echo checking for cc; echo no acceptable C compiler >&2; exit 1",
                ]),
            )
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("at configure") && e.contains("no acceptable C compiler"),
            "{e}"
        );
        assert!(e.contains("build.log"), "{e}");
    }
}
