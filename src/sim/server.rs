//! A real socket in front of [`Simulator::handle`]: a tiny_http server with two worker
//! threads looping on `recv()` (DESIGN.md: 2 workers beat 4 on 2 cores). Dropping the
//! [`SimServer`] stops it and joins the workers. Requests for `/ws/rfc6455` are upgraded
//! and served by a WebSocket session thread (`ws.rs`), so they never hold a worker.
//!
//! Every answer goes out in one write on a socket with `TCP_NODELAY` (set on the listening
//! socket, inherited by each accepted one): the status line, headers and body are composed
//! first and written at once ([`http_bytes`]), as the WebSocket writes a header and its
//! payload together. Written in pieces, the second piece of an answer waited for the client's
//! delayed ACK under Nagle's algorithm, about 40 ms per answer.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use std::io::Write as _;

use log::{debug, warn};
use tiny_http::{HTTPVersion, Server};

use super::{SimResponse, Simulator};

const WORKERS: usize = 2;

/// A running simulator on a TCP port. Stops when dropped, ending its WebSocket sessions too.
pub struct SimServer {
    server: Arc<Server>,
    /// To end the WebSocket sessions (their own threads) when the server stops.
    sim: Arc<Simulator>,
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<()>>,
    /// The cameras of the house's intercoms, each on a port of its own (`door.rs`).
    _cameras: super::CameraServers,
}

impl SimServer {
    /// Listens on `listen` (e.g. `"127.0.0.1:8080"`, or port 0 for any free port) and serves
    /// `sim` from two worker threads.
    pub fn start(sim: Arc<Simulator>, listen: &str) -> std::io::Result<SimServer> {
        let server = Server::from_listener(bind(listen)?, None).map_err(std::io::Error::other)?;
        let addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| std::io::Error::other("not an IP listener"))?;
        let cameras = super::door::start(&sim, addr.ip())?;
        let server = Arc::new(server);
        let stop = Arc::new(AtomicBool::new(false));
        let mut workers = Vec::with_capacity(WORKERS);
        for i in 0..WORKERS {
            let (server, sim, stop) = (server.clone(), sim.clone(), stop.clone());
            let port = addr.port();
            let handle = std::thread::Builder::new()
                .name(format!("sim-http-{i}"))
                .spawn(move || worker(&server, &sim, &stop, port))?;
            workers.push(handle);
        }
        log::info!("sim: Miniserver simulator listening on http://{addr}");
        Ok(SimServer {
            server,
            sim,
            addr,
            stop,
            workers,
            _cameras: cameras,
        })
    }

    /// The bound address (with the real port when started on port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://{addr}`, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.sim.ws_drop_connections();
        // Each unblock wakes exactly one recv().
        for _ in &self.workers {
            self.server.unblock();
        }
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

fn worker(server: &Server, sim: &Arc<Simulator>, stop: &AtomicBool, port: u16) {
    loop {
        let request = match server.recv() {
            Ok(r) => r,
            Err(e) => {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                warn!("sim: accept error: {e}");
                continue;
            }
        };
        if super::ws::is_ws_path(request.url()) {
            // Hands the connection to a session thread of its own.
            super::ws::upgrade(request, sim.clone(), port);
            continue;
        }
        let auth = request
            .headers()
            .iter()
            .find(|h| h.field.equiv("Authorization"))
            .map(|h| h.value.as_str().to_string());
        let peer = request
            .remote_addr()
            .map(SocketAddr::ip)
            .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
        let method = request.method().as_str().to_string();
        let resp = sim.handle(&method, request.url(), auth.as_deref(), peer);
        debug!("sim: {method} {} -> {}", request.url(), resp.status);
        let head_only = method.eq_ignore_ascii_case("HEAD");
        let bytes = http_bytes(&resp, request.http_version(), head_only);
        sim.answer_slowly();
        let mut writer = request.into_writer();
        if let Err(e) = writer.write_all(&bytes).and_then(|()| writer.flush()) {
            debug!("sim: respond failed: {e}");
        }
    }
}

/// The listening socket: `SO_REUSEADDR` and `TCP_NODELAY` before tiny_http takes it (accepted
/// sockets inherit `TCP_NODELAY` on Linux and the BSDs).
fn bind(listen: &str) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    use std::net::ToSocketAddrs;
    let addr = listen
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other(format!("no address in {listen:?}")))?;
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_tcp_nodelay(true)?;
    socket.bind(&addr.into())?;
    socket.listen(128)?;
    Ok(socket.into())
}

/// The whole HTTP answer as one buffer: status line, `Content-Type` (with `charset=utf-8` for
/// text), `Content-Length`, `WWW-Authenticate` on 401 (lets browsers prompt for credentials;
/// *inferred*, no capture shows the realm), then the body (none for `HEAD`).
pub(crate) fn http_bytes(resp: &SimResponse, version: &HTTPVersion, head_only: bool) -> Vec<u8> {
    let reason = tiny_http::StatusCode(resp.status).default_reason_phrase();
    // Binary data (statistics records) has no charset.
    let (body, charset) = match &resp.data {
        Some(data) => (data.as_slice(), ""),
        None => (resp.body.as_bytes(), "; charset=utf-8"),
    };
    let mut head = format!(
        "HTTP/{}.{} {} {reason}\r\nContent-Type: {}{charset}\r\nContent-Length: {}\r\n",
        version.0,
        version.1,
        resp.status,
        resp.content_type,
        body.len()
    );
    if resp.status == 401 {
        head.push_str("WWW-Authenticate: Basic realm=\"Loxone\"\r\n");
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    if !head_only {
        bytes.extend_from_slice(body);
    }
    bytes
}
