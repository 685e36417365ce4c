//! A Prometheus node_exporter endpoint of the server's host: the scrape over `http://`
//! or `https://` (HTTP basic auth from the URL's user info, a CA file for a certificate
//! of a private CA), and the reading and manifest made of its samples.
//!
//! A password never leaves this module: the [`Exporter`]'s `Debug` and every
//! [`ScrapeError`] show the URL with the password masked.

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;
use pgsurge_wire::redact;
use serde_json::{json, Value};

use super::exposition::{parse_exposition, PromSample};
use super::{data_dir_entry, CpuModes, HostReading};

/// Largest `/metrics` answer read (a big host's answer is a few MB).
const MAX_BODY: u64 = 64 << 20;

/// A node_exporter endpoint as a target gives it.
#[derive(Clone, PartialEq)]
pub struct Exporter {
    /// `http://` or `https://` URL; `user:password@` before the host gives HTTP basic
    /// auth (percent-encoded as in any URL). `/metrics` when the URL has no path.
    pub url: String,
    /// PEM file of the certificates that vouch for an `https://` endpoint (a private
    /// CA, or the self-signed certificate itself); none: the public web roots.
    pub ca_file: Option<PathBuf>,
}

impl Exporter {
    /// An endpoint at `url` vouched for by the public web roots.
    pub fn new(url: impl Into<String>) -> Exporter {
        Exporter {
            url: url.into(),
            ca_file: None,
        }
    }

    /// The URL with its password masked: what messages show.
    pub fn shown(&self) -> String {
        redact::redact(&self.url)
    }
}

impl fmt::Debug for Exporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exporter")
            .field("url", &self.shown())
            .field("ca_file", &self.ca_file)
            .finish()
    }
}

/// A scrape of node_exporter that failed. `url` is always the masked URL.
#[derive(Debug, thiserror::Error)]
pub enum ScrapeError {
    /// The URL is not one this client reads.
    #[error("node_exporter URL \"{url}\": {reason}")]
    Url {
        /// The URL, password masked.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The CA file is unreadable or holds no certificate.
    #[error("node_exporter {url}: CA file {path}: {reason}")]
    CaFile {
        /// The URL, password masked.
        url: String,
        /// The file as given.
        path: String,
        /// Why it is not usable.
        reason: String,
    },
    /// The endpoint asks for credentials, or refused the ones given (HTTP 401).
    #[error("node_exporter {url}: HTTP 401 Unauthorized: {reason}")]
    Unauthorized {
        /// The URL, password masked.
        url: String,
        /// Whether credentials were sent.
        reason: &'static str,
    },
    /// Any other answer than 200.
    #[error("node_exporter {url}: HTTP {status}")]
    Status {
        /// The URL, password masked.
        url: String,
        /// The HTTP status.
        status: u16,
    },
    /// No answer: name resolution, connection, TLS handshake, timeout, I/O.
    #[error("node_exporter {url}: {reason}")]
    Transport {
        /// The URL, password masked.
        url: String,
        /// What failed (secrets masked).
        reason: String,
    },
    /// The answer is not the text exposition format.
    #[error("node_exporter {url}: {reason}")]
    Exposition {
        /// The URL, password masked.
        url: String,
        /// The parser's message (line number and line).
        reason: String,
    },
}

/// Where a request goes, and as whom.
#[derive(Debug, PartialEq)]
struct Endpoint {
    /// The URL to request: no user info, `/metrics` when the URL had no path.
    target: String,
    /// `Authorization` header value when the URL has user info.
    auth: Option<String>,
    /// True for `https://`.
    tls: bool,
}

/// Percent-decodes URL user info (`%40` is `@`); invalid escapes stay as written.
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// Splits a node_exporter URL into what to request and the basic-auth header.
fn endpoint(url: &str) -> Result<Endpoint, String> {
    let url = url.trim();
    let (scheme, rest) = if let Some(r) = url.strip_prefix("http://") {
        ("http", r)
    } else if let Some(r) = url.strip_prefix("https://") {
        ("https", r)
    } else {
        return Err("only http:// and https:// URLs are supported".into());
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let (userinfo, hostport) = match authority.rfind('@') {
        Some(at) => (Some(&authority[..at]), &authority[at + 1..]),
        None => (None, authority),
    };
    if hostport.is_empty() || hostport.starts_with(':') {
        return Err("no host".into());
    }
    let path = match path {
        "" | "/" => "/metrics",
        p if p.starts_with('#') => "/metrics",
        p => p.split('#').next().unwrap_or(p),
    };
    let auth = userinfo.map(|ui| {
        let (user, password) = ui.split_once(':').unwrap_or((ui, ""));
        let pair = format!("{}:{}", percent_decode(user), percent_decode(password));
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        )
    });
    Ok(Endpoint {
        target: format!("{scheme}://{hostport}{path}"),
        auth,
        tls: scheme == "https",
    })
}

/// The certificates of a PEM file.
fn read_ca_file(path: &std::path::Path) -> Result<Vec<ureq::tls::Certificate<'static>>, String> {
    let pem = std::fs::read(path).map_err(|e| e.to_string())?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        if let ureq::tls::PemItem::Certificate(c) = item.map_err(|e| e.to_string())? {
            certs.push(c);
        }
    }
    if certs.is_empty() {
        return Err("no PEM certificate in it".into());
    }
    Ok(certs)
}

