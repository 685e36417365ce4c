//! A pack: its manifest and the text of every file it names, read from a directory or
//! from the built-in packs compiled into the binary (the same files as in
//! `crates/workload/packs/`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::WorkloadError;
use crate::manifest::{parse_manifest, Manifest};

/// The manifest's file name in a pack directory.
pub const MANIFEST: &str = "workload.toml";

/// Where a pack comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Compiled into the binary.
    Builtin,
    /// A directory.
    Dir(PathBuf),
}

/// A pack, complete: every file its manifest names has been read, and its scripts
/// parse.
#[derive(Debug, Clone)]
pub struct Pack {
    /// Where it was read from.
    pub origin: Origin,
    /// Its manifest.
    pub manifest: Manifest,
    /// Relative path → text, the manifest included.
    files: BTreeMap<String, String>,
}

/// One built-in pack: its name, then `(path in the pack, text)` for each file, the
/// manifest (`$manifest` in `packs/$dir/`) first as `workload.toml`.
macro_rules! pack {
    ($name:literal, $dir:literal, $manifest:literal: $($file:literal),+ $(,)?) => {
        (
            $name,
            &[
                (MANIFEST, include_str!(concat!("../packs/", $dir, "/", $manifest))),
                $(($file, include_str!(concat!("../packs/", $dir, "/", $file)))),+
            ],
        )
    };
}

/// The built-in packs: name and files (path, text), the manifest first.
pub const BUILTIN: &[(&str, &[(&str, &str)])] = &[
    pack!("tpcc", "tpcc", "workload.toml":
        "schema.sql", "procedures.sql", "load/item.sql", "load/warehouse.sql", "finish.sql",
        "new_order.sql", "payment.sql", "order_status.sql", "delivery.sql", "stock_level.sql"),
    pack!("tpcc-procedures", "tpcc", "procedures.toml":
        "schema.sql", "procedures.sql", "load/item.sql", "load/warehouse.sql", "finish.sql",
        "procedures/new_order.sql", "procedures/payment.sql", "procedures/order_status.sql",
        "procedures/delivery.sql", "procedures/stock_level.sql"),
    pack!("ycsb-a", "ycsb", "workload-a.toml":
        "schema.sql", "load/usertable.sql", "finish.sql", "read.sql", "update.sql"),
    pack!("ycsb-b", "ycsb", "workload-b.toml":
        "schema.sql", "load/usertable.sql", "finish.sql", "read.sql", "update.sql"),
    pack!("ycsb-c", "ycsb", "workload-c.toml":
        "schema.sql", "load/usertable.sql", "finish.sql", "read.sql"),
    pack!("ycsb-d", "ycsb", "workload-d.toml":
        "schema.sql", "load/usertable.sql", "finish.sql", "read_latest.sql", "insert.sql"),
    pack!("ycsb-e", "ycsb", "workload-e.toml":
        "schema.sql", "load/usertable.sql", "finish.sql", "scan.sql", "insert.sql"),
    pack!("ycsb-f", "ycsb", "workload-f.toml":
        "schema.sql", "load/usertable.sql", "finish.sql", "read.sql", "read_modify_write.sql"),
    pack!("oltp-read-write", "oltp", "read_write.toml":
        "schema.sql", "load/sbtest.sql", "finish.sql", "read_write.sql"),
    pack!("oltp-read-only", "oltp", "read_only.toml":
        "schema.sql", "load/sbtest.sql", "finish.sql", "read_only.sql"),
    pack!("oltp-point-select", "oltp", "point_select.toml":
        "schema.sql", "load/sbtest.sql", "finish.sql", "point_select.sql"),
    pack!("oltp-update-index", "oltp", "update_index.toml":
        "schema.sql", "load/sbtest.sql", "finish.sql", "update_index.sql"),
    pack!("oltp-insert", "oltp", "insert.toml":
        "schema.sql", "load/sbtest.sql", "finish.sql", "insert.sql"),
];

