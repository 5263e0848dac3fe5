//! `cargo bench --bench history`: the time to answer history questions against the simulated
//! Miniserver, and the server's memory over many of them (issue 29), printed in one run.
//!
//! The real binary, `home-mcp serve --demo` (the demo house on its built-in simulated
//! Miniserver, whose statistics hold 13 months), in its own process. It asks, `BENCH_CALLS`
//! times (default 100) each, over MCP (`tools/call get_history` on one Streamable HTTP
//! session, JSON answers, the tool-answer cache off so that every call is computed) and over
//! the dashboard's API (`/dashboard/api/series`, the same query):
//! 1. a year of daily energy of the grid meter (Statistics V2 `diff` per day, one request to
//!    the Miniserver);
//! 2. a month of hourly temperature of the living room (V2 raw records, 2,880 of them,
//!    bucketed by the server).
//!
//! Figures: p50 and max of each; as a baseline in the same run, the simulator's own answer
//! to the Miniserver request behind the first (`getStatistic .../diff/.../day`) and the
//! second (`.../raw/.../all`), and the ratio. The server's RSS (`/proc/<pid>/status` VmRSS)
//! after the first call of each kind and after all of them: the growth after the first should
//! be none (the answers are built and dropped; SQLite and the allocator keep what they had).
//!
//! Environment: `BENCH_CALLS`, `HOME_MCP_BIN` (the binary to measure; default the one cargo
//! built with this bench, i.e. release for `cargo bench`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

include!("support/common.rs");

const GRID_METER: &str = "1d5c3c2e-0222-5d52-ffff504f94d0e5a1";
const LIVING_TEMPERATURE: &str = "1d5c3a8c-0208-51e4-ffff504f94d0e5a1";

fn env_num(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// One keep-alive HTTP/1.1 request; returns status and body.
fn request(
    conn: &mut (BufReader<TcpStream>, TcpStream),
    method: &str,
    path: &str,
    headers: &[String],
    body: &str,
) -> (u16, String) {
    let (status, _, body) = request_full(conn, method, path, headers, body);
    (status, body)
}

/// [`request`] with the `Mcp-Session-Id` the answer carries, if any.
fn request_full(
    conn: &mut (BufReader<TcpStream>, TcpStream),
    method: &str,
    path: &str,
    headers: &[String],
    body: &str,
) -> (u16, Option<String>, String) {
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n",
        body.len()
    );
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str("\r\n");
    req.push_str(body);
    conn.1.write_all(req.as_bytes()).unwrap();
    let mut line = String::new();
    conn.0.read_line(&mut line).unwrap();
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut len = 0usize;
    let mut session = None;
    loop {
        line.clear();
        conn.0.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap();
            }
            if k.eq_ignore_ascii_case("mcp-session-id") {
                session = Some(v.trim().to_string());
            }
        }
    }
    let mut buf = vec![0; len];
    conn.0.read_exact(&mut buf).unwrap();
    (status, session, String::from_utf8_lossy(&buf).into_owned())
}

fn connect(addr: SocketAddr) -> (BufReader<TcpStream>, TcpStream) {
    let s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    (BufReader::new(s.try_clone().unwrap()), s)
}

