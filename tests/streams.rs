//! Streams over real loopback HTTP (and stdio): SSE answers to POSTs with progress, log
//! messages and elicitation, the GET stream with priming, replay and resource updates,
//! workers never held by streams, the legacy HTTP+SSE transport, and bad input.

use std::io::{BufReader, Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use home_mcp::http::{HttpConfig, HttpServer};
use home_mcp::mcp::updates::{spawn_notifier, Next, Update};
use serde_json::{json, Value};

use crate::support::sse::*;

// ---------------------------------------------------------------- tests

#[test]
fn tool_call_streams_progress_and_log_then_the_answer() {
    let server = start();
    let addr = server.addr();
    let sid = initialize(addr);
    let r = post_json(
        addr,
        &sid,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "debug"}}),
    );
    assert_eq!(r.status, 200);
    let _ = r.body();

    let mut s = post(addr, Some(&sid), &call(2, "progress", Some("tok")));
    assert_eq!(s.status, 200);
    assert_eq!(s.header("content-type"), Some("text/event-stream"));
    let priming = expect_prelude(&mut s);
    let mut progress = Vec::new();
    let mut logs = 0;
    let mut ids = vec![priming];
    let answer = loop {
        let e = s.next_data().expect("event");
        ids.push(e.id.clone().expect("event id"));
        let v = e.json();
        match v["method"].as_str() {
            Some("notifications/progress") => {
                assert_eq!(v["params"]["progressToken"], "tok");
                progress.push(v["params"]["progress"].as_f64().unwrap());
            }
            Some("notifications/message") => logs += 1,
            _ => break v,
        }
    };
    assert_eq!(progress, vec![1.0, 2.0, 3.0]);
    assert_eq!(logs, 1);
    assert_eq!(answer["id"], 2);
    assert_eq!(answer["result"]["content"][0]["text"], "done");
    assert!(s.next().is_none(), "stream ends after the answer");
    let unique: std::collections::BTreeSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "event ids unique: {ids:?}");

    // Without a progress token and with JSON only: a plain JSON answer.
    let r = post_json(addr, &sid, &call(3, "progress", None));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json()["result"]["content"][0]["text"], "done");
    server.stop();
}

#[test]
fn elicitation_round_trip_over_http() {
    let server = start_with(|c| c.workers = 1);
    let addr = server.addr();
    let sid = initialize(addr);
    let mut s = post(addr, Some(&sid), &call(5, "ask", None));
    expect_prelude(&mut s);
    let e = s.next_data().expect("elicitation request");
    let v = e.json();
    assert_eq!(v["method"], "elicitation/create");
    let rid = v["id"].clone();
    // The answer is its own POST (one worker: the call does not hold it).
    let r = post_json(
        addr,
        &sid,
        &json!({"jsonrpc": "2.0", "id": rid, "result": {"action": "accept", "content": {"name": "Ada"}}}),
    );
    assert_eq!(r.status, 202);
    let answer = s.next_data().expect("answer").json();
    assert_eq!(answer["id"], 5);
    assert_eq!(answer["result"]["content"][0]["text"], "accept:Ada");

    // An answer from another session is not taken.
    let other = initialize(addr);
    let mut s = post(addr, Some(&sid), &call(6, "ask", None));
    expect_prelude(&mut s);
    let rid = s.next_data().unwrap().json()["id"].clone();
    let r = post_json(
        addr,
        &other,
        &json!({"jsonrpc": "2.0", "id": rid, "result": {"action": "accept", "content": {"name": "Eve"}}}),
    );
    assert_eq!(r.status, 202);
    let r = post_json(
        addr,
        &sid,
        &json!({"jsonrpc": "2.0", "id": rid, "result": {"action": "decline"}}),
    );
    assert_eq!(r.status, 202);
    let answer = s.next_data().unwrap().json();
    assert_eq!(answer["result"]["content"][0]["text"], "decline:?");
    server.stop();
}

