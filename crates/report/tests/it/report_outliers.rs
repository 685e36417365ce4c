//! The report's `(outlier)` marker, rendered from a store written through its own API
//! (the subject is the rendering, so the figures are planted, not measured): a cell of
//! six repeats whose fourth ran at 400 tps against five near 1000. The scale × clients
//! table marks the fourth repeat's link `(outlier)` and no other; a cell of six repeats
//! with ordinary spread marks none.

use pgsurge_report::{write_report, ReportRequest};
use pgsurge_store::*;

/// Writes one cell of repeats with `tps` (clients `clients`); returns their run ids.
fn write_cell(
    store: &mut Store,
    set_id: i64,
    target_id: i64,
    clients: i64,
    tps: &[f64],
) -> Vec<i64> {
    let mut ids = Vec::new();
    for (i, tps) in tps.iter().enumerate() {
        let repeat = i as i64 + 1;
        let id = store
            .write_run(&RunWrite {
                run: RunRecord {
                    set_id,
                    target_id: Some(target_id),
                    test_key: format!("local/s1/select-only/c{clients}/r-/{repeat}"),
                    repeat_no: repeat,
                    status: "ok".into(),
                    script: Some("select-only".into()),
                    scale: Some(1),
                    clients: Some(clients),
                    tps: Some(*tps),
                    ..Default::default()
                },
                ..Default::default()
            })
            .unwrap();
        ids.push(id);
    }
    ids
}

/// The links of the table entry that lists run `first` (its `<span class="muted">`).
fn entry_links(index: &str, first: i64) -> &str {
    let at = index
        .find(&format!("<a href=\"run-{first}.html\">#{first}</a>"))
        .unwrap_or_else(|| panic!("no link to run {first}: {index}"));
    let start = index[..at].rfind("<span class=\"muted\">").unwrap();
    let end = at + index[at..].find("</td>").unwrap();
    &index[start..end]
}

#[test]
fn the_outlier_repeat_and_only_it_is_marked_in_the_report() {
    let dir = pgsurge_testkit::scratch_dir("report-outliers");
    let mut store = Store::open(dir.path().join("r.db").to_str().unwrap()).unwrap();
    let set_id = store
        .create_set(&SetRecord {
            name: "outliers".into(),
            kind: "campaign".into(),
            status: "complete".into(),
            created_at: "2026-11-22T00:00:00Z".into(),
            ..Default::default()
        })
        .unwrap();
    let target_id = store
        .upsert_target(&TargetRecord {
            set_id,
            name: "local".into(),
            kind: "throwaway".into(),
            ..Default::default()
        })
        .unwrap();
    let planted = write_cell(
        &mut store,
        set_id,
        target_id,
        8,
        &[1000.0, 1010.0, 990.0, 400.0, 1005.0, 995.0],
    );
    let ordinary = write_cell(
        &mut store,
        set_id,
        target_id,
        16,
        &[1500.0, 1420.0, 1580.0, 1460.0, 1540.0, 1500.0],
    );
    let files = write_report(
        &mut store,
        &ReportRequest::default(),
        &dir.path().join("out"),
    )
    .unwrap();
    let index = std::fs::read_to_string(&files.index).unwrap();

    let links = entry_links(&index, planted[0]);
    let marked: Vec<i64> = planted
        .iter()
        .copied()
        .filter(|id| {
            links.contains(&format!(
                "<a href=\"run-{id}.html\">#{id}</a><span class=\"warn\" title=\"outlier:"
            ))
        })
        .collect();
    assert_eq!(marked, [planted[3]], "{links}");
    assert_eq!(links.matches("(outlier)</span>").count(), 1, "{links}");
    // Kept: the outlier is still one of the cell's linked repeats.
    for id in &planted {
        assert!(links.contains(&format!("#{id}</a>")), "{links}");
    }

    let links = entry_links(&index, ordinary[0]);
    assert!(!links.contains("(outlier)"), "{links}");
}
