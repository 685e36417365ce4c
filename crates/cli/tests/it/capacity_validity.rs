//! A capacity figure carries the reasons its steps may not hold, from a real campaign:
//! a search from 200 to 400 tps on a throwaway server whose transaction sleeps 2 ms
//! (eight clients can do 4000 a second, so both steps pass), where the first repeat of
//! the 400 tps step has one failed transaction planted in it. A `before_test` hook
//! creates a sequence that starts at 1 for that test only; the script's first statement
//! raises a serialization failure when it draws 1, which pgbench counts as a failed
//! transaction and goes on. The 400 tps step — the one the answer rests on — names
//! the failed transactions in `campaign run`'s lines, `results show`, the JSON of
//! `results export` and the report's capacity section; the 200 tps step names none.

use std::process::Command;

fn pgsurge(dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pgsurge"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_capacity_step_with_failed_transactions_names_them_and_the_answer_says_it_rests_on_it() {
    let dir = pgsurge_testkit::scratch_dir("capacity-validity");
    std::fs::write(
        dir.path().join("planted.sql"),
        "DO $$BEGIN IF nextval('planted') = 1 THEN \
         RAISE EXCEPTION 'planted failure' USING ERRCODE = '40001'; END IF; END$$;\n\
         SELECT pg_sleep(0.002);\n",
    )
    .unwrap();
    let campaign = r#"
[campaign]
name = "capacity-validity"

[[target]]
name = "local"

[matrix]
scales = [1]
clients = [8]
scripts = [{ file = "planted.sql" }]

[run]
duration = 2

[hygiene]
vacuum = false
checkpoint = false

[hooks]
before_test = """
case "$PGSURGE_TEST_KEY" in */cap-r400/1) start=1 ;; *) start=2 ;; esac
"$PGSURGE_BIN_DIR/psql" -X -q -v ON_ERROR_STOP=1 \
  -c "DROP SEQUENCE IF EXISTS planted" -c "CREATE SEQUENCE planted START $start"
"""

[capacity]
percentile = 99
bound = "500ms"
start_rate = 200
max_rate = 400
repeats = 3
resolution = 0.2
"#;
    std::fs::write(dir.path().join("c.toml"), campaign).unwrap();
    let (code, _, err) = pgsurge(
        dir.path(),
        &["campaign", "run", "c.toml", "--store", "r.db"],
    );
    assert_eq!(code, 0, "{err}");
    let planted = "runs with failed transactions (1 of 3)";
    // The step's line as the search goes, and the answer when the campaign ends.
    let step_line = |rate: &str| {
        err.lines()
            .find(|l| l.starts_with(&format!("capacity local/s1/planted/c8: {rate} tps")))
            .unwrap_or_else(|| panic!("no line for the {rate} tps step: {err}"))
    };
    assert!(step_line("400").contains(planted), "{err}");
    assert!(!step_line("200").contains("failed transactions"), "{err}");
    let answer = err
        .lines()
        .find(|l| l.contains("capacity at p99 < 500 ms"))
        .unwrap_or_else(|| panic!("no answer: {err}"));
    assert!(
        answer.contains("400 tps — at least 400 tps")
            && answer.contains(&format!("may not hold: at 400 tps (passing): {planted}")),
        "{answer}"
    );

    // `results show` recomputes the same answer from the store.
    let (code, out, err) = pgsurge(dir.path(), &["results", "show", "--store", "r.db"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(answer.trim_start_matches("capacity: ")),
        "{out}"
    );

    // The JSON of `results export` carries each step's reasons and the answer's.
    let (code, out, err) = pgsurge(
        dir.path(),
        &["results", "export", "--store", "r.db", "--format", "json"],
    );
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let (code, schema, err) = pgsurge(dir.path(), &["schema", "export"]);
    assert_eq!(code, 0, "{err}");
    pgsurge_testkit::schema::assert_valid(&schema, &doc);
    let cap = &doc["sets"][0]["capacity"][0];
    assert_eq!(cap["rate"], 400.0, "{cap}");
    let step = |rate: f64| {
        cap["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["rate"] == rate)
            .unwrap_or_else(|| panic!("no step at {rate}: {cap}"))
    };
    let kinds = |reasons: &serde_json::Value| -> Vec<String> {
        reasons
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["kind"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(
        kinds(&step(400.0)["validity"]).contains(&"failures".to_string()),
        "{cap}"
    );
    assert_eq!(step(400.0)["validity"][0]["a"], 1, "{cap}");
    assert!(
        !kinds(&step(200.0)["validity"]).contains(&"failures".to_string()),
        "{cap}"
    );
    let answer_reasons = cap["validity"].as_array().unwrap();
    assert!(
        answer_reasons
            .iter()
            .any(|r| r["kind"] == "failures" && r["rate"] == 400.0 && r["pass"] == true),
        "{cap}"
    );

    // The report's capacity section: the answer with its reason, and the step's row.
    let (code, _, err) = pgsurge(
        dir.path(),
        &["report", "--store", "r.db", "--output", "report"],
    );
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(dir.path().join("report/index.html")).unwrap();
    let section = html
        .split("<h2>Capacity</h2>")
        .nth(1)
        .unwrap_or_else(|| panic!("no capacity section: {html}"));
    let section = section.split("<h2>").next().unwrap();
    assert!(
        section.contains(&format!("at 400 tps (passing): {planted}")),
        "{section}"
    );
    let row = |rate: &str| {
        section
            .split("<tr>")
            .find(|r| r.starts_with(&format!("<td class=\"l\">{rate}</td>")))
            .unwrap_or_else(|| panic!("no row for {rate}: {section}"))
    };
    assert!(row("400.0").contains(planted), "{section}");
    assert!(!row("200.0").contains("failed transactions"), "{section}");
}
