//! The HTTP routes in-process: the demo [`App`] behind a real [`HttpServer`] on a loopback
//! port, optionally behind a gate over in-memory keys, for tests of the REST, admin, metrics
//! and dashboard routes over real sockets (see [`super::net`] for the client).

use std::net::SocketAddr;
use std::sync::Arc;

use home_mcp::app::App;
use home_mcp::auth::gate::{Gate, GateConfig, SecurityLevel};
use home_mcp::auth::store::MemoryStore;
use home_mcp::auth::ApiKey;
use home_mcp::config::Config;
use home_mcp::http::admin::AdminContext;
use home_mcp::http::{HttpConfig, HttpServer};
use home_mcp::tools::HomeTools;
use serde_json::json;

use super::net::{request, Reply};

/// The demo house in-process (its own simulator on a loopback port, the real client) with
/// the default configuration: the HTTP tests meet the outbound command limits as shipped
/// (the tool tests raise them: [`super::house::test_config`]).
pub fn demo_app() -> App {
    super::house::demo_with(&Config::default()).0
}

/// A gate of `level` over an in-memory store holding `keys`, for a server bound to
/// loopback, with `[auth] admin_networks` = `admin_networks` and `app`'s tool permissions.
pub fn gate(
    app: &App,
    level: SecurityLevel,
    keys: Vec<ApiKey>,
    admin_networks: &[&str],
) -> Arc<Gate> {
    Arc::new(Gate::new(
        Arc::new(MemoryStore::new(keys)),
        GateConfig {
            level,
            admin_networks: admin_networks.iter().map(|s| s.to_string()).collect(),
            ..GateConfig::default()
        },
        "127.0.0.1".parse().unwrap(),
        Arc::new(HomeTools::new(app.house.clone())),
    ))
}

/// The admin API's context over `gate` and `app`'s house and audit log.
pub fn admin_context(app: &App, gate: &Arc<Gate>) -> Arc<AdminContext> {
    Arc::new(AdminContext::new(
        gate.clone(),
        app.house.clone(),
        app.audit.clone(),
    ))
}

/// An [`HttpServer`] for `app`'s MCP server with `config`, listening on a free loopback
/// port (whatever `config.listen` says); `/health` answers `{"status": "ok"}`.
pub fn serve(app: &App, config: HttpConfig) -> HttpServer {
    let config = HttpConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..config
    };
    HttpServer::start(
        config,
        app.mcp.clone(),
        Arc::new(|| json!({"status": "ok"})),
    )
    .expect("server starts")
}

/// The demo [`App`] and an [`HttpServer`] in front of it; the server shuts down when this
/// is dropped.
pub struct AppServer {
    pub server: HttpServer,
    pub app: App,
}

impl AppServer {
    /// The demo house served with the config `setup` builds from it (see [`gate`],
    /// [`admin_context`]).
    pub fn start(setup: impl FnOnce(&App) -> HttpConfig) -> AppServer {
        let app = demo_app();
        let server = serve(&app, setup(&app));
        AppServer { server, app }
    }

    /// The server's bound address.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }
}

impl Drop for AppServer {
    fn drop(&mut self) {
        self.server.shutdown();
    }
}

/// One request to `addr` with `body` as JSON (`Content-Type` and `Accept:
/// application/json`) and `key` in `X-API-Key`, if any.
pub fn send_json(
    addr: SocketAddr,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: &str,
) -> Reply {
    let mut headers = vec![
        "Content-Type: application/json".to_string(),
        "Accept: application/json".to_string(),
    ];
    if let Some(k) = key {
        headers.push(format!("X-API-Key: {k}"));
    }
    request(addr, method, path, &headers, body)
}
