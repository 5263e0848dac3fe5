//! The HTTP server: a tiny_http listener whose connection threads route each request, at most
//! [`HttpConfig::workers`] at once (worker slots), and the router.
//!
//! [`HttpServer::start`] binds the listening socket with socket2 before tiny_http takes it, so
//! that options set there are inherited by every accepted connection (Linux):
//! * `TCP_NODELAY`, without which answers of a few KB stall ~40 ms on Nagle + delayed ACK;
//! * `SO_RCVTIMEO`/`SO_SNDTIMEO` = `idle_timeout`, so tiny_http's per-connection threads give
//!   up on idle keep-alive connections and half-sent requests instead of waiting forever.
//!
//! tiny_http is the patched copy in `patches/tiny_http` (see its `PATCHES.md`), started with
//! [`tiny_http::Limits`]: at most [`HttpConfig::max_connections`] connections
//! ([`HttpConfig::max_connections_per_client`] per address; beyond, the one idle longest is
//! ended, else 503), request line/header limits ([`MAX_REQUEST_LINE`], [`MAX_HEADERS`],
//! [`MAX_HEADER_BYTES`]), bodies read by the connection's thread under
//! [`HttpConfig::request_deadline`] before a worker sees them (declared bodies above
//! `max_body_bytes` are not read: 413 at once; then tiny_http reads and drops up to 8 MiB
//! more of them, so that a client that sends first reads the 413), ambiguous framing refused
//! (400). An accept
//! error never stops its accept thread (see below for when it dies anyway).
//!
//! `SO_RCVTIMEO` also bounds `accept(2)` on the listener (the patched acceptor ignores that
//! timeout). A small "waker" thread still connects to the listener (and closes at once) more
//! often than `idle_timeout`.
//!
//! Each connection's own thread offers every request it read to a hook
//! ([`tiny_http::Inline`], see `on_connection`) instead of tiny_http's queue, and routes it
//! there. `GET /health` is answered at once, so health checks answer even while every worker
//! waits on a hung Miniserver. Anything else is routed once the thread holds one of the
//! [`HttpConfig::workers`] worker slots (a slot, not a thread: see `Slots`); up to
//! [`QUEUE_PER_WORKER`] per worker wait for one, beyond that a request gets 503 with
//! `Retry-After: 1` at once instead of waiting behind work it cannot overtake. The slot is
//! given back before the answer is written, by the connection's own thread: a client that
//! does not read its answers blocks only its own connection's thread (until `idle_timeout`),
//! never a worker slot. A connection's requests are routed one after the other by its thread,
//! so a client pipelining requests waits for itself. Each request is routed inside
//! `catch_unwind`, and a panic answers 500 (tiny_http does that when the request is dropped)
//! while the thread lives on. If tiny_http's accept thread dies anyway, a watch thread (on
//! tiny_http's own queue) exits the process with status 70 so that systemd restarts it.
//!
//! A long answer (a GET or legacy SSE stream, the SSE answer to a `tools/call`) is not written
//! in a worker slot: the handler returns [`Handled::Take`], and the request moves to a dedicated
//! stream thread (see [`stream`]), at most [`HttpConfig::max_streams`] of them.
//!
//! Routes: `/mcp` (Streamable HTTP, see [`mcp`]), `GET /sse` and `POST /message` (legacy
//! HTTP+SSE of 2024-11-05, see [`legacy`]), `GET /health` (200, 503 when no longer accepting;
//! the JSON of the `health` closure for a key with `read`, or for anyone when the gate lets
//! requests without a key pass (no gate, development level without required keys); else
//! `{"status"}` alone, see `health_body`), `GET /metrics` (Prometheus text, see
//! [`crate::metrics`]; only with [`HttpConfig::metrics`]), the quick-start REST routes `/tools`,
//! `/tools/call` and `/api/devices...` (see [`rest`]), the admin API `/admin/...` (see
//! [`admin`]; 404 without [`HttpConfig::admin`]), the admin key page `GET /admin/keys` with
//! `/admin/assets/keys.js|keys.css` (embedded files, see [`assets`]; also only with
//! [`HttpConfig::admin`]), the web dashboard `/dashboard/...` (page, `/dashboard/api/...`,
//! `WS /dashboard/ws`; see [`crate::dashboard`]), the OAuth sign-in routes (metadata under
//! `/.well-known/`, `/register`, `/authorize`, `/token`; see [`oauth`]; only with
//! [`HttpConfig::oauth`], never gated), the visualisation password pages `/confirm/{id}` (see
//! [`confirm`]: the pages of the MCP server's confirmations,
//! [`McpServer::password_pages`](crate::mcp::McpServer::password_pages); no key: the
//! unguessable id is the page's capability), anything else 404 with the spec's error object (§7.1,
//! [`crate::error::ApiError`]: `{"error":{"code":"NOT_FOUND","message":…,"details":{}}}`).
//! Every body is read by one reader, `body`. The Host header is checked on every route
//! (see [`HttpConfig::allowed_hosts`]).
//!
//! Every request is counted in [`crate::metrics`] (route family, outcome, latency).
//!
//! With [`HttpConfig::gate`] set, every route but `/health`, a public `/metrics`, the admin
//! page's static files ([`assets::ADMIN`]: no key, but still only to `[auth] admin_networks`)
//! (and unknown paths, which 404) is authenticated by the router before any body is read
//! ([`Gate::authenticate`]: key, expiry, IP whitelist, rate limits; a refused `POST` to an MCP
//! route then reads the buffered body for the request ids its JSON-RPC error carries, see
//! `with_request_ids`); routes then ask `Ctx::authorize` about the MCP method or tool they are
//! about to run, and `/admin/...` needs `admin`. The dashboard's API and
//! WebSocket are gated (`read`; the WebSocket may carry the key as the subprotocol
//! `key.<KEY>`), its page assets are not. Answers written by a
//! worker get the `X-RateLimit-*` headers. See [`crate::auth::gate`] for the rules and error
//! mapping.

pub mod admin;
pub mod assets;
mod body;
pub mod confirm;
mod dashboard;
pub mod legacy;
pub mod mcp;
pub mod oauth;
mod rest;
pub mod stream;

use std::io::Cursor;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use socket2::{Domain, Protocol, Socket, Type};

use crate::auth::gate::{Action, Credentials, Denial, DenyCode, Gate, Principal};
use crate::error::ApiError;
use crate::mcp::jsonrpc::{self, ErrorObject, RequestIds};
use crate::mcp::McpServer;
use crate::metrics::{self, HttpTransport};

/// Default listen address, as in the interface spec: loopback, port 3001. Every default of
/// the HTTP server is written here once ([`HttpConfig::default`]); the configuration's
/// `[server]` section starts from them.
pub const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::V4(std::net::SocketAddrV4::new(Ipv4Addr::LOCALHOST, 3001));

