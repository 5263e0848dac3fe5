//! `cargo bench --bench serve`: figures for the closing notes, printed in one run.
//!
//! - time from process start to the first successful `initialize` (`serve --demo`)
//! - `initialize` latency (median of 200, fresh session each)
//! - `tools/call list_rooms` over keep-alive HTTP with 1, 16 and 64 connections: requests per
//!   second and per-request latency p50 / p99, beside the same for a bare tiny_http server (2
//!   threads, TCP_NODELAY) answering a fixed JSON body of the same size, in the same run, and
//!   the ratios (issue 14's goal: at least 70 % of the bare rate, p99 within 3x)
//! - RSS of the server process (Linux `/proc`): idle, the highest seen under load, and 10 s
//!   after the load stopped
//!
//! The server runs with its rate limits and per-client caps raised by config (all the bench's
//! connections come from one address), so the bench measures serving, not 429s or evictions.
//!
//! The bare server runs in a process of its own (this binary again), with the C library's
//! default allocator settings, so that its CPU time and context switches are read like the
//! server's: per request, both are printed beside the rates. Whatever else runs on the machine
//! (a build) slows both servers alike only if they are measured at the same time: each
//! connection count is measured in `BENCH_ROUNDS` rounds (default 5) of `BENCH_SECS` seconds
//! (default 1) each, home-mcp and the bare server taking turns, and the rate ratio printed is
//! the median of the rounds' ratios (rates, latencies and CPU pool every round). Environment:
//! `BENCH_SECS`, `BENCH_ROUNDS`; `BENCH_GLIBC_TUNABLES` replaces the packaged unit's
//! `GLIBC_TUNABLES` for home-mcp (empty: none), to measure the allocator's share.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A minimal keep-alive HTTP/1.1 client on one connection (no pooling surprises).
struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Conn {
    fn open(addr: SocketAddr) -> Conn {
        let s = TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        Conn {
            reader: BufReader::new(s.try_clone().unwrap()),
            writer: s,
        }
    }

    /// POSTs `body`; returns (status, session header, body).
    fn post(
        &mut self,
        path: &str,
        body: &str,
        session: Option<&str>,
    ) -> (u16, Option<String>, String) {
        let mut req = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            body.len()
        );
        if let Some(s) = session {
            req.push_str(&format!("Mcp-Session-Id: {s}\r\n"));
        }
        req.push_str("\r\n");
        req.push_str(body);
        self.writer.write_all(req.as_bytes()).unwrap();
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .unwrap_or("0")
            .parse()
            .unwrap_or(0);
        let mut len = 0usize;
        let mut sid = None;
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse().unwrap();
                } else if k.eq_ignore_ascii_case("mcp-session-id") {
                    sid = Some(v.trim().to_string());
                }
            }
        }
        let mut buf = vec![0; len];
        self.reader.read_exact(&mut buf).unwrap();
        (status, sid, String::from_utf8_lossy(&buf).into_owned())
    }
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const LIST_ROOMS: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_rooms","arguments":{}}}"#;

fn session(addr: SocketAddr) -> (Conn, String) {
    let mut c = Conn::open(addr);
    let (st, sid, _) = c.post("/mcp", INIT, None);
    assert_eq!(st, 200);
    let sid = sid.expect("session id");
    c.post("/mcp", INITIALIZED, Some(&sid));
    (c, sid)
}

/// What one or more load runs measured.
#[derive(Default)]
struct Load {
    /// Every request's latency, sorted by [`Load::summary`].
    lat: Vec<Duration>,
    /// Seconds measured.
    took: f64,
    /// Highest RSS of `pid` seen during the run (KiB), when a pid was given.
    peak_rss: u64,
    /// The server's CPU time (ms) and context switches during the run, when a pid was given.
    cpu_ms: f64,
    switches: u64,
    /// Requests per second (set by [`Load::summary`]).
    rate: f64,
    p50: Duration,
    p99: Duration,
}

impl Load {
    /// Adds another run's requests, time, CPU and switches.
    fn merge(&mut self, other: Load) {
        self.lat.extend(other.lat);
        self.took += other.took;
        self.cpu_ms += other.cpu_ms;
        self.switches += other.switches;
        self.peak_rss = self.peak_rss.max(other.peak_rss);
    }

    /// The rate and latency percentiles over every request merged in.
    fn summary(mut self) -> Load {
        self.lat.sort();
        let lat = &self.lat;
        let at = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)];
        self.rate = lat.len() as f64 / self.took;
        self.p50 = at(0.50);
        self.p99 = at(0.99);
        self
    }

    /// CPU time (microseconds) and context switches per request.
    fn per_request(&self) -> (f64, f64) {
        let n = self.lat.len().max(1) as f64;
        (self.cpu_ms * 1e3 / n, self.switches as f64 / n)
    }
}

