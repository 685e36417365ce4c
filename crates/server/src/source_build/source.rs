//! The source of a build: a git checkout at a commit (plus, without a ref, its
//! uncommitted changes), a plain source tree or a release tarball. Each has an
//! identity for the cache key and is copied into a private work directory before
//! anything is patched or built.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use super::compile::BuildLog;
use super::record::hex;
use crate::error::{Result, ServerError};

const TARBALL_SUFFIXES: &[&str] = &[
    ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar",
];

/// A source and what identifies its contents.
#[derive(Debug)]
pub(super) enum Source {
    Git {
        repo: PathBuf,
        commit: String,
        label: String,
        /// `git diff HEAD --binary` of a checkout built without a ref, when not empty.
        uncommitted: Option<Vec<u8>>,
    },
    Tree {
        path: PathBuf,
        hash: String,
    },
    Tarball {
        path: PathBuf,
        hash: String,
    },
}

impl Source {
    /// Works out what `path` is and reads its identity.
    pub(super) fn identify(path: &Path, git_ref: Option<&str>) -> Result<Source> {
        let meta = fs::metadata(path).map_err(|e| ServerError::io(path, e))?;
        let path = path.canonicalize().map_err(|e| ServerError::io(path, e))?;
        if meta.is_file() {
            if git_ref.is_some() {
                return Err(ServerError::Invalid(format!(
                    "--ref needs a git checkout; {} is a file",
                    path.display()
                )));
            }
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if !TARBALL_SUFFIXES.iter().any(|s| name.ends_with(s)) {
                return Err(ServerError::Invalid(format!(
                    "{}: not a source tree, a git checkout or a tarball (.tar.gz, .tar.bz2, .tar.xz)",
                    path.display()
                )));
            }
            let hash = hash_file(&path)?;
            return Ok(Source::Tarball { path, hash });
        }
        if path.join(".git").exists() {
            return git_source(path, git_ref);
        }
        if let Some(r) = git_ref {
            return Err(ServerError::Invalid(format!(
                "--ref {r} needs a git checkout; {} has no .git",
                path.display()
            )));
        }
        check_tree(&path)?;
        if path.join("config.status").exists() {
            return Err(ServerError::Invalid(format!(
                "{}: configured in place (config.status is there); build from a clean tree \
                 (`make distclean`), a git checkout or a tarball",
                path.display()
            )));
        }
        let hash = hash_tree(&path)?;
        Ok(Source::Tree { path, hash })
    }

    /// What goes into the cache key.
    pub(super) fn identity(&self) -> String {
        match self {
            Source::Git {
                commit,
                uncommitted,
                ..
            } => match uncommitted {
                Some(diff) => format!("git:{commit}+diff:{}", hex(&Sha256::digest(diff))),
                None => format!("git:{commit}"),
            },
            Source::Tree { hash, .. } => format!("tree:{hash}"),
            Source::Tarball { hash, .. } => format!("tarball:{hash}"),
        }
    }

    /// The source for people.
    pub(super) fn describe(&self) -> String {
        match self {
            Source::Git {
                repo,
                commit,
                label,
                uncommitted,
            } => format!(
                "git checkout {} at {} ({label}){}",
                repo.display(),
                &commit[..commit.len().min(12)],
                if uncommitted.is_some() {
                    " with its uncommitted changes"
                } else {
                    ""
                }
            ),
            Source::Tree { path, .. } => format!("source tree {}", path.display()),
            Source::Tarball { path, .. } => format!("tarball {}", path.display()),
        }
    }

    /// The commit id of a git source.
    pub(super) fn commit(&self) -> Option<&str> {
        match self {
            Source::Git { commit, .. } => Some(commit),
            _ => None,
        }
    }

    /// Copies the source into `dest` (an empty directory).
    pub(super) fn materialize(&self, dest: &Path, log: &mut BuildLog) -> Result<()> {
        match self {
            Source::Git {
                repo,
                commit,
                uncommitted,
                ..
            } => {
                export_commit(repo, commit, dest, log)?;
                if let Some(diff) = uncommitted {
                    let file = dest
                        .parent()
                        .unwrap_or(dest)
                        .join("uncommitted-changes.diff");
                    fs::write(&file, diff).map_err(|e| ServerError::io(&file, e))?;
                    super::patches::apply(dest, &file, log)?;
                }
            }
            Source::Tree { path, .. } => copy_tree(path, dest)?,
            Source::Tarball { path, .. } => {
                log.run(
                    "extracting the tarball",
                    Command::new("tar")
                        .arg("-xf")
                        .arg(path)
                        .arg("-C")
                        .arg(dest)
                        .arg("--strip-components=1"),
                )?;
                check_tree(dest).map_err(|_| {
                    ServerError::Invalid(format!(
                        "{}: the tarball holds no PostgreSQL source tree at its top level",
                        path.display()
                    ))
                })?;
            }
        }
        Ok(())
    }
}