/// Default number of worker slots (requests routed at once). Slots are not threads (each
/// request is routed on its connection's thread), so their number bounds concurrent work
/// (memory, calls to the Miniserver), not threads: 4, a Raspberry Pi 3 or 4's cores.
/// Measured (`BENCH_WORKERS=2|4 cargo bench --bench serve`, 2 cores): with 16 connections 2
/// slots reached 70-75 % of the bare tiny_http server's rate at 1.8x its CPU per request, 4
/// slots 87-93 % at 1.4-1.5x (fewer threads sleeping for a slot).
pub const DEFAULT_WORKERS: usize = 4;

/// Requests waiting for a worker slot, per worker, before new ones get 503.
pub const QUEUE_PER_WORKER: usize = 32;

/// How long [`HttpServer::join`] waits for the requests being routed at shutdown.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Default cap on open connections. Each takes two descriptors (tiny_http keeps a reading and
/// a writing copy of the socket) and a thread: 384 take 768 of the unit's `LimitNOFILE=1024`,
/// leaving about 250 for the rest (listener, the Miniserver link, SQLite, logs, streams, and
/// the brief extra descriptor of each refused connection).
pub const DEFAULT_MAX_CONNECTIONS: usize = 384;

/// Default cap on open connections per client address: one host (a phone, a TV, a guest's
/// laptop) cannot take more than a sixth of them.
pub const DEFAULT_MAX_CONNECTIONS_PER_CLIENT: usize = 64;

/// Longest request line (414 beyond).
pub const MAX_REQUEST_LINE: usize = 8 * 1024;
/// Most header lines in a request (431 beyond).
pub const MAX_HEADERS: usize = 100;
/// Most bytes of all header lines of a request (431 beyond).
pub const MAX_HEADER_BYTES: usize = 32 * 1024;
/// All request bodies buffered at once by connection threads (503 beyond): with the default
/// 1 MiB body limit, 16 full bodies in flight, well inside the unit's memory cap.
pub const MAX_BUFFERED_BODY_BYTES: usize = 16 * 1024 * 1024;

/// The `/health` callback: returns the JSON document to serve. Called on the connection's own
/// thread: it must not wait on anything (no Miniserver request, no long lock).
pub type HealthFn = Arc<dyn Fn() -> Value + Send + Sync>;

/// Configuration of the HTTP server.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Address to bind; port 0 picks a free port (see [`HttpServer::addr`]).
    pub listen: SocketAddr,
    /// Worker slots: requests routed at once (default [`DEFAULT_WORKERS`]; at least 1).
    /// Each is routed on its connection's own thread; see the module docs.
    pub workers: usize,
    /// Largest accepted request body (default 1 MiB); larger gets 413.
    pub max_body_bytes: usize,
    /// Open connections at most (default [`DEFAULT_MAX_CONNECTIONS`]); a new one beyond it
    /// ends the connection idle the longest, or is refused (503, closed) when none is idle.
    pub max_connections: usize,
    /// The same per client IP address (default [`DEFAULT_MAX_CONNECTIONS_PER_CLIENT`]).
    pub max_connections_per_client: usize,
    /// From the first byte of a request until its headers and whole body are in (default
    /// 10 s); beyond it 408 and the connection closes. Bodies are read by the connection's
    /// thread under this deadline, so a worker never waits on a slow client.
    pub request_deadline: Duration,
    /// Idle/stalled connection timeout (default 30 s): a connection that sends nothing for this
    /// long, or stops mid-request, is closed. Also bounds blocked writes.
    pub idle_timeout: Duration,
    /// Extra allowed `Origin` values on `/mcp` (full origins such as `https://app.example`, or
    /// bare host names). Loopback origins and origins matching the request's Host are always
    /// allowed.
    pub allowed_origins: Vec<String>,
    /// Allowed `Host` values (host or host:port). Empty means: when listening on a loopback
    /// address, only `localhost`, `127.0.0.1` and `[::1]` (any port); otherwise any.
    pub allowed_hosts: Vec<String>,
    /// At most this many SSE streams (GET `/mcp`, `/sse`, SSE answers to POSTs) run at once on
    /// their own threads (default 32). Beyond it a GET gets 503; a POST is answered by its
    /// worker.
    pub max_streams: usize,
    /// Interval of keep-alive comments on idle streams (default 15 s).
    pub keep_alive: Duration,
    /// Messages kept per session for `Last-Event-ID` replay (default 256).
    pub replay_buffer: usize,
    /// Events queued per live stream; a reader that lets it fill up is dropped (default 64).
    pub stream_queue: usize,
    /// `retry:` sent at the start of each stream, in ms (default 1,000).
    pub retry_ms: u64,
    /// The API key gate in front of every route but `/health` (see [`crate::auth::gate`]);
    /// `None`: no authentication (tests, embedding).
    pub gate: Option<Arc<Gate>>,
    /// `GET /metrics` (Prometheus text, see [`crate::metrics`]) and what its scrape reads;
    /// `None`: no such route (404).
    pub metrics: Option<Arc<MetricsContext>>,
    /// The audit log: refused state-changing calls are recorded here (the calls themselves by
    /// `tools::HomeTools`, with their outcome); `None`: no audit.
    pub audit: Option<Arc<crate::audit::AuditLog>>,
    /// What the `/admin/...` endpoints need (see [`admin`]); `None`: they answer 404.
    pub admin: Option<Arc<admin::AdminContext>>,
    /// The web dashboard (`/dashboard/...`, see [`crate::dashboard`]); `None`: those paths 404.
    pub dashboard: Option<Arc<crate::dashboard::Dashboard>>,
    /// OAuth sign-in (the routes of [`oauth`], and `resource_metadata` in the 401 of the MCP
    /// routes); `None`: those paths 404 and the 401 says `Bearer` alone.
    pub oauth: Option<Arc<crate::auth::oauth::OAuth>>,
}

/// What `GET /metrics` needs besides the router's own state (sessions, streams).
#[derive(Clone, Default)]
pub struct MetricsContext {
    /// The house to report, read at scrape time: its Miniserver link
    /// (`home_mcp_miniserver_*`), its active Message Center entries
    /// (`home_mcp_alerts_active`) and whether it is stopped (`home_mcp_assistant_stopped`);
    /// `None` leaves those metrics out.
    pub house: Option<Arc<crate::home::House>>,
    /// `[metrics] public = true`: served without a key. Otherwise the route is gated like the
    /// others and needs the `read` permission (monitor or above; anonymous in development on
    /// loopback).
    pub public: bool,
}

