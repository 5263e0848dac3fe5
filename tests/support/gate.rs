//! A key record builder and a one-shot raw HTTP request on a fresh loopback connection.

/// An active key record with no expiry, whitelist, devices or scope, named "{role} key".
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
        model_confirms: false,
        open_doors: false,
        cameras: false,
        grant: None,
        profile: None,
        usage: home_mcp::auth::Usage::default(),
    }
}

/// One request with `headers` (full `Name: value` lines) and `body` on a fresh connection
/// (`Connection: close`); returns (status, lower-case head, body text). See
/// [`super::net::request`].
pub fn send_raw<H: AsRef<str>>(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[H],
    body: &str,
) -> (u16, String, String) {
    let r = super::net::request(addr, method, path, headers, body);
    (r.status, r.head, r.body)
}
