//! The web dashboard (`src/dashboard`, issue 7) over real loopback sockets against the demo
//! house: the JSON endpoints and their shapes, history and trends, the live WebSocket (hello,
//! a light switched, a slow client, the client limit, shutdown), the gate in staging and the
//! page's security headers.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use home_mcp::app::{permission_of, App};
use home_mcp::auth::gate::{Gate, GateConfig, SecurityLevel};
use home_mcp::auth::store::{KeyStore, MemoryStore};
use home_mcp::auth::{ApiKey, Role, Usage};
use home_mcp::config::Config;
use home_mcp::dashboard::{Dashboard, History, HistoryConfig, WsConfig};
use home_mcp::home::{Action, Control, ControlKind, Family, LinkMode, Source, Value as HValue};
use home_mcp::http::{HttpConfig, HttpServer};
use home_mcp::tools::HomeTools;
use serde_json::Value;
use tungstenite::client::IntoClientRequest;
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::{Message, WebSocket};

const MONITOR: &str = "homekey_monitor_3_00112233445566778899aabbccddeeff";

struct Fx {
    server: HttpServer,
    dash: Arc<Dashboard>,
    app: App,
    /// The staging gate's key store (empty without one).
    keys: Arc<MemoryStore>,
}

impl Drop for Fx {
    fn drop(&mut self) {
        self.server.shutdown();
        self.dash.shutdown();
    }
}

fn monitor_key() -> ApiKey {
    ApiKey {
        id: MONITOR.into(),
        name: "monitor".into(),
        role: Role::Monitor,
        created_by: "test".into(),
        created_at: "2026-01-01T00:00:00Z".into(),
        active: true,
        expires_at: None,
        ip_whitelist: vec![],
        allowed_devices: vec![],
        permissions: vec![],
        rooms: vec![],
        categories: vec![],
        usage: Usage::default(),
    }
}

fn start(staging: bool, ws: WsConfig) -> Fx {
    let app = App::start(&Config::default(), true).expect("demo starts");
    let history = History::in_memory(HistoryConfig {
        flush_every: Duration::from_millis(200),
        ..HistoryConfig::default()
    })
    .unwrap();
    let dash = Dashboard::start(app.house.clone(), history, ws).unwrap();
    let keys = Arc::new(MemoryStore::new(vec![monitor_key()]));
    let gate = staging.then(|| {
        Arc::new(Gate::new(
            keys.clone(),
            GateConfig {
                level: SecurityLevel::Staging,
                ..GateConfig::default()
            },
            "127.0.0.1".parse().unwrap(),
            permission_of(Arc::new(HomeTools::new(app.house.clone()))),
        ))
    });
    let config = HttpConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        gate: gate.or_else(|| Some(app.gate.clone())),
        dashboard: Some(dash.clone()),
        ..HttpConfig::default()
    };
    let server =
        HttpServer::start(config, app.mcp.clone(), Arc::new(|| Value::Null)).expect("starts");
    Fx {
        server,
        dash,
        app,
        keys,
    }
}

/// One request on a fresh connection: (status, raw head, body text).
fn send(addr: SocketAddr, method: &str, path: &str, headers: &[&str]) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nContent-Length: 0\r\n",
        addr.port()
    );
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a full response");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_string(), body.to_string())
}

fn get_json(f: &Fx, path: &str, headers: &[&str]) -> (u16, Value) {
    let (s, _, b) = send(f.server.addr(), "GET", path, headers);
    (s, serde_json::from_str(&b).unwrap_or(Value::Null))
}

fn get(f: &Fx, path: &str) -> (u16, Value) {
    get_json(f, path, &[])
}

fn assert_error(body: &Value, code: &str) {
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));
    assert!(body["error"]["details"].is_object(), "{body}");
}

type Client = WebSocket<TcpStream>;

/// A WebSocket client offering `protocols`; `Err(status)` when the upgrade is refused.
fn ws_connect(addr: SocketAddr, protocols: Option<&str>) -> Result<Client, u16> {
    let stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut req = format!("ws://127.0.0.1:{}/dashboard/ws", addr.port())
        .into_client_request()
        .unwrap();
    if let Some(p) = protocols {
        req.headers_mut()
            .insert("Sec-WebSocket-Protocol", p.parse().unwrap());
    }
    match tungstenite::client::client(req, stream) {
        Ok((ws, response)) => {
            if protocols.is_some() {
                assert_eq!(
                    response.headers()["Sec-WebSocket-Protocol"],
                    "home-mcp",
                    "the key is never echoed"
                );
            }
            Ok(ws)
        }
        Err(tungstenite::HandshakeError::Failure(tungstenite::Error::Http(r))) => {
            Err(r.status().as_u16())
        }
        Err(e) => panic!("handshake: {e}"),
    }
}

