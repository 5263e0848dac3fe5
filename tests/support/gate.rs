//! A key record builder and a one-shot raw HTTP request on a fresh loopback connection.

/// An active key record with no expiry, whitelist, devices or scope, named "{role} key".
#[allow(dead_code)]
pub fn key(id: &str, role: home_mcp::auth::Role) -> home_mcp::auth::ApiKey {
    home_mcp::auth::ApiKey {
        id: id.into(),
        name: format!("{role} key"),
        role,
        created_by: "test".into(),
        created_at: "2026-01-01T00:00:00Z".into(),
        active: true,
        expires_at: None,
        ip_whitelist: vec![],
        allowed_devices: vec![],
        permissions: vec![],
        rooms: vec![],
        categories: vec![],
        usage: home_mcp::auth::Usage::default(),
    }
}

/// One request with `headers` (full `Name: value` lines) and `body` on a fresh connection
/// (`Connection: close`); returns (status, lower-case head, body text).
#[allow(dead_code)]
pub fn send_raw<H: AsRef<str>>(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[H],
    body: &str,
) -> (u16, String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
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
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a full response");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_ascii_lowercase(), body.to_string())
}
