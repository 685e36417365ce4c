//! Shared checks of the report tests.

#![allow(dead_code)]

use pgsurge_report::{run_compare, write_report, CompareArgs, Format, ReportRequest};
use pgsurge_store::Store;
use std::path::Path;

/// Cells of a text table row: columns are separated by two or more spaces.
fn text_cells(line: &str) -> Vec<String> {
    regex::Regex::new(r"\s{2,}")
        .unwrap()
        .split(line.trim())
        .map(str::to_string)
        .collect()
}

/// Text of the `<td>` cells of each `<tr>` in `html`, tags removed, entities decoded.
fn html_rows(html: &str) -> Vec<Vec<String>> {
    let tag = regex::Regex::new(r"<[^>]+>").unwrap();
    html.split("<tr>")
        .skip(1)
        .filter(|r| r.contains("<td"))
        .map(|r| {
            r.split("<td")
                .skip(1)
                .map(|c| {
                    let c = &c[c.find('>').unwrap() + 1..];
                    let c = &c[..c.find("</td>").unwrap()];
                    tag.replace_all(c, "")
                        .replace("&amp;", "&")
                        .replace("&lt;", "<")
                        .replace("&gt;", ">")
                        .replace("&quot;", "\"")
                        .replace("&#39;", "'")
                })
                .collect()
        })
        .collect()
}

fn decode(s: &str) -> String {
    s.replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
}

/// Compares the store's default pair with `pgsurge compare` (text and JSON) and finds
/// the same comparison in the report; asserts that title, every cell (label, columns,
/// change, interval, p, verdicts), the summary and the noise floor agree, and that the
/// JSON is valid against the schema. Returns the number of cells checked.
pub fn assert_compare_and_report_agree(store: &Path, expected_title: &str) -> usize {
    let args = CompareArgs {
        a: None,
        b: None,
        store: Some(store.to_str().unwrap().into()),
        aa: None,
        along: vec![],
        format: Format::Json,
        fail_on: None,
        margin: None,
        explain: false,
        profile_diff: None,
    };
    let c = run_compare(&args).expect("compare");
    assert_eq!(c.title, expected_title);
    let text = pgsurge_report::compare::render_text(&c);
    let json: serde_json::Value = serde_json::to_value(&c).unwrap();
    pgsurge_testkit::schema::assert_valid(pgsurge_report::compare_schema(), &json);

    // The report of the same store.
    let out = store.parent().unwrap().join("report-agree");
    let mut s = Store::open(store.to_str().unwrap()).unwrap();
    let files = write_report(&mut s, &ReportRequest::default(), &out).unwrap();
    let index = std::fs::read_to_string(&files.index).unwrap();
    let head = format!(
        "<h3 class=\"comparison\">{}</h3>",
        pgsurge_report::html::escape(&c.title)
    );
    let start = index
        .find(&head)
        .unwrap_or_else(|| panic!("report has no comparison titled {}", c.title));
    let section = &index[start..];
    let end = section[head.len()..]
        .find("<h3")
        .map(|e| e + head.len())
        .unwrap_or(section.len());
    let section = &section[..end];
    // The verdict table comes first, the table of each side's repeats after it.
    let (verdicts, repeats) = section
        .split_once("Repeats of each side")
        .expect("the report shows each side's repeats");
    // The per-transaction costs table, when the runs measured them, follows the repeats.
    let repeats = repeats
        .split("Per-transaction costs")
        .next()
        .unwrap_or(repeats);
    let html = html_rows(verdicts);
    let html_repeats = html_rows(repeats);

    // Text rows: the lines after the header line that starts with "cell".
    let lines: Vec<&str> = text.lines().collect();
    let h = lines
        .iter()
        .position(|l| l.starts_with("cell "))
        .expect("header");
    let text_rows: Vec<Vec<String>> = lines[h + 1..]
        .iter()
        .take_while(|l| !l.trim().is_empty())
        .map(|l| text_cells(l))
        .collect();
    assert_eq!(text_rows.len(), c.cells.len());
    assert_eq!(html.len(), c.cells.len(), "report rows: {html:?}");
    for ((t, hrow), cell) in text_rows
        .iter()
        .zip(&html)
        .zip(&json["cells"].as_array().unwrap().clone())
    {
        // Same label, A, B, n, change, interval, p, verdict, and the same for p99.
        assert_eq!(&hrow[..13], &t[..13], "text and report differ");
        assert_eq!(t[0], cell["label"].as_str().unwrap());
        let change = cell["tps"]["change"].as_f64().unwrap();
        assert_eq!(t[4], format!("{:+.1}%", change * 100.0), "JSON change");
        assert_eq!(
            t[7],
            cell["tps"]["verdict"].as_str().unwrap(),
            "JSON verdict"
        );
        assert_eq!(t[12], cell["p99_ms"]["verdict"].as_str().unwrap());
        // Direction: the change is B against A, computed from the printed columns.
        let (a, b) = (
            cell["tps"]["a"].as_f64().unwrap(),
            cell["tps"]["b"].as_f64().unwrap(),
        );
        assert!((b / a - 1.0 - change).abs() < 1e-12);
        let dir = cell["tps"]["direction"].as_str().unwrap();
        assert_eq!(dir, if change > 0.0 { "higher" } else { "lower" });
        assert_eq!(t[1], format!("{a:.1}"));
        assert!(["faster", "slower", "no-difference", "inconclusive"].contains(&t[7].as_str()));
    }
    // The repeats table: the same rows in text and report (two per cell, A then B),
    // and the same numbers as the JSON's.
    let r = lines
        .iter()
        .position(|l| l.starts_with("cell ") && l.contains("  side  "))
        .expect("repeats header");
    let text_repeats: Vec<Vec<String>> = lines[r + 1..]
        .iter()
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            // A side's second line has no label: its first column is blank.
            let mut cells = text_cells(l);
            if l.starts_with(' ') {
                cells.insert(0, String::new());
            }
            cells
        })
        .collect();
    assert_eq!(text_repeats.len(), 2 * c.cells.len());
    assert_eq!(html_repeats, text_repeats, "text and report repeats differ");
    for (pair, cell) in text_repeats
        .chunks(2)
        .zip(json["cells"].as_array().unwrap())
    {
        for (row, side) in pair.iter().zip(["a", "b"]) {
            let st = &cell["repeats"]["tps"][side];
            assert_eq!(row[2], st["n"].to_string());
            assert_eq!(row[3], format!("{:.1}", st["mean"].as_f64().unwrap()));
            assert_eq!(row[7], format!("{:.1}", st["stddev"].as_f64().unwrap()));
        }
    }
    // Summary and noise floor: the same sentence in both.
    let summary = c.summary_text();
    assert!(text.contains(&summary));
    assert!(
        decode(section).contains(&summary),
        "summary differs in the report"
    );
    let floor = c
        .noise_floor_text()
        .expect("the A/A twin gives a noise floor");
    assert!(text.contains(&floor));
    assert!(
        decode(section).contains(&floor),
        "noise floor missing in the report"
    );
    c.cells.len()
}
