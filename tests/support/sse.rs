//! For the stream tests (`streams`, `sse_legacy`, `mcp_http`): a server on the shared fake
//! handler, a raw HTTP/1.1 client that reads SSE incrementally, and helpers.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::Receiver;

use home_mcp::http::{HttpConfig, HttpServer};

use home_mcp::mcp::{McpConfig, McpServer};
use serde_json::{json, Value};

use super::fake_mcp::FakeHandler;
use super::PATIENCE;

// ---------------------------------------------------------------- harness

/// The HTTP transport on a loopback port over the [`FakeHandler`]; shut down when dropped
/// (or by [`Server::stop`]), also when a test fails: its threads then end on their own.
pub struct Server {
    pub http: HttpServer,
    pub mcp: Arc<McpServer>,
}

impl Server {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.http.addr()
    }

    /// Shuts the server down (the same as dropping it).
    pub fn stop(self) {}
}

impl Drop for Server {
    fn drop(&mut self) {
        self.http.shutdown();
    }
}

/// [`start`] with the configuration changed by `f` first. Defaults: a free loopback port, 2
/// workers, a 5 s idle timeout, a keep-alive comment every 200 ms on streams.
pub fn start_with(f: impl FnOnce(&mut HttpConfig)) -> Server {
    let mcp = Arc::new(McpServer::new(
        Arc::new(FakeHandler::default()),
        McpConfig::default(),
    ));
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

/// The fake MCP server with the defaults of [`start_with`].
pub fn start() -> Server {
    start_with(|_| {})
}

/// One SSE event (or comment / retry field block).
#[derive(Debug, Default, Clone)]
pub struct Event {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: Option<String>,
    pub comment: bool,
    pub retry: Option<u64>,
    /// Set only by [`Http::events`]: reading the stream failed (not an end of stream); the
    /// reason and what was read so far.
    pub error: Option<String>,
}

impl Event {
    /// The `data:` as JSON: `null` for a block without data (comments, `retry:`, the empty
    /// priming event); fails the test when the data is not JSON.
    pub fn json(&self) -> Value {
        match self.data.as_deref() {
            None | Some("") => Value::Null,
            Some(d) => serde_json::from_str(d)
                .unwrap_or_else(|e| panic!("event data is not JSON ({e}): {d:?}")),
        }
    }
}

/// A raw HTTP/1.1 exchange whose body is read incrementally (chunked or Content-Length).
pub struct Http {
    pub reader: BufReader<TcpStream>,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub chunked: bool,
    pub remaining: Option<usize>,
    pub text: String,
    pub ended: bool,
}

/// Sends one request on a fresh connection (no `Connection: close`: the caller reads the
/// answer incrementally) and reads the answer's head. Reads wait up to [`PATIENCE`].
pub fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Http {
    let s = TcpStream::connect_timeout(&addr, PATIENCE).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let lines: Vec<String> = headers.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    let req = super::net::request_head(
        method,
        path,
        addr,
        lines.iter().map(String::as_str),
        body.len(),
    );
    let mut reader = BufReader::new(s);
    reader.get_mut().write_all(req.as_bytes()).unwrap();
    reader.get_mut().write_all(body).unwrap();
    Http::read_head(reader)
}

impl Http {
    /// Reads the status line and headers of the next answer on `reader`; the body is then
    /// read with [`Http::fill`] / [`Http::next`] / [`Http::body`].
    pub fn read_head(mut reader: BufReader<TcpStream>) -> Http {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .unwrap_or_else(|| panic!("bad status line {line:?}"))
            .parse()
            .unwrap();
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

    /// Every further SSE block on a channel, read by a thread of its own, for
    /// [`super::recv_matching`]. The channel disconnects only when the stream really ended;
    /// when reading fails (a timeout, a broken chunk) the thread sends an [`Event`] with
    /// `error` set instead, again each second while anyone listens, so a failure is never
    /// mistaken for the end of the stream.
    pub fn events(mut self) -> Receiver<Event> {
        let (tx, rx) = crossbeam_channel::unbounded();
        std::thread::spawn(move || loop {
            let next = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.next()));
            match next {
                Ok(Some(e)) => {
                    if tx.send(e).is_err() {
                        return;
                    }
                }
                Ok(None) => return,
                Err(panic) => {
                    let why = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "a panic".into());
                    let e = Event {
                        error: Some(why),
                        ..Event::default()
                    };
                    while tx.send(e.clone()).is_ok() {
                        std::thread::sleep(Duration::from_secs(1));
                    }
                    return;
                }
            }
        });
        rx
    }

    /// The value of header `name` (case-insensitive), as sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Reads more body; `false` at the end (the last chunk, the declared length read, or the
    /// server closing the connection). A read that fails, e.g. nothing for [`PATIENCE`],
    /// fails the test with what was read so far: silence is not an end.
    pub fn fill(&mut self) -> bool {
        if self.ended {
            return false;
        }
        if self.chunked {
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Ok(0) => {
                    self.ended = true;
                    return false;
                }
                Ok(_) => {}
                Err(e) => panic!(
                    "reading the stream failed ({e}); read so far: {:?}",
                    self.text
                ),
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

    /// The whole body (read to its end, see [`Http::fill`]).
    pub fn body(mut self) -> String {
        while self.fill() {}
        self.text
    }

    /// The whole body as JSON; fails when it is not.
    pub fn json(self) -> Value {
        serde_json::from_str(&self.body()).unwrap()
    }

    /// The next SSE block, or `None` at the end of the stream.
    pub fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(i) = self.text.find("\n\n") {
                let block: String = self.text.drain(..i + 2).collect();
                let mut e = Event::default();
                for line in block.lines() {
                    if line.starts_with(':') {
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

    /// The JSON messages of a request's SSE stream in order, up to and including the first that
    /// carries an `id` (the JSON-RPC response, after any notifications of the request); fewer
    /// when the stream ends first. Each wait is bounded as in [`Http::next_data`].
    pub fn messages_until_response(&mut self) -> Vec<Value> {
        let mut seen = Vec::new();
        while let Some(e) = self.next_data() {
            let v = e.json();
            let last = v.get("id").is_some();
            seen.push(v);
            if last {
                break;
            }
        }
        seen
    }

    /// The next event carrying data, skipping comments and `retry:` blocks; `None` at the end
    /// of the stream. Fails when only keep-alive comments come for [`PATIENCE`] (so a missing
    /// event fails the test instead of hanging it).
    pub fn next_data(&mut self) -> Option<Event> {
        let deadline = super::wait::Deadline::new("an SSE event with data");
        loop {
            let e = self.next()?;
            if e.data.as_deref().is_some_and(|d| !d.is_empty()) {
                return Some(e);
            }
            deadline.check(&e);
        }
    }
}

/// The `Accept` of a Streamable HTTP client that takes JSON or a stream.
pub const BOTH: &str = "application/json, text/event-stream";

/// POSTs `body` to `/mcp` accepting JSON or SSE ([`BOTH`]), in `session` if given; the answer
/// with its head read.
pub fn post(addr: SocketAddr, session: Option<&str>, body: &Value) -> Http {
    let mut h = vec![("Content-Type", "application/json"), ("Accept", BOTH)];
    if let Some(s) = session {
        h.push(("Mcp-Session-Id", s));
    }
    send(addr, "POST", "/mcp", &h, body.to_string().as_bytes())
}

/// POSTs `body` to `/mcp` in `session`, accepting JSON only.
pub fn post_json(addr: SocketAddr, session: &str, body: &Value) -> Http {
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

/// Opens a session at protocol version 2025-11-25 with the elicitation capability (the
/// stream tests ask the client questions), sends `notifications/initialized`; the session id.
pub fn initialize(addr: SocketAddr) -> String {
    super::mcp::McpHttp::connect_with(addr, None, "2025-11-25", json!({"elicitation": {}}))
        .session
        .expect("a session id")
}

/// A `tools/call` request message for tool `name` without arguments, with a progress token
/// when given.
pub fn tool_call_message(id: u64, name: &str, token: Option<&str>) -> Value {
    let mut params = json!({"name": name, "arguments": {}});
    if let Some(t) = token {
        params["_meta"] = json!({"progressToken": t});
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// Opens the GET stream of session `sid`, resuming after event `last` when given.
pub fn open_get(addr: SocketAddr, sid: &str, last: Option<&str>) -> Http {
    let mut h = vec![("Accept", "text/event-stream"), ("Mcp-Session-Id", sid)];
    if let Some(l) = last {
        h.push(("Last-Event-ID", l));
    }
    send(addr, "GET", "/mcp", &h, b"")
}

/// Reads the `retry:` block and the priming event; returns the priming id.
pub fn expect_prelude(s: &mut Http) -> String {
    let retry = s.next().expect("retry");
    assert!(retry.retry.is_some(), "{retry:?}");
    let priming = s.next().expect("priming");
    assert_eq!(priming.data.as_deref(), Some(""), "{priming:?}");
    priming.id.expect("priming id")
}

/// Waits until the stream behind `events` ([`Http::events`]) ends; fails with the last
/// event it carried when it is still open after [`PATIENCE`].
pub fn wait_ended(events: &Receiver<Event>, what: &str) {
    let mut last = None;
    super::wait_until(what, PATIENCE, || loop {
        match events.try_recv() {
            Ok(Event {
                error: Some(why), ..
            }) => panic!("{what}: the stream failed: {why}"),
            Ok(e) => last = Some(e),
            Err(crossbeam_channel::TryRecvError::Empty) => return Err(last.clone()),
            Err(crossbeam_channel::TryRecvError::Disconnected) => return Ok(()),
        }
    });
}