impl std::fmt::Debug for MetricsContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsContext")
            .field("house", &self.house.is_some())
            .field("public", &self.public)
            .finish()
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            listen: DEFAULT_LISTEN,
            workers: DEFAULT_WORKERS,
            max_body_bytes: 1024 * 1024,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_client: DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
            request_deadline: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            max_streams: 32,
            keep_alive: Duration::from_secs(15),
            replay_buffer: 256,
            stream_queue: 64,
            retry_ms: 1000,
            gate: None,
            metrics: None,
            audit: None,
            admin: None,
            dashboard: None,
            oauth: None,
        }
    }
}

/// Shared by all workers.
pub(crate) struct Ctx {
    pub(crate) config: HttpConfig,
    pub(crate) mcp: Arc<McpServer>,
    health: HealthFn,
    /// Listening on a loopback address (enables the default Host allow-list).
    pub(crate) loopback: bool,
    /// False once tiny_http's acceptor died.
    accepting: AtomicBool,
    /// Set by [`HttpServer::shutdown`]: stream threads end.
    pub(crate) stopping: AtomicBool,
    /// Dedicated stream threads.
    pub(crate) pool: Arc<stream::StreamPool>,
    /// Per-session outboxes (GET streams, replay buffers, legacy streams).
    pub(crate) outboxes: stream::Outboxes,
    /// The bound port (the dashboard WebSocket finds its socket by it).
    pub(crate) local_port: u16,
}

impl Ctx {
    /// Security level production: Host and Origin are checked strictly (see
    /// [`crate::auth::gate`]).
    pub(crate) fn strict(&self) -> bool {
        self.config
            .gate
            .as_ref()
            .is_some_and(|g| g.level() == crate::auth::gate::SecurityLevel::Production)
    }

    /// Step 2 of the gate (see [`crate::auth::gate`]); `Ok` without a gate or principal.
    pub(crate) fn authorize(
        &self,
        principal: Option<&Principal>,
        action: &Action<'_>,
    ) -> Result<(), Denial> {
        match (&self.config.gate, principal) {
            (Some(gate), Some(p)) => gate.authorize(p, action),
            _ => Ok(()),
        }
    }

    /// Counts one more request of `principal` against its rate limits (each further request
    /// of a JSON-RPC batch, see [`mcp::authorize`]); `Ok` without a gate.
    pub(crate) fn charge(&self, principal: &Principal) -> Result<(), Denial> {
        match &self.config.gate {
            Some(gate) => gate.charge(principal).map(|_| ()),
            None => Ok(()),
        }
    }

    /// [`Ctx::authorize`] for a tool call on `transport`; an audited call (state-changing, or
    /// showing pictures) refused for lack of permission is recorded in the audit log
    /// ([`HttpConfig::audit`]).
    pub(crate) fn authorize_tool(
        &self,
        principal: Option<&Principal>,
        transport: &str,
        name: &str,
        arguments: &serde_json::Map<String, Value>,
    ) -> Result<(), Denial> {
        let result = self.authorize(principal, &Action::Tool { name, arguments });
        if let (Err(d), Some(audit), Some(gate), Some(p)) =
            (&result, &self.config.audit, &self.config.gate, principal)
        {
            if d.code == crate::auth::gate::DenyCode::InsufficientPermissions
                && gate.audited(name, arguments)
            {
                audit.record(crate::audit::Entry::new(
                    Some(&p.caller()),
                    transport,
                    name,
                    &crate::audit::target_of(arguments),
                    d.code.as_str(),
                    Duration::ZERO,
                ));
            }
        }
        result
    }

    /// The outbox of HTTP session `id`, created and registered with the MCP hub if needed.
    pub(crate) fn outbox(&self, id: &str) -> Arc<stream::Outbox> {
        let (outbox, new) = self.outboxes.get_or_create(id, || {
            stream::Outbox::new(self.config.replay_buffer, self.config.stream_queue)
        });
        if new {
            self.mcp.hub().register(id, outbox.clone());
            self.drop_ended_outboxes();
        }
        outbox
    }

    /// Ends the streams and forgets the outboxes of sessions that are gone (expired, or
    /// replaced by a new session over a cap): their clients see the stream end at once (and
    /// a 404 for the session next), not a silent stream.
    pub(crate) fn drop_ended_outboxes(&self) {
        let sessions = self.mcp.sessions();
        for gone in self.outboxes.prune(|k| sessions.contains(k)) {
            self.mcp.hub().unregister(&gone);
        }
    }

    /// Ends session `id`'s streams and forgets its outbox.
    pub(crate) fn drop_outbox(&self, id: &str) {
        self.outboxes.remove(id);
        self.mcp.hub().unregister(id);
    }
}

