//! The report's flame graphs, from the profiles stored with the tests: one per test
//! and kind of profile (`run-<id>-<kind>.svg`), one per cell pooled over its repeats
//! (`cell-<first run id>-<kind>.svg`) and a differential one per compared cell, B
//! against A (`diff-<A's first run id>-<B's first run id>-<kind>.svg`). They are SVG
//! files beside the pages, drawn by `inferno` ([`crate::explain`]); a test's page
//! embeds its own, a comparison links the pooled and differential ones of its cells.
//! What a profile says about itself (stacks cut short…) stands above its graph.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use pgsurge_results::profile::{pooled, Profile, ProfileKind};
use pgsurge_store::{Run, Store};

use crate::compare::Comparison;
use crate::explain::{differential_svg, flame_svg};
use crate::html::escape;
use crate::pages::ReportError;

/// The profiles of a report's tests, and the flame graphs written of them.
pub(crate) struct Flames {
    /// The profiles of each run that has any.
    profiles: BTreeMap<i64, Vec<Profile>>,
    out: PathBuf,
    /// The graph files written (names within `out`), each once.
    written: BTreeSet<String>,
    /// Every file written, in order.
    pub files: Vec<PathBuf>,
}

/// A graph drawn or not: its file name, or why there is none.
type Drawn = Result<String, String>;

impl Flames {
    /// The profiles stored with `runs`; the graphs go into `out`.
    pub fn load(store: &mut Store, runs: &[Run], out: &Path) -> Result<Flames, ReportError> {
        let mut profiles = BTreeMap::new();
        for run in runs {
            let records = store.profiles(run.id)?;
            if records.is_empty() {
                continue;
            }
            let decoded = records
                .iter()
                .map(pgsurge_store::profile::decode)
                .collect::<Result<Vec<_>, _>>()?;
            profiles.insert(run.id, decoded);
        }
        Ok(Flames {
            profiles,
            out: out.to_path_buf(),
            written: BTreeSet::new(),
            files: Vec::new(),
        })
    }

    /// Writes `svg` as `name` (once); the name, or why the graph could not be drawn.
    fn write(
        &mut self,
        name: String,
        svg: impl FnOnce() -> Result<Vec<u8>, String>,
    ) -> Result<Drawn, ReportError> {
        if self.written.contains(&name) {
            return Ok(Ok(name));
        }
        let bytes = match svg() {
            Ok(b) => b,
            Err(e) => return Ok(Err(e)),
        };
        let path = self.out.join(&name);
        pgsurge_store::write_output(&path, &bytes).map_err(|source| ReportError::Write {
            path: path.clone(),
            source,
        })?;
        self.written.insert(name.clone());
        self.files.push(path);
        Ok(Ok(name))
    }

    /// The stacks of `kind` of `ids`' profiles pooled, with the number of profiles
    /// pooled and their notes (each once).
    fn pooled(
        &self,
        ids: &[i64],
        kind: ProfileKind,
    ) -> (BTreeMap<String, u64>, usize, Vec<String>) {
        let of_kind: Vec<&Profile> = ids
            .iter()
            .filter_map(|id| self.profiles.get(id))
            .flatten()
            .filter(|p| p.kind == kind)
            .collect();
        let mut notes: Vec<String> = Vec::new();
        for n in of_kind.iter().flat_map(|p| &p.notes) {
            if !notes.contains(n) {
                notes.push(n.clone());
            }
        }
        (
            pooled(of_kind.iter().map(|p| &p.stacks)),
            of_kind.len(),
            notes,
        )
    }

