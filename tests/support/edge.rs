//! The contract of every attack test of the HTTP edge (issue 14): the real `serve` binary under
//! the packaged unit's `LimitNOFILE`, at security level staging with one operator key; while
//! an attack is open, `/health` and an MCP client holding that key are each answered within
//! [`ANSWER_WITHIN`], and the server's RSS stays under [`RSS_BOUND_KB`]; afterwards it still
//! answers. Attackers connect from other loopback addresses (127.0.0.2...) so that the
//! per-client caps of the legitimate client (127.0.0.1) are its own.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::json;

use super::gate::key;
use super::mcp::McpHttp;
use super::net::try_request;
use super::server::{Miniserver, Served};
use super::wait::PATIENCE;

/// The packaged unit's `LimitNOFILE` (`systemd/home-mcp.service`).
pub const NOFILE: u32 = 1024;

/// The contract: `/health` and a keyed MCP client are answered within this during an
/// attack (each answer measured on its own).
pub const ANSWER_WITHIN: Duration = Duration::from_secs(2);

/// RSS the server stays under during and after an attack, in kB: a third of the unit's
/// `MemoryMax=192M`, five times its idle footprint (about 12 MB). Before issue 14 single
/// attacks took it to 289, 413 and 656 MB.
pub const RSS_BOUND_KB: u64 = 64 * 1024;

/// The legitimate client's key (an operator).
pub const KEY: &str = "homekey_operator_7_00000000000000000000000000000007";

/// `serve` at level staging with the operator key [`KEY`] (environment key backend), `config`
/// added, under [`NOFILE`] descriptors.
pub fn start(ms: &Miniserver, config: &str) -> Served {
    start_with_keys(ms, config, &[])
}

/// [`start`] with more keys besides [`KEY`].
pub fn start_with_keys(ms: &Miniserver, config: &str, others: &[home_mcp::auth::ApiKey]) -> Served {
    let mut keys = vec![key(KEY, home_mcp::auth::Role::Operator)];
    keys.extend(others.iter().cloned());
    let keys = serde_json::to_string(&keys).expect("key records");
    Served::start_limited_env(
        ms,
        &format!("[auth]\nsecurity_level = \"staging\"\n{config}"),
        &[("HOME_KEY_BACKEND", "env"), ("HOME_API_KEYS", &keys)],
        NOFILE,
    )
}

/// An MCP session of the legitimate client, opened before an attack.
pub fn client(served: &Served) -> McpHttp {
    McpHttp::connect(served.addr, Some(KEY))
}

/// `VmRSS` of process `pid`, in kB (`/proc/<pid>/status`).
pub fn rss_kb(pid: u32) -> u64 {
    status_kb(pid, "VmRSS")
}

/// A `kB` field (`VmRSS`, `VmHWM`: the peak) of `/proc/<pid>/status`, in kB.
pub fn status_kb(pid: u32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in {text}"))
}

/// What [`answered`] measured.
#[derive(Debug, Clone, Copy)]
pub struct Answered {
    pub health: Duration,
    pub mcp: Duration,
}

/// `/health` answers 200 and `client` (keyed) gets `list_rooms`, each within
/// [`ANSWER_WITHIN`]; the RSS is under [`RSS_BOUND_KB`]. Prints and returns the figures.
pub fn answered(served: &Served, client: &mut McpHttp, during: &str) -> Answered {
    let t = Instant::now();
    let h = try_request::<&str>(served.addr, "GET", "/health", &[], "");
    let health = t.elapsed();
    assert!(
        matches!(&h, Ok(r) if r.status == 200),
        "{during}: /health {h:?}"
    );
    let t = Instant::now();
    let rooms = client.ok("list_rooms", json!({}));
    let mcp = t.elapsed();
    assert!(rooms.to_string().contains("Küche"), "{during}: {rooms}");
    let rss = rss_kb(served.pid());
    println!(
        "{during}: /health {:.1} ms, keyed list_rooms {:.1} ms, RSS {rss} kB",
        health.as_secs_f64() * 1e3,
        mcp.as_secs_f64() * 1e3
    );
    assert!(health <= ANSWER_WITHIN, "{during}: /health took {health:?}");
    assert!(
        mcp <= ANSWER_WITHIN,
        "{during}: the keyed client's list_rooms took {mcp:?}"
    );
    assert!(rss < RSS_BOUND_KB, "{during}: RSS {rss} kB");
    Answered { health, mcp }
}

/// A TCP connection to `addr` from the loopback address `127.0.0.{host}` (reads and writes
/// time out after [`PATIENCE`]).
pub fn connect_from(host: u8, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    let local = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, host)), 0);
    socket.bind(&local.into())?;
    socket.connect_timeout(&addr.into(), PATIENCE)?;
    let stream: TcpStream = socket.into();
    stream.set_read_timeout(Some(PATIENCE))?;
    stream.set_write_timeout(Some(PATIENCE))?;
    Ok(stream)
}
