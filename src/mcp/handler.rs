//! The seam between the domain-free MCP core and the home server: the core calls a
//! [`Handler`] for everything that is not protocol bookkeeping (tools, resources, prompts,
//! completion, cache hints). The home side implements it in `crate::dispatch`.

use serde::Serialize;
use serde_json::{Map, Value};

use super::jsonrpc::RawJson;
pub use super::jsonrpc::RpcError;

/// `Implementation` of MCP: the server's name and version for `serverInfo`.
#[derive(Debug, Clone, Serialize)]
pub struct Implementation {
    pub name: String,
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// Tool annotations (MCP 2025-03-26+): hints for clients, not guarantees.
#[derive(Debug, Clone, Copy, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    pub read_only_hint: bool,
    pub destructive_hint: bool,
    pub idempotent_hint: bool,
    pub open_world_hint: bool,
}

/// One entry of `tools/list`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDescriptor {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub description: String,
    /// JSON Schema of the arguments; always `{"type": "object", ...}`.
    pub input_schema: Value,
    /// JSON Schema of `structuredContent` (MCP 2025-06-18+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    pub annotations: ToolAnnotations,
}

/// One content block of a tool result or prompt message (MCP `ContentBlock`).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    Text {
        text: String,
    },
    /// Base64 `data` with its `mimeType` (e.g. `image/png`).
    Image {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// Base64 `data` with its `mimeType` (e.g. `audio/wav`); MCP 2025-03-26+.
    Audio {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// An embedded resource.
    Resource {
        resource: ResourceContents,
    },
    /// A link to a resource the client can read (MCP 2025-06-18+).
    ResourceLink {
        uri: String,
        name: String,
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
}

/// The contents of one resource: text or base64 `blob`, with its URI and MIME type.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    pub uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

impl ResourceContents {
    /// Text contents (`application/json` for the home resources).
    pub fn text(uri: impl Into<String>, mime_type: &str, text: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: Some(mime_type.to_string()),
            text: Some(text.into()),
            blob: None,
        }
    }
}

/// One entry of `resources/list`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDescriptor {
    pub uri: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// One entry of `resources/templates/list` (RFC 6570 level-1 template such as
/// `home://rooms/{room}/devices`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    pub uri_template: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// One argument of a prompt.
#[derive(Debug, Clone, Serialize)]
pub struct PromptArgument {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub required: bool,
}

/// One entry of `prompts/list`.
#[derive(Debug, Clone, Serialize)]
pub struct PromptDescriptor {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub description: String,
    pub arguments: Vec<PromptArgument>,
}

/// One message of a prompt: `role` is `user` or `assistant`.
#[derive(Debug, Clone, Serialize)]
pub struct PromptMessage {
    pub role: &'static str,
    pub content: Content,
}

/// Result of `prompts/get`.
#[derive(Debug, Clone, Serialize)]
pub struct GetPromptResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub messages: Vec<PromptMessage>,
}

/// What `completion/complete` completes an argument of.
#[derive(Debug, Clone, PartialEq)]
pub enum CompletionRef {
    /// `ref/prompt` with the prompt's name.
    Prompt(String),
    /// `ref/resource` with the template's URI.
    Resource(String),
}

/// Result of `completion/complete`: at most 100 values.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    pub values: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<usize>,
    pub has_more: bool,
}

/// The way back to the client during a request: notifications (progress, log messages) and
/// server-to-client requests (`elicitation/create`, `sampling/createMessage`). Implemented by
/// each transport; `None` in [`RequestContext::peer`] where the transport cannot send.
pub trait Peer: Send + Sync {
    /// Sends a notification (on the request's own stream when there is one).
    fn notify(&self, method: &str, params: Value);
    /// Sends a request to the client and waits (at most `timeout`) for its response's
    /// `result`; a JSON-RPC error answer or no answer is an `Err`.
    fn request(
        &self,
        method: &str,
        params: Value,
        timeout: std::time::Duration,
    ) -> Result<Value, RpcError>;
    /// Whether the client gave up on the request (a task's `tasks/cancel`): long work checks
    /// it between steps and stops early. Default: never.
    fn cancelled(&self) -> bool {
        false
    }
}

/// A shareable [`Peer`] (Debug-printable for logs).
#[derive(Clone)]
pub struct PeerHandle(pub std::sync::Arc<dyn Peer>);

impl std::fmt::Debug for PeerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Peer")
    }
}

