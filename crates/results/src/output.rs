//! Writing an output file whole or not at all, without ever replacing what the path
//! names by something else.
//!
//! Where an output's bytes go depends on what its path is when the output is opened:
//!
//! * a regular file, or nothing yet: the bytes go to a temporary file in the same
//!   directory, flushed to disk and renamed over the path when the output is
//!   committed, so a reader sees the old file or the whole new one and a failure leaves
//!   the path as it was;
//! * a symbolic link: the same, at the file the link (finally) points to, so the link
//!   stays a link and its target gets the output;
//! * a device node, a FIFO, a socket or a pipe (`/dev/null`, `/dev/stdout`,
//!   `/dev/fd/N` of a shell's `>(cmd)`): written in place, as `cmd > PATH` would. A
//!   rename there would put a regular file where the device or FIFO was, for every
//!   other user of the path;
//! * a directory: an error.
//!
//! Outputs are opened before the work that produces them starts, so a path that cannot
//! be written fails at once, not after a whole benchmark.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Symbolic links followed before giving up (the kernel's own limit).
const MAX_LINKS: usize = 40;

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

/// How an output path is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// A regular file (or no file yet) at this path, symbolic links resolved: written
    /// beside it and renamed over it.
    Replace(PathBuf),
    /// Something that is not a regular file (device, FIFO, socket, pipe): opened and
    /// written in place.
    InPlace,
}

/// Where an output at `path` is written (see the module doc).
pub fn placement(path: &Path) -> std::io::Result<Placement> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(Placement::Replace(link_target(path)?)),
        Ok(m) if m.is_dir() => Err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "Is a directory",
        )),
        Ok(_) => Ok(Placement::InPlace),
        // Nothing there, or a link to nothing: the output creates the file the path
        // (through its links) names.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Ok(Placement::Replace(link_target(path)?))
        }
        Err(e) => Err(e),
    }
}

/// `path` with its last component's symbolic links followed (up to the kernel's limit):
/// the path a rename must replace for the link to keep pointing at the output. A link
/// to a missing file gives the missing file's path.
fn link_target(path: &Path) -> std::io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&p)?;
                p = if target.is_absolute() {
                    target
                } else {
                    match p.parent() {
                        Some(dir) => dir.join(target),
                        None => target,
                    }
                };
            }
            _ => return Ok(p),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        "Too many levels of symbolic links",
    ))
}

/// Writes `bytes` to `path` as an [`OutputFile`]: a regular file is replaced whole
/// (a failure — full disk, read-only directory — leaves it as it was and no temporary
/// file behind); a device, FIFO or pipe is written in place.
pub fn write_output(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut out = OutputFile::create(path, 0)?;
    out.write_all(bytes)?;
    out.commit()
}

#[derive(Debug)]
enum Sink {
    /// The temporary file, renamed over `real` on commit.
    Replace { tmp: PathBuf, real: PathBuf },
    /// The path itself, opened for writing.
    InPlace,
}

/// An output opened before the work that fills it (logs, result documents).
///
/// A regular file's bytes go to a temporary file beside it, which
/// [`OutputFile::commit`] flushes to disk and renames over the file; dropped
/// uncommitted (a write failed, the run ended early), the temporary file is removed and
/// the path is left as it was. A device, FIFO or pipe is written in place from the
/// start (see the module doc).
#[derive(Debug)]
pub struct OutputFile {
    out: BufWriter<File>,
    sink: Sink,
    path: PathBuf,
    committed: bool,
}

