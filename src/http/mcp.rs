//! `/mcp`: the Streamable HTTP transport (MCP 2025-03-26 to 2025-11-25).
//!
//! Checks, in order, each failing with a JSON-RPC error body (`id: null` unless the request's
//! id is known):
//! 1. `Origin`, if present, must be loopback, match the request's Host, or be listed in
//!    [`HttpConfig::allowed_origins`](super::HttpConfig::allowed_origins): else **403**.
//! 2. Method: `POST` and `DELETE`; anything else (including `GET`, whose server-to-client
//!    stream is not offered yet) **405** with `Allow: POST, DELETE`.
//! 3. `DELETE` needs `Mcp-Session-Id` (**400** without): **200** when it ended a session,
//!    **404** for an unknown one.
//! 4. `POST`: `Accept` picks the answer format: `application/json` gives one JSON body,
//!    `text/event-stream` an SSE body (`event: message`, `id:`, `data: <json>` per response,
//!    then the stream ends); when both are listed the first wins; missing, `*/*` or
//!    `application/*` give JSON; anything else **406**. `Content-Type` must be
//!    `application/json` (**415**). `MCP-Protocol-Version`, when present, must be a supported
//!    version (**400**); when missing the session's negotiated version applies. A known
//!    `Mcp-Session-Id` is required except for `initialize` (**400** when missing, **404** when
//!    unknown, expired or deleted). The body is read up to `max_body_bytes` (**413** beyond,
//!    never reading more than the limit plus one byte).
//! 5. The message goes to [`McpServer`](crate::mcp::McpServer). Notifications and client
//!    responses get **202** with no body; a parse error or an invalid message without id
//!    **400**; everything else **200**. A successful `initialize` without a session creates one
//!    and returns its id in `Mcp-Session-Id`.

use std::io::Read;

use super::{header, host_name, is_loopback_name, Answer, Ctx};
use crate::mcp::jsonrpc::{self, Incoming, Message, Response};
use crate::mcp::{ProtocolVersion, Reply, RpcError, SessionState};

/// Answer format chosen from `Accept`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Sse,
}

/// A JSON-RPC error body with `id: null` and the given HTTP status.
fn rpc_error(status: u16, code: i64, message: &str, details: impl Into<String>) -> Answer {
    let response = Response::error(
        None,
        RpcError {
            code,
            message: message.to_string(),
            details: Some(details.into()),
        },
    );
    Answer::json_text(status, response.to_json())
}

/// 403 with a JSON-RPC error body without id.
pub(crate) fn forbidden(details: &str) -> Answer {
    rpc_error(403, RpcError::INVALID_REQUEST, "Forbidden", details)
}

fn bad_request(details: impl Into<String>) -> Answer {
    rpc_error(400, RpcError::INVALID_REQUEST, "Bad Request", details)
}

fn session_not_found() -> Answer {
    rpc_error(
        404,
        RpcError::INVALID_REQUEST,
        "Session not found",
        "unknown, expired or deleted Mcp-Session-Id; initialize a new session",
    )
}

/// Handles one request to `/mcp`.
pub(crate) fn handle(ctx: &Ctx, request: &mut tiny_http::Request) -> Answer {
    if let Some(origin) = header(request, "Origin") {
        if !origin_allowed(ctx, origin, header(request, "Host")) {
            return forbidden(&format!("Origin {origin} is not allowed"));
        }
    }
    match request.method() {
        tiny_http::Method::Post => post(ctx, request),
        tiny_http::Method::Delete => delete(ctx, request),
        _ => rpc_error(
            405,
            RpcError::INVALID_REQUEST,
            "Method Not Allowed",
            "use POST for messages and DELETE to end a session",
        )
        .with_header("Allow", "POST, DELETE"),
    }
}

fn delete(ctx: &Ctx, request: &tiny_http::Request) -> Answer {
    match header(request, "Mcp-Session-Id") {
        None => bad_request("Mcp-Session-Id header is required"),
        Some(id) if ctx.mcp.sessions().remove(id.trim()) => Answer::empty(200),
        Some(_) => session_not_found(),
    }
}

fn post(ctx: &Ctx, request: &mut tiny_http::Request) -> Answer {
    let Some(format) = negotiate(header(request, "Accept")) else {
        return rpc_error(
            406,
            RpcError::INVALID_REQUEST,
            "Not Acceptable",
            "Accept must include application/json or text/event-stream",
        );
    };
    let content_type = header(request, "Content-Type").unwrap_or("");
    let media = content_type.split(';').next().unwrap_or("").trim();
    if !media.eq_ignore_ascii_case("application/json") {
        return rpc_error(
            415,
            RpcError::INVALID_REQUEST,
            "Unsupported Media Type",
            "Content-Type must be application/json",
        );
    }
    if let Some(v) = header(request, "MCP-Protocol-Version") {
        if ProtocolVersion::parse(v.trim()).is_none() {
            return bad_request(format!("unsupported MCP-Protocol-Version: {}", v.trim()));
        }
    }
    let session = match header(request, "Mcp-Session-Id") {
        Some(id) => match ctx.mcp.sessions().touch(id.trim(), "http") {
            Some(state) => Some(state),
            None => return session_not_found(),
        },
        None => None,
    };

    let limit = ctx.config.max_body_bytes;
    let body = match read_body(request, limit) {
        Ok(body) => body,
        Err(answer) => return answer,
    };
    let incoming = jsonrpc::parse(&body);

    let mut state = match session {
        Some(state) => state,
        None => {
            if !is_initialize(&incoming) {
                return bad_request("Mcp-Session-Id header is required (except for initialize)");
            }
            SessionState::new("http")
        }
    };
    let new_session = state.id.is_none();
    let reply = ctx.mcp.handle_incoming(&mut state, incoming);

    let mut session_header = None;
    if new_session {
        if let Some(version) = state.version {
            match ctx.mcp.sessions().create(version) {
                Ok(id) => {
                    state.id = Some(id.clone());
                    session_header = Some(id);
                }
                Err(e) => {
                    log::error!("{e}");
                    return rpc_error(
                        500,
                        RpcError::INTERNAL_ERROR,
                        "Internal error",
                        e.to_string(),
                    );
                }
            }
        }
    }
    ctx.mcp.sessions().update(&state);

    let status = match &reply {
        Reply::Empty => return Answer::empty(202),
        Reply::Single(r) if r.id.is_none() => 400,
        _ => 200,
    };
    let mut answer = match format {
        Format::Json => Answer::json_text(status, reply.to_json().unwrap_or_default()),
        Format::Sse => sse(&reply, status),
    };
    if let Some(id) = session_header {
        answer = answer.with_header("Mcp-Session-Id", id);
    }
    answer
}