/// Syslog-style levels of `logging/setLevel` and `notifications/message` (RFC 5424 order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl LogLevel {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "debug" => Self::Debug,
            "info" => Self::Info,
            "notice" => Self::Notice,
            "warning" => Self::Warning,
            "error" => Self::Error,
            "critical" => Self::Critical,
            "alert" => Self::Alert,
            "emergency" => Self::Emergency,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }
}

/// Result of `tools/call`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    pub content: Vec<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    pub is_error: bool,
}

/// A [`CallToolResult`] shared by reference, with its JSON text rendered at most once per
/// shape: a cached answer is handed to each caller as an `Arc` and written as text, instead of
/// being copied, turned into a [`Value`] tree and serialised again for every request.
#[derive(Debug, Clone)]
pub struct SharedResult(std::sync::Arc<Rendered>);

#[derive(Debug)]
struct Rendered {
    result: CallToolResult,
    /// The `result` member with `structuredContent` (protocol 2025-06-18 on) and without it.
    structured: std::sync::OnceLock<Result<RawJson, String>>,
    plain: std::sync::OnceLock<Result<RawJson, String>>,
}

impl SharedResult {
    pub fn new(result: CallToolResult) -> Self {
        Self(std::sync::Arc::new(Rendered {
            result,
            structured: std::sync::OnceLock::new(),
            plain: std::sync::OnceLock::new(),
        }))
    }

    /// The result.
    pub fn result(&self) -> &CallToolResult {
        &self.0.result
    }

    /// The result, copied only when it is shared.
    pub fn into_result(self) -> CallToolResult {
        std::sync::Arc::try_unwrap(self.0)
            .map(|r| r.result)
            .unwrap_or_else(|shared| shared.result.clone())
    }

    /// The `result` member of the response as JSON text, with `structuredContent` or without
    /// it (before protocol 2025-06-18); rendered on first use, then shared.
    pub fn json(&self, structured: bool) -> Result<RawJson, String> {
        let slot = if structured {
            &self.0.structured
        } else {
            &self.0.plain
        };
        slot.get_or_init(|| {
            let mut value = serde_json::to_value(&self.0.result).map_err(|e| e.to_string())?;
            if !structured {
                if let Some(obj) = value.as_object_mut() {
                    obj.remove("structuredContent");
                }
            }
            RawJson::new(value.to_string()).map_err(|e| e.to_string())
        })
        .clone()
    }
}

/// Whether a tool may run as a task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TaskSupport {
    /// Always answered inline (the default).
    #[default]
    Forbidden,
    /// A task for clients that declare the extension, inline for the others.
    Optional,
    /// Only as a task: clients without the extension get -32021.
    Required,
}

/// Who may keep a result and for how long (`ttlMs`, `cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHint {
    /// Milliseconds the result may be considered fresh (0: re-fetch every time).
    pub ttl_ms: u64,
    /// `true`: `"public"` (the same for every caller); `false`: `"private"`.
    pub public: bool,
}

impl CacheHint {
    /// Immediately stale, per caller: the safe default.
    pub const NONE: CacheHint = CacheHint {
        ttl_ms: 0,
        public: false,
    };
}

/// Who sends a request, as the transport authenticated it (for the audit log).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Caller {
    /// The API key's name; `anonymous` without a key.
    pub key_name: String,
    /// The API key id, masked (`homekey_operator_2_a1b2****`); `None` without a key.
    pub key_id: Option<String>,
    /// What tells this key from every other one without revealing it: 16 bytes of the
    /// SHA-256 of the full key id, hex (a masked id or a name may be shared). What
    /// confirmations and multi round-trip `requestState`s are bound to; `None` without a key.
    pub principal: Option<String>,
    /// The client's address.
    pub ip: Option<std::net::IpAddr>,
    /// What the key may see and operate: its rooms and categories, and a device key's
    /// allow-list (`None`: the whole house). Tools refuse to operate or show a control it does
    /// not permit ([`crate::home::Access::permits`]).
    pub access: Option<std::sync::Arc<crate::home::Access>>,
    /// The key's owner lets the model confirm alarm and house-wide actions (`confirm: true`);
    /// otherwise only a human answer does (issue 20).
    pub model_confirms: bool,
    /// The key's owner allows opening gates, doors and locks (after a human answer).
    pub open_doors: bool,
    /// The tool profile the key's owner chose for it (`None`: the server's default,
    /// `[mcp] profile`); see [`crate::home::Profile`].
    pub profile: Option<crate::home::Profile>,
}