#[test]
fn get_stream_primes_carries_updates_and_replays() {
    let server = start();
    let addr = server.addr();
    let sid = initialize(addr);
    let r = post_json(
        addr,
        &sid,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": "test://watched"}}),
    );
    assert_eq!(r.json()["result"], json!({}));

    let mut g = open_get(addr, &sid, None);
    assert_eq!(g.status, 200);
    assert_eq!(g.header("content-type"), Some("text/event-stream"));
    expect_prelude(&mut g);
    // Wait until the stream thread attached before pushing.
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.mcp.notify_resource_updated("test://watched") == 0 {
        assert!(Instant::now() < deadline, "stream never attached");
        std::thread::sleep(Duration::from_millis(10));
    }
    let e = g.next_data().expect("update");
    let first_id = e.id.clone().unwrap();
    assert_eq!(e.json()["method"], "notifications/resources/updated");
    assert_eq!(e.json()["params"]["uri"], "test://watched");
    assert_eq!(
        server.mcp.notify_resource_updated("test://other"),
        0,
        "not subscribed"
    );
    // Keep-alive comments flow while idle.
    let c = g.next().expect("keep-alive");
    assert!(c.comment, "{c:?}");
    drop(g);

    // While no stream is open, the message is buffered; Last-Event-ID replays it.
    assert_eq!(server.mcp.notify_list_changed(), 1, "outlet registered");
    let mut g = open_get(addr, &sid, Some(&first_id));
    expect_prelude(&mut g);
    let e = g.next_data().expect("replayed");
    assert_eq!(e.json()["method"], "notifications/resources/list_changed");
    drop(g);

    // Without Last-Event-ID nothing is replayed.
    let mut g = open_get(addr, &sid, None);
    expect_prelude(&mut g);
    let e = g.next().unwrap();
    assert!(e.comment, "only keep-alive: {e:?}");
    drop(g);
    server.stop();
}

#[test]
fn notifier_coalesces_and_delivers() {
    let server = start();
    let addr = server.addr();
    let sid = initialize(addr);
    let r = post_json(
        addr,
        &sid,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": "test://watched"}}),
    );
    let _ = r.body();
    let mut g = open_get(addr, &sid, None);
    expect_prelude(&mut g);
    std::thread::sleep(Duration::from_millis(100));
    let (tx, rx) = crossbeam_channel::unbounded::<Update>();
    spawn_notifier(
        server.mcp.clone(),
        Duration::from_millis(250),
        move |wait| match rx.recv_timeout(wait) {
            Ok(u) => Next::Update(u),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => Next::Idle,
            Err(_) => Next::Closed,
        },
    )
    .unwrap();
    let t0 = Instant::now();
    for _ in 0..5 {
        tx.send(Update::Uris(vec!["test://watched".into()]))
            .unwrap();
    }
    let a = g.next_data().unwrap();
    assert_eq!(a.json()["params"]["uri"], "test://watched");
    let b = g.next_data().unwrap();
    assert_eq!(b.json()["params"]["uri"], "test://watched");
    assert!(
        t0.elapsed() >= Duration::from_millis(200),
        "second one held back"
    );
    tx.send(Update::ListChanged).unwrap();
    let c = g.next_data().unwrap();
    assert_eq!(c.json()["method"], "notifications/resources/list_changed");
    drop(tx);
    server.stop();
}

#[test]
fn streams_do_not_hold_workers() {
    let server = start_with(|c| {
        c.workers = 2;
        c.max_streams = 6;
    });
    let addr = server.addr();
    let sid = initialize(addr);
    let mut streams: Vec<Http> = (0..5).map(|_| open_get(addr, &sid, None)).collect();
    for s in &mut streams {
        assert_eq!(s.status, 200);
        expect_prelude(s);
    }
    let t = Instant::now();
    for i in 0..4 {
        let r = post_json(
            addr,
            &sid,
            &json!({"jsonrpc": "2.0", "id": 10 + i, "method": "ping"}),
        );
        assert_eq!(r.json()["result"], json!({}));
    }
    assert!(t.elapsed() < Duration::from_secs(2));
    // One slot left, then 503.
    let mut sixth = open_get(addr, &sid, None);
    assert_eq!(sixth.status, 200);
    expect_prelude(&mut sixth);
    let r = open_get(addr, &sid, None);
    assert_eq!(r.status, 503);
    assert_eq!(server.http.active_streams(), 6);
    server.stop();
}

#[test]
fn slow_reader_is_dropped_alone() {
    let server = start_with(|c| c.stream_queue = 4);
    let addr = server.addr();
    let sid = initialize(addr);
    let mut g = open_get(addr, &sid, None);
    expect_prelude(&mut g);
    std::thread::sleep(Duration::from_millis(100));
    // Never read `g` again: big messages fill the socket buffers, then its queue.
    let big = "x".repeat(64 * 1024);
    let outlet = server.mcp.hub().outlet(&sid).unwrap();
    let mut refused = false;
    for _ in 0..400 {
        if !outlet.send(&json!({"jsonrpc": "2.0", "method": "m", "params": {"p": big}}).to_string())
        {
            refused = true;
            break;
        }
    }
    assert!(refused, "the slow stream was dropped");
    // The server still answers.
    let r = post_json(
        addr,
        &sid,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    );
    assert_eq!(r.status, 200);
    drop(g);
    server.stop();
}

