//! `/mcp`: the Streamable HTTP transport (MCP 2025-03-26 to 2025-11-25 with sessions, and
//! 2026-07-28 without).
//!
//! A POST whose request is modern ([`McpServer::is_modern`](crate::mcp::McpServer::is_modern):
//! `_meta` names its version, its method is `server/discover` or `subscriptions/listen`, or
//! it has no session and `MCP-Protocol-Version` names 2026-07-28 or a version nobody knows) is
//! served without a session (an `Mcp-Session-Id` it carries is ignored): the standard headers
//! are checked against the body (400 `HeaderMismatch` -32020), then `_meta` (400 with -32602,
//! or -32022 listing the supported versions); an unknown or removed method is 404 with
//! -32601. `subscriptions/listen` is answered by a long-lived SSE stream (acknowledgement,
//! then the notifications it opted into, keep-alive comments); a `tools/call` or
//! `prompts/get` that asked for progress or log messages gets an SSE answer carrying them
//! before its response. Everything below is the session flow of the older versions.
//!
//! Checks, in order, each failing with a JSON-RPC error body. A refusal of a POST carries the
//! id of the request in its body, or one error per request of a batch with its id ([`echo_ids`]:
//! the router's Host, Origin and gate refusals too); `id: null` only where no id can be read:
//! GET and DELETE, a body that is not JSON or holds no request, a batch longer than
//! `max_batch_items`, and a body over the limit (**413**, never read). The body is read before
//! the checks of step 5: tiny_http's connection thread has already buffered it within the
//! limit, so reading it costs a copy, and reading its ids one pass that keeps nothing else.
//! 1. `Origin`, if present, must be loopback, match the request's Host, or be listed in
//!    [`HttpConfig::allowed_origins`](super::HttpConfig::allowed_origins): else **403** (checked
//!    by the router, before authentication, with `origin_allowed`).
//! 2. Method: `GET`, `POST` and `DELETE`; anything else **405** with
//!    `Allow: GET, POST, DELETE`.
//! 3. `DELETE` needs `Mcp-Session-Id` (**400** without): **200** when it ended a session (its
//!    streams end too), **404** for an unknown one.
//! 4. `GET` opens the session's server-to-client stream: `Accept` must list
//!    `text/event-stream` (**406**), `MCP-Protocol-Version` as for POST (**400**),
//!    `Mcp-Session-Id` is required (**400**) and must be known (**404**); **503** when
//!    `max_streams` streams run. The stream starts with `retry:` and a priming event (an `id:`
//!    and empty data), replays the session's buffered events after `Last-Event-ID` (same
//!    stream only), then carries the messages not tied to a request, with keep-alive comments
//!    when idle. It runs on its own thread (see [`super::stream`]).
//! 5. `POST`: `Accept` picks the answer format: `application/json` gives one JSON body,
//!    `text/event-stream` an SSE body (`event: message`, `id:`, `data: <json>` per response,
//!    then the stream ends); when both are listed the first wins; missing, `*/*` or
//!    `application/*` give JSON; anything else **406**. `Content-Type` must be
//!    `application/json` (**415**). `MCP-Protocol-Version`, when present, must be a supported
//!    version (**400**); when missing the session's negotiated version applies. A known
//!    `Mcp-Session-Id` is required except for `initialize` (**400** when missing, **404** when
//!    unknown, expired or deleted). The body is read first, up to `max_body_bytes` (**413**
//!    beyond, before the other checks, never reading more than the limit plus one byte).
//! 6. The message goes to [`McpServer`](crate::mcp::McpServer). Notifications and client
//!    responses get **202** with no body; a parse error or an invalid message without id
//!    **400**; everything else **200**. A successful `initialize` without a session creates one
//!    and returns its id in `Mcp-Session-Id`.
//! 7. A single `tools/call` or `prompts/get` on a session whose `Accept` lists SSE is answered
//!    as a live SSE stream on its own thread: `retry:`, a priming event, then the handler's
//!    progress and log notifications and its requests to the client (elicitation, sampling) as
//!    they happen, then the response, then the stream ends. The client's answers arrive as
//!    separate POSTs (202) and are routed by id to the waiting call. Every event is also kept
//!    in the session's replay buffer, and if the client goes away mid-call the rest goes to the
//!    session's GET stream. Requests answered in JSON get the session's GET stream as their
//!    peer.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::stream::{run_detached, Outbox, SseWriter};
use super::{header, host_name, is_loopback_name, Answer, Ctx, Handled};
use crate::auth::gate::{Action, Principal};
use crate::mcp::jsonrpc::{self, Incoming, Message, RequestIds, Response};
use crate::mcp::{Outlet, ProtocolVersion, Reply, RpcError, SessionState};

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

