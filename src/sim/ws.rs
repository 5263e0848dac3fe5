//! The simulator's WebSocket endpoint, `/ws/rfc6455` with `Sec-WebSocket-Protocol:
//! remotecontrol` (loxone-protocol.md §4, checklist §6).
//!
//! A tiny_http worker hands the upgrade request to [`upgrade`], which answers 101 through
//! `Request::upgrade`, wraps the raw stream as a tungstenite server socket and moves it to a
//! session thread of its own (at most [`MAX_SESSIONS`], the Miniserver's 31 event slots; more
//! get close code 4008). A session:
//!
//! - answers `keepalive` with a header of id 6 and no payload;
//! - sends every other command's answer as a header (id 0) plus an `LL` JSON text frame whose
//!   `control` echoes the command as sent (`jdev/...`, as over WS on a real Miniserver);
//!   `jdev/sps/io/...`, `jdev/sps/ios/...`, `jdev/cfg/...` and `jdev/sps/LoxAPPversion3` run
//!   through the same handler as HTTP; `data/LoxAPP3.json` comes back as a file (id 1) in a
//!   text frame;
//! - before authentication answers only auth commands and `jdev/cfg/*` (others: code 400).
//!   Auth commands go to the [`WsAuth`] seam (see below);
//! - on `jdev/sps/enablebinstatusupdate` sends the value table and the text table with every
//!   state UUID of the structure file (control and sub-control states, `globalStates`), then
//!   only changes: after every command, HTTP or WS (the house notifies each session through a
//!   crossbeam channel), and every [`TICK`] for time-driven changes (blinds travelling, alarms
//!   arming), computed as the difference to what this session last sent.
//!
//! Fault switches for tests live on [`Simulator`]: drop every connection, go out of service
//! (header id 5, then the socket closes), refuse new connections with close code 4003, and
//! send estimated headers (`0x80`) before each table.
//!
//! **Auth seam.** [`WsAuth`] is called for every command before the session handles it. The
//! built-in [`PlaceholderAuth`] accepts `authwithtoken/{anything}/{user}` when `user` is the
//! configured user and answers the crypto commands (`getkey2`, `getjwt`, `enc`, ...) with
//! code 501; the token/RSA/AES implementation replaces it with [`Simulator::set_ws_auth`].
//!
//! **Read timeout.** tiny_http's upgraded stream is a boxed `Read + Write` without timeouts,
//! so a session blocked in `read` could never push an event. On Unix the session finds the
//! connection's socket among the process's descriptors (matching the peer address and the
//! listening port) and sets a [`POLL`] read timeout and a write timeout on it; elsewhere events
//! only go out when the client sends something (documented limitation).

use std::any::Any;
use std::collections::HashMap;
use std::io::ErrorKind;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use crossbeam_channel::{Receiver, Sender, TrySendError};
use log::{debug, info, warn};
use serde_json::Value;
use tiny_http::{Header as HttpHeader, ReadWrite, Request, Response};
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::protocol::{CloseFrame, Role};
use tungstenite::{Message, WebSocket};

use super::house::Val;
use super::{controls, CodeKey, Simulator};
use crate::loxone::ws::frame::{Header, Identifier};
use crate::loxone::ws::tables::{encode_table, uuid_to_bytes, EventValue, StateEvent};
use crate::loxone::ws::{close_code, SUB_PROTOCOL, WS_PATH};

/// Live sessions at most (the Miniserver's event slots, §1).
pub const MAX_SESSIONS: usize = 31;
/// Read timeout of a session socket: the longest a change waits before it is pushed.
pub const POLL: Duration = Duration::from_millis(20);
/// Interval of the time-driven diff while events are enabled.
pub const TICK: Duration = Duration::from_millis(100);
/// Write timeout: a client that does not read for this long is dropped.
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// Upper bound of waiting for the client's close reply after we closed.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// `globalStates` that carry text (the ShowRoom captures put these in the text table).
const GLOBAL_TEXT: &[&str] = &[
    "pastTasks",
    "plannedTasks",
    "favColors",
    "favColorSequences",
    "miniserverTime",
    "liveSearch",
    "userSettings",
];