#[test]
fn session_and_header_checks() {
    let server = start();
    let addr = server.addr();
    let sid = initialize(addr);
    // GET without session, unknown session, bad Accept, bad version, bad Origin.
    let r = send(addr, "GET", "/mcp", &[("Accept", "text/event-stream")], b"");
    assert_eq!(r.status, 400);
    let r = open_get(addr, "00000000000000000000000000000000", None);
    assert_eq!(r.status, 404);
    let r = send(
        addr,
        "GET",
        "/mcp",
        &[("Accept", "text/html"), ("Mcp-Session-Id", &sid)],
        b"",
    );
    assert_eq!(r.status, 406);
    let r = send(
        addr,
        "GET",
        "/mcp",
        &[
            ("Accept", "text/event-stream"),
            ("Mcp-Session-Id", &sid),
            ("MCP-Protocol-Version", "1999-01-01"),
        ],
        b"",
    );
    assert_eq!(r.status, 400);
    let r = send(
        addr,
        "GET",
        "/mcp",
        &[
            ("Accept", "text/event-stream"),
            ("Mcp-Session-Id", &sid),
            ("Origin", "http://evil.example.com"),
        ],
        b"",
    );
    assert_eq!(r.status, 403);
    let r = send(
        addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "text/html"),
            ("Mcp-Session-Id", &sid),
        ],
        b"{}",
    );
    assert_eq!(r.status, 406);

    // DELETE ends the session and its stream; then 404 everywhere.
    let mut g = open_get(addr, &sid, None);
    expect_prelude(&mut g);
    std::thread::sleep(Duration::from_millis(50));
    let r = send(addr, "DELETE", "/mcp", &[("Mcp-Session-Id", &sid)], b"");
    assert_eq!(r.status, 200);
    let t = Instant::now();
    while g.next().is_some() {
        assert!(t.elapsed() < Duration::from_secs(3), "stream ends");
    }
    let r = post_json(
        addr,
        &sid,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    );
    assert_eq!(r.status, 404);
    let r = open_get(addr, &sid, None);
    assert_eq!(r.status, 404);
    let r = send(addr, "DELETE", "/mcp", &[("Mcp-Session-Id", &sid)], b"");
    assert_eq!(r.status, 404);
    server.stop();
}

// ---------------------------------------------------------------- stdio

/// A reader fed line by line from a channel (blocks like a pipe).
struct ChanReader {
    rx: crossbeam_channel::Receiver<String>,
    buf: Vec<u8>,
    pos: usize,
}

impl Read for ChanReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.pos >= self.buf.len() {
            match self.rx.recv() {
                Ok(line) => {
                    self.buf = format!("{line}\n").into_bytes();
                    self.pos = 0;
                }
                Err(_) => return Ok(0),
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

struct ChanWriter {
    tx: crossbeam_channel::Sender<String>,
    buf: Vec<u8>,
}

impl Write for ChanWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(b);
        while let Some(i) = self.buf.iter().position(|&c| c == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=i).collect();
            let _ = self
                .tx
                .send(String::from_utf8_lossy(&line).trim().to_string());
        }
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn stdio_elicitation_does_not_block_reading() {
    let mcp = Arc::new(McpServer::new(Arc::new(TestHandler), McpConfig::default()));
    let (in_tx, in_rx) = crossbeam_channel::unbounded::<String>();
    let (out_tx, out_rx) = crossbeam_channel::unbounded::<String>();
    let m2 = mcp.clone();
    let serving = std::thread::spawn(move || {
        let reader = BufReader::new(ChanReader {
            rx: in_rx,
            buf: Vec::new(),
            pos: 0,
        });
        home_mcp::stdio::serve(
            &m2,
            reader,
            ChanWriter {
                tx: out_tx,
                buf: Vec::new(),
            },
        )
    });
    let recv = || -> Value {
        serde_json::from_str(&out_rx.recv_timeout(Duration::from_secs(5)).unwrap()).unwrap()
    };
    in_tx
        .send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "0"}}})
            .to_string(),
        )
        .unwrap();
    assert_eq!(recv()["id"], 0);
    in_tx
        .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
        .unwrap();
    in_tx.send(call(1, "ask", None).to_string()).unwrap();
    let req = recv();
    assert_eq!(req["method"], "elicitation/create");
    // Reading goes on while the call waits: a ping is answered first.
    in_tx
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}).to_string())
        .unwrap();
    assert_eq!(recv()["id"], 2);
    in_tx
        .send(
            json!({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "accept", "content": {"name": "Bo"}}})
                .to_string(),
        )
        .unwrap();
    let answer = recv();
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["content"][0]["text"], "accept:Bo");
    // Subscriptions reach stdio through the hub.
    in_tx
        .send(json!({"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe", "params": {"uri": "test://watched"}}).to_string())
        .unwrap();
    assert_eq!(recv()["id"], 3);
    assert_eq!(mcp.notify_resource_updated("test://watched"), 1);
    assert_eq!(recv()["method"], "notifications/resources/updated");
    drop(in_tx);
    serving.join().unwrap().unwrap();
}

