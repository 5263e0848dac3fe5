//! The harness itself: its waits fail with what they saw, the simulator records the wire,
//! and the outside clients (MCP over HTTP and stdio, the Miniserver API, signals to a
//! simulator process) work against the real binary.

use std::time::Duration;

use serde_json::json;

use crate::support::mcp::{McpHttp, McpStdio};
use crate::support::server::{Miniserver, Served, SimProcess};
use crate::support::wait_until;
use crate::support::wire::commands_since;

/// Küche / Deckenlicht (Switch) in the demo house.
const KITCHEN_LIGHT: &str = "1d5c3a92-0209-520e-ffff504f94d0e5a1";

#[test]
#[should_panic(expected = "waiting for the impossible; last seen: 3")]
fn a_wait_that_runs_out_names_the_last_thing_it_saw() {
    wait_until("the impossible", Duration::from_millis(1), || {
        Err::<(), _>(3)
    });
}

#[test]
fn the_simulator_records_request_lines_as_they_came() {
    let ms = Miniserver::demo();
    ms.api.command(KITCHEN_LIGHT, "off");
    let _ = crate::support::net::request::<&str>(
        ms.server.addr(),
        "GET",
        "/jdev/sps/io/Notiz/a%2Fb",
        &[],
        "",
    );
    let lines = ms.sim.requests();
    assert!(
        lines.contains(&format!("GET /jdev/sps/io/{KITCHEN_LIGHT}/off")),
        "{lines:?}"
    );
    // Percent-encoding is kept: what went over the wire, not what the simulator decoded.
    assert!(
        lines.contains(&"GET /jdev/sps/io/Notiz/a%2Fb".to_string()),
        "{lines:?}"
    );
    assert_eq!(ms.commands_to(KITCHEN_LIGHT).len(), 1, "{lines:?}");
    // From a mark, reads are not commands and commands to any control are.
    let mark = ms.sim.request_count();
    ms.api.states(KITCHEN_LIGHT);
    ms.api.value(KITCHEN_LIGHT);
    assert_eq!(commands_since(&ms.sim, mark), Vec::<String>::new());
    ms.api.command(KITCHEN_LIGHT, "on");
    assert_eq!(
        commands_since(&ms.sim, mark),
        [format!("GET /jdev/sps/io/{KITCHEN_LIGHT}/on")]
    );
}

#[test]
fn a_wall_button_change_is_read_back_over_the_miniserver_api() {
    let ms = Miniserver::demo();
    ms.api.command(KITCHEN_LIGHT, "on");
    assert_eq!(ms.api.state(KITCHEN_LIGHT, "active"), 1.0);
    ms.api.command(KITCHEN_LIGHT, "off");
    assert_eq!(ms.api.state(KITCHEN_LIGHT, "active"), 0.0);
    // The in-process oracle agrees with the API.
    assert_eq!(ms.sim.state(KITCHEN_LIGHT, "active"), Some(0.0));
}

#[test]
fn the_real_server_answers_mcp_over_http_and_stdio() {
    let ms = Miniserver::demo();
    let served = Served::start(&ms, "", &[]);
    let mut http = McpHttp::connect(served.addr, None);
    let rooms = http.ok("list_rooms", json!({}));
    let mut stdio = McpStdio::start(&["--demo"], &[]);
    let rooms_stdio = stdio.ok("list_rooms", json!({}));
    // Both are the demo house: 14 rooms (assets/demo-house.json).
    assert_eq!(rooms["rooms"].as_array().map(Vec::len), Some(14), "{rooms}");
    assert_eq!(rooms_stdio["rooms"], rooms["rooms"]);
}

#[test]
fn a_stopped_miniserver_answers_nothing_until_it_resumes() {
    let path = format!("{}/assets/demo-house.json", env!("CARGO_MANIFEST_DIR"));
    let sim = SimProcess::start(std::path::Path::new(&path));
    sim.api.command(KITCHEN_LIGHT, "on");
    sim.signal("STOP");
    // A hung Miniserver keeps its socket: the connection opens, the answer never comes.
    let mut s = std::net::TcpStream::connect(sim.api.addr).expect("the socket stays open");
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    use std::io::{Read, Write};
    s.write_all(b"GET /jdev/cfg/api HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 16];
    let read = s.read(&mut buf);
    assert!(
        read.is_err(),
        "a stopped process cannot answer: {read:?} {:?}",
        &buf
    );
    sim.signal("CONT");
    assert_eq!(sim.api.state(KITCHEN_LIGHT, "active"), 1.0);
    // A restart on the same port starts from the structure file's values again.
    let sim = sim.restart();
    assert_eq!(sim.api.state(KITCHEN_LIGHT, "active"), 0.0);
}

#[test]
fn a_closed_port_refuses_connections_and_stays_reserved() {
    let port = crate::support::closed_port();
    let err = std::net::TcpStream::connect(("127.0.0.1", port)).expect_err("nobody listens");
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused, "{err}");
    // No server can take it in the meantime.
    assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_err());
}
