//! An MCP client over Streamable HTTP, as real clients talk to the server: `initialize`, the
//! session header, JSON or SSE answers, `tools/call` with the result envelope unpacked.

use std::net::SocketAddr;

use serde_json::{json, Value};

use super::net::{request, Reply};

/// One MCP session on `/mcp`.
pub struct McpHttp {
    pub addr: SocketAddr,
    /// `X-API-Key` sent with every request, if any.
    pub key: Option<String>,
    /// Send [`McpHttp::key`] as `Authorization: Bearer` instead (an OAuth client's way).
    pub bearer: bool,
    pub session: Option<String>,
    /// The protocol version negotiated at `initialize`, sent as `MCP-Protocol-Version`.
    pub version: String,
    next_id: u64,
}

impl McpHttp {
    /// Opens a session (`initialize` with protocol version 2025-06-18 and no client
    /// capabilities, then `notifications/initialized`); fails the test when the server
    /// refuses.
    pub fn connect(addr: SocketAddr, key: Option<&str>) -> McpHttp {
        McpHttp::connect_with(addr, key, "2025-06-18", json!({}))
    }

    /// [`McpHttp::connect`] with `token` as `Authorization: Bearer` on every request.
    pub fn connect_bearer(addr: SocketAddr, token: &str) -> McpHttp {
        McpHttp::open(addr, Some(token), true, "2025-06-18", json!({}))
    }

    /// [`McpHttp::connect`] with another protocol `version` and client `capabilities` (e.g.
    /// `{"elicitation": {}}`).
    pub fn connect_with(
        addr: SocketAddr,
        key: Option<&str>,
        version: &str,
        capabilities: Value,
    ) -> McpHttp {
        McpHttp::open(addr, key, false, version, capabilities)
    }

    fn open(
        addr: SocketAddr,
        key: Option<&str>,
        bearer: bool,
        version: &str,
        capabilities: Value,
    ) -> McpHttp {
        let mut c = McpHttp {
            addr,
            key: key.map(str::to_string),
            bearer,
            session: None,
            version: version.to_string(),
            next_id: 1,
        };
        let r = c.post(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": capabilities,
            "clientInfo": {"name": "home-mcp tests", "version": "1"}}}),
        );
        assert_eq!(r.status, 200, "initialize: {r:?}");
        c.session = Some(
            r.header("mcp-session-id")
                .expect("an Mcp-Session-Id on initialize")
                .to_string(),
        );
        let n = c.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!(n.status, 202, "notifications/initialized: {n:?}");
        c
    }

    /// POSTs one JSON-RPC message with the session and key headers; the raw reply.
    pub fn post(&self, message: &Value) -> Reply {
        let mut headers = vec![
            "Content-Type: application/json".to_string(),
            "Accept: application/json, text/event-stream".to_string(),
            format!("MCP-Protocol-Version: {}", self.version),
        ];
        match &self.key {
            Some(k) if self.bearer => headers.push(format!("Authorization: Bearer {k}")),
            Some(k) => headers.push(format!("X-API-Key: {k}")),
            None => {}
        }
        if let Some(s) = &self.session {
            headers.push(format!("Mcp-Session-Id: {s}"));
        }
        request(self.addr, "POST", "/mcp", &headers, &message.to_string())
    }

    /// A request and its JSON-RPC answer (from a JSON body, or the answer event of an SSE
    /// body).
    pub fn rpc(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let r = self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        assert_eq!(r.status, 200, "{method}: {r:?}");
        answer_of(&r, id)
    }

    /// `tools/call` that may be refused at the HTTP level (a key's role, a rate limit): the
    /// HTTP status and the JSON-RPC answer (or the error body).
    pub fn try_call(&mut self, tool: &str, arguments: Value) -> (u16, Value) {
        let id = self.next_id;
        self.next_id += 1;
        let r = self.post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}));
        let body = if r.status == 200 {
            answer_of(&r, id)
        } else {
            serde_json::from_str(&r.body).unwrap_or(Value::String(r.body.clone()))
        };
        (r.status, body)
    }

    /// `tools/call`; returns the `result` (with `isError`), failing on a JSON-RPC error.
    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let v = self.rpc("tools/call", json!({"name": tool, "arguments": arguments}));
        assert!(v.get("error").is_none(), "{tool}: JSON-RPC error {v}");
        v["result"].clone()
    }

    /// `tools/call` that must succeed; the envelope's `data` (from `structuredContent`).
    pub fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        let r = self.call(tool, arguments);
        assert_ne!(r["isError"], true, "{tool} failed: {r}");
        let s = &r["structuredContent"];
        assert_eq!(s["status"], "success", "{tool}: {r}");
        s["data"].clone()
    }
}

/// The JSON-RPC answer with `id` in a reply: the JSON body itself, or the `data:` of the SSE
/// event that carries it.
pub fn answer_of(r: &Reply, id: u64) -> Value {
    if r.header("content-type")
        .is_some_and(|c| c.starts_with("text/event-stream"))
    {
        for line in r.body.lines() {
            if let Some(data) = line.strip_prefix("data:").map(str::trim) {
                if data.is_empty() {
                    continue; // the priming event
                }
                let v: Value = serde_json::from_str(data)
                    .unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {data:?}"));
                if v["id"] == id {
                    return v;
                }
            }
        }
        panic!("no answer with id {id} in the stream: {}", r.body);
    }
    r.json()
}

/// One MCP session over stdio with `home-mcp stdio` (the real binary, a local client's way):
/// newline-delimited JSON-RPC on the child's stdin/stdout. Killed when dropped.
pub struct McpStdio {
    /// Held until the session ends: the process, killed on drop.
    _child: super::process::Kill,
    stdin: std::process::ChildStdin,
    lines: crossbeam_channel::Receiver<String>,
    next_id: u64,
}

