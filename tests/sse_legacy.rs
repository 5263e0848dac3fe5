//! The legacy HTTP+SSE transport (2024-11-05) over real loopback sockets: `GET /sse`, the
//! `endpoint` event, `POST /message` answered on the stream, elicitation, and bad input.
use std::net::SocketAddr;

use serde_json::{json, Value};

use crate::support::sse::*;
use crate::support::{wait_until, PATIENCE};

fn message(addr: SocketAddr, endpoint: &str, body: &Value) -> Http {
    send(
        addr,
        "POST",
        endpoint,
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    )
}

/// Opens `/sse`; returns the stream and the endpoint of its `endpoint` event.
fn open_sse(addr: SocketAddr) -> (Http, String) {
    let mut s = send(addr, "GET", "/sse", &[("Accept", "text/event-stream")], b"");
    assert_eq!(s.status, 200);
    assert_eq!(s.header("content-type"), Some("text/event-stream"));
    let e = s.next().expect("endpoint event");
    assert_eq!(e.event.as_deref(), Some("endpoint"));
    let endpoint = e.data.unwrap();
    assert!(endpoint.starts_with("/message?sessionId="), "{endpoint}");
    (s, endpoint)
}

#[test]
fn endpoint_then_messages_on_the_stream() {
    let server = start();
    let addr = server.addr();
    let (mut s, endpoint) = open_sse(addr);
    let r = message(
        addr,
        &endpoint,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2024-11-05", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "0"}}}),
    );
    assert_eq!(r.status, 202);
    let e = s.next_data().unwrap();
    assert_eq!(e.event.as_deref(), Some("message"));
    assert_eq!(e.json()["result"]["protocolVersion"], "2024-11-05");
    let r = message(
        addr,
        &endpoint,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(r.status, 202);
    let r = message(
        addr,
        &endpoint,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"a": 1}}}),
    );
    assert_eq!(r.status, 202);
    let v = s.next_data().unwrap().json();
    assert_eq!(v["id"], 2);
    assert_eq!(v["result"]["content"][0]["text"], "{\"a\":1}");

    // Elicitation: the request comes on the stream, the answer as a POST.
    let r = message(
        addr,
        &endpoint,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "ask"}}),
    );
    assert_eq!(r.status, 202);
    let req = s.next_data().unwrap().json();
    assert_eq!(req["method"], "elicitation/create");
    let r = message(
        addr,
        &endpoint,
        &json!({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "accept", "content": {"name": "Cy"}}}),
    );
    assert_eq!(r.status, 202);
    let v = s.next_data().unwrap().json();
    assert_eq!(v["result"]["content"][0]["text"], "accept:Cy");

    // Keep-alive comments while idle.
    assert!(s.next().unwrap().comment);

    // Closing the stream ends the session.
    drop(s);
    wait_until("the session to end with its stream", PATIENCE, || {
        let r = message(
            addr,
            &endpoint,
            &json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}),
        );
        match r.status {
            404 => Ok(()),
            202 => Err("202: the session is still there"),
            other => panic!("neither 202 nor 404: {other}"),
        }
    });
    server.stop();
}

#[test]
fn bad_session_ids_and_bodies() {
    let server = start_with(|c| c.max_body_bytes = 1024);
    let addr = server.addr();
    let (_s, endpoint) = open_sse(addr);
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    assert_eq!(message(addr, "/message", &ping).status, 400);
    assert_eq!(message(addr, "/message?sessionId=xyz", &ping).status, 400);
    assert_eq!(
        message(addr, "/message?sessionId=../../etc/passwd", &ping).status,
        400
    );
    assert_eq!(
        message(
            addr,
            "/message?sessionId=0123456789abcdef0123456789abcdef",
            &ping
        )
        .status,
        404
    );
    let r = send(
        addr,
        "POST",
        &endpoint,
        &[("Content-Type", "application/json")],
        b"{not json",
    );
    assert_eq!(r.status, 400);
    let big =
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"p": "x".repeat(4096)}});
    assert_eq!(message(addr, &endpoint, &big).status, 413);
    assert_eq!(send(addr, "GET", &endpoint, &[], b"").status, 405);
    assert_eq!(send(addr, "POST", "/sse", &[], b"").status, 405);
    let r = send(
        addr,
        "GET",
        "/sse",
        &[("Origin", "http://evil.example.com")],
        b"",
    );
    assert_eq!(r.status, 403);
    server.stop();
}