/// The next JSON text message within `within`.
fn next_json(ws: &mut Client, within: Duration) -> Option<Value> {
    let until = Instant::now() + within;
    while Instant::now() < until {
        match ws.read() {
            Ok(Message::Text(t)) => return Some(serde_json::from_str(t.as_str()).unwrap()),
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return None,
        }
    }
    None
}

fn hello(ws: &mut Client) -> Value {
    let m = next_json(ws, Duration::from_secs(5)).expect("a hello");
    assert_eq!(m["type"], "system_event");
    assert_eq!(m["payload"]["event"], "hello");
    assert!(m["payload"]["status"]["link"]["mode"].is_string());
    m
}

/// A switchable light of the demo house.
fn light(f: &Fx) -> Control {
    let home = f.app.house.home();
    let lights = || {
        home.controls
            .iter()
            .filter(|c| c.family() == Family::Lighting)
    };
    lights()
        .find(|c| c.kind == ControlKind::Switch)
        .or_else(|| lights().find(|c| c.kind == ControlKind::Dimmer))
        .cloned()
        .expect("the demo has a light")
}

fn wait_live(f: &Fx) {
    let until = Instant::now() + Duration::from_secs(15);
    while f.app.house.link().mode() != LinkMode::WebSocket && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Switches `c` to the other state; returns the action sent.
fn toggle(f: &Fx, c: &Control) {
    let on = f
        .app
        .house
        .value(c)
        .ok()
        .and_then(|v| v.value.as_f64())
        .is_some_and(|v| v != 0.0);
    let action = if on { Action::Off } else { Action::On };
    f.app
        .house
        .act(c, &action, "test")
        .expect("the light switches");
}

#[test]
fn endpoints_answer_with_their_shapes() {
    let f = start(false, WsConfig::default());
    let home = f.app.house.home();

    let (s, status) = get(&f, "/dashboard/api/status");
    assert_eq!(s, 200, "{status}");
    assert_eq!(status["version"], env!("CARGO_PKG_VERSION"));
    assert!(status["uptime_secs"].is_u64());
    assert!(status["link"]["mode"].is_string());
    assert_eq!(status["counts"]["rooms"], home.rooms.len());
    assert_eq!(status["counts"]["controls"], home.controls.len());
    assert_eq!(status["history"]["days"], 7);
    assert_eq!(status["history"]["persistent"], false);

    let (s, data) = get(&f, "/dashboard/api/data");
    assert_eq!(s, 200, "{data}");
    let rooms = data["rooms"].as_array().unwrap();
    let real: Vec<_> = rooms.iter().filter(|r| !r["uuid"].is_null()).collect();
    assert_eq!(real.len(), home.rooms.len());
    assert!(rooms
        .iter()
        .all(|r| r["name"].is_string() && r["devices"].is_array()));
    let device = rooms
        .iter()
        .flat_map(|r| r["devices"].as_array().unwrap())
        .next()
        .expect("devices");
    for k in ["uuid", "name", "type", "category"] {
        assert!(device[k].is_string(), "{device}");
    }
    let climate = data["climate"].as_array().unwrap();
    assert!(!climate.is_empty(), "the demo has climate controllers");
    assert!(climate.iter().all(|c| c["room"].is_string()));
    assert!(climate.iter().any(|c| c["temperature"].is_number()));
    assert!(data["changes"].is_array());
    assert!(data["alarm"].is_array());
    assert!(data["energy"].is_array());
    assert_eq!(data["activity"], Value::Array(vec![]));
    assert_eq!(data["status"]["counts"]["rooms"], home.rooms.len());

    let (s, r) = get(&f, "/dashboard/api/rooms");
    assert_eq!(s, 200);
    let names = |v: &Value| -> Vec<Value> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|r| r["uuid"].clone())
            .collect()
    };
    assert_eq!(names(&r["rooms"]), names(&data["rooms"]));

    let (s, m) = get(&f, "/dashboard/api/metrics");
    assert_eq!(s, 200, "{m}");
    for k in [
        "uptime_secs",
        "events_received",
        "bus_published",
        "ws_clients",
        "ws_clients_dropped",
        "ws_refused",
        "history_rows_written",
        "mcp_sessions",
        "sse_streams",
    ] {
        assert!(m[k].is_u64(), "{k} in {m}");
    }

    let (s, h) = get(&f, "/dashboard/api/history/temperature");
    assert_eq!(s, 200, "{h}");
    assert_eq!(h["type"], "temperature");
    assert_eq!(h["hours"], 24);
    assert!(h["entries"].is_array() && h["from"].is_string() && h["to"].is_string());
    let (s, h) = get(&f, "/dashboard/api/history/sensors?hours=168");
    assert_eq!(s, 200, "{h}");
    assert_eq!(h["hours"], 168);

    let (s, t) = get(&f, "/dashboard/api/trends/day");
    assert_eq!(s, 200, "{t}");
    assert_eq!(t["period"], "day");
    assert_eq!(t["type"], "temperature");
    assert!(t["series"].is_array());
}

