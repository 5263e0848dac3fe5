//! The live link: one dedicated thread owns the Miniserver WebSocket, logs in with a token,
//! enables status updates (`jdev/sps/enablebinstatusupdate`: every state once, then changes)
//! and hands what arrives to a [`LinkSink`]. It keeps the socket alive (`keepalive` every
//! 30 s by default; loxone-protocol.md §4.1), refreshes the token before it expires, and after
//! any failure reconnects with [`Backoff`] (exponential, jittered, never inside a lock-out: a
//! close with code 4003 or an HTTP 403 blocks further logins for a while, §4.5). Its login
//! shares the HTTP client's rules ([`Client::login_gate`]): one login at a time, none during a
//! lock-out or the back-off after a refused password, and a password the WebSocket login finds
//! refused starts that back-off for both. Each new session starts with the full tables again,
//! so a reconnect resynchronises every state.
//!
//! The thread stops when [`Link::stop`] is called (which waits for it) or the [`Link`] is
//! dropped (which does not); it then kills its token (`killtoken`) and closes the socket.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};

use super::backoff::Backoff;
use super::client::{Client, LoxoneError};
use super::ws::login::{login, WsExchange};
use super::ws::{close_code, Incoming, Reader, StateEvent, WsError};
use crate::home::time::loxone_now;

/// What the link reports, in order, from its own thread.
#[derive(Debug, Clone, PartialEq)]
pub enum LinkEvent {
    /// Logged in and status updates enabled; the full tables follow as [`LinkEvent::Events`].
    Connected,
    /// State values (the initial tables, then changes).
    Events(Vec<StateEvent>),
    /// The session ended or could not start; the link retries after `retry_in`.
    Disconnected { error: String, retry_in: Duration },
    /// The WebSocket cannot be used at all with these settings (no token support, the
    /// endpoint missing): the caller should fall back to HTTP polling. The link keeps
    /// retrying slowly (the Miniserver may get a firmware update).
    Unsupported { error: String, retry_in: Duration },
}

/// Receives the link's reports. Called on the link thread: return quickly (hand work to a
/// channel), never block on the Miniserver.
pub trait LinkSink: Send + Sync {
    fn report(&self, event: LinkEvent);
}

/// How the link behaves; defaults per loxone-protocol.md §4.
#[derive(Debug, Clone)]
pub struct LinkConfig {
    /// Text `keepalive` after this much silence from our side (Miniserver closes idle
    /// sockets after 5 minutes).
    pub keepalive: Duration,
    /// The Miniserver answers `keepalive` with a keepalive header (loxone-protocol.md §4);
    /// when nothing at all arrives this long after one, it is taken as hung (the process
    /// stopped with its socket open) and the session ends, so status and reads stop treating
    /// the pushed values as current.
    pub keepalive_answer: Duration,
    /// Socket read timeout: how often the thread looks at the stop signal and the keepalive.
    pub poll: Duration,
    /// Longest a login (key exchange, getkey2, getjwt) may take; also bounds the TCP connect
    /// and the WebSocket upgrade before it.
    pub login_timeout: Duration,
    /// First retry delay and the cap of the backoff.
    pub retry_base: Duration,
    pub retry_max: Duration,
    /// Cap of the backoff while the Miniserver's address refuses connections (it is
    /// restarting: saving a program in Loxone Config restarts it). A refused TCP connect costs
    /// the Miniserver nothing and logs nobody in, so it is asked often: the link is back within
    /// about this long of the Miniserver listening again.
    pub retry_refused: Duration,
    /// Assumed length of a lock-out announced by close code 4003 or a 403 to the WebSocket
    /// login (neither carries a time).
    pub lockout: Duration,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            keepalive: Duration::from_secs(15),
            keepalive_answer: Duration::from_secs(10),
            poll: Duration::from_millis(250),
            login_timeout: Duration::from_secs(20),
            retry_base: Duration::from_secs(1),
            // A resumed Miniserver is found again within this (issue 13: back within 10 s);
            // lock-outs and bad credentials wait by their own rules, not by this cap.
            retry_max: Duration::from_secs(6),
            retry_refused: Duration::from_secs(2),
            lockout: Duration::from_secs(60),
        }
    }
}

/// How often a Miniserver without WebSocket support is asked again (a firmware update may add
/// it); polling serves meanwhile.
const UNSUPPORTED_RETRY: Duration = Duration::from_secs(60);

