//! The legacy HTTP+SSE transport of MCP 2024-11-05, next to `/mcp` for older clients.
//!
//! * `GET /sse` opens a session and its stream (on a stream thread, see [`super::stream`]):
//!   the first event is `endpoint` with data `/message?sessionId=<id>`; every message for the
//!   client follows as an `event: message`; keep-alive comments when idle. Closing the stream
//!   ends the session. **503** when `max_streams` streams run; Origin as for `/mcp` (**403**).
//! * `POST /message?sessionId=<id>` takes one JSON-RPC message: **400** for a missing or
//!   malformed id (32 lowercase hex digits) or a body that is not JSON, **404** for an unknown
//!   session, **413** beyond `max_body_bytes` (checked first), else **202** `Accepted`; the
//!   answer goes on the stream. Refusals carry the ids of the body's requests as on `/mcp`
//!   ([`super::mcp::echo_ids`]). Requests that may wait on the client (`tools/call`,
//!   `prompts/get`, `resources/read`, `completion/complete`) run on their own thread, so the
//!   client's answer to an elicitation can arrive on the next POST.

use std::sync::Arc;

use super::mcp::{bad_request, pump, read_body, session_not_found, too_many_streams};
use super::stream::{run_detached, SseWriter};
use super::{Answer, Ctx, Handled};
use crate::mcp::jsonrpc::{self, Incoming, Message};
use crate::mcp::Outlet;

/// `GET /sse`.
pub(crate) fn open(
    ctx: &Arc<Ctx>,
    request: &tiny_http::Request,
    auth: Option<&crate::auth::gate::Principal>,
) -> Handled {
    if request.method() != &tiny_http::Method::Get {
        return super::method_not_allowed("GET").into();
    }
    let Some(permit) = ctx.pool.acquire() else {
        return too_many_streams().into();
    };
    let client = auth
        .and_then(|p| p.ip)
        .or(request.remote_addr().map(|a| a.ip()));
    let id = match ctx
        .mcp
        .sessions()
        .create_for(None, client, super::mcp::owner_of(auth))
    {
        Ok(id) => id,
        Err(e @ crate::mcp::SessionError::TooMany(_)) => {
            return super::mcp::too_many_sessions(&e).into();
        }
        Err(e) => {
            log::error!("{e}");
            return super::rest_error(500, "INTERNAL_ERROR", &e.to_string()).into();
        }
    };
    let outbox = ctx.outbox(&id);
    let attached = outbox.attach(None);
    let ctx = ctx.clone();
    Handled::Take(Box::new(move |request, headers| {
        run_detached("mcp-sse-stream", Some(permit), move || {
            match SseWriter::start(request, &headers) {
                Ok(mut w) => {
                    let endpoint = format!("/message?sessionId={id}");
                    if w.event(None, Some("endpoint"), &endpoint).is_ok() {
                        pump(
                            &ctx,
                            &outbox,
                            &attached.rx,
                            &mut w,
                            Some(&id),
                            Some("message"),
                        );
                    }
                    w.finish();
                }
                Err(e) => log::debug!("SSE stream could not start: {e}"),
            }
            outbox.detach(attached.conn);
            ctx.mcp.sessions().remove(&id);
            ctx.drop_outbox(&id);
            log::debug!("legacy SSE session {id} ended");
        });
    }))
}

/// The `sessionId` query parameter; `Err` when missing or malformed.
fn session_param(url: &str) -> Result<String, Answer> {
    let query = url.split_once('?').map(|(_, q)| q).unwrap_or("");
    let value = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == "sessionId")
        .map(|(_, v)| v);
    match value {
        None => Err(bad_request("sessionId query parameter is required")),
        Some(v) if v.len() == 32 && v.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) => {
            Ok(v.to_string())
        }
        Some(_) => Err(bad_request("malformed sessionId")),
    }
}

/// `POST /message?sessionId=...`.
pub(crate) fn message(
    ctx: &Arc<Ctx>,
    request: &mut tiny_http::Request,
    auth: Option<&crate::auth::gate::Principal>,
) -> Answer {
    if request.method() != &tiny_http::Method::Post {
        return super::method_not_allowed("POST");
    }
    let body = match read_body(request, ctx.config.max_body_bytes) {
        Ok(b) => b,
        Err(a) => return a,
    };
    let answer = message_inner(ctx, request, auth, &body);
    super::mcp::echo_ids(ctx, answer, &body)
}

/// `POST /message` once its `body` is read: the refusals answered here get the request ids
/// from [`message`].
fn message_inner(
    ctx: &Arc<Ctx>,
    request: &tiny_http::Request,
    auth: Option<&crate::auth::gate::Principal>,
    body: &[u8],
) -> Answer {
    let id = match session_param(request.url()) {
        Ok(id) => id,
        Err(a) => return a,
    };
    let Some(mut state) = ctx
        .mcp
        .sessions()
        .touch(&id, "sse")
        .filter(|state| super::mcp::owns(state, auth))
    else {
        return session_not_found();
    };
    let Some(outbox) = ctx.outboxes.get(&id) else {
        return session_not_found();
    };
    let mut incoming = jsonrpc::parse(body);
    if let Err(parse_error) = &incoming {
        return Answer::json_text(400, parse_error.to_json());
    }
    if let Ok(Incoming::Batch(items)) = &incoming {
        if let Some(refusal) = ctx.mcp.batch_refusal(state.version, items.len()) {
            return super::mcp::refused(400, refusal);
        }
    }
    // A refusal is answered on this POST (401/403/429), not on the stream.
    if let Err(refused) = super::mcp::authorize(ctx, auth, "sse", &mut incoming) {
        return refused;
    }
    state.caller = auth.map(crate::auth::gate::Principal::caller);
    state.origin = Some(super::origin_of(ctx, request));
    let slow = matches!(&incoming, Ok(Incoming::Single(Ok(Message::Request(r))))
        if matches!(r.method.as_str(), "tools/call" | "prompts/get" | "resources/read" | "completion/complete"));
    let peer = ctx.mcp.peer(Some(&id), outbox.clone());
    let run = {
        let ctx = ctx.clone();
        move || {
            let reply = ctx
                .mcp
                .handle_incoming_with_peer(&mut state, incoming, Some(peer));
            ctx.mcp.sessions().update(&state);
            if let Some(json) = reply.to_json() {
                outbox.send(&json);
            }
        }
    };
    if slow {
        run_detached("mcp-sse-call", ctx.pool.acquire(), run);
    } else {
        run();
    }
    Answer::with_body(202, "text/plain", b"Accepted".to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids() {
        let ok = "0123456789abcdef0123456789abcdef";
        assert_eq!(
            session_param(&format!("/message?sessionId={ok}")).ok(),
            Some(ok.into())
        );
        assert!(session_param("/message").is_err());
        assert!(session_param("/message?sessionId=../etc").is_err());
        assert!(session_param("/message?sessionId=0123456789ABCDEF0123456789ABCDEF").is_err());
    }
}
