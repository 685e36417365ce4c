//! Patches, applied in order to the private copy of the source: `git apply` (which
//! also takes binary and rename hunks), else `patch -p1`. A patch that does not apply
//! stops the build before anything is compiled, naming the patch and the file.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use super::compile::BuildLog;
use super::record::{hex, PatchInfo};
use crate::error::{Result, ServerError};

/// The name and hash of a patch file (read here, so a missing patch fails before any
/// work). Only a regular file of at most [`super::MAX_PATCH_BYTES`] is read.
pub(super) fn describe(patch: &Path) -> Result<PatchInfo> {
    let file = super::open_regular(patch, super::MAX_PATCH_BYTES, "patch")?;
    let mut bytes = Vec::new();
    file.take(super::MAX_PATCH_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ServerError::io(patch, e))?;
    if bytes.len() as u64 > super::MAX_PATCH_BYTES {
        return Err(ServerError::Invalid(format!(
            "{}: the patch grew past {} bytes while it was read",
            patch.display(),
            super::MAX_PATCH_BYTES
        )));
    }
    Ok(PatchInfo {
        name: patch
            .file_name()
            .unwrap_or(patch.as_os_str())
            .to_string_lossy()
            .into_owned(),
        sha256: hex(&Sha256::digest(&bytes)),
    })
}

/// Applies `patch` in `dir`.
pub(super) fn apply(dir: &Path, patch: &Path, log: &mut BuildLog) -> Result<()> {
    let patch = patch
        .canonicalize()
        .map_err(|e| ServerError::io(patch, e))?;
    let git_check = git_apply(dir, &patch, true);
    if let Some(Ok(_)) = &git_check {
        return git_apply(dir, &patch, false)
            .unwrap_or_else(|| Err("git is not installed".into()))
            .map(|out| log.note(&out))
            .map_err(|detail| failed(&patch, &detail));
    }
    let patch_check = patch_p1(dir, &patch, true);
    if let Some(Ok(_)) = &patch_check {
        return patch_p1(dir, &patch, false)
            .unwrap_or_else(|| Err("patch is not installed".into()))
            .map(|out| log.note(&out))
            .map_err(|detail| failed(&patch, &detail));
    }
    let detail = match (git_check, patch_check) {
        (Some(Err(git)), _) => git,
        (None, Some(Err(patch))) => patch,
        _ => "neither git nor patch is installed".to_string(),
    };
    log.note(&detail);
    Err(failed(&patch, &detail))
}

fn failed(patch: &Path, detail: &str) -> ServerError {
    ServerError::PatchFailed {
        patch: patch.to_path_buf(),
        file: failing_file(detail).unwrap_or_else(|| "?".into()),
        detail: detail.trim().to_string(),
    }
}

/// `git apply [--check]` in `dir`, never looking for a repository above it (the cache
/// may sit inside one). None when git cannot be run.
fn git_apply(dir: &Path, patch: &Path, check: bool) -> Option<Result<String, String>> {
    let mut cmd = Command::new("git");
    cmd.arg("apply");
    if check {
        cmd.arg("--check");
    }
    cmd.arg(patch)
        .current_dir(dir)
        .env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap_or(dir));
    run(cmd)
}

/// `patch -p1 [--dry-run]` in `dir`. None when patch cannot be run.
fn patch_p1(dir: &Path, patch: &Path, check: bool) -> Option<Result<String, String>> {
    let mut cmd = Command::new("patch");
    cmd.args(["-p1", "--batch", "--forward", "--silent"]);
    if check {
        cmd.arg("--dry-run");
    }
    cmd.arg("-i").arg(patch).current_dir(dir);
    run(cmd)
}

fn run(mut cmd: Command) -> Option<Result<String, String>> {
    let out = cmd.stdin(Stdio::null()).output().ok()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(if out.status.success() {
        Ok(text)
    } else {
        Err(text)
    })
}

