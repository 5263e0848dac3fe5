//! The legacy HTTP+SSE transport (2024-11-05) over real loopback sockets: `GET /sse`, the
//! `endpoint` event, `POST /message` answered on the stream, elicitation, and bad input.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use home_mcp::http::{HttpConfig, HttpServer};
use home_mcp::mcp::{
    CallToolResult, Content, Handler, Implementation, LogLevel, McpConfig, McpServer,
    RequestContext, ResourceContents, ResourceDescriptor, RpcError, ToolAnnotations,
    ToolDescriptor,
};
use serde_json::{json, Map, Value};

// ---------------------------------------------------------------- handler

struct TestHandler;

fn text(t: impl Into<String>) -> CallToolResult {
    CallToolResult {
        content: vec![Content::Text { text: t.into() }],
        structured_content: None,
        is_error: false,
    }
}

impl Handler for TestHandler {
    fn server_info(&self) -> Implementation {
        Implementation {
            name: "streams".into(),
            version: "0".into(),
            title: None,
        }
    }
    fn instructions(&self) -> String {
        String::new()
    }
    fn list_tools(&self) -> Vec<ToolDescriptor> {
        ["progress", "ask", "echo"]
            .iter()
            .map(|n| ToolDescriptor {
                name: n.to_string(),
                title: None,
                description: n.to_string(),
                input_schema: json!({"type": "object"}),
                output_schema: None,
                annotations: ToolAnnotations::default(),
            })
            .collect()
    }
    fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        ctx: &RequestContext,
    ) -> Result<CallToolResult, RpcError> {
        match name {
            "progress" => {
                for i in 1..=3 {
                    ctx.progress(i as f64, Some(3.0), Some("step"));
                }
                ctx.log(LogLevel::Info, "test", json!("halfway"));
                Ok(text("done"))
            }
            "ask" => {
                if !ctx.can_elicit() {
                    return Ok(text("cannot elicit"));
                }
                let Some(peer) = &ctx.peer else {
                    return Ok(text("no peer"));
                };
                let answer = peer.0.request(
                    "elicitation/create",
                    json!({"message": "Name?", "requestedSchema": {"type": "object",
                        "properties": {"name": {"type": "string"}}}}),
                    Duration::from_secs(10),
                )?;
                Ok(text(format!(
                    "{}:{}",
                    answer["action"].as_str().unwrap_or("?"),
                    answer["content"]["name"].as_str().unwrap_or("?")
                )))
            }
            "echo" => Ok(text(Value::Object(arguments).to_string())),
            other => Err(RpcError::invalid_params(format!("Unknown tool: {other}"))),
        }
    }
    fn list_resources(&self) -> Vec<ResourceDescriptor> {
        vec![ResourceDescriptor {
            uri: "test://watched".into(),
            name: "watched".into(),
            title: None,
            description: None,
            mime_type: Some("text/plain".into()),
        }]
    }
    fn read_resource(
        &self,
        uri: &str,
        _ctx: &RequestContext,
    ) -> Result<Vec<ResourceContents>, RpcError> {
        if uri.starts_with("test://") {
            Ok(vec![ResourceContents::text(uri, "text/plain", "x")])
        } else {
            Err(RpcError {
                code: RpcError::RESOURCE_NOT_FOUND,
                message: "Resource not found".into(),
                details: None,
            })
        }
    }
}

// ---------------------------------------------------------------- harness

struct Server {
    http: HttpServer,
    mcp: Arc<McpServer>,
}

impl Server {
    fn addr(&self) -> SocketAddr {
        self.http.addr()
    }
    fn stop(self) {
        self.http.shutdown();
        self.http.join();
    }
}

fn start_with(f: impl FnOnce(&mut HttpConfig)) -> Server {
    let mcp = Arc::new(McpServer::new(Arc::new(TestHandler), McpConfig::default()));
    let mut config = HttpConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        workers: 2,
        idle_timeout: Duration::from_secs(5),
        keep_alive: Duration::from_millis(200),
        ..HttpConfig::default()
    };
    f(&mut config);
    let http = HttpServer::start(config, mcp.clone(), Arc::new(|| json!({"status": "ok"})))
        .expect("start");
    Server { http, mcp }
}

fn start() -> Server {
    start_with(|_| {})
}

/// One SSE event (or comment / retry field block).
#[derive(Debug, Default, Clone)]
struct Event {
    id: Option<String>,
    event: Option<String>,
    data: Option<String>,
    comment: bool,
    retry: Option<u64>,
}

impl Event {
    fn json(&self) -> Value {
        serde_json::from_str(self.data.as_deref().unwrap_or("null")).unwrap_or(Value::Null)
    }
}

/// A raw HTTP/1.1 exchange whose body is read incrementally (chunked or Content-Length).
struct Http {
    reader: BufReader<TcpStream>,
    status: u16,
    headers: Vec<(String, String)>,
    chunked: bool,
    remaining: Option<usize>,
    text: String,
    ended: bool,
}

