//! `cargo bench --bench dashboard`: memory and fan-out of the dashboard's WebSocket (issue 7),
//! printed in one run.
//!
//! The real binary, `home-mcp serve --demo` (the demo house on its built-in simulated
//! Miniserver), in its own process. Its RSS (Linux `/proc/<pid>/status` VmRSS):
//! 1. idle, after the link is up and the start-up values settled;
//! 2. with `BENCH_CLIENTS` (default 20) dashboard WebSocket clients connected (tungstenite, one
//!    reading thread each, in this process);
//! 3. after `BENCH_CHANGES` (default 200) state changes fanned out to all of them.
//!
//! The changes are made on the simulated Miniserver itself (its port is in the server's log):
//! `GET /jdev/sps/io/{dimmer}/{value}` with alternating values, so each one is an event on the
//! Miniserver WebSocket -> house -> dashboard fan-out -> every client. Figures:
//! - fan-out latency: from the change's `at` (when the server learnt it, ISO 8601 in ms) to its
//!   arrival at each client, p50 / p99 / max; and from the command to the Miniserver to the
//!   arrival (includes the simulator's 20 ms event loop);
//! - messages/s: a burst of the same number of changes over the demo's five dimmers, a round
//!   (one command each) every 25 ms (the simulator folds changes of one value within its 20 ms
//!   loop into one event), messages delivered to all clients divided by the time from the
//!   first command to the last arrival.
//!
//! Environment: `BENCH_CLIENTS`, `BENCH_CHANGES`, `HOME_MCP_BIN` (the binary to measure;
//! default the one cargo built with this bench, i.e. release for `cargo bench`).

use std::io::BufReader;
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use home_mcp::home::ControlKind;
use home_mcp::loxone::structure::parse_structure;
use home_mcp::sim::DEMO_STRUCTURE;
use serde_json::Value;
use tungstenite::client::IntoClientRequest;
use tungstenite::Message;

include!("support/common.rs");

fn env_num(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Milliseconds since the Unix epoch of `2026-11-21T12:06:24.123Z`.
fn iso_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 23 {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
    let (h, mi, se, ms) = (n(11..13)?, n(14..16)?, n(17..19)?, n(20..23)?);
    // Days from civil (Howard Hinnant's algorithm).
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + h) * 60 + mi) * 60_000 + se * 1000 + ms)
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// What a client thread reports: a dimmer's change to `value`, its `at`, when it arrived.
struct Arrival {
    uuid: String,
    value: f64,
    at_ms: i64,
    arrived_ms: i64,
    arrived: Instant,
}