impl McpStdio {
    /// Starts `home-mcp stdio` with `args` (e.g. `["--demo"]`) and `env`, and initializes
    /// the session (protocol version 2025-06-18).
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> McpStdio {
        let mut c = McpStdio::spawn(args, env);
        let init = c.rpc(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "home-mcp tests", "version": "1"}}),
        );
        assert!(init.get("result").is_some(), "initialize: {init}");
        c.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        c
    }

    /// Starts `home-mcp stdio` with `args` and `env` without initializing (a 2026-07-28
    /// client sends every request with its `_meta`, see [`modern_meta`]).
    pub fn spawn(args: &[&str], env: &[(&str, &str)]) -> McpStdio {
        use std::io::BufRead;
        use std::process::Stdio;
        let mut cmd = super::process::bin();
        cmd.arg("stdio")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start home-mcp stdio");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        McpStdio {
            _child: super::process::Kill(child),
            stdin,
            lines,
            next_id: 1,
        }
    }

    /// Writes one message line.
    pub fn send(&mut self, message: &Value) {
        use std::io::Write;
        writeln!(self.stdin, "{message}").expect("write to home-mcp stdio");
        self.stdin.flush().expect("flush");
    }

    /// Writes `line` exactly as given (a message whose text matters, e.g. an id no `Value`
    /// holds exactly) and returns the next line that is not a notification, as sent;
    /// fails when none comes within [`super::wait::PATIENCE`].
    pub fn exchange_raw(&mut self, line: &str) -> String {
        use std::io::Write;
        writeln!(self.stdin, "{line}").expect("write to home-mcp stdio");
        self.stdin.flush().expect("flush");
        super::wait::recv_matching(&self.lines, &format!("the answer to {line}"), |l| {
            !serde_json::from_str::<Value>(l).is_ok_and(|v| v.get("method").is_some())
        })
    }

    /// A request and its answer (notifications before it are skipped); fails when none
    /// comes within [`super::wait::PATIENCE`].
    pub fn rpc(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let line = super::wait::recv_matching(&self.lines, &format!("answer to {method}"), |l| {
            serde_json::from_str::<Value>(l).is_ok_and(|v| v["id"] == id)
        });
        serde_json::from_str(&line).unwrap()
    }

    /// The next message line `want` accepts (others are skipped), within
    /// [`super::wait::PATIENCE`].
    pub fn next_matching(&self, what: &str, mut want: impl FnMut(&Value) -> bool) -> Value {
        let line = super::wait::recv_matching(&self.lines, what, |l| {
            serde_json::from_str::<Value>(l).is_ok_and(|v| want(&v))
        });
        serde_json::from_str(&line).unwrap()
    }

    /// `tools/call` that must succeed; the envelope's `data`.
    pub fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        let v = self.rpc("tools/call", json!({"name": tool, "arguments": arguments}));
        let r = &v["result"];
        assert_ne!(r["isError"], true, "{tool} failed: {v}");
        assert_eq!(r["structuredContent"]["status"], "success", "{tool}: {v}");
        r["structuredContent"]["data"].clone()
    }
}

/// The `_meta` of a 2026-07-28 request: protocol version, (empty) client capabilities and the
/// client's identity.
pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "home-mcp tests", "version": "1"},
    })
}

/// `params` with [`modern_meta`] added as `_meta`.
pub fn with_modern_meta(params: Value) -> Value {
    let mut params = if params.is_object() {
        params
    } else {
        json!({})
    };
    params["_meta"] = modern_meta();
    params
}

/// A 2026-07-28 client over Streamable HTTP: no session, every POST with the standard
/// headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) and `_meta`.
pub struct McpModern {
    pub addr: SocketAddr,
    next_id: u64,
}

impl McpModern {
    /// A client of the server at `addr`.
    pub fn new(addr: SocketAddr) -> McpModern {
        McpModern { addr, next_id: 1 }
    }

    /// The standard headers of a request for `method` with `params`.
    pub fn headers(method: &str, params: &Value) -> Vec<String> {
        let mut h = vec![
            "Content-Type: application/json".to_string(),
            "Accept: application/json, text/event-stream".to_string(),
            "MCP-Protocol-Version: 2026-07-28".to_string(),
            format!("Mcp-Method: {method}"),
        ];
        let name = match method {
            "tools/call" | "prompts/get" => params["name"].as_str(),
            "resources/read" => params["uri"].as_str(),
            _ => None,
        };
        if let Some(name) = name {
            h.push(format!("Mcp-Name: {name}"));
        }
        h
    }

    /// POSTs `body` with `headers` as they are.
    pub fn raw(&self, headers: &[String], body: &Value) -> Reply {
        super::net::request(self.addr, "POST", "/mcp", headers, &body.to_string())
    }

    /// A request for `method` with `params` (to which `_meta` is added) and the standard
    /// headers; the whole reply.
    pub fn post(&mut self, method: &str, params: Value) -> Reply {
        let id = self.next_id;
        self.next_id += 1;
        let params = with_modern_meta(params);
        let headers = Self::headers(method, &params);
        self.raw(
            &headers,
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
    }

    /// [`McpModern::post`] that must answer 200 with a result; the result.
    pub fn result(&mut self, method: &str, params: Value) -> Value {
        let r = self.post(method, params);
        assert_eq!(r.status, 200, "{method}: {r:?}");
        assert!(
            r.header("Mcp-Session-Id").is_none(),
            "{method} minted a session: {r:?}"
        );
        let v = r.json();
        assert!(v.get("result").is_some(), "{method}: {v}");
        v["result"].clone()
    }
}