#[test]
fn bad_input_is_refused_with_the_error_object() {
    let f = start(false, WsConfig::default());
    for (path, status, code) in [
        ("/dashboard/api/history/bogus", 404, "NOT_FOUND"),
        ("/dashboard/api/trends/month", 404, "NOT_FOUND"),
        ("/dashboard/api/nothing", 404, "NOT_FOUND"),
        ("/dashboard/api/history/a/b", 404, "NOT_FOUND"),
        ("/dashboard/api", 404, "NOT_FOUND"),
        ("/dashboard/nothing.js", 404, "NOT_FOUND"),
        (
            "/dashboard/api/history/energy?hours=0",
            400,
            "INVALID_PARAMETERS",
        ),
        (
            "/dashboard/api/history/energy?hours=abc",
            400,
            "INVALID_PARAMETERS",
        ),
        (
            "/dashboard/api/history/energy?hours=169",
            400,
            "INVALID_PARAMETERS",
        ),
        (
            "/dashboard/api/history/energy?hours=-3",
            400,
            "INVALID_PARAMETERS",
        ),
        (
            "/dashboard/api/trends/hour?type=bogus",
            400,
            "INVALID_PARAMETERS",
        ),
    ] {
        let (s, b) = get(&f, path);
        assert_eq!(s, status, "{path}: {b}");
        assert_error(&b, code);
    }
    let (s, _, b) = send(f.server.addr(), "POST", "/dashboard/api/data", &[]);
    assert_eq!(s, 405, "{b}");
    // A foreign page may not open the WebSocket (cross-site WebSocket hijacking).
    let (s, _, b) = send(
        f.server.addr(),
        "GET",
        "/dashboard/ws",
        &[
            "Origin: https://evil.example",
            "Upgrade: websocket",
            "Connection: Upgrade",
            "Sec-WebSocket-Version: 13",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        ],
    );
    assert_eq!(s, 403, "{b}");
    // A plain GET of the WebSocket path is no handshake.
    let (s, _, b) = send(f.server.addr(), "GET", "/dashboard/ws", &[]);
    assert_eq!(s, 400, "{b}");
}

#[test]
fn page_and_assets_carry_strict_headers_and_need_no_key() {
    let f = start(true, WsConfig::default());
    for (path, ct) in [
        ("/dashboard/", "text/html"),
        ("/dashboard/index.html", "text/html"),
        ("/dashboard/app.js", "text/javascript"),
        ("/dashboard/app.css", "text/css"),
    ] {
        let (s, head, body) = send(f.server.addr(), "GET", path, &[]);
        assert_eq!(s, 200, "{path}");
        let head = head.to_ascii_lowercase();
        assert!(head.contains(&format!("content-type: {ct}")), "{head}");
        assert!(
            head.contains("content-security-policy: default-src 'none'; script-src 'self'"),
            "{head}"
        );
        assert!(head.contains("frame-ancestors 'none'"));
        assert!(head.contains("x-content-type-options: nosniff"));
        assert!(head.contains("referrer-policy: no-referrer"));
        assert!(!body.is_empty());
    }
    let (_, _, html) = send(f.server.addr(), "GET", "/dashboard/", &[]);
    for id in [
        "link-status",
        "rooms",
        "changes",
        "climate",
        "alarm",
        "energy",
        "activity",
        "key-form",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "#{id}");
    }
    assert!(
        !html.contains("<script>") && !html.contains("style="),
        "no inline code"
    );
    let (s, head, _) = send(f.server.addr(), "GET", "/dashboard", &[]);
    assert_eq!(s, 308);
    assert!(head.contains("Location: /dashboard/"), "{head}");
}

