//! Quick-start REST routes (`src/http/rest.rs`) over real loopback sockets, against the demo
//! house: the happy paths and every error status.

use std::io::{Read, Write};

use home_mcp::http::HttpConfig;
use serde_json::{json, Value};

use crate::support::app_server::AppServer;
use crate::support::net::parse_reply;
use crate::support::net::request_json;

/// The demo house behind a server without a gate, with a 4 KiB body limit.
fn start() -> AppServer {
    AppServer::start(|_| HttpConfig {
        max_body_bytes: 4096,
        ..HttpConfig::default()
    })
}

fn get(f: &AppServer, path: &str) -> (u16, Value) {
    let (s, _, b) = request_json(f.addr(), "GET", path, &[], "");
    (s, b)
}

fn post(f: &AppServer, path: &str, body: Value) -> (u16, Value) {
    let (s, _, b) = request_json(
        f.addr(),
        "POST",
        path,
        &["Content-Type: application/json"],
        &body.to_string(),
    );
    (s, b)
}

fn error_code(body: &Value) -> &str {
    body["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error object: {body}"))
}

#[test]
fn tools_are_listed_and_called() {
    let f = start();
    let (status, body) = get(&f, "/tools");
    assert_eq!(status, 200);
    let tools = body["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["name"] == "list_rooms"));
    assert!(tools.iter().all(|t| t["inputSchema"]["type"] == "object"));

    let (status, body) = post(&f, "/tools/call", json!({"tool": "list_rooms"}));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "success");
    assert!(body["data"]["rooms"].as_array().unwrap().len() > 1);
    assert!(body["timestamp"].is_string());
}

#[test]
fn tool_call_errors() {
    let f = start();
    // Unknown tool: 400 INVALID_PARAMETERS (the core's -32602), naming the tool.
    let (status, body) = post(
        &f,
        "/tools/call",
        json!({"tool": "no_such_tool", "arguments": {}}),
    );
    assert_eq!(status, 400);
    assert_eq!(error_code(&body), "INVALID_PARAMETERS");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("no_such_tool"));
    assert!(body["error"]["details"].is_object());
    // Bad arguments: 400 too.
    let (status, body) = post(
        &f,
        "/tools/call",
        json!({"tool": "control_device", "arguments": {"device": "x"}}),
    );
    assert_eq!((status, error_code(&body)), (400, "INVALID_PARAMETERS"));
    // A tool error (isError) keeps its §7.1 code and gets its status.
    let (status, body) = post(
        &f,
        "/tools/call",
        json!({"tool": "control_device", "arguments": {"device": "Nirgendwo", "action": "on"}}),
    );
    assert_eq!((status, error_code(&body)), (404, "DEVICE_NOT_FOUND"));
    assert!(body["error"]["details"].is_object());
    // Shapes.
    for bad in [
        json!({"arguments": {}}),
        json!({"tool": 3}),
        json!({"tool": "list_rooms", "arguments": [1]}),
        json!([]),
    ] {
        let (status, body) = post(&f, "/tools/call", bad);
        assert_eq!((status, error_code(&body)), (400, "INVALID_PARAMETERS"));
    }
    let (status, _, body) = request_json(f.addr(), "POST", "/tools/call", &[], "{not json");
    assert_eq!((status, error_code(&body)), (400, "INVALID_PARAMETERS"));
}