/// The names of the built-in packs, comma-separated.
pub fn builtin_names() -> String {
    BUILTIN
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Pack {
    /// `NAME` (a built-in pack) or `DIR` (a directory holding a `workload.toml`). A
    /// name with a `/`, or one that is an existing directory, is a directory.
    pub fn resolve(name_or_dir: &str) -> Result<Pack, WorkloadError> {
        let path = Path::new(name_or_dir);
        let is_dir = name_or_dir.contains('/') || path.join(MANIFEST).is_file();
        if !is_dir {
            if let Some((_, files)) = BUILTIN.iter().find(|(n, _)| *n == name_or_dir) {
                return Pack::from_files(
                    Origin::Builtin,
                    files
                        .iter()
                        .map(|(p, t)| ((*p).to_string(), (*t).to_string()))
                        .collect(),
                );
            }
        }
        if path.join(MANIFEST).is_file() {
            return Pack::from_dir(path);
        }
        if path.is_dir() {
            return Err(WorkloadError::Read {
                file: path.join(MANIFEST).display().to_string(),
                message: "no such file (a pack directory needs a workload.toml)".into(),
            });
        }
        Err(WorkloadError::NotFound(
            name_or_dir.to_string(),
            builtin_names(),
        ))
    }

    /// Reads a pack directory: the manifest and every file it names.
    pub fn from_dir(dir: &Path) -> Result<Pack, WorkloadError> {
        let read = |rel: &str| -> Result<String, WorkloadError> {
            let p = dir.join(rel);
            std::fs::read_to_string(&p).map_err(|e| WorkloadError::Read {
                file: p.display().to_string(),
                message: e.to_string(),
            })
        };
        let text = read(MANIFEST)?;
        let manifest_name = dir.join(MANIFEST).display().to_string();
        let manifest = parse_manifest(&manifest_name, &text)?;
        let mut files = BTreeMap::new();
        files.insert(MANIFEST.to_string(), text);
        for rel in referenced_files(&manifest) {
            if Path::new(&rel).is_absolute() || rel.split('/').any(|c| c == "..") {
                return Err(WorkloadError::Manifest {
                    file: manifest_name,
                    message: format!("file \"{rel}\": a pack's files are inside its directory"),
                });
            }
            let t = read(&rel)?;
            files.insert(rel, t);
        }
        Pack::from_files(Origin::Dir(dir.to_path_buf()), files)
    }

    fn from_files(origin: Origin, files: BTreeMap<String, String>) -> Result<Pack, WorkloadError> {
        let label = |rel: &str| label_of(&origin, rel);
        let text = files.get(MANIFEST).ok_or_else(|| WorkloadError::Read {
            file: label(MANIFEST),
            message: "missing".into(),
        })?;
        let manifest = parse_manifest(&label(MANIFEST), text)?;
        for rel in referenced_files(&manifest) {
            if !files.contains_key(&rel) {
                return Err(WorkloadError::Read {
                    file: label(&rel),
                    message: "missing from the pack".into(),
                });
            }
        }
        let pack = Pack {
            origin,
            manifest,
            files,
        };
        for s in &pack.manifest.scripts {
            let name = label_of(&pack.origin, &s.file);
            pgsurge_script::parse_script(&name, pack.file(&s.file)).map_err(|e| {
                WorkloadError::Script {
                    file: name.clone(),
                    message: crate::error::script_message(&e),
                }
            })?;
        }
        Ok(pack)
    }

    /// The pack's name.
    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// The text of one of its files (empty if the pack has no such file; every file the
    /// manifest names is there).
    pub fn file(&self, rel: &str) -> &str {
        self.files.get(rel).map(String::as_str).unwrap_or("")
    }

    /// Every file, the manifest first, the others in path order.
    pub fn files(&self) -> Vec<(&str, &str)> {
        let mut v: Vec<(&str, &str)> = vec![(MANIFEST, self.file(MANIFEST))];
        v.extend(
            self.files
                .iter()
                .filter(|(p, _)| p.as_str() != MANIFEST)
                .map(|(p, t)| (p.as_str(), t.as_str())),
        );
        v
    }

    /// How a script of the pack is described in the run's report: `tpcc/new_order.sql`.
    pub fn script_desc(&self, rel: &str) -> String {
        match &self.origin {
            Origin::Builtin => format!("{}/{rel}", self.name()),
            Origin::Dir(d) => d.join(rel).display().to_string(),
        }
    }

    /// Whether the bench argument `arg` is one the pack itself gives a run: one of its
    /// scripts (`--file=tpcc/new_order.sql@45`) or a parameter at its default
    /// (`--define=nurand_c_id=259`), or its own mix (`--mix=deck`). A stored command
    /// line says `--workload=NAME` instead of these.
    pub fn is_own_arg(&self, arg: &str) -> bool {
        if arg == "--mix=deck" {
            return self.manifest.mix == pgsurge_engine::Mix::Deck;
        }
        if let Some(script) = arg.strip_prefix("--file=") {
            return self
                .manifest
                .scripts
                .iter()
                .any(|s| script == format!("{}@{}", self.script_desc(&s.file), s.weight));
        }
        if let Some(define) = arg.strip_prefix("--define=") {
            return self
                .parameters()
                .iter()
                .any(|(k, v)| define == format!("{k}={v}"));
        }
        false
    }

    /// The keying and think times of a run with the parameters `variables` (the
    /// pack's defaults and the `-D` values; the last of a name wins): for each of its
    /// scripts in manifest order, `(keying, mean think time)` in seconds, multiplied by
    /// `think_scale`. `None` when `think_times` is 0 (the default) or no script has
    /// such times.
    pub fn pauses(
        &self,
        variables: &[(String, String)],
    ) -> Result<Option<Vec<(f64, f64)>>, WorkloadError> {
        use crate::manifest::{THINK_SCALE, THINK_TIMES};
        let scripts = &self.manifest.scripts;
        if scripts
            .iter()
            .all(|s| s.keying_s.is_none() && s.think_s.is_none())
        {
            return Ok(None);
        }
        let value = |name: &str| {
            variables
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.trim().to_string())
        };
        let bad = |name: &str, message: String| WorkloadError::Parameter {
            pack: self.name().to_string(),
            name: name.to_string(),
            message,
        };
        match value(THINK_TIMES).as_deref() {
            None | Some("0") => return Ok(None),
            Some("1") => {}
            Some(other) => {
                return Err(bad(
                    THINK_TIMES,
                    format!("\"{other}\" is neither 0 (off) nor 1 (on)"),
                ))
            }
        }
        let scale = match value(THINK_SCALE) {
            None => 1.0,
            Some(text) => match text.parse::<f64>() {
                Ok(x) if x.is_finite() && x > 0.0 && x <= 1000.0 => x,
                _ => {
                    return Err(bad(
                        THINK_SCALE,
                        format!("\"{text}\" is not a number above 0 and at most 1000"),
                    ))
                }
            },
        };
        Ok(Some(
            scripts
                .iter()
                .map(|s| {
                    (
                        s.keying_s.unwrap_or(0.0) * scale,
                        s.think_s.unwrap_or(0.0) * scale,
                    )
                })
                .collect(),
        ))
    }

    /// Sets a parameter (`-D NAME=VALUE` given with `-i`), for the loader.
    pub fn set_parameter(&mut self, name: &str, value: &str) {
        self.manifest
            .parameters
            .insert(name.to_string(), toml::Value::String(value.to_string()));
    }

    /// The parameters as `(name, value text)`, for `-D` defaults.
    pub fn parameters(&self) -> Vec<(String, String)> {
        self.manifest
            .parameters
            .iter()
            .map(|(k, v)| (k.clone(), crate::manifest::parameter_text(v)))
            .collect()
    }
}

