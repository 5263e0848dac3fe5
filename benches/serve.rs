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
//! connections come from one address), so the bench measures serving, not 429s or evictions. Environment: `BENCH_SECS` (default 3) per rate measurement.

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

/// What one load run measured.
struct Load {
    /// Requests per second.
    rate: f64,
    p50: Duration,
    p99: Duration,
    /// Highest RSS of `pid` seen during the run (KiB), when a pid was given.
    peak_rss: u64,
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
    let mut peak_rss = 0;
    while started.elapsed() < Duration::from_secs_f64(secs) {
        if let Some(pid) = pid {
            peak_rss = peak_rss.max(rss_kib(pid));
        }
        thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    let took = started.elapsed().as_secs_f64();
    let mut lat: Vec<Duration> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    lat.sort();
    let at = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)];
    Load {
        rate: lat.len() as f64 / took,
        p50: at(0.50),
        p99: at(0.99),
        peak_rss,
    }
}

fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

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
    let secs: f64 = std::env::var("BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let bin = env!("CARGO_BIN_EXE_home-mcp");
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();

    // Rate limits and per-client caps raised: the bench measures serving, not 429s.
    let config = std::env::temp_dir().join(format!("home-mcp-bench-{}.toml", std::process::id()));
    std::fs::write(
        &config,
        "[server]\nmax_connections_per_client = 256\nmax_sessions_per_client = 256\n\
         [auth.rate_limits]\nper_client = 100000000\n",
    )
    .expect("write the bench config");
    let started = Instant::now();
    let child = Command::new(bin)
        .args(["serve", "--demo", "--listen", &addr.to_string()])
        .arg("--config")
        .arg(&config)
        .env("HOME_LOG_LEVEL", "warn")
        // As the packaged unit runs it (src/memory.rs).
        .env("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0")
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

    let bare = bare_server(sample.clone());
    let mut rows = Vec::new();
    let mut loaded_rss = 0;
    for clients in [1, 16, 64] {
        let ours = rate(addr, "/mcp", LIST_ROOMS, clients, secs, true, Some(pid));
        loaded_rss = loaded_rss.max(ours.peak_rss);
        let theirs = rate(bare, "/", LIST_ROOMS, clients, secs, false, None);
        rows.push((clients, ours, theirs));
    }
    // RSS once the load has stopped: 10 s later (memory given back or not).
    thread::sleep(Duration::from_secs(10));
    let after_rss = rss_kib(pid);
    let _ = std::fs::remove_file(&config);

    println!(
        "home-mcp serve --demo benchmark ({secs} s per rate, {} cores)",
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
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for (clients, ours, theirs) in &rows {
        println!(
            "{clients:>5} {:>10.0} {:>8.2} {:>8.2} | {:>10.0} {:>8.2} {:>8.2} | {:>6.0} {:>6.1}",
            ours.rate,
            ms(ours.p50),
            ms(ours.p99),
            theirs.rate,
            ms(theirs.p50),
            ms(theirs.p99),
            100.0 * ours.rate / theirs.rate,
            ms(ours.p99) / ms(theirs.p99),
        );
    }
    println!(
        "RSS idle / peak under load / 10 s after {:>6} KiB / {} KiB / {} KiB",
        idle_rss, loaded_rss, after_rss
    );
}
