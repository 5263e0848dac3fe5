//! Method dispatch: the transport-agnostic heart of the MCP server.
//!
//! A transport reads one frame (an HTTP body, a stdio line), and calls
//! [`McpServer::handle_with_peer`] with the caller's [`SessionState`]; it gets back a [`Reply`] to write
//! (nothing for notifications). Each request of a frame is served in its era, read from it
//! once by [`McpServer::era`] (data on the request: [`Era::Session`] for 2024-11-05 to
//! 2025-11-25, [`Era::Stateless`] with its `_meta` for 2026-07-28) and served by
//! [`McpServer::serve`], the one way to dispatch, counted once in the metrics. The HTTP
//! transport, which must decide on status codes and the era's headers before dispatch, parses
//! first with [`jsonrpc::parse`], reads the era itself and calls [`McpServer::serve`] (or
//! [`McpServer::handle_incoming_with_peer`] for batches and notifications).
//!
//! Methods served in a session: `initialize` (version negotiation), `ping`, `tools/list`
//! (cursor pagination), `tools/call` (through the [`Handler`]), the resources, prompts,
//! completion and `logging/setLevel`. `notifications/initialized` marks the session
//! initialized; other notifications and client responses are dropped. Anything else is -32601
//! and the session stays usable. What a session sees is shaped by its negotiated version:
//! `annotations` from 2025-03-26, `title`, `outputSchema` and `structuredContent` from
//! 2025-06-18, batches only on 2025-03-26. A stateless request gets a state of its own, the
//! methods of its era (`server/discover`, the tasks extension, multi round-trip
//! `input_required` results; see [`super::modern`], [`super::input`], [`super::tasks`]) and
//! results completed with `resultType` and the server's identity. A panic in the handler
//! becomes -32603 for that request alone.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::handler::{CompletionRef, Handler, LogLevel, PeerHandle, RequestContext, RpcError};
use super::input;
use super::jsonrpc::{self, Incoming, Message, Outcome, Params, Request, Response};
use super::modern;
use super::peer::{Hub, Outlet, OutletPeer, Pending};
use super::person::Confirmations;
use super::session::{ProtocolVersion, SessionState, SessionStore};
use super::tasks::{self, TaskStore, TaskSupport};

/// Tunables of the MCP core.
#[derive(Debug, Clone, PartialEq)]
pub struct McpConfig {
    /// Tools per `tools/list` page (default 50, at least 1).
    pub page_size: usize,
    /// HTTP sessions idle this long are forgotten (default 1 h).
    pub session_idle_timeout: Duration,
    /// At most this many HTTP sessions (default 1,000), per client address (default 32) and
    /// per API key (default 64); see [`super::session`] for which one makes room.
    pub max_sessions: usize,
    pub max_sessions_per_client: usize,
    pub max_sessions_per_key: usize,
    /// Items in one JSON-RPC batch (default [`DEFAULT_MAX_BATCH_ITEMS`]); a longer batch is
    /// refused whole with -32600 before any item is looked at.
    pub max_batch_items: usize,
    /// Bytes of one batch's answer (default [`DEFAULT_MAX_BATCH_ANSWER_BYTES`]): once the
    /// answers reach it, the item that crossed it and every later request get -32600
    /// instead of their answer (later ones are not computed).
    pub max_batch_answer_bytes: usize,
    /// Bounds of the tasks of the `io.modelcontextprotocol/tasks` extension.
    pub tasks: super::tasks::TaskLimits,
    /// How long a person's confirmation (and a password page) is awaited and valid (default
    /// [`super::confirm::LIFETIME`]).
    pub confirmation_lifetime: Duration,
}

/// Default [`McpConfig::max_batch_items`]: the batch tools cover bulk work, a client batches
/// a handful of calls; 20 `tools/list` answers are about 1 MB.
pub const DEFAULT_MAX_BATCH_ITEMS: usize = 20;

/// Default [`McpConfig::max_batch_answer_bytes`] (4 MiB): a few large `list_devices` pages, far
/// below the unit's memory cap even with every worker answering one at once.
pub const DEFAULT_MAX_BATCH_ANSWER_BYTES: usize = 4 * 1024 * 1024;

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            page_size: 50,
            session_idle_timeout: Duration::from_secs(3600),
            max_sessions: 1000,
            max_sessions_per_client: super::session::DEFAULT_SESSIONS_PER_CLIENT,
            max_sessions_per_key: super::session::DEFAULT_SESSIONS_PER_KEY,
            max_batch_items: DEFAULT_MAX_BATCH_ITEMS,
            max_batch_answer_bytes: DEFAULT_MAX_BATCH_ANSWER_BYTES,
            tasks: super::tasks::TaskLimits::default(),
            confirmation_lifetime: super::confirm::LIFETIME,
        }
    }
}

/// The detail of the -32600 for batch items beyond the answer budget.
fn over_budget(budget: usize) -> String {
    format!(
        "the batch's answer exceeds the limit of {budget} bytes ([server] \
         max_batch_answer_bytes); send this request on its own"
    )
}

/// The protocol era a request is served in: data read from the request once
/// ([`McpServer::era`]) and carried with it to dispatch, never a path of its own.
#[derive(Debug, Clone, PartialEq)]
pub enum Era {
    /// 2024-11-05 to 2025-11-25: served in its session, at the version `initialize`
    /// negotiated.
    Session,
    /// 2026-07-28: stateless, as its `_meta` declares (version, client capabilities, log
    /// level; see [`super::modern`]).
    Stateless(modern::RequestMeta),
}

/// What to send back for one frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Nothing (notifications, client responses, or a batch of only those).
    Empty,
    /// One response object.
    Single(Response),
    /// A batch answer (JSON array), never empty.
    Batch(Vec<Response>),
}

