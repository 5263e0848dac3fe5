//! Loopback sockets for tests: free and closed ports, and a raw HTTP/1.1 client that sends
//! exactly the bytes a test asks for (the way a hostile or quirky client would).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};

use serde_json::Value;

use super::wait::PATIENCE;

/// A port nothing listens on right now (bound and released; another process may take it,
/// so use it at once).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    l.local_addr().unwrap().port()
}

/// A loopback port where no server listens, for "Miniserver unreachable" cases:
/// connections are refused. The port stays bound (without listening, and without
/// `SO_REUSEADDR`) for the rest of the test run, so no other test's server can take it and
/// answer in its place.
pub fn closed_port() -> u16 {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
        .expect("a TCP socket");
    socket
        .bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .expect("bind a loopback port");
    let port = socket
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .expect("a bound address")
        .port();
    // Held until the process ends (a few dozen descriptors in a whole run).
    std::mem::forget(socket);
    port
}

/// One HTTP answer read to its end.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    /// The head with lower-case header names and values as sent, lines joined by `\r\n`.
    pub head: String,
    /// The body, de-chunked.
    pub body: String,
    /// Whether the whole body arrived ([`parse_reply`]).
    pub complete: bool,
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
/// Connecting, writing and each read wait at most [`PATIENCE`]; a read error counts only
/// when the answer is not complete by then (a server may reset a connection right after a
/// complete answer, e.g. one refusing an unread body).
pub fn try_request<H: AsRef<str>>(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[H],
    body: &str,
) -> Result<Reply, String> {
    let mut s = TcpStream::connect_timeout(&addr, PATIENCE).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(PATIENCE))
        .map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(PATIENCE))
        .map_err(|e| e.to_string())?;
    let lines = std::iter::once("Connection: close").chain(headers.iter().map(AsRef::as_ref));
    let head = request_head(method, path, addr, lines, body.len());
    s.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
    s.write_all(body.as_bytes()).map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    let read = s.read_to_end(&mut raw);
    match (parse_reply(&raw), read) {
        (Ok(reply), _) if reply.complete => Ok(reply),
        (Ok(_), Ok(_)) => Err(format!(
            "the answer ended early: {:?}",
            String::from_utf8_lossy(&raw)
        )),
        (Ok(_) | Err(_), Err(e)) => Err(format!(
            "{e} after {} bytes: {:?}",
            raw.len(),
            String::from_utf8_lossy(&raw)
        )),
        (Err(e), Ok(_)) => Err(e),
    }
}

/// A request's head as this harness writes it: the request line, `Host: 127.0.0.1:{port}`,
/// `Content-Length: {body_len}`, then `headers` (full `Name: value` lines) as given, and the
/// empty line.
pub fn request_head<'a>(
    method: &str,
    path: &str,
    addr: SocketAddr,
    headers: impl IntoIterator<Item = &'a str>,
    body_len: usize,
) -> String {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: {body_len}\r\n",
        addr.port()
    );
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head
}

/// Splits a raw HTTP/1.1 answer into status, head (header names lower-cased, values as sent)
/// and body (de-chunked when `Transfer-Encoding: chunked`). `complete` says whether the body
/// is all there: the last chunk, or `Content-Length` bytes (an answer without either ends
/// with the connection, so it is complete).
pub fn parse_reply(raw: &[u8]) -> Result<Reply, String> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("no complete answer: {:?}", String::from_utf8_lossy(raw)))?;
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let body = &raw[end + 4..];
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
    let mut reply = Reply {
        status,
        head,
        body: String::new(),
        complete: true,
    };
    if reply
        .header("transfer-encoding")
        .is_some_and(|t| t.eq_ignore_ascii_case("chunked"))
    {
        let (payload, complete) = dechunk(body);
        reply.body = String::from_utf8_lossy(&payload).into_owned();
        reply.complete = complete;
    } else {
        reply.body = String::from_utf8_lossy(body).into_owned();
        if let Some(n) = reply
            .header("content-length")
            .and_then(|n| n.parse::<usize>().ok())
        {
            reply.complete = body.len() >= n;
        }
    }
    Ok(reply)
}

/// The payload of a chunked body, and whether its last (empty) chunk came.
fn dechunk(mut rest: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    loop {
        let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
            return (out, false);
        };
        let line = String::from_utf8_lossy(&rest[..eol]);
        let Ok(size) = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
        else {
            return (out, false);
        };
        if size == 0 {
            return (out, true);
        }
        let after = &rest[eol + 2..];
        if after.len() < size {
            out.extend_from_slice(after);
            return (out, false);
        }
        out.extend_from_slice(&after[..size]);
        rest = after[size..]
            .strip_prefix(b"\r\n")
            .unwrap_or(&after[size..]);
    }
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