#[test]
fn devices_are_listed_and_controlled() {
    let f = start();
    let (status, body) = get(&f, "/api/devices");
    assert_eq!(status, 200, "{body}");
    let all = body["data"]["devices"].as_array().unwrap().len();
    assert!(all > 5);
    let (status, body) = get(&f, "/api/devices?room=K%C3%BCche&include_state=false");
    assert_eq!(status, 200, "{body}");
    let devices = body["data"]["devices"].as_array().unwrap();
    assert!(!devices.is_empty() && devices.len() < all);
    assert!(devices.iter().all(|d| d["room"] == "Küche"));

    let (status, body) = post(
        &f,
        "/api/devices/control",
        json!({"device": "Deckenlicht Küche", "action": "on"}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["action"], "on");

    let (status, _, body) = request_json(
        f.addr(),
        "POST",
        "/api/devices/Deckenlicht%20K%C3%BCche/off",
        &[],
        "",
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "success");
    assert_eq!(body["data"]["action"], "off");
    let (status, _, body) = request_json(
        f.addr(),
        "POST",
        "/api/devices/Deckenlicht%20K%C3%BCche/on",
        &[],
        "",
    );
    assert_eq!((status, body["data"]["action"].as_str()), (200, Some("on")));
}

#[test]
fn device_errors() {
    let f = start();
    let (status, body) = post(
        &f,
        "/api/devices/control",
        json!({"device": "Nirgendwo", "action": "on"}),
    );
    assert_eq!((status, error_code(&body)), (404, "DEVICE_NOT_FOUND"));
    let (status, _, body) = request_json(f.addr(), "POST", "/api/devices/Nirgendwo/on", &[], "");
    assert_eq!((status, error_code(&body)), (404, "DEVICE_NOT_FOUND"));
    let (status, body) = post(
        &f,
        "/api/devices/control",
        json!({"device": "Deckenlicht Küche"}),
    );
    assert_eq!((status, error_code(&body)), (400, "INVALID_PARAMETERS"));
    let (status, body) = post(&f, "/api/devices/control", json!("on"));
    assert_eq!((status, error_code(&body)), (400, "INVALID_PARAMETERS"));
    let (status, _, body) = request_json(f.addr(), "POST", "/api/devices/control", &[], "]");
    assert_eq!((status, error_code(&body)), (400, "INVALID_PARAMETERS"));
    let (status, body) = get(&f, "/api/devices?include_state=maybe");
    assert_eq!((status, error_code(&body)), (400, "INVALID_PARAMETERS"));
    let (status, _, body) = request_json(f.addr(), "POST", "/api/devices/x/explode", &[], "");
    assert_eq!((status, error_code(&body)), (404, "NOT_FOUND"));
}

#[test]
fn wrong_methods_get_405_with_allow() {
    let f = start();
    for (method, path, allow) in [
        ("POST", "/tools", "GET"),
        ("GET", "/tools/call", "POST"),
        ("DELETE", "/api/devices", "GET"),
        ("GET", "/api/devices/control", "POST"),
        ("GET", "/api/devices/Deckenlicht/on", "POST"),
    ] {
        let (status, head, body) = request_json(f.addr(), method, path, &[], "");
        assert_eq!(status, 405, "{method} {path}");
        assert_eq!(error_code(&body), "METHOD_NOT_ALLOWED");
        assert!(head.contains(&format!("allow: {allow}")), "{head}");
    }
}

#[test]
fn oversize_bodies_get_413() {
    let f = start();
    let big = json!({"tool": "list_rooms", "arguments": {"pad": "x".repeat(8000)}}).to_string();
    let (status, _, body) = request_json(f.addr(), "POST", "/tools/call", &[], &big);
    assert_eq!((status, error_code(&body)), (413, "PAYLOAD_TOO_LARGE"));
    let (status, _, body) = request_json(f.addr(), "POST", "/api/devices/control", &[], &big);
    assert_eq!((status, error_code(&body)), (413, "PAYLOAD_TOO_LARGE"));
}

#[test]
fn host_and_origin_are_checked() {
    let f = start();
    let addr = f.addr();
    let (status, _, body) = request_json(
        addr,
        "GET",
        "/tools",
        &["Origin: http://evil.example.com"],
        "",
    );
    assert_eq!((status, error_code(&body)), (403, "FORBIDDEN"));
    let (status, _, _) = request_json(
        addr,
        "GET",
        "/tools",
        &[&format!("Origin: http://127.0.0.1:{}", addr.port())],
        "",
    );
    assert_eq!(status, 200);
    // The router's Host check (DNS-rebinding protection) covers the REST routes too (raw
    // bytes: the client always sends its own Host).
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(
        b"GET /api/devices HTTP/1.1\r\nHost: evil.example.com\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let r = parse_reply(&raw).unwrap();
    assert_eq!(r.status, 403, "{r:?}");
}
