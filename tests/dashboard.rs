//! The web dashboard (`src/dashboard`, issue 7) over real loopback sockets against the demo
//! house: the JSON endpoints and their shapes, history and trends, the live WebSocket (hello,
//! a light switched, a slow client, the client limit, shutdown), the gate in staging and the
//! page's security headers.

use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use home_mcp::auth::gate::{Gate, SecurityLevel};
use home_mcp::auth::Role;
use home_mcp::dashboard::{Dashboard, History, HistoryConfig, WsConfig};
use home_mcp::home::{Action, Control, ControlKind, Family, Source, Value as HValue};
use home_mcp::http::HttpConfig;
use serde_json::Value;
use tungstenite::client::IntoClientRequest;
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::{Message, WebSocket};

use crate::support::app_server::{demo_app, gate, AppServer};
use crate::support::drive::MiniserverApi;
use crate::support::gate::key;
use crate::support::live::wait_websocket;
use crate::support::net::{request, Reply};
use crate::support::wait::Deadline;
use crate::support::wait::{wait_until, PATIENCE};

const MONITOR: &str = "homekey_monitor_3_00112233445566778899aabbccddeeff";

/// The demo house served with the dashboard (its history in memory, committed every
/// 200 ms), behind a staging gate with one monitor key when `staging`, else behind the app's
/// own (development) gate.
struct Fx {
    s: AppServer,
    dash: Arc<Dashboard>,
    /// The staging gate (its store holds the monitor key).
    gate: Option<Arc<Gate>>,
}

impl Drop for Fx {
    fn drop(&mut self) {
        self.s.server.shutdown();
        self.dash.shutdown();
    }
}

fn start(staging: bool, ws: WsConfig) -> Fx {
    let mut dash = None;
    let mut staging_gate = None;
    let s = AppServer::start(|app| {
        let history = History::in_memory(HistoryConfig {
            flush_every: Duration::from_millis(200),
            ..HistoryConfig::default()
        })
        .unwrap();
        let d = Dashboard::start(app.house.clone(), history, ws).unwrap();
        dash = Some(d.clone());
        staging_gate = staging.then(|| {
            gate(
                app,
                SecurityLevel::Staging,
                vec![key(MONITOR, Role::Monitor)],
                &[],
            )
        });
        HttpConfig {
            gate: Some(staging_gate.clone().unwrap_or_else(|| app.gate.clone())),
            dashboard: Some(d),
            ..HttpConfig::default()
        }
    });
    Fx {
        s,
        dash: dash.unwrap(),
        gate: staging_gate,
    }
}

/// One request without a body: (status, lower-case head, body text).
fn send(addr: SocketAddr, method: &str, path: &str, headers: &[&str]) -> (u16, String, String) {
    let r: Reply = request(addr, method, path, headers, "");
    (r.status, r.head, r.body)
}

fn get_json(f: &Fx, path: &str, headers: &[&str]) -> (u16, Value) {
    let (s, _, b) = send(f.s.addr(), "GET", path, headers);
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

/// A WebSocket client offering `protocols`; `Err(status)` when the upgrade is refused. Its
/// reads time out after 50 ms, so the waits below can poll it.
fn ws_connect(addr: SocketAddr, protocols: Option<&str>) -> Result<Client, u16> {
    let stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
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
            ws.get_ref()
                .set_read_timeout(Some(Duration::from_millis(50)))
                .unwrap();
            Ok(ws)
        }
        Err(tungstenite::HandshakeError::Failure(tungstenite::Error::Http(r))) => {
            Err(r.status().as_u16())
        }
        Err(e) => panic!("handshake: {e}"),
    }
}

/// What one read of a client gave.
enum Read {
    Json(Value),
    /// A frame that is not text (ping, pong, close).
    Other(Message),
    /// Nothing within the read timeout.
    Idle,
    /// The connection is gone.
    Closed(tungstenite::Error),
}

fn read(ws: &mut Client) -> Read {
    match ws.read() {
        Ok(Message::Text(t)) => Read::Json(serde_json::from_str(t.as_str()).unwrap()),
        Ok(m) => Read::Other(m),
        Err(tungstenite::Error::Io(e))
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Read::Idle
        }
        Err(e) => Read::Closed(e),
    }
}

/// At most 300 characters of `m`, for failure messages.
fn brief(m: &Value) -> String {
    m.to_string().chars().take(300).collect()
}