impl OutputFile {
    /// Opens the output for `path`, buffered with `capacity` bytes. Fails at once when
    /// the path cannot be written (missing directory, no permission, a directory).
    pub fn create(path: &Path, capacity: usize) -> std::io::Result<OutputFile> {
        let (file, sink) = match placement(path)? {
            Placement::Replace(real) => {
                let tmp = temporary_path(&real)?;
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&tmp)?;
                (file, Sink::Replace { tmp, real })
            }
            Placement::InPlace => {
                let file = std::fs::OpenOptions::new().write(true).open(path)?;
                (file, Sink::InPlace)
            }
        };
        Ok(OutputFile {
            out: BufWriter::with_capacity(capacity, file),
            sink,
            path: path.to_path_buf(),
            committed: false,
        })
    }

    /// The path the output was asked for (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the output is written in place (a device, FIFO or pipe).
    pub fn in_place(&self) -> bool {
        matches!(self.sink, Sink::InPlace)
    }

    /// Flushes the output; a file is synced to disk and renamed into place.
    pub fn commit(mut self) -> std::io::Result<()> {
        self.out.flush()?;
        if let Sink::Replace { tmp, real } = &self.sink {
            self.out.get_ref().sync_all()?;
            std::fs::rename(tmp, real)?;
        }
        self.committed = true;
        Ok(())
    }
}

impl Write for OutputFile {
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

impl Drop for OutputFile {
    fn drop(&mut self) {
        if let (false, Sink::Replace { tmp, .. }) = (self.committed, &self.sink) {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn replaces_whole_file_and_leaves_nothing_on_failure() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        write_output(&p, b"old").unwrap();
        write_output(&p, b"new content").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new content");
        let missing = dir.path().join("no-such-dir").join("x.json");
        assert!(write_output(&missing, b"x").is_err());
        assert_eq!(names(dir.path()), vec!["out.json".to_string()]);
    }

    #[test]
    fn output_file_appears_on_commit_and_vanishes_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        let mut f = OutputFile::create(&p, 16).unwrap();
        assert!(!f.in_place());
        f.write_all(b"line one, longer than the buffer\n").unwrap();
        assert!(!p.exists(), "not before commit");
        f.commit().unwrap();
        assert_eq!(
            std::fs::read(&p).unwrap(),
            b"line one, longer than the buffer\n"
        );
        let mut g = OutputFile::create(&dir.path().join("other"), 16).unwrap();
        g.write_all(b"lost").unwrap();
        drop(g);
        assert_eq!(names(dir.path()), vec!["log".to_string()]);
    }

    #[test]
    fn a_symlink_keeps_pointing_at_the_written_file() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let target = sub.join("real.json");
        std::fs::write(&target, b"old").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink("sub/real.json", &link).unwrap();
        write_output(&link, b"through the link").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"through the link");
        assert_eq!(names(&sub), vec!["real.json".to_string()]);
        // A link to a file not there yet creates the file, and stays a link.
        let dangling = dir.path().join("dangling.json");
        std::os::unix::fs::symlink(sub.join("new.json"), &dangling).unwrap();
        write_output(&dangling, b"created").unwrap();
        assert!(std::fs::symlink_metadata(&dangling)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(sub.join("new.json")).unwrap(), b"created");
    }

    #[test]
    fn a_link_loop_and_a_directory_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        assert!(write_output(&a, b"x").is_err());
        let e = write_output(dir.path(), b"x").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::IsADirectory);
        assert_eq!(names(dir.path()), vec!["a".to_string(), "b".to_string()]);
    }

    #[test]
    fn a_fifo_is_written_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(&fifo).unwrap())
        };
        let mut out = OutputFile::create(&fifo, 8).unwrap();
        assert!(out.in_place());
        out.write_all(b"streamed through the fifo").unwrap();
        out.commit().unwrap();
        assert_eq!(reader.join().unwrap(), b"streamed through the fifo");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(names(dir.path()), vec!["fifo".to_string()]);
    }

    #[test]
    fn a_character_device_is_written_in_place() {
        // /dev/null is only read here: the output opens it, writes and commits; it
        // must still be the character device afterwards.
        let p = Path::new("/dev/null");
        assert_eq!(placement(p).unwrap(), Placement::InPlace);
        let full = Path::new("/dev/full");
        if full.exists() {
            let mut out = OutputFile::create(full, 0).unwrap();
            let failed = out.write_all(b"x").and_then(|()| out.commit());
            assert!(failed.is_err(), "a full device is a write error");
        }
    }
}