/// How a file of a pack is named in messages.
fn label_of(origin: &Origin, rel: &str) -> String {
    match origin {
        Origin::Builtin => rel.to_string(),
        Origin::Dir(d) => d.join(rel).display().to_string(),
    }
}

/// Every file a manifest names, each once, in manifest order.
fn referenced_files(m: &Manifest) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let all = m
        .load
        .schema
        .iter()
        .chain(m.load.steps.iter().map(|s| &s.file))
        .chain(&m.load.finish)
        .chain(m.scripts.iter().map(|s| &s.file));
    for f in all {
        if !out.contains(f) {
            out.push(f.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_pack_reads_and_its_scripts_parse() {
        for (name, files) in BUILTIN {
            let p = Pack::resolve(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(p.name(), *name);
            // Every embedded file is named by the manifest, so `show` prints only
            // what the pack uses.
            let used = referenced_files(&p.manifest);
            for (f, _) in files.iter().skip(1) {
                assert!(used.iter().any(|u| u == f), "{name}: {f} unused");
            }
        }
    }

    #[test]
    fn think_times_follow_the_parameters() {
        let p = Pack::resolve("tpcc").unwrap();
        let vars = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            p.parameters()
                .into_iter()
                .chain(v.iter().map(|(k, v)| (k.to_string(), v.to_string())))
                .collect()
        };
        assert_eq!(p.pauses(&vars(&[])).unwrap(), None);
        assert_eq!(p.pauses(&vars(&[("think_times", "0")])).unwrap(), None);
        let on = p.pauses(&vars(&[("think_times", "1")])).unwrap().unwrap();
        assert_eq!(
            on,
            [
                (18.0, 12.0),
                (3.0, 12.0),
                (2.0, 10.0),
                (2.0, 5.0),
                (2.0, 5.0)
            ]
        );
        let scaled = p
            .pauses(&vars(&[("think_times", "1"), ("think_scale", "0.5")]))
            .unwrap()
            .unwrap();
        assert_eq!(scaled[0], (9.0, 6.0));
        for (name, value) in [
            ("think_times", "2"),
            ("think_scale", "0"),
            ("think_scale", "x"),
        ] {
            let e = p
                .pauses(&vars(&[("think_times", "1"), (name, value)]))
                .unwrap_err()
                .to_string();
            assert!(e.contains(name) && e.contains(value), "{e}");
        }
        // A pack whose scripts have no such times ignores the parameters.
        let ycsb = Pack::resolve("ycsb-a").unwrap();
        assert_eq!(
            ycsb.pauses(&[("think_times".into(), "1".into())]).unwrap(),
            None
        );
    }

    #[test]
    fn an_unknown_name_lists_the_builtin_packs() {
        let e = Pack::resolve("nosuchpack").unwrap_err().to_string();
        assert!(e.contains("tpcc") && e.contains("nosuchpack"), "{e}");
    }
}
