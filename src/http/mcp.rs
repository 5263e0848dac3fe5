//! `/mcp`: the Streamable HTTP transport, one path for both protocol eras: 2024-11-05 to
//! 2025-11-25 in sessions (`initialize` creates one; its id travels in `Mcp-Session-Id`), and
//! the stateless 2026-07-28 revision. The era is data read from the message once
//! ([`McpServer::era`](crate::mcp::McpServer::era)), never a path of its own.
//!
//! A `POST` lives in [`post`], top to bottom:
//! 1. The body is read once ([`super::body`]; **413** beyond `max_body_bytes`, never read).
//! 2. `Accept` picks the answer format: `application/json` one JSON body, `text/event-stream`
//!    an SSE body (`event: message`, `id:`, `data: <json>` per response, then the stream
//!    ends); the first listed wins; missing, `*/*` or `application/*` give JSON; anything else
//!    **406**. `Content-Type` must be `application/json` (**415**).
//! 3. The message is parsed once and its era read ([`Post::read`]). A stateless request (its
//!    `_meta` names its version, its method is `server/discover` or `subscriptions/listen`, or
//!    it has no session and `MCP-Protocol-Version` names 2026-07-28 or a version nobody knows)
//!    is served without a session (an `Mcp-Session-Id` it carries is ignored) once its
//!    standard headers agree with its body (**400** `HeaderMismatch` -32020) and its `_meta`
//!    is valid (**400** with -32602, or -32022 listing the supported versions); a
//!    notification of that era is accepted and dropped (**202**). In a session:
//!    `MCP-Protocol-Version`, when present, must be a version the handshake knows (**400**
//!    -32022; without it the session's applies), `Mcp-Session-Id` must be known (**404** when
//!    unknown, expired, deleted or another key's), a batch must be allowed (**400**, see
//!    [`McpServer::batch_refusal`](crate::mcp::McpServer::batch_refusal)).
//! 4. The gate authorises each request once ([`authorize`]).
//! 5. A session is required, except for `initialize` and the stateless era (**400**).
//! 6. The core serves it once. A single `tools/call` or `prompts/get` that may send messages
//!    before its answer ([`Post::may_send_first`]) is answered, when `Accept` lists SSE, as a
//!    live SSE stream on its own thread: `retry:` and a priming event (sessions), the
//!    handler's progress and log notifications and its requests to the client as they
//!    happen, then the response. In a session every event is also kept for `Last-Event-ID`
//!    replay and goes to the session's GET stream once the client went away; the client's
//!    answers arrive as separate POSTs (202) and are routed by id to the waiting call.
//!    `subscriptions/listen` is a long-lived stream (the acknowledgement, the notifications it
//!    opted into, keep-alive comments; **406** without SSE, **503** without a stream slot).
//! 7. The reply is rendered once ([`render`]): **202** without a body for notifications and
//!    client responses; in a session **400** for a parse error or an invalid message without
//!    id, else **200**, and a successful `initialize` creates the session (its id in
//!    `Mcp-Session-Id`; **429** over the client's session cap); stateless, **404** for an
//!    unknown or removed method (-32601), **400** for -32020, -32021 and -32022, else **200**.
//!
//! A refusal carries the id of the request in its body, or one error per request of a batch
//! ([`echo_ids`]; the router's Host, Origin and gate refusals too); `id: null` only where no
//! id can be read (GET and DELETE, a body that is not JSON or holds no request, a batch
//! longer than `max_batch_items`, a body over the limit).
//!
//! `GET` opens a session's server-to-client stream: `Accept` must list `text/event-stream`
//! (**406**), `MCP-Protocol-Version` as above (**400**), `Mcp-Session-Id` is required
//! (**400**) and must be known (**404**); **503** when `max_streams` streams run. It starts
//! with `retry:` and a priming event, replays the session's buffered events after
//! `Last-Event-ID` (same stream only), then carries the messages not tied to a request, with
//! keep-alive comments when idle, on its own thread (see [`super::stream`]). `DELETE` ends a
//! session and its streams (**200**; **400** without `Mcp-Session-Id`, **404** for an unknown
//! one). Other methods **405** with `Allow: GET, POST, DELETE`. `Origin` is checked by the
//! router for every route ([`origin_allowed`]: loopback, the request's own host, or
//! [`HttpConfig::allowed_origins`](super::HttpConfig::allowed_origins); else **403**).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::stream::{run_detached, Outbox, SseWriter};
use super::{header, host_name, is_loopback_name, Answer, Ctx, Handled};
use crate::auth::gate::{Action, Principal};
use crate::mcp::jsonrpc::{self, Incoming, Message, Outcome, Params, RequestIds, Response};
use crate::mcp::{modern, Era, Outlet, PeerHandle, ProtocolVersion, Reply, RpcError, SessionState};