/// Extra response headers (name, value).
pub(crate) type Headers = Vec<(&'static str, String)>;

/// What a route did with a request.
pub(crate) enum Handled {
    /// A finished answer for the worker to write.
    Answer(Answer),
    /// The route takes the request over (a stream); the worker is done with it. The job gets
    /// the headers the router adds to every answer (`X-RateLimit-*`), to write with its head.
    Take(Box<dyn FnOnce(tiny_http::Request, Headers) + Send>),
}

impl From<Answer> for Handled {
    fn from(a: Answer) -> Self {
        Handled::Answer(a)
    }
}

/// A running HTTP server. Dropping it does not stop it; call [`HttpServer::shutdown`].
pub struct HttpServer {
    addr: SocketAddr,
    server: Arc<tiny_http::Server>,
    ctx: Arc<Ctx>,
    /// The worker slots and their number.
    slots: Arc<Slots>,
    workers: usize,
    shutting_down: Arc<AtomicBool>,
    stop_waker: Mutex<Option<Sender<()>>>,
    threads: Vec<JoinHandle<()>>,
}

impl HttpServer {
    /// Binds `config.listen`, starts the workers and returns once the socket is listening.
    ///
    /// Errors: the bind or socket-option error, or tiny_http's setup error as `io::Error`.
    pub fn start(
        config: HttpConfig,
        mcp: Arc<McpServer>,
        health: HealthFn,
    ) -> std::io::Result<HttpServer> {
        let listener = bind(&config)?;
        let addr = listener.local_addr()?;
        let workers = config.workers.max(1);
        let idle = config.idle_timeout;
        let ctx = Arc::new(Ctx {
            loopback: addr.ip().is_loopback(),
            stopping: AtomicBool::new(false),
            pool: stream::StreamPool::new(config.max_streams),
            outboxes: stream::Outboxes::default(),
            local_port: addr.port(),
            config,
            mcp,
            health,
            accepting: AtomicBool::new(true),
        });
        let config = &ctx.config;
        let slots = Arc::new(Slots::new(workers, workers * QUEUE_PER_WORKER));
        let inline = {
            let (ctx, slots) = (ctx.clone(), slots.clone());
            tiny_http::Inline(Arc::new(move |request, _| {
                on_connection(&ctx, &slots, request)
            }))
        };
        let limits = tiny_http::Limits {
            max_connections: config.max_connections.max(1),
            max_connections_per_ip: config.max_connections_per_client.max(1),
            max_request_line: MAX_REQUEST_LINE,
            max_headers: MAX_HEADERS,
            max_header_bytes: MAX_HEADER_BYTES,
            max_body_bytes: Some(config.max_body_bytes),
            max_buffered_bytes: MAX_BUFFERED_BODY_BYTES.max(config.max_body_bytes),
            request_deadline: Some(config.request_deadline).filter(|d| !d.is_zero()),
            inline: Some(inline),
        };
        let server = tiny_http::Server::from_listener_with_limits(listener, None, limits)
            .map_err(|e| std::io::Error::other(format!("HTTP server setup failed: {e}")))?;
        let server = Arc::new(server);
        let shutting_down = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::with_capacity(2);
        {
            let (server, ctx, down) = (server.clone(), ctx.clone(), shutting_down.clone());
            threads.push(
                std::thread::Builder::new()
                    .name("http-acceptor-watch".into())
                    .spawn(move || watch(&server, &ctx, &down))?,
            );
        }
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let target = waker_target(addr);
        let period = (idle / 3).max(Duration::from_millis(20));
        threads.push(
            std::thread::Builder::new()
                .name("http-accept-waker".into())
                .spawn(move || loop {
                    match stop_rx.recv_timeout(period) {
                        Err(RecvTimeoutError::Timeout) => {
                            // Resets accept(2)'s SO_RCVTIMEO; the connection is closed at once.
                            let _ = TcpStream::connect_timeout(&target, period);
                        }
                        _ => return,
                    }
                })?,
        );
        log::info!("HTTP listening on {addr} with {workers} workers");
        Ok(HttpServer {
            addr,
            server,
            ctx,
            slots,
            workers,
            shutting_down,
            stop_waker: Mutex::new(Some(stop_tx)),
            threads,
        })
    }

    /// The bound address (with the real port when started on port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Whether the acceptor still takes new connections.
    pub fn is_accepting(&self) -> bool {
        self.ctx.accepting.load(Ordering::Relaxed)
    }

    /// SSE streams running on their own threads now.
    pub fn active_streams(&self) -> usize {
        self.ctx.pool.active()
    }

    /// Stops taking requests (a request read after this is answered by tiny_http's queue
    /// with the watch thread, see `watch`); returns at once. Requests being routed finish
    /// ([`HttpServer::join`] waits for them). Open keep-alive connections close at their idle
    /// timeout.
    pub fn shutdown(&self) {
        if self.shutting_down.swap(true, Ordering::SeqCst) {
            return;
        }
        self.ctx.stopping.store(true, Ordering::SeqCst);
        self.ctx.outboxes.close_all();
        if let Ok(mut waker) = self.stop_waker.lock() {
            waker.take();
        }
        self.server.unblock();
    }

    /// Blocks until the server has shut down (see [`HttpServer::shutdown`]): its threads
    /// ended, and the requests being routed done (waited for at most [`DRAIN_TIMEOUT`]).
    pub fn join(self) {
        for t in self.threads {
            let _ = t.join();
        }
        let started = Instant::now();
        while self.slots.free.load(Ordering::SeqCst) < self.workers
            && started.elapsed() < DRAIN_TIMEOUT
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        // The last `Arc<tiny_http::Server>` drops here, which stops its accept thread.
    }
}

/// Creates the listening socket with the options described in the module docs.
fn bind(config: &HttpConfig) -> std::io::Result<TcpListener> {
    let socket = Socket::new(
        Domain::for_address(config.listen),
        Type::STREAM,
        Some(Protocol::TCP),
    )?;
    socket.set_reuse_address(true)?;
    socket.set_tcp_nodelay(true)?;
    if !config.idle_timeout.is_zero() {
        socket.set_read_timeout(Some(config.idle_timeout))?;
        socket.set_write_timeout(Some(config.idle_timeout))?;
    }
    socket.bind(&config.listen.into())?;
    socket.listen(128)?;
    Ok(socket.into())
}

/// Where the waker connects: the bound address, or loopback for a wildcard bind.
fn waker_target(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::new(Ipv4Addr::LOCALHOST.into(), addr.port())
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::new(Ipv6Addr::LOCALHOST.into(), addr.port())
        }
        _ => addr,
    }
}

/// `GET` or `HEAD /health`: answered on the connection's own thread.
fn is_health(request: &tiny_http::Request) -> bool {
    matches!(
        request.method(),
        tiny_http::Method::Get | tiny_http::Method::Head
    ) && request.url().split('?').next() == Some("/health")
}

/// 503 `SERVICE_UNAVAILABLE` with `Retry-After: 1`: every worker is busy and the queue full.
fn busy(ctx: &Ctx, request: tiny_http::Request) {
    let transport = HttpTransport::from_path(request.url().split('?').next().unwrap_or(""));
    metrics::global().http_request(transport, 503, None);
    let workers = ctx.config.workers.max(1);
    log::warn!(
        "all {workers} HTTP workers busy and {} requests queued; answered 503",
        workers * QUEUE_PER_WORKER
    );
    let answer = rest_error(
        503,
        "SERVICE_UNAVAILABLE",
        "the server is busy; retry in a second",
    )
    .with_header("Retry-After", "1");
    if let Err(e) = request.respond(answer.into_response()) {
        log::debug!("writing response failed: {e}");
    }
}

/// The workers: at most [`HttpConfig::workers`] requests are routed at once, each on its
/// connection's own thread, which holds one of these slots while the request is routed and
/// gives it back before its answer is written (so a client that does not read its answers
/// blocks only its own connection's thread, never a slot). Up to [`QUEUE_PER_WORKER`] per
/// slot may wait for one; beyond, a request gets 503 at once instead of waiting behind work it
/// cannot overtake.
///
/// A slot rather than a thread of a pool: handing each request from the connection's thread
/// to a worker thread and back cost two more context switches and a contended queue per
/// request (`cargo bench --bench serve`: 1.4-2.2x the bare server's CPU per request, against
/// 0.8-1.3x now).
struct Slots {
    /// Free slots; taken with a compare-and-swap, without the lock.
    free: AtomicUsize,
    /// Threads waiting for a slot (changed under `lock`).
    waiting: AtomicUsize,
    lock: Mutex<()>,
    freed: std::sync::Condvar,
    /// At most this many wait.
    max_waiting: usize,
}

impl Slots {
    fn new(slots: usize, max_waiting: usize) -> Self {
        Self {
            free: AtomicUsize::new(slots),
            waiting: AtomicUsize::new(0),
            lock: Mutex::new(()),
            freed: std::sync::Condvar::new(),
            max_waiting,
        }
    }

    fn try_take(&self) -> bool {
        self.free
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }

