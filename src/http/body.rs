//! Request bodies: every body the server reads (MCP and legacy `/message`, REST, admin,
//! OAuth, the password page, and the ids of a refused MCP request) is read here and nowhere
//! else, under a byte limit, and JSON is parsed here ([`json`]) or by the JSON-RPC framing
//! from the bytes read here ([`read`]).
//!
//! tiny_http's connection thread has already buffered a body within
//! [`HttpConfig::max_body_bytes`](super::HttpConfig::max_body_bytes) before a worker sees it
//! (a larger declared one is answered 413 unread), so reading costs a copy, never a wait on
//! the client; [`read`] still holds at most `limit + 1` bytes, for bodies of unknown length
//! and the routes with a lower limit of their own (the OAuth and password forms).
//!
//! Each route turns a [`BodyError`] into its own answer: a JSON-RPC error on the MCP routes,
//! the spec's error object (§7.1) on the REST, admin and password page routes, an OAuth error
//! on the OAuth routes.

use std::io::Read;

use serde_json::Value;

/// Why a body could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BodyError {
    /// Longer than `limit` bytes (413).
    TooLarge { limit: usize },
    /// The connection failed while the body was read.
    Unreadable(String),
    /// Not UTF-8 (a form or text body).
    NotText,
    /// Not JSON (a JSON body), with serde's reason.
    NotJson(String),
    /// JSON that nests too deep or holds too many values ([`crate::json::REQUEST`]).
    TooComplex(crate::json::Exceeded),
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::TooLarge { limit } => {
                write!(f, "request body exceeds the limit of {limit} bytes")
            }
            BodyError::Unreadable(e) => write!(f, "could not read the request body: {e}"),
            BodyError::NotText => f.write_str("the body is not UTF-8"),
            BodyError::NotJson(e) => write!(f, "the body is not valid JSON: {e}"),
            BodyError::TooComplex(e) => write!(f, "{e}"),
        }
    }
}

/// The body's bytes, at most `limit` of them.
pub(crate) fn read(request: &mut tiny_http::Request, limit: usize) -> Result<Vec<u8>, BodyError> {
    if request.body_length().is_some_and(|n| n > limit) {
        return Err(BodyError::TooLarge { limit });
    }
    let mut body = Vec::with_capacity(request.body_length().unwrap_or(0).min(limit));
    match request
        .as_reader()
        .take(limit as u64 + 1)
        .read_to_end(&mut body)
    {
        Ok(_) if body.len() > limit => Err(BodyError::TooLarge { limit }),
        Ok(_) => Ok(body),
        Err(e) => {
            log::debug!("reading request body failed: {e}");
            Err(BodyError::Unreadable(e.to_string()))
        }
    }
}

/// The body as text (UTF-8), at most `limit` bytes.
pub(crate) fn text(request: &mut tiny_http::Request, limit: usize) -> Result<String, BodyError> {
    String::from_utf8(read(request, limit)?).map_err(|_| BodyError::NotText)
}

/// The body as one JSON value, at most `limit` bytes and within [`crate::json::REQUEST`]
/// (checked before it is parsed).
pub(crate) fn json(request: &mut tiny_http::Request, limit: usize) -> Result<Value, BodyError> {
    let body = read(request, limit)?;
    crate::json::check(&body, crate::json::REQUEST).map_err(BodyError::TooComplex)?;
    serde_json::from_slice(&body).map_err(|e| BodyError::NotJson(e.to_string()))
}