/// True when the frame is a single `initialize` request.
fn is_initialize(incoming: &Result<Incoming, Response>) -> bool {
    matches!(incoming, Ok(Incoming::Single(Ok(Message::Request(r)))) if r.method == "initialize")
}

/// 413 naming the limit.
pub(crate) fn too_large(limit: usize) -> Answer {
    rpc_error(
        413,
        RpcError::INVALID_REQUEST,
        "Payload Too Large",
        format!("request body exceeds the limit of {limit} bytes"),
    )
}

/// Reads the body, holding at most `limit + 1` bytes.
fn read_body(request: &mut tiny_http::Request, limit: usize) -> Result<Vec<u8>, Answer> {
    let too_large = || too_large(limit);
    if request.body_length().is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    let mut body = Vec::with_capacity(request.body_length().unwrap_or(0).min(limit));
    match request
        .as_reader()
        .take(limit as u64 + 1)
        .read_to_end(&mut body)
    {
        Ok(_) if body.len() > limit => Err(too_large()),
        Ok(_) => Ok(body),
        Err(e) => {
            log::debug!("reading request body failed: {e}");
            Err(bad_request(format!("could not read the request body: {e}")))
        }
    }
}

/// Picks the answer format from `Accept` (first listed wins; parameters and q-values ignored).
fn negotiate(accept: Option<&str>) -> Option<Format> {
    let Some(accept) = accept else {
        return Some(Format::Json);
    };
    if accept.trim().is_empty() {
        return Some(Format::Json);
    }
    accept.split(',').find_map(|item| {
        let media = item
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match media.as_str() {
            "application/json" | "application/*" | "*/*" => Some(Format::Json),
            "text/event-stream" => Some(Format::Sse),
            _ => None,
        }
    })
}

/// One SSE event per response, then the stream ends (the body has a Content-Length).
fn sse(reply: &Reply, status: u16) -> Answer {
    use std::sync::atomic::{AtomicU64, Ordering};
    static EVENT_ID: AtomicU64 = AtomicU64::new(1);
    let responses: Vec<&Response> = match reply {
        Reply::Empty => Vec::new(),
        Reply::Single(r) => vec![r],
        Reply::Batch(rs) => rs.iter().collect(),
    };
    let mut body = String::new();
    for r in responses {
        let id = EVENT_ID.fetch_add(1, Ordering::Relaxed);
        body.push_str(&format!(
            "event: message\nid: {id}\ndata: {}\n\n",
            r.to_json()
        ));
    }
    Answer {
        status,
        content_type: Some("text/event-stream"),
        headers: vec![("Cache-Control", "no-cache".to_string())],
        body: body.into_bytes(),
    }
}

/// Origin validation: loopback, same host as the request, or configured.
pub(crate) fn origin_allowed(ctx: &Ctx, origin: &str, host: Option<&str>) -> bool {
    let origin = origin.trim().trim_end_matches('/');
    let authority = origin.split_once("://").map(|(_, rest)| rest).unwrap_or("");
    let name = host_name(authority);
    if name.is_empty() {
        return ctx
            .config
            .allowed_origins
            .iter()
            .any(|a| a.eq_ignore_ascii_case(origin));
    }
    if is_loopback_name(name) {
        return true;
    }
    if host.is_some_and(|h| host_name(h.trim()).eq_ignore_ascii_case(name)) {
        return true;
    }
    ctx.config.allowed_origins.iter().any(|a| {
        let a = a.trim().trim_end_matches('/');
        a.eq_ignore_ascii_case(origin) || a.eq_ignore_ascii_case(name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_negotiation() {
        assert_eq!(negotiate(None), Some(Format::Json));
        assert_eq!(negotiate(Some("*/*")), Some(Format::Json));
        assert_eq!(negotiate(Some("application/json")), Some(Format::Json));
        assert_eq!(negotiate(Some("text/event-stream")), Some(Format::Sse));
        assert_eq!(
            negotiate(Some("text/event-stream, application/json")),
            Some(Format::Sse)
        );
        assert_eq!(
            negotiate(Some("application/json;q=0.9, text/event-stream")),
            Some(Format::Json)
        );
        assert_eq!(negotiate(Some("text/html")), None);
    }
}