fn send(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Http {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut reader = BufReader::new(s);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status: u16 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').unwrap();
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let get = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let chunked = get("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
    let remaining = get("content-length").map(|v| v.parse().unwrap());
    Http {
        reader,
        status,
        headers,
        chunked,
        remaining,
        text: String::new(),
        ended: false,
    }
}

impl Http {
    fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Reads more body; `false` at the end.
    fn fill(&mut self) -> bool {
        if self.ended {
            return false;
        }
        if self.chunked {
            let mut line = String::new();
            if self.reader.read_line(&mut line).unwrap_or(0) == 0 {
                self.ended = true;
                return false;
            }
            let size = usize::from_str_radix(line.trim(), 16).unwrap();
            if size == 0 {
                let mut crlf = String::new();
                let _ = self.reader.read_line(&mut crlf);
                self.ended = true;
                return false;
            }
            let mut buf = vec![0; size + 2];
            self.reader.read_exact(&mut buf).unwrap();
            self.text
                .push_str(std::str::from_utf8(&buf[..size]).unwrap());
            true
        } else {
            let n = self.remaining.unwrap_or(0);
            let mut buf = vec![0; n];
            self.reader.read_exact(&mut buf).unwrap();
            self.text.push_str(std::str::from_utf8(&buf).unwrap());
            self.ended = true;
            n > 0
        }
    }

    fn body(mut self) -> String {
        while self.fill() {}
        self.text
    }

    fn json(self) -> Value {
        serde_json::from_str(&self.body()).unwrap()
    }

    /// The next SSE block, or `None` at the end of the stream.
    fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(i) = self.text.find("\n\n") {
                let block: String = self.text.drain(..i + 2).collect();
                let mut e = Event::default();
                for line in block.lines() {
                    if let Some(c) = line.strip_prefix(':') {
                        let _ = c;
                        e.comment = true;
                    } else if let Some((k, v)) = line.split_once(':') {
                        let v = v.strip_prefix(' ').unwrap_or(v).to_string();
                        match k {
                            "id" => e.id = Some(v),
                            "event" => e.event = Some(v),
                            "data" => e.data = Some(v),
                            "retry" => e.retry = v.parse().ok(),
                            _ => {}
                        }
                    }
                }
                return Some(e);
            }
            if !self.fill() {
                return None;
            }
        }
    }

    /// The next event carrying data, skipping comments and `retry:` blocks.
    fn next_data(&mut self) -> Option<Event> {
        loop {
            let e = self.next()?;
            if e.data.as_deref().is_some_and(|d| !d.is_empty()) {
                return Some(e);
            }
        }
    }
}

const BOTH: &str = "application/json, text/event-stream";

fn post(addr: SocketAddr, session: Option<&str>, body: &Value) -> Http {
    let mut h = vec![("Content-Type", "application/json"), ("Accept", BOTH)];
    if let Some(s) = session {
        h.push(("Mcp-Session-Id", s));
    }
    send(addr, "POST", "/mcp", &h, body.to_string().as_bytes())
}

fn post_json(addr: SocketAddr, session: &str, body: &Value) -> Http {
    send(
        addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json"),
            ("Mcp-Session-Id", session),
        ],
        body.to_string().as_bytes(),
    )
}

fn initialize(addr: SocketAddr) -> String {
    let r = send(
        addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json"),
        ],
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "0"}}})
        .to_string()
        .as_bytes(),
    );
    assert_eq!(r.status, 200);
    let sid = r.header("mcp-session-id").unwrap().to_string();
    let _ = r.body();
    let r = post_json(
        addr,
        &sid,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(r.status, 202);
    sid
}

fn call(id: u64, name: &str, token: Option<&str>) -> Value {
    let mut params = json!({"name": name, "arguments": {}});
    if let Some(t) = token {
        params["_meta"] = json!({"progressToken": t});
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

fn open_get(addr: SocketAddr, sid: &str, last: Option<&str>) -> Http {
    let mut h = vec![("Accept", "text/event-stream"), ("Mcp-Session-Id", sid)];
    if let Some(l) = last {
        h.push(("Last-Event-ID", l));
    }
    send(addr, "GET", "/mcp", &h, b"")
}

/// Reads the `retry:` block and the priming event; returns the priming id.
fn expect_prelude(s: &mut Http) -> String {
    let retry = s.next().expect("retry");
    assert!(retry.retry.is_some(), "{retry:?}");
    let priming = s.next().expect("priming");
    assert_eq!(priming.data.as_deref(), Some(""), "{priming:?}");
    priming.id.expect("priming id")
}

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
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let r = message(
            addr,
            &endpoint,
            &json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}),
        );
        if r.status == 404 {
            break;
        }
        assert_eq!(r.status, 202);
        assert!(Instant::now() < deadline, "session outlived its stream");
        std::thread::sleep(Duration::from_millis(250));
    }
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