#[test]
fn staging_gates_the_api_and_the_websocket() {
    let f = start(true, WsConfig::default());
    let (s, b) = get(&f, "/dashboard/api/status");
    assert_eq!(s, 401, "{b}");
    assert_error(&b, "INVALID_API_KEY");
    let (s, b) = get_json(
        &f,
        "/dashboard/api/status",
        &["X-API-Key: homekey_monitor_9_wrong"],
    );
    assert_eq!(s, 401, "{b}");
    let key = format!("X-API-Key: {MONITOR}");
    for path in [
        "/dashboard/api/status",
        "/dashboard/api/data",
        "/dashboard/api/history/all",
    ] {
        let (s, b) = get_json(&f, path, &[&key]);
        assert_eq!(s, 200, "{path}: {b}");
    }
    assert_eq!(ws_connect(f.server.addr(), None).err(), Some(401));
    assert_eq!(
        ws_connect(f.server.addr(), Some("home-mcp")).err(),
        Some(401)
    );
    assert_eq!(
        ws_connect(
            f.server.addr(),
            Some("home-mcp, key.homekey_monitor_9_wrong")
        )
        .err(),
        Some(401)
    );
    let mut ws = ws_connect(f.server.addr(), Some(&format!("home-mcp, key.{MONITOR}")))
        .expect("the key subprotocol authenticates");
    hello(&mut ws);
}