/// The running link thread.
pub struct Link {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
    commands: LinkCommands,
}

/// Where the answer to an [`Ask`] goes: the file's bytes, or the answer's text.
type Reply = Sender<Result<Vec<u8>, String>>;

/// One request another thread sends over the live WebSocket, and where its answer goes.
struct Ask {
    command: String,
    reply: Reply,
    /// When the asker stops waiting.
    deadline: Instant,
}

/// Requests other threads send over the live link's WebSocket and whose answer is a file
/// (`binstatisticdata/...`, statistics.md A1: served over the WebSocket only). One at a time:
/// the link thread sends it between its own work and hands back the next answer that is not
/// an event table. Cheap to clone.
#[derive(Clone)]
pub struct LinkCommands {
    tx: Sender<Ask>,
    connected: Arc<std::sync::atomic::AtomicBool>,
}

impl std::fmt::Debug for LinkCommands {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkCommands")
            .field("connected", &self.is_connected())
            .finish()
    }
}

impl LinkCommands {
    /// Whether a WebSocket session is up now.
    pub fn is_connected(&self) -> bool {
        self.connected.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Sends `command` over the WebSocket and waits at most `timeout` for its answer: the
    /// file's bytes (at most `max`; an empty answer is no bytes). `Ok(None)` when no session is
    /// up or another request is waiting; `Err` with the answer's text when the Miniserver
    /// answered with an `LL` text (an error) instead of a file, or when none came in time.
    pub fn ask_file(
        &self,
        command: &str,
        timeout: Duration,
        max: usize,
    ) -> Result<Option<Vec<u8>>, String> {
        if !self.is_connected() {
            return Ok(None);
        }
        let (reply, answer) = bounded(1);
        let ask = Ask {
            command: command.to_string(),
            reply,
            deadline: Instant::now() + timeout,
        };
        if self.tx.try_send(ask).is_err() {
            return Ok(None);
        }
        match answer.recv_timeout(timeout) {
            Ok(Ok(mut bytes)) => {
                bytes.truncate(max);
                Ok(Some(bytes))
            }
            Ok(Err(text)) => Err(text),
            Err(RecvTimeoutError::Timeout) => {
                Err(format!("no answer within {} s", timeout.as_secs_f64()))
            }
            Err(RecvTimeoutError::Disconnected) => Err("the WebSocket session ended".into()),
        }
    }
}

impl Link {
    /// Starts the link thread for the Miniserver `client` talks to (same address, user and
    /// password; `ws://` for `http://`, `wss://` for `https://`; without the `tls` feature
    /// `https://` reports [`LinkEvent::Unsupported`]).
    pub fn spawn(client: Arc<Client>, config: LinkConfig, sink: Arc<dyn LinkSink>) -> Link {
        let (stop_tx, stop_rx) = bounded::<()>(1);
        let (ask_tx, ask_rx) = bounded::<Ask>(1);
        let commands = LinkCommands {
            tx: ask_tx,
            connected: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        };
        let asks = Asks {
            rx: ask_rx,
            connected: commands.connected.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("miniserver-link".into())
            .spawn(move || run(&client, &config, sink.as_ref(), &stop_rx, &asks))
            .expect("spawning the link thread");
        Link {
            stop: Some(stop_tx),
            thread: Some(thread),
            commands,
        }
    }

    /// A handle for sending requests over this link's WebSocket (see [`LinkCommands`]).
    pub fn commands(&self) -> LinkCommands {
        self.commands.clone()
    }

    /// Stops the thread (kills the token, closes the socket) and waits for it.
    pub fn stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.try_send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Link {
    /// Signals the thread and returns at once: it notices within [`LinkConfig::poll`], kills
    /// its token and ends on its own (a Miniserver that went away must not hang a shutdown).
    /// Use [`Link::stop`] to wait for it.
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.try_send(());
        }
    }
}

/// How a session ended.
enum Ended {
    Stopped,
    /// It worked for a while, then ended (the backoff starts over).
    Dropped(String),
    Failed(String),
    /// Nothing listens at the Miniserver's address (connection refused): retried within
    /// [`LinkConfig::retry_refused`].
    Refused(String),
    /// No attempt before the duration has passed: a lock-out, or the back-off after a refused
    /// password.
    Held(String, Duration),
    Unsupported(String),
}

/// The link thread's end of [`LinkCommands`].
struct Asks {
    rx: Receiver<Ask>,
    connected: Arc<std::sync::atomic::AtomicBool>,
}

fn run(client: &Client, cfg: &LinkConfig, sink: &dyn LinkSink, stop: &Receiver<()>, asks: &Asks) {
    let mut backoff = Backoff::new(cfg.retry_base, cfg.retry_max);
    // Once a session has run, this Miniserver has the WebSocket: a "not supported" answer
    // later (a Miniserver restarting answers 404 or 400 before its WebSocket is up) is a
    // failure to retry with the backoff, not a reason to wait [`UNSUPPORTED_RETRY`].
    let mut connected_once = false;
    loop {
        let ended = session(client, cfg, sink, stop, asks);
        asks.connected
            .store(false, std::sync::atomic::Ordering::SeqCst);
        let ended = match ended {
            Ended::Unsupported(error) if connected_once => Ended::Failed(error),
            ended => ended,
        };
        let now = Instant::now();
        let (event, wait) = match ended {
            Ended::Stopped => return,
            Ended::Dropped(error) => {
                connected_once = true;
                backoff.succeeded();
                let retry_in = backoff.failed(now);
                (LinkEvent::Disconnected { error, retry_in }, retry_in)
            }
            Ended::Failed(error) => {
                let retry_in = backoff.failed(now);
                (LinkEvent::Disconnected { error, retry_in }, retry_in)
            }
            Ended::Refused(error) => {
                let retry_in = backoff.failed(now).min(cfg.retry_refused);
                (LinkEvent::Disconnected { error, retry_in }, retry_in)
            }
            Ended::Held(error, remaining) => {
                backoff.locked_out(now, remaining);
                let retry_in = backoff.failed(now);
                (LinkEvent::Disconnected { error, retry_in }, retry_in)
            }
            Ended::Unsupported(error) => {
                // Retry rarely: a firmware update may add token support.
                let retry_in = backoff.failed(now).max(UNSUPPORTED_RETRY);
                (LinkEvent::Unsupported { error, retry_in }, retry_in)
            }
        };
        log::warn!("Miniserver link: {event:?}");
        sink.report(event);
        match stop.recv_timeout(wait) {
            Err(RecvTimeoutError::Timeout) => {}
            _ => return,
        }
    }
}

/// The WebSocket URL of the Miniserver behind `base_url`: `http://host[:port]` gives
/// `ws://host[:port]/ws/rfc6455`, `https://host[:port]` gives `wss://...` (Gen 2 over TLS).
/// Errors (the link reports [`LinkEvent::Unsupported`] and polling takes over): another
/// scheme, or `https://` in a build without the `tls` feature.
fn ws_url(base_url: &str) -> Result<String, String> {
    let (scheme, rest) = if let Some(rest) = base_url.strip_prefix("http://") {
        ("ws", rest)
    } else if let Some(rest) = base_url.strip_prefix("https://") {
        if !cfg!(feature = "tls") {
            return Err(format!(
                "{base_url}: wss:// needs a build with the `tls` feature"
            ));
        }
        ("wss", rest)
    } else {
        return Err(format!("{base_url}: not an http:// or https:// address"));
    };
    Ok(format!(
        "{scheme}://{}{}",
        rest.trim_end_matches('/'),
        super::ws::WS_PATH
    ))
}

/// How a session that could not start ended, by the error: a lock-out or a refused password
/// holds further attempts (the password for the client's back-off, which a refusal noted with
/// [`Client::note`] has started), a 403 over the WebSocket (blocked, or no rights) for
/// `lockout`; a Miniserver without the endpoint or token login is unsupported; anything else is
/// a failure retried with the backoff.
fn classify(client: &Client, lockout: Duration, e: LoxoneError) -> Ended {
    match e {
        LoxoneError::LockedOut { remaining_secs } => {
            Ended::Held(e.to_string(), Duration::from_secs(remaining_secs.max(1)))
        }
        LoxoneError::Unauthorized => match client.blocked_for() {
            Some((_, left)) => Ended::Held(e.to_string(), left.max(Duration::from_secs(1))),
            None => Ended::Failed(e.to_string()),
        },
        LoxoneError::Status { code: 403, .. } | LoxoneError::Forbidden(_) => {
            Ended::Held(e.to_string(), lockout)
        }
        LoxoneError::NotFound(_) => Ended::Unsupported(e.to_string()),
        LoxoneError::Status { code: 400, .. } => Ended::Unsupported(e.to_string()),
        other => Ended::Failed(other.to_string()),
    }
}

fn session(
    client: &Client,
    cfg: &LinkConfig,
    sink: &dyn LinkSink,
    stop: &Receiver<()>,
    asks: &Asks,
) -> Ended {
    let url = match ws_url(client.base_url()) {
        Ok(u) => u,
        Err(e) => return Ended::Unsupported(e),
    };
    // No socket opened while a lock-out or a password back-off holds every login.
    if let Some(e) = client.blocked() {
        return classify(client, cfg.lockout, e);
    }
    // The TCP connect and the WebSocket upgrade may take as long as a login may (a busy Pi, a
    // slow Miniserver: with `poll`, 250 ms, an upgrade answered later failed the session and
    // cost a retry's backoff); the session's reads then wait at most `poll` (see below).
    let mut reader = match Reader::connect(&url, cfg.login_timeout) {
        Ok(r) => r,
        Err(WsError::Refused(403)) => {
            return Ended::Held(
                "the Miniserver refused the WebSocket (403)".into(),
                cfg.lockout,
            )
        }
        Err(WsError::Refused(code)) if code == 404 || code == 400 => {
            return Ended::Unsupported(format!("no WebSocket endpoint (HTTP {code})"))
        }
        Err(WsError::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            return Ended::Refused(e.to_string())
        }
        Err(e) => return Ended::Failed(e.to_string()),
    };
    // Reads (and writes) wait at most `poll`, so that the loop below sees the stop signal and
    // the keepalive in time; the login and every exchange loop on timeouts until their own
    // deadline.
    if let Err(e) = reader.get_ref().get_ref().set_timeout(Some(cfg.poll)) {
        return Ended::Failed(e.to_string());
    }
    let pk = match client.public_key() {
        Ok(pk) => pk,
        Err(e) => return classify(client, cfg.lockout, e),
    };
    // One login at a time with the HTTP client's, and none during its lock-out or back-off.
    let gate = match client.login_gate() {
        Ok(g) => g,
        Err(e) => return classify(client, cfg.lockout, e),
    };
    let (key, mut token) = match login(
        &mut reader,
        &pk,
        client.user(),
        client.password(),
        cfg.login_timeout,
    ) {
        Ok(x) => x,
        Err(LoxoneError::Connection(m)) if m.contains(&close_code::BLOCKED.to_string()) => {
            return Ended::Held(m, cfg.lockout)
        }
        Err(e) => {
            if matches!(e, LoxoneError::Status { code: 401, .. }) {
                // The key exchange did not decrypt: the Miniserver's key may have changed.
                client.forget_public_key();
            }
            client.note(&e);
            return classify(client, cfg.lockout, e);
        }
    };
    client.note_login();
    drop(gate);
    let mut ex = WsExchange {
        reader: &mut reader,
        key: &key,
        timeout: cfg.login_timeout,
        events: Vec::new(),
    };
    match ex.ask("jdev/sps/enablebinstatusupdate") {
        Ok(ll) if ll.code == 200 => {}
        Ok(ll) => return Ended::Failed(format!("enablebinstatusupdate answered {}", ll.code)),
        Err(e) => return classify(client, cfg.lockout, e),
    }
    let early = std::mem::take(&mut ex.events);
    log::info!("Miniserver link: WebSocket connected ({url})");
    sink.report(LinkEvent::Connected);
    if !early.is_empty() {
        sink.report(LinkEvent::Events(early));
    }
    let mut last_sent = Instant::now();
    // When the oldest unanswered keepalive went out; any message from the Miniserver answers.
    let mut unanswered: Option<Instant> = None;
    // A request of another thread waiting for its answer (LinkCommands, one at a time).
    let mut asked: Option<(Reply, Instant)> = None;
    asks.connected
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let ended = loop {
        if stop.try_recv().is_ok()
            || matches!(
                stop.try_recv(),
                Err(crossbeam_channel::TryRecvError::Disconnected)
            )
        {
            break Ended::Stopped;
        }
        if let Some(sent) = unanswered.filter(|s| s.elapsed() >= cfg.keepalive_answer) {
            break Ended::Dropped(format!(
                "no answer to keepalive within {} s (the Miniserver seems hung)",
                sent.elapsed().as_secs()
            ));
        }
        if last_sent.elapsed() >= cfg.keepalive {
            if let Err(e) = reader.send_text("keepalive") {
                break Ended::Dropped(e.to_string());
            }
            last_sent = Instant::now();
            unanswered.get_or_insert(last_sent);
        }
        if asked
            .as_ref()
            .is_some_and(|(_, deadline)| Instant::now() > *deadline)
        {
            // The asker gave up: its answer, when it comes, is logged and dropped below.
            asked = None;
        }
        if asked.is_none() {
            if let Ok(ask) = asks.rx.try_recv() {
                if let Err(e) = reader.send_text(&ask.command) {
                    break Ended::Dropped(e.to_string());
                }
                last_sent = Instant::now();
                asked = Some((ask.reply, ask.deadline));
            }
        }
        // The token is refreshed between requests, so that no answer goes to the wrong one.
        if asked.is_none() && token.needs_refresh(loxone_now()) {
            let mut ex = WsExchange {
                reader: &mut reader,
                key: &key,
                timeout: cfg.login_timeout,
                events: Vec::new(),
            };
            let refreshed = token.refresh(&mut ex);
            let events = std::mem::take(&mut ex.events);
            if !events.is_empty() {
                sink.report(LinkEvent::Events(events));
            }
            if let Err(e) = refreshed {
                log::warn!("Miniserver link: token refresh failed: {e}");
            }
            last_sent = Instant::now();
        }
        let message = reader.next_message();
        if message.is_ok() {
            unanswered = None;
        }
        match message {
            Ok(Incoming::Events(ev)) => sink.report(LinkEvent::Events(ev)),
            Ok(Incoming::Text(t)) => match asked.take() {
                // An empty answer is an empty file.
                Some((reply, _)) if t.is_empty() => {
                    let _ = reply.try_send(Ok(Vec::new()));
                }
                Some((reply, _)) => {
                    let _ = reply.try_send(Err(t.chars().take(200).collect()));
                }
                None => log::debug!("Miniserver link: answer {t}"),
            },
            Ok(Incoming::File(bytes)) => {
                if let Some((reply, _)) = asked.take() {
                    let _ = reply.try_send(Ok(bytes));
                }
            }
            Ok(Incoming::Keepalive) => {}
            Ok(Incoming::OutOfService) => {
                break Ended::Dropped(
                    "the Miniserver went out of service (firmware update?)".into(),
                )
            }
            Ok(Incoming::Closed(Some(close_code::BLOCKED))) => {
                break Ended::Held(
                    "the Miniserver blocked this client (4003)".into(),
                    cfg.lockout,
                )
            }
            Ok(Incoming::Closed(code)) => {
                break Ended::Dropped(format!(
                    "the Miniserver closed the WebSocket (code {code:?})"
                ))
            }
            Err(WsError::Timeout) => {}
            Err(e) => break Ended::Dropped(e.to_string()),
        }
    };
    if matches!(ended, Ended::Stopped) {
        let mut ex = WsExchange {
            reader: &mut reader,
            key: &key,
            timeout: Duration::from_secs(2),
            events: Vec::new(),
        };
        if let Err(e) = token.kill(&mut ex) {
            log::debug!("Miniserver link: killtoken failed: {e}");
        }
        let _ = reader.close();
    }
    ended
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn websocket_url_follows_the_http_address() {
        assert_eq!(
            ws_url("http://192.168.1.7:8080").unwrap(),
            "ws://192.168.1.7:8080/ws/rfc6455"
        );
        assert_eq!(ws_url("http://ms/").unwrap(), "ws://ms/ws/rfc6455");
        assert!(ws_url("ftp://ms").is_err());
    }

    #[cfg(feature = "tls")]
    #[test]
    fn https_gives_wss() {
        assert_eq!(
            ws_url("https://504f94aabbcc.dns.loxonecloud.com:8443/").unwrap(),
            "wss://504f94aabbcc.dns.loxonecloud.com:8443/ws/rfc6455"
        );
        assert_eq!(ws_url("https://ms").unwrap(), "wss://ms/ws/rfc6455");
    }

    #[cfg(not(feature = "tls"))]
    #[test]
    fn https_needs_the_tls_feature() {
        let e = ws_url("https://ms").unwrap_err();
        assert!(e.contains("tls"), "{e}");
    }
}
