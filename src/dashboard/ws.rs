//! `WS /dashboard/ws`: the dashboard's live event stream (spec §6).
//!
//! Every message is a JSON text frame `{"type": ..., "payload": ...}`:
//!
//! | `type` | when | `payload` |
//! |---|---|---|
//! | `system_event` | on connect | `{"event": "hello", "status": <GET /dashboard/api/status>}` |
//! | `device_state_change` | a device's state changed | [change payload](change_payload) |
//! | `sensor_update` | a temperature or other sensor value changed | change payload |
//! | `energy_update` | a meter's reading changed | change payload |
//! | `alarm_event` | an alarm or smoke alarm state changed | change payload |
//! | `system_event` | the Miniserver link changed mode | `{"event": "link", "mode": "websocket" \| "polling" \| "disconnected", "link": <LinkSnapshot::to_json>}` |
//! | `system_event` | the structure file was reloaded | `{"event": "structure_changed", "old_version", "new_version"}` |
//! | `system_event` | this client missed events (bus lag) | `{"event": "resync"}`: fetch `/dashboard/api/data` again |
//!
//! One fan-out thread ([`Hub::spawn_fanout`]) subscribes to the house's change bus, builds
//! each message once and `try_send`s it to every client's bounded queue
//! ([`WsConfig::client_queue`] messages). When a client's queue is full the message is dropped
//! for that client only and counted ([`Hub::dropped_messages`]); the client then gets a
//! `resync` event as soon as it has room again. A client that does not take a frame within
//! [`WsConfig::write_timeout`] is disconnected and counted ([`Hub::dropped_clients`]). The
//! others never wait for a slow one. Each client has its own thread: it writes queued
//! messages, sends a ping every [`WsConfig::ping_every`], answers the client's close, and
//! closes with 1001 when the server shuts down. At most [`WsConfig::max_clients`] clients at once; more get 503 before the
//! upgrade.
//!
//! tiny_http's upgraded stream has no timeouts, so (as the simulator's WebSocket does) the
//! session finds its socket among the process's descriptors and sets a short read timeout and
//! a write timeout on it (Unix; elsewhere queued messages go out only when the client sends
//! something: a documented limitation).

use std::io::ErrorKind;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender, TrySendError};
use serde_json::{json, Value as Json};
use tiny_http::{Header, Request, Response};
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tungstenite::{Message, WebSocket};

use super::history::classify;
use crate::home::{Change, Event, House, LinkMode};

/// Largest message or frame a client may send (bytes); larger ends the session.
pub const MAX_CLIENT_MESSAGE: usize = 64 * 1024;

/// The subprotocol the dashboard speaks; the server answers with it when offered.
pub const SUBPROTOCOL: &str = "home-mcp";

/// Settings of the WebSocket.
#[derive(Debug, Clone, PartialEq)]
pub struct WsConfig {
    /// Clients at once (`[dashboard] max_ws_clients`, default 32); more get 503.
    pub max_clients: usize,
    /// Messages queued per client (default 1024; shared text, a pointer each); beyond it a
    /// client's messages are dropped and it is told to resync.
    pub client_queue: usize,
    /// Ping interval (default 15 s).
    pub ping_every: Duration,
    /// Read timeout of a session socket: the longest a queued message waits (default 50 ms).
    pub poll: Duration,
    /// A client that does not take a frame for this long is dropped (default 5 s).
    pub write_timeout: Duration,
}