/// Per-connection authentication state the [`WsAuth`] seam keeps between commands.
#[derive(Default)]
pub struct WsAuthSession {
    /// The user this connection authenticated as; `None` until then.
    pub user: Option<String>,
    /// Free slot for the crypto implementation's per-session state (the AES key and IV from
    /// `keyexchange`, the current salt, ...).
    pub data: Option<Box<dyn Any + Send>>,
}

/// What the auth seam made of a command.
#[derive(Debug, Clone, PartialEq)]
pub enum WsAuthOutcome {
    /// Not an auth command: the session handles it (if authenticated).
    NotAuth,
    /// Answer with this `LL` code and value (a string or an object such as the token
    /// answer). Set [`WsAuthSession::user`] to authenticate the session.
    Answer { code: u16, value: Value },
    /// `jdev/sys/enc/{cipher}` decrypted to this plain command, which the session runs
    /// instead (once; a decrypted command is not decrypted again).
    Decrypted(String),
}

/// The seam for WebSocket authentication: called with every command (leading `/` removed)
/// before the session looks at it. Commands to expect: `jdev/sys/keyexchange/{rsa}`,
/// `jdev/sys/getkey2/{user}`, `jdev/sys/getjwt/...`, `authwithtoken/{token}/{user}`,
/// `jdev/sys/refreshjwt/...`, `jdev/sys/killtoken/...`, `jdev/sys/enc/{cipher}`.
pub trait WsAuth: Send + Sync {
    /// Handles `command` for the connection whose state is `session`.
    fn command(&self, sim: &Simulator, session: &mut WsAuthSession, command: &str)
        -> WsAuthOutcome;
}

/// Stand-in until token auth exists: `authwithtoken/{anything}/{user}` authenticates when
/// `user` is [`super::SimConfig::user`] (else code 401); `keyexchange` answers 200; the other
/// crypto commands answer 501 (not simulated). Replace with [`Simulator::set_ws_auth`].
#[derive(Debug, Default, Clone, Copy)]
pub struct PlaceholderAuth;

impl WsAuth for PlaceholderAuth {
    fn command(
        &self,
        sim: &Simulator,
        session: &mut WsAuthSession,
        command: &str,
    ) -> WsAuthOutcome {
        let c = command.strip_prefix("jdev/sys/").unwrap_or(command);
        let parts: Vec<&str> = c.split('/').collect();
        match parts.as_slice() {
            ["authwithtoken", _token, user] => {
                let user = super::http::percent_decode(user).unwrap_or_default();
                if user == sim.config().user {
                    session.user = Some(user);
                    let secs_2009 = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .map(|d| d.as_secs())
                        .unwrap_or(0)
                        .saturating_sub(1_230_768_000);
                    WsAuthOutcome::Answer {
                        code: 200,
                        value: serde_json::json!({
                            "validUntil": secs_2009 + 86_400 * 28,
                            "tokenRights": 4,
                            "unsecurePass": false
                        }),
                    }
                } else {
                    WsAuthOutcome::Answer {
                        code: 401,
                        value: Value::String(String::new()),
                    }
                }
            }
            ["keyexchange", ..] => WsAuthOutcome::Answer {
                code: 200,
                value: Value::String(String::new()),
            },
            ["getkey2" | "getkey" | "getjwt" | "gettoken" | "refreshjwt" | "killtoken" | "enc"
            | "fenc", ..] => WsAuthOutcome::Answer {
                code: 501,
                value: Value::String("not simulated".into()),
            },
            _ => WsAuthOutcome::NotAuth,
        }
    }
}

/// The WebSocket side of a [`Simulator`]: change subscribers, fault switches, the auth seam.
pub(crate) struct Hub {
    subscribers: Mutex<Vec<Sender<()>>>,
    /// Bumped by [`Simulator::ws_drop_connections`]; sessions of an older generation end.
    generation: AtomicU64,
    out_of_service: AtomicBool,
    refuse: AtomicBool,
    estimated: AtomicBool,
    sessions: AtomicUsize,
    auth: RwLock<Arc<dyn WsAuth>>,
}

