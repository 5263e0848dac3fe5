//! `cargo bench --bench live`: figures of the live link (issue 4), printed in one run.
//!
//! 1. Command -> subscriber latency: an in-process `--demo` app (simulator + WebSocket link +
//!    store + bus); a change made on the simulated Miniserver (`sim.handle` of
//!    `/jdev/sps/io/{dimmer}/{value}`, alternating values) until the matching `Change` reaches
//!    a bus subscriber. The simulator's WebSocket session wakes on a channel but only looks at
//!    it between reads with a 20 ms timeout (`sim::ws::POLL`), so this bounds our path from
//!    above. Also the in-process part alone: `HouseFeed::report(LinkEvent::Events(..))` to a
//!    subscriber blocked in `recv` on another thread.
//! 2. Events per second: `HouseFeed::report` with batches of 1,000 distinct value changes and
//!    one draining subscriber; decoding of binary value tables (what the link thread does
//!    before `report`); and end to end over a real WebSocket: a simulator house with 1,000
//!    controls (`sim::synth`), size of the initial tables and time from connect to the full
//!    table in the store, then a burst of 1,000 commands until all changes reached a subscriber.
//! 3. RSS of the real binary: `home-mcp sim --structure FILE` and `home-mcp serve` against it
//!    (`HOME_HOST`/`HOME_USER`/`HOME_PASS`), idle after the initial tables and after bursts of
//!    changes; the 1,000-control house and the demo house.
//!
//! Environment: `BENCH_SECS` (default 2) per rate measurement, `BENCH_CHANGES` (default 300)
//! command round trips.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use home_mcp::app::App;
use home_mcp::config::{Config, MiniserverConfig, Timeouts};
use home_mcp::home::bus::Event;
use home_mcp::home::link::LinkMode;
use home_mcp::home::{ControlKind, Home, House};
use home_mcp::loxone::client::Client;
use home_mcp::loxone::feed::HouseFeed;
use home_mcp::loxone::live::{Link, LinkConfig, LinkEvent, LinkSink};
use home_mcp::loxone::structure::parse_structure;
use home_mcp::loxone::ws::tables::{decode_value_table, encode_table};
use home_mcp::loxone::ws::{Identifier, StateEvent};
use home_mcp::sim::synth::synthetic_structure;
use home_mcp::sim::{SimConfig, SimServer, Simulator, DEMO_PASSWORD, DEMO_USER};

const CONTROLS: usize = 1000;
const ROOMS: usize = 50;
const WAIT: Duration = Duration::from_secs(30);
include!("support/common.rs");

fn env_num(key: &str, default: f64) -> f64 {
    std::env::var(key)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(2));
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// The `q` quantile of sorted samples (nearest rank).
fn pct(sorted: &[Duration], q: f64) -> Duration {
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// Waits for a `Change` of `control` to `value` on `sub`.
fn await_change(sub: &home_mcp::home::Subscription, control: &str, value: f64) {
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match sub.recv_timeout(left) {
            Some(Event::Change(c))
                if c.control.as_deref() == Some(control) && c.value.as_f64() == Some(value) =>
            {
                return
            }
            Some(_) => {}
            None => panic!("no change of {control} to {value} within {WAIT:?}"),
        }
    }
}

/// Control UUID, state UUID of the primary value (`position`, `active`) and whether it is a
/// dimmer, for every Switch and Dimmer.
fn primary_states(home: &Home) -> Vec<(String, String, bool)> {
    home.controls
        .iter()
        .filter_map(|c| {
            let state = match c.kind {
                ControlKind::Dimmer => "position",
                ControlKind::Switch => "active",
                _ => return None,
            };
            let dimmer = c.kind == ControlKind::Dimmer;
            Some((c.uuid.clone(), c.state(state)?.to_string(), dimmer))
        })
        .collect()
}

/// Distinct state UUIDs of all controls (what the initial value table fills the store with).
fn state_count(home: &Home) -> usize {
    let mut all = std::collections::HashSet::new();
    for c in &home.controls {
        for name in c.states.keys() {
            if let Some(u) = c.state(name) {
                all.insert(u.to_string());
            }
        }
    }
    all.len()
}

