//! The Prometheus text exposition format (version 0.0.4), as node_exporter serves it.
//!
//! The parser is this crate's own: the maintained crates do not fit.
//! `prometheus-parse` splits label values at every `,` and `=` and does not unescape
//! `\"` (node_exporter's `node_uname_info` and filesystem labels carry both kinds of
//! text), drops malformed lines without a word and brings `regex` and `chrono`;
//! `openmetrics-parser` is LGPL-3.0, which this MIT/Apache-2.0 project does not take.

/// One sample of the exposition format.
#[derive(Debug, Clone, PartialEq)]
pub struct PromSample {
    /// Metric name.
    pub name: String,
    /// Labels in the order given.
    pub labels: Vec<(String, String)>,
    /// Value (NaN and ±Inf allowed).
    pub value: f64,
}

impl PromSample {
    /// The value of label `k`.
    pub fn label(&self, k: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// Parses the Prometheus text exposition format (version 0.0.4): `# HELP`/`# TYPE`
/// and comments skipped, `name{label="value",...} value [timestamp]` per line, label
/// values with `\\`, `\"` and `\n` escapes. Any malformed line is an error naming it.
pub fn parse_exposition(text: &str) -> Result<Vec<PromSample>, String> {
    let mut out = Vec::new();
    for (no, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let s = parse_line(line).map_err(|e| {
            let shown: String = line.chars().take(80).collect();
            format!("line {}: {e}: {shown}", no + 1)
        })?;
        out.push(s);
    }
    Ok(out)
}

fn parse_line(line: &str) -> Result<PromSample, String> {
    let mut chars = line.char_indices().peekable();
    match chars.peek() {
        Some((_, c)) if is_name_start(*c) => {}
        _ => return Err("expected a metric name".into()),
    }
    let mut end = line.len();
    while let Some((i, c)) = chars.peek().copied() {
        if !is_name_char(c) {
            end = i;
            break;
        }
        chars.next();
    }
    let name = line[..end].to_string();
    let mut labels = Vec::new();
    if let Some((_, '{')) = chars.peek() {
        chars.next();
        loop {
            while matches!(chars.peek(), Some((_, c)) if c.is_whitespace()) {
                chars.next();
            }
            match chars.peek() {
                Some((_, '}')) => {
                    chars.next();
                    break;
                }
                Some((_, c)) if is_name_start(*c) => {}
                _ => return Err("expected a label name or '}'".into()),
            }
            let mut key = String::new();
            while let Some((_, c)) = chars.peek().copied() {
                if !is_name_char(c) {
                    break;
                }
                key.push(c);
                chars.next();
            }
            if !matches!(chars.next(), Some((_, '='))) {
                return Err(format!("expected '=' after label {key}"));
            }
            if !matches!(chars.next(), Some((_, '"'))) {
                return Err(format!("expected '\"' to open the value of label {key}"));
            }
            let mut value = String::new();
            loop {
                match chars.next() {
                    None => return Err(format!("unterminated value of label {key}")),
                    Some((_, '"')) => break,
                    Some((_, '\\')) => match chars.next() {
                        Some((_, 'n')) => value.push('\n'),
                        Some((_, '\\')) => value.push('\\'),
                        Some((_, '"')) => value.push('"'),
                        Some((_, c)) => {
                            value.push('\\');
                            value.push(c);
                        }
                        None => return Err(format!("unterminated value of label {key}")),
                    },
                    Some((_, c)) => value.push(c),
                }
            }
            labels.push((key, value));
            while matches!(chars.peek(), Some((_, c)) if c.is_whitespace()) {
                chars.next();
            }
            match chars.next() {
                Some((_, ',')) => {}
                Some((_, '}')) => break,
                _ => return Err("expected ',' or '}' after a label".into()),
            }
        }
    }
    let rest: String = chars.map(|(_, c)| c).collect();
    let mut fields = rest.split_whitespace();
    let v = fields.next().ok_or("missing value")?;
    let value = match v {
        "+Inf" | "Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        other => other
            .parse::<f64>()
            .map_err(|_| format!("\"{other}\" is not a number"))?,
    };
    if let Some(ts) = fields.next() {
        ts.parse::<i64>()
            .map_err(|_| format!("\"{ts}\" is not a timestamp"))?;
    }
    if fields.next().is_some() {
        return Err("unexpected text after the timestamp".into());
    }
    Ok(PromSample {
        name,
        labels,
        value,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const EXPOSITION: &str = r##"# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.
# TYPE node_cpu_seconds_total counter
node_cpu_seconds_total{cpu="0",mode="idle"} 100.5
node_cpu_seconds_total{cpu="0",mode="user"} 10
node_cpu_seconds_total{cpu="0",mode="nice"} 1
node_cpu_seconds_total{cpu="0",mode="system"} 5
node_cpu_seconds_total{cpu="1",mode="idle"} 99.5
node_cpu_seconds_total{cpu="1",mode="iowait"} 2e0
node_context_switches_total 1.234e+06
node_load1 0.5
node_memory_Dirty_bytes 4096
node_memory_MemTotal_bytes 8.589934592e+09
node_disk_read_bytes_total{device="sda"} 1048576
node_disk_io_time_seconds_total{device="sda"} 1.5
node_network_receive_bytes_total{device="eth0"} 2048
node_uname_info{domainname="(none)",machine="x86_64",nodename="db-\"1\"",release="6.1.0",sysname="Linux",version="#1 SMP"} 1
node_filesystem_size_bytes{device="/dev/sda1",fstype="ext4",mountpoint="/"} 1e10
node_filesystem_size_bytes{device="tmpfs",fstype="tmpfs",mountpoint="/run",} 1e6
node_scrape_collector_success{collector="arp"} NaN 1700000000000
"##;

    #[test]
    fn exposition_parses_names_labels_escapes_and_values() {
        let s = parse_exposition(EXPOSITION).unwrap();
        assert_eq!(s.len(), 17);
        assert_eq!(s[0].name, "node_cpu_seconds_total");
        assert_eq!(s[0].label("mode"), Some("idle"));
        assert_eq!(s[0].value, 100.5);
        assert_eq!(s[6].value, 1_234_000.0);
        let uname = s.iter().find(|x| x.name == "node_uname_info").unwrap();
        assert_eq!(uname.label("nodename"), Some("db-\"1\""));
        assert_eq!(s[15].label("mountpoint"), Some("/run"), "trailing comma");
        assert!(s[16].value.is_nan());
    }

    #[test]
    fn exposition_errors_name_the_line() {
        for (bad, what) in [
            ("node_x{a=\"1\" 3", "expected ',' or '}'"),
            ("node_x{a=1} 3", "expected '\"'"),
            ("node_x 3 4 5", "unexpected text"),
            ("node_x abc", "not a number"),
            ("{a=\"b\"} 1", "expected a metric name"),
            ("node_x{a=\"b", "unterminated"),
            ("node_x", "missing value"),
        ] {
            let e = parse_exposition(&format!("# ok\nnode_ok 1\n{bad}\n")).unwrap_err();
            assert!(e.starts_with("line 3: "), "{bad}: {e}");
            assert!(e.contains(what), "{bad}: {e}");
        }
    }
}