    /// A slot, waiting for one if need be; `None` (at once) when `max_waiting` already wait.
    ///
    /// Not first come first served: a thread that finds a slot free takes it although others
    /// wait. Handing each slot given back to the longest waiter instead (measured) added a
    /// wake-up and a context switch to most requests under load (16 connections: 2.4 switches
    /// and 2x the bare server's CPU per request, against 1.4 and 1.4x), for a p99 that was no
    /// better at 16 connections.
    fn take(self: &Arc<Self>) -> Option<Slot> {
        if self.try_take() {
            return Some(Slot(self.clone()));
        }
        let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        if self.waiting.load(Ordering::SeqCst) >= self.max_waiting {
            return None;
        }
        // Counted before the last try: a slot given back after it sees this waiter.
        self.waiting.fetch_add(1, Ordering::SeqCst);
        while !self.try_take() {
            guard = self.freed.wait(guard).unwrap_or_else(|e| e.into_inner());
        }
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        Some(Slot(self.clone()))
    }

    /// Gives a slot back; wakes a waiter if one waits (a wake-up is a system call).
    fn give_back(&self) {
        self.free.fetch_add(1, Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) > 0 {
            let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.freed.notify_one();
        }
    }
}

/// A taken worker slot; given back when dropped.
struct Slot(Arc<Slots>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.give_back();
    }
}

/// Where a routed request's answer is written: always by the thread that routed it (the
/// connection's own); a worker slot it holds is given back first.
#[derive(Clone, Copy)]
enum Out<'a> {
    /// No slot (`/health`, a request tiny_http queued while shutting down).
    Here,
    /// The slot, to give back before writing.
    Slot(&'a std::cell::Cell<Option<Slot>>),
}

/// Writes `response` for `request`, after giving back the slot `out` holds.
fn deliver(
    out: Out<'_>,
    request: tiny_http::Request,
    response: tiny_http::Response<Cursor<Vec<u8>>>,
) {
    out.give_back();
    if let Err(e) = request.respond(response) {
        log::debug!("writing response failed: {e}");
    }
}

impl Out<'_> {
    /// Gives back the worker slot, if any (before a write or a hand-over to a stream).
    fn give_back(self) {
        if let Out::Slot(slot) = self {
            drop(slot.take());
        }
    }
}

/// Each request on its connection's own thread (tiny_http's [`tiny_http::Inline`] hook),
/// routed here: `/health` at once; anything else once it has a worker slot ([`Slots`]; 503 at
/// once when [`QUEUE_PER_WORKER`] per worker already wait). A connection's requests are
/// routed one after the other by its own thread, so a client pipelining requests waits for
/// itself, and one that does not read its answers blocks its own thread, never a slot.
/// `Some(request)` (shutting down) hands it to tiny_http's queue.
fn on_connection(
    ctx: &Arc<Ctx>,
    slots: &Arc<Slots>,
    request: tiny_http::Request,
) -> Option<tiny_http::Request> {
    if is_health(&request) {
        routed(ctx, request, Out::Here);
        return None;
    }
    if ctx.stopping.load(Ordering::SeqCst) {
        return Some(request);
    }
    match slots.take() {
        Some(slot) => {
            let slot = std::cell::Cell::new(Some(slot));
            routed(ctx, request, Out::Slot(&slot));
        }
        None => busy(ctx, request),
    }
    None
}

/// Waits on tiny_http's own queue, which gets only what [`on_connection`] gives back (while
/// shutting down) and the news that its accept thread ended: a server that cannot accept is
/// of no use, so the process exits non-zero and systemd restarts it.
fn watch(server: &tiny_http::Server, ctx: &Arc<Ctx>, shutting_down: &AtomicBool) {
    loop {
        match server.recv() {
            Ok(request) => routed(ctx, request, Out::Here),
            Err(e) => {
                if shutting_down.load(Ordering::SeqCst) {
                    return;
                }
                ctx.accepting.store(false, Ordering::Relaxed);
                log::error!("HTTP acceptor stopped: {e}; exiting so that the service restarts");
                std::process::exit(70);
            }
        }
    }
}

/// [`route`] inside `catch_unwind`.
fn routed(ctx: &Arc<Ctx>, request: tiny_http::Request, out: Out<'_>) {
    if catch_unwind(AssertUnwindSafe(|| route(ctx, request, out))).is_err() {
        log::error!("HTTP handler panicked; answered 500");
    }
}

/// A finished answer, before it is turned into a tiny_http response.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) content_type: Option<&'static str>,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: Vec<u8>,
    /// A JSON-RPC error refusing a message before its requests were read (the body says
    /// `id: null`): [`Answer::addressed`] gives it their ids.
    pub(crate) refusal: Option<Box<ErrorObject>>,
}

impl Answer {
    /// `body` of type `content_type` with `status`.
    pub(crate) fn with_body(status: u16, content_type: &'static str, body: Vec<u8>) -> Self {
        Self {
            status,
            content_type: Some(content_type),
            headers: Vec::new(),
            body,
            refusal: None,
        }
    }

    pub(crate) fn json(status: u16, value: &Value) -> Self {
        Self::json_text(status, value.to_string())
    }

    /// The spec's error object (§7.1) as the body, with `status`.
    pub(crate) fn error(status: u16, error: &ApiError) -> Self {
        Self::json(status, &error.body())
    }

    pub(crate) fn json_text(status: u16, body: String) -> Self {
        Self::with_body(status, "application/json", body.into_bytes())
    }

    pub(crate) fn empty(status: u16) -> Self {
        Self {
            content_type: None,
            ..Self::with_body(status, "", Vec::new())
        }
    }

    /// A JSON-RPC refusal (`id: null`) with `status`, to be [`Answer::addressed`] to the
    /// requests it refuses once they are known.
    pub(crate) fn refusal(status: u16, error: ErrorObject) -> Self {
        let mut answer = Self::json_text(status, jsonrpc::error_for(&RequestIds::Unknown, &error));
        answer.refusal = Some(Box::new(error));
        answer
    }

    /// A refusal ([`Answer::refusal`]) answered to the requests `ids` (one error each, with its
    /// id); any other answer, or unknown ids, as it is.
    pub(crate) fn addressed(mut self, ids: &RequestIds) -> Self {
        if let (Some(error), false) = (&self.refusal, *ids == RequestIds::Unknown) {
            self.body = jsonrpc::error_for(ids, error).into_bytes();
            self.refusal = None;
        }
        self
    }

    pub(crate) fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    fn into_response(self) -> tiny_http::Response<Cursor<Vec<u8>>> {
        let len = self.body.len();
        let mut response = tiny_http::Response::new(
            tiny_http::StatusCode(self.status),
            Vec::new(),
            Cursor::new(self.body),
            Some(len),
            None,
        )
        .with_chunked_threshold(usize::MAX);
        if let Some(ct) = self.content_type {
            add_header(&mut response, "Content-Type", ct);
        }
        for (name, value) in &self.headers {
            add_header(&mut response, name, value);
        }
        response
    }
}