/// A client of one node_exporter endpoint, made once and used for every scrape.
pub struct Scraper {
    endpoint: Endpoint,
    agent: ureq::Agent,
    /// The URL with its password masked.
    shown: String,
    /// The secrets of the URL (raw and decoded), masked in every message.
    secrets: Vec<String>,
}

impl fmt::Debug for Scraper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scraper").field("url", &self.shown).finish()
    }
}

impl Scraper {
    /// A client of `exporter`; `timeout` bounds each whole scrape (connection, TLS,
    /// answer). Fails on a URL it cannot read or an unusable CA file.
    pub fn new(exporter: &Exporter, timeout: Duration) -> Result<Scraper, ScrapeError> {
        let shown = exporter.shown();
        let endpoint = endpoint(&exporter.url).map_err(|reason| ScrapeError::Url {
            url: shown.clone(),
            reason,
        })?;
        let mut tls = ureq::tls::TlsConfig::builder();
        if let Some(path) = &exporter.ca_file {
            let certs = read_ca_file(path).map_err(|reason| ScrapeError::CaFile {
                url: shown.clone(),
                path: path.display().to_string(),
                reason,
            })?;
            tls = tls.root_certs(ureq::tls::RootCerts::new_with_certs(&certs));
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            // The exporter is reached directly, whatever proxy the environment names.
            .proxy(None)
            .user_agent("pgsurge")
            .tls_config(tls.build())
            .build()
            .into();
        // Raw, unescaped and percent-decoded.
        let secrets = redact::passwords(&exporter.url);
        Ok(Scraper {
            endpoint,
            agent,
            shown,
            secrets,
        })
    }

    /// The masked URL.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    fn transport(&self, e: &ureq::Error) -> ScrapeError {
        let reason = match e {
            ureq::Error::Timeout(_) => "no answer in time (timeout)".to_string(),
            ureq::Error::HostNotFound => "host not found".to_string(),
            ureq::Error::Io(io) if self.endpoint.tls && io.raw_os_error().is_none() => {
                format!("TLS: {io}")
            }
            ureq::Error::Tls(_) | ureq::Error::Rustls(_) | ureq::Error::Pem(_) => {
                format!("TLS: {e}")
            }
            other => other.to_string(),
        };
        ScrapeError::Transport {
            url: self.shown.clone(),
            reason: redact::redact_with(&reason, &self.secrets),
        }
    }

    /// GET of the endpoint's text.
    pub fn get(&self) -> Result<String, ScrapeError> {
        let mut req = self
            .agent
            .get(&self.endpoint.target)
            .header("Accept", "text/plain");
        if let Some(auth) = &self.endpoint.auth {
            req = req.header("Authorization", auth);
        }
        let mut resp = req.call().map_err(|e| self.transport(&e))?;
        match resp.status().as_u16() {
            200 => {}
            401 => {
                return Err(ScrapeError::Unauthorized {
                    url: self.shown.clone(),
                    reason: if self.endpoint.auth.is_some() {
                        "the user name or password was refused"
                    } else {
                        "the endpoint needs a user and password (https://user:password@host:9100/metrics)"
                    },
                })
            }
            status => {
                return Err(ScrapeError::Status {
                    url: self.shown.clone(),
                    status,
                })
            }
        }
        resp.body_mut()
            .with_config()
            .limit(MAX_BODY)
            .read_to_string()
            .map_err(|e| self.transport(&e))
    }

