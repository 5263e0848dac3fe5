//! Static files embedded in the binary (`include_str!`), served with strict browser headers.
//!
//! A page is a table of [`Asset`]s (path, Content-Type, bytes); [`ADMIN`] is the admin key
//! page (`GET /admin/keys` and its script and style under `/admin/assets/`). The files hold no
//! data: the page fetches everything from the admin API with the key the admin types in, so
//! the router serves them without a key (but only to `[auth] admin_networks`, see
//! the router's `authenticate`).
//!
//! Every answer (200, 304, 405) carries [`SECURITY_HEADERS`]: a Content-Security-Policy that
//! allows only this origin's scripts, styles and API (no inline code, no third-party assets,
//! no framing), `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer` and
//! `X-Frame-Options: DENY`. Files are revalidated on each load (`Cache-Control: no-cache`)
//! with a strong `ETag` (a hash of the bytes); a matching `If-None-Match` gets 304.
//!
//! | condition | status |
//! |---|---|
//! | `GET`/`HEAD` | 200 (or 304) |
//! | other methods | 405 `METHOD_NOT_ALLOWED` + `Allow: GET, HEAD` |

use super::Answer;

/// One embedded file.
#[derive(Debug, Clone, Copy)]
pub struct Asset {
    /// The exact request path (no query).
    pub path: &'static str,
    /// The `Content-Type` header.
    pub content_type: &'static str,
    /// The file.
    pub body: &'static str,
}

/// The admin key page: `/admin/keys`, `/admin/assets/keys.js`, `/admin/assets/keys.css`.
pub const ADMIN: &[Asset] = &[
    Asset {
        path: "/admin/keys",
        content_type: "text/html; charset=utf-8",
        body: include_str!("../../assets/admin/keys.html"),
    },
    Asset {
        path: "/admin/assets/keys.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../../assets/admin/keys.js"),
    },
    Asset {
        path: "/admin/assets/keys.css",
        content_type: "text/css; charset=utf-8",
        body: include_str!("../../assets/admin/keys.css"),
    },
];

/// Headers sent with every asset answer.
pub const SECURITY_HEADERS: [(&str, &str); 4] = [
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
         img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
];

/// The asset of `table` served at exactly `path`.
pub fn find(table: &'static [Asset], path: &str) -> Option<&'static Asset> {
    table.iter().find(|a| a.path == path)
}

/// The strong ETag of `body`: `"` + 16 hex digits of its 64-bit FNV-1a hash + `"`.
pub fn etag(body: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in body.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("\"{h:016x}\"")
}

/// The answer to `method` on `asset`; `if_none_match` is the request's header of that name.
pub(crate) fn serve(
    asset: &Asset,
    method: &tiny_http::Method,
    if_none_match: Option<&str>,
) -> Answer {
    let answer = match method {
        tiny_http::Method::Get | tiny_http::Method::Head => {
            let tag = etag(asset.body);
            let fresh = if_none_match
                .is_some_and(|v| v.split(',').any(|t| t.trim() == tag || t.trim() == "*"));
            let mut a = if fresh {
                Answer::empty(304)
            } else {
                Answer::with_body(200, asset.content_type, asset.body.as_bytes().to_vec())
            };
            a = a.with_header("ETag", tag);
            a.with_header("Cache-Control", "no-cache")
        }
        _ => super::method_not_allowed("GET, HEAD"),
    };
    SECURITY_HEADERS
        .iter()
        .fold(answer, |a, (name, value)| a.with_header(name, *value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_and_etag() {
        assert!(find(ADMIN, "/admin/keys").is_some());
        assert!(find(ADMIN, "/admin/assets/nope.js").is_none());
        assert_eq!(etag("a"), etag("a"));
        assert_ne!(etag("a"), etag("b"));
        let a = find(ADMIN, "/admin/assets/keys.css").unwrap();
        let ok = serve(a, &tiny_http::Method::Get, None);
        assert_eq!(ok.status, 200);
        let tag = etag(a.body);
        let not_modified = serve(a, &tiny_http::Method::Get, Some(&tag));
        assert_eq!(not_modified.status, 304);
        assert!(not_modified.body.is_empty());
        let post = serve(a, &tiny_http::Method::Post, None);
        assert_eq!(post.status, 405);
        assert!(post.headers.iter().any(|(n, _)| *n == "X-Frame-Options"));
    }
}