fn add_header<R: std::io::Read>(response: &mut tiny_http::Response<R>, name: &str, value: &str) {
    match tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()) {
        Ok(h) => response.add_header(h),
        Err(()) => log::warn!("dropping invalid response header {name}"),
    }
}

/// A gate refusal: a JSON-RPC error for the requests `ids` on MCP routes (`rpc`; with
/// unknown ids, a refusal [`Answer::addressed`] later), else the §7.1 object; status and
/// headers from the [`Denial`].
pub(crate) fn deny(d: &Denial, rpc: bool, ids: &RequestIds) -> Answer {
    let mut answer = if rpc {
        Answer::refusal(d.code.status(), d.rpc_error()).addressed(ids)
    } else {
        Answer::error(d.code.status(), &d.api_error())
    };
    for (name, value) in d.headers() {
        answer = answer.with_header(name, value);
    }
    answer
}

/// Step 1 of the gate for a request to `path`: `Ok(None)` when ungated (`/health`, unknown
/// paths, no gate). The admin page's static files ([`assets::ADMIN`]) need no key but are
/// refused (403) outside `[auth] admin_networks` like the rest of `/admin`.
fn authenticate(
    ctx: &Ctx,
    request: &tiny_http::Request,
    path: &str,
) -> Result<Option<Principal>, Answer> {
    let Some(gate) = &ctx.config.gate else {
        return Ok(None);
    };
    let mcp = matches!(path, "/mcp" | "/sse" | "/message");
    let admin = path == "/admin" || path.starts_with("/admin/");
    if !(mcp
        || admin
        || rest::is_rest_path(path)
        || metrics_gated(ctx, path)
        || dashboard::is_gated(path))
    {
        return Ok(None);
    }
    let ip = request.remote_addr().map(|a| a.ip());
    if admin && !gate.admin_network_allows(ip) {
        log::info!(
            "{} {path} from {ip:?}: outside [auth] admin_networks",
            request.method()
        );
        let d = Denial {
            code: crate::auth::gate::DenyCode::InsufficientPermissions,
            message: "the admin endpoints are not served to this network ([auth] admin_networks)"
                .into(),
            key_id: None,
            rate: None,
        };
        return Err(deny(&d, false, &RequestIds::Unknown));
    }
    if assets::find(assets::ADMIN, path).is_some() {
        // Static files without data: the page asks for the key itself.
        return Ok(None);
    }
    let mut creds = Credentials::from_parts(
        header(request, "X-API-Key"),
        header(request, "Authorization"),
        request.url(),
        ip,
    );
    if path == dashboard::WS_PATH && creds.header_key.is_none() {
        creds.header_key =
            crate::auth::gate::subprotocol_key(header(request, "Sec-WebSocket-Protocol"));
    }
    match gate.authenticate(&creds) {
        Ok(p) => Ok(Some(p)),
        Err(d) => {
            // Refusals by a rate limit are not logged at info: a flood must not fill the SD
            // card (they are counted in /metrics). The path is logged without the key a
            // `PUT/DELETE /admin/api/keys/<full key>` may carry.
            let level = if d.code == crate::auth::gate::DenyCode::RateLimitExceeded {
                log::Level::Debug
            } else {
                log::Level::Info
            };
            log::log!(
                level,
                "{} {} from {:?}: {} ({})",
                request.method(),
                loggable_path(path),
                creds.ip,
                d.code.as_str(),
                d.key_id.as_deref().unwrap_or("no key")
            );
            let mut answer = deny(&d, mcp, &RequestIds::Unknown);
            if mcp && d.code == crate::auth::gate::DenyCode::InvalidApiKey {
                // RFC 9728 §5.1: where to sign in (the JSON body stays as it is).
                if let Some(value) = oauth::challenge(ctx, request, path) {
                    answer.headers.retain(|(n, _)| *n != "WWW-Authenticate");
                    answer = answer.with_header("WWW-Authenticate", value);
                }
            }
            Err(answer)
        }
    }
}

/// Whether requests without a key are refused: a gate that requires keys (staging,
/// production, development with `required` or off loopback; see [`crate::auth::gate`]).
/// Otherwise they pass with every permission.
fn keys_required(ctx: &Ctx) -> bool {
    ctx.config.gate.as_ref().is_some_and(|g| g.required())
}

/// Who may see the details of `/health` (issue 15): `Ok(Some(principal))` for a request with a
/// key that has `read`; `Ok(None)` without a key or with a valid key that may not see them (a
/// device key) (details only without [`keys_required`]); the gate's refusal (401, 429) for a
/// key that fails, as on every gated route. A keyed
/// request counts against its key's budget like any other.
fn health_details_allowed(
    ctx: &Ctx,
    request: &tiny_http::Request,
) -> Result<Option<Principal>, Answer> {
    let Some(gate) = &ctx.config.gate else {
        return Ok(None);
    };
    let creds = Credentials::from_parts(
        header(request, "X-API-Key"),
        header(request, "Authorization"),
        request.url(),
        request.remote_addr().map(|a| a.ip()),
    );
    if creds.header_key.is_none() && creds.query_key.is_none() {
        return Ok(None);
    }
    let principal = gate
        .authenticate(&creds)
        .map_err(|d| deny(&d, false, &RequestIds::Unknown))?;
    match gate.authorize(&principal, &Action::Method("health")) {
        Ok(()) => Ok(Some(principal)),
        // A valid key without the right to the details (a device key: they tell of the whole
        // house) still gets the status a health check needs, never a 403.
        Err(d) if d.code == DenyCode::InsufficientPermissions => Ok(None),
        Err(d) => Err(deny(&d, false, &RequestIds::Unknown)),
    }
}

/// The `/health` body: the whole JSON of the health closure with `details` (serial, structure,
/// link, versions), else `{"status": ...}` alone, which tells anyone whether the server and
/// its Miniserver link are well and nothing about the house.
fn health_body(ctx: &Ctx, details: bool) -> Value {
    let full = (ctx.health)();
    if details {
        full
    } else {
        json!({"status": full.get("status").cloned().unwrap_or(Value::Null)})
    }
}

/// The spec's error object (§7.1) with `status` and empty `details`.
pub(crate) fn rest_error(status: u16, code: &str, message: &str) -> Answer {
    Answer::error(status, &ApiError::new(code, message))
}

/// The spec's error object (§7.1) with `status` and `details` (an object).
pub(crate) fn api_error(
    status: u16,
    code: &str,
    message: impl Into<String>,
    details: Value,
) -> Answer {
    Answer::error(status, &ApiError::new(code, message).with_details(details))
}