/// A house over a parsed structure whose controller is never called (nothing listens there).
fn offline_house(home: Home) -> Arc<House> {
    let ms = MiniserverConfig {
        base_url: "http://127.0.0.1:9".into(),
        user: "x".into(),
        password: "x".into(),
    };
    let client = Arc::new(Client::new(&ms, &Timeouts::default()));
    Arc::new(House::new(home, client, Duration::from_secs(60)))
}

struct Latency {
    e2e: Vec<Duration>,
    sources: String,
}

/// 1a: demo app, `sim.handle` -> subscriber.
fn command_latency(n: usize) -> Latency {
    let app = App::start(&Config::default(), true).expect("demo starts");
    wait_for("the WebSocket link", || {
        app.house.link().mode() == LinkMode::WebSocket
    });
    let sim = app.simulator.as_ref().unwrap().0.clone();
    let home = app.house.home();
    let dimmer = home
        .resolve_control("Nachtlicht", Some("Kinderzimmer"), &|_| true)
        .unwrap()
        .uuid
        .clone();
    let sub = app.house.bus().subscribe(4096);
    let peer = "127.0.0.1".parse().unwrap();
    let set = |v: f64| {
        let r = sim.handle(
            "GET",
            &format!("/jdev/sps/io/{dimmer}/{v}"),
            Some(BASIC_DEMO),
            peer,
        );
        assert_eq!(r.status, 200, "{}", r.body);
    };
    // A value within the light's range (5..60) that is neither of the two below, so that
    // every step is a change.
    set(55.0);
    await_change(&sub, &dimmer, 55.0);
    thread::sleep(Duration::from_millis(200));
    while sub.try_recv().is_some() {}
    let mut e2e = Vec::with_capacity(n);
    let mut by_source = std::collections::BTreeMap::new();
    for i in 0..n {
        let v = if i % 2 == 0 { 20.0 } else { 40.0 };
        // A pause of 0..25 ms (spread deterministically) so the commands do not phase-lock
        // with the simulator session's 20 ms read loop (each would then wait the full 20 ms).
        thread::sleep(Duration::from_micros((i as u64 * 7919) % 25_000));
        let t = Instant::now();
        set(v);
        let deadline = t + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match sub.recv_timeout(left) {
                Some(Event::Change(c))
                    if c.control.as_deref() == Some(dimmer.as_str())
                        && c.value.as_f64() == Some(v) =>
                {
                    e2e.push(t.elapsed());
                    *by_source.entry(c.source.as_str()).or_insert(0) += 1;
                    break;
                }
                Some(_) => {}
                None => panic!("no change within {WAIT:?}"),
            }
        }
    }
    e2e.sort();
    let sources = by_source
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ");
    Latency { e2e, sources }
}

/// 1b: `HouseFeed::report` -> a subscriber blocked in `recv` on another thread.
fn feed_latency(n: usize) -> Vec<Duration> {
    let home = parse_structure(&synthetic_structure(CONTROLS, ROOMS)).unwrap();
    let (_, state, _) = primary_states(&home).swap_remove(1);
    let house = offline_house(home);
    let feed = HouseFeed::new(house.clone());
    let sub = house.bus().subscribe(1024);
    let (tx, rx) = crossbeam_channel::bounded::<Instant>(1);
    let waiter = thread::spawn(move || {
        while let Some(ev) = sub.recv_timeout(WAIT) {
            if matches!(ev, Event::Change(_)) && tx.send(Instant::now()).is_err() {
                return;
            }
        }
    });
    let mut lat = Vec::with_capacity(n);
    for i in 0..n {
        let ev = vec![StateEvent::number(state.clone(), (i % 2) as f64 + 1.0)];
        let t = Instant::now();
        feed.report(LinkEvent::Events(ev));
        let got = rx.recv_timeout(WAIT).expect("subscriber got the change");
        lat.push(got.duration_since(t));
    }
    drop(rx);
    drop(feed);
    drop(house);
    let _ = waiter.join();
    lat.sort();
    lat
}