    /// The endpoint's samples.
    pub fn samples(&self) -> Result<Vec<PromSample>, ScrapeError> {
        let body = self.get()?;
        parse_exposition(&body).map_err(|reason| ScrapeError::Exposition {
            url: self.shown.clone(),
            reason,
        })
    }
}

/// A reading from node_exporter samples (`node_cpu_seconds_total`, `node_*` gauges
/// and counters of the default collectors).
pub fn reading_from_node_exporter(samples: &[PromSample]) -> HostReading {
    let mut r = HostReading::default();
    let mut cpu = CpuModes::default();
    let mut have_cpu = false;
    for s in samples {
        let v = s.value;
        if !v.is_finite() {
            continue;
        }
        let dev = || s.label("device").unwrap_or("").to_string();
        match s.name.as_str() {
            "node_cpu_seconds_total" => {
                have_cpu = true;
                match s.label("mode").unwrap_or("") {
                    "user" | "nice" => cpu.user += v,
                    "system" | "irq" | "softirq" => cpu.system += v,
                    "idle" => cpu.idle += v,
                    "iowait" => cpu.iowait += v,
                    "steal" => cpu.steal += v,
                    _ => {}
                }
            }
            "node_context_switches_total" => r.ctxt = Some(v),
            "node_procs_running" => r.procs_running = Some(v),
            "node_procs_blocked" => r.procs_blocked = Some(v),
            "node_load1" | "node_load5" | "node_load15" => {
                let l = r.load.get_or_insert([0.0; 3]);
                let i = match s.name.as_str() {
                    "node_load1" => 0,
                    "node_load5" => 1,
                    _ => 2,
                };
                l[i] = v;
            }
            "node_memory_Dirty_bytes" => {
                r.mem.insert("dirty", v);
            }
            "node_memory_Writeback_bytes" => {
                r.mem.insert("writeback", v);
            }
            "node_memory_Cached_bytes" => {
                r.mem.insert("cached", v);
            }
            "node_memory_MemAvailable_bytes" => {
                r.mem.insert("available", v);
            }
            "node_memory_MemTotal_bytes" => {
                r.mem.insert("total", v);
            }
            "node_disk_reads_completed_total" => r.disks.entry(dev()).or_default().reads = v,
            "node_disk_writes_completed_total" => r.disks.entry(dev()).or_default().writes = v,
            "node_disk_read_bytes_total" => r.disks.entry(dev()).or_default().read_bytes = v,
            "node_disk_written_bytes_total" => r.disks.entry(dev()).or_default().written_bytes = v,
            "node_disk_read_time_seconds_total" => {
                r.disks.entry(dev()).or_default().read_time_s = v
            }
            "node_disk_write_time_seconds_total" => {
                r.disks.entry(dev()).or_default().write_time_s = v
            }
            "node_disk_io_time_seconds_total" => r.disks.entry(dev()).or_default().io_time_s = v,
            "node_network_receive_bytes_total" => r.net.entry(dev()).or_default().0 = v,
            "node_network_transmit_bytes_total" => r.net.entry(dev()).or_default().1 = v,
            _ => {}
        }
    }
    if have_cpu {
        r.cpu = Some(cpu);
    }
    r
}

