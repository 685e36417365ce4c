//! Why a cell changed, from the profiles stored with its repeats: `compare --explain`
//! (the functions whose cost per transaction changed most, judged by
//! `pgsurge_analysis::profile_diff`) and `compare --profile-diff=DIR` (a differential
//! flame graph per compared cell, B against A, drawn by `inferno`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use pgsurge_analysis::profile_diff::{function_shifts, FunctionShift, RepeatProfile};
use pgsurge_results::profile::{pooled, Profile, ProfileKind};
use pgsurge_store::Store;
use serde::Serialize;

use crate::compare::{CompareRow, Comparison};

/// How many functions an explanation lists.
pub const TOP_FUNCTIONS: usize = 10;

/// One kind of profile of a compared cell, explained.
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    /// `server-cpu`, `client-cpu` or `server-offcpu`.
    pub kind: String,
    /// Repeats of A with this profile.
    pub a_n: usize,
    /// Repeats of B with this profile.
    pub b_n: usize,
    /// The functions whose cost per transaction changed most, largest self change
    /// first (µs per transaction: CPU time for on-CPU profiles, time off the CPU for
    /// off-CPU ones, where a function's self time is the time the server waited in it:
    /// it was the innermost frame outside the kernel).
    pub functions: Vec<FunctionShift>,
    /// What the profiles say about themselves (stacks cut short…), each once.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A repeat's profiles with the transactions of its window.
struct Stored {
    transactions: f64,
    profiles: Vec<Profile>,
}

fn load(store: &mut Store, run_ids: &[i64]) -> Result<Vec<Stored>, String> {
    let mut out = Vec::new();
    for id in run_ids {
        let records = store.profiles(*id).map_err(|e| e.to_string())?;
        if records.is_empty() {
            continue;
        }
        let profiles = records
            .iter()
            .map(pgsurge_store::profile::decode)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("run {id}: {e}"))?;
        let transactions = store
            .load_run(*id)
            .map_err(|e| e.to_string())?
            .run
            .record
            .transactions
            .unwrap_or(0) as f64;
        out.push(Stored {
            transactions,
            profiles,
        });
    }
    Ok(out)
}

fn repeat_profile(transactions: f64, p: &Profile) -> RepeatProfile {
    let f = |m: BTreeMap<String, u64>| m.into_iter().map(|(k, v)| (k, v as f64)).collect();
    RepeatProfile {
        transactions,
        us_per_count: match p.frequency_hz {
            Some(hz) if hz > 0 => 1e6 / f64::from(hz),
            _ => 1.0,
        },
        self_counts: f(p.self_counts()),
        inclusive_counts: f(p.inclusive_counts()),
    }
}

/// The profiles of `kind` among `stored`.
fn of_kind(stored: &[Stored], kind: ProfileKind) -> Vec<(f64, &Profile)> {
    stored
        .iter()
        .flat_map(|s| {
            s.profiles
                .iter()
                .filter(move |p| p.kind == kind)
                .map(move |p| (s.transactions, p))
        })
        .collect()
}

fn explain_row(
    store: &mut Store,
    row: &CompareRow,
    confidence: f64,
) -> Result<Vec<Explanation>, String> {
    let a = load(store, &row.a_run_ids)?;
    let b = load(store, &row.b_run_ids)?;
    let mut out = Vec::new();
    for kind in ProfileKind::ALL {
        let (pa, pb) = (of_kind(&a, kind), of_kind(&b, kind));
        if pa.is_empty() || pb.is_empty() {
            continue;
        }
        let ra: Vec<RepeatProfile> = pa.iter().map(|(t, p)| repeat_profile(*t, p)).collect();
        let rb: Vec<RepeatProfile> = pb.iter().map(|(t, p)| repeat_profile(*t, p)).collect();
        let mut notes: Vec<String> = Vec::new();
        for (side, list) in [("A", &pa), ("B", &pb)] {
            for (_, p) in list.iter() {
                for n in &p.notes {
                    let n = format!("{side}: {n}");
                    if !notes.contains(&n) {
                        notes.push(n);
                    }
                }
            }
        }
        out.push(Explanation {
            kind: kind.name().to_string(),
            a_n: pa.len(),
            b_n: pb.len(),
            functions: function_shifts(&ra, &rb, confidence, TOP_FUNCTIONS),
            notes,
        });
    }
    Ok(out)
}

/// `--explain`: each compared cell's explanations from the profiles stored with its
/// repeats (none for a cell whose sides were not both profiled).
pub fn attach(store: &mut Store, c: &mut Comparison) -> Result<(), String> {
    let confidence = c.confidence;
    for row in &mut c.cells {
        row.explanations = explain_row(store, row, confidence)?;
    }
    Ok(())
}

fn signed(v: f64) -> String {
    let digits = if v.abs() >= 100.0 {
        0
    } else if v.abs() >= 1.0 {
        1
    } else {
        3
    };
    format!("{v:+.digits$}")
}

fn shift_text(s: &pgsurge_analysis::profile_diff::CostShift) -> String {
    match (s.ci_low, s.ci_high) {
        (Some(lo), Some(hi)) => format!("{} µs [{}, {}]", signed(s.change), signed(lo), signed(hi)),
        _ => format!("{} µs", signed(s.change)),
    }
}