struct Rate {
    events: u64,
    sent: u64,
    batch: usize,
    secs: f64,
    dropped: u64,
    store_len: usize,
}

/// 2a: batches of `CONTROLS` distinct changes through `HouseFeed::report`, one draining subscriber.
fn feed_rate(secs: f64) -> Rate {
    let home = parse_structure(&synthetic_structure(CONTROLS, ROOMS)).unwrap();
    let states: Vec<String> = primary_states(&home)
        .into_iter()
        .map(|(_, s, _)| s)
        .collect();
    let house = offline_house(home);
    let feed = HouseFeed::new(house.clone());
    let sub = house.bus().subscribe(1 << 16);
    let drain = thread::spawn(move || {
        let mut n = 0u64;
        let mut last = Instant::now();
        while let Some(ev) = sub.recv_timeout(Duration::from_millis(500)) {
            if matches!(ev, Event::Change(_)) {
                n += 1;
                last = Instant::now();
            }
        }
        (n, sub.dropped(), last)
    });
    let start = Instant::now();
    let mut sent = 0u64;
    let mut round = 0u64;
    while start.elapsed().as_secs_f64() < secs {
        round += 1;
        let batch: Vec<StateEvent> = states
            .iter()
            .map(|s| StateEvent::number(s.clone(), round as f64))
            .collect();
        sent += batch.len() as u64;
        feed.report(LinkEvent::Events(batch));
    }
    let store_len = house.states().len();
    // Until the subscriber has received everything (it stops 500 ms after the last event).
    let (received, dropped, last) = drain.join().unwrap();
    Rate {
        events: received,
        sent,
        batch: states.len(),
        secs: last.duration_since(start).as_secs_f64(),
        dropped,
        store_len,
    }
}

/// 2b: decoding binary value tables of `CONTROLS` events (the link thread's part before
/// `report`); events per second.
fn decode_rate(secs: f64) -> (f64, usize) {
    let home = parse_structure(&synthetic_structure(CONTROLS, ROOMS)).unwrap();
    let events: Vec<StateEvent> = primary_states(&home)
        .into_iter()
        .enumerate()
        .map(|(i, (_, s, _))| StateEvent::number(s, i as f64))
        .collect();
    let bytes = encode_table(Identifier::ValueTable, &events).unwrap();
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed().as_secs_f64() < secs {
        let d = decode_value_table(std::hint::black_box(&bytes)).unwrap();
        n += d.len() as u64;
    }
    (n as f64 / start.elapsed().as_secs_f64(), bytes.len())
}

struct WsFigures {
    connect: Duration,
    full_table: Duration,
    initial_events: u64,
    states: usize,
    burst: usize,
    burst_time: Duration,
}