#[test]
fn streams_outlive_the_connection_idle_timeout() {
    let server = start_with(|c| {
        c.idle_timeout = Duration::from_millis(600);
        c.keep_alive = Duration::from_millis(250);
    });
    let addr = server.addr();
    let sid = initialize(addr);
    let mut g = open_get(addr, &sid, None);
    expect_prelude(&mut g);
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(2000) {
        assert!(g.next().expect("keep-alive").comment);
    }
    assert_eq!(server.mcp.notify_list_changed(), 1);
    let e = g.next_data().expect("still open");
    assert_eq!(e.json()["method"], "notifications/resources/list_changed");
    // The session stays alive while its stream is open (idle timeout of sessions is 1 h here,
    // so only check that the server still answers on it).
    let r = post_json(
        addr,
        &sid,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    );
    assert_eq!(r.status, 200);
    server.stop();
}

/// End to end on the demo house: a client subscribed to a device resource hears
/// `notifications/resources/updated` on its GET stream when the device changes on the
/// Miniserver (simulator -> WebSocket link -> store -> bus -> notifier -> stream).
#[test]
fn a_subscribed_device_resource_updates_when_the_house_changes() {
    let app = home_mcp::app::App::start(&home_mcp::config::Config::default(), true).unwrap();
    let config = HttpConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        workers: 2,
        keep_alive: Duration::from_millis(200),
        ..HttpConfig::default()
    };
    let http = HttpServer::start(
        config,
        app.mcp.clone(),
        Arc::new(|| json!({"status": "ok"})),
    )
    .expect("start");
    let addr = http.addr();
    let deadline = Instant::now() + Duration::from_secs(20);
    while app.house.link().mode() != home_mcp::home::link::LinkMode::WebSocket {
        assert!(Instant::now() < deadline, "no live link");
        std::thread::sleep(Duration::from_millis(20));
    }
    let light = app
        .house
        .home()
        .resolve_control("Nachtlicht", Some("Kinderzimmer"), &|_| true)
        .unwrap()
        .uuid
        .clone();
    let uri = format!("home://devices/{light}");
    let sid = initialize(addr);
    let r = post_json(
        addr,
        &sid,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": uri}}),
    );
    assert_eq!(r.json()["result"], json!({}), "subscribed");
    // Subscribing to something that does not exist is refused.
    let r = post_json(
        addr,
        &sid,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": "home://devices/nope"}}),
    );
    let v = r.json();
    assert_eq!(v["error"]["code"], -32002, "{v}");

    let mut g = open_get(addr, &sid, None);
    expect_prelude(&mut g);
    std::thread::sleep(Duration::from_millis(300)); // let the stream thread attach
    let sim = &app.simulator.as_ref().unwrap().0;
    let started = Instant::now();
    let r = sim.handle(
        "GET",
        &format!("/jdev/sps/io/{light}/33"),
        Some("Basic ZGVtbzpkZW1v"),
        "127.0.0.1".parse().unwrap(),
    );
    assert_eq!(r.status, 200);
    // Updates may also come from the initial tables still arriving; wait for the one after
    // which the resource shows the new position.
    let mut id = 10;
    loop {
        let e = g.next_data().expect("an update before the stream ends");
        let v = e.json();
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no update: {v}"
        );
        if v["method"] != "notifications/resources/updated" || v["params"]["uri"] != uri.as_str() {
            continue;
        }
        id += 1;
        let r = post_json(
            addr,
            &sid,
            &json!({"jsonrpc": "2.0", "id": id, "method": "resources/read", "params": {"uri": uri}}),
        );
        let v = r.json();
        let text = v["result"]["contents"][0]["text"].as_str().unwrap();
        let doc: Value = serde_json::from_str(text).unwrap();
        if doc["states"]["position"]["live"]["value"] == 33.0 {
            break;
        }
    }
    eprintln!("resource update seen after {:?}", started.elapsed());
    drop(g);
    http.shutdown();
    http.join();
}

/// A client that asked for nothing that streams (no progress token, no log level, no
/// elicitation or sampling) gets its `tools/call` answer as plain JSON even when it accepts
/// SSE; with a progress token the same call streams.
#[test]
fn plain_calls_are_answered_as_json() {
    let server = start();
    let addr = server.addr();
    let r = send(
        addr,
        "POST",
        "/mcp",
        &[("Content-Type", "application/json"), ("Accept", BOTH)],
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "curl", "version": "0"}}})
        .to_string()
        .as_bytes(),
    );
    let sid = r.header("mcp-session-id").unwrap().to_string();
    let _ = r.body();
    let r = post(addr, Some(&sid), &call(1, "progress", None));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let r = post(addr, Some(&sid), &call(2, "progress", Some("tok")));
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    drop(r);
    server.stop();
}