/// 405 `METHOD_NOT_ALLOWED` (§7.1) naming the methods `allow`ed, also in `Allow`.
pub(crate) fn method_not_allowed(allow: &'static str) -> Answer {
    rest_error(405, "METHOD_NOT_ALLOWED", &format!("use {allow}")).with_header("Allow", allow)
}

/// 400 `INVALID_PARAMETERS` (§7.1).
pub(crate) fn invalid(message: impl Into<String>) -> Answer {
    Answer::error(400, &ApiError::new("INVALID_PARAMETERS", message))
}

/// A JSON body of a route that answers with the spec's error object (REST, admin): 413
/// `PAYLOAD_TOO_LARGE` (`details.limit`) beyond `max_body_bytes` or with more values than
/// [`crate::json::REQUEST`] allows, 400 `INVALID_PARAMETERS` when it cannot be read, is not
/// JSON or nests too deep.
pub(crate) fn json_body(ctx: &Ctx, request: &mut tiny_http::Request) -> Result<Value, Answer> {
    use crate::json::Exceeded;
    body::json(request, ctx.config.max_body_bytes).map_err(|e| {
        let limit = match e {
            body::BodyError::TooLarge { limit } => limit,
            body::BodyError::TooComplex(Exceeded::Values(limit)) => limit,
            e => return Answer::error(400, &ApiError::new("INVALID_PARAMETERS", e.to_string())),
        };
        let error = ApiError::new("PAYLOAD_TOO_LARGE", e.to_string()).with("limit", limit);
        Answer::error(413, &error)
    })
}

pub(crate) use crate::upgraded::header;

fn route(ctx: &Arc<Ctx>, mut request: tiny_http::Request, out: Out<'_>) {
    let started = Instant::now();
    let transport = HttpTransport::from_path(request.url().split('?').next().unwrap_or(""));
    let method = request.method().clone();
    let url = request.url().to_string();
    let path = url.split('?').next().unwrap_or("").to_string();
    let limit = ctx.config.max_body_bytes;
    if request.body_length().is_some_and(|n| n > limit) {
        // tiny_http (patched) read none of it: after this answer it reads and drops at most
        // 8 MiB more (keeping the connection, or closing it in stages), so that a client that
        // sends its body first still reads the 413. Nothing is buffered, parked or leaked.
        let details = format!("request body exceeds the limit of {limit} bytes");
        let answer = match path.as_str() {
            "/mcp" => mcp::too_large(limit),
            _ => rest_error(413, "PAYLOAD_TOO_LARGE", &details),
        };
        metrics::global().http_request(transport, 413, None);
        deliver(out, request, answer.into_response());
        return;
    }
    let mut rate = None;
    // The Host, then (on every route; the MCP and REST routes check it again) the Origin:
    // a browser page of another site gets nothing from this server, whatever key it holds.
    let forbidden = if !host_allowed(ctx, header(&request, "Host")) {
        Some("Host header not allowed".to_string())
    } else {
        header(&request, "Origin")
            .filter(|o| {
                path != "/health"
                    && !oauth::open_to_browsers(ctx, &path)
                    && !mcp::origin_allowed(ctx, o, header(&request, "Host"))
            })
            .map(|o| format!("Origin {o} is not allowed"))
    };
    let handled: Handled = if let Some(refused) = forbidden {
        let answer = match path.as_str() {
            "/mcp" | "/sse" | "/message" => mcp::forbidden(&refused),
            _ => rest_error(403, "FORBIDDEN", &refused),
        };
        with_request_ids(ctx, &mut request, &path, answer).into()
    } else {
        let principal = match authenticate(ctx, &request, &path) {
            Ok(p) => p,
            Err(answer) => {
                let answer = with_request_ids(ctx, &mut request, &path, answer);
                let status = answer.status;
                metrics::global().http_request(transport, status, None);
                deliver(out, request, answer.into_response());
                log::debug!("{method} {} {status} (gate)", loggable_path(&path));
                return;
            }
        };
        rate = principal.as_ref().map(|p| p.rate);
        let auth = principal.as_ref();
        // The admin page's files, only where the admin API is served.
        let page = ctx
            .config
            .admin
            .as_ref()
            .and(assets::find(assets::ADMIN, &path));
        match path.as_str() {
            "/mcp" => mcp::handle(ctx, &mut request, auth),
            "/sse" => legacy::open(ctx, &request, auth),
            "/message" => legacy::message(ctx, &mut request, auth).into(),
            "/health" => match method {
                tiny_http::Method::Get | tiny_http::Method::Head => {
                    match health_details_allowed(ctx, &request) {
                        Ok(principal) => {
                            rate = principal.as_ref().map(|p| p.rate).or(rate);
                            let body = health_body(ctx, principal.is_some() || !keys_required(ctx));
                            let status = if ctx.accepting.load(Ordering::Relaxed) {
                                200
                            } else {
                                503
                            };
                            Answer::json(status, &body).into()
                        }
                        Err(answer) => answer.into(),
                    }
                }
                _ => method_not_allowed("GET").into(),
            },
            "/metrics" if ctx.config.metrics.is_some() => metrics_route(ctx, &method, auth).into(),
            p if rest::is_rest_path(p) => rest::handle(ctx, &mut request, p, auth).into(),
            p if dashboard::is_dashboard(p) => dashboard::handle(ctx, &request, p, &url, auth),
            p if oauth::is_oauth_path(p) => oauth::handle(ctx, &mut request, p).into(),
            p if p.starts_with(crate::mcp::password::PATH_PREFIX) => {
                confirm::handle(ctx.mcp.password_pages(), &mut request, p).into()
            }
            _ if page.is_some() => page
                .map_or_else(
                    || rest_error(404, "NOT_FOUND", "no such file"),
                    |a| assets::serve(a, &method, header(&request, "If-None-Match")),
                )
                .into(),
            p if auth.is_some() && p.starts_with("/admin") => {
                match ctx.authorize(auth, &Action::Admin) {
                    Err(d) => deny(&d, false, &RequestIds::Unknown),
                    Ok(()) => admin::handle(ctx, &mut request, &url, auth),
                }
                .into()
            }
            _ => rest_error(404, "NOT_FOUND", &format!("no route for {path}")).into(),
        }
    };
    let mut answer = match handled {
        Handled::Answer(a) => a,
        Handled::Take(job) => {
            metrics::global().http_request(transport, 200, Some(started.elapsed()));
            log::debug!("{method} {path} taken over by a stream");
            out.give_back();
            job(
                request,
                rate.map(|r| r.headers().to_vec()).unwrap_or_default(),
            );
            return;
        }
    };
    if let Some(rate) = rate {
        if !answer
            .headers
            .iter()
            .any(|(n, _)| *n == "X-RateLimit-Limit")
        {
            answer.headers.extend(rate.headers());
        }
    }
    let status = answer.status;
    // Counted before writing, so a client that reads the answer and then scrapes sees it.
    let elapsed = started.elapsed();
    metrics::global().http_request(transport, status, Some(elapsed));
    deliver(out, request, answer.into_response());
    log::debug!(
        "{method} {} {status} {:.1} ms",
        loggable_path(&path),
        elapsed.as_secs_f64() * 1000.0
    );
}