impl Default for Hub {
    fn default() -> Self {
        Hub {
            subscribers: Mutex::new(Vec::new()),
            generation: AtomicU64::new(0),
            out_of_service: AtomicBool::new(false),
            refuse: AtomicBool::new(false),
            estimated: AtomicBool::new(false),
            sessions: AtomicUsize::new(0),
            auth: RwLock::new(Arc::new(super::auth::TokenWsAuth)),
        }
    }
}

impl Hub {
    /// Wakes every session: something in the house may have changed. Never blocks; drops
    /// subscribers whose session ended.
    pub(crate) fn notify(&self) {
        let mut subs = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
        subs.retain(|s| !matches!(s.try_send(()), Err(TrySendError::Disconnected(_))));
    }

    fn subscribe(&self) -> Receiver<()> {
        // One pending wake-up is enough: the session diffs the whole house.
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(tx);
        rx
    }

    fn auth(&self) -> Arc<dyn WsAuth> {
        self.auth.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Simulator {
    /// Ends every open WebSocket session abruptly (no close frame), as a network drop or a
    /// Miniserver restart would; new connections are accepted.
    pub fn ws_drop_connections(&self) {
        self.ws.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// While `on`, open sessions and new connections get a header with id 5 (out of service)
    /// and then the socket closes, as during a firmware update.
    pub fn set_ws_out_of_service(&self, on: bool) {
        self.ws.out_of_service.store(on, Ordering::SeqCst);
    }

    /// While `on`, new connections are closed right after opening with code 4003 (blocked
    /// after too many failed logins).
    pub fn set_ws_refuse(&self, on: bool) {
        self.ws.refuse.store(on, Ordering::SeqCst);
    }

    /// While `on`, each event table is preceded by an estimated header (info byte `0x80`)
    /// and then the exact one (§4.2).
    pub fn set_ws_estimated_headers(&self, on: bool) {
        self.ws.estimated.store(on, Ordering::SeqCst);
    }

    /// Replaces the WebSocket auth seam (default [`PlaceholderAuth`]); sessions use the new
    /// one from their next command.
    pub fn set_ws_auth(&self, auth: Arc<dyn WsAuth>) {
        *self.ws.auth.write().unwrap_or_else(|e| e.into_inner()) = auth;
    }

    /// Number of open WebSocket sessions.
    pub fn ws_session_count(&self) -> usize {
        self.ws.sessions.load(Ordering::SeqCst)
    }

    /// Every state as the initial event tables carry it: one event per state UUID of the
    /// structure file (controls, sub-controls, `globalStates`), numbers as
    /// [`EventValue::Number`], texts as [`EventValue::Text`] without icon. States whose UUID
    /// is not 32 hex digits are left out.
    pub fn ws_snapshot(&self) -> Vec<StateEvent> {
        let mut out: Vec<StateEvent> = self
            .ws_globals()
            .into_iter()
            .map(|(uuid, v)| to_event(uuid, &v))
            .collect();
        out.extend(
            self.ws_control_states()
                .into_iter()
                .map(|(uuid, v)| to_event(uuid, &v)),
        );
        let mut seen = std::collections::HashSet::new();
        out.retain(|e| seen.insert(e.uuid.clone()));
        out
    }

    /// `(uuid, value)` of every control and sub-control state, settled to now.
    fn ws_control_states(&self) -> Vec<(String, Val)> {
        let now = Instant::now();
        let mut house = self.house.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        for c in &mut house.ctls {
            controls::settle(c, now);
            for (name, uuid) in &c.state_uuids {
                if uuid_to_bytes(uuid).is_err() {
                    continue;
                }
                if let Some(v) = c.states.get(name) {
                    out.push((uuid.clone(), v.clone()));
                }
            }
        }
        out
    }

    /// `(uuid, value)` of the structure file's `globalStates` (*inferred* values: numbers
    /// 0, sunrise 07:00 and sunset 19:00 in minutes, lists `[]`, the current time).
    fn ws_globals(&self) -> Vec<(String, Val)> {
        let Ok(doc) = serde_json::from_str::<Value>(&self.structure_text()) else {
            return Vec::new();
        };
        let Some(globals) = doc.get("globalStates").and_then(Value::as_object) else {
            return Vec::new();
        };
        globals
            .iter()
            .filter_map(|(name, uuid)| {
                let uuid = uuid.as_str()?.to_lowercase();
                uuid_to_bytes(&uuid).ok()?;
                let v = match name.as_str() {
                    "miniserverTime" => Val::Text(miniserver_time()),
                    n if GLOBAL_TEXT.contains(&n) => Val::Text("[]".into()),
                    "sunrise" => Val::Num(420.0),
                    "sunset" => Val::Num(1140.0),
                    _ => Val::Num(0.0),
                };
                Some((uuid, v))
            })
            .collect()
    }
}

fn to_event(uuid: String, v: &Val) -> StateEvent {
    match v {
        Val::Num(n) => StateEvent::number(uuid, *n),
        Val::Text(t) => StateEvent::text(uuid, t.clone()),
    }
}

/// `YYYY-MM-DD HH:MM:SS +00:00:00` (UTC), the `miniserverTime` text format.
fn miniserver_time() -> String {
    let s = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    // "2026-11-21T09:17:31Z"
    format!(
        "{} +00:00:00",
        s.trim_end_matches('Z').replacen('T', " ", 1)
    )
}

/// Whether `url` is the WebSocket endpoint.
pub(crate) fn is_ws_path(url: &str) -> bool {
    url.split('?').next() == Some(WS_PATH)
}

fn header<'a>(request: &'a Request, name: &'static str) -> Option<&'a str> {
    request
        .headers()
        .iter()
        .find(|h| h.field.equiv(name))
        .map(|h| h.value.as_str())
}

/// Upgrades a request for [`WS_PATH`] and starts its session thread. Not a WebSocket
/// handshake (missing `Upgrade: websocket`, `Sec-WebSocket-Key` or version 13): 400.
/// `local_port` is the simulator's listening port (to find the socket for its timeouts).
pub(crate) fn upgrade(request: Request, sim: Arc<Simulator>, local_port: u16) {
    let upgrade_ok = header(&request, "Upgrade")
        .map(|v| v.eq_ignore_ascii_case("websocket"))
        .unwrap_or(false);
    let version_ok = header(&request, "Sec-WebSocket-Version") == Some("13");
    let key = header(&request, "Sec-WebSocket-Key").map(str::to_string);
    let (true, true, Some(key)) = (upgrade_ok, version_ok, key) else {
        debug!("sim ws: not a WebSocket handshake");
        let _ = request.respond(Response::from_string("Bad Request").with_status_code(400));
        return;
    };
    let wants_protocol = header(&request, "Sec-WebSocket-Protocol")
        .map(|v| v.split(',').any(|p| p.trim() == SUB_PROTOCOL))
        .unwrap_or(false);
    let peer = request.remote_addr().copied();
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    let mut response = Response::empty(101);
    if let Ok(h) = HttpHeader::from_bytes("Sec-WebSocket-Accept", accept) {
        response = response.with_header(h);
    }
    if wants_protocol {
        if let Ok(h) = HttpHeader::from_bytes("Sec-WebSocket-Protocol", SUB_PROTOCOL) {
            response = response.with_header(h);
        }
    }
    let stream = request.upgrade("websocket", response);
    let timeouts = peer
        .map(|p| crate::upgraded::set_timeouts(p, local_port, POLL, WRITE_TIMEOUT))
        .unwrap_or(false);
    if !timeouts {
        warn!("sim ws: no read timeout on the session socket; events wait for client input");
    }
    let ws = WebSocket::from_raw_socket(stream, Role::Server, None);
    let n = sim.ws.sessions.fetch_add(1, Ordering::SeqCst) + 1;
    let sim_for_count = sim.clone();
    let spawned = std::thread::Builder::new()
        .name("sim-ws".into())
        .spawn(move || {
            let peer_ip = peer.map(|p| p.ip()).unwrap_or(IpAddr::from([127, 0, 0, 1]));
            let session = Session::new(&sim, ws, peer_ip);
            session.run(n > MAX_SESSIONS);
            sim.ws.sessions.fetch_sub(1, Ordering::SeqCst);
        });
    if let Err(e) = spawned {
        warn!("sim ws: cannot start a session thread: {e}");
        // The closure (and its Arc) is gone; undo the count it would have undone.
        sim_for_count.ws.sessions.fetch_sub(1, Ordering::SeqCst);
    }
}

type Ws = WebSocket<Box<dyn ReadWrite + Send>>;

/// The session ends: the socket failed or the client went away.
struct Gone;

type Step = Result<(), Gone>;

struct Session<'a> {
    sim: &'a Simulator,
    ws: Ws,
    peer: IpAddr,
    changes: Receiver<()>,
    auth: WsAuthSession,
    /// `enablebinstatusupdate` done: events flow.
    enabled: bool,
    /// Last value sent per state UUID.
    sent: HashMap<String, Val>,
    generation: u64,
}

impl<'a> Session<'a> {
    fn new(sim: &'a Simulator, ws: Ws, peer: IpAddr) -> Self {
        Session {
            sim,
            ws,
            peer,
            changes: sim.ws.subscribe(),
            auth: WsAuthSession::default(),
            enabled: false,
            sent: HashMap::new(),
            generation: sim.ws.generation.load(Ordering::SeqCst),
        }
    }

    fn run(mut self, over_capacity: bool) {
        let opening = if over_capacity {
            Some(close_code::NO_EVENT_SLOTS)
        } else if self.sim.ws.refuse.load(Ordering::SeqCst) {
            Some(close_code::BLOCKED)
        } else {
            None
        };
        if let Some(code) = opening {
            info!("sim ws: closing new connection with {code}");
            self.close(code, "");
            return;
        }
        let mut last_tick = Instant::now();
        loop {
            if self.sim.ws.generation.load(Ordering::SeqCst) != self.generation {
                info!("sim ws: dropping connection (fault switch)");
                return;
            }
            if self.sim.ws.out_of_service.load(Ordering::SeqCst) {
                info!("sim ws: out of service");
                let _ = self.header(Header::new(Identifier::OutOfService, 0));
                return;
            }
            let mut woken = false;
            while self.changes.try_recv().is_ok() {
                woken = true;
            }
            if self.enabled && (woken || last_tick.elapsed() >= TICK) {
                last_tick = Instant::now();
                if self.push_changes().is_err() {
                    return;
                }
            }
            let step = match self.ws.read() {
                Ok(Message::Text(t)) => {
                    self.sim.answer_slowly();
                    self.command(t.as_str(), 0)
                }
                Ok(Message::Close(_)) => {
                    // tungstenite queued the close reply; send it.
                    let _ = self.ws.flush();
                    Err(Gone)
                }
                Ok(_) => Ok(()),
                Err(tungstenite::Error::Io(e))
                    if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
                {
                    Ok(())
                }
                Err(e) => {
                    debug!("sim ws: read: {e}");
                    Err(Gone)
                }
            };
            if step.is_err() {
                return;
            }
        }
    }

    /// Sends a close frame with `code` and waits (bounded) for the client's reply.
    fn close(&mut self, code: u16, reason: &str) {
        let frame = CloseFrame {
            code: CloseCode::from(code),
            reason: reason.to_string().into(),
        };
        if self.ws.close(Some(frame)).is_err() {
            return;
        }
        let _ = self.ws.flush();
        let until = Instant::now() + CLOSE_WAIT;
        while Instant::now() < until {
            match self.ws.read() {
                Ok(_) => {}
                Err(tungstenite::Error::Io(e))
                    if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => return,
            }
        }
    }

    fn send(&mut self, msg: Message) -> Step {
        self.ws.send(msg).map_err(|e| {
            debug!("sim ws: send: {e}");
            Gone
        })
    }

    fn header(&mut self, h: Header) -> Step {
        self.send(Message::binary(h.encode().to_vec()))
    }

    /// Header id 0 and the `LL` answer for `control`.
    fn answer(&mut self, control: &str, code: u16, value: &Value) -> Step {
        let key = match self.sim.config().code_key {
            CodeKey::Code => "Code",
            CodeKey::LowerCode => "code",
        };
        let text = serde_json::json!({
            "LL": { "control": control, "value": value, key: code.to_string() }
        })
        .to_string();
        self.text(Identifier::Text, text)
    }

    fn text(&mut self, id: Identifier, text: String) -> Step {
        self.header(Header::new(id, text.len() as u32))?;
        self.send(Message::text(text))
    }

    fn command(&mut self, raw: &str, depth: u8) -> Step {
        let cmd = raw.trim().trim_start_matches('/').to_string();
        debug!("sim ws: <- {cmd}");
        if cmd.eq_ignore_ascii_case("keepalive") {
            return self.header(Header::new(Identifier::Keepalive, 0));
        }
        let auth = self.sim.ws.auth();
        match auth.command(self.sim, &mut self.auth, &cmd) {
            WsAuthOutcome::Answer { code, value } => return self.answer(&cmd, code, &value),
            WsAuthOutcome::Decrypted(plain) if depth == 0 => return self.command(&plain, 1),
            WsAuthOutcome::Decrypted(_) => {
                return self.answer(&cmd, 400, &Value::String(String::new()))
            }
            WsAuthOutcome::NotAuth => {}
        }
        if self.auth.user.is_none() && !cmd.starts_with("jdev/cfg/") {
            return self.answer(&cmd, 400, &Value::String(String::new()));
        }
        if cmd == "jdev/sps/enablebinstatusupdate" {
            self.answer(&cmd, 200, &Value::String("1".into()))?;
            self.enabled = true;
            self.sent.clear();
            return self.push_changes();
        }
        self.via_http(&cmd)
    }

    /// Runs `cmd` through the HTTP handler (with the configured credentials) and answers it
    /// the WebSocket way.
    fn via_http(&mut self, cmd: &str) -> Step {
        let cfg = self.sim.config();
        let basic = base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", cfg.user, cfg.password));
        let resp = self.sim.handle(
            "GET",
            &format!("/{cmd}"),
            Some(&format!("Basic {basic}")),
            self.peer,
        );
        if cmd.starts_with("data/") && resp.status == 200 {
            return self.text(Identifier::BinaryFile, resp.body);
        }
        let parsed: Option<Value> = if resp.status == 200 {
            serde_json::from_str(&resp.body).ok()
        } else {
            None
        };
        match parsed {
            Some(mut v) => {
                if let Some(ll) = v.get_mut("LL").and_then(Value::as_object_mut) {
                    ll.insert("control".into(), Value::String(cmd.to_string()));
                }
                self.text(Identifier::Text, v.to_string())
            }
            None => self.answer(cmd, resp.status, &Value::String(String::new())),
        }
    }

    /// Sends what changed since the last call (everything after `enablebinstatusupdate`):
    /// a value table, then a text table, each only when non-empty.
    fn push_changes(&mut self) -> Step {
        let mut current = self.sim.ws_control_states();
        if self.sent.is_empty() {
            current.extend(self.sim.ws_globals());
        }
        let mut numbers = Vec::new();
        let mut texts = Vec::new();
        // A UUID has one value, as in the initial tables (`ws_snapshot`): where a structure
        // file gives two states the same UUID, the first one's value is sent. Otherwise both
        // would go out on every tick, each differing from the other.
        let mut seen = std::collections::HashSet::new();
        for (uuid, v) in current {
            if !seen.insert(uuid.clone()) || self.sent.get(&uuid) == Some(&v) {
                continue;
            }
            let e = to_event(uuid.clone(), &v);
            self.sent.insert(uuid, v);
            match e.value {
                EventValue::Number(_) => numbers.push(e),
                _ => texts.push(e),
            }
        }
        for (id, events) in [
            (Identifier::ValueTable, numbers),
            (Identifier::TextTable, texts),
        ] {
            if events.is_empty() {
                continue;
            }
            let bytes = match encode_table(id, &events) {
                Ok(b) => b,
                Err(e) => {
                    warn!("sim ws: cannot encode {id:?}: {e}");
                    continue;
                }
            };
            let len = bytes.len() as u32;
            if self.sim.ws.estimated.load(Ordering::SeqCst) {
                self.header(Header::estimated(id, len + 64))?;
            }
            self.header(Header::new(id, len))?;
            self.send(Message::binary(bytes))?;
        }
        Ok(())
    }
}
