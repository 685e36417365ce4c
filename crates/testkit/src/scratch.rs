//! Scratch directories of tests: made under the temporary directory (`TMPDIR`), removed
//! when the test ends, pass or fail, and kept for a look afterwards only when
//! `PGSURGE_KEEP_TEST_FILES=1`.

use std::ffi::OsStr;
use std::ops::Deref;
use std::path::{Path, PathBuf};

/// The environment variable that keeps the files of tests: with
/// `PGSURGE_KEEP_TEST_FILES=1` a [`ScratchDir`] is left in place when dropped, and its
/// path is printed.
pub const KEEP_TEST_FILES: &str = "PGSURGE_KEEP_TEST_FILES";

/// Whether the files of tests are kept ([`KEEP_TEST_FILES`] is `1`).
pub fn keep_test_files() -> bool {
    std::env::var(KEEP_TEST_FILES).is_ok_and(|v| v == "1")
}

/// A fresh empty directory, removed with everything in it when dropped (so when the
/// test that holds it ends, also by a panic), unless [`KEEP_TEST_FILES`] says to keep
/// it. It reads as a [`Path`]: `dir.join("a.sql")`, `&dir` where a `&Path` is wanted.
#[derive(Debug)]
pub struct ScratchDir {
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
    keep: bool,
}

/// A new [`ScratchDir`] named `pgsurge-<name>-XXXXXX` in the temporary directory.
/// Panics (failing the test) if it cannot be made.
pub fn scratch_dir(name: &str) -> ScratchDir {
    make(name, keep_test_files())
}

fn make(name: &str, keep: bool) -> ScratchDir {
    let dir = tempfile::Builder::new()
        .prefix(&format!("pgsurge-{name}-"))
        .tempdir()
        .unwrap_or_else(|e| {
            panic!(
                "creating a scratch directory in {}: {e}",
                std::env::temp_dir().display()
            )
        });
    let path = dir.path().to_path_buf();
    ScratchDir {
        dir: Some(dir),
        path,
        keep,
    }
}

impl ScratchDir {
    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let Some(dir) = self.dir.take() else { return };
        if self.keep {
            eprintln!("{KEEP_TEST_FILES}=1: kept {}", dir.keep().display());
            return;
        }
        // A test may have left it unreadable or partly removed; what can go, goes.
        if let Err(e) = dir.close() {
            if self.path.exists() {
                eprintln!("could not remove {}: {e}", self.path.display());
            }
        }
    }
}

impl Deref for ScratchDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for ScratchDir {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<OsStr> for ScratchDir {
    fn as_ref(&self) -> &OsStr {
        self.path.as_os_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_dir_is_removed_with_its_contents() {
        let dir = make("scratch-test", false);
        let path = dir.path().to_path_buf();
        assert!(path.is_dir());
        assert!(path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("pgsurge-scratch-test-"));
        std::fs::create_dir(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/file"), "x").unwrap();
        drop(dir);
        assert!(!path.exists(), "{} is still there", path.display());
    }

    #[test]
    fn a_scratch_dir_is_removed_when_its_test_panics() {
        let mut kept = None;
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let dir = make("scratch-panic", false);
            std::fs::write(dir.join("f"), "x").unwrap();
            kept = Some(dir.path().to_path_buf());
            panic!("the test fails");
        }));
        assert!(r.is_err());
        let path = kept.expect("the directory was made");
        assert!(!path.exists(), "{} is still there", path.display());
    }

    #[test]
    fn a_kept_scratch_dir_stays() {
        let dir = make("scratch-keep", true);
        let path = dir.path().to_path_buf();
        std::fs::write(dir.join("f"), "x").unwrap();
        drop(dir);
        let stayed = path.join("f").is_file();
        std::fs::remove_dir_all(&path).unwrap();
        assert!(stayed, "{} was removed", path.display());
    }
}