/// What a handler knows about the caller of one request.
#[derive(Debug, Clone, Default)]
pub struct RequestContext {
    /// MCP session id (HTTP) or `None` (stdio).
    pub session_id: Option<String>,
    /// Negotiated protocol version of the session.
    pub protocol_version: String,
    /// Transport name for logs and metrics: `stdio`, `http`.
    pub transport: &'static str,
    /// The way back to the client, when the transport has one.
    pub peer: Option<PeerHandle>,
    /// `params._meta.progressToken` of the request, if the client asked for progress.
    pub progress_token: Option<Value>,
    /// The client's `capabilities` from `initialize` (e.g. `elicitation`, `sampling`).
    pub client_capabilities: Value,
    /// The session's `logging/setLevel`; `None`: the client did not ask for log messages.
    pub log_level: Option<LogLevel>,
    /// Who sent the request (HTTP transports with a gate); `None` for stdio.
    pub caller: Option<Caller>,
    /// A MCP 2026-07-28 `tools/call`, `prompts/get` or `resources/read`: the multi round-trip
    /// round (answers of this retry, the verified state, and the way to ask for input);
    /// `None` for every other request (see [`super::input`]).
    pub input: Option<std::sync::Arc<super::input::Round>>,
    /// This server's address as the client reached it (`http://host:port`, or the configured
    /// public address), for links to its own pages (URL-mode elicitation); `None` for stdio.
    pub origin: Option<String>,
    /// The person behind the request, as tools may ask them for a yes
    /// ([`super::person::Person`]); `None` outside an MCP server (in process, tests).
    pub person: Option<std::sync::Arc<dyn super::person::Person>>,
}

impl RequestContext {
    /// Sends `notifications/progress` when the client gave a progress token (else nothing).
    /// `progress` grows with every call; `total` if known.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let (Some(peer), Some(token)) = (&self.peer, &self.progress_token) else {
            return;
        };
        let mut params = serde_json::json!({"progressToken": token, "progress": progress});
        if let Some(t) = total {
            params["total"] = t.into();
        }
        if let Some(m) = message {
            params["message"] = m.into();
        }
        peer.0.notify("notifications/progress", params);
    }

    /// Sends `notifications/message` when the session's level admits `level`.
    pub fn log(&self, level: LogLevel, logger: &str, data: Value) {
        let (Some(peer), Some(min)) = (&self.peer, self.log_level) else {
            return;
        };
        if level >= min {
            peer.0.notify(
                "notifications/message",
                serde_json::json!({"level": level.as_str(), "logger": logger, "data": data}),
            );
        }
    }

    /// Whether the client cancelled the request ([`Peer::cancelled`]; only tasks can be).
    pub fn is_cancelled(&self) -> bool {
        self.peer.as_ref().is_some_and(|p| p.0.cancelled())
    }

    /// Whether the client declared the `elicitation` capability (and a peer exists).
    pub fn can_elicit(&self) -> bool {
        self.peer.is_some() && self.client_capabilities.get("elicitation").is_some()
    }

    /// Whether the client can open a URL for its user (it declared `elicitation.url`, MCP
    /// 2025-11-25) and this server has an address to give (an HTTP request).
    pub fn can_elicit_url(&self) -> bool {
        self.can_elicit()
            && self.origin.is_some()
            && self
                .client_capabilities
                .pointer("/elicitation/url")
                .is_some_and(Value::is_object)
    }

    /// Whether a tool's input validation failure (a value out of range, an unknown action, a
    /// missing or unknown field) is answered as a tool execution error, a `CallToolResult`
    /// with `isError: true` whose text names the field and what it allows, so that the model
    /// reads it and corrects the call: from protocol version 2025-11-25 on (MCP SEP-1303).
    /// Clients that negotiated an older version get JSON-RPC -32602 (interface spec §7.2).
    /// The one place this is decided; unknown tools and malformed `tools/call` params stay
    /// -32602 for everyone.
    pub fn argument_errors_as_tool_results(&self) -> bool {
        super::ProtocolVersion::parse(&self.protocol_version)
            .is_some_and(|v| v >= super::ProtocolVersion::V2025_11_25)
    }
}

