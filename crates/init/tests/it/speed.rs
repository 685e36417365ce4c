//! Init time against pgbench (issue item 7): `-i -s N` (default 10) run three
//! times each, interleaved, on one throwaway server; prints each run, the
//! medians and the ratio ours/pgbench. Ignored by default (it measures, it
//! does not check); run it with
//! `cargo test --release -p pgsurge-init --test it speed -- --ignored --nocapture`.
//! `PGSURGE_INIT_SPEED_SCALE`, `PGSURGE_INIT_SPEED_STEPS` (e.g. `dtGvp` for
//! server-side generation) and `PGSURGE_INIT_SPEED_ROUNDS` change the scale,
//! the steps and the number of rounds.

use std::time::Instant;

use crate::common::*;
use pgsurge_init::InitSpec;
use pgsurge_server::testing::TestServer;

/// User + system CPU seconds of `who` (`RUSAGE_CHILDREN` or `RUSAGE_THREAD`).
fn cpu_seconds(who: libc::c_int) -> f64 {
    // SAFETY: getrusage only writes into the zeroed struct we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a rusage; `who` is a valid selector.
    let rc = unsafe { libc::getrusage(who, &mut usage) };
    assert_eq!(rc, 0, "getrusage failed");
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// CPU seconds the server's postmaster and its reaped children (the backends
/// of finished connections, parallel workers) have used: a measure of the
/// server work an init run caused, less sensitive to a busy machine than wall time.
fn server_cpu_seconds(postmaster: i32) -> f64 {
    let stat =
        std::fs::read_to_string(format!("/proc/{postmaster}/stat")).expect("read postmaster stat");
    let after = stat.rsplit_once(')').expect("stat has a comm field").1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime, stime, cutime, cstime are fields 14..=17; `after` starts at field 3.
    let ticks: f64 = fields[11..=14]
        .iter()
        .map(|f| f.parse::<f64>().expect("tick count"))
        .sum();
    // SAFETY: sysconf has no memory-safety preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks / hz
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The `done in …` line.
fn done_line(stderr: &str) -> &str {
    stderr
        .lines()
        .rfind(|l| l.starts_with("done in"))
        .unwrap_or("(no done line)")
}

/// `(step name, seconds)` pairs of a `done in X s (a 1.00 s, b 2.00 s).` line.
fn step_times(done: &str) -> Vec<(String, f64)> {
    let inner = done
        .split_once('(')
        .map(|(_, rest)| rest.trim_end_matches(").").trim_end_matches(')'))
        .unwrap_or("");
    inner
        .split(", ")
        .filter_map(|part| {
            let part = part.strip_suffix(" s")?;
            let (name, secs) = part.rsplit_once(' ')?;
            Some((name.to_owned(), secs.parse().ok()?))
        })
        .collect()
}

/// Median of each step's time over runs.
fn step_medians(runs: &[String]) -> String {
    let parsed: Vec<Vec<(String, f64)>> = runs.iter().map(|d| step_times(d)).collect();
    let Some(first) = parsed.first() else {
        return String::new();
    };
    first
        .iter()
        .enumerate()
        .map(|(i, (name, _))| {
            let times = parsed
                .iter()
                .filter_map(|r| r.get(i).map(|(_, t)| *t))
                .collect();
            format!("{name} {:.2} s", median(times))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
#[ignore = "measurement; run explicitly with --ignored --nocapture"]
fn init_time_vs_pgbench() {
    if !have_pgbench() {
        return;
    }
    let scale: i32 = std::env::var("PGSURGE_INIT_SPEED_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let steps = std::env::var("PGSURGE_INIT_SPEED_STEPS").unwrap_or_else(|_| "dtgvp".into());
    let srv = TestServer::shared();
    let theirs_db = srv.create_database("init_speed_ref");
    let ours_db = srv.create_database("init_speed_ours");
    let scale_arg = scale.to_string();
    let spec = InitSpec {
        steps: steps.clone(),
        scale,
        ..InitSpec::default()
    };
    let rounds: usize = std::env::var("PGSURGE_INIT_SPEED_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let (mut theirs, mut ours) = (Vec::new(), Vec::new());
    let (mut theirs_cpu, mut ours_cpu) = (Vec::new(), Vec::new());
    let (mut theirs_srv, mut ours_srv) = (Vec::new(), Vec::new());
    let postmaster = srv.cluster().pid();
    let (mut theirs_steps, mut ours_steps) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        let (t, cpu) = (Instant::now(), cpu_seconds(libc::RUSAGE_CHILDREN));
        let server = server_cpu_seconds(postmaster);
        let r = run_pgbench(srv, &theirs_db, None, &["-s", &scale_arg, "-I", &steps]);
        let secs = t.elapsed().as_secs_f64();
        std::thread::sleep(std::time::Duration::from_millis(300)); // let the backend exit
        theirs_srv.push(server_cpu_seconds(postmaster) - server);
        theirs_cpu.push(cpu_seconds(libc::RUSAGE_CHILDREN) - cpu);
        assert!(r.ok, "pgbench failed: {}", r.stderr);
        println!(
            "round {round} pgbench {secs:.3} s  {}",
            done_line(&r.stderr)
        );
        theirs.push(secs);
        theirs_steps.push(done_line(&r.stderr).to_owned());

        let (t, cpu) = (Instant::now(), cpu_seconds(libc::RUSAGE_THREAD));
        let server = server_cpu_seconds(postmaster);
        let r = run_ours(srv, &ours_db, None, &spec);
        let secs = t.elapsed().as_secs_f64();
        std::thread::sleep(std::time::Duration::from_millis(300));
        ours_srv.push(server_cpu_seconds(postmaster) - server);
        ours_cpu.push(cpu_seconds(libc::RUSAGE_THREAD) - cpu);
        assert!(r.ok, "initialize failed: {}", r.stderr);
        println!(
            "round {round} ours    {secs:.3} s  {}",
            done_line(&r.stderr)
        );
        ours.push(secs);
        ours_steps.push(done_line(&r.stderr).to_owned());
    }
    let (a, b) = (median(theirs), median(ours));
    println!(
        "-i -s {scale} -I {steps}: pgbench median {a:.3} s, ours median {b:.3} s, ratio ours/pgbench {:.3}",
        b / a
    );
    println!(
        "client CPU (user+sys) median: pgbench {:.3} s, ours {:.3} s",
        median(theirs_cpu),
        median(ours_cpu)
    );
    println!(
        "server CPU median: pgbench {:.3} s, ours {:.3} s",
        median(theirs_srv),
        median(ours_srv)
    );
    println!("pgbench step medians: {}", step_medians(&theirs_steps));
    println!("ours    step medians: {}", step_medians(&ours_steps));
}

#[test]
fn done_lines_parse() {
    let steps = step_times("done in 0.54 s (drop tables 0.00 s, client-side generate 0.27 s).");
    assert_eq!(
        steps,
        vec![
            ("drop tables".to_owned(), 0.0),
            ("client-side generate".to_owned(), 0.27)
        ]
    );
}