/// `clients` keep-alive connections posting `body` for `secs` (after all have connected):
/// the rate, the latency percentiles over every request, and the peak RSS of `pid`.
fn rate(
    addr: SocketAddr,
    path: &'static str,
    body: &'static str,
    clients: usize,
    secs: f64,
    mcp: bool,
    pid: Option<u32>,
) -> Load {
    let stop = Arc::new(AtomicBool::new(false));
    let ready = Arc::new(std::sync::Barrier::new(clients + 1));
    let handles: Vec<_> = (0..clients)
        .map(|_| {
            let (stop, ready) = (stop.clone(), ready.clone());
            thread::spawn(move || {
                let (mut c, sid) = if mcp {
                    let (c, s) = session(addr);
                    (c, Some(s))
                } else {
                    (Conn::open(addr), None)
                };
                ready.wait();
                let mut lat = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    let (st, _, _) = c.post(path, body, sid.as_deref());
                    lat.push(t.elapsed());
                    assert_eq!(st, 200);
                }
                lat
            })
        })
        .collect();
    ready.wait();
    let started = Instant::now();
    let before = pid.map(cpu_and_switches).unwrap_or_default();
    let mut peak_rss = 0;
    while started.elapsed() < Duration::from_secs_f64(secs) {
        if let Some(pid) = pid {
            peak_rss = peak_rss.max(rss_kib(pid));
        }
        thread::sleep(Duration::from_millis(50));
    }
    // Before the connections close: their threads' switches are counted while they live.
    let after = pid.map(cpu_and_switches).unwrap_or_default();
    stop.store(true, Ordering::Relaxed);
    let took = started.elapsed().as_secs_f64();
    let lat: Vec<Duration> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    Load {
        lat,
        took,
        peak_rss,
        cpu_ms: after.0 - before.0,
        switches: after.1.saturating_sub(before.1),
        ..Load::default()
    }
    .summary()
}

/// The CPU time (user + system, ms; exited threads included) and the context switches
/// (voluntary + involuntary) of the threads of process `pid` alive now (Linux `/proc`).
fn cpu_and_switches(pid: u32) -> (f64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command's closing parenthesis; utime and stime are the 12th and
    // 13th of them, in clock ticks (100 per second on Linux).
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    let switches = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|task| std::fs::read_to_string(task.path().join("status")).unwrap_or_default())
        .map(|status| {
            status
                .lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum::<u64>()
        })
        .sum();
    (ticks as f64 * 10.0, switches)
}

fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The bare tiny_http server in a process of its own (this bench binary started again with
/// `BENCH_BARE_BODY` set), so that its CPU time and context switches can be read like the
/// server's and the bench's client threads share no allocator with it: its address and
/// process. It runs with the C library's default allocator settings, as anyone would run it.
fn spawn_bare_server(body: &str) -> (SocketAddr, Server) {
    let mut child = Command::new(std::env::current_exe().expect("the bench binary"))
        .env("BENCH_BARE_BODY", body)
        .env_remove("GLIBC_TUNABLES")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the bare server");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("its stdout"))
        .read_line(&mut line)
        .expect("the bare server's address");
    let addr = line.trim().parse().expect("an address");
    (addr, Server(child))
}

/// A bare tiny_http server: 2 threads answering every request with `body` (TCP_NODELAY).
fn bare_server(body: String) -> SocketAddr {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.set_reuse_address(true).unwrap();
    sock.set_tcp_nodelay(true).unwrap();
    sock.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    sock.listen(128).unwrap();
    let listener: TcpListener = sock.into();
    let addr = listener.local_addr().unwrap();
    let server = Arc::new(tiny_http::Server::from_listener(listener, None).unwrap());
    for _ in 0..2 {
        let server = server.clone();
        let body = body.clone();
        thread::spawn(move || loop {
            let Ok(mut req) = server.recv() else { return };
            let mut sink = Vec::new();
            let _ = req.as_reader().read_to_end(&mut sink);
            let header = tiny_http::Header::from_bytes("Content-Type", "application/json").unwrap();
            let _ = req.respond(tiny_http::Response::from_string(body.clone()).with_header(header));
        });
    }
    addr
}

struct Server(Child);
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn main() {
    if let Ok(body) = std::env::var("BENCH_BARE_BODY") {
        // The baseline's own process (see `spawn_bare_server`): serve until killed.
        println!("{}", bare_server(body));
        loop {
            thread::park();
        }
    }
    let secs: f64 = std::env::var("BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    let rounds: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5)
        .max(1);
    // As the packaged unit runs it (src/memory.rs), unless the bench is told otherwise.
    let tunables = std::env::var("BENCH_GLIBC_TUNABLES")
        .unwrap_or_else(|_| "glibc.malloc.tcache_count=0".into());
    let bin = env!("CARGO_BIN_EXE_home-mcp");
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();

    // Rate limits and per-client caps raised: the bench measures serving, not 429s.
    let config = std::env::temp_dir().join(format!("home-mcp-bench-{}.toml", std::process::id()));
    // `BENCH_WORKERS` sets `[server] workers` (default: the server's own default).
    let workers = std::env::var("BENCH_WORKERS")
        .map(|w| format!("workers = {w}\n"))
        .unwrap_or_default();
    std::fs::write(
        &config,
        format!(
            "[server]\n{workers}max_connections_per_client = 256\nmax_sessions_per_client = 256\n\
             [auth.rate_limits]\nper_client = 100000000\n"
        ),
    )
    .expect("write the bench config");
    let started = Instant::now();
    let child = Command::new(bin)
        .args(["serve", "--demo", "--listen", &addr.to_string()])
        .arg("--config")
        .arg(&config)
        .env("HOME_LOG_LEVEL", "warn")
        .env("GLIBC_TUNABLES", &tunables)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start home-mcp");
    let server = Server(child);
    let pid = server.0.id();
    let first_answer = loop {
        if let Ok(s) = TcpStream::connect(addr) {
            drop(s);
            let mut c = Conn::open(addr);
            let (st, _, _) = c.post("/mcp", INIT, None);
            if st == 200 {
                break started.elapsed();
            }
        }
        if started.elapsed() > Duration::from_secs(30) {
            panic!("server did not answer within 30 s");
        }
        thread::sleep(Duration::from_millis(2));
    };
    thread::sleep(Duration::from_millis(300));
    let idle_rss = rss_kib(pid);

    let mut c = Conn::open(addr);
    let mut lat: Vec<Duration> = (0..200)
        .map(|_| {
            let t = Instant::now();
            let (st, _, _) = c.post("/mcp", INIT, None);
            assert_eq!(st, 200);
            t.elapsed()
        })
        .collect();
    lat.sort();

    let (mut c, sid) = session(addr);
    let (_, _, sample) = c.post("/mcp", LIST_ROOMS, Some(&sid));
    let body_len = sample.len();

    let (bare, bare_process) = spawn_bare_server(&sample);
    let bare_pid = bare_process.0.id();
    let mut rows = Vec::new();
    let mut loaded_rss = 0;
    for clients in [1, 16, 64] {
        let (mut ours, mut theirs, mut ratios) = (Load::default(), Load::default(), Vec::new());
        for _ in 0..rounds {
            let a = rate(addr, "/mcp", LIST_ROOMS, clients, secs, true, Some(pid));
            let b = rate(bare, "/", LIST_ROOMS, clients, secs, false, Some(bare_pid));
            ratios.push(a.rate / b.rate);
            ours.merge(a);
            theirs.merge(b);
        }
        ratios.sort_by(f64::total_cmp);
        loaded_rss = loaded_rss.max(ours.peak_rss);
        rows.push((
            clients,
            ours.summary(),
            theirs.summary(),
            ratios[ratios.len() / 2],
        ));
    }
    // RSS once the load has stopped: 10 s later (memory given back or not).
    thread::sleep(Duration::from_secs(10));
    let after_rss = rss_kib(pid);
    let _ = std::fs::remove_file(&config);

    println!(
        "home-mcp serve --demo benchmark ({rounds} rounds of {secs} s per rate and server, taking turns; {} cores; home-mcp GLIBC_TUNABLES={tunables:?})",
        thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0)
    );
    println!(
        "start to first initialize answer   {:>10.1} ms",
        first_answer.as_secs_f64() * 1e3
    );
    println!(
        "initialize latency p50 / p99       {:>10.3} ms / {:.3} ms",
        lat[100].as_secs_f64() * 1e3,
        lat[197].as_secs_f64() * 1e3
    );
    println!("list_rooms answer size             {:>10} bytes", body_len);
    println!("tools/call list_rooms, keep-alive connections: home-mcp vs bare tiny_http");
    println!("conns  home req/s   p50 ms   p99 ms | bare req/s   p50 ms   p99 ms | rate %  p99 x");
    println!("       (rate %: the median of the rounds' ratios; the rest pools every round)");
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for (clients, ours, theirs, ratio) in &rows {
        println!(
            "{clients:>5} {:>10.0} {:>8.2} {:>8.2} | {:>10.0} {:>8.2} {:>8.2} | {:>6.0} {:>6.1}",
            ours.rate,
            ms(ours.p50),
            ms(ours.p99),
            theirs.rate,
            ms(theirs.p50),
            ms(theirs.p99),
            100.0 * ratio,
            ms(ours.p99) / ms(theirs.p99),
        );
    }
    println!("per request, each server in its own process: CPU time and context switches");
    println!("conns  home CPU us  switches | bare CPU us  switches | CPU x");
    for (clients, ours, theirs, _) in &rows {
        let (o, t) = (ours.per_request(), theirs.per_request());
        println!(
            "{clients:>5} {:>11.1} {:>9.2} | {:>11.1} {:>9.2} | {:>5.2}",
            o.0,
            o.1,
            t.0,
            t.1,
            o.0 / t.0
        );
    }
    println!(
        "RSS idle / peak under load / 10 s after {:>6} KiB / {} KiB / {} KiB",
        idle_rss, loaded_rss, after_rss
    );
}