/// The file a failed `git apply` or `patch` names: `error: patch failed: FILE:LINE`,
/// `error: FILE: No such file…`, `can't find file to patch …` (then `--- FILE`), or
/// `patching file FILE` followed by a failed hunk.
fn failing_file(detail: &str) -> Option<String> {
    for line in detail.lines() {
        if let Some(rest) = line.strip_prefix("error: patch failed: ") {
            return Some(rest.rsplit_once(':').map_or(rest, |(f, _)| f).to_string());
        }
    }
    for line in detail.lines() {
        if let Some(rest) = line.strip_prefix("error: ") {
            if let Some((file, _)) = rest.split_once(": ") {
                if !file.contains(' ') {
                    return Some(file.to_string());
                }
            }
        }
    }
    let mut last = None;
    for line in detail.lines() {
        if let Some(f) = line.strip_prefix("patching file ") {
            last = Some(f.trim().to_string());
        }
        if line.contains("FAILED") || line.contains("can't find file") {
            return last;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_failing_file_is_read_from_git_and_patch() {
        assert_eq!(
            failing_file("error: patch failed: src/backend/tcop/postgres.c:1020\nerror: src/backend/tcop/postgres.c: patch does not apply\n"),
            Some("src/backend/tcop/postgres.c".into())
        );
        assert_eq!(
            failing_file("error: src/nothere.c: No such file or directory\n"),
            Some("src/nothere.c".into())
        );
        assert_eq!(
            failing_file("patching file src/a.c\nHunk #1 FAILED at 3.\n"),
            Some("src/a.c".into())
        );
        assert_eq!(failing_file("something else"), None);
    }

    #[test]
    fn a_patch_that_is_not_a_regular_file_or_is_too_large_is_not_read() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo.patch");
        let status = Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(status.success());
        // A FIFO with no writer: refused at once, never waited on.
        let e = describe(&fifo).unwrap_err().to_string();
        assert!(e.contains("fifo.patch") && e.contains("a FIFO"), "{e}");
        // A device that never ends: refused, never read.
        let e = describe(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(e.contains("/dev/zero") && e.contains("a device"), "{e}");
        let e = describe(d.path()).unwrap_err().to_string();
        assert!(e.contains("a directory"), "{e}");
        // A file larger than any patch (sparse: it takes no space).
        let big = d.path().join("big.patch");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(super::super::MAX_PATCH_BYTES + 1)
            .unwrap();
        let e = describe(&big).unwrap_err().to_string();
        assert!(
            e.contains("big.patch") && e.contains("bytes, more than"),
            "{e}"
        );
        let fine = d.path().join("fine.patch");
        std::fs::write(&fine, "--- a/x\n+++ b/x\n").unwrap();
        assert_eq!(describe(&fine).unwrap().name, "fine.patch");
    }

    #[test]
    fn a_patch_that_does_not_apply_names_itself_and_the_file() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src");
        std::fs::create_dir_all(src.join("lib")).unwrap();
        std::fs::write(src.join("lib/a.c"), "int a = 1;\n").unwrap();
        let good = d.path().join("good.patch");
        std::fs::write(
            &good,
            "--- a/lib/a.c\n+++ b/lib/a.c\n@@ -1 +1 @@\n-int a = 1;\n+int a = 2;\n",
        )
        .unwrap();
        let bad = d.path().join("bad.patch");
        std::fs::write(
            &bad,
            "--- a/lib/a.c\n+++ b/lib/a.c\n@@ -1 +1 @@\n-int a = 7;\n+int a = 8;\n",
        )
        .unwrap();
        let mut log = BuildLog::create(&d.path().join("build.log"), None).unwrap();
        apply(&src, &good, &mut log).unwrap();
        assert_eq!(
            std::fs::read_to_string(src.join("lib/a.c")).unwrap(),
            "int a = 2;\n"
        );
        let e = apply(&src, &bad, &mut log).unwrap_err().to_string();
        assert!(e.contains("bad.patch") && e.contains("lib/a.c"), "{e}");
        assert_eq!(
            std::fs::read_to_string(src.join("lib/a.c")).unwrap(),
            "int a = 2;\n"
        );
    }
}