/// The next JSON message on `ws` that `want` accepts, skipping others; fails (after
/// [`PATIENCE`], checked at every message) with the last one skipped, or when the connection
/// ends.
fn next_matching(ws: &mut Client, what: &str, mut want: impl FnMut(&Value) -> bool) -> Value {
    let deadline = Deadline::new(what);
    let mut last = None;
    loop {
        match read(ws) {
            Read::Json(m) if want(&m) => return m,
            Read::Json(m) => last = Some(brief(&m)),
            Read::Other(_) | Read::Idle => {}
            Read::Closed(e) => panic!("{what}: the connection ended ({e}); last: {last:?}"),
        }
        deadline.check(&last);
    }
}

/// Reads `ws` until the server's close frame; its code. Fails when the connection ends
/// without one, or after [`PATIENCE`] (checked at every message).
fn close_code(ws: &mut Client, what: &str) -> Option<CloseCode> {
    let deadline = Deadline::new(what);
    let mut last = None;
    loop {
        match read(ws) {
            Read::Other(Message::Close(frame)) => return frame.map(|f| f.code),
            Read::Other(_) | Read::Idle => {}
            Read::Json(m) => last = Some(brief(&m)),
            Read::Closed(e) => panic!("{what}: no close frame ({e}); last: {last:?}"),
        }
        deadline.check(&last);
    }
}

/// The first message: the hello.
fn hello(ws: &mut Client) -> Value {
    let m = next_matching(ws, "a hello", |_| true);
    assert_eq!(m["type"], "system_event", "{m}");
    assert_eq!(m["payload"]["event"], "hello", "{m}");
    assert!(m["payload"]["status"]["link"]["mode"].is_string());
    m
}

/// A switched light (a `Switch` in the lighting family: its state `active` is 0 or 1) of
/// the demo house.
fn light(f: &Fx) -> Control {
    let home = f.s.app.house.home();
    home.controls
        .iter()
        .find(|c| home.family(c) == Family::Lighting && c.kind == ControlKind::Switch)
        .cloned()
        .expect("the demo has a switched light")
}

/// Whether `c` is on now, as the Miniserver (the simulator, over its HTTP API) says.
fn is_on(f: &Fx, c: &Control) -> bool {
    MiniserverApi::of(&f.s.app).state(&c.uuid, "active") != 0.0
}

/// Switches `c` through the house to the other state (as the Miniserver says it is); returns
/// whether it is on now.
fn toggle(f: &Fx, c: &Control) -> bool {
    let on = is_on(f, c);
    let action = if on { Action::Off } else { Action::On };
    f.s.app
        .house
        .act(c, &action, "test")
        .expect("the light switches");
    // The command's answer has come: the Miniserver has switched.
    assert_eq!(is_on(f, c), !on, "{} switched on the Miniserver", c.name);
    !on
}

