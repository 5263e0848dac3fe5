//! Quick-start REST routes (`src/http/rest.rs`) over real loopback sockets, against the demo
//! house: the happy paths and every error status.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use home_mcp::app::App;
use home_mcp::config::Config;
use home_mcp::http::{HttpConfig, HttpServer};
use serde_json::{json, Value};

struct Fixture {
    server: HttpServer,
    _app: App,
}

fn start() -> Fixture {
    let app = App::start(&Config::default(), true).expect("demo starts");
    let config = HttpConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        max_body_bytes: 4096,
        ..HttpConfig::default()
    };
    let server =
        HttpServer::start(config, app.mcp.clone(), Arc::new(|| json!({}))).expect("server starts");
    Fixture { server, _app: app }
}

/// One request on a fresh connection; returns (status, raw head, JSON body).
fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[&str],
    body: &[u8],
) -> (u16, String, Value) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nContent-Length: {}\r\n",
        addr.port(),
        body.len()
    );
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a full response");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(body).expect("JSON body")
    };
    (status, head.to_string(), body)
}

fn get(f: &Fixture, path: &str) -> (u16, Value) {
    let (s, _, b) = send(f.server.addr(), "GET", path, &[], b"");
    (s, b)
}

fn post(f: &Fixture, path: &str, body: Value) -> (u16, Value) {
    let (s, _, b) = send(
        f.server.addr(),
        "POST",
        path,
        &["Content-Type: application/json"],
        body.to_string().as_bytes(),
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
    let (status, _, body) = send(f.server.addr(), "POST", "/tools/call", &[], b"{not json");
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

    let (status, _, body) = send(
        f.server.addr(),
        "POST",
        "/api/devices/Deckenlicht%20K%C3%BCche/off",
        &[],
        b"",
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "success");
    assert_eq!(body["data"]["action"], "off");
    let (status, _, body) = send(
        f.server.addr(),
        "POST",
        "/api/devices/Deckenlicht%20K%C3%BCche/on",
        &[],
        b"",
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
    let (status, _, body) = send(
        f.server.addr(),
        "POST",
        "/api/devices/Nirgendwo/on",
        &[],
        b"",
    );
    assert_eq!((status, error_code(&body)), (404, "DEVICE_NOT_FOUND"));
    let (status, body) = post(
        &f,
        "/api/devices/control",
        json!({"device": "Deckenlicht Küche"}),
    );
    assert_eq!((status, error_code(&body)), (400, "INVALID_PARAMETERS"));
    let (status, body) = post(&f, "/api/devices/control", json!("on"));
    assert_eq!((status, error_code(&body)), (400, "INVALID_PARAMETERS"));
    let (status, _, body) = send(f.server.addr(), "POST", "/api/devices/control", &[], b"]");
    assert_eq!((status, error_code(&body)), (400, "INVALID_PARAMETERS"));
    let (status, body) = get(&f, "/api/devices?include_state=maybe");
    assert_eq!((status, error_code(&body)), (400, "INVALID_PARAMETERS"));
    let (status, _, body) = send(f.server.addr(), "POST", "/api/devices/x/explode", &[], b"");
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
        let (status, head, body) = send(f.server.addr(), method, path, &[], b"");
        assert_eq!(status, 405, "{method} {path}");
        assert_eq!(error_code(&body), "METHOD_NOT_ALLOWED");
        assert!(
            head.to_ascii_lowercase()
                .contains(&format!("allow: {}", allow.to_ascii_lowercase())),
            "{head}"
        );
    }
}

#[test]
fn oversize_bodies_get_413() {
    let f = start();
    let big = json!({"tool": "list_rooms", "arguments": {"pad": "x".repeat(8000)}}).to_string();
    let (status, _, body) = send(f.server.addr(), "POST", "/tools/call", &[], big.as_bytes());
    assert_eq!((status, error_code(&body)), (413, "PAYLOAD_TOO_LARGE"));
    let (status, _, body) = send(
        f.server.addr(),
        "POST",
        "/api/devices/control",
        &[],
        big.as_bytes(),
    );
    assert_eq!((status, error_code(&body)), (413, "PAYLOAD_TOO_LARGE"));
}

#[test]
fn host_and_origin_are_checked() {
    let f = start();
    let addr = f.server.addr();
    let (status, _, body) = send(
        addr,
        "GET",
        "/tools",
        &["Origin: http://evil.example.com"],
        b"",
    );
    assert_eq!((status, error_code(&body)), (403, "FORBIDDEN"));
    let (status, _, _) = send(
        addr,
        "GET",
        "/tools",
        &[&format!("Origin: http://127.0.0.1:{}", addr.port())],
        b"",
    );
    assert_eq!(status, 200);
    // The router's Host check (DNS-rebinding protection) covers the REST routes too.
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(
        b"GET /api/devices HTTP/1.1\r\nHost: evil.example.com\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    assert!(raw.starts_with("HTTP/1.1 403"), "{raw}");
}