#[test]
fn history_records_a_switched_light_and_trends_aggregate() {
    let f = start(false, WsConfig::default());
    wait_live(&f);
    let c = light(&f);
    toggle(&f, &c);
    let until = Instant::now() + Duration::from_secs(10);
    let mut found = None;
    while Instant::now() < until {
        f.dash.history().flush().unwrap();
        let (_, h) = get(&f, "/dashboard/api/history/state_changes?hours=1");
        if let Some(e) = h["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["uuid"] == c.uuid.as_str())
        {
            found = Some(e.clone());
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let e = found.expect("the switch is in the history");
    assert_eq!(e["kind"], "state_change");
    assert_eq!(e["name"], c.name.as_str());
    assert!(e["at"].as_str().unwrap().ends_with('Z'));
    assert!(e["value"].is_number());
    assert!(f.dash.history().written() > 0);
    let (_, data) = get(&f, "/dashboard/api/data");
    let changes = data["changes"].as_array().unwrap();
    assert!(!changes.is_empty() && changes.len() <= 10);
    let at = |x: &Value| x["at_ms"].as_i64().unwrap();
    assert!(
        changes.windows(2).all(|w| at(&w[0]) >= at(&w[1])),
        "newest first"
    );
    // The switch is among the last 10 changes unless 10 newer ones came after it.
    assert!(
        changes.iter().any(|x| x["uuid"] == c.uuid.as_str())
            || (changes.len() == 10 && changes.iter().all(|x| at(x) >= at(&e))),
        "{changes:?}"
    );

    // Trends: two temperatures of one sensor in this hour -> one bucket with min/avg/max.
    let sensor = f
        .app
        .house
        .home()
        .controls
        .iter()
        .find(|c| {
            matches!(
                c.kind,
                ControlKind::IRoomControllerV2 | ControlKind::IRoomController
            )
        })
        .cloned()
        .expect("a room controller");
    for v in [18.0, 22.0] {
        f.app.house.record(
            &sensor.uuid,
            Some(&sensor.uuid),
            HValue::Number(v),
            SystemTime::now(),
            Source::Read,
        );
        std::thread::sleep(Duration::from_millis(30));
    }
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        f.dash.history().flush().unwrap();
        let (s, t) = get(&f, "/dashboard/api/trends/hour?type=temperature");
        assert_eq!(s, 200);
        let series = t["series"].as_array().unwrap();
        let mine = series.iter().find(|x| x["uuid"] == sensor.uuid.as_str());
        if let Some(b) = mine.and_then(|m| m["buckets"].as_array().unwrap().last()) {
            if b["min"].as_f64().unwrap() <= 18.0 && b["max"].as_f64().unwrap() >= 22.0 {
                assert!(b["count"].as_u64().unwrap() >= 2);
                let avg = b["avg"].as_f64().unwrap();
                assert!((b["min"].as_f64().unwrap()..=22.0).contains(&avg));
                assert!(b["start"].as_str().unwrap().ends_with('Z'));
                break;
            }
        }
        assert!(Instant::now() < until, "no trend bucket: {t}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn websocket_pushes_a_switched_light_within_a_second() {
    let f = start(false, WsConfig::default());
    wait_live(&f);
    let mut ws = ws_connect(f.server.addr(), Some("home-mcp")).expect("connects");
    hello(&mut ws);
    assert_eq!(f.dash.ws_clients(), 1);
    let c = light(&f);
    // Let the start-up values settle, then switch.
    while next_json(&mut ws, Duration::from_millis(300)).is_some() {}
    let sent = Instant::now();
    toggle(&f, &c);
    let mut got = None;
    while sent.elapsed() < Duration::from_secs(1) {
        match next_json(&mut ws, Duration::from_millis(100)) {
            Some(m)
                if m["type"] == "device_state_change"
                    && m["payload"]["uuid"] == c.uuid.as_str() =>
            {
                got = Some(m);
                break;
            }
            _ => {}
        }
    }
    let m = got.expect("device_state_change within 1 s");
    let p = &m["payload"];
    assert_eq!(p["name"], c.name.as_str());
    assert_eq!(p["category"], "lighting");
    assert!(p["state"].is_string() && p["at"].is_string() && p["seq"].is_u64());
    assert!(p["display"]["on"].is_boolean(), "{p}");

    // Link down and up: system events.
    f.app.house.link().failed("test: cable pulled");
    let until = Instant::now() + Duration::from_secs(2);
    let mut link = None;
    while Instant::now() < until && link.is_none() {
        if let Some(m) = next_json(&mut ws, Duration::from_millis(100)) {
            if m["type"] == "system_event" && m["payload"]["event"] == "link" {
                link = Some(m);
            }
        }
    }
    let link = link.expect("a link system_event");
    assert_eq!(link["payload"]["mode"], "disconnected");
    assert_eq!(link["payload"]["link"]["last_error"], "test: cable pulled");

    // Server shutdown closes the client with 1001.
    f.server.shutdown();
    let until = Instant::now() + Duration::from_secs(3);
    let mut code = None;
    while Instant::now() < until && code.is_none() {
        match ws.read() {
            Ok(Message::Close(Some(frame))) => code = Some(frame.code),
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    assert_eq!(code, Some(CloseCode::Away));
}

/// The Miniserver's event about a command can arrive before the command's answer; the house
/// used to forget that new value after the answer, and the page's room tile showed "–".
#[test]
fn a_switched_light_keeps_its_new_state_in_the_rooms() {
    let f = start(false, WsConfig::default());
    wait_live(&f);
    let c = light(&f);
    for _ in 0..2 {
        let was_on = f
            .app
            .house
            .value(&c)
            .ok()
            .and_then(|v| v.value.as_f64())
            .is_some_and(|v| v != 0.0);
        toggle(&f, &c);
        let until = Instant::now() + Duration::from_secs(2);
        let mut state = Value::Null;
        while Instant::now() < until {
            let (status, body) = get(&f, "/dashboard/api/rooms");
            assert_eq!(status, 200);
            state = body["rooms"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|r| r["devices"].as_array().unwrap().iter())
                .find(|d| d["uuid"] == c.uuid.as_str())
                .map(|d| d["state"].clone())
                .unwrap_or(Value::Null);
            if state["on"] == !was_on {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(state["on"], !was_on, "the new state is remembered: {state}");
    }
}

#[test]
fn a_client_that_never_reads_does_not_delay_another() {
    let f = start(
        false,
        WsConfig {
            client_queue: 64,
            write_timeout: Duration::from_secs(2),
            ..WsConfig::default()
        },
    );
    let _slow = ws_connect(f.server.addr(), Some("home-mcp")).expect("connects");
    let mut fast = ws_connect(f.server.addr(), Some("home-mcp")).expect("connects");
    hello(&mut fast);
    while next_json(&mut fast, Duration::from_millis(300)).is_some() {}
    let c = light(&f);
    const N: usize = 400;
    let padding = "x".repeat(32_000);
    let house = f.app.house.clone();
    let uuid = c.uuid.clone();
    let publisher = std::thread::spawn(move || {
        for i in 0..N {
            // Text values make big messages, so the slow client's socket fills quickly.
            house.record(
                &uuid,
                Some(&uuid),
                HValue::Text(format!("{i}-{padding}")),
                SystemTime::now(),
                Source::Event,
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    let started = Instant::now();
    let mut seen = 0;
    while seen < N && started.elapsed() < Duration::from_secs(10) {
        if let Some(m) = next_json(&mut fast, Duration::from_millis(500)) {
            if m["payload"]["uuid"] == c.uuid.as_str() && m["payload"]["value"].is_string() {
                seen += 1;
            }
        }
    }
    publisher.join().unwrap();
    let (_, m) = get(&f, "/dashboard/api/metrics");
    assert_eq!(seen, N, "the fast client got every event; {m}");
    assert!(
        m["ws_messages_dropped"].as_u64().unwrap() > 0
            || m["ws_clients_dropped"].as_u64().unwrap() > 0,
        "the slow client fell behind: {m}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn clients_beyond_the_limit_get_503() {
    let f = start(
        false,
        WsConfig {
            max_clients: 2,
            ..WsConfig::default()
        },
    );
    let mut a = ws_connect(f.server.addr(), None).unwrap();
    let _b = ws_connect(f.server.addr(), None).unwrap();
    assert_eq!(ws_connect(f.server.addr(), None).err(), Some(503));
    let (_, m) = get(&f, "/dashboard/api/metrics");
    assert_eq!(m["ws_refused"], 1);
    assert_eq!(m["ws_clients"], 2);
    // A client that closes frees its slot.
    hello(&mut a);
    a.close(None).unwrap();
    let until = Instant::now() + Duration::from_secs(3);
    while f.dash.ws_clients() > 1 && Instant::now() < until {
        let _ = a.read();
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(f.dash.ws_clients(), 1);
    let _c = ws_connect(f.server.addr(), None).expect("a slot is free again");
}

fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Memory of `home-mcp serve --demo` before and after 20 dashboard WebSocket clients (debug
/// build). Run with `cargo test --test dashboard -- --ignored --nocapture`.
#[test]
#[ignore]
fn measure_rss_with_20_clients() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_home-mcp"))
        .args(["serve", "--demo", "--listen", &format!("127.0.0.1:{port}")])
        .env("HOME_LOG_LEVEL", "warn")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(addr).is_err() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(3));
    let before = rss_kib(child.id());
    let mut clients: Vec<Client> = (0..20)
        .map(|_| ws_connect(addr, Some("home-mcp")).unwrap())
        .collect();
    for c in &mut clients {
        hello(c);
    }
    std::thread::sleep(Duration::from_secs(3));
    let after = rss_kib(child.id());
    println!(
        "VmRSS before {before} KiB, with 20 WS clients {after} KiB (+{} KiB)",
        after.saturating_sub(before)
    );
    drop(clients);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn an_oversized_client_message_ends_the_session() {
    let f = start(false, WsConfig::default());
    let mut ws = ws_connect(f.server.addr(), None).unwrap();
    hello(&mut ws);
    assert_eq!(f.dash.ws_clients(), 1);
    let _ = ws.send(Message::text("x".repeat(200 * 1024)));
    let until = Instant::now() + Duration::from_secs(3);
    while f.dash.ws_clients() > 0 && Instant::now() < until {
        let _ = ws.read();
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(f.dash.ws_clients(), 0, "the session ended");
}

#[test]
fn the_activity_feed_comes_from_its_source() {
    let app = App::start(&Config::default(), true).expect("demo starts");
    let history = History::in_memory(HistoryConfig::default()).unwrap();
    let dash = Dashboard::start(app.house.clone(), history, WsConfig::default())
        .unwrap()
        .with_activity(Arc::new(|n| {
            (0..n + 5)
                .map(|i| serde_json::json!({"tool": "control_device", "seq": i}))
                .collect()
        }));
    let data = home_mcp::dashboard::api::data(&dash);
    assert_eq!(data.status, 200);
    let activity = data.body["activity"].as_array().unwrap();
    assert_eq!(activity.len(), home_mcp::dashboard::api::RECENT_ACTIVITY);
    assert_eq!(activity[0]["tool"], "control_device");
    dash.shutdown();
}

#[test]
fn a_revoked_key_loses_its_websocket_at_the_next_ping() {
    let f = start(
        true,
        WsConfig {
            ping_every: Duration::from_millis(200),
            ..WsConfig::default()
        },
    );
    let mut ws = ws_connect(f.server.addr(), Some(&format!("home-mcp, key.{MONITOR}")))
        .expect("the key subprotocol authenticates");
    hello(&mut ws);
    let mut revoked = monitor_key();
    revoked.active = false;
    f.keys.update(revoked).unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    let code = loop {
        assert!(
            Instant::now() < until,
            "the session outlived its revoked key"
        );
        match ws.read() {
            Ok(Message::Close(frame)) => break frame.map(|f| u16::from(f.code)),
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("expected a close frame, got {e}"),
        }
    };
    assert_eq!(code, Some(1008), "policy violation");
}
