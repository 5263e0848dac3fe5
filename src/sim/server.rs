//! A real socket in front of [`Simulator::handle`]: a tiny_http server with two worker
//! threads looping on `recv()` (DESIGN.md: 2 workers beat 4 on 2 cores). Dropping the
//! [`SimServer`] stops it and joins the workers. Requests for `/ws/rfc6455` are upgraded
//! and served by a WebSocket session thread (`ws.rs`), so they never hold a worker.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use log::{debug, warn};
use tiny_http::{Header, Response, Server};

use super::Simulator;

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
        let server = Server::http(listen).map_err(std::io::Error::other)?;
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
        if let Some((status, content_type, body)) =
            sim.handle_binary(&method, request.url(), auth.as_deref(), peer)
        {
            let mut response = Response::from_data(body).with_status_code(status);
            if let Ok(h) = Header::from_bytes("Content-Type", content_type) {
                response = response.with_header(h);
            }
            sim.answer_slowly();
            if let Err(e) = request.respond(response) {
                debug!("sim: respond failed: {e}");
            }
            continue;
        }
        let resp = sim.handle(&method, request.url(), auth.as_deref(), peer);
        debug!("sim: {method} {} -> {}", request.url(), resp.status);
        let mut response = Response::from_string(resp.body).with_status_code(resp.status);
        let content_type = format!("{}; charset=utf-8", resp.content_type);
        if let Ok(h) = Header::from_bytes("Content-Type", content_type) {
            response = response.with_header(h);
        }
        if resp.status == 401 {
            // Lets browsers prompt for credentials (*inferred*; no capture shows the realm).
            if let Ok(h) = Header::from_bytes("WWW-Authenticate", "Basic realm=\"Loxone\"") {
                response = response.with_header(h);
            }
        }
        sim.answer_slowly();
        if let Err(e) = request.respond(response) {
            debug!("sim: respond failed: {e}");
        }
    }
}