fn git_source(repo: PathBuf, git_ref: Option<&str>) -> Result<Source> {
    let git = |args: &[&str]| -> Result<Vec<u8>> {
        let out = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| ServerError::CommandFailed {
                what: "git".into(),
                detail: e.to_string(),
            })?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(ServerError::CommandFailed {
                what: format!("git {}", args.join(" ")),
                detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            })
        }
    };
    let wanted = git_ref.unwrap_or("HEAD");
    let commit = git(&[
        "rev-parse",
        "--verify",
        "--quiet",
        &format!("{wanted}^{{commit}}"),
    ])
    .map_err(|_| {
        ServerError::Invalid(format!(
            "{wanted}: not a commit, branch or tag of {}",
            repo.display()
        ))
    })?;
    let commit = String::from_utf8_lossy(&commit).trim().to_string();
    let uncommitted = match git_ref {
        Some(_) => None,
        None => Some(git(&["diff", "HEAD", "--binary"])?).filter(|d| !d.is_empty()),
    };
    Ok(Source::Git {
        repo,
        commit,
        label: wanted.to_string(),
        uncommitted,
    })
}

/// `git archive COMMIT | tar -x`: the commit's files, without touching the checkout.
fn export_commit(repo: &Path, commit: &str, dest: &Path, log: &mut BuildLog) -> Result<()> {
    let failed = |what: &str, detail: String| ServerError::CommandFailed {
        what: what.into(),
        detail,
    };
    let mut archive = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["archive", "--format=tar", commit])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed("git archive", e.to_string()))?;
    let stdout = archive
        .stdout
        .take()
        .ok_or_else(|| failed("git archive", "no output pipe".into()))?;
    let tar = Command::new("tar")
        .arg("-x")
        .arg("-C")
        .arg(dest)
        .stdin(stdout)
        .output()
        .map_err(|e| failed("tar", e.to_string()))?;
    let git = archive
        .wait_with_output()
        .map_err(|e| failed("git archive", e.to_string()))?;
    let _ = log.file().write_all(&git.stderr);
    let _ = log.file().write_all(&tar.stderr);
    if !git.status.success() {
        return Err(failed(
            "git archive",
            String::from_utf8_lossy(&git.stderr).trim().to_string(),
        ));
    }
    if !tar.status.success() {
        return Err(failed(
            "tar",
            String::from_utf8_lossy(&tar.stderr).trim().to_string(),
        ));
    }
    check_tree(dest).map_err(|_| {
        ServerError::Invalid(format!(
            "commit {commit} of {} holds no PostgreSQL source tree",
            repo.display()
        ))
    })
}

/// A PostgreSQL source tree has `src/backend` and a configure script or `meson.build`.
fn check_tree(path: &Path) -> Result<()> {
    let builds = path.join("configure").is_file() || path.join("meson.build").is_file();
    if builds && path.join("src/backend").is_dir() {
        Ok(())
    } else {
        Err(ServerError::Invalid(format!(
            "{}: not a PostgreSQL source tree (no configure or meson.build beside src/backend)",
            path.display()
        )))
    }
}

fn hash_file(path: &Path) -> Result<String> {
    let mut file = super::open_regular(path, super::MAX_TARBALL_BYTES, "source tarball")?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(|e| ServerError::io(path, e))?;
    Ok(hex(&hasher.finalize()))
}