/// The domain side of an MCP server.
pub trait Handler: Send + Sync {
    /// `serverInfo` of `initialize`.
    fn server_info(&self) -> Implementation;
    /// `instructions` of `initialize` (may be empty).
    fn instructions(&self) -> String;
    /// `instructions` for a session of `caller` (its tool profile may name other tools;
    /// default: [`Handler::instructions`]).
    fn instructions_for(&self, caller: Option<&Caller>) -> String {
        let _ = caller;
        self.instructions()
    }
    /// The full tool catalogue, in display order.
    fn list_tools(&self) -> Vec<ToolDescriptor>;
    /// The tools the caller of `ctx` sees (its tool profile; default: [`Handler::list_tools`]).
    fn list_tools_for(&self, ctx: &RequestContext) -> Vec<ToolDescriptor> {
        let _ = ctx;
        self.list_tools()
    }
    /// Runs one tool. `Err` becomes a JSON-RPC error (e.g. -32602 for an unknown tool, or for
    /// bad arguments where [`RequestContext::argument_errors_as_tool_results`] is false);
    /// failures of the house itself come back as `Ok` with `is_error: true`.
    fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        ctx: &RequestContext,
    ) -> Result<CallToolResult, RpcError>;

    /// [`Handler::call_tool`] as a [`SharedResult`]: what `tools/call` uses. A handler that
    /// caches answers returns the cached one without copying it; the default wraps
    /// `call_tool`.
    fn call_tool_shared(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        ctx: &RequestContext,
    ) -> Result<SharedResult, RpcError> {
        self.call_tool(name, arguments, ctx).map(SharedResult::new)
    }

    /// `resources/list`: the fixed resources.
    fn list_resources(&self) -> Vec<ResourceDescriptor> {
        Vec::new()
    }
    /// `resources/templates/list`.
    fn list_resource_templates(&self) -> Vec<ResourceTemplate> {
        Vec::new()
    }
    /// `resources/read`: the contents of `uri` (a fixed resource or a template's expansion);
    /// an unknown URI is [`RpcError::RESOURCE_NOT_FOUND`], bad template values -32602.
    fn read_resource(
        &self,
        uri: &str,
        _ctx: &RequestContext,
    ) -> Result<Vec<ResourceContents>, RpcError> {
        Err(RpcError {
            code: RpcError::RESOURCE_NOT_FOUND,
            message: "Resource not found".into(),
            details: Some(format!("no resource {uri:?}")),
        })
    }
    /// The client capabilities (e.g. `sampling`) `tool` cannot run without: a 2026-07-28
    /// `tools/call` whose `_meta` declares one of them not is refused with
    /// `MissingRequiredClientCapabilityError` (-32021) before the tool runs. Default: none.
    fn required_client_capabilities(&self, _tool: &str) -> Vec<&'static str> {
        Vec::new()
    }
    /// Whether `tool` may run as a task of the `io.modelcontextprotocol/tasks` extension
    /// (see [`super::tasks`]). Default: never.
    fn task_support(&self, _tool: &str) -> TaskSupport {
        TaskSupport::Forbidden
    }
    /// The cache hints (`ttlMs`, `cacheScope`) of a 2026-07-28 result of `method`
    /// (`server/discover`, the lists, `resources/read` of `uri`). The default says: stale at
    /// once, per caller.
    fn cache_hint(&self, _method: &str, _uri: Option<&str>) -> CacheHint {
        CacheHint::NONE
    }
    /// Whether `uri` may be subscribed to (it exists): `Err` as for [`Handler::read_resource`].
    fn check_subscribable(&self, uri: &str) -> Result<(), RpcError> {
        self.read_resource(uri, &RequestContext::default())
            .map(|_| ())
    }
    /// `prompts/list`.
    fn list_prompts(&self) -> Vec<PromptDescriptor> {
        Vec::new()
    }
    /// `prompts/get`; an unknown prompt or a missing required argument is -32602.
    fn get_prompt(
        &self,
        name: &str,
        _arguments: &Map<String, Value>,
        _ctx: &RequestContext,
    ) -> Result<GetPromptResult, RpcError> {
        Err(RpcError::invalid_params(format!("unknown prompt {name:?}")))
    }
    /// `completion/complete`: suggestions for `argument` (its `value` typed so far), with the
    /// other arguments already given in `context`.
    fn complete(
        &self,
        _reference: &CompletionRef,
        _argument: &str,
        _value: &str,
        _context: &Map<String, Value>,
    ) -> Result<Completion, RpcError> {
        Ok(Completion::default())
    }
}
