//! Writing an output file whole or not at all.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh temporary file name in `path`'s directory (`.NAME.tmp-PID-N`): written
/// there, then renamed over `path`, an output appears whole or not at all.
pub fn temporary_path(path: &Path) -> std::io::Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{} is not a file name", path.display()),
            )
        })?;
    Ok(dir.join(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )))
}

/// Writes `bytes` to `path` through a temporary file in the same directory that is
/// flushed to disk and then renamed over `path`: a reader sees the old file or the
/// whole new one, and a failure (full disk, read-only directory) is an error that
/// leaves `path` as it was and no temporary file behind.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = temporary_path(path)?;
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A file written in place of `path` while a run goes on (logs): the bytes go to a
/// temporary file beside `path`, which [`AtomicFile::commit`] flushes to disk and
/// renames over `path`. Dropped uncommitted (a write failed, the run ended early), the
/// temporary file is removed: `path` holds a whole output or is left as it was.
#[derive(Debug)]
pub struct AtomicFile {
    out: std::io::BufWriter<std::fs::File>,
    tmp: PathBuf,
    path: PathBuf,
    committed: bool,
}

impl AtomicFile {
    /// Creates the temporary file for `path`, buffered with `capacity` bytes.
    pub fn create(path: &Path, capacity: usize) -> std::io::Result<AtomicFile> {
        let tmp = temporary_path(path)?;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        Ok(AtomicFile {
            out: std::io::BufWriter::with_capacity(capacity, file),
            tmp,
            path: path.to_path_buf(),
            committed: false,
        })
    }

    /// The path the output appears at once committed.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes, syncs and renames the file into place.
    pub fn commit(mut self) -> std::io::Result<()> {
        self.out.flush()?;
        self.out.get_ref().sync_all()?;
        std::fs::rename(&self.tmp, &self.path)?;
        self.committed = true;
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.out.write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_file_and_leaves_nothing_on_failure() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        write_atomically(&p, b"old").unwrap();
        write_atomically(&p, b"new content").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new content");
        let missing = dir.path().join("no-such-dir").join("x.json");
        assert!(write_atomically(&missing, b"x").is_err());
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, vec!["out.json".to_string()]);
    }

    #[test]
    fn atomic_file_appears_on_commit_and_vanishes_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        let mut f = AtomicFile::create(&p, 16).unwrap();
        f.write_all(b"line one, longer than the buffer\n").unwrap();
        assert!(!p.exists(), "not before commit");
        f.commit().unwrap();
        assert_eq!(
            std::fs::read(&p).unwrap(),
            b"line one, longer than the buffer\n"
        );
        let mut g = AtomicFile::create(&dir.path().join("other"), 16).unwrap();
        g.write_all(b"lost").unwrap();
        drop(g);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, vec!["log".to_string()]);
    }
}