/// A hash over every file's relative path, executable bit and bytes (symlinks by
/// their target), in a fixed order; `.git` is left out. Anything in the tree but files,
/// directories and symlinks (a FIFO, a socket, a device) is refused, naming it.
fn hash_tree(root: &Path) -> Result<String> {
    let mut hasher = Sha256::new();
    let mut stack = vec![root.to_path_buf()];
    let mut files = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).map_err(|e| ServerError::io(&dir, e))? {
            let entry = entry.map_err(|e| ServerError::io(&dir, e))?;
            let path = entry.path();
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            let kind = entry.file_type().map_err(|e| ServerError::io(&path, e))?;
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() || kind.is_symlink() {
                files.push(path);
            } else {
                return Err(not_a_file(&path));
            }
        }
    }
    files.sort();
    for path in files {
        let rel = path.strip_prefix(root).unwrap_or(&path);
        hasher.update(rel.as_os_str().as_encoded_bytes());
        hasher.update([0]);
        let meta = fs::symlink_metadata(&path).map_err(|e| ServerError::io(&path, e))?;
        if meta.file_type().is_symlink() {
            let target = fs::read_link(&path).map_err(|e| ServerError::io(&path, e))?;
            hasher.update(b"link:");
            hasher.update(target.as_os_str().as_encoded_bytes());
        } else {
            hasher.update(if meta.permissions().mode() & 0o111 != 0 {
                b"x:"
            } else {
                b"f:"
            });
            let mut file = super::open_regular(&path, u64::MAX, "file of the source tree")?;
            std::io::copy(&mut file, &mut hasher).map_err(|e| ServerError::io(&path, e))?;
        }
        hasher.update([0]);
    }
    Ok(hex(&hasher.finalize()))
}

fn not_a_file(path: &Path) -> ServerError {
    ServerError::Invalid(format!(
        "{}: neither a file, a directory nor a symlink (a FIFO, socket or device); a \
         source tree holds only those, so it is not read",
        path.display()
    ))
}

/// Copies a tree (files, directories, symlinks; modes kept), leaving out `.git`.
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    for entry in fs::read_dir(from).map_err(|e| ServerError::io(from, e))? {
        let entry = entry.map_err(|e| ServerError::io(from, e))?;
        let src = entry.path();
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let dst = to.join(&name);
        let kind = entry.file_type().map_err(|e| ServerError::io(&src, e))?;
        if kind.is_symlink() {
            let target = fs::read_link(&src).map_err(|e| ServerError::io(&src, e))?;
            std::os::unix::fs::symlink(target, &dst).map_err(|e| ServerError::io(&dst, e))?;
        } else if kind.is_dir() {
            fs::create_dir(&dst).map_err(|e| ServerError::io(&dst, e))?;
            copy_tree(&src, &dst)?;
        } else if kind.is_file() {
            fs::copy(&src, &dst).map_err(|e| ServerError::io(&dst, e))?;
        } else {
            return Err(not_a_file(&src));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_tree(dir: &Path) {
        fs::create_dir_all(dir.join("src/backend")).unwrap();
        fs::write(dir.join("configure"), "#!/bin/sh\n").unwrap();
        fs::write(dir.join("src/backend/a.c"), "int a;\n").unwrap();
    }

    #[test]
    fn a_tree_hash_follows_content_and_names() {
        let d = tempfile::tempdir().unwrap();
        fake_tree(d.path());
        let first = hash_tree(d.path()).unwrap();
        assert_eq!(first, hash_tree(d.path()).unwrap());
        fs::write(d.path().join("src/backend/a.c"), "int b;\n").unwrap();
        let second = hash_tree(d.path()).unwrap();
        assert_ne!(first, second);
        fs::rename(
            d.path().join("src/backend/a.c"),
            d.path().join("src/backend/b.c"),
        )
        .unwrap();
        assert_ne!(second, hash_tree(d.path()).unwrap());
    }

    #[test]
    fn a_fifo_inside_a_source_tree_is_refused_not_waited_on() {
        let d = tempfile::tempdir().unwrap();
        fake_tree(d.path());
        let fifo = d.path().join("src/backend/pipe");
        let status = Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(status.success());
        let e = Source::identify(d.path(), None).unwrap_err().to_string();
        assert!(e.contains("src/backend/pipe") && e.contains("FIFO"), "{e}");
        let e = Source::identify(&fifo, None).unwrap_err().to_string();
        assert!(e.contains("pipe"), "{e}");
    }

    #[test]
    fn what_is_not_a_source_is_refused_with_its_name() {
        let d = tempfile::tempdir().unwrap();
        let e = Source::identify(d.path(), None).unwrap_err().to_string();
        assert!(e.contains("not a PostgreSQL source tree"), "{e}");
        let f = d.path().join("notes.txt");
        fs::write(&f, "x").unwrap();
        let e = Source::identify(&f, None).unwrap_err().to_string();
        assert!(e.contains("notes.txt: not a source tree"), "{e}");
        fake_tree(d.path());
        let e = Source::identify(d.path(), Some("master"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs a git checkout"), "{e}");
        fs::write(d.path().join("config.status"), "").unwrap();
        let e = Source::identify(d.path(), None).unwrap_err().to_string();
        assert!(e.contains("configured in place"), "{e}");
    }
}