impl Reply {
    /// The reply as one line of compact JSON, or `None` for [`Reply::Empty`].
    pub fn to_json(&self) -> Option<String> {
        match self {
            Reply::Empty => None,
            Reply::Single(r) => Some(r.to_json()),
            Reply::Batch(rs) => Some(format!(
                "[{}]",
                rs.iter()
                    .map(Response::to_json)
                    .collect::<Vec<_>>()
                    .join(",")
            )),
        }
    }
}

/// The MCP server core, shared by all transports (`Send + Sync`; wrap in an `Arc`).
pub struct McpServer {
    handler: Arc<dyn Handler>,
    sessions: SessionStore,
    page_size: usize,
    pending: Arc<Pending>,
    hub: Arc<Hub>,
    tasks: Arc<TaskStore>,
    max_batch_items: usize,
    max_batch_answer_bytes: usize,
    /// Seals the `requestState` of 2026-07-28 multi round-trip requests ([`input`]).
    sealer: input::Sealer,
    /// The pending confirmations and password pages of every request ([`super::person`]).
    confirmations: Arc<Confirmations>,
    /// Per tool, its parameters mirrored into `Mcp-Param-*` headers (read once: the tool
    /// catalogue does not change while the server runs).
    param_headers: std::sync::OnceLock<std::collections::HashMap<String, Vec<(String, String)>>>,
}

impl McpServer {
    /// A server dispatching to `handler`.
    pub fn new(handler: Arc<dyn Handler>, config: McpConfig) -> Self {
        let hub = Arc::new(Hub::default());
        Self {
            handler,
            sessions: SessionStore::with_limits(
                config.session_idle_timeout,
                super::session::SessionLimits {
                    max: config.max_sessions,
                    per_client: config.max_sessions_per_client,
                    per_key: config.max_sessions_per_key,
                },
            ),
            page_size: config.page_size.max(1),
            pending: Arc::new(Pending::default()),
            tasks: Arc::new(TaskStore::new(config.tasks.clone(), hub.clone())),
            hub,
            max_batch_items: config.max_batch_items.max(1),
            max_batch_answer_bytes: config.max_batch_answer_bytes.max(1024),
            sealer: input::Sealer::new(),
            confirmations: Arc::new(Confirmations::new(config.confirmation_lifetime)),
            param_headers: std::sync::OnceLock::new(),
        }
    }

    /// The -32600 refusal (`id: null`) of a batch of `items` items on a session at `version`,
    /// or `None` when such a batch is served: batches exist only in protocol version
    /// 2025-03-26 (added there, removed in 2025-06-18), and hold at most
    /// [`McpConfig::max_batch_items`] items. Transports call it before counting or
    /// authorizing the items, so a refused batch costs nothing.
    pub fn batch_refusal(
        &self,
        version: Option<ProtocolVersion>,
        items: usize,
    ) -> Option<Response> {
        if items > self.max_batch_items {
            return Some(Response::invalid_request(
                None,
                format!(
                    "batch of {items} items exceeds the limit of {} items per batch \
                     ([server] max_batch_items); send fewer at a time",
                    self.max_batch_items
                ),
            ));
        }
        if version != Some(ProtocolVersion::V2025_03_26) {
            let why = match version {
                Some(v) => format!("batches are not supported in protocol version {v}"),
                None => "batches are not allowed before initialize".to_string(),
            };
            return Some(Response::invalid_request(None, why));
        }
        None
    }

    /// [`McpConfig::max_batch_items`]: also the most errors a refused batch is answered
    /// with, one per request (see [`jsonrpc::request_ids`]).
    pub fn max_batch_items(&self) -> usize {
        self.max_batch_items
    }

    /// The parameters of `tool` a 2026-07-28 client mirrors into `Mcp-Param-*` headers
    /// (see [`modern::param_headers`]); empty for most tools.
    pub fn param_headers(&self, tool: &str) -> &[(String, String)] {
        self.param_headers
            .get_or_init(|| {
                guarded(|| self.handler.list_tools())
                    .unwrap_or_default()
                    .into_iter()
                    .map(|t| (t.name, modern::param_headers(&t.input_schema)))
                    .filter(|(_, p)| !p.is_empty())
                    .collect()
            })
            .get(tool)
            .map_or(&[], Vec::as_slice)
    }

    /// The password pages of the requests' confirmations, for the transport that serves them
    /// (`/confirm/{id}`, see [`super::password`]).
    pub fn password_pages(&self) -> &Arc<super::password::PasswordPages> {
        self.confirmations.pages()
    }

    /// Outlets of sessions for notifications not tied to a request.
    pub fn hub(&self) -> &Hub {
        &self.hub
    }

    /// The handler's [`PeerHandle`] for a request of `session` whose messages go to `outlet`;
    /// answers to its server-to-client requests are accepted from that session only.
    pub fn peer(&self, session: Option<&str>, outlet: Arc<dyn Outlet>) -> PeerHandle {
        PeerHandle(Arc::new(OutletPeer {
            outlet,
            pending: self.pending.clone(),
            session: session.map(str::to_string),
        }))
    }

    /// Sends `notifications/resources/updated {uri}` to every session subscribed to `uri`
    /// that has an outlet. Returns how many sessions it reached.
    pub fn notify_resource_updated(&self, uri: &str) -> usize {
        let message = json!({
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": uri},
        })
        .to_string();
        let mut targets = self.sessions.subscribers(uri);
        targets.extend(self.hub.local_subscribers(uri));
        let sessions = targets
            .iter()
            .filter(|k| self.hub.send_to(k, &message))
            .count();
        sessions
            + self.hub.send_to_listeners(
                "notifications/resources/updated",
                &json!({ "uri": uri }),
                |f| f.resource_uris.contains(uri),
            )
    }

    /// Sends `notifications/message {level, logger, data}` to every session (HTTP or local)
    /// with an outlet whose `logging/setLevel` admits `level` (clients that declared no level
    /// get none). Returns how many sessions it reached.
    pub fn notify_log(&self, level: LogLevel, logger: &str, data: Value) -> usize {
        let message = json!({
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": level.as_str(), "logger": logger, "data": data},
        })
        .to_string();
        let mut targets = self.sessions.log_levels();
        targets.extend(self.hub.local_log_levels());
        targets
            .iter()
            .filter(|(key, min)| level >= *min && self.hub.send_to(key, &message))
            .count()
    }

