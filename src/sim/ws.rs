//! The simulator's WebSocket endpoint, `/ws/rfc6455` with `Sec-WebSocket-Protocol:
//! remotecontrol` (loxone-protocol.md §4, checklist §6).
//!
//! A tiny_http worker hands the upgrade request to [`upgrade`], which answers 101 through
//! `Request::upgrade`, wraps the raw stream as a tungstenite server socket and moves it to a
//! session thread of its own (at most [`MAX_SESSIONS`], the Miniserver's 31 event slots; more
//! get close code 4008). A session:
//!
//! - runs every command through the simulator's command table (`commands.rs`), the same as
//!   HTTP, and answers in one write: `keepalive` with a header of id 6 and no payload; an `LL`
//!   answer as a header (id 0) plus a text frame, JSON for `jdev/...` (token answers spell the
//!   code `"code"`, as in the getkey2 and gettoken captures) and XML for `dev/...`, whose
//!   `control` echoes the command as sent (`jdev/...`, as over WS on a real Miniserver); for
//!   an encrypted command that is the encrypted form `jdev/sys/enc/{cipher}`, and a `fenc`
//!   answer is AES-encrypted as a whole (base64, §3.4); `data/LoxAPP3.json` comes back as a
//!   file (id 1) in a text frame;
//! - before authentication (a token acquired on the socket or `authwithtoken`) answers only
//!   the commands the table marks as open (others: code 400);
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
//! **Read timeout.** tiny_http's upgraded stream is a boxed `Read + Write` without timeouts,
//! so a session blocked in `read` could never push an event. On Unix the session finds the
//! connection's socket among the process's descriptors (matching the peer address and the
//! listening port) and sets a [`POLL`] read timeout and a write timeout on it; elsewhere events
//! only go out when the client sends something (documented limitation).

use std::collections::HashMap;
use std::io::ErrorKind;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use log::{debug, info, warn};
use serde_json::Value;
use tiny_http::{Header as HttpHeader, ReadWrite, Response};
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::protocol::{CloseFrame, Role};
use tungstenite::{Message, WebSocket};

use super::answer::{Answer, Request, Transport, WsLogin};
use super::house::Val;
use super::{controls, Simulator};
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

/// The WebSocket side of a [`Simulator`]: change subscribers and fault switches.
pub(crate) struct Hub {
    subscribers: Mutex<Vec<Sender<()>>>,
    /// Bumped by [`Simulator::ws_drop_connections`]; sessions of an older generation end.
    generation: AtomicU64,
    out_of_service: AtomicBool,
    refuse: AtomicBool,
    estimated: AtomicBool,
    sessions: AtomicUsize,
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

    /// Number of open WebSocket sessions.
    pub fn ws_session_count(&self) -> usize {
        self.ws.sessions.load(Ordering::SeqCst)
    }