fn pct(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

fn main() {
    let clients_n = env_num("BENCH_CLIENTS", 20);
    let changes = env_num("BENCH_CHANGES", 200);
    let bin = std::env::var("HOME_MCP_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_home-mcp").to_string());
    let home = parse_structure(DEMO_STRUCTURE).unwrap();
    let dimmer = home
        .resolve_control("Nachtlicht", Some("Kinderzimmer"), &|_| true)
        .unwrap()
        .uuid
        .clone();
    let dimmers: Arc<Vec<String>> = Arc::new(
        home.controls
            .iter()
            .filter(|c| c.kind == ControlKind::Dimmer)
            .map(|c| c.uuid.clone())
            .collect(),
    );

    let tmp = std::env::temp_dir().join(format!("home-mcp-bench-dashboard-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let log_path = tmp.join("server.log");
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let server = Proc(
        Command::new(&bin)
            .args(["serve", "--demo", "--listen", &addr.to_string()])
            .env("HOME_LOG_LEVEL", "info")
            .env("HOME_DATA_DIR", &tmp)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log_path).unwrap())
            .spawn()
            .expect("start home-mcp serve --demo"),
    );
    let pid = server.0.id();
    // The simulator's address and the link, from the log.
    let started = Instant::now();
    let mut sim_addr = None;
    loop {
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        if sim_addr.is_none() {
            sim_addr = log.lines().find_map(|l| {
                let rest = l.split("demo: simulated Miniserver at http://").nth(1)?;
                rest.trim().parse::<SocketAddr>().ok()
            });
        }
        if sim_addr.is_some() && log.contains("-> websocket") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the demo server did not come up:\n{log}"
        );
        thread::sleep(Duration::from_millis(50));
    }
    let sim_addr = sim_addr.unwrap();
    thread::sleep(Duration::from_secs(3));
    let idle = rss_kib(pid);

    // Clients: each reads in its own thread and reports the dimmer's changes.
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<Arrival>();
    let mut readers = Vec::new();
    for _ in 0..clients_n {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut req = format!("ws://{addr}/dashboard/ws")
            .into_client_request()
            .unwrap();
        req.headers_mut()
            .insert("Sec-WebSocket-Protocol", "home-mcp".parse().unwrap());
        let (mut ws, _) = tungstenite::client::client(req, stream).expect("WebSocket connects");
        let (tx, stop, dimmers) = (tx.clone(), stop.clone(), dimmers.clone());
        readers.push(thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match ws.read() {
                    Ok(Message::Text(t)) => {
                        let arrived = Instant::now();
                        let arrived_ms = now_ms();
                        let m: Value = serde_json::from_str(t.as_str()).unwrap();
                        let p = &m["payload"];
                        let uuid = p["uuid"].as_str().unwrap_or("");
                        if p["state"] != "value" && dimmers.iter().any(|d| d == uuid) {
                            // A dimmer's primary named state (`position`).
                            let _ = tx.send(Arrival {
                                uuid: uuid.to_string(),
                                value: p["value"].as_f64().unwrap_or(f64::NAN),
                                at_ms: p["at"].as_str().and_then(iso_ms).unwrap_or(0),
                                arrived_ms,
                                arrived,
                            });
                        }
                    }
                    Ok(_) => {}
                    Err(tungstenite::Error::Io(e))
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) => {}
                    Err(_) => break,
                }
            }
            let _ = ws.close(None);
        }));
    }
    drop(tx);
    thread::sleep(Duration::from_secs(2));
    let with_clients = rss_kib(pid);

    let sim = TcpStream::connect(sim_addr).unwrap();
    sim.set_nodelay(true).unwrap();
    let mut sim_reader = BufReader::new(sim.try_clone().unwrap());
    let mut sim_writer = sim;
    let mut set_on = |uuid: &str, v: f64| {
        let s = get(
            &mut sim_reader,
            &mut sim_writer,
            &format!("/jdev/sps/io/{uuid}/{v}"),
        );
        assert_eq!(s, 200, "the simulator took the command");
    };
    // Values within the dimmer's range (5..60), alternating so that each is a change.
    let value = |i: usize| if i.is_multiple_of(2) { 20.0 } else { 40.0 };
    for d in dimmers.iter() {
        set_on(d, 55.0);
    }
    thread::sleep(Duration::from_millis(500));
    while rx.try_recv().is_ok() {}

    // Paced: one change at a time, until every client has it.
    let mut from_at = Vec::with_capacity(changes * clients_n);
    let mut from_cmd = Vec::with_capacity(changes * clients_n);
    for i in 0..changes {
        // 0..25 ms apart (spread) so the commands do not phase-lock with the sim's 20 ms loop.
        thread::sleep(Duration::from_micros((i as u64 * 7919) % 25_000));
        let v = value(i);
        let sent = Instant::now();
        set_on(&dimmer, v);
        let mut got = 0;
        while got < clients_n {
            let a = rx
                .recv_timeout(Duration::from_secs(10))
                .expect("every client gets the change");
            if a.value != v || a.uuid != dimmer {
                continue;
            }
            got += 1;
            from_at.push((a.arrived_ms - a.at_ms) as f64);
            from_cmd.push(a.arrived.duration_since(sent).as_secs_f64() * 1000.0);
        }
    }
    from_at.sort_by(f64::total_cmp);
    from_cmd.sort_by(f64::total_cmp);

    // Burst: all changes without waiting; count what arrives until 1 s of quiet.
    thread::sleep(Duration::from_millis(300));
    while rx.try_recv().is_ok() {}
    let t0 = Instant::now();
    for i in 0..changes {
        let round = i / dimmers.len();
        if i % dimmers.len() == 0 && i > 0 {
            let next = t0 + Duration::from_millis(25 * round as u64);
            thread::sleep(next.saturating_duration_since(Instant::now()));
        }
        set_on(&dimmers[i % dimmers.len()], value(round + 1));
    }
    let sent_in = t0.elapsed();
    let mut delivered = 0usize;
    let mut last = t0;
    while let Ok(a) = rx.recv_timeout(Duration::from_secs(1)) {
        delivered += 1;
        last = a.arrived;
    }
    let burst = last.duration_since(t0);
    thread::sleep(Duration::from_millis(500));
    let after = rss_kib(pid);

    stop.store(true, Ordering::Relaxed);
    for r in readers {
        let _ = r.join();
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&tmp);

    let delta = with_clients.saturating_sub(idle);
    println!("dashboard WebSocket: `home-mcp serve --demo` ({bin})");
    println!("  RSS idle                         {:8.1} MiB", mib(idle));
    println!(
        "  RSS with {clients_n} clients              {:8.1} MiB  (+{:.1} MiB, {:.0} KiB per client)",
        mib(with_clients),
        mib(delta),
        delta as f64 / clients_n.max(1) as f64
    );
    println!(
        "  RSS after {} changes fanned out  {:8.1} MiB  (+{:.1} MiB over idle)",
        changes * 2,
        mib(after),
        mib(after.saturating_sub(idle))
    );
    println!(
        "  fan-out latency, change `at` -> client ({} arrivals): p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        from_at.len(),
        pct(&from_at, 0.5),
        pct(&from_at, 0.99),
        pct(&from_at, 1.0)
    );
    println!(
        "  command on the Miniserver -> client: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        pct(&from_cmd, 0.5),
        pct(&from_cmd, 0.99),
        pct(&from_cmd, 1.0)
    );
    println!(
        "  burst of {changes} changes on {} dimmers, a round per 25 ms (sent in {:.0} ms): {delivered} messages to {clients_n} clients in {:.0} ms = {:.0} messages/s delivered",
        dimmers.len(),
        sent_in.as_secs_f64() * 1000.0,
        burst.as_secs_f64() * 1000.0,
        delivered as f64 / burst.as_secs_f64().max(1e-9)
    );
}