pub(crate) fn bad_request(details: impl Into<String>) -> Answer {
    rpc_error(400, RpcError::INVALID_REQUEST, "Bad Request", details)
}

pub(crate) fn session_not_found() -> Answer {
    rpc_error(
        404,
        RpcError::INVALID_REQUEST,
        "Session not found",
        "unknown, expired or deleted Mcp-Session-Id; initialize a new session",
    )
}

/// Handles one request to `/mcp`.
pub(crate) fn handle(
    ctx: &Arc<Ctx>,
    request: &mut tiny_http::Request,
    auth: Option<&Principal>,
) -> Handled {
    // Origin (DNS rebinding, cross-site requests) is checked by the router for every route.
    match request.method() {
        tiny_http::Method::Post => post(ctx, request, auth),
        tiny_http::Method::Get => get(ctx, request, auth),
        tiny_http::Method::Delete => delete(ctx, request, auth).into(),
        _ => rpc_error(
            405,
            RpcError::INVALID_REQUEST,
            "Method Not Allowed",
            "use POST for messages, GET for the server's stream and DELETE to end a session",
        )
        .with_header("Allow", "GET, POST, DELETE")
        .into(),
    }
}

fn delete(ctx: &Ctx, request: &tiny_http::Request, auth: Option<&Principal>) -> Answer {
    let id = header(request, "Mcp-Session-Id").map(str::trim);
    let theirs = id
        .and_then(|id| ctx.mcp.sessions().touch(id, "http"))
        .is_some_and(|state| !owns(&state, auth));
    match id {
        None => bad_request("Mcp-Session-Id header is required"),
        Some(_) if theirs => session_not_found(),
        Some(id) if ctx.mcp.sessions().remove(id) => {
            ctx.drop_outbox(id);
            Answer::empty(200)
        }
        Some(_) => session_not_found(),
    }
}

fn not_acceptable(details: &str) -> Answer {
    rpc_error(406, RpcError::INVALID_REQUEST, "Not Acceptable", details)
}

/// 429 for an `initialize` over the client's session cap (see [`crate::mcp::SessionStore`]).
pub(crate) fn too_many_sessions(e: &crate::mcp::SessionError) -> Answer {
    rpc_error(
        429,
        RpcError::INVALID_REQUEST,
        "Too many sessions",
        format!("{e}; end unused sessions with DELETE /mcp"),
    )
    .with_header("Retry-After", "60")
}

/// 503 when every stream slot is taken.
pub(crate) fn too_many_streams() -> Answer {
    rpc_error(
        503,
        RpcError::INTERNAL_ERROR,
        "Service Unavailable",
        "too many open streams; retry later",
    )
    .with_header("Retry-After", "5")
}

fn accepts_sse(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| {
        a.split(',').any(|item| {
            let media = item.split(';').next().unwrap_or("").trim();
            media.eq_ignore_ascii_case("text/event-stream") || media == "*/*"
        })
    })
}

/// `GET /mcp`: the session's server-to-client stream.
fn get(ctx: &Arc<Ctx>, request: &tiny_http::Request, auth: Option<&Principal>) -> Handled {
    if !accepts_sse(header(request, "Accept")) {
        return not_acceptable(
            "GET /mcp opens an SSE stream; Accept must include text/event-stream",
        )
        .into();
    }
    if let Some(v) = header(request, "MCP-Protocol-Version") {
        if ProtocolVersion::parse(v.trim()).is_none() {
            return bad_request(format!("unsupported MCP-Protocol-Version: {}", v.trim())).into();
        }
    }
    let Some(id) = header(request, "Mcp-Session-Id").map(|s| s.trim().to_string()) else {
        return bad_request("Mcp-Session-Id header is required").into();
    };
    match ctx.mcp.sessions().touch(&id, "http") {
        Some(state) if owns(&state, auth) => {}
        _ => return session_not_found().into(),
    }
    let Some(permit) = ctx.pool.acquire() else {
        return too_many_streams().into();
    };
    let last = header(request, "Last-Event-ID").map(str::to_string);
    let outbox = ctx.outbox(&id);
    let ctx = ctx.clone();
    Handled::Take(Box::new(move |request, mut headers| {
        run_detached("mcp-get-stream", Some(permit), move || {
            let attached = outbox.attach(last.as_deref());
            let conn = attached.conn;
            headers.push(("Mcp-Session-Id", id.clone()));
            match SseWriter::start(request, &headers) {
                Ok(mut w) => {
                    let ok = w.retry(ctx.config.retry_ms).is_ok()
                        && w.event(Some(&attached.priming_id), None, "").is_ok()
                        && attached
                            .replay
                            .iter()
                            .all(|f| w.event(Some(&f.id), Some("message"), &f.data).is_ok());
                    if ok {
                        pump(&ctx, &outbox, &attached.rx, &mut w, Some(&id), None);
                    }
                    w.finish();
                }
                Err(e) => log::debug!("GET stream could not start: {e}"),
            }
            outbox.detach(conn);
        });
    }))
}

