//! `pgsurge-floor`: the least work a pgbench-style client can do per transaction.
//!
//! A benchmark harness, not part of the product. `bench/compare.sh` runs it beside pgbench
//! and pgsurge on the same cluster, so every machine measures its own floor: the client
//! CPU per transaction that the kernel and the protocol cost, with nothing of a script
//! language, statistics or logs on top. What it does per request is what any client must
//! do: fill in the parameters, one `write` of a pre-encoded Bind/Describe/Execute/Sync (the
//! messages of libpq's `PQsendQueryPrepared`, which pgbench and pgsurge send, so the server
//! does the same work for all three) or a simple Query, one `read` per readiness of a
//! level-triggered epoll, a scan to ReadyForQuery.
//! In prepared mode a connection's first request also carries the Parse of every
//! statement, inside the timed run as pgbench and pgsurge prepare theirs: a backend's
//! first Parse loads its catalog caches, work the server must do for every client in the
//! measured time whichever client drives it.
//! It reads the monotonic clock (vDSO, no syscall) once per transaction.
//!
//! Only Unix-socket connections with trust authentication are supported (what
//! `bench/lib.sh` starts). It prints pgbench's two summary lines that the scripts read:
//! `number of transactions actually processed: N` and `tps = X (without initial
//! connection time)`.

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use pgsurge_floor::epoll::Epoll;

const USAGE: &str =
    "usage: pgsurge-floor [--simple] [--tpcb] -c CLIENTS -j THREADS -T SECONDS [-s SCALE] [-P SECONDS]
connects with PGHOST (a socket directory), PGPORT, PGUSER, PGDATABASE; trust auth only";

/// A value drawn per transaction, as pgbench's tpcb-like script draws it.
#[derive(Clone, Copy)]
enum Var {
    Aid,
    Bid,
    Tid,
    Delta,
}

/// One statement of the workload: its SQL with `$n` placeholders and what fills them.
struct Step {
    sql: &'static str,
    params: &'static [Var],
}

const SELECT_ONLY: &[Step] = &[Step {
    sql: "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
    params: &[Var::Aid],
}];

const TPCB_LIKE: &[Step] = &[
    Step {
        sql: "BEGIN",
        params: &[],
    },
    Step {
        sql: "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
        params: &[Var::Delta, Var::Aid],
    },
    Step {
        sql: "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
        params: &[Var::Aid],
    },
    Step {
        sql: "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2",
        params: &[Var::Delta, Var::Tid],
    },
    Step {
        sql: "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2",
        params: &[Var::Delta, Var::Bid],
    },
    Step {
        sql: "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) \
              VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
        params: &[Var::Tid, Var::Bid, Var::Aid, Var::Delta],
    },
    Step {
        sql: "END",
        params: &[],
    },
];

struct Config {
    simple: bool,
    steps: &'static [Step],
    clients: usize,
    threads: usize,
    duration: Duration,
    /// `-P`: the length of the intervals whose TPS is printed after the run, 0 for none.
    progress: Duration,
    scale: i64,
    socket: String,
    user: String,
    database: String,
}