/// Host manifest of the server's host from node_exporter samples.
pub fn manifest_via_node_exporter(samples: &[PromSample], data_dir: Option<&str>) -> Value {
    let uname = samples.iter().find(|s| s.name == "node_uname_info");
    let cpus: BTreeSet<&str> = samples
        .iter()
        .filter(|s| s.name == "node_cpu_seconds_total")
        .filter_map(|s| s.label("cpu"))
        .collect();
    let model = samples
        .iter()
        .find(|s| s.name == "node_cpu_info")
        .and_then(|s| s.label("model_name"))
        .map(str::to_string);
    let mem = samples
        .iter()
        .find(|s| s.name == "node_memory_MemTotal_bytes")
        .map(|s| s.value as u64);
    let os_release = samples
        .iter()
        .find(|s| s.name == "node_os_info")
        .and_then(|s| s.label("pretty_name"))
        .map(str::to_string);
    // A /proc/mounts-like text from node_filesystem_size_bytes' labels.
    let mounts: String = samples
        .iter()
        .filter(|s| s.name == "node_filesystem_size_bytes")
        .filter_map(|s| {
            Some(format!(
                "{} {} {} -\n",
                s.label("device")?,
                s.label("mountpoint")?.replace(' ', "\\040"),
                s.label("fstype")?
            ))
        })
        .collect();
    json!({
        "hostname": uname.and_then(|u| u.label("nodename")),
        "kernel": uname.and_then(|u| u.label("release")),
        "kernel_version": uname.and_then(|u| u.label("version")),
        "os_release": os_release,
        "cpu": {"model": model, "count": (!cpus.is_empty()).then_some(cpus.len())},
        "memory_bytes": mem,
        "data_directory": data_dir_entry((!mounts.is_empty()).then_some(mounts.as_str()), data_dir),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hostmetrics::exposition::tests::EXPOSITION;

    #[test]
    fn node_exporter_reading_and_manifest() {
        let s = parse_exposition(EXPOSITION).unwrap();
        let r = reading_from_node_exporter(&s);
        let cpu = r.cpu.unwrap();
        assert_eq!(
            (cpu.user, cpu.system, cpu.idle, cpu.iowait),
            (11.0, 5.0, 200.0, 2.0)
        );
        assert_eq!(r.ctxt, Some(1_234_000.0));
        assert_eq!(r.mem["dirty"], 4096.0);
        assert_eq!(r.disks["sda"].read_bytes, 1_048_576.0);
        assert_eq!(r.net["eth0"].0, 2048.0);
        let m = manifest_via_node_exporter(&s, Some("/run/pg/data"));
        assert_eq!(m["hostname"], "db-\"1\"");
        assert_eq!(m["kernel"], "6.1.0");
        assert_eq!(m["cpu"]["count"], 2);
        assert_eq!(m["memory_bytes"], 8_589_934_592u64);
        assert_eq!(m["data_directory"]["fstype"], "tmpfs");
        assert_eq!(m["data_directory"]["in_memory"], true);
    }
}

#[cfg(test)]
mod real_text_tests {
    use super::*;

    /// node_exporter 1.5.0's answer on a real host (2 CPUs, a virtio disk).
    const REAL: &str = include_str!("testdata/node_exporter.txt");

    #[test]
    fn a_real_answer_parses_into_a_reading_and_a_manifest() {
        let s = parse_exposition(REAL).unwrap();
        assert_eq!(s.len(), 507, "every sample line");
        let r = reading_from_node_exporter(&s);
        // cpu0: user 10449.66 nice 215.23 system 1345.46 irq 0 softirq 15.41 idle 1757.34.
        let cpu0: f64 = s
            .iter()
            .filter(|x| x.name == "node_cpu_seconds_total" && x.label("cpu") == Some("0"))
            .filter(|x| matches!(x.label("mode"), Some("user" | "nice")))
            .map(|x| x.value)
            .sum();
        assert!((cpu0 - (10449.66 + 215.23)).abs() < 1e-6, "{cpu0}");
        let cpu = r.cpu.unwrap();
        assert!(cpu.user > cpu0 && cpu.idle > 1757.34, "{cpu:?}");
        assert_eq!(r.disks["vda"].read_bytes, 7.2917771264e10);
        assert!(r.ctxt.is_some() && r.load.is_some());
        for k in ["dirty", "writeback", "cached", "available", "total"] {
            assert!(r.mem.contains_key(k), "{k}: {:?}", r.mem);
        }
        assert!(r.net.contains_key("eth0"), "{:?}", r.net);
        let m = manifest_via_node_exporter(&s, Some("/"));
        assert_eq!(m["hostname"], "vm");
        assert_eq!(m["kernel"], "6.18.44-fc-v657");
        assert_eq!(m["cpu"]["count"], 2);
        assert!(
            m["memory_bytes"].as_u64().is_some_and(|b| b > 1 << 30),
            "{m}"
        );
        assert!(m["data_directory"]["fstype"].is_string(), "{m}");
    }
}

#[cfg(test)]
mod client_tests {
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;

    use super::*;
    use crate::hostmetrics::exposition::tests::EXPOSITION;

    const SECRET: &str = "s3cr%40t";

    /// Serves one connection with `answer` (status line and body) and returns the
    /// request's head.
    fn serve_once(
        status: &'static str,
        body: &'static str,
    ) -> (String, std::thread::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let handle = std::thread::spawn(move || {
            let (sock, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(sock.try_clone().unwrap());
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            let mut sock = sock;
            write!(
                sock,
                "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
            head
        });
        (format!("127.0.0.1:{port}"), handle)
    }

    #[test]
    fn the_url_gives_the_target_and_the_basic_auth() {
        let e = endpoint("https://bench:p%40ss:w@db1:9100").unwrap();
        assert_eq!(e.target, "https://db1:9100/metrics");
        assert!(e.tls);
        let b64 = e.auth.unwrap().strip_prefix("Basic ").unwrap().to_string();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        assert_eq!(decoded, b"bench:p@ss:w");
        let e = endpoint("http://db1:9100/custom?x=1").unwrap();
        assert_eq!(
            (e.target.as_str(), e.auth, e.tls),
            ("http://db1:9100/custom?x=1", None, false)
        );
        assert_eq!(
            endpoint("http://db1/").unwrap().target,
            "http://db1/metrics"
        );
        assert!(endpoint("ftp://db1")
            .unwrap_err()
            .contains("http:// and https://"));
        assert!(endpoint("http://u:p@/metrics")
            .unwrap_err()
            .contains("no host"));
    }

    #[test]
    fn a_bad_url_or_ca_file_is_an_error_without_the_password() {
        let e = Scraper::new(
            &Exporter::new(format!("ftp://u:{SECRET}@db1")),
            Duration::from_secs(1),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("ftp://u:********@db1") && !e.contains("s3cr"),
            "{e}"
        );
        let ex = Exporter {
            url: format!("https://u:{SECRET}@db1:9100/metrics"),
            ca_file: Some("/nonexistent/ca.pem".into()),
        };
        assert!(!format!("{ex:?}").contains("s3cr"), "{ex:?}");
        let e = Scraper::new(&ex, Duration::from_secs(1))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("CA file /nonexistent/ca.pem") && !e.contains("s3cr"),
            "{e}"
        );
    }

    #[test]
    fn a_refused_password_is_a_401_error_naming_the_masked_url() {
        let (addr, server) = serve_once("401 Unauthorized", "Unauthorized\n");
        let url = format!("http://bench:{SECRET}@{addr}/metrics");
        let scraper = Scraper::new(&Exporter::new(&url), Duration::from_secs(5)).unwrap();
        let e = scraper.samples().unwrap_err();
        assert!(matches!(e, ScrapeError::Unauthorized { .. }), "{e:?}");
        let e = e.to_string();
        assert!(
            e.contains(&format!("http://bench:********@{addr}/metrics")),
            "{e}"
        );
        assert!(e.contains("refused") && !e.contains("s3cr"), "{e}");
        let head = server.join().unwrap();
        assert!(head.starts_with("GET /metrics HTTP/1.1\r\n"), "{head}");
        // bench:s3cr@t, percent-decoded, in base64.
        assert!(
            head.contains("authorization: Basic YmVuY2g6czNjckB0\r\n")
                || head.contains("Authorization: Basic YmVuY2g6czNjckB0\r\n"),
            "{head}"
        );
    }

    #[test]
    fn an_answer_parses_into_samples() {
        let (addr, server) = serve_once("200 OK", EXPOSITION);
        let scraper = Scraper::new(
            &Exporter::new(format!("http://{addr}")),
            Duration::from_secs(5),
        )
        .unwrap();
        let samples = scraper.samples().unwrap();
        assert_eq!(samples.len(), 17);
        assert!(!server
            .join()
            .unwrap()
            .to_ascii_lowercase()
            .contains("authorization"));
    }

    #[test]
    fn a_refused_connection_and_a_tls_failure_are_errors_not_hangs() {
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let url = format!("http://u:{SECRET}@127.0.0.1:{port}/metrics");
        let start = std::time::Instant::now();
        let e = Scraper::new(&Exporter::new(url), Duration::from_secs(3))
            .unwrap()
            .get()
            .unwrap_err();
        assert!(matches!(e, ScrapeError::Transport { .. }), "{e:?}");
        assert!(!e.to_string().contains("s3cr"), "{e}");
        // A plain-HTTP server reached over https: the handshake fails.
        let (addr, server) = serve_once("200 OK", "x 1\n");
        let e = Scraper::new(
            &Exporter::new(format!("https://u:{SECRET}@{addr}/metrics")),
            Duration::from_secs(3),
        )
        .unwrap()
        .get()
        .unwrap_err()
        .to_string();
        assert!(e.contains("TLS") && !e.contains("s3cr"), "{e}");
        // Errors, not hangs: within the timeouts (and the time to notice them).
        assert!(start.elapsed() < Duration::from_secs(30));
        let _ = server.join();
    }
}