    /// Every URI some session (HTTP or local) is subscribed to: what a notifier that lost
    /// track of changes must announce as updated.
    pub fn subscribed_uris(&self) -> Vec<String> {
        let mut uris = self.sessions.subscribed_uris();
        uris.extend(self.hub.local_subscribed_uris());
        uris.extend(self.hub.listened_uris());
        uris.into_iter().collect()
    }

    /// Sends `notifications/resources/list_changed` to every session with an outlet.
    pub fn notify_list_changed(&self) -> usize {
        let message = json!({
            "jsonrpc": "2.0",
            "method": "notifications/resources/list_changed",
        })
        .to_string();
        let sessions = self
            .hub
            .keys()
            .iter()
            .filter(|k| self.hub.send_to(k, &message))
            .count();
        sessions
            + self
                .hub
                .send_to_listeners("notifications/resources/list_changed", &json!({}), |f| {
                    f.resources_list_changed
                })
    }

    /// Opens a `subscriptions/listen` stream (MCP 2026-07-28) for `caller` on `transport`,
    /// writing to `outlet`; `meta` is the request's validated `_meta` ([`Era::Stateless`]).
    /// Validates its `notifications` filter, keeps what this server honours (resource list
    /// changes, updates of the URIs that exist, and with `taskIds` (extension
    /// `io.modelcontextprotocol/tasks`, which the request must declare, else -32021) the live
    /// tasks `caller` created; its tools and prompts never change), sends
    /// `notifications/subscriptions/acknowledged` with that subset and registers the stream.
    /// `Err` is the error response to send instead. The stream lives as long as the returned
    /// guard; [`McpServer::listen_closed`] is its graceful last message.
    pub fn open_listen(
        &self,
        request: &Request,
        meta: &modern::RequestMeta,
        outlet: Arc<dyn Outlet>,
        transport: &str,
        caller: Option<&super::Caller>,
    ) -> Result<super::peer::Listening<'_>, Response> {
        let id = request.id.clone();
        let params = match &request.params {
            Some(Params::Object(p)) => Some(p),
            _ => None,
        };
        let invalid = |what: &str| {
            let e = RpcError::invalid_params(format!("Invalid params: `notifications{what}"));
            Response::error(Some(request.id.clone()), e)
        };
        let wanted = params
            .and_then(|p| p.get("notifications"))
            .cloned()
            .unwrap_or(Value::Null);
        if !(wanted.is_object() || wanted.is_null()) {
            return Err(invalid("` must be an object"));
        }
        let mut filter = super::peer::ListenFilter {
            resources_list_changed: wanted.get("resourcesListChanged") == Some(&Value::Bool(true)),
            ..Default::default()
        };
        if let Some(uris) = wanted.get("resourceSubscriptions") {
            let Some(uris) = uris.as_array() else {
                return Err(invalid(".resourceSubscriptions` must be an array of URIs"));
            };
            for uri in uris.iter().filter_map(Value::as_str) {
                if guarded(|| self.handler.check_subscribable(uri)).is_ok_and(|r| r.is_ok()) {
                    filter.resource_uris.insert(uri.to_string());
                }
            }
        }
        if let Some(ids) = wanted.get("taskIds") {
            if !tasks::declared(&meta.client_capabilities) {
                return Err(tasks::missing_extension(
                    Some(id),
                    "task status notifications belong to the tasks extension",
                ));
            }
            let Some(ids) = ids.as_array() else {
                return Err(invalid(".taskIds` must be an array of task ids"));
            };
            let ids = ids.iter().filter_map(Value::as_str).map(str::to_string);
            filter.task_ids = self.tasks.owned(&tasks::owner_of(transport, caller), ids);
        }
        let mut agreed = Map::new();
        if wanted.get("taskIds").is_some() {
            agreed.insert("taskIds".into(), json!(filter.task_ids));
        }
        if filter.resources_list_changed {
            agreed.insert("resourcesListChanged".into(), Value::Bool(true));
        }
        if wanted.get("resourceSubscriptions").is_some() {
            agreed.insert(
                "resourceSubscriptions".into(),
                json!(filter.resource_uris.iter().collect::<Vec<_>>()),
            );
        }
        let subscription = serde_json::to_value(&id).unwrap_or(Value::Null);
        outlet.send(&super::peer::tagged(
            "notifications/subscriptions/acknowledged",
            json!({ "notifications": agreed }),
            &subscription,
        ));
        let followed: Vec<String> = filter.task_ids.iter().cloned().collect();
        let listening = self
            .hub
            .listen(outlet.clone(), subscription.clone(), filter);
        // Each followed task's state as it is now: a task that ended before the stream
        // opened is known to have ended (every later change follows as it happens).
        for state in followed.iter().filter_map(|t| self.tasks.state_of(t)) {
            outlet.send(&super::peer::tagged(
                tasks::STATUS_NOTIFICATION,
                state,
                &subscription,
            ));
        }
        Ok(listening)
    }

    /// The graceful end of the `subscriptions/listen` stream opened by `request` (the server
    /// closes it, e.g. at shutdown).
    pub fn listen_closed(&self, request: &Request) -> Response {
        let subscription = serde_json::to_value(&request.id).unwrap_or(Value::Null);
        Response::result(
            request.id.clone(),
            json!({
                "resultType": "complete",
                "_meta": { (modern::META_SUBSCRIPTION_ID): subscription },
            }),
        )
    }

    /// The HTTP transport's sessions.
    pub fn sessions(&self) -> &SessionStore {
        &self.sessions
    }

    /// Parses and handles one frame, with a way back to the client (progress, log messages,
    /// elicitation) for the handler. `state` is updated in place (`initialize` sets the
    /// version, `notifications/initialized` the flag); the caller persists it.
    pub fn handle_with_peer(
        &self,
        state: &mut SessionState,
        raw: &[u8],
        peer: Option<PeerHandle>,
    ) -> Reply {
        self.handle_incoming_with_peer(state, jsonrpc::parse(raw), peer)
    }

    /// [`McpServer::handle_with_peer`] for an already parsed frame (see [`jsonrpc::parse`]).
    ///
    /// Batches are answered only when the session negotiated 2025-03-26 and hold at most
    /// [`McpConfig::max_batch_items`] items; otherwise the whole batch gets one -32600
    /// (`id: null`, see [`McpServer::batch_refusal`]). Their answers are bounded by
    /// [`McpConfig::max_batch_answer_bytes`].
    pub fn handle_incoming_with_peer(
        &self,
        state: &mut SessionState,
        incoming: Result<Incoming, Response>,
        peer: Option<PeerHandle>,
    ) -> Reply {
        match incoming {
            Err(parse_error) => Reply::Single(parse_error),
            Ok(Incoming::Single(Err(invalid))) => Reply::Single(invalid),
            Ok(Incoming::Single(Ok(message))) => {
                match self.handle_message(state, message, false, &peer) {
                    Some(r) => Reply::Single(r),
                    None => Reply::Empty,
                }
            }
            Ok(Incoming::Batch(items)) => {
                if let Some(refusal) = self.batch_refusal(state.version, items.len()) {
                    return refused_batch(refusal, &items, self.max_batch_items);
                }
                let budget = self.max_batch_answer_bytes;
                let mut used = 0usize;
                let mut answers: Vec<Response> = Vec::with_capacity(items.len());
                for item in items {
                    let over = used > budget;
                    let answer = match item {
                        Err(invalid) => Some(invalid),
                        Ok(Message::Request(r)) if over => {
                            Some(Response::invalid_request(Some(r.id), over_budget(budget)))
                        }
                        Ok(message) => self.handle_message(state, message, true, &peer),
                    };
                    let Some(mut answer) = answer else { continue };
                    let size = serde_json::to_vec(&answer).map_or(0, |v| v.len());
                    used = used.saturating_add(size);
                    if used > budget && !over {
                        // The answer that crossed the limit is not sent either.
                        answer = Response::invalid_request(answer.id, over_budget(budget));
                    }
                    answers.push(answer);
                }
                if answers.is_empty() {
                    Reply::Empty
                } else {
                    Reply::Batch(answers)
                }
            }
        }
    }

    fn handle_message(
        &self,
        state: &mut SessionState,
        message: Message,
        in_batch: bool,
        peer: &Option<PeerHandle>,
    ) -> Option<Response> {
        match message {
            Message::ClientResponse(r) => {
                self.pending.resolve(state.id.as_deref(), r);
                None
            }
            Message::Notification(n) => {
                match n.method.as_str() {
                    "notifications/initialized" => state.initialized = true,
                    other => log::debug!("ignoring notification {other}"),
                }
                None
            }
            Message::Request(request) => Some(match self.era(state, &request) {
                Ok(era) => self.serve_in(state, request, era, in_batch, peer),
                Err(refusal) => refusal,
            }),
        }
    }

    /// The era `request` is served in, read from it once: [`Era::Stateless`] with its `_meta`
    /// when it names its version in `_meta`, its method exists only in 2026-07-28 (outside a
    /// session negotiated at an older version, where it is -32601), or it comes
    /// without a negotiated session and the transport declared a version the handshake does
    /// not know (`state.declared_version`); else [`Era::Session`]. `Err` is the answer to a
    /// stateless request whose `params` or `_meta` are not valid (-32602, -32022).
    pub fn era(&self, state: &SessionState, request: &Request) -> Result<Era, Response> {
        let params = match &request.params {
            Some(Params::Object(p)) => Some(p),
            _ => None,
        };
        // Inside a negotiated session of an older version, a method of 2026-07-28 alone
        // (`server/discover`) does not exist: the session answers it -32601, as a server of
        // that version would, instead of holding it to the new era's headers (-32020).
        let in_legacy_session = state.version.is_some_and(|v| !v.is_modern());
        let stateless = (modern::modern_only(&request.method) && !in_legacy_session)
            || modern::meta_version(params).is_some()
            || (state.version.is_none()
                && state.declared_version.as_deref().is_some_and(|v| {
                    ProtocolVersion::parse(v).is_none_or(ProtocolVersion::is_modern)
                }));
        if !stateless {
            return Ok(Era::Session);
        }
        if matches!(request.params, Some(Params::Array(_))) {
            return Err(Response::error(
                Some(request.id.clone()),
                RpcError::invalid_params("Invalid params: `params` must be an object"),
            ));
        }
        modern::RequestMeta::parse(params)
            .map(Era::Stateless)
            .map_err(|e| e.into_response(Some(request.id.clone())))
    }

    /// Serves one request in its `era` ([`McpServer::era`]): the one way a request reaches
    /// dispatch, counted once in the metrics. `state` is the session's (updated in place) in
    /// [`Era::Session`]; a stateless request is served with a state of its own and leaves it
    /// alone.
    pub fn serve(
        &self,
        state: &mut SessionState,
        request: Request,
        era: Era,
        peer: &Option<PeerHandle>,
    ) -> Response {
        self.serve_in(state, request, era, false, peer)
    }

    fn serve_in(
        &self,
        state: &mut SessionState,
        request: Request,
        era: Era,
        in_batch: bool,
        peer: &Option<PeerHandle>,
    ) -> Response {
        let started = std::time::Instant::now();
        // Only for the metrics: the method and tool are bounded there, so only the
        // `tools/call` name is looked at (no allocation).
        let method = metric_method(&request.method);
        let tool = (method == "tools/call")
            .then(|| tool_name(&request.params))
            .flatten();
        let id = request.id.clone();
        let response = match era {
            Era::Stateless(meta) => self.serve_stateless(state, request, meta, peer),
            Era::Session if in_batch && request.method == "initialize" => Response::error(
                Some(id),
                RpcError {
                    code: RpcError::INVALID_REQUEST,
                    message: "Invalid Request".into(),
                    details: Some("initialize must not be part of a batch".into()),
                },
            ),
            Era::Session => match self.dispatch(state, request, peer, None) {
                Ok(outcome) => Response {
                    id: Some(id),
                    outcome,
                },
                Err(error) => Response::error(Some(id), error),
            },
        };
        count_request(
            state.transport,
            method,
            tool,
            response.error_code().is_none(),
            started,
        );
        response
    }

    /// One 2026-07-28 request with its validated `_meta`: refuses the methods the era
    /// removed (-32601), answers `server/discover`, and dispatches the rest with a state of
    /// the request's own (its capabilities and log level; the session, if any, is left
    /// alone). Results get `resultType`, the server's identity and, for the lists and reads,
    /// the handler's cache hints; "resource not found" becomes -32602.
    fn serve_stateless(
        &self,
        state: &SessionState,
        request: Request,
        meta: modern::RequestMeta,
        peer: &Option<PeerHandle>,
    ) -> Response {
        let id = request.id.clone();
        let params = match &request.params {
            Some(Params::Object(p)) => Some(p),
            _ => None,
        };
        let uri = params
            .and_then(|p| p.get("uri"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let method = request.method.clone();
        let tool = params
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .filter(|_| method == "tools/call");
        if let Some(tool) = tool {
            let required =
                guarded(|| self.handler.required_client_capabilities(tool)).unwrap_or_default();
            let missing: Vec<&str> = required
                .into_iter()
                .filter(|c| meta.client_capabilities.get(*c).is_none())
                .collect();
            if !missing.is_empty() {
                return modern::missing_capabilities(Some(id), &missing);
            }
        }
        // Extension io.modelcontextprotocol/tasks: which calls become tasks.
        let with_tasks = tasks::declared(&meta.client_capabilities);
        let support = match tool {
            Some(tool) => guarded(|| self.handler.task_support(tool)).unwrap_or_default(),
            None if method == "tools/call" => {
                guarded(|| self.handler.task_support("")).unwrap_or_default()
            }
            None => TaskSupport::Forbidden,
        };
        if !with_tasks && support == TaskSupport::Required {
            return tasks::missing_extension(Some(id), "this tool runs only as a task");
        }
        if !with_tasks && tasks::is_task_method(&method) {
            return tasks::missing_extension(Some(id), "the task methods belong to the extension");
        }
        // Multi round-trip requests (`tools/call`, `prompts/get`, `resources/read`; `None` for
        // every other method): the retry's answers and verified state for the handler, and its
        // question turned into an `input_required` result ([`input`]).
        let identity = input::caller_identity(state.transport, state.caller.as_ref());
        let now = std::time::SystemTime::now();
        let round = match input::begin(
            &self.sealer,
            &method,
            params,
            &identity,
            &meta.client_capabilities,
            now,
        ) {
            Ok(round) => round.map(Arc::new),
            Err(e) => return Response::error(Some(id), e),
        };
        // The answer the round asked for instead of the outcome, if the handler asked.
        let asked = |failed_with: Option<&RpcError>, params: Option<&Map<String, Value>>| {
            let round = round.as_deref()?;
            let answer = input::finish(
                &self.sealer,
                round,
                failed_with,
                &method,
                params,
                &identity,
                now,
            );
            match answer {
                Ok(None) => None,
                Ok(Some(result)) => Some(Response::result(
                    id.clone(),
                    modern::finish_result(result, &self.server_info_value(), None),
                )),
                Err(missing) => Some(modern::missing_capabilities(Some(id.clone()), &missing)),
            }
        };
        let outcome = if modern::REMOVED_METHODS.contains(&method.as_str()) {
            Err(RpcError {
                code: RpcError::METHOD_NOT_FOUND,
                message: format!("Method not found: {method}"),
                details: Some(format!(
                    "`{method}` does not exist in protocol version 2026-07-28; send each \
                     request with its `_meta` instead"
                )),
            })
        } else if method == "server/discover" {
            self.discover()
        } else if method == "subscriptions/listen" {
            Err(RpcError {
                code: RpcError::METHOD_NOT_FOUND,
                message: format!("Method not found: {method}"),
                details: Some("this transport offers no subscription streams".into()),
            })
        } else if tasks::is_task_method(&method) {
            self.tasks.handle(
                &method,
                params,
                &tasks::owner_of(state.transport, state.caller.as_ref()),
            )
        } else if support != TaskSupport::Forbidden && with_tasks {
            // Input asked by a multi round-trip request before the task starts is answered
            // here, as for any call (`round` above); the task exists once the tool got past it.
            let spawned = self.start_task(
                state,
                params.cloned().unwrap_or_default(),
                meta,
                round.clone(),
            );
            match spawned {
                Ok(tasks::Spawned::Asked(asked_for)) => {
                    if let Some(answer) = round.is_some().then(|| asked(Some(&asked_for), params)) {
                        return answer.unwrap_or_else(|| Response::error(Some(id), asked_for));
                    }
                    Err(asked_for)
                }
                Ok(tasks::Spawned::Task(created)) => Ok(created),
                Err(e) => Err(e),
            }
        } else {
            let params_copy = round.as_ref().and(params.cloned());
            let mut own = SessionState::new(state.transport);
            own.version = Some(ProtocolVersion::V2026_07_28);
            own.initialized = true;
            own.caller = state.caller.clone();
            // The address the client reached this server at (a password page's URL).
            own.origin = state.origin.clone();
            own.log_level = meta.log_level;
            // Server-to-client requests do not exist in this era: the handler must not ask.
            let mut caps = meta.client_capabilities;
            if let Some(c) = caps.as_object_mut() {
                for gone in ["elicitation", "sampling", "roots"] {
                    c.remove(gone);
                }
            }
            own.client_capabilities = caps;
            // A modern result gets members of its own (`resultType`, `_meta`): a tool answer
            // rendered as JSON text for the older eras is read back into a tree here.
            let outcome = self.dispatch(&mut own, request, peer, round.clone());
            if let Some(answer) = asked(outcome.as_ref().err(), params_copy.as_ref()) {
                return answer;
            }
            outcome.and_then(|outcome| match outcome {
                Outcome::Result(value) => Ok(value),
                Outcome::Json(raw) => serde_json::from_str(raw.get())
                    .map_err(|e| RpcError::internal(format!("a tool answer: {e}"))),
                Outcome::Error(e) => Err(RpcError {
                    code: e.code,
                    message: e.message,
                    details: Some(e.data.details),
                }),
            })
        };
        match outcome {
            Ok(value) => {
                let info = self.server_info_value();
                let hint = modern::cacheable(&method)
                    .then(|| guarded(|| self.handler.cache_hint(&method, uri.as_deref())).ok())
                    .flatten();
                Response::result(id, modern::finish_result(value, &info, hint))
            }
            Err(mut error) if error.code == RpcError::RESOURCE_NOT_FOUND => {
                // 2026-07-28: "resource not found" is invalid params, naming the URI.
                error.code = RpcError::INVALID_PARAMS;
                Response::error_with_data(Some(id), error, json!({ "uri": uri }))
            }
            Err(error) => Response::error(Some(id), error),
        }
    }

    /// The handler's `serverInfo` as JSON (`null` if it fails).
    fn server_info_value(&self) -> Value {
        guarded(|| self.handler.server_info())
            .ok()
            .and_then(|i| serde_json::to_value(i).ok())
            .unwrap_or(Value::Null)
    }

    /// `server/discover`: every version served, the capabilities (with the extensions of
    /// this era), the instructions (the server's identity is added to `_meta` with every
    /// modern result).
    fn discover(&self) -> Result<Value, RpcError> {
        let instructions = guarded(|| self.handler.instructions())?;
        let mut capabilities = capabilities();
        capabilities["extensions"] = json!({ (tasks::EXTENSION): {} });
        Ok(json!({
            "supportedVersions": modern::supported_versions(),
            "capabilities": capabilities,
            "instructions": instructions,
        }))
    }

    /// A 2026-07-28 `tools/call` run as a task (extension `io.modelcontextprotocol/tasks`):
    /// the name and arguments are checked now (-32602 at once), the tool runs on the task's
    /// thread with the request's multi round-trip `round` and the task's peer (progress as
    /// `statusMessage`, requests to the client as `inputRequests`); see
    /// [`TaskStore::spawn`] for when the answer is the task and when the tool's question.
    fn start_task(
        &self,
        state: &SessionState,
        params: Map<String, Value>,
        meta: modern::RequestMeta,
        round: Option<Arc<input::Round>>,
    ) -> Result<tasks::Spawned, RpcError> {
        let progress_token = params
            .get("_meta")
            .and_then(|m| m.get("progressToken"))
            .cloned();
        let (name, arguments) = tool_call_params(params)?;
        let handler = self.handler.clone();
        let confirmations = self.confirmations.clone();
        let transport = state.transport;
        let caller = state.caller.clone();
        let origin = state.origin.clone();
        self.tasks
            .spawn(&tasks::owner_of(transport, caller.as_ref()), move |peer| {
                let ctx = RequestContext {
                    session_id: None,
                    protocol_version: ProtocolVersion::V2026_07_28.as_str().to_string(),
                    transport,
                    peer: Some(peer),
                    // Progress always reaches the task's statusMessage.
                    progress_token: progress_token.or(Some(json!("task"))),
                    client_capabilities: meta.client_capabilities,
                    log_level: None,
                    caller,
                    input: round,
                    origin,
                    person: None,
                };
                let ctx = ctx.with_person(&confirmations);
                let result = guarded(|| handler.call_tool_shared(&name, arguments, &ctx))??;
                let json = result.json(true).map_err(|e| {
                    RpcError::internal("Internal error")
                        .with_details(format!("serialisation failed: {e}"))
                })?;
                Ok(json.to_value())
            })
    }

    /// The outcome of one request: a [`Value`], or for `tools/call` the handler's answer as
    /// JSON text ([`SharedResult::json`]).
    fn dispatch(
        &self,
        state: &mut SessionState,
        request: Request,
        peer: &Option<PeerHandle>,
        input: Option<Arc<input::Round>>,
    ) -> Result<Outcome, RpcError> {
        let method = request.method.as_str();
        match method {
            "initialize"
            | "ping"
            | "tools/list"
            | "tools/call"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
            | "resources/subscribe"
            | "resources/unsubscribe"
            | "prompts/list"
            | "prompts/get"
            | "completion/complete"
            | "logging/setLevel" => {}
            _ => {
                return Err(RpcError {
                    code: RpcError::METHOD_NOT_FOUND,
                    message: format!("Method not found: {method}"),
                    details: Some(format!("this server does not implement `{method}`")),
                })
            }
        }
        if method == "ping" {
            return Ok(Outcome::Result(json!({})));
        }
        if method == "initialize" {
            return self.initialize(state, request.params).map(Outcome::Result);
        }
        let Some(version) = state.version else {
            return Err(RpcError {
                code: RpcError::INVALID_REQUEST,
                message: "Invalid Request".into(),
                details: Some(format!(
                    "`{method}` before initialize; send initialize first"
                )),
            });
        };
        let params = object_params(request.params)?;
        let ctx = RequestContext {
            session_id: state.id.clone(),
            protocol_version: version.as_str().to_string(),
            transport: state.transport,
            peer: peer.clone(),
            progress_token: params
                .get("_meta")
                .and_then(|m| m.get("progressToken"))
                .cloned(),
            client_capabilities: state.client_capabilities.clone(),
            log_level: state.log_level,
            caller: state.caller.clone(),
            input,
            origin: state.origin.clone(),
            person: None,
        };
        if method == "tools/call" {
            let ctx = ctx.with_person(&self.confirmations);
            return self.tools_call(version, params, &ctx);
        }
        let value = match method {
            "tools/list" => {
                let all = guarded(|| self.handler.list_tools_for(&ctx))?;
                paginate("tools", &all, &params, self.page_size, version)
            }
            "resources/list" => {
                let all = guarded(|| self.handler.list_resources())?;
                paginate("resources", &all, &params, self.page_size, version)
            }
            "resources/templates/list" => {
                let all = guarded(|| self.handler.list_resource_templates())?;
                paginate("resourceTemplates", &all, &params, self.page_size, version)
            }
            "resources/read" => {
                let uri = string_param(&params, "uri")?;
                let contents = guarded(|| self.handler.read_resource(&uri, &ctx))??;
                Ok(json!({ "contents": contents }))
            }
            "resources/subscribe" => {
                let uri = string_param(&params, "uri")?;
                guarded(|| self.handler.check_subscribable(&uri))??;
                state.subscriptions.insert(uri);
                state.subscriptions_changed = true;
                Ok(json!({}))
            }
            "resources/unsubscribe" => {
                let uri = string_param(&params, "uri")?;
                state.subscriptions.remove(&uri);
                state.subscriptions_changed = true;
                Ok(json!({}))
            }
            "prompts/list" => {
                let all = guarded(|| self.handler.list_prompts())?;
                paginate("prompts", &all, &params, self.page_size, version)
            }
            "prompts/get" => {
                let name = string_param(&params, "name")?;
                let arguments = object_param(params.get("arguments").cloned(), "arguments")?;
                let r = guarded(|| self.handler.get_prompt(&name, &arguments, &ctx))??;
                serde_json::to_value(r).map_err(internal)
            }
            "completion/complete" => {
                let reference = match params.get("ref") {
                    Some(r) => match (r.get("type").and_then(Value::as_str), r) {
                        (Some("ref/prompt"), r) => CompletionRef::Prompt(
                            r.get("name")
                                .and_then(Value::as_str)
                                .ok_or_else(|| {
                                    RpcError::invalid_params("Invalid params: `ref.name` missing")
                                })?
                                .to_string(),
                        ),
                        (Some("ref/resource"), r) => CompletionRef::Resource(
                            r.get("uri")
                                .and_then(Value::as_str)
                                .ok_or_else(|| {
                                    RpcError::invalid_params("Invalid params: `ref.uri` missing")
                                })?
                                .to_string(),
                        ),
                        _ => {
                            return Err(RpcError::invalid_params(
                                "Invalid params: `ref.type` must be ref/prompt or ref/resource",
                            ))
                        }
                    },
                    None => {
                        return Err(RpcError::invalid_params(
                            "Invalid params: missing required parameter `ref`",
                        ))
                    }
                };
                let argument = params.get("argument").ok_or_else(|| {
                    RpcError::invalid_params(
                        "Invalid params: missing required parameter `argument`",
                    )
                })?;
                let name = argument
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        RpcError::invalid_params("Invalid params: `argument.name` missing")
                    })?;
                let value = argument.get("value").and_then(Value::as_str).unwrap_or("");
                let context = params
                    .get("context")
                    .and_then(|c| c.get("arguments"))
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                let mut c = guarded(|| self.handler.complete(&reference, name, value, &context))??;
                if c.values.len() > 100 {
                    c.total.get_or_insert(c.values.len());
                    c.values.truncate(100);
                    c.has_more = true;
                }
                Ok(json!({ "completion": c }))
            }
            "logging/setLevel" => {
                let level = string_param(&params, "level")?;
                let level = LogLevel::parse(&level).ok_or_else(|| {
                    RpcError::invalid_params(format!(
                        "Invalid params: unknown log level {level:?}"
                    ))
                    .with_details("one of debug, info, notice, warning, error, critical, alert, emergency")
                })?;
                state.log_level = Some(level);
                Ok(json!({}))
            }
            _ => unreachable!("methods are checked above"),
        };
        value.map(Outcome::Result)
    }

    fn initialize(
        &self,
        state: &mut SessionState,
        params: Option<Params>,
    ) -> Result<Value, RpcError> {
        if state.version.is_some() {
            return Err(RpcError {
                code: RpcError::INVALID_REQUEST,
                message: "Invalid Request".into(),
                details: Some(
                    "session already initialized; start a new session to initialize again".into(),
                ),
            });
        }
        let params = object_params(params)?;
        let version = ProtocolVersion::negotiate(&string_param(&params, "protocolVersion")?);
        let (info, instructions) = guarded(|| {
            (
                self.handler.server_info(),
                self.handler.instructions_for(state.caller.as_ref()),
            )
        })?;
        let mut info = serde_json::to_value(info).map_err(internal)?;
        if version < ProtocolVersion::V2025_06_18 {
            if let Some(obj) = info.as_object_mut() {
                obj.remove("title");
            }
        }
        state.version = Some(version);
        state.client_capabilities = params.get("capabilities").cloned().unwrap_or(Value::Null);
        Ok(json!({
            "protocolVersion": version.as_str(),
            "capabilities": capabilities(),
            "serverInfo": info,
            "instructions": instructions,
        }))
    }

    fn tools_call(
        &self,
        version: ProtocolVersion,
        params: Map<String, Value>,
        ctx: &RequestContext,
    ) -> Result<Outcome, RpcError> {
        let (name, arguments) = tool_call_params(params)?;
        let result = guarded(|| self.handler.call_tool_shared(&name, arguments, ctx))??;
        // `structuredContent` from 2025-06-18 on; the text is rendered once per cached answer.
        let json = result.json(version >= ProtocolVersion::V2025_06_18);
        json.map(Outcome::Json).map_err(|e| {
            RpcError::internal("Internal error").with_details(format!("serialisation failed: {e}"))
        })
    }
}

