//! Loopback sockets for tests: free and closed ports, and a raw HTTP/1.1 client that sends
//! exactly the bytes a test asks for (the way a hostile or quirky client would).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use serde_json::Value;

/// A port nothing listens on right now (bound and released; another process may take it,
/// so use it at once).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    l.local_addr().unwrap().port()
}

/// A loopback port where no server listens: connections are refused (for "Miniserver
/// unreachable" cases).
pub fn closed_port() -> u16 {
    free_port()
}

/// One HTTP answer read to its end.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    /// The head with lower-case header names and values as sent, lines joined by `\r\n`.
    pub head: String,
    pub body: String,
}

impl Reply {
    /// The first value of header `name` (case-insensitive), trimmed.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.head.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            (n.trim().to_ascii_lowercase() == name).then(|| v.trim())
        })
    }

    /// The body as JSON; fails the test when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.body))
    }
}

/// Sends one request on a fresh connection (`Connection: close`, `Content-Length` of
/// `body`, plus the full `Name: value` lines in `headers`) and reads the answer to EOF
/// (30 s read timeout). Panics when no complete answer comes.
pub fn request<H: AsRef<str>>(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[H],
    body: &str,
) -> Reply {
    try_request(addr, method, path, headers, body)
        .unwrap_or_else(|e| panic!("{method} {path} on {addr}: {e}"))
}

/// [`request`] that returns connection errors and incomplete answers instead of failing.
pub fn try_request<H: AsRef<str>>(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[H],
    body: &str,
) -> Result<Reply, String> {
    let mut s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| e.to_string())?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nContent-Length: {}\r\n",
        addr.port(),
        body.len()
    );
    for h in headers {
        head.push_str(h.as_ref());
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
    s.write_all(body.as_bytes()).map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    parse_reply(&raw)
}

/// Splits a raw HTTP/1.1 answer into status, head (header names lower-cased, values as sent)
/// and body.
pub fn parse_reply(raw: &[u8]) -> Result<Reply, String> {
    let raw = String::from_utf8_lossy(raw).into_owned();
    let (head, body) = raw
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no complete answer: {raw:?}"))?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status line: {head:?}"))?;
    // Header names are case-insensitive (RFC 9110): lower-cased; values stay as sent.
    let head = head
        .split("\r\n")
        .enumerate()
        .map(|(i, line)| match line.split_once(':') {
            Some((name, value)) if i > 0 => format!("{}:{value}", name.to_ascii_lowercase()),
            _ => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\r\n");
    Ok(Reply {
        status,
        head,
        body: body.to_string(),
    })
}

/// [`request`] with the body as JSON: `(status, head as in [`Reply::head`], body)`, the body `null`
/// when empty and a JSON string of the text when it is not JSON.
pub fn request_json(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[&str],
    body: &str,
) -> (u16, String, Value) {
    let r = request(addr, method, path, headers, body);
    let body = if r.body.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&r.body).unwrap_or(Value::String(r.body))
    };
    (r.status, r.head, body)
}