/// Answer format chosen from `Accept`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Sse,
}

/// A refusal before the message is served: a JSON-RPC error with the given HTTP status,
/// addressed to the requests of the body by [`echo_ids`].
fn rpc_error(status: u16, code: i64, message: &str, details: impl Into<String>) -> Answer {
    let error = RpcError {
        code,
        message: message.to_string(),
        details: Some(details.into()),
    };
    Answer::refusal(status, error.into())
}

/// An error `response` decided before the message is served (by the era's rules or the
/// core), with `status`: addressed like [`rpc_error`] when it has no id.
pub(crate) fn refused(status: u16, response: Response) -> Answer {
    match response.outcome {
        Outcome::Error(error) if response.id.is_none() => Answer::refusal(status, error),
        _ => Answer::json_text(status, response.to_json()),
    }
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

/// Gives a refusal ([`Answer::refusal`]) the ids of the requests in the `body` it refuses:
/// the request's id, or one error per request of a batch, each with its id (see
/// [`jsonrpc::request_ids`]: one pass over the body that keeps nothing else; a batch longer
/// than `max_batch_items` keeps its single `null` error, so a refusal is never longer than
/// that many errors). Every other answer is returned as it is. The one place the
/// transports' and the gate's refusals get their ids, whichever check refused.
pub(crate) fn echo_ids(ctx: &Ctx, answer: Answer, body: &[u8]) -> Answer {
    if answer.refusal.is_none() {
        return answer;
    }
    answer.addressed(&jsonrpc::request_ids(body, ctx.mcp.max_batch_items()))
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

/// `POST /mcp`: the life of one message, top to bottom (the steps of the module docs).
fn post(ctx: &Arc<Ctx>, request: &mut tiny_http::Request, auth: Option<&Principal>) -> Handled {
    // 1. The body, read once.
    let body = match read_body(request, ctx.config.max_body_bytes) {
        Ok(body) => body,
        Err(refused) => return refused.into(),
    };
    match exchange(ctx, request, auth, &body) {
        Ok(answer) => echo_ids(ctx, answer, &body).into(),
        Err(stream) => stream,
    }
}

/// Steps 2 to 7 of [`post`] for `body`; `Err` when a stream takes the request over.
fn exchange(
    ctx: &Arc<Ctx>,
    request: &tiny_http::Request,
    auth: Option<&Principal>,
    body: &[u8],
) -> Result<Answer, Handled> {
    // 2. What the client accepts and sends.
    let accept = header(request, "Accept");
    let Some(format) = negotiate(accept) else {
        return Ok(not_acceptable(
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
    // 3. Parsed once, its era read.
    let mut post = match Post::read(ctx, request, auth, body) {
        Ok(post) => post,
        Err(refused) => return Ok(refused),
    };
    // 4. Authorised once.
    if let Err(refused) = authorize(ctx, auth, "http", &mut post.incoming) {
        return Ok(refused);
    }
    // 5. In a session, except for `initialize` and the stateless era.
    if post.era == Era::Session && post.state.id.is_none() && !post.is_initialize() {
        return Ok(bad_request(
            "Mcp-Session-Id header is required (except for initialize)",
        ));
    }
    post.state.caller = auth.map(Principal::caller);
    post.state.origin = Some(super::origin_of(ctx, request));
    // 6. Served once: on a stream of its own, or here.
    let sse_ok = accepts_sse(accept);
    if let Some((r, meta)) = post.listen() {
        if !sse_ok {
            return Ok(not_acceptable(
                "subscriptions/listen answers with an SSE stream; Accept must include \
                 text/event-stream",
            ));
        }
        let Some(permit) = ctx.pool.acquire() else {
            return Ok(too_many_streams());
        };
        let (r, meta, caller) = (r.clone(), meta.clone(), post.state.caller.clone());
        return Err(listen_stream(ctx, r, meta, permit, caller));
    }
    if sse_ok && post.may_send_first() {
        return Err(stream_answer(ctx, post));
    }
    let Post {
        incoming,
        era,
        mut state,
    } = post;
    let peer = state
        .id
        .as_deref()
        .map(|id| ctx.mcp.peer(Some(id), ctx.outbox(id)));
    let reply = dispatch(ctx, &mut state, incoming, era.clone(), peer);
    // 7. Rendered once (after `initialize`, with the session it created).
    let mut created = None;
    if era == Era::Session && state.id.is_none() {
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
                    created = Some(id);
                    // A session this one replaced (over the address's or key's cap) ends
                    // its streams now.
                    ctx.drop_ended_outboxes();
                }
                Err(e @ crate::mcp::SessionError::TooMany(_)) => {
                    log::info!("initialize from {client:?} refused: {e}");
                    return Ok(too_many_sessions(&e));
                }
                Err(e) => {
                    log::error!("{e}");
                    let e = e.to_string();
                    return Ok(rpc_error(
                        500,
                        RpcError::INTERNAL_ERROR,
                        "Internal error",
                        e,
                    ));
                }
            }
        }
    }
    ctx.mcp.sessions().update(&state);
    Ok(render(&reply, &era, format, created))
}

/// A `POST /mcp` as read: the message parsed once, the era it is served in, and the state it
/// is served with (its session's, or a fresh one).
struct Post {
    incoming: Result<Incoming, Response>,
    era: Era,
    state: SessionState,
}

impl Post {
    /// Step 3 of [`post`]: `body` parsed once and its era read; `Err` is the refusal of the
    /// era's own rules (see the module docs), or 202 for a stateless notification.
    fn read(
        ctx: &Ctx,
        request: &tiny_http::Request,
        auth: Option<&Principal>,
        body: &[u8],
    ) -> Result<Post, Answer> {
        let incoming = jsonrpc::parse(body);
        let declared = header(request, "MCP-Protocol-Version").map(|v| v.trim().to_string());
        let session = match header(request, "Mcp-Session-Id") {
            None => Ok(None),
            Some(id) => ctx
                .mcp
                .sessions()
                .touch(id.trim(), "http")
                .filter(|state| owns(state, auth))
                .map(Some)
                .ok_or(()),
        };
        let mut state = match &session {
            Ok(Some(state)) => state.clone(),
            _ => SessionState::new("http"),
        };
        state.declared_version = declared.clone();
        if let Ok(Incoming::Single(Ok(Message::Request(r)))) = &incoming {
            let era = ctx.mcp.era(&state, r);
            if era != Ok(Era::Session) {
                if let Some(why) = header_mismatch(ctx, request, r, declared.as_deref()) {
                    let mismatch = modern::header_mismatch(Some(r.id.clone()), why);
                    return Err(Answer::json_text(400, mismatch.to_json()));
                }
                let era = era.map_err(|refusal| Answer::json_text(400, refusal.to_json()))?;
                let mut state = SessionState::new("http");
                state.declared_version = declared;
                return Ok(Post {
                    incoming,
                    era,
                    state,
                });
            }
        }
        if let Some(v) = declared.as_deref() {
            let version = ProtocolVersion::parse(v);
            if version.is_none_or(ProtocolVersion::is_modern) {
                // A body that is no message (too deep, too many values, not JSON) gets that
                // error, not one about its version: the version was not the problem.
                let incoming = match incoming {
                    Err(invalid) => return Err(refused(400, invalid)),
                    Ok(incoming) => incoming,
                };
                let notification =
                    matches!(&incoming, Incoming::Single(Ok(Message::Notification(_))));
                if version.is_some() && matches!(session, Ok(None)) && notification {
                    // 2026-07-28 defines no client notifications over HTTP: accepted and
                    // dropped.
                    return Err(Answer::empty(202));
                }
                let id = match &incoming {
                    Incoming::Single(Ok(Message::Request(r))) => Some(r.id.clone()),
                    _ => None,
                };
                return Err(refused(400, modern::unsupported_version(id, v)));
            }
        }
        if session.is_err() {
            return Err(session_not_found());
        }
        if let Ok(Incoming::Batch(items)) = &incoming {
            if let Some(refusal) = ctx.mcp.batch_refusal(state.version, items.len()) {
                return Err(refused(400, refusal));
            }
        }
        Ok(Post {
            incoming,
            era: Era::Session,
            state,
        })
    }

    fn single(&self) -> Option<&jsonrpc::Request> {
        match &self.incoming {
            Ok(Incoming::Single(Ok(Message::Request(r)))) => Some(r),
            _ => None,
        }
    }

    fn is_initialize(&self) -> bool {
        self.single().is_some_and(|r| r.method == "initialize")
    }

    /// A stateless `subscriptions/listen` and its `_meta`.
    fn listen(&self) -> Option<(&jsonrpc::Request, &modern::RequestMeta)> {
        match (self.single(), &self.era) {
            (Some(r), Era::Stateless(meta)) if r.method == "subscriptions/listen" => {
                Some((r, meta))
            }
            _ => None,
        }
    }

    /// Whether the one request may send notifications or requests before its answer, so that
    /// an SSE answer carries them as they happen: a `tools/call` or `prompts/get` that asked
    /// for progress (`_meta.progressToken`) or log messages (stateless: `_meta`'s log level;
    /// in a session: the session's), or in a session whose client can be asked things
    /// (`elicitation`, `sampling`; the stateless era asks through `input_required` instead).
    /// Everything else is answered as plain JSON, which simple clients (curl, scripts) read
    /// most easily.
    fn may_send_first(&self) -> bool {
        let Some(r) = self.single() else {
            return false;
        };
        if !matches!(r.method.as_str(), "tools/call" | "prompts/get") {
            return false;
        }
        let progress = match &r.params {
            Some(Params::Object(p)) => p
                .get("_meta")
                .and_then(|m| m.get("progressToken"))
                .is_some(),
            _ => false,
        };
        let state = &self.state;
        let caps = &state.client_capabilities;
        match &self.era {
            Era::Stateless(meta) => progress || meta.log_level.is_some(),
            Era::Session => {
                state.version.is_some()
                    && state.id.is_some()
                    && (progress
                        || state.log_level.is_some()
                        || caps.get("elicitation").is_some()
                        || caps.get("sampling").is_some())
            }
        }
    }
}

/// Step 6: the core's answer to the message, the one call into it for every era: a single
/// request served in the era read from it ([`crate::mcp::McpServer::serve`]), any other
/// message as a frame ([`crate::mcp::McpServer::handle_incoming_with_peer`]).
fn dispatch(
    ctx: &Ctx,
    state: &mut SessionState,
    incoming: Result<Incoming, Response>,
    era: Era,
    peer: Option<PeerHandle>,
) -> Reply {
    match incoming {
        Ok(Incoming::Single(Ok(Message::Request(r)))) => {
            Reply::Single(ctx.mcp.serve(state, r, era, &peer))
        }
        other => ctx.mcp.handle_incoming_with_peer(state, other, peer),
    }
}

/// Step 7: the reply with the status of its era (see the module docs), as JSON or SSE, with
/// the id of the session `initialize` `created`.
fn render(reply: &Reply, era: &Era, format: Format, created: Option<String>) -> Answer {
    let status = match (reply, era) {
        (Reply::Empty, _) => return Answer::empty(202),
        (Reply::Single(r), Era::Stateless(_)) => match r.error_code() {
            Some(RpcError::METHOD_NOT_FOUND) => 404,
            Some(
                modern::HEADER_MISMATCH
                | modern::MISSING_CLIENT_CAPABILITY
                | modern::UNSUPPORTED_PROTOCOL_VERSION,
            ) => 400,
            _ => 200,
        },
        (Reply::Single(r), Era::Session) if r.id.is_none() => 400,
        _ => 200,
    };
    let answer = match format {
        Format::Json => Answer::json_text(status, reply.to_json().unwrap_or_default()),
        Format::Sse => sse(reply, status),
    };
    match created {
        Some(id) => answer.with_header("Mcp-Session-Id", id),
        None => answer,
    }
}

/// Step 6 on a stream of its own thread (the worker's when every stream slot is taken): the
/// request's messages as they happen, then its response ([`AnswerStream`]).
fn stream_answer(ctx: &Arc<Ctx>, post: Post) -> Handled {
    let permit = ctx.pool.acquire();
    let ctx = ctx.clone();
    Handled::Take(Box::new(move |request, headers| {
        run_detached("mcp-post-stream", permit, move || {
            let Post {
                incoming,
                era,
                mut state,
            } = post;
            let out = AnswerStream::start(&ctx, request, &headers, state.id.as_deref());
            let peer = ctx.mcp.peer(state.id.as_deref(), out.clone());
            let reply = dispatch(&ctx, &mut state, incoming, era, Some(peer));
            ctx.mcp.sessions().update(&state);
            if let Some(json) = reply.to_json() {
                out.send(&json);
            }
            out.finish();
        });
    }))
}

/// The SSE answer to one request, written straight to its connection while the client reads
/// it. In a session each event is first kept in the session's replay buffer (with an `id:`
/// for `Last-Event-ID`) and, once the client went away, goes to the session's GET stream;
/// stateless answers are not resumable (no ids, no priming event).
struct AnswerStream {
    writer: Mutex<Option<SseWriter>>,
    /// The session's outbox and this stream's number in it.
    replay: Option<(Arc<Outbox>, u64)>,
}

impl AnswerStream {
    fn start(
        ctx: &Ctx,
        request: tiny_http::Request,
        headers: &[(&'static str, String)],
        session: Option<&str>,
    ) -> Arc<Self> {
        let replay = session.map(|id| {
            let outbox = ctx.outbox(id);
            let (stream, priming) = outbox.open_stream();
            (outbox, stream, priming)
        });
        let writer = match SseWriter::start(request, headers) {
            Ok(mut w) => {
                let primed = replay.as_ref().is_none_or(|(_, _, priming)| {
                    w.retry(ctx.config.retry_ms).is_ok() && w.event(Some(priming), None, "").is_ok()
                });
                primed.then_some(w)
            }
            Err(e) => {
                log::debug!("an SSE answer could not start: {e}");
                None
            }
        };
        Arc::new(Self {
            writer: Mutex::new(writer),
            replay: replay.map(|(outbox, stream, _)| (outbox, stream)),
        })
    }

    /// A comment (keep-alive); `false` once the client went away.
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

impl Outlet for AnswerStream {
    fn send(&self, message: &str) -> bool {
        let id = self
            .replay
            .as_ref()
            .map(|(outbox, stream)| outbox.record(*stream, message));
        let mut guard = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(w) = guard.as_mut() {
            if w.event(id.as_deref(), Some("message"), message).is_ok() {
                return true;
            }
            log::debug!("an SSE answer was closed by the client");
            *guard = None;
        }
        drop(guard);
        match (&self.replay, id) {
            (Some((outbox, _)), Some(id)) => outbox.deliver(&id, message),
            _ => false,
        }
    }
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
    meta: modern::RequestMeta,
    permit: super::stream::Permit,
    caller: Option<crate::mcp::Caller>,
) -> Handled {
    let ctx = ctx.clone();
    Handled::Take(Box::new(move |request, headers| {
        run_detached("mcp-listen-stream", Some(permit), move || {
            let out = AnswerStream::start(&ctx, request, &headers, None);
            let (tx, rx) = crossbeam_channel::bounded::<String>(LISTEN_QUEUE);
            let queue: Arc<dyn Outlet> =
                Arc::new(move |m: &str| tx.try_send(m.to_string()).is_ok());
            match ctx
                .mcp
                .open_listen(&r, &meta, queue, "http", caller.as_ref())
            {
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
/// `params.name` of `tools/call` and `prompts/get` or the `params.uri` of `resources/read`,
/// and the `Mcp-Param-*` headers of a `tools/call` its mirrored arguments
/// ([`modern::param_header_mismatch`]).
fn header_mismatch(
    ctx: &Ctx,
    request: &tiny_http::Request,
    r: &jsonrpc::Request,
    declared: Option<&str>,
) -> Option<String> {
    let params = match &r.params {
        Some(Params::Object(p)) => Some(p),
        _ => None,
    };
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
    let name = modern::name_source(&r.method).and_then(|field| {
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
    });
    name.or_else(|| {
        let tool = params?.get("name")?.as_str()?;
        let arguments = params?.get("arguments").and_then(|a| a.as_object());
        (r.method == "tools/call").then(|| {
            modern::param_header_mismatch(ctx.mcp.param_headers(tool), arguments, |n| {
                header(request, n)
            })
        })?
    })
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
                // An open stream keeps its session from expiring; a session that is gone
                // (replaced, deleted) ends its stream.
                if let Some(id) = session {
                    if !ctx.mcp.sessions().keep_alive(id) {
                        return;
                    }
                }
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
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

/// Step 4 of [`post`] (and of legacy `/message`): the gate's step 2 for each request of the
/// message, once each ([`crate::auth::gate::Gate::authorize`]: the method's permission, for
/// `tools/call` the tool's). A single request refused is answered with its JSON-RPC error
/// (its HTTP status, its id). In a batch (checked once the batch is accepted, see
/// [`crate::mcp::McpServer::batch_refusal`]) every request after the first counts against
/// the caller's rate limits like a request of its own (the first was counted with the HTTP
/// request) and needs its own permission; a refused request is replaced by its JSON-RPC error
/// (with its id: -32029 beyond the rate limit, -32003 without the permission), so it is never
/// computed, and the others are served.
pub(crate) fn authorize(
    ctx: &Ctx,
    auth: Option<&Principal>,
    transport: &'static str,
    incoming: &mut Result<Incoming, Response>,
) -> Result<(), Answer> {
    let Some(principal) = auth else {
        return Ok(());
    };
    match incoming {
        Ok(Incoming::Single(Ok(Message::Request(r)))) => authorize_item(ctx, auth, transport, r)
            .map_err(|d| super::deny(&d, true, &RequestIds::Single(r.id.clone()))),
        Ok(Incoming::Batch(items)) => {
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
                    *item = Err(Response {
                        id: Some(r.id.clone()),
                        outcome: Outcome::Error(d.rpc_error()),
                    });
                }
            }
            Ok(())
        }
        _ => Ok(()),
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
    Answer::with_body(status, "text/event-stream", body.into_bytes())
        .with_header("Cache-Control", "no-cache")
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