/// The `name` and `arguments` of `tools/call` params: -32602 when the name is missing or not
/// a string, or the arguments not an object (absent or null: none).
fn tool_call_params(
    mut params: Map<String, Value>,
) -> Result<(String, Map<String, Value>), RpcError> {
    let name = string_param(&params, "name")?;
    Ok((name, object_param(params.remove("arguments"), "arguments")?))
}

/// What the server offers, in every era (`initialize`, `server/discover`).
fn capabilities() -> Value {
    json!({
        "tools": { "listChanged": false },
        "resources": { "subscribe": true, "listChanged": true },
        "prompts": { "listChanged": false },
        "logging": {},
        "completions": {},
    })
}

/// The answer to a batch refused whole (see [`McpServer::batch_refusal`]): the refusal once
/// per request, each with its id, when the batch is within `max_items` and has requests; else
/// the refusal once with `id: null` (a refusal never answers with more than `max_items`
/// errors).
fn refused_batch(
    refusal: Response,
    items: &[Result<Message, Response>],
    max_items: usize,
) -> Reply {
    let ids: Vec<jsonrpc::Id> = items
        .iter()
        .filter_map(|item| match item {
            Ok(Message::Request(r)) => Some(r.id.clone()),
            _ => None,
        })
        .collect();
    if items.len() > max_items || ids.is_empty() {
        return Reply::Single(refusal);
    }
    Reply::Batch(
        ids.into_iter()
            .map(|id| Response {
                id: Some(id),
                outcome: refusal.outcome.clone(),
            })
            .collect(),
    )
}