fn main() -> ExitCode {
    let config = match parse_args(std::env::args().skip(1)) {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("pgsurge-floor: {msg}\n{USAGE}");
            return ExitCode::from(1);
        }
    };
    match run(&config) {
        Ok((txns, elapsed, marks)) => {
            // As pgbench's `-P` lines (on stderr), but printed after the run: the floor
            // keeps nothing but a counter per thread while it runs.
            let secs = config.progress.as_secs_f64();
            let mut before = 0;
            for (k, &done) in marks.iter().enumerate() {
                eprintln!(
                    "progress: {:.1} s, {:.1} tps",
                    secs * (k + 1) as f64,
                    (done - before) as f64 / secs
                );
                before = done;
            }
            println!("number of transactions actually processed: {txns}");
            println!(
                "tps = {:.6} (without initial connection time)",
                txns as f64 / elapsed.as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pgsurge-floor: {e}");
            ExitCode::from(2)
        }
    }
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Config, String> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let host = env("PGHOST").unwrap_or_else(|| "/var/run/postgresql".into());
    if !host.starts_with('/') {
        return Err(format!(
            "PGHOST={host}: only Unix socket directories are supported"
        ));
    }
    let port = env("PGPORT").unwrap_or_else(|| "5432".into());
    let user = env("PGUSER").unwrap_or_else(|| "postgres".into());
    let database = env("PGDATABASE").unwrap_or_else(|| user.clone());
    let mut config = Config {
        simple: false,
        steps: SELECT_ONLY,
        clients: 1,
        threads: 1,
        duration: Duration::from_secs(10),
        progress: Duration::ZERO,
        scale: 1,
        socket: format!("{host}/.s.PGSQL.{port}"),
        user,
        database,
    };
    while let Some(arg) = args.next() {
        let mut value = |name: &str| -> Result<u64, String> {
            let v = args.next().ok_or(format!("{name} needs a value"))?;
            v.parse()
                .map_err(|_| format!("{name}: not a positive integer: {v}"))
        };
        match arg.as_str() {
            "--simple" => config.simple = true,
            "--tpcb" => config.steps = TPCB_LIKE,
            "-c" => config.clients = value("-c")? as usize,
            "-j" => config.threads = value("-j")? as usize,
            "-T" => config.duration = Duration::from_secs(value("-T")?),
            "-P" => config.progress = Duration::from_secs(value("-P")?),
            "-s" => config.scale = value("-s")? as i64,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if config.clients == 0 || config.threads == 0 || config.scale == 0 {
        return Err("-c, -j and -s must be at least 1".into());
    }
    config.threads = config.threads.min(config.clients);
    Ok(config)
}

/// Connects every client, runs the threads until the end of `-T` and returns the
/// transactions done, the time from the moment every thread had connected to the last
/// thread's end, and with `-P` the transactions done by the end of each interval.
fn run(config: &Config) -> io::Result<(u64, Duration, Vec<u64>)> {
    // As pgbench times `-T`: the run ends `-T` seconds after the start, connecting
    // included, and TPS counts from the moment every thread has connected. Each thread
    // connects its own clients, as pgbench's and pgsurge's threads do.
    let start = Instant::now();
    let end = start + config.duration;
    let connected = std::sync::Barrier::new(config.threads);
    let results = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..config.threads)
            .map(|t| {
                let connected = &connected;
                scope.spawn(move || -> io::Result<(Driven, Instant)> {
                    let conns = (t..config.clients)
                        .step_by(config.threads)
                        .map(|client| Conn::open(config, client as u64))
                        .collect::<io::Result<Vec<Conn>>>();
                    // Every thread reaches the barrier, even one that failed to connect.
                    connected.wait();
                    let bench_start = Instant::now();
                    Ok((drive(conns?, config, start, end)?, bench_start))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("driver thread panicked"))
            .collect::<io::Result<Vec<(Driven, Instant)>>>()
    })?;
    let bench_start = results
        .iter()
        .map(|r| r.1)
        .min()
        .unwrap_or_else(Instant::now);
    let elapsed = bench_start.elapsed();
    // Intervals every thread lived through to their end.
    let intervals = results.iter().map(|r| r.0.marks.len()).min().unwrap_or(0);
    let marks = (0..intervals)
        .map(|k| results.iter().map(|r| r.0.marks[k]).sum())
        .collect();
    Ok((results.iter().map(|r| r.0.txns).sum(), elapsed, marks))
}

/// What one thread did: its transactions, and with `-P` how many of them were done by
/// the end of each interval (counted from the start of the run, connecting included, as
/// pgbench's progress intervals are).
struct Driven {
    txns: u64,
    marks: Vec<u64>,
}

/// One connection: its socket, the bytes received but not yet parsed, and where it is in
/// the transaction.
struct Conn {
    stream: UnixStream,
    inbuf: Vec<u8>,
    filled: usize,
    outbuf: Vec<u8>,
    step: usize,
    rng: u64,
    vars: [i64; 4],
    /// The statements are prepared (prepared mode: after the first request).
    prepared: bool,
    done: bool,
}

impl Conn {
    fn open(config: &Config, client: u64) -> io::Result<Conn> {
        let mut stream = UnixStream::connect(&config.socket)?;
        let mut startup = Vec::new();
        startup.extend_from_slice(&0i32.to_be_bytes());
        startup.extend_from_slice(&196_608i32.to_be_bytes());
        for (k, v) in [("user", &config.user), ("database", &config.database)] {
            startup.extend_from_slice(k.as_bytes());
            startup.push(0);
            startup.extend_from_slice(v.as_bytes());
            startup.push(0);
        }
        startup.push(0);
        let len = startup.len() as i32;
        startup[..4].copy_from_slice(&len.to_be_bytes());
        stream.write_all(&startup)?;
        let mut conn = Conn {
            stream,
            inbuf: vec![0; 64 * 1024],
            filled: 0,
            outbuf: Vec::with_capacity(1024),
            step: 0,
            rng: 0x9E37_79B9_7F4A_7C15 ^ (client + 1).wrapping_mul(0xD1B5_4A32_D192_ED2D),
            vars: [0; 4],
            prepared: false,
            done: false,
        };
        conn.await_ready_blocking()?;
        conn.stream.set_nonblocking(true)?;
        Ok(conn)
    }

    /// Reads (blocking) until ReadyForQuery; used only while connecting.
    fn await_ready_blocking(&mut self) -> io::Result<()> {
        loop {
            let n = self.stream.read(&mut self.inbuf[self.filled..])?;
            if n == 0 {
                return Err(io::Error::other("server closed the connection"));
            }
            self.filled += n;
            if self.scan()? {
                return Ok(());
            }
        }
    }

    /// Consumes complete messages; true when ReadyForQuery was among them.
    fn scan(&mut self) -> io::Result<bool> {
        let mut at = 0;
        let mut ready = false;
        while self.filled - at >= 5 {
            let kind = self.inbuf[at];
            let len = i32::from_be_bytes(self.inbuf[at + 1..at + 5].try_into().unwrap()) as usize;
            if self.filled - at < 1 + len {
                break;
            }
            let body = &self.inbuf[at + 5..at + 1 + len];
            match kind {
                b'Z' => ready = true,
                b'E' => return Err(io::Error::other(server_error(body))),
                b'R' if body.get(..4) != Some(&[0, 0, 0, 0]) => {
                    return Err(io::Error::other(
                        "the floor client supports trust auth only",
                    ))
                }
                _ => {}
            }
            at += 1 + len;
        }
        if self.filled - at >= 5 {
            let len = i32::from_be_bytes(self.inbuf[at + 1..at + 5].try_into().unwrap()) as usize;
            if 1 + len > self.inbuf.len() {
                return Err(io::Error::other("reply larger than the read buffer"));
            }
        }
        self.inbuf.copy_within(at..self.filled, 0);
        self.filled -= at;
        Ok(ready)
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64*: cheap and good enough to spread keys over the table.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn draw_vars(&mut self, scale: i64) {
        let mut draw = |n: i64| (self.next_random() % n as u64) as i64;
        let aid = 1 + draw(100_000 * scale);
        let bid = 1 + draw(scale);
        let tid = 1 + draw(10 * scale);
        let delta = draw(10_001) - 5000;
        self.vars = [aid, bid, tid, delta];
    }

    fn var(&self, v: Var) -> i64 {
        self.vars[v as usize]
    }

    /// Encodes and writes the request for the current step: one `write`.
    fn send(&mut self, config: &Config) -> io::Result<()> {
        let step = &config.steps[self.step];
        self.outbuf.clear();
        if config.simple {
            let start = begin(&mut self.outbuf, b'Q');
            let mut rest = step.sql;
            while let Some(pos) = rest.find('$') {
                self.outbuf.extend_from_slice(&rest.as_bytes()[..pos]);
                let digits = rest[pos + 1..]
                    .bytes()
                    .take_while(u8::is_ascii_digit)
                    .count();
                let n: usize = rest[pos + 1..pos + 1 + digits].parse().unwrap();
                let value = self.var(step.params[n - 1]);
                push_int(&mut self.outbuf, value);
                rest = &rest[pos + 1 + digits..];
            }
            self.outbuf.extend_from_slice(rest.as_bytes());
            self.outbuf.push(0);
            finish(&mut self.outbuf, start);
        } else {
            if !self.prepared {
                parse_all(&mut self.outbuf, config.steps);
                self.prepared = true;
            }
            let start = begin(&mut self.outbuf, b'B');
            self.outbuf.push(0); // unnamed portal
            self.outbuf.push(b's');
            push_int(&mut self.outbuf, self.step as i64);
            self.outbuf.push(0);
            self.outbuf.extend_from_slice(&0i16.to_be_bytes());
            self.outbuf
                .extend_from_slice(&(step.params.len() as i16).to_be_bytes());
            for &p in step.params {
                let len_at = self.outbuf.len();
                self.outbuf.extend_from_slice(&0i32.to_be_bytes());
                let value = self.var(p);
                push_int(&mut self.outbuf, value);
                let len = (self.outbuf.len() - len_at - 4) as i32;
                self.outbuf[len_at..len_at + 4].copy_from_slice(&len.to_be_bytes());
            }
            self.outbuf.extend_from_slice(&0i16.to_be_bytes());
            finish(&mut self.outbuf, start);
            // Describe(portal), as libpq's PQsendQueryPrepared sends it: the server
            // answers with the row description (or NoData) that pgbench and pgsurge get.
            self.outbuf.extend_from_slice(&[b'D', 0, 0, 0, 6, b'P', 0]);
            self.outbuf
                .extend_from_slice(&[b'E', 0, 0, 0, 9, 0, 0, 0, 0, 0]);
            self.outbuf.extend_from_slice(&[b'S', 0, 0, 0, 4]);
        }
        // Requests are a few hundred bytes: the socket buffer takes them whole.
        let n = self.stream.write(&self.outbuf)?;
        if n != self.outbuf.len() {
            return Err(io::Error::other("short write"));
        }
        Ok(())
    }
}

/// Runs one thread's connections until `end`, then lets each finish its transaction.
fn drive(
    mut conns: Vec<Conn>,
    config: &Config,
    start: Instant,
    end: Instant,
) -> io::Result<Driven> {
    let epoll = Epoll::new()?;
    for (i, conn) in conns.iter_mut().enumerate() {
        epoll.add(conn.stream.as_raw_fd(), i as u64)?;
        conn.draw_vars(config.scale);
        conn.send(config)?;
    }
    let mut active = conns.len();
    let mut txns = 0u64;
    let mut marks = Vec::new();
    // The end of the next `-P` interval that ends within the run.
    let mut next_mark = (!config.progress.is_zero())
        .then(|| start + config.progress)
        .filter(|&m| m <= end);
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 256];
    while active > 0 {
        let ready = epoll.wait(&mut events, 1000)?;
        for event in &events[..ready] {
            let conn = &mut conns[event.u64 as usize];
            if conn.done {
                continue;
            }
            let n = match conn.stream.read(&mut conn.inbuf[conn.filled..]) {
                Ok(0) => return Err(io::Error::other("server closed the connection")),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            };
            conn.filled += n;
            if !conn.scan()? {
                continue;
            }
            conn.step += 1;
            if conn.step == config.steps.len() {
                conn.step = 0;
                let now = Instant::now();
                while let Some(mark) = next_mark.filter(|&m| now >= m) {
                    marks.push(txns);
                    next_mark = Some(mark + config.progress).filter(|&m| m <= end);
                }
                txns += 1;
                if now >= end {
                    conn.done = true;
                    active -= 1;
                    continue;
                }
                conn.draw_vars(config.scale);
            }
            conn.send(config)?;
        }
    }
    Ok(Driven { txns, marks })
}

/// Appends a Parse of every step as statement `s<step>`, without a Sync: the request
/// that follows ends with one, so the statements and the first execution share a
/// round trip.
fn parse_all(out: &mut Vec<u8>, steps: &[Step]) {
    for (i, step) in steps.iter().enumerate() {
        let start = begin(out, b'P');
        out.push(b's');
        push_int(out, i as i64);
        out.push(0);
        out.extend_from_slice(step.sql.as_bytes());
        out.push(0);
        out.extend_from_slice(&0i16.to_be_bytes());
        finish(out, start);
    }
}

/// Starts a message whose length is filled in by `finish`.
fn begin(out: &mut Vec<u8>, kind: u8) -> usize {
    out.push(kind);
    let at = out.len();
    out.extend_from_slice(&0i32.to_be_bytes());
    at
}

fn finish(out: &mut [u8], len_at: usize) {
    let len = (out.len() - len_at) as i32;
    out[len_at..len_at + 4].copy_from_slice(&len.to_be_bytes());
}

/// Appends the decimal digits of `v` without allocating.
fn push_int(out: &mut Vec<u8>, v: i64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut n = v.unsigned_abs();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[i..]);
}

fn server_error(body: &[u8]) -> String {
    body.split(|&b| b == 0)
        .find(|f| f.first() == Some(&b'M'))
        .map(|f| format!("server error: {}", String::from_utf8_lossy(&f[1..])))
        .unwrap_or_else(|| "server error".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection over `stream` at `step` with the given variables, nothing prepared.
    fn test_conn(stream: UnixStream, inbuf: usize, step: usize, rng: u64, vars: [i64; 4]) -> Conn {
        Conn {
            stream,
            inbuf: vec![0; inbuf],
            filled: 0,
            outbuf: Vec::new(),
            step,
            rng,
            vars,
            prepared: false,
            done: false,
        }
    }

    fn message(out: &mut Vec<u8>, kind: u8, body: &[u8]) {
        out.push(kind);
        out.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        out.extend_from_slice(body);
    }

    #[test]
    fn push_int_writes_decimal() {
        for v in [0i64, 7, -5000, 10_000_000, i64::MIN + 1] {
            let mut out = Vec::new();
            push_int(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), v.to_string());
        }
    }

    #[test]
    fn draws_stay_in_pgbench_ranges() {
        let config = parse_args(["-s", "3"].iter().map(|s| s.to_string())).unwrap();
        let stream = UnixStream::pair().unwrap().0;
        let mut conn = test_conn(stream, 16, 0, 42, [0; 4]);
        for _ in 0..10_000 {
            conn.draw_vars(config.scale);
            let [aid, bid, tid, delta] = conn.vars;
            assert!((1..=300_000).contains(&aid));
            assert!((1..=3).contains(&bid));
            assert!((1..=30).contains(&tid));
            assert!((-5000..=5000).contains(&delta));
        }
    }

    #[test]
    fn simple_query_fills_placeholders_in_order() {
        let mut config = parse_args(std::iter::empty()).unwrap();
        config.simple = true;
        config.steps = TPCB_LIKE;
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut conn = test_conn(a, 16, 5, 1, [11, 2, 3, -4]);
        conn.send(&config).unwrap();
        let mut got = vec![0u8; conn.outbuf.len()];
        b.read_exact(&mut got).unwrap();
        let text = String::from_utf8_lossy(&got[5..got.len() - 1]).into_owned();
        assert_eq!(
            text,
            "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) \
             VALUES (3, 2, 11, -4, CURRENT_TIMESTAMP)"
        );
        assert_eq!(got[0], b'Q');
        assert_eq!(
            i32::from_be_bytes(got[1..5].try_into().unwrap()) as usize,
            got.len() - 1
        );
    }

    #[test]
    fn progress_marks_count_the_transactions_of_each_interval() {
        let mut config = parse_args(std::iter::empty()).unwrap();
        config.simple = true;
        config.progress = Duration::from_millis(100);
        let (a, mut b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        // A server that answers every request with ReadyForQuery, until the client closes.
        let server = std::thread::spawn(move || {
            let mut ready = Vec::new();
            message(&mut ready, b'Z', b"I");
            let mut buf = [0u8; 4096];
            let mut answered = 0u64;
            while b.read(&mut buf).unwrap() > 0 {
                b.write_all(&ready).unwrap();
                answered += 1;
            }
            answered
        });
        let start = Instant::now();
        let end = start + Duration::from_millis(350);
        let driven = drive(vec![test_conn(a, 64, 0, 1, [0; 4])], &config, start, end).unwrap();
        assert_eq!(server.join().unwrap(), driven.txns);
        // Three whole intervals before the end, each with transactions in it.
        assert_eq!(driven.marks.len(), 3);
        assert!(driven.marks[0] > 0);
        assert!(driven.marks.windows(2).all(|w| w[0] < w[1]));
        assert!(driven.marks[2] < driven.txns);
    }

    #[test]
    fn scan_finds_ready_for_query_across_reads() {
        let (a, _b) = UnixStream::pair().unwrap();
        let mut conn = test_conn(a, 64, 0, 1, [0; 4]);
        let mut reply = Vec::new();
        message(&mut reply, b'2', &[]);
        message(&mut reply, b'C', b"SELECT 1\0");
        message(&mut reply, b'Z', b"I");
        let (first, second) = reply.split_at(reply.len() - 3);
        conn.inbuf[..first.len()].copy_from_slice(first);
        conn.filled = first.len();
        assert!(!conn.scan().unwrap());
        conn.inbuf[conn.filled..conn.filled + second.len()].copy_from_slice(second);
        conn.filled += second.len();
        assert!(conn.scan().unwrap());
        assert_eq!(conn.filled, 0);
    }

    /// The kinds of the messages in `buf`, in order.
    fn kinds(buf: &[u8]) -> Vec<u8> {
        let mut at = 0;
        let mut out = Vec::new();
        while at < buf.len() {
            out.push(buf[at]);
            at += 1 + i32::from_be_bytes(buf[at + 1..at + 5].try_into().unwrap()) as usize;
        }
        assert_eq!(at, buf.len(), "messages overrun the buffer");
        out
    }

    #[test]
    fn first_prepared_request_carries_the_parses() {
        let mut config = parse_args(std::iter::empty()).unwrap();
        config.steps = TPCB_LIKE;
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut conn = test_conn(a, 16, 0, 1, [11, 2, 3, -4]);
        conn.send(&config).unwrap();
        let first = conn.outbuf.clone();
        let mut expected = vec![b'P'; TPCB_LIKE.len()];
        expected.extend_from_slice(b"BDES");
        assert_eq!(kinds(&first), expected);
        let last: &[u8] = b"s6\0END\0";
        assert!(first.windows(last.len()).any(|w| w == last));
        conn.step = 1;
        conn.send(&config).unwrap();
        assert_eq!(kinds(&conn.outbuf), b"BDES");
        let mut got = vec![0u8; first.len() + conn.outbuf.len()];
        b.read_exact(&mut got).unwrap();
        assert_eq!(&got[..first.len()], &first[..]);
    }
}