/// Writes frames from `rx` until the outbox closes, the server stops or a write fails;
/// keep-alive comments when idle. `legacy_event` names the event of legacy streams (no ids).
pub(crate) fn pump(
    ctx: &Ctx,
    outbox: &Outbox,
    rx: &crossbeam_channel::Receiver<super::stream::Frame>,
    w: &mut SseWriter,
    session: Option<&str>,
    legacy_event: Option<&str>,
) {
    use crossbeam_channel::RecvTimeoutError;
    let tick = ctx
        .config
        .keep_alive
        .clamp(Duration::from_millis(10), Duration::from_secs(3600));
    loop {
        if ctx.stopping.load(std::sync::atomic::Ordering::SeqCst) || outbox.is_closed() {
            return;
        }
        match rx.recv_timeout(tick) {
            Ok(frame) => {
                let written = match legacy_event {
                    Some(e) => w.event(None, Some(e), &frame.data),
                    None => w.event(Some(&frame.id), Some("message"), &frame.data),
                };
                if written.is_err() {
                    return;
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                if w.comment("keep-alive").is_err() {
                    return;
                }
                // An open stream keeps its session from expiring.
                if let Some(id) = session {
                    ctx.mcp.sessions().keep_alive(id);
                }
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// The SSE answer to one POST: writes events on the response while it can, records each in
/// the session's replay buffer, and falls back to the session's GET stream once the client
/// went away.
struct PostStream {
    outbox: Arc<Outbox>,
    stream: u64,
    writer: Mutex<Option<SseWriter>>,
}

impl Outlet for PostStream {
    fn send(&self, message: &str) -> bool {
        let id = self.outbox.record(self.stream, message);
        let mut guard = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(w) = guard.as_mut() {
            if w.event(Some(&id), Some("message"), message).is_ok() {
                return true;
            }
            log::debug!("POST stream closed by the client; continuing on the GET stream");
            *guard = None;
        }
        drop(guard);
        self.outbox.deliver(&id, message)
    }
}

/// Whether a single request may send notifications or requests before its answer, so it is
/// worth an SSE answer: a `tools/call` or `prompts/get` that asked for progress
/// (`_meta.progressToken`), on a session that set a log level, or from a client that can be
/// asked things (`elicitation`, `sampling`). Everything else is answered as plain JSON, which
/// is also what simple clients (curl, scripts) read most easily.
fn streams_answer(incoming: &Result<Incoming, Response>, state: &SessionState) -> bool {
    let Ok(Incoming::Single(Ok(Message::Request(r)))) = incoming else {
        return false;
    };
    if !matches!(r.method.as_str(), "tools/call" | "prompts/get") {
        return false;
    }
    let progress = match &r.params {
        Some(crate::mcp::jsonrpc::Params::Object(p)) => p
            .get("_meta")
            .and_then(|m| m.get("progressToken"))
            .is_some(),
        _ => false,
    };
    let caps = &state.client_capabilities;
    progress
        || state.log_level.is_some()
        || caps.get("elicitation").is_some()
        || caps.get("sampling").is_some()
}

/// `POST /mcp`: the body is read first (tiny_http's connection thread has already buffered
/// it within the limit, so this costs a copy, not a wait), then every refusal carries the
/// ids of the requests in it ([`echo_ids`]).
fn post(ctx: &Arc<Ctx>, request: &mut tiny_http::Request, auth: Option<&Principal>) -> Handled {
    let body = match read_body(request, ctx.config.max_body_bytes) {
        Ok(body) => body,
        Err(answer) => return answer.into(),
    };
    match post_inner(ctx, request, auth, &body) {
        Ok(answer) => echo_ids(ctx, answer, &body).into(),
        Err(handled) => handled,
    }
}

/// Gives a refusal of a POST the ids of the requests in its `body` (issue 16): an answer of
/// status 400 or above that is one JSON-RPC error with `id: null` is rewritten with the
/// request's id, or as one error per request of a batch, each with its id (see
/// [`jsonrpc::request_ids`]: a batch longer than `max_batch_items` keeps its single `null`
/// error, so a refusal is never longer than that many errors). Every other answer, and a body
/// without a readable request id (not JSON, a notification), is returned as it is. The one
/// place the transports' and the gate's refusals get their ids, whichever check refused.
pub(crate) fn echo_ids(ctx: &Ctx, answer: Answer, body: &[u8]) -> Answer {
    if answer.status < 400 || answer.content_type != Some("application/json") {
        return answer;
    }
    let Ok(serde_json::Value::Object(sent)) = serde_json::from_slice(&answer.body) else {
        return answer;
    };
    let (Some(serde_json::Value::Null), Some(error)) = (sent.get("id"), sent.get("error")) else {
        return answer;
    };
    let Ok(error) = serde_json::from_value::<jsonrpc::ErrorObject>(error.clone()) else {
        return answer;
    };
    match jsonrpc::request_ids(body, ctx.mcp.max_batch_items()) {
        RequestIds::Unknown => answer,
        ids => Answer {
            body: jsonrpc::error_for(&ids, &error).into_bytes(),
            ..answer
        },
    }
}

fn post_inner(
    ctx: &Arc<Ctx>,
    request: &mut tiny_http::Request,
    auth: Option<&Principal>,
    body: &[u8],
) -> Result<Answer, Handled> {
    let sse_ok = accepts_sse(header(request, "Accept"));
    let Some(format) = negotiate(header(request, "Accept")) else {
        return Ok(rpc_error(
            406,
            RpcError::INVALID_REQUEST,
            "Not Acceptable",
            "Accept must include application/json or text/event-stream",
        ));
    };
    let content_type = header(request, "Content-Type").unwrap_or("");
    let media = content_type.split(';').next().unwrap_or("").trim();
    if !media.eq_ignore_ascii_case("application/json") {
        return Ok(rpc_error(
            415,
            RpcError::INVALID_REQUEST,
            "Unsupported Media Type",
            "Content-Type must be application/json",
        ));
    }
    let declared = header(request, "MCP-Protocol-Version").map(|v| v.trim().to_string());
    let session = match header(request, "Mcp-Session-Id") {
        Some(id) => match ctx.mcp.sessions().touch(id.trim(), "http") {
            Some(state) if owns(&state, auth) => Ok(Some(state)),
            _ => Err(()),
        },
        None => Ok(None),
    };

    let mut incoming = jsonrpc::parse(body);

    // MCP 2026-07-28: a request that declares itself modern is served without a session (an
    // `Mcp-Session-Id` it carries is ignored).
    let mut probe = match &session {
        Ok(Some(state)) => state.clone(),
        _ => SessionState::new("http"),
    };
    probe.declared_version = declared.clone();
    if let Ok(Incoming::Single(Ok(Message::Request(r)))) = &incoming {
        if ctx.mcp.is_modern(&probe, r) {
            return modern_post(ctx, request, auth, &incoming, declared.as_deref(), format);
        }
    }

    if let Some(v) = &declared {
        let modern_version = ProtocolVersion::parse(v).is_some_and(ProtocolVersion::is_modern);
        let no_session = matches!(session, Ok(None));
        if modern_version
            && no_session
            && matches!(
                &incoming,
                Ok(Incoming::Single(Ok(Message::Notification(_))))
            )
        {
            // 2026-07-28 defines no client notifications over HTTP; accepted and dropped.
            return Ok(Answer::empty(202));
        }
        if ProtocolVersion::parse(v).is_none_or(ProtocolVersion::is_modern) {
            let id = match &incoming {
                Ok(Incoming::Single(Ok(Message::Request(r)))) => Some(r.id.clone()),
                _ => None,
            };
            return Ok(Answer::json_text(
                400,
                crate::mcp::modern::unsupported_version(id, v).to_json(),
            ));
        }
    }
    let Ok(session) = session else {
        return Ok(session_not_found());
    };
    if let Ok(Incoming::Batch(items)) = &incoming {
        let version = session.as_ref().and_then(|s| s.version);
        if let Some(refusal) = ctx.mcp.batch_refusal(version, items.len()) {
            return Ok(Answer::json_text(400, refusal.to_json()));
        }
    }
    if let Some(denied) = denied(ctx, auth, "http", &incoming) {
        return Ok(denied);
    }
    gate_batch(ctx, auth, "http", &mut incoming);

    let mut state = match session {
        Some(state) => state,
        None => {
            if !is_initialize(&incoming) {
                return Ok(bad_request(
                    "Mcp-Session-Id header is required (except for initialize)",
                ));
            }
            SessionState::new("http")
        }
    };
    state.caller = auth.map(Principal::caller);
    state.origin = Some(super::origin_of(ctx, request));
    let new_session = state.id.is_none();
    if sse_ok && state.version.is_some() && streams_answer(&incoming, &state) {
        if let Some(id) = state.id.clone() {
            return Err(stream_answer(ctx, id, state, incoming));
        }
    }
    let peer = state
        .id
        .as_deref()
        .map(|id| ctx.mcp.peer(Some(id), ctx.outbox(id)));
    let reply = ctx
        .mcp
        .handle_incoming_with_peer(&mut state, incoming, peer);

    let mut session_header = None;
    if new_session {
        if let Some(version) = state.version {
            let client = auth
                .and_then(|p| p.ip)
                .or(request.remote_addr().map(|a| a.ip()));
            match ctx
                .mcp
                .sessions()
                .create_for(Some(version), client, owner_of(auth))
            {
                Ok(id) => {
                    state.id = Some(id.clone());
                    session_header = Some(id);
                }
                Err(e @ crate::mcp::SessionError::TooMany(_)) => {
                    log::info!("initialize from {client:?} refused: {e}");
                    return Ok(too_many_sessions(&e));
                }
                Err(e) => {
                    log::error!("{e}");
                    return Ok(rpc_error(
                        500,
                        RpcError::INTERNAL_ERROR,
                        "Internal error",
                        e.to_string(),
                    ));
                }
            }
        }
    }
    ctx.mcp.sessions().update(&state);

    let status = match &reply {
        Reply::Empty => return Ok(Answer::empty(202)),
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
    Ok(answer)
}

/// A 2026-07-28 request over HTTP: the standard headers checked against the body (400
/// `HeaderMismatch`), `_meta` checked (400 with -32602 or -32022), the gate, then the core
/// without a session. Errors the era defines are 400, an unknown or removed method 404.
fn modern_post(
    ctx: &Arc<Ctx>,
    request: &tiny_http::Request,
    auth: Option<&Principal>,
    incoming: &Result<Incoming, Response>,
    declared: Option<&str>,
    format: Format,
) -> Result<Answer, Handled> {
    use crate::mcp::modern;
    let Ok(Incoming::Single(Ok(Message::Request(r)))) = incoming else {
        return Ok(bad_request(
            "a 2026-07-28 POST carries one JSON-RPC request",
        ));
    };
    let params = match &r.params {
        Some(crate::mcp::jsonrpc::Params::Object(p)) => Some(p),
        _ => None,
    };
    let mirrored = || {
        let tool = params?.get("name")?.as_str()?;
        let arguments = params?.get("arguments").and_then(|a| a.as_object());
        modern::param_header_mismatch(ctx.mcp.param_headers(tool), arguments, |n| {
            header(request, n)
        })
    };
    let mismatch = header_mismatch(request, r, params, declared)
        .or_else(|| (r.method == "tools/call").then(mirrored).flatten());
    if let Some(why) = mismatch {
        return Ok(Answer::json_text(
            400,
            modern::header_mismatch(Some(r.id.clone()), why).to_json(),
        ));
    }
    if let Err(e) = modern::RequestMeta::parse(params) {
        return Ok(Answer::json_text(
            400,
            e.into_response(Some(r.id.clone())).to_json(),
        ));
    }
    if let Some(denied) = denied(ctx, auth, "http", incoming) {
        return Ok(denied);
    }
    let mut state = SessionState::new("http");
    state.caller = auth.map(Principal::caller);
    state.origin = Some(super::origin_of(ctx, request));
    state.declared_version = declared.map(str::to_string);
    let sse_ok = accepts_sse(header(request, "Accept"));
    if r.method == "subscriptions/listen" {
        if !sse_ok {
            return Ok(not_acceptable(
                "subscriptions/listen answers with an SSE stream; Accept must include \
                 text/event-stream",
            ));
        }
        let Some(permit) = ctx.pool.acquire() else {
            return Ok(too_many_streams());
        };
        return Err(listen_stream(ctx, r.clone(), permit, state.caller.clone()));
    }
    if sse_ok && modern_streams(r) {
        return Err(modern_stream(ctx, state, r.clone()));
    }
    let response = ctx.mcp.handle_modern(&state, r.clone(), &None);
    let status = match response.error_code() {
        Some(RpcError::METHOD_NOT_FOUND) => 404,
        Some(
            modern::HEADER_MISMATCH
            | modern::MISSING_CLIENT_CAPABILITY
            | modern::UNSUPPORTED_PROTOCOL_VERSION,
        ) => 400,
        _ => 200,
    };
    let reply = Reply::Single(response);
    Ok(match format {
        Format::Json => Answer::json_text(status, reply.to_json().unwrap_or_default()),
        Format::Sse => sse(&reply, status),
    })
}

/// Whether a 2026-07-28 request is answered as an SSE stream carrying its own progress and
/// log messages before the response: a `tools/call` or `prompts/get` that asked for progress
/// (`_meta.progressToken`) or log messages (`_meta` `logLevel`).
fn modern_streams(r: &jsonrpc::Request) -> bool {
    if !matches!(r.method.as_str(), "tools/call" | "prompts/get") {
        return false;
    }
    let Some(crate::mcp::jsonrpc::Params::Object(p)) = &r.params else {
        return false;
    };
    p.get("_meta").is_some_and(|m| {
        m.get("progressToken").is_some() || m.get(crate::mcp::modern::META_LOG_LEVEL).is_some()
    })
}

/// An SSE answer written straight to the connection (2026-07-28 streams are not resumable):
/// notifications of the request, then its response.
struct DirectStream {
    writer: Mutex<Option<SseWriter>>,
}

impl DirectStream {
    fn start(request: tiny_http::Request, headers: &[(&str, String)]) -> Arc<Self> {
        let writer = SseWriter::start(request, headers)
            .map_err(|e| log::debug!("SSE answer could not start: {e}"))
            .ok();
        Arc::new(Self {
            writer: Mutex::new(writer),
        })
    }

    fn comment(&self, text: &str) -> bool {
        let mut guard = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let ok = guard.as_mut().is_some_and(|w| w.comment(text).is_ok());
        if !ok {
            *guard = None;
        }
        ok
    }

    fn finish(&self) {
        let writer = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(w) = writer {
            w.finish();
        }
    }
}

impl Outlet for DirectStream {
    fn send(&self, message: &str) -> bool {
        let mut guard = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let Some(w) = guard.as_mut() else {
            return false;
        };
        if w.event(None, Some("message"), message).is_ok() {
            return true;
        }
        log::debug!("a 2026-07-28 stream was closed by the client");
        *guard = None;
        false
    }
}

/// Serves a 2026-07-28 request on an SSE stream of its own (see [`modern_streams`]).
fn modern_stream(ctx: &Arc<Ctx>, state: SessionState, r: jsonrpc::Request) -> Handled {
    let permit = ctx.pool.acquire();
    let ctx = ctx.clone();
    Handled::Take(Box::new(move |request, headers| {
        run_detached("mcp-request-stream", permit, move || {
            let out = DirectStream::start(request, &headers);
            let peer = ctx.mcp.peer(None, out.clone());
            let response = ctx.mcp.handle_modern(&state, r, &Some(peer));
            out.send(&response.to_json());
            out.finish();
        });
    }))
}

/// Notifications a `subscriptions/listen` stream holds for a client that reads slowly; beyond
/// them the stream's notifications are dropped (the notifier never waits for one client).
const LISTEN_QUEUE: usize = 256;

/// `subscriptions/listen`: an SSE stream starting with the acknowledgement, then the change
/// notifications the client opted into, with keep-alive comments when idle, until the client
/// goes away or the server stops (then the graceful final response). Notifications reach the
/// stream's thread through a bounded queue, so a slow reader never holds up the notifier.
fn listen_stream(
    ctx: &Arc<Ctx>,
    r: jsonrpc::Request,
    permit: super::stream::Permit,
    caller: Option<crate::mcp::Caller>,
) -> Handled {
    let ctx = ctx.clone();
    Handled::Take(Box::new(move |request, headers| {
        run_detached("mcp-listen-stream", Some(permit), move || {
            let out = DirectStream::start(request, &headers);
            let (tx, rx) = crossbeam_channel::bounded::<String>(LISTEN_QUEUE);
            let queue: Arc<dyn Outlet> =
                Arc::new(move |m: &str| tx.try_send(m.to_string()).is_ok());
            match ctx.mcp.open_listen_as(&r, queue, "http", caller.as_ref()) {
                Err(refusal) => {
                    out.send(&refusal.to_json());
                }
                Ok(listening) => {
                    let tick = ctx
                        .config
                        .keep_alive
                        .clamp(Duration::from_millis(10), Duration::from_secs(3600));
                    // Short waits, so a stopping server ends the stream promptly.
                    let step = tick.min(Duration::from_millis(200));
                    let mut idle = Duration::ZERO;
                    loop {
                        if ctx.stopping.load(std::sync::atomic::Ordering::SeqCst) {
                            out.send(&ctx.mcp.listen_closed(&r).to_json());
                            break;
                        }
                        let written = match rx.recv_timeout(step) {
                            Ok(message) => {
                                idle = Duration::ZERO;
                                out.send(&message)
                            }
                            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                                idle += step;
                                if idle >= tick {
                                    idle = Duration::ZERO;
                                    out.comment("keep-alive")
                                } else {
                                    true
                                }
                            }
                            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => false,
                        };
                        if !written {
                            break;
                        }
                    }
                    drop(listening);
                }
            }
            out.finish();
        });
    }))
}

/// Why the standard request headers of a 2026-07-28 POST disagree with its body, if they do:
/// `MCP-Protocol-Version` must be present and equal `_meta`'s version (when the body names
/// one), `Mcp-Method` must equal the method, `Mcp-Name` (base64 sentinel decoded) the
/// `params.name` of `tools/call` and `prompts/get` or the `params.uri` of `resources/read`.
fn header_mismatch(
    request: &tiny_http::Request,
    r: &jsonrpc::Request,
    params: Option<&serde_json::Map<String, serde_json::Value>>,
    declared: Option<&str>,
) -> Option<String> {
    use crate::mcp::modern;
    let Some(declared) = declared else {
        return Some("the MCP-Protocol-Version header is required".into());
    };
    if let Some(serde_json::Value::String(v)) = modern::meta_version(params) {
        if v != declared {
            return Some(format!(
                "MCP-Protocol-Version header value '{declared}' does not match body value '{v}'"
            ));
        }
    }
    match header(request, "Mcp-Method").map(str::trim) {
        None => return Some("the Mcp-Method header is required".into()),
        Some(m) if m != r.method => {
            return Some(format!(
                "Mcp-Method header value '{m}' does not match body value '{}'",
                r.method
            ))
        }
        Some(_) => {}
    }
    let field = modern::name_source(&r.method)?;
    let body = params
        .and_then(|p| p.get(field))
        .and_then(serde_json::Value::as_str);
    match (header(request, "Mcp-Name").map(str::trim), body) {
        (None, Some(_)) => Some("the Mcp-Name header is required".into()),
        (Some(raw), body) => match modern::decode_header_value(raw) {
            None => Some(format!("Mcp-Name header value '{raw}' is not valid base64")),
            Some(name) if Some(name.as_str()) != body => Some(format!(
                "Mcp-Name header value '{name}' does not match body value '{}'",
                body.unwrap_or("")
            )),
            Some(_) => None,
        },
        (None, None) => None,
    }
}

/// Answers a request as a live SSE stream on its own thread (or on the worker when every
/// stream slot is taken).
fn stream_answer(
    ctx: &Arc<Ctx>,
    id: String,
    mut state: SessionState,
    incoming: Result<Incoming, Response>,
) -> Handled {
    let permit = ctx.pool.acquire();
    let ctx = ctx.clone();
    Handled::Take(Box::new(move |request, headers| {
        run_detached("mcp-post-stream", permit, move || {
            let outbox = ctx.outbox(&id);
            let (stream, priming) = outbox.open_stream();
            let writer = match SseWriter::start(request, &headers) {
                Ok(mut w) => {
                    let ok = w.retry(ctx.config.retry_ms).is_ok()
                        && w.event(Some(&priming), None, "").is_ok();
                    ok.then_some(w)
                }
                Err(e) => {
                    log::debug!("POST stream could not start: {e}");
                    None
                }
            };
            let out = Arc::new(PostStream {
                outbox: outbox.clone(),
                stream,
                writer: Mutex::new(writer),
            });
            let peer = ctx.mcp.peer(Some(&id), out.clone());
            let reply = ctx
                .mcp
                .handle_incoming_with_peer(&mut state, incoming, Some(peer));
            ctx.mcp.sessions().update(&state);
            if let Some(json) = reply.to_json() {
                out.send(&json);
            }
            let writer = out.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(w) = writer {
                w.finish();
            }
        });
    }))
}

/// Whether `auth` may use a session opened by `state.owner` (see
/// [`crate::mcp::SessionStore::set_owner`]): the same key, or any caller when it was opened
/// without one.
pub(crate) fn owns(state: &crate::mcp::SessionState, auth: Option<&Principal>) -> bool {
    match &state.owner {
        None => true,
        Some(owner) => auth
            .and_then(|p| p.key.as_ref())
            .is_some_and(|k| crate::auth::mask(&k.id) == *owner),
    }
}

/// The masked id of `auth`'s key, the owner of a session it opens.
pub(crate) fn owner_of(auth: Option<&Principal>) -> Option<String> {
    auth.and_then(|p| p.key.as_ref())
        .map(|k| crate::auth::mask(&k.id))
}

/// Step 2 of the gate for a single request: the method's permission, for `tools/call` the
/// tool's; the refusal carries the request's id. Batches are gated per item by
/// [`gate_batch`].
pub(crate) fn denied(
    ctx: &Ctx,
    auth: Option<&Principal>,
    transport: &'static str,
    incoming: &Result<Incoming, Response>,
) -> Option<Answer> {
    auth?;
    let Ok(Incoming::Single(Ok(Message::Request(r)))) = incoming else {
        return None;
    };
    let d = authorize_item(ctx, auth, transport, r).err()?;
    Some(super::deny(&d, true, &RequestIds::Single(r.id.clone())))
}

/// The gate for each request of a batch on its own (call it once the batch is accepted, see
/// [`crate::mcp::McpServer::batch_refusal`]): every request after the first counts against
/// the caller's rate limits like a request of its own (the first was counted with the HTTP
/// request), and each needs its own permission. A refused request is replaced by its
/// JSON-RPC error (with its id: -32029 beyond the rate limit, -32003 without the
/// permission), so it is never computed; the others are served.
pub(crate) fn gate_batch(
    ctx: &Ctx,
    auth: Option<&Principal>,
    transport: &'static str,
    incoming: &mut Result<Incoming, Response>,
) {
    let Some(principal) = auth else { return };
    let Ok(Incoming::Batch(items)) = incoming else {
        return;
    };
    let mut first = true;
    for item in items.iter_mut() {
        let Ok(Message::Request(r)) = item else {
            continue;
        };
        let charged = if std::mem::take(&mut first) {
            Ok(())
        } else {
            ctx.charge(principal)
        };
        let refused = charged
            .and_then(|()| authorize_item(ctx, auth, transport, r))
            .err();
        if let Some(d) = refused {
            let error = RpcError {
                code: d.code.rpc_code(),
                message: d.code.as_str().to_string(),
                details: Some(d.message),
            };
            *item = Err(Response::error(Some(r.id.clone()), error));
        }
    }
}

/// Step 2 of the gate for one request (counted in the metrics when refused).
fn authorize_item(
    ctx: &Ctx,
    auth: Option<&Principal>,
    transport: &'static str,
    r: &jsonrpc::Request,
) -> Result<(), crate::auth::gate::Denial> {
    let call = crate::auth::gate::tool_call(r);
    let result = match call {
        Some((name, arguments)) => ctx.authorize_tool(auth, transport, name, arguments),
        None => ctx.authorize(auth, &Action::Method(&r.method)),
    };
    if result.is_err() {
        let tool = call.map(|(name, _)| crate::metrics::global().known_tool(name));
        crate::metrics::global().mcp_request(
            transport,
            &r.method,
            tool,
            crate::metrics::Outcome::Denied,
            None,
        );
    }
    result
}

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

/// The body of a POST to an MCP route ([`super::body::read`]): 413 beyond `limit`, 400 when
/// it cannot be read, as JSON-RPC errors.
pub(crate) fn read_body(request: &mut tiny_http::Request, limit: usize) -> Result<Vec<u8>, Answer> {
    super::body::read(request, limit).map_err(|e| match e {
        super::body::BodyError::TooLarge { limit } => too_large(limit),
        e => bad_request(e.to_string()),
    })
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

/// Origin validation: loopback, same host as the request, or configured. In production
/// (strict), loopback origins pass only when the server itself listens on loopback: a page
/// served on the client's own machine is no reason to trust it on a LAN server.
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
    if is_loopback_name(name) && (ctx.loopback || !ctx.strict()) {
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