/// A required string parameter; -32602 naming it when absent or not a string.
fn string_param(params: &Map<String, Value>, name: &str) -> Result<String, RpcError> {
    match params.get(name) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(RpcError::invalid_params(format!(
            "Invalid params: `{name}` must be a string"
        ))),
        None => Err(RpcError::invalid_params(format!(
            "Invalid params: missing required parameter `{name}`"
        ))),
    }
}

/// An optional object parameter such as `arguments`: absent or null is an empty object;
/// -32602 naming it when it is something else.
fn object_param(value: Option<Value>, name: &str) -> Result<Map<String, Value>, RpcError> {
    match value {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m),
        Some(_) => Err(RpcError::invalid_params(format!(
            "Invalid params: `{name}` must be an object"
        ))),
    }
}

/// A `*/list` answer: one page of `items` under `key` from the request's `cursor`, and
/// `nextCursor` if more follow. Entries lose the fields `version` predates: `title` and
/// `outputSchema` (2025-06-18), `annotations` (2025-03-26).
fn paginate<T: serde::Serialize>(
    key: &str,
    items: &[T],
    params: &Map<String, Value>,
    page_size: usize,
    version: ProtocolVersion,
) -> Result<Value, RpcError> {
    let start = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(c)) => match parse_cursor(c) {
            Some(n) if n < items.len() => n,
            _ => {
                return Err(RpcError::invalid_params("Invalid params: invalid `cursor`")
                    .with_details(format!("cursor {c:?} is not one this server issued")))
            }
        },
        Some(_) => {
            return Err(RpcError::invalid_params(
                "Invalid params: `cursor` must be a string",
            ))
        }
    };
    let end = (start + page_size).min(items.len());
    let mut page = Vec::with_capacity(end - start);
    for item in &items[start..end] {
        let mut entry = serde_json::to_value(item).map_err(internal)?;
        if let Some(o) = entry.as_object_mut() {
            if version < ProtocolVersion::V2025_06_18 {
                o.remove("title");
                o.remove("outputSchema");
            }
            if version < ProtocolVersion::V2025_03_26 {
                o.remove("annotations");
            }
        }
        page.push(entry);
    }
    let mut result = json!({ key: page });
    if end < items.len() {
        result["nextCursor"] = make_cursor(end).into();
    }
    Ok(result)
}