/// A refusal by the router (Host, Origin, the gate: 401, 403, 429) of a `POST` to `/mcp` or
/// `/message`, with the ids of the requests in its body ([`mcp::echo_ids`]); any other answer
/// as it is. The body is read although the caller was refused: tiny_http's connection thread
/// has already buffered it within `max_body_bytes` (a larger one was answered 413 unread), so
/// this costs a copy and one pass that keeps only the ids, never a wait on the client, and
/// the answer holds at most `max_batch_items` errors.
fn with_request_ids(
    ctx: &Ctx,
    request: &mut tiny_http::Request,
    path: &str,
    answer: Answer,
) -> Answer {
    if answer.refusal.is_none()
        || request.method() != &tiny_http::Method::Post
        || !matches!(path, "/mcp" | "/message")
    {
        return answer;
    }
    match body::read(request, ctx.config.max_body_bytes) {
        Ok(body) => mcp::echo_ids(ctx, answer, &body),
        Err(_) => answer,
    }
}

/// Whether `path` is `/metrics` behind the gate (configured and not `public`).
fn metrics_gated(ctx: &Ctx, path: &str) -> bool {
    path == "/metrics" && ctx.config.metrics.as_ref().is_some_and(|m| !m.public)
}

/// `GET /metrics`: the Prometheus text exposition; needs `read` ([`Action::Method`]
/// `"metrics"`) unless public. 405 on other methods.
fn metrics_route(ctx: &Ctx, method: &tiny_http::Method, auth: Option<&Principal>) -> Answer {
    if !matches!(method, tiny_http::Method::Get | tiny_http::Method::Head) {
        return method_not_allowed("GET");
    }
    if let Err(d) = ctx.authorize(auth, &Action::Method("metrics")) {
        return deny(&d, false, &RequestIds::Unknown);
    }
    let house = ctx.config.metrics.as_ref().and_then(|m| m.house.as_ref());
    let scrape = metrics::Scrape {
        link: house.map(|h| h.link().snapshot().metrics()),
        house: house.map(|h| h.metrics()),
        sessions: Some(ctx.mcp.sessions().len()),
        streams: Some(ctx.pool.active()),
    };
    Answer::with_body(
        200,
        metrics::CONTENT_TYPE,
        metrics::global().render(&scrape).into_bytes(),
    )
}

/// `path` for a log line: a key id in `/admin/api/keys/<id>` is masked.
fn loggable_path(path: &str) -> std::borrow::Cow<'_, str> {
    if let Some(id) = path
        .strip_prefix(crate::mcp::password::PATH_PREFIX)
        .filter(|id| id.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return format!(
            "{}{}****",
            crate::mcp::password::PATH_PREFIX,
            id.get(..6).unwrap_or("")
        )
        .into();
    }
    match path.strip_prefix("/admin/api/keys/") {
        Some(id) if !id.is_empty() => {
            let id = percent_encoding::percent_decode_str(id).decode_utf8_lossy();
            format!("/admin/api/keys/{}", crate::auth::mask(&id)).into()
        }
        _ => path.into(),
    }
}

/// This server's address as the client of `request` reached it, for links to its own pages
/// (the password page of a URL-mode elicitation): the configured OAuth issuer when there is
/// one (the public address behind a TLS proxy), else `http://` + the `Host` header, else
/// `http://` + the listening address.
pub(crate) fn origin_of(ctx: &Ctx, request: &tiny_http::Request) -> String {
    let host = header(request, "Host")
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| ctx.config.listen.to_string());
    match &ctx.config.oauth {
        Some(o) => o.issuer(&host),
        None => format!("http://{host}"),
    }
}

/// Host validation (DNS-rebinding protection). A missing Host is allowed (not a browser).
fn host_allowed(ctx: &Ctx, host: Option<&str>) -> bool {
    let Some(host) = host else { return true };
    let host = host.trim();
    if !ctx.config.allowed_hosts.is_empty() {
        let name = host_name(host);
        return ctx
            .config
            .allowed_hosts
            .iter()
            .any(|a| a.eq_ignore_ascii_case(host) || a.eq_ignore_ascii_case(name));
    }
    !ctx.loopback || is_loopback_name(host_name(host))
}

/// The host part of `host[:port]` or `[v6]:port`, brackets kept for IPv6.
pub(crate) fn host_name(authority: &str) -> &str {
    if authority.starts_with('[') {
        match authority.find(']') {
            Some(end) => &authority[..=end],
            None => authority,
        }
    } else {
        authority.split(':').next().unwrap_or(authority)
    }
}

/// `localhost`, `127.0.0.0/8`, `[::1]`.
pub(crate) fn is_loopback_name(name: &str) -> bool {
    if name.eq_ignore_ascii_case("localhost") || name == "[::1]" {
        return true;
    }
    name.parse::<Ipv4Addr>()
        .map(|ip| ip.is_loopback())
        .unwrap_or(false)
}

/// `s` as HTML text, also inside a quoted attribute (`&`, `<`, `>`, `"`, `'` escaped): the
/// pages this server writes itself (the OAuth consent page, the password page).
pub(crate) fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names() {
        assert_eq!(host_name("localhost:8080"), "localhost");
        assert_eq!(host_name("[::1]:80"), "[::1]");
        assert_eq!(host_name("evil.example.com"), "evil.example.com");
        assert!(is_loopback_name("127.0.0.1"));
        assert!(is_loopback_name("[::1]"));
        assert!(!is_loopback_name("evil.example.com"));
    }

    #[test]
    fn listener_options() {
        let config = HttpConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            idle_timeout: Duration::from_millis(700),
            ..HttpConfig::default()
        };
        let listener = bind(&config).unwrap();
        let sock = socket2::SockRef::from(&listener);
        assert!(sock.tcp_nodelay().unwrap(), "TCP_NODELAY on the listener");
        assert!(sock.reuse_address().unwrap());
        let rcv = sock.read_timeout().unwrap().unwrap();
        assert!(rcv >= Duration::from_millis(690) && rcv <= Duration::from_millis(710));
        assert!(sock.write_timeout().unwrap().is_some());
        // Linux copies them to accepted sockets.
        let addr = listener.local_addr().unwrap();
        let _client = TcpStream::connect(addr).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        let accepted = socket2::SockRef::from(&accepted);
        assert!(accepted.tcp_nodelay().unwrap(), "TCP_NODELAY inherited");
        assert!(
            accepted.read_timeout().unwrap().is_some(),
            "SO_RCVTIMEO inherited"
        );
    }
}