    /// Every state as the initial event tables carry it: one event per state UUID of the
    /// structure file (controls, sub-controls, `globalStates`), numbers as
    /// [`EventValue::Number`], texts as [`EventValue::Text`] without icon. States whose UUID
    /// is not 32 hex digits are left out.
    pub fn ws_snapshot(&self) -> Vec<StateEvent> {
        // The Message Center's states first: `notifications` is also a global state, and
        // the first of a UUID wins below.
        let mut out: Vec<StateEvent> = self
            .message_center_states()
            .into_iter()
            .chain(self.ws_globals())
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
                    "miniserverTime" => Val::Text(miniserver_time(&self.config().time_zone)),
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

/// Now on the Miniserver's clock in the `miniserverTime` text format,
/// `YYYY-MM-DD HH:MM:SS +01:00:00` (the local time and its offset from UTC).
fn miniserver_time(time: &crate::home::HouseTime) -> String {
    let now = time.zoned(crate::home::time::now());
    let offset = now.offset().seconds();
    let sign = if offset < 0 { '-' } else { '+' };
    let offset = offset.unsigned_abs();
    format!(
        "{} {sign}{:02}:{:02}:{:02}",
        now.strftime("%Y-%m-%d %H:%M:%S"),
        offset / 3600,
        offset / 60 % 60,
        offset % 60
    )
}

/// Whether `url` is the WebSocket endpoint.
pub(crate) fn is_ws_path(url: &str) -> bool {
    url.split('?').next() == Some(WS_PATH)
}

fn header<'a>(request: &'a tiny_http::Request, name: &'static str) -> Option<&'a str> {
    request
        .headers()
        .iter()
        .find(|h| h.field.equiv(name))
        .map(|h| h.value.as_str())
}

/// Upgrades a request for [`WS_PATH`] and starts its session thread. Not a WebSocket
/// handshake (missing `Upgrade: websocket`, `Sec-WebSocket-Key` or version 13): 400.
/// `local_port` is the simulator's listening port (to find the socket for its timeouts).
pub(crate) fn upgrade(request: tiny_http::Request, sim: Arc<Simulator>, local_port: u16) {
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
    login: WsLogin,
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
            login: WsLogin::default(),
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
                    self.command(t.as_str())
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

    /// Queues `msg` without writing it (see [`Session::flush`]).
    fn queue(&mut self, msg: Message) -> Step {
        self.ws.write(msg).map_err(|e| {
            debug!("sim ws: write: {e}");
            Gone
        })
    }

    /// Writes what [`Session::queue`] queued: a header and its payload go out in one write to
    /// the socket (with `TCP_NODELAY`, see `server.rs`), so a client never waits for the second
    /// half of an answer behind Nagle's algorithm and a delayed ACK.
    fn flush(&mut self) -> Step {
        self.ws.flush().map_err(|e| {
            debug!("sim ws: flush: {e}");
            Gone
        })
    }

    /// A header alone (keepalive, out of service), written at once.
    fn header(&mut self, h: Header) -> Step {
        self.queue(Message::binary(h.encode().to_vec()))?;
        self.flush()
    }

    /// A header of `id` and `text` in a text frame, in one write; for a `fenc` command the
    /// text is first AES-encrypted with the session key (base64), and the header gives that
    /// length.
    fn reply_text(
        &mut self,
        key: Option<&super::SimSessionKey>,
        id: Identifier,
        text: String,
    ) -> Step {
        let text = match key {
            Some(key) => key.encrypt_answer(&text),
            None => text,
        };
        self.queue(Message::binary(
            Header::new(id, text.len() as u32).encode().to_vec(),
        ))?;
        self.queue(Message::text(text))?;
        self.flush()
    }

    /// Answers one command through the command table (`commands.rs`): an `LL` answer (header
    /// id 0 and a text frame), a file (id 1 and a text frame), a keepalive header (id 6), or
    /// code 200 and then the event tables for `enablebinstatusupdate`.
    fn command(&mut self, raw: &str) -> Step {
        let cmd = raw.trim().trim_start_matches('/').to_string();
        debug!("sim ws: <- {cmd}");
        let reply = self.sim.run(Request {
            url: &cmd,
            transport: Transport::Ws,
            peer: self.peer,
            authorization: None,
            login: Some(&mut self.login),
        });
        match &reply.answer {
            Answer::Keepalive => self.header(Header::new(Identifier::Keepalive, 0)),
            Answer::File(text) | Answer::Text(_, text) => {
                let text = text.clone();
                self.reply_text(reply.fenc.as_ref(), Identifier::BinaryFile, text)
            }
            Answer::Data(_, bytes) => {
                // Statistics records: header id 1 and a binary frame (statistics.md A1).
                let bytes = bytes.clone();
                self.queue(Message::binary(
                    Header::new(Identifier::BinaryFile, bytes.len() as u32)
                        .encode()
                        .to_vec(),
                ))?;
                self.queue(Message::binary(bytes))?;
                self.flush()
            }
            Answer::EnableUpdates => {
                let text = self.sim.ws_text(&reply).unwrap_or_default();
                self.reply_text(reply.fenc.as_ref(), Identifier::Text, text)?;
                if !self.sim.config().state_updates {
                    // A user without the right to state updates: accepted, nothing pushed.
                    return Ok(());
                }
                self.enabled = true;
                self.sent.clear();
                self.push_changes()
            }
            _ => {
                let text = self.sim.ws_text(&reply).unwrap_or_default();
                self.reply_text(reply.fenc.as_ref(), Identifier::Text, text)
            }
        }
    }

    /// Sends what changed since the last call (everything after `enablebinstatusupdate`):
    /// a value table, then a text table, each only when non-empty.
    fn push_changes(&mut self) -> Step {
        // The Message Center's `changed` and the notifications text first (the latter is a
        // global state too; the first value of a UUID counts, below).
        let mut current = self.sim.message_center_states();
        current.extend(self.sim.ws_control_states());
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
                self.queue(Message::binary(
                    Header::estimated(id, len + 64).encode().to_vec(),
                ))?;
            }
            self.queue(Message::binary(Header::new(id, len).encode().to_vec()))?;
            self.queue(Message::binary(bytes))?;
            self.flush()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! The WebSocket answers third-party clients depend on, checked over a loopback socket
    //! with the crypto redone here from loxone-protocol.md §3.2-3.4 (AES-256-CBC with zero
    //! padding, base64; SHA256 password hash; HMAC-SHA256), not with the simulator's own code.

    use super::*;
    use crate::loxone::crypto::PublicKey;
    use crate::loxone::ws::{Incoming, Reader, WsError, WsStream};
    use crate::sim::{sim_rsa, SimServer, DEMO_PASSWORD, DEMO_USER};
    use aes::Aes256;
    use base64::prelude::BASE64_STANDARD;
    use base64::Engine as _;
    use cbc::cipher::block_padding::ZeroPadding;
    use cbc::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit};
    use hmac::{Hmac, Mac};
    use sha2::{Digest, Sha256};

    /// The demo house's "Partymodus" Switch.
    const SWITCH: &str = "1d5c3a8f-0208-51f9-ffff504f94d0e5a1";
    const STEP: Duration = Duration::from_secs(10);

    /// A client's AES session key and IV (fixed, so ciphers are reproducible).
    struct Client {
        key: [u8; 32],
        iv: [u8; 16],
    }

    impl Client {
        fn new(seed: u8) -> Client {
            Client {
                key: std::array::from_fn(|i| seed.wrapping_add(i as u8)),
                iv: std::array::from_fn(|i| seed.wrapping_mul(3).wrapping_add(i as u8)),
            }
        }

        /// `jdev/sys/keyexchange/{base64(RSA("{keyHex}:{ivHex}"))}` (§3.4).
        fn key_exchange(&self) -> String {
            let pk = PublicKey::parse(sim_rsa().unwrap().public_key_line()).unwrap();
            let text = format!("{}:{}", hex::encode(self.key), hex::encode(self.iv));
            let rsa = pk.encrypt(text.as_bytes()).unwrap();
            format!("jdev/sys/keyexchange/{}", BASE64_STANDARD.encode(rsa))
        }

        /// base64 of AES-256-CBC (zero padding) of `plain`.
        fn seal(&self, plain: &str) -> String {
            let c = cbc::Encryptor::<Aes256>::new(&self.key.into(), &self.iv.into())
                .encrypt_padded_vec_mut::<ZeroPadding>(plain.as_bytes());
            BASE64_STANDARD.encode(c)
        }

        /// Inverse of [`Client::seal`], trailing zero bytes dropped.
        fn open(&self, b64: &str) -> String {
            let bytes = BASE64_STANDARD.decode(b64).unwrap();
            let plain = cbc::Decryptor::<Aes256>::new(&self.key.into(), &self.iv.into())
                .decrypt_padded_vec_mut::<ZeroPadding>(&bytes)
                .unwrap();
            String::from_utf8(plain).unwrap()
        }

        /// `jdev/sys/{enc|fenc}/{URI-encoded cipher of "salt/{salt}/{cmd}"}` and the cipher
        /// before URI-encoding.
        fn encrypted(&self, kind: &str, salt: &str, cmd: &str) -> (String, String) {
            let b64 = self.seal(&format!("salt/{salt}/{cmd}"));
            let uri =
                percent_encoding::utf8_percent_encode(&b64, percent_encoding::NON_ALPHANUMERIC);
            (format!("jdev/sys/{kind}/{uri}"), b64)
        }
    }

    fn hmac_sha256_hex(key: &[u8], msg: &str) -> String {
        let mut m = Hmac::<Sha256>::new_from_slice(key).unwrap();
        m.update(msg.as_bytes());
        hex::encode(m.finalize().into_bytes())
    }

    fn start() -> (Arc<Simulator>, SimServer) {
        let sim = Arc::new(Simulator::demo());
        let server = SimServer::start(sim.clone(), "127.0.0.1:0").unwrap();
        (sim, server)
    }

    fn connect(server: &SimServer) -> Reader<WsStream> {
        Reader::connect(&format!("ws://{}/ws/rfc6455", server.addr()), STEP).unwrap()
    }

    /// The next text message (event tables and keepalives skipped).
    fn text(r: &mut Reader<WsStream>) -> String {
        let until = Instant::now() + STEP;
        while Instant::now() < until {
            match r.next_message() {
                Ok(Incoming::Text(t)) => return t,
                Ok(Incoming::Events(_) | Incoming::Keepalive) | Err(WsError::Timeout) => {}
                other => panic!("text answer expected, got {other:?}"),
            }
        }
        panic!("no answer within {STEP:?}")
    }

    fn ask(r: &mut Reader<WsStream>, cmd: &str) -> Value {
        r.send_text(cmd).unwrap();
        let t = text(r);
        serde_json::from_str::<Value>(&t).unwrap_or_else(|e| panic!("{t}: {e}"))["LL"].clone()
    }

    /// A token for the demo user, acquired over a socket the way §3.2-3.3 describe: getkey2,
    /// then getjwt with `HMAC(key, "{user}:{SHA256("{pw}:{salt}")}")`, both encrypted.
    fn acquire_token(server: &SimServer) -> String {
        let mut r = connect(server);
        let c = Client::new(7);
        assert_eq!(ask(&mut r, &c.key_exchange())["Code"], "200");
        let (cmd, _) = c.encrypted("enc", "a1", &format!("jdev/sys/getkey2/{DEMO_USER}"));
        let ll = ask(&mut r, &cmd);
        assert_eq!(ll["code"], "200", "token answers spell it `code`: {ll}");
        let key = hex::decode(ll["value"]["key"].as_str().unwrap()).unwrap();
        let salt = ll["value"]["salt"].as_str().unwrap();
        let pw_hash =
            hex::encode_upper(Sha256::digest(format!("{DEMO_PASSWORD}:{salt}").as_bytes()));
        let hash = hmac_sha256_hex(&key, &format!("{DEMO_USER}:{pw_hash}"));
        let (cmd, _) = c.encrypted(
            "enc",
            "a1",
            &format!("jdev/sys/getjwt/{hash}/{DEMO_USER}/4/098802e1-02b4-603c-ffffeee000d80cfd/t"),
        );
        let ll = ask(&mut r, &cmd);
        assert_eq!(ll["code"], "200", "{ll}");
        ll["value"]["token"].as_str().unwrap().to_string()
    }

    #[test]
    fn answers_have_the_member_order_of_the_gettoken_capture() {
        // alladdin/node-lox-ws-api issue #16, a real Miniserver's WebSocket answer.
        let capture = r#"{"LL":{"control":"jdev/sys/gettoken/849284a2e6455148d253c8e2f4ff85bf4fc43202/admin/2/edfc5f9a-df3f-4cad-9dddcdc42c732be2/nodeloxWSAPI","value":{"lastEdit":"2009-01-01 01:00:00","unix":1230768000},"code":"401"}}"#;
        let control = "jdev/sys/gettoken/849284a2e6455148d253c8e2f4ff85bf4fc43202/admin/2/\
                       edfc5f9a-df3f-4cad-9dddcdc42c732be2/nodeloxWSAPI";
        let sim = Simulator::demo();
        let mut login = WsLogin::default();
        let reply = sim.run(Request {
            url: control,
            transport: Transport::Ws,
            peer: IpAddr::from([127, 0, 0, 1]),
            authorization: None,
            login: Some(&mut login),
        });
        assert_eq!(sim.ws_text(&reply).unwrap(), capture);
        assert_eq!(login.user, None);
    }

    #[test]
    fn keyexchange_answers_with_the_one_time_key_encrypted_for_the_client() {
        let (sim, server) = start();
        let c = Client::new(1);
        let mut r = connect(&server);
        let ll = ask(&mut r, &c.key_exchange());
        assert_eq!(ll["Code"], "200", "{ll}");
        // lxcommunicator AES-decrypts the value (WebSocket.js `_exchangeKeys`): it is the key
        // `jdev/sys/getkey` hands out, hex text.
        let one_time = c.open(ll["value"].as_str().unwrap());
        let getkey = sim.handle(
            "GET",
            "/jdev/sys/getkey",
            None,
            IpAddr::from([127, 0, 0, 1]),
        );
        let getkey: Value = serde_json::from_str(&getkey.body).unwrap();
        assert_eq!(one_time, getkey["LL"]["value"].as_str().unwrap());
        assert!(
            one_time.bytes().all(|b| b.is_ascii_hexdigit()),
            "{one_time}"
        );

        // ... and hashes its token with it for authwithtoken (`_authWithToken`, HMAC-SHA256
        // since 10.4), sent with fenc.
        let token = acquire_token(&server);
        let hash = hmac_sha256_hex(&hex::decode(&one_time).unwrap(), &token);
        let (cmd, _) = c.encrypted("fenc", "b2", &format!("authwithtoken/{hash}/{DEMO_USER}"));
        r.send_text(&cmd).unwrap();
        let ll: Value = serde_json::from_str(&c.open(&text(&mut r))).unwrap();
        assert_eq!(ll["LL"]["Code"], "200", "{ll}");
        assert!(ll["LL"]["value"]["validUntil"].as_u64().unwrap() > 0);
        // Authenticated now.
        assert_eq!(
            ask(&mut r, &format!("jdev/sps/io/{SWITCH}/on"))["Code"],
            "200"
        );
    }

    #[test]
    fn encrypted_commands_echo_the_cipher_and_fenc_answers_are_encrypted() {
        let (sim, server) = start();
        let token = acquire_token(&server);
        let c = Client::new(40);
        let mut r = connect(&server);
        assert_eq!(ask(&mut r, &c.key_exchange())["Code"], "200");
        let (cmd, _) = c.encrypted("enc", "c3", &format!("authwithtoken/{token}/{DEMO_USER}"));
        assert_eq!(ask(&mut r, &cmd)["Code"], "200");

        // enc: the answer's control is the command as sent, its cipher no longer URI-encoded
        // (PyLoxone decrypts it to match the answer to its command).
        let plain = format!("jdev/sps/io/{SWITCH}/on");
        let (cmd, b64) = c.encrypted("enc", "c3", &plain);
        assert!(cmd.contains('%'), "the cipher needs URI-encoding: {cmd}");
        let ll = ask(&mut r, &cmd);
        assert_eq!(ll["Code"], "200", "{ll}");
        assert_eq!(ll["value"], "1");
        assert_eq!(ll["control"], format!("jdev/sys/enc/{b64}"));
        let echoed = ll["control"].as_str().unwrap();
        assert_eq!(
            c.open(echoed.strip_prefix("jdev/sys/enc/").unwrap()),
            format!("salt/c3/{plain}")
        );
        assert_eq!(sim.state(SWITCH, "active"), Some(1.0));

        // fenc: the whole answer text is AES-encrypted (base64) with the session key.
        let plain = format!("jdev/sps/io/{SWITCH}/off");
        let (cmd, b64) = c.encrypted("fenc", "c3", &plain);
        r.send_text(&cmd).unwrap();
        let sealed = text(&mut r);
        assert!(!sealed.contains("LL"), "not encrypted: {sealed}");
        let ll: Value = serde_json::from_str(&c.open(&sealed)).unwrap();
        assert_eq!(ll["LL"]["Code"], "200", "{ll}");
        assert_eq!(ll["LL"]["value"], "0");
        assert_eq!(
            ll["LL"]["control"], plain,
            "fenc: {b64} echoes the command itself"
        );
        assert_eq!(sim.state(SWITCH, "active"), Some(0.0));

        // A cipher that does not decrypt: 401, in the clear.
        let ll = ask(&mut r, "jdev/sys/fenc/QUJD");
        assert_eq!(ll["Code"], "401", "{ll}");
    }
}