    /// The section of a test's page: each profile's notes and its flame graph,
    /// embedded (empty when the test has no profile).
    pub fn run_section(&mut self, run_id: i64) -> Result<String, ReportError> {
        let Some(profiles) = self.profiles.get(&run_id).cloned() else {
            return Ok(String::new());
        };
        let mut s = String::from(
            "<h2>Profiles</h2><p class=\"muted\">Where the processes were when sampled \
             over the measured run: each box a function, as wide as its share of the \
             samples, its callers below it. Click a box to zoom; Ctrl-F searches.</p>",
        );
        for p in &profiles {
            let total = p.total();
            let freq = p
                .frequency_hz
                .map(|f| format!(" at {f} Hz"))
                .unwrap_or_default();
            let _ = write!(
                s,
                "<h3>{}: {total} {}{freq}</h3>",
                escape(p.kind.title()),
                p.kind.unit()
            );
            s.push_str(&notes_html(&p.notes));
            if total == 0 {
                continue;
            }
            let title = format!("Test #{run_id}: {}", p.kind.title());
            let name = format!("run-{run_id}-{}.svg", p.kind.name());
            let drawn = self.write(name, || flame_svg(&title, &p.stacks, p.kind.unit()))?;
            s.push_str(&embed(&drawn));
        }
        Ok(s)
    }

    /// The flame graphs of `c`'s cells: each side's repeats pooled, and B against A;
    /// an HTML list linking them (empty when no compared cell has profiles).
    pub fn comparison_html(&mut self, c: &Comparison) -> Result<String, ReportError> {
        let mut items = String::new();
        for row in &c.cells {
            let (Some(a_id), Some(b_id)) = (row.a_run_ids.first(), row.b_run_ids.first()) else {
                continue;
            };
            for kind in ProfileKind::ALL {
                let (sa, na, notes_a) = self.pooled(&row.a_run_ids, kind);
                let (sb, nb, notes_b) = self.pooled(&row.b_run_ids, kind);
                if na == 0 && nb == 0 {
                    continue;
                }
                let mut links = Vec::new();
                for (side, label, id, stacks, n) in [
                    ("A", &c.a_label, a_id, &sa, na),
                    ("B", &c.b_label, b_id, &sb, nb),
                ] {
                    if stacks.is_empty() {
                        continue;
                    }
                    let title = format!("{label} · {}: {} ({n} repeats)", row.label, kind.title());
                    let name = format!("cell-{id}-{}.svg", kind.name());
                    let drawn = self.write(name, || flame_svg(&title, stacks, kind.unit()))?;
                    links.push(link(&drawn, &format!("{side} ({n} pooled)")));
                }
                if !sa.is_empty() && !sb.is_empty() {
                    let title = format!(
                        "{}: {} ({} against {})",
                        row.label,
                        kind.title(),
                        c.b_label,
                        c.a_label
                    );
                    let name = format!("diff-{a_id}-{b_id}-{}.svg", kind.name());
                    let drawn =
                        self.write(name, || differential_svg(&title, &sa, &sb, kind.unit()))?;
                    links.push(link(&drawn, "B against A"));
                }
                let notes: Vec<String> = notes_a
                    .iter()
                    .map(|n| format!("A: {n}"))
                    .chain(notes_b.iter().map(|n| format!("B: {n}")))
                    .collect();
                let _ = write!(
                    items,
                    "<li>{} ({}): {}{}</li>",
                    escape(&row.label),
                    escape(kind.title()),
                    links.join(" · "),
                    notes_html(&notes)
                );
            }
        }
        if items.is_empty() {
            return Ok(String::new());
        }
        Ok(format!(
            "<p class=\"muted\">Flame graphs of the profiled cells, each side's repeats \
             pooled; B against A is B's graph with each frame coloured by the change of \
             its share (red grew, blue shrank):</p><ul class=\"flames\">{items}</ul>"
        ))
    }
}

fn notes_html(notes: &[String]) -> String {
    notes
        .iter()
        .map(|n| format!("<p class=\"warn\">{}</p>", escape(n)))
        .collect()
}

fn embed(drawn: &Drawn) -> String {
    match drawn {
        Ok(name) => format!(
            "<p><a href=\"{n}\">open the flame graph</a></p>\
             <object class=\"flame\" type=\"image/svg+xml\" data=\"{n}\"></object>",
            n = escape(name)
        ),
        Err(e) => format!("<p class=\"warn\">no flame graph: {}</p>", escape(e)),
    }
}

fn link(drawn: &Drawn, text: &str) -> String {
    match drawn {
        Ok(name) => format!("<a href=\"{}\">{}</a>", escape(name), escape(text)),
        Err(e) => format!("{}: no flame graph ({})", escape(text), escape(e)),
    }
}
