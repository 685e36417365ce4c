//! What the user is told after the manifest: how to start the run and collect
//! its results.

/// `--store=URL` and `--group=NAME` among the bench options, when both are there.
pub(super) fn store_group(bench: &[String]) -> Option<(&str, &str)> {
    let find = |prefix: &str| bench.iter().rev().find_map(|a| a.strip_prefix(prefix));
    Some((find("--store=")?, find("--group=")?))
}

/// `-T N` among the bench options (`-T N`, `-TN`, `--time=N`, `--time N`).
pub(super) fn run_seconds(bench: &[String]) -> Option<i64> {
    let mut it = bench.iter();
    let mut found = None;
    while let Some(a) = it.next() {
        let value = match a.as_str() {
            "-T" | "--time" => it.next().map(String::as_str),
            s => s.strip_prefix("--time=").or_else(|| s.strip_prefix("-T")),
        };
        if let Some(v) = value.and_then(|v| v.parse::<i64>().ok()) {
            found = Some(v);
        }
    }
    found
}

/// `8` when every generator has 8 clients, else `8 or 7`.
pub(super) fn clients_text(clients: &[u32]) -> String {
    match (clients.iter().max(), clients.iter().min()) {
        (Some(hi), Some(lo)) if hi != lo => format!("{hi} or {lo}"),
        (Some(hi), _) => hi.to_string(),
        _ => "0".into(),
    }
}