fn pct(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Times `n` calls of `f`; returns the sorted milliseconds.
fn timed(n: usize, mut f: impl FnMut()) -> Vec<f64> {
    let mut out: Vec<f64> = (0..n)
        .map(|_| {
            let t = Instant::now();
            f();
            ms(t.elapsed())
        })
        .collect();
    out.sort_by(|a, b| a.partial_cmp(b).unwrap());
    out
}

fn main() {
    let calls = env_num("BENCH_CALLS", 100);
    let bin = std::env::var("HOME_MCP_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_home-mcp").to_string());
    let tmp = std::env::temp_dir().join(format!("home-mcp-bench-history-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let log_path = tmp.join("server.log");
    // The per-client rate limit (100 a minute) is not what is measured here, nor the cache
    // of read-only tool answers (30 s): every get_history call asks the Miniserver.
    let config = tmp.join("config.toml");
    std::fs::write(
        &config,
        "[server]\ntool_cache_secs = 0\n[auth.rate_limits]\nper_client = 1000000\n",
    )
    .unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let server = Proc(
        Command::new(&bin)
            .args(["serve", "--demo", "--listen", &addr.to_string(), "--config"])
            .arg(&config)
            .env("HOME_LOG_LEVEL", "info")
            .env("HOME_DATA_DIR", &tmp)
            .env("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log_path).unwrap())
            .spawn()
            .expect("start home-mcp serve --demo"),
    );
    let pid = server.0.id();
    let started = Instant::now();
    let sim_addr = loop {
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        let sim = log.lines().find_map(|l| {
            let rest = l.split("demo: simulated Miniserver at http://").nth(1)?;
            rest.trim().parse::<SocketAddr>().ok()
        });
        if let (Some(sim), true) = (sim, log.contains("-> websocket")) {
            break sim;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the demo server did not come up:\n{log}"
        );
        thread::sleep(Duration::from_millis(50));
    };
    thread::sleep(Duration::from_secs(2));
    let idle = rss_kib(pid);

    let mut http = connect(addr);
    let enc = |s: &str| s.replace(' ', "%20");
    let year_path = format!(
        "/dashboard/api/series?device={GRID_METER}&state=total&period={}&resolution=day&max_points=400",
        enc("last 365 days")
    );
    let month_path = format!(
        "/dashboard/api/series?device={LIVING_TEMPERATURE}&period={}&resolution=hour&max_points=800",
        enc("last 30 days")
    );
    let mut ask = |path: &str| {
        let (status, body) = request(&mut http, "GET", path, &[], "");
        assert_eq!(status, 200, "{path}: {body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        v["points"].as_array().map_or(0, Vec::len)
    };
    let year_points = ask(&year_path);
    let month_points = ask(&month_path);

    // MCP: one session, get_history as an assistant asks it.
    let mut mcp = connect(addr);
    let json_headers = vec![
        "Content-Type: application/json".to_string(),
        "Accept: application/json, text/event-stream".to_string(),
    ];
    let (status, session, body) = request_full(
        &mut mcp,
        "POST",
        "/mcp",
        &json_headers,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#,
    );
    assert_eq!(status, 200, "initialize: {body}");
    let mut headers = json_headers.clone();
    headers.push(format!("Mcp-Session-Id: {}", session.expect("a session")));
    headers.push("MCP-Protocol-Version: 2025-06-18".into());
    let (status, _) = request(
        &mut mcp,
        "POST",
        "/mcp",
        &headers,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert!(status == 202 || status == 200, "initialized: {status}");
    let mut call = |args: &str| {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"get_history","arguments":{args}}}}}"#
        );
        let (status, answer) = request(&mut mcp, "POST", "/mcp", &headers, &body);
        assert_eq!(status, 200, "{answer}");
        assert!(answer.contains("\"isError\":false"), "{answer}");
    };
    let year_args = format!(
        r#"{{"device":"{GRID_METER}","state":"total","period":"last 365 days","resolution":"day","max_points":400}}"#
    );
    let month_args = format!(
        r#"{{"device":"{LIVING_TEMPERATURE}","period":"last 30 days","resolution":"hour","max_points":800}}"#
    );
    call(&year_args);
    call(&month_args);
    let after_first = rss_kib(pid);
    let mcp_year = timed(calls, || call(&year_args));
    let mcp_month = timed(calls, || call(&month_args));
    let year = timed(calls, || {
        ask(&year_path);
    });
    let month = timed(calls, || {
        ask(&month_path);
    });
    let after_all = rss_kib(pid);

    // Baseline: the simulator's own answers to the requests behind them.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut sim = connect(sim_addr);
    let basic = vec![format!("Authorization: {BASIC_DEMO}")];
    let mut sim_get = |path: String| {
        let (status, _) = request(&mut sim, "GET", &path, &basic, "");
        assert_eq!(status, 200, "{path}");
    };
    let sim_year = timed(calls, || {
        sim_get(format!(
            "/dev/sps/getStatistic/{GRID_METER}/diff/{}/{now}/day/2/total",
            now - 366 * 86_400
        ))
    });
    let sim_month = timed(calls, || {
        sim_get(format!(
            "/dev/sps/getStatistic/{LIVING_TEMPERATURE}/raw/{}/{now}/all/1/value",
            now - 31 * 86_400
        ))
    });
    drop(server);
    let _ = std::fs::remove_dir_all(&tmp);

    println!("history answers, {calls} calls each (serve --demo)");
    println!("  MCP tools/call get_history (one Streamable HTTP session):");
    println!(
        "  a year of daily energy: p50 {:.2} ms, max {:.2} ms (ratio to the simulator's diff answer {:.1})",
        pct(&mcp_year, 0.5),
        pct(&mcp_year, 1.0),
        pct(&mcp_year, 0.5) / pct(&sim_year, 0.5)
    );
    println!(
        "  a month of hourly temperature: p50 {:.2} ms, max {:.2} ms (ratio to the simulator's raw answer {:.1})",
        pct(&mcp_month, 0.5),
        pct(&mcp_month, 1.0),
        pct(&mcp_month, 0.5) / pct(&sim_month, 0.5)
    );
    println!("  /dashboard/api/series (the same query):");
    println!(
        "  a year of daily energy ({year_points} points): p50 {:.2} ms, max {:.2} ms; the simulator's diff answer p50 {:.2} ms (ratio {:.1})",
        pct(&year, 0.5),
        pct(&year, 1.0),
        pct(&sim_year, 0.5),
        pct(&year, 0.5) / pct(&sim_year, 0.5)
    );
    println!(
        "  a month of hourly temperature ({month_points} points): p50 {:.2} ms, max {:.2} ms; the simulator's raw answer p50 {:.2} ms (ratio {:.1})",
        pct(&month, 0.5),
        pct(&month, 1.0),
        pct(&sim_month, 0.5),
        pct(&month, 0.5) / pct(&sim_month, 0.5)
    );
    println!(
        "  RSS: idle {:.1} MiB, after the first of each {:.1} MiB, after {} more {:.1} MiB (growth after the first: {:+.1} MiB)",
        idle as f64 / 1024.0,
        after_first as f64 / 1024.0,
        4 * calls,
        after_all as f64 / 1024.0,
        (after_all as f64 - after_first as f64) / 1024.0
    );
}