/// 2c: a real WebSocket to an in-process simulator of the 1,000-control house.
fn ws_end_to_end() -> WsFigures {
    let text = synthetic_structure(CONTROLS, ROOMS);
    let home = parse_structure(&text).unwrap();
    let states = state_count(&home);
    let primaries = primary_states(&home);
    let sim = Arc::new(Simulator::new(&text, None, SimConfig::default()).unwrap());
    let server = SimServer::start(sim.clone(), "127.0.0.1:0").unwrap();
    let ms_cfg = MiniserverConfig {
        base_url: server.base_url(),
        user: DEMO_USER.into(),
        password: DEMO_PASSWORD.into(),
    };
    let client = Arc::new(Client::new(&ms_cfg, &Timeouts::default()));
    let house = Arc::new(House::new(home, client.clone(), Duration::from_secs(60)));
    let sub = house.bus().subscribe(1 << 16);
    let start = Instant::now();
    let mut link = Link::spawn(
        client,
        LinkConfig::default(),
        Arc::new(HouseFeed::new(house.clone())),
    );
    wait_for("the WebSocket link", || {
        house.link().mode() == LinkMode::WebSocket
    });
    let connect = start.elapsed();
    wait_for("the full table", || house.states().len() >= states);
    let full_table = start.elapsed();
    thread::sleep(Duration::from_millis(300));
    let initial_events = house.link().snapshot().events_received;
    while sub.try_recv().is_some() {}

    // Burst: every Switch and Dimmer changed once on the Miniserver, back to back.
    let peer = "127.0.0.1".parse().unwrap();
    let t = Instant::now();
    for (uuid, _, dimmer) in &primaries {
        let cmd = if *dimmer { "55" } else { "on" };
        let r = sim.handle(
            "GET",
            &format!("/jdev/sps/io/{uuid}/{cmd}"),
            Some(BASIC_DEMO),
            peer,
        );
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let mut pending: std::collections::HashSet<&str> =
        primaries.iter().map(|(_, s, _)| s.as_str()).collect();
    let deadline = t + WAIT;
    while !pending.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        match sub.recv_timeout(left) {
            Some(Event::Change(c)) => {
                pending.remove(c.uuid.as_str());
            }
            Some(_) => {}
            None => panic!("{} changes missing after {WAIT:?}", pending.len()),
        }
    }
    let burst_time = t.elapsed();
    link.stop();
    drop(server);
    WsFigures {
        connect,
        full_table,
        initial_events,
        states,
        burst: primaries.len(),
        burst_time,
    }
}

struct Rss {
    server_idle: u64,
    server_burst: u64,
    sim: u64,
    controls: usize,
    commands: usize,
    link_up: Duration,
}

/// 3: `home-mcp sim --structure FILE` + `home-mcp serve` against it; RSS of the server.
fn rss_of(structure: &str, tmp: &std::path::Path, label: &str) -> Rss {
    let bin = env!("CARGO_BIN_EXE_home-mcp");
    let file = tmp.join(format!("{label}.json"));
    std::fs::write(&file, structure).unwrap();
    let home = parse_structure(structure).unwrap();
    let primaries = primary_states(&home);
    let sim_port = free_port();
    let sim_addr: SocketAddr = format!("127.0.0.1:{sim_port}").parse().unwrap();
    let sim = Proc(
        Command::new(bin)
            .args(["sim", "--structure", file.to_str().unwrap()])
            .args(["--listen", &sim_addr.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start home-mcp sim"),
    );
    wait_for("the simulator's port", || {
        TcpStream::connect(sim_addr).is_ok()
    });
    let data = tmp.join(format!("{label}-data"));
    std::fs::create_dir_all(&data).unwrap();
    let started = Instant::now();
    let mut server = Proc(
        Command::new(bin)
            .args(["serve", "--listen", &format!("127.0.0.1:{}", free_port())])
            .env("HOME_HOST", sim_addr.to_string())
            .env("HOME_USER", DEMO_USER)
            .env("HOME_PASS", DEMO_PASSWORD)
            .env("HOME_DATA_DIR", &data)
            .env("HOME_LOG_LEVEL", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start home-mcp serve"),
    );
    let pid = server.0.id();
    let (tx, rx) = crossbeam_channel::bounded::<()>(1);
    let stderr = server.0.stderr.take().unwrap();
    thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            if line.contains("-> websocket") {
                let _ = tx.try_send(());
            }
        }
    });
    rx.recv_timeout(WAIT).expect("server link up (log line)");
    let link_up = started.elapsed();
    // The initial tables follow the connect at once; let them land and the allocator settle.
    thread::sleep(Duration::from_millis(1500));
    let server_idle = rss_kib(pid);

    // Bursts of changes on the Miniserver: every Switch and Dimmer, 5 rounds, back to back.
    let s = TcpStream::connect(sim_addr).unwrap();
    s.set_nodelay(true).unwrap();
    let mut reader = BufReader::new(s.try_clone().unwrap());
    let mut writer = s;
    let mut commands = 0;
    for round in 0..5 {
        for (uuid, _, dimmer) in &primaries {
            let cmd = match (dimmer, round % 2) {
                (false, 0) => "on".to_string(),
                (false, _) => "off".to_string(),
                // 10..50: within every demo dimmer's range, different each round.
                (true, _) => format!("{}", 10 + round * 10),
            };
            let st = get(
                &mut reader,
                &mut writer,
                &format!("/jdev/sps/io/{uuid}/{cmd}"),
            );
            assert!(matches!(st, 200 | 403 | 404), "status {st}");
            commands += 1;
        }
    }
    thread::sleep(Duration::from_millis(1000));
    let server_burst = rss_kib(pid);
    let sim_rss = rss_kib(sim.0.id());
    Rss {
        server_idle,
        server_burst,
        sim: sim_rss,
        controls: home.controls.len(),
        commands,
        link_up,
    }
}