#[test]
fn endpoints_answer_with_their_shapes() {
    let f = start(false, WsConfig::default());
    let home = f.s.app.house.home();

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
    let (s, _, b) = send(f.s.addr(), "POST", "/dashboard/api/data", &[]);
    assert_eq!(s, 405, "{b}");
    // A foreign page may not open the WebSocket (cross-site WebSocket hijacking).
    let (s, _, b) = send(
        f.s.addr(),
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
    let (s, _, b) = send(f.s.addr(), "GET", "/dashboard/ws", &[]);
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
        let (s, head, body) = send(f.s.addr(), "GET", path, &[]);
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
    let (_, _, html) = send(f.s.addr(), "GET", "/dashboard/", &[]);
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
    let (s, head, _) = send(f.s.addr(), "GET", "/dashboard", &[]);
    assert_eq!(s, 308);
    assert!(head.contains("location: /dashboard/"), "{head}");
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
    assert_eq!(ws_connect(f.s.addr(), None).err(), Some(401));
    assert_eq!(ws_connect(f.s.addr(), Some("home-mcp")).err(), Some(401));
    assert_eq!(
        ws_connect(f.s.addr(), Some("home-mcp, key.homekey_monitor_9_wrong")).err(),
        Some(401)
    );
    let mut ws = ws_connect(f.s.addr(), Some(&format!("home-mcp, key.{MONITOR}")))
        .expect("the key subprotocol authenticates");
    hello(&mut ws);
}

#[test]
fn history_records_a_switched_light_and_trends_aggregate() {
    let f = start(false, WsConfig::default());
    wait_websocket(&f.s.app);
    let c = light(&f);
    toggle(&f, &c);
    let e = wait_until("the switch in the history", PATIENCE, || {
        f.dash.history().flush().unwrap();
        let (_, h) = get(&f, "/dashboard/api/history/state_changes?hours=1");
        h["entries"]
            .as_array()
            .and_then(|entries| entries.iter().find(|e| e["uuid"] == c.uuid.as_str()))
            .cloned()
            .ok_or_else(|| brief(&h))
    });
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

    // Trends: two temperatures of one sensor at one moment of this hour -> one bucket with
    // min/avg/max over them.
    let sensor = crate::support::find::room_controller(&f.s.app.house.home(), None).clone();
    let now = SystemTime::now();
    for v in [18.0, 22.0] {
        f.s.app.house.record(
            &sensor.uuid,
            Some(&sensor.uuid),
            HValue::Number(v),
            now,
            Source::Read,
        );
    }
    let b = wait_until("a trend bucket with 18 and 22", PATIENCE, || {
        f.dash.history().flush().unwrap();
        let (s, t) = get(&f, "/dashboard/api/trends/hour?type=temperature");
        assert_eq!(s, 200);
        let series = t["series"].as_array().unwrap();
        let mine = series.iter().find(|x| x["uuid"] == sensor.uuid.as_str());
        match mine.and_then(|m| m["buckets"].as_array().unwrap().last()) {
            Some(b) if b["min"].as_f64().unwrap() <= 18.0 && b["max"].as_f64().unwrap() >= 22.0 => {
                Ok(b.clone())
            }
            _ => Err(brief(&t)),
        }
    });
    assert!(b["count"].as_u64().unwrap() >= 2, "{b}");
    let (min, max) = (b["min"].as_f64().unwrap(), b["max"].as_f64().unwrap());
    assert!((min..=max).contains(&b["avg"].as_f64().unwrap()), "{b}");
    assert!(b["start"].as_str().unwrap().ends_with('Z'));
}

/// The push of a switched light, link events and the close at shutdown. How fast a change
/// reaches the clients is measured by `cargo bench --bench dashboard`, not asserted here.
#[test]
fn websocket_pushes_a_switched_light_and_link_events() {
    let f = start(false, WsConfig::default());
    wait_websocket(&f.s.app);
    let mut ws = ws_connect(f.s.addr(), Some("home-mcp")).expect("connects");
    hello(&mut ws);
    assert_eq!(f.dash.ws_clients(), 1);
    let c = light(&f);
    let on = toggle(&f, &c);
    // Start-up values of the light carry its old state: only the switch has the new one.
    let m = next_matching(&mut ws, "the switched light's device_state_change", |m| {
        m["type"] == "device_state_change"
            && m["payload"]["uuid"] == c.uuid.as_str()
            && m["payload"]["display"]["on"] == on
    });
    let p = &m["payload"];
    assert_eq!(p["name"], c.name.as_str());
    assert_eq!(p["category"], "lighting");
    assert!(p["state"].is_string() && p["at"].is_string() && p["seq"].is_u64());

    // Link down: a system event.
    f.s.app.house.link().websocket_lost("test: cable pulled");
    let link = next_matching(&mut ws, "a link system_event", |m| {
        m["type"] == "system_event" && m["payload"]["event"] == "link"
    });
    assert_eq!(link["payload"]["mode"], "disconnected");
    assert_eq!(link["payload"]["link"]["last_error"], "test: cable pulled");

    // Server shutdown closes the client with 1001.
    f.s.server.shutdown();
    assert_eq!(
        close_code(&mut ws, "the close at shutdown"),
        Some(CloseCode::Away)
    );
}

/// The Miniserver's event about a command can arrive before the command's answer; the house
/// used to forget that new value after the answer, and the page's room tile showed "–".
#[test]
fn a_switched_light_keeps_its_new_state_in_the_rooms() {
    let f = start(false, WsConfig::default());
    wait_websocket(&f.s.app);
    let c = light(&f);
    let state_in_rooms = || {
        let (status, body) = get(&f, "/dashboard/api/rooms");
        assert_eq!(status, 200);
        body["rooms"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["devices"].as_array().unwrap().iter())
            .find(|d| d["uuid"] == c.uuid.as_str())
            .map(|d| d["state"].clone())
            .unwrap_or(Value::Null)
    };
    for _ in 0..2 {
        let on = toggle(&f, &c);
        // The tile shows the pushed state (the store, never a read from the Miniserver), and
        // the push may come after the command's answer: wait for it. Nothing here reads the
        // light from the Miniserver (`toggle` asks the simulator), so a forgotten value would
        // stay forgotten and fail the wait.
        wait_until("the new state in the rooms", PATIENCE, || {
            let state = state_in_rooms();
            if state["on"] == on {
                Ok(())
            } else {
                Err(state)
            }
        });
        // ...and it stays: nothing that came with the command's answer undid it.
        assert_eq!(state_in_rooms()["on"], on, "the new state is remembered");
    }
}

/// A client that never reads does not hold up another: the other gets every message, and no
/// `resync` (it missed nothing), while the first's queue overflows. (That it gets them quickly
/// is a speed figure, measured by `cargo bench --bench dashboard`; here no clock decides the
/// verdict.) The demo's start-up values (its initial tables: hundreds of states) may still be
/// arriving when the link is up, and such a burst may overflow any client's queue: the two
/// clients connect after it has gone out, known by a change made on the Miniserver itself
/// (over the same WebSocket, after the tables) reaching a first client. Then changes are made
/// one at a time, each after the fast client got the previous one, so the fast client's queue
/// never fills; the silent one's fills and its messages are dropped. Its write timeout is
/// longer than the test, so it stays connected, silent, all along.
#[test]
fn a_client_that_never_reads_does_not_delay_another() {
    let f = start(
        false,
        WsConfig {
            client_queue: 64,
            write_timeout: Duration::from_secs(3600),
            ..WsConfig::default()
        },
    );
    wait_websocket(&f.s.app);
    let c = light(&f);
    // The start-up burst has gone out once a change made on the Miniserver after it reached
    // a client. Should the burst overflow that client's queue and the change be dropped for
    // it, the client gets a resync instead, and the change is made again.
    let mut first = ws_connect(f.s.addr(), Some("home-mcp")).expect("connects");
    hello(&mut first);
    let ms = MiniserverApi::of(&f.s.app);
    let burst = Deadline::new("a change on the Miniserver through to a client");
    loop {
        let on = !is_on(&f, &c);
        ms.command(&c.uuid, if on { "on" } else { "off" });
        let m = next_matching(&mut first, "the switch or a resync", |m| {
            (m["payload"]["uuid"] == c.uuid.as_str() && m["payload"]["display"]["on"] == on)
                || m["payload"]["event"] == "resync"
        });
        if m["payload"]["event"] != "resync" {
            break;
        }
        burst.check("a resync");
    }
    drop(first);

    let _slow = ws_connect(f.s.addr(), Some("home-mcp")).expect("connects");
    let mut fast = ws_connect(f.s.addr(), Some("home-mcp")).expect("connects");
    hello(&mut fast);
    wait_until(
        "the first client gone, two connected",
        PATIENCE,
        || match f.dash.ws_clients() {
            2 => Ok(()),
            n => Err(n),
        },
    );
    // Text values make big messages, so the silent client's socket fills quickly.
    let padding = "x".repeat(32_000);
    let dropped_before = f.dash.hub().dropped_messages();
    // At least this many, and on until the silent client has missed some of them.
    const N: usize = 400;
    const MAX: usize = 5_000;
    let mut i = 0;
    while i < N || f.dash.hub().dropped_messages() == dropped_before {
        assert!(
            i < MAX,
            "{MAX} messages and the silent client missed none: {}",
            brief(&get(&f, "/dashboard/api/metrics").1)
        );
        f.s.app.house.record(
            &c.uuid,
            Some(&c.uuid),
            HValue::Text(format!("{i}-{padding}")),
            SystemTime::now(),
            Source::Event,
        );
        let tag = format!("{i}-");
        let m = next_matching(&mut fast, &format!("message {i} on the fast client"), |m| {
            (m["payload"]["uuid"] == c.uuid.as_str()
                && m["payload"]["value"]
                    .as_str()
                    .is_some_and(|v| v.starts_with(&tag)))
                || m["payload"]["event"] == "resync"
        });
        assert_ne!(
            m["payload"]["event"], "resync",
            "the fast client missed a message before message {i}"
        );
        i += 1;
    }
    let (_, m) = get(&f, "/dashboard/api/metrics");
    assert!(
        m["ws_messages_dropped"].as_u64().unwrap() > dropped_before,
        "the silent client fell behind: {m}"
    );
    assert_eq!(
        m["ws_clients"], 2,
        "the silent client is still connected: {m}"
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
    let mut a = ws_connect(f.s.addr(), None).unwrap();
    let _b = ws_connect(f.s.addr(), None).unwrap();
    assert_eq!(ws_connect(f.s.addr(), None).err(), Some(503));
    let (_, m) = get(&f, "/dashboard/api/metrics");
    assert_eq!(m["ws_refused"], 1);
    assert_eq!(m["ws_clients"], 2);
    // A client that closes frees its slot.
    hello(&mut a);
    a.close(None).unwrap();
    wait_until("the closed client's slot freed", PATIENCE, || {
        let _ = a.read();
        match f.dash.ws_clients() {
            1 => Ok(()),
            n => Err(n),
        }
    });
    let _c = ws_connect(f.s.addr(), None).expect("a slot is free again");
}

#[test]
fn an_oversized_client_message_ends_the_session() {
    let f = start(false, WsConfig::default());
    let mut ws = ws_connect(f.s.addr(), None).unwrap();
    hello(&mut ws);
    assert_eq!(f.dash.ws_clients(), 1);
    let _ = ws.send(Message::text("x".repeat(200 * 1024)));
    wait_until("the session to end", PATIENCE, || {
        let _ = ws.read();
        match f.dash.ws_clients() {
            0 => Ok(()),
            n => Err(n),
        }
    });
}

#[test]
fn the_activity_feed_comes_from_its_source() {
    let app = demo_app();
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
    let mut ws = ws_connect(f.s.addr(), Some(&format!("home-mcp, key.{MONITOR}")))
        .expect("the key subprotocol authenticates");
    hello(&mut ws);
    let mut revoked = key(MONITOR, Role::Monitor);
    revoked.active = false;
    f.gate
        .as_ref()
        .expect("the staging gate")
        .store()
        .update(revoked)
        .unwrap();
    assert_eq!(
        close_code(&mut ws, "the close after the revocation").map(u16::from),
        Some(1008),
        "policy violation"
    );
}

/// The Message Center on the dashboard (issue 31): active entries first in `data.alerts`, an
/// entry raised at the simulator pushed as a `system_event` and then listed first (the most
/// severe), the stop's state in `status.stop`.
#[test]
fn alerts_come_first_and_the_stop_is_shown() {
    let f = start(false, WsConfig::default());
    let ms = MiniserverApi::of(&f.s.app);
    let (s, data) = get(&f, "/dashboard/api/data");
    assert_eq!(s, 200);
    assert_eq!(
        data["status"]["stop"]["stopped"], false,
        "{}",
        data["status"]
    );
    assert_eq!(data["alerts"]["available"], true);
    let seeded = wait_until("the seeded warning on the dashboard", PATIENCE, || {
        let (_, d) = get(&f, "/dashboard/api/data");
        match d["alerts"]["active"].as_array() {
            Some(a) if !a.is_empty() => Ok(a[0].clone()),
            _ => Err(d["alerts"].clone()),
        }
    });
    assert_eq!(seeded["severity"], "warning");
    assert!(seeded["room"].is_string(), "the room by name: {seeded}");
    let mut ws = ws_connect(f.s.addr(), Some("home-mcp")).unwrap();
    let id = ms.drive("messagecenter/raise?title=Extension%20offline&severity=4");
    let m = next_matching(&mut ws, "the raised alert as a system_event", |m| {
        m["type"] == "system_event" && m["payload"]["alert"]["id"] == id.as_str()
    });
    assert_eq!(m["payload"]["event"], "alert_raised");
    let (_, d) = get(&f, "/dashboard/api/data");
    assert_eq!(
        d["alerts"]["active"][0]["id"],
        id.as_str(),
        "most severe first"
    );
    assert_eq!(d["alerts"]["counts"]["critical"], 1);
    let uid = ms.drive("notify?title=Post&message=da");
    next_matching(&mut ws, "the notification as a system_event", |m| {
        m["payload"]["event"] == "notification"
            && m["payload"]["notification"]["uid"] == uid.as_str()
    });
}