impl Default for WsConfig {
    fn default() -> Self {
        Self {
            max_clients: 32,
            client_queue: 1024,
            ping_every: Duration::from_secs(15),
            poll: Duration::from_millis(50),
            write_timeout: Duration::from_secs(5),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A client's id, queue and `lagged` mark (messages were dropped; send a resync).
type ClientQueue = (u64, Sender<Arc<str>>, Arc<AtomicBool>);

/// The clients and their queues. Share as `Arc<Hub>`.
pub struct Hub {
    config: WsConfig,
    clients: Mutex<Vec<ClientQueue>>,
    active: AtomicUsize,
    next_id: AtomicU64,
    sent: AtomicU64,
    dropped_clients: AtomicU64,
    dropped_messages: AtomicU64,
    refused: AtomicU64,
    stopping: AtomicBool,
}

/// A client slot; given back on drop.
pub struct Slot {
    hub: Arc<Hub>,
    id: u64,
    rx: Receiver<Arc<str>>,
    lagged: Arc<AtomicBool>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        lock(&self.hub.clients).retain(|(id, _, _)| *id != self.id);
        self.hub.active.fetch_sub(1, Ordering::SeqCst);
        crate::metrics::global().dashboard_clients.dec();
    }
}

impl Hub {
    /// An empty hub.
    pub fn new(config: WsConfig) -> Arc<Self> {
        Arc::new(Self {
            config,
            clients: Mutex::new(Vec::new()),
            active: AtomicUsize::new(0),
            next_id: AtomicU64::new(1),
            sent: AtomicU64::new(0),
            dropped_clients: AtomicU64::new(0),
            dropped_messages: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            stopping: AtomicBool::new(false),
        })
    }

    /// The settings.
    pub fn config(&self) -> &WsConfig {
        &self.config
    }

    /// Connected clients now.
    pub fn clients(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }

    /// Messages queued to clients since start.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Clients disconnected because they did not take a frame within the write timeout.
    pub fn dropped_clients(&self) -> u64 {
        self.dropped_clients.load(Ordering::Relaxed)
    }

    /// Messages dropped for clients whose queue was full.
    pub fn dropped_messages(&self) -> u64 {
        self.dropped_messages.load(Ordering::Relaxed)
    }

    /// Connections refused because [`WsConfig::max_clients`] were connected.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Closes every client (code 1001) and ends the fan-out thread.
    pub fn shutdown(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        lock(&self.clients).clear();
    }

    /// A client slot, or `None` (counted) when the hub is full or shutting down.
    pub fn acquire(self: &Arc<Self>) -> Option<Slot> {
        if self.stopping.load(Ordering::SeqCst) {
            return None;
        }
        let mut n = self.active.load(Ordering::SeqCst);
        loop {
            if n >= self.config.max_clients {
                self.refused.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            match self
                .active
                .compare_exchange(n, n + 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => break,
                Err(now) => n = now,
            }
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = bounded(self.config.client_queue.max(1));
        let lagged = Arc::new(AtomicBool::new(false));
        lock(&self.clients).push((id, tx, lagged.clone()));
        crate::metrics::global().dashboard_clients.inc();
        Some(Slot {
            hub: self.clone(),
            id,
            rx,
            lagged,
        })
    }

    /// Queues `text` for every client without waiting; a client whose queue is full misses
    /// it (counted) and is marked for a `resync`.
    pub fn broadcast(&self, text: &str) {
        let text: Arc<str> = Arc::from(text);
        let mut clients = lock(&self.clients);
        clients.retain(|(_, tx, lagged)| match tx.try_send(text.clone()) {
            Ok(()) => {
                self.sent.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(TrySendError::Full(_)) => {
                self.dropped_messages.fetch_add(1, Ordering::Relaxed);
                lagged.store(true, Ordering::Relaxed);
                true
            }
            Err(TrySendError::Disconnected(_)) => false,
        });
    }

    /// Starts the fan-out thread: bus events and link mode changes become messages for every
    /// client. Ends on [`Hub::shutdown`].
    pub fn spawn_fanout(
        self: &Arc<Self>,
        house: Arc<House>,
    ) -> std::io::Result<std::thread::JoinHandle<()>> {
        let sub = house.bus().subscribe(4096);
        let hub = self.clone();
        std::thread::Builder::new()
            .name("dashboard-ws-fanout".into())
            .spawn(move || {
                let mut mode = house.link().mode();
                while !hub.stopping.load(Ordering::SeqCst) && !sub.is_closed() {
                    if sub.take_lagged() {
                        hub.broadcast(&message("system_event", json!({"event": "resync"})));
                    }
                    match sub.recv_timeout(Duration::from_millis(250)) {
                        Some(Event::Change(c)) => {
                            if let Some(m) = change_message(&house, &c) {
                                hub.broadcast(&m);
                            }
                        }
                        Some(Event::StructureChanged {
                            old_version,
                            new_version,
                        }) => hub.broadcast(&message(
                            "system_event",
                            json!({"event": "structure_changed", "old_version": old_version,
                                   "new_version": new_version}),
                        )),
                        // Message Center entries raised, cleared or changed, and the
                        // Miniserver's notifications.
                        Some(Event::Alert(a)) => {
                            hub.broadcast(&message("system_event", a.to_json(&house.home())))
                        }
                        None => {}
                    }
                    let now = house.link().mode();
                    if now != mode {
                        mode = now;
                        hub.broadcast(&link_message(&house, now));
                    }
                }
            })
    }
}

/// `{"type": ty, "payload": payload}` as text.
pub fn message(ty: &str, payload: Json) -> String {
    json!({"type": ty, "payload": payload}).to_string()
}

fn link_message(house: &House, mode: LinkMode) -> String {
    message(
        "system_event",
        json!({"event": "link", "mode": mode.as_str(), "link": house.link().snapshot().to_json()}),
    )
}

/// The payload of `device_state_change`, `sensor_update`, `energy_update` and `alarm_event`:
/// `{"uuid", "name", "room", "type" (Loxone type), "category" (family), "state" (the state's
/// name; `value` for the primary value), "value" (number or text as reported), "display" (the
/// primary value in words, e.g. `{"on": true, "level": 60}`; `null` for other states, see
/// `home::Primary`), "at"
/// (ISO 8601 UTC), "seq" (the state store's change number), "source" (`event`, `poll`,
/// `read`, `command`)}`. `None` for values no control owns.
pub fn change_payload(house: &House, change: &Change) -> Option<(&'static str, Json)> {
    let home = house.home();
    let c = classify(&home, change)?;
    let value = match &change.value {
        crate::home::Value::Number(n) => json!(n),
        crate::home::Value::Text(t) => json!(t),
    };
    let display = c
        .primary
        .then(|| crate::tools::view::state(c.control, &change.value));
    Some((
        c.kind.ws_type(),
        json!({
            "uuid": c.control.uuid,
            "name": c.control.name,
            "room": crate::tools::view::room_of(&home, c.control),
            "type": c.control.kind.as_str(),
            "category": home.family(c.control).as_str(),
            "state": c.state,
            "value": value,
            "display": display,
            "at": crate::time::iso8601(change.at),
            "seq": change.seq,
            "source": change.source.as_str(),
        }),
    ))
}

fn change_message(house: &House, change: &Change) -> Option<String> {
    let (ty, payload) = change_payload(house, change)?;
    Some(message(ty, payload))
}

/// Whether `request` is a WebSocket handshake (`Upgrade: websocket`, version 13, a key).
fn handshake_key(request: &Request) -> Option<String> {
    let h = |n: &str| crate::upgraded::header(request, n);
    let upgrade = h("Upgrade").is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let version = h("Sec-WebSocket-Version").is_some_and(|v| v.trim() == "13");
    match (upgrade, version, h("Sec-WebSocket-Key")) {
        (true, true, Some(k)) => Some(k.trim().to_string()),
        _ => None,
    }
}

/// Whether `request` is a valid WebSocket handshake (else the route answers 400).
pub fn is_handshake(request: &Request) -> bool {
    handshake_key(request).is_some()
}

/// Upgrades `request` (already authenticated, a valid handshake, holding `slot`) and runs the
/// session on a thread of its own. `hello` is the first message; `stop` says when the server
/// shuts down; `local_port` is the listening port (to find the socket for its timeouts).
pub fn serve(
    request: Request,
    slot: Slot,
    hello: String,
    local_port: u16,
    stop: Box<dyn Fn() -> bool + Send>,
    allowed: Box<dyn Fn() -> bool + Send>,
) {
    let Some(key) = handshake_key(&request) else {
        let _ = request.respond(Response::from_string("Bad Request").with_status_code(400));
        return;
    };
    let offered = crate::upgraded::header(&request, "Sec-WebSocket-Protocol")
        .is_some_and(|v| v.split(',').any(|p| p.trim() == SUBPROTOCOL));
    let peer = request.remote_addr().copied();
    let mut response = Response::empty(101);
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    if let Ok(h) = Header::from_bytes("Sec-WebSocket-Accept", accept) {
        response = response.with_header(h);
    }
    if offered {
        if let Ok(h) = Header::from_bytes("Sec-WebSocket-Protocol", SUBPROTOCOL) {
            response = response.with_header(h);
        }
    }
    let stream = request.upgrade("websocket", response);
    let config = slot.hub.config.clone();
    let timeouts = peer.is_some_and(|p| {
        crate::upgraded::set_timeouts(p, local_port, config.poll, config.write_timeout)
    });
    if !timeouts {
        log::warn!("dashboard ws: no read timeout on the socket; events wait for client input");
    }
    // Clients only send close frames and pongs: small buffers and limits keep a client at a
    // few KiB instead of tungstenite's 128 KiB default read buffer.
    let limits = WebSocketConfig::default()
        .read_buffer_size(4096)
        .max_message_size(Some(MAX_CLIENT_MESSAGE))
        .max_frame_size(Some(MAX_CLIENT_MESSAGE));
    let ws = WebSocket::from_raw_socket(stream, Role::Server, Some(limits));
    let spawned = std::thread::Builder::new()
        .name("dashboard-ws".into())
        .stack_size(256 * 1024)
        .spawn(move || session(ws, slot, hello, &config, stop.as_ref(), allowed.as_ref()));
    if let Err(e) = spawned {
        log::warn!("dashboard ws: cannot start a session thread: {e}");
    }
}

type Ws = WebSocket<Box<dyn tiny_http::ReadWrite + Send>>;

/// `allowed` is asked at every ping: once the client's key is revoked, deleted or expired,
/// the session ends with close code 1008 (policy violation).
fn session(
    mut ws: Ws,
    slot: Slot,
    hello: String,
    config: &WsConfig,
    stop: &dyn Fn() -> bool,
    allowed: &dyn Fn() -> bool,
) {
    log::debug!("dashboard ws: client {} connected", slot.id);
    if ws.send(Message::text(hello)).is_err() {
        return;
    }
    let mut last_ping = Instant::now();
    loop {
        if stop() || slot.hub.stopping.load(Ordering::SeqCst) {
            close(&mut ws, CloseCode::Away, "server shutting down");
            return;
        }
        loop {
            let text = match slot.rx.try_recv() {
                Ok(text) => text,
                Err(crossbeam_channel::TryRecvError::Empty) => {
                    if !slot.lagged.swap(false, Ordering::Relaxed) {
                        break;
                    }
                    Arc::from(message("system_event", json!({"event": "resync"})))
                }
                Err(crossbeam_channel::TryRecvError::Disconnected) => {
                    close(&mut ws, CloseCode::Away, "server shutting down");
                    return;
                }
            };
            if let Err(e) = ws.send(Message::text(text.as_ref())) {
                if let tungstenite::Error::Io(io) = &e {
                    if matches!(io.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
                        log::info!("dashboard ws: client {} too slow; disconnected", slot.id);
                        slot.hub.dropped_clients.fetch_add(1, Ordering::Relaxed);
                    }
                }
                return;
            }
        }
        if last_ping.elapsed() >= config.ping_every {
            last_ping = Instant::now();
            if !allowed() {
                log::info!("dashboard ws: client {}: key no longer valid", slot.id);
                close(&mut ws, CloseCode::Policy, "the API key is no longer valid");
                return;
            }
            if ws.send(Message::Ping(Vec::new().into())).is_err() {
                return;
            }
        }
        match ws.read() {
            Ok(Message::Close(_)) => {
                let _ = ws.flush();
                log::debug!("dashboard ws: client {} closed", slot.id);
                return;
            }
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => {
                log::debug!("dashboard ws: client {}: {e}", slot.id);
                return;
            }
        }
    }
}

/// Sends a close frame and waits (at most 1 s) for the reply.
fn close(ws: &mut Ws, code: CloseCode, reason: &str) {
    let frame = CloseFrame {
        code,
        reason: reason.to_string().into(),
    };
    if ws.close(Some(frame)).is_err() {
        return;
    }
    let _ = ws.flush();
    let until = Instant::now() + Duration::from_secs(1);
    while Instant::now() < until {
        match ws.read() {
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_queue_drops_messages_of_that_client_only() {
        let hub = Hub::new(WsConfig {
            max_clients: 2,
            client_queue: 2,
            ..WsConfig::default()
        });
        let slow = hub.acquire().unwrap();
        let fast = hub.acquire().unwrap();
        assert!(hub.acquire().is_none(), "max clients");
        assert_eq!(hub.refused(), 1);
        for i in 0..5 {
            hub.broadcast(&format!("m{i}"));
            // The fast client keeps up.
            assert_eq!(fast.rx.try_recv().unwrap().as_ref(), format!("m{i}"));
        }
        assert_eq!(hub.dropped_messages(), 3);
        assert!(slow.lagged.load(Ordering::Relaxed));
        assert!(!fast.lagged.load(Ordering::Relaxed));
        assert_eq!(slow.rx.try_recv().unwrap().as_ref(), "m0");
        assert_eq!(slow.rx.try_recv().unwrap().as_ref(), "m1");
        assert!(slow.rx.try_recv().is_err());
        drop(slow);
        assert_eq!(hub.clients(), 1);
        hub.shutdown();
        assert!(hub.acquire().is_none());
    }
}
