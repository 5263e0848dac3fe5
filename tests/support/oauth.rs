//! A hand-made OAuth 2.1 client of home-mcp's authorization server, as an MCP client and the
//! owner's browser use it: dynamic registration, `/authorize` (the consent page read and its
//! form posted back as a browser would, hidden fields included), `/token`. PKCE values are
//! the RFC 7636 Appendix B example (an oracle independent of the server's code).

use std::collections::HashMap;
use std::net::SocketAddr;

use serde_json::{json, Value};

use super::net::{request, Reply};

/// RFC 7636 Appendix B: the verifier ...
pub const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
/// ... and its S256 challenge.
pub const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

/// The loopback redirect URI the test client registers (nothing listens there: the test
/// reads the `Location` of the redirect instead of following it).
pub const REDIRECT: &str = "http://127.0.0.1:45999/oauth/callback";

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Decodes `%XX` and `+`.
pub fn decode(s: &str) -> String {
    let s = s.replace('+', " ");
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `k=v&…`, percent-encoded.
pub fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The query parameters of a URL (last one wins).
pub fn query_of(url: &str) -> HashMap<String, String> {
    url.split_once('?')
        .map(|(_, q)| q)
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// The `name`/`value` pairs of the `<input type="hidden">` fields of an HTML page (as the
/// server writes them: `name` before `value`, values HTML-escaped).
pub fn hidden_fields(html: &str) -> Vec<(String, String)> {
    let unescape = |v: &str| {
        v.replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
    };
    html.split("<input type=\"hidden\"")
        .skip(1)
        .filter_map(|rest| {
            let tag = rest.split('>').next()?;
            let attr = |a: &str| {
                let start = tag.find(&format!("{a}=\""))? + a.len() + 2;
                let end = tag[start..].find('"')? + start;
                Some(unescape(&tag[start..end]))
            };
            Some((attr("name")?, attr("value")?))
        })
        .collect()
}

/// A POST with a form body.
pub fn post_form(addr: SocketAddr, path: &str, body: &str) -> Reply {
    request(
        addr,
        "POST",
        path,
        &["Content-Type: application/x-www-form-urlencoded"],
        body,
    )
}

/// `POST /register` with `metadata`; the reply.
pub fn register_raw(addr: SocketAddr, metadata: &Value) -> Reply {
    request(
        addr,
        "POST",
        "/register",
        &["Content-Type: application/json"],
        &metadata.to_string(),
    )
}

/// Registers a client named `name` with [`REDIRECT`]; its `client_id`.
pub fn register(addr: SocketAddr, name: &str) -> String {
    let r = register_raw(
        addr,
        &json!({"client_name": name, "redirect_uris": [REDIRECT],
                "grant_types": ["authorization_code", "refresh_token"],
                "token_endpoint_auth_method": "none"}),
    );
    assert_eq!(r.status, 201, "register: {r:?}");
    r.json()["client_id"]
        .as_str()
        .expect("a client_id")
        .to_string()
}

/// The `/authorize` query of `client_id` with [`CHALLENGE`] (S256), [`REDIRECT`] and `state`.
pub fn authorize_query(client_id: &str, state: &str) -> Vec<(&'static str, String)> {
    vec![
        ("response_type", "code".into()),
        ("client_id", client_id.into()),
        ("redirect_uri", REDIRECT.into()),
        ("code_challenge", CHALLENGE.into()),
        ("code_challenge_method", "S256".into()),
        ("state", state.into()),
    ]
}

/// `GET /authorize?query`.
pub fn authorize_get(addr: SocketAddr, query: &[(&str, String)]) -> Reply {
    let q: Vec<(&str, &str)> = query.iter().map(|(k, v)| (*k, v.as_str())).collect();
    request(
        addr,
        "GET",
        &format!("/authorize?{}", form(&q)),
        &[] as &[&str],
        "",
    )
}

/// Submits the consent page `page` as a browser would: its hidden fields plus `fields` (the
/// owner's input, e.g. `admin_key`, `role`, `days`, `room`, `decision`), with the `Origin` a
/// browser sends for a same-origin form. The reply (303 to the client, or the page again).
pub fn submit_consent(addr: SocketAddr, page: &str, fields: &[(&str, &str)]) -> Reply {
    let hidden = hidden_fields(page);
    assert!(
        hidden.iter().any(|(k, _)| k == "client_id"),
        "the consent page has the request's hidden fields: {page}"
    );
    let mut pairs: Vec<(&str, &str)> = hidden
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    pairs.extend_from_slice(fields);
    let origin = format!("Origin: http://127.0.0.1:{}", addr.port());
    request(
        addr,
        "POST",
        "/authorize",
        &[
            "Content-Type: application/x-www-form-urlencoded",
            origin.as_str(),
        ],
        &form(&pairs),
    )
}

/// The whole browser part for `client_id`: the consent page, approved with `admin_key` and
/// `fields`; the parameters of the redirect to [`REDIRECT`] (`code`, `state`, `iss`).
pub fn sign_in(
    addr: SocketAddr,
    client_id: &str,
    admin_key: &str,
    fields: &[(&str, &str)],
) -> HashMap<String, String> {
    let page = authorize_get(addr, &authorize_query(client_id, "st-1"));
    assert_eq!(page.status, 200, "consent page: {page:?}");
    let mut all = vec![("admin_key", admin_key), ("decision", "approve")];
    all.extend_from_slice(fields);
    let r = submit_consent(addr, &page.body, &all);
    assert_eq!(r.status, 303, "consent: {r:?}");
    let location = r.header("location").expect("a Location").to_string();
    assert!(location.starts_with(REDIRECT), "{location}");
    query_of(&location)
}

/// `POST /token` with `pairs`; (status, JSON body).
pub fn token(addr: SocketAddr, pairs: &[(&str, &str)]) -> (u16, Value) {
    let r = post_form(addr, "/token", &form(pairs));
    (r.status, r.json())
}

/// The authorization code grant of `code` for `client_id` with `verifier`.
pub fn exchange(addr: SocketAddr, client_id: &str, code: &str, verifier: &str) -> (u16, Value) {
    token(
        addr,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", client_id),
            ("redirect_uri", REDIRECT),
            ("code_verifier", verifier),
        ],
    )
}

/// The refresh token grant.
pub fn refresh(addr: SocketAddr, client_id: &str, refresh_token: &str) -> (u16, Value) {
    token(
        addr,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", client_id),
        ],
    )
}