fn main() {
    let secs = env_num("BENCH_SECS", 2.0);
    let changes = env_num("BENCH_CHANGES", 300.0) as usize;

    let lat = command_latency(changes);
    let feed_lat = feed_latency(10_000);
    let rate = feed_rate(secs);
    let (decode, table_bytes) = decode_rate(secs);
    let ws = ws_end_to_end();
    let tmp = std::env::temp_dir().join(format!("home-mcp-bench-live-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let big = rss_of(&synthetic_structure(CONTROLS, ROOMS), &tmp, "synth1000");
    let demo = rss_of(home_mcp::sim::DEMO_STRUCTURE, &tmp, "demo");
    let _ = std::fs::remove_dir_all(&tmp);

    println!(
        "home-mcp live link benchmark ({secs} s per rate, {} cores)",
        thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0)
    );
    println!();
    println!(
        "1. command on the Miniserver -> bus subscriber (demo house, {} changes; {})",
        lat.e2e.len(),
        lat.sources
    );
    println!(
        "   simulator ws session -> link -> store -> bus   p50 {:.2} ms  p90 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
        ms(pct(&lat.e2e, 0.50)),
        ms(pct(&lat.e2e, 0.90)),
        ms(pct(&lat.e2e, 0.99)),
        ms(*lat.e2e.last().unwrap())
    );
    println!(
        "   (upper bound: the simulator's session sees the wake-up only between reads with a 20 ms timeout)"
    );
    println!(
        "   HouseFeed::report -> subscriber thread (10,000)  p50 {:.1} us  p99 {:.1} us  max {:.1} us",
        us(pct(&feed_lat, 0.50)),
        us(pct(&feed_lat, 0.99)),
        us(*feed_lat.last().unwrap())
    );
    println!();
    println!("2. events per second ({CONTROLS} controls, {ROOMS} rooms)");
    println!(
        "   HouseFeed::report, batches of {}, 1 subscriber  {:>10.0} events/s ({} sent, {} received, {} dropped, store {} values)",
        rate.batch,
        rate.events as f64 / rate.secs,
        rate.sent,
        rate.events,
        rate.dropped,
        rate.store_len
    );
    println!(
        "   decode_value_table ({} bytes per table)      {:>10.0} events/s",
        table_bytes, decode
    );
    println!(
        "   WebSocket: login + enable -> link up          {:>10.1} ms",
        ms(ws.connect)
    );
    println!(
        "   WebSocket: connect -> full table in store      {:>10.1} ms ({} states, {} initial events)",
        ms(ws.full_table),
        ws.states,
        ws.initial_events
    );
    println!(
        "   WebSocket: burst of {} commands -> all at sub {:>10.1} ms ({:.0} changes/s end to end)",
        ws.burst,
        ms(ws.burst_time),
        ws.burst as f64 / ws.burst_time.as_secs_f64()
    );
    println!();
    println!("3. RSS of `home-mcp serve` (release) against `home-mcp sim --structure FILE`");
    for (name, r) in [("1000-control house", &big), ("demo house", &demo)] {
        println!(
            "   {name:<19} {:>4} controls: idle after tables {:>6} KiB, after {} commands {:>6} KiB (link up {:.0} ms; simulator {} KiB)",
            r.controls,
            r.server_idle,
            r.commands,
            r.server_burst,
            ms(r.link_up),
            r.sim
        );
    }
}