/// The explanations of every cell as text (empty when none has one).
pub fn text_section(c: &Comparison, markdown: bool) -> String {
    let mut s = String::new();
    for row in c.cells.iter().filter(|r| !r.explanations.is_empty()) {
        for e in &row.explanations {
            let title = ProfileKind::parse(&e.kind)
                .map_or_else(|| e.kind.clone(), |k| k.title().to_string());
            // Off the CPU, a function's self time is the time it waited.
            let waited = if e.kind == ProfileKind::ServerOffCpu.name() {
                "; self: time waited in the function"
            } else {
                ""
            };
            let head = format!(
                "Why {} ({title}, {} vs {} profiled repeats; change per transaction, B − A, {:.0} % interval{waited}):",
                row.label,
                e.a_n,
                e.b_n,
                c.confidence * 100.0
            );
            if markdown {
                let _ = writeln!(s, "\n**{head}**\n");
                s.push_str(
                    "| function | self | inclusive | self share A → B |\n|---|---|---|---|\n",
                );
            } else {
                let _ = writeln!(s, "\n{head}");
            }
            for f in &e.functions {
                let share = format!(
                    "{:.1} % → {:.1} %",
                    f.a_self_share * 100.0,
                    f.b_self_share * 100.0
                );
                if markdown {
                    let _ = writeln!(
                        s,
                        "| `{}` | {} | {} | {share} |",
                        f.function.replace('|', "\\|"),
                        shift_text(&f.self_us),
                        shift_text(&f.inclusive_us)
                    );
                } else {
                    let _ = writeln!(
                        s,
                        "  {:<32} self {:<28} inclusive {:<28} share {share}",
                        f.function,
                        shift_text(&f.self_us),
                        shift_text(&f.inclusive_us)
                    );
                }
            }
            for n in &e.notes {
                let _ = writeln!(s, "{}note: {n}", if markdown { "\n" } else { "  " });
            }
        }
    }
    s
}

/// A file name made of `label` (letters, digits, `-`, `_`, `.` kept).
fn file_stem(label: &str) -> String {
    let stem: String = label
        .chars()
        .map(|ch| {
            if ch.is_ascii_alphanumeric() || "-_.".contains(ch) {
                ch
            } else {
                '_'
            }
        })
        .collect();
    stem.trim_matches('_').to_string()
}

/// A differential flame graph of `a` against `b`: B's stacks, each frame coloured by
/// the change of its share (red grew, blue shrank; A normalized to B's total); `unit`
/// names a count.
pub fn differential_svg(
    title: &str,
    a: &BTreeMap<String, u64>,
    b: &BTreeMap<String, u64>,
    unit: &str,
) -> Result<Vec<u8>, String> {
    let text = |m: &BTreeMap<String, u64>| pgsurge_results::profile::folded_text(m);
    let (ta, tb) = (text(a), text(b));
    let mut folded = Vec::new();
    let opt = inferno::differential::Options {
        normalize: true,
        ..Default::default()
    };
    inferno::differential::from_readers(opt, ta.as_bytes(), tb.as_bytes(), &mut folded)
        .map_err(|e| e.to_string())?;
    let mut svg = Vec::new();
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_string();
    options.count_name = unit.to_string();
    inferno::flamegraph::from_reader(&mut options, folded.as_slice(), &mut svg)
        .map_err(|e| e.to_string())?;
    Ok(svg)
}

/// A flame graph of `stacks`.
pub fn flame_svg(
    title: &str,
    stacks: &BTreeMap<String, u64>,
    unit: &str,
) -> Result<Vec<u8>, String> {
    let text = pgsurge_results::profile::folded_text(stacks);
    let mut svg = Vec::new();
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_string();
    options.count_name = unit.to_string();
    inferno::flamegraph::from_lines(&mut options, text.lines(), &mut svg)
        .map_err(|e| e.to_string())?;
    Ok(svg)
}

/// `--profile-diff=DIR`: a differential flame graph per compared cell and kind of
/// profile both sides have (repeats pooled), written into `dir` (created when
/// missing); the files written.
pub fn write_diffs(store: &mut Store, c: &Comparison, dir: &Path) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut written = Vec::new();
    for row in &c.cells {
        let a = load(store, &row.a_run_ids)?;
        let b = load(store, &row.b_run_ids)?;
        for kind in ProfileKind::ALL {
            let (pa, pb) = (of_kind(&a, kind), of_kind(&b, kind));
            if pa.is_empty() || pb.is_empty() {
                continue;
            }
            let sa = pooled(pa.iter().map(|(_, p)| &p.stacks));
            let sb = pooled(pb.iter().map(|(_, p)| &p.stacks));
            let title = format!(
                "{}: {} ({} against {})",
                row.label,
                kind.title(),
                c.b_label,
                c.a_label
            );
            let svg = differential_svg(&title, &sa, &sb, kind.unit())?;
            let path = dir.join(format!("{}-{}.svg", file_stem(&row.label), kind.name()));
            pgsurge_store::write_output(&path, &svg)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            written.push(path);
        }
    }
    Ok(written)
}