/// Counts one answered request in the metrics (`home_mcp_mcp_requests_total` and its
/// duration): `method` as [`metric_method`] labels it, the tool for `tools/call`, and whether
/// it was answered with a result (`ok`) or an error. Used by every era's dispatch.
fn count_request(
    transport: &str,
    method: &str,
    tool: Option<&str>,
    ok: bool,
    started: std::time::Instant,
) {
    crate::metrics::global().mcp_request(
        transport,
        method,
        tool,
        if ok {
            crate::metrics::Outcome::Ok
        } else {
            crate::metrics::Outcome::Error
        },
        Some(started.elapsed()),
    );
}

/// The `method` label of the metrics: the name when the server implements it, else `other`.
fn metric_method(method: &str) -> &'static str {
    crate::metrics::known_method(method)
}

/// The `tool` label of a `tools/call` (`unknown` for names outside the catalogue).
fn tool_name(params: &Option<Params>) -> Option<&'static str> {
    let name = match params {
        Some(Params::Object(p)) => p.get("name").and_then(Value::as_str).unwrap_or(""),
        _ => "",
    };
    Some(crate::metrics::global().known_tool(name))
}

/// `params` as an object: absent means empty; an array is -32602.
fn object_params(params: Option<Params>) -> Result<Map<String, Value>, RpcError> {
    match params {
        None => Ok(Map::new()),
        Some(Params::Object(m)) => Ok(m),
        Some(Params::Array(_)) => Err(RpcError::invalid_params(
            "Invalid params: `params` must be an object",
        )),
    }
}

/// Runs handler code, turning a panic into -32603.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, RpcError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        log::error!("handler panicked: {what}");
        RpcError::internal("Internal error").with_details("the request handler failed")
    })
}

fn internal(e: serde_json::Error) -> RpcError {
    RpcError::internal("Internal error").with_details(format!("serialisation failed: {e}"))
}

/// Cursors are opaque to clients; today they encode the offset of the next page.
fn make_cursor(offset: usize) -> String {
    format!("o{offset}")
}

fn parse_cursor(cursor: &str) -> Option<usize> {
    let digits = cursor.strip_prefix('o')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}
