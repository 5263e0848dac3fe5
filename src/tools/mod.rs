//! The tool catalogue: every tool is declared once ([`Tool`]: name, description, input and
//! output schema, annotations, permission, handler) and `tools/list` is generated from that
//! registry. One file per family; each knows only the [`House`], never HTTP or JSON-RPC.
//!
//! Results follow the spec's envelope (§2): the text content is the JSON
//! `{"status": "success", "data": ..., "timestamp": "<ISO 8601 UTC>"}` and `structuredContent`
//! carries the same object. Bad arguments are JSON-RPC -32602 naming the field, or for clients
//! at protocol 2025-11-25 and later an `isError` result with code `INVALID_PARAMETERS`
//! ([`RequestContext::argument_errors_as_tool_results`]). Failures of the
//! house (unknown device, Miniserver down) are results with `isError: true` and
//! `{"status": "error", "error": {"code", "message", "details"}, "timestamp"}`, codes per
//! spec §7.1 (`DEVICE_NOT_FOUND`, `CONNECTION_ERROR`, `INVALID_PARAMETERS`, ...).
//!
//! With [`HomeTools::with_caches`], answers of read-only tools and resource contents are
//! cached and identical concurrent requests coalesced ([`cache`]): a cached answer is the same
//! JSON, including the `timestamp` of the moment it was computed, except that every `age_secs`
//! (the age of a value) has grown by the time the answer spent in the cache.

mod args;
mod audio;
mod batch;
mod blinds;
pub mod cache;
pub mod caller;
pub mod cameras;
mod climate;
pub mod confirm;
mod devices;
mod lights;
pub mod password;
pub mod schema;
pub mod scope;
mod security;
pub(crate) mod summary;
mod verify;
pub(crate) mod view;
mod workflows;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::home::resolve::ResolveError;
use crate::home::{Action, ControllerError, House};
use crate::mcp::{
    CallToolResult, Content, RequestContext, ResourceContents, RpcError, SharedResult,
    ToolAnnotations, ToolDescriptor,
};
use crate::workflow::WorkflowStore;
use cache::{Cache, CacheConfig, DEFAULT_CAPACITY};

pub use crate::home::Permission;
pub use caller::{Caller, Confirmation, ToConfirm, LOGGER};

/// Adds the confirmation outcome to `data`: `confirmed_by` (who confirmed: the audit log
/// records it), or for a dry run `confirmation_required` (nobody confirmed) or `cancelled`
/// (the user said no). The words state what happened, never what the model should pass.
pub(crate) fn mark_unconfirmed(data: &mut Value, question: &str, outcome: &Confirmation) {
    match outcome {
        Confirmation::Go(by) => data["confirmed_by"] = json!(by.as_str()),
        Confirmation::DryRun(note) => {
            data["dry_run"] = json!(true);
            data["confirmation_required"] = json!(true);
            let mut m = format!("Nothing was done: this needs confirmation. {question}");
            if let Some(n) = note {
                m.push_str(&format!(" ({n})"));
            }
            data["confirmation"] = json!(m);
        }
        Confirmation::Cancelled(reason) => {
            data["dry_run"] = json!(true);
            data["cancelled"] = json!(true);
            data["confirmation"] = json!(format!("Nothing was done: {reason} ({question})"));
        }
    }
}

/// JSON Schema of the `confirm` argument: what happens without it (the tools' descriptions say
/// what needs confirmation).
pub(crate) fn confirm_schema() -> Value {
    json!({"type": "boolean", "description": "Counts only where the key's owner allows it; else the user is asked"})
}

/// The schema properties a confirmable tool adds to its `data` (`confirmation` carries the
/// question and what to do next).
pub(crate) fn confirmation_data_schema() -> Value {
    json!({
        "confirmation_required": {"type": "boolean"},
        "cancelled": {"type": "boolean"},
        "confirmed_by": {"type": "string"}
    })
}

/// A short name of an action for progress and log messages ("off", "50 %", "disarm").
pub(crate) fn action_label(a: &Action) -> String {
    match a {
        Action::On => "on".into(),
        Action::Off => "off".into(),
        Action::Up => "up".into(),
        Action::Down => "down".into(),
        Action::Stop => "stop".into(),
        Action::Level(v) => format!("{v} %"),
        Action::Temperature(t) => format!("{t} °C"),
        Action::Shade => "shade".into(),
        Action::Slats(v) => format!("slats {v} %"),
        Action::Pulse => "pulse".into(),
        Action::Mood(m) => format!("mood {m}"),
        Action::Arm { .. } => "arm".into(),
        Action::Disarm => "disarm".into(),
        Action::Acknowledge => "acknowledge".into(),
        other => {
            let s = format!("{other:?}");
            s.split(['(', ' ', '{'])
                .next()
                .unwrap_or_default()
                .to_lowercase()
        }
    }
}

/// A tool's handler: arguments in, `data` of the envelope out.
pub type Run = fn(&Ctx, &Map<String, Value>, &Caller) -> Result<Value, ToolError>;

/// What a tool handler works with: the house (also reachable through `Deref`, so
/// `ctx.home()` works) and the catalogue itself (for tools that run other tools, such as
/// workflows), and the workflow store.
pub struct Ctx<'a> {
    pub house: &'a House,
    pub catalogue: &'a [Tool],
    pub workflows: &'a WorkflowStore,
}

impl std::ops::Deref for Ctx<'_> {
    type Target = House;
    fn deref(&self) -> &House {
        self.house
    }
}

/// One tool, declared once.
pub struct Tool {
    pub name: &'static str,
    pub title: &'static str,
    /// What it does, with units and ranges.
    pub description: &'static str,
    pub permission: Permission,
    pub annotations: ToolAnnotations,
    /// JSON Schema of the arguments.
    pub input_schema: fn() -> Value,
    /// JSON Schema of the envelope's `data`.
    pub data_schema: fn() -> Value,
    pub run: Run,
}

impl Tool {
    /// Runs the tool: `arguments` are checked against its own `inputSchema` first
    /// ([`Tool::check_arguments`]), so the schema `tools/list` shows and the checks cannot
    /// drift apart, then the handler runs. Every way a tool is run goes through here: MCP and
    /// REST calls ([`HomeTools::call`]), workflow steps, resources.
    pub fn invoke(
        &self,
        ctx: &Ctx,
        arguments: &Map<String, Value>,
        caller: &Caller,
    ) -> Result<Value, ToolError> {
        self.check_arguments(arguments)?;
        (self.run)(ctx, arguments, caller)
    }

    /// `Ok` when `arguments` fit the tool's `inputSchema` (types, enums, ranges, required and
    /// unknown fields; see [`schema`]); else [`ToolError::InvalidParams`] naming the field
    /// and what it allows (`number: must be of type number (got string "NaN")`,
    /// `value: must be at most 100 (got 150)`, `colour: unknown field; expected one of ...`).
    pub fn check_arguments(&self, arguments: &Map<String, Value>) -> Result<(), ToolError> {
        schema::validate(&(self.input_schema)(), &Value::Object(arguments.clone()))
            .map_err(|e| ToolError::InvalidParams(e.to_string()))
    }
}

/// Why a tool call failed.
#[derive(Debug)]
pub enum ToolError {
    /// Arguments that do not fit the schema: JSON-RPC -32602 with this message, or a tool
    /// execution error for clients at 2025-11-25 and later (see [`HomeTools::call`]).
    InvalidParams(String),
    /// A device or room name that matches nothing or several things.
    Resolve(ResolveError),
    /// The controller failed (unreachable, rejected, unsupported).
    Controller(ControllerError),
    /// A deliberate refusal (safety rule); `code` per spec §7.1.
    Refused { code: &'static str, message: String },
    /// The user must answer first (MCP 2026-07-28 multi round-trip request): the marker error
    /// of [`crate::mcp::input::Round::ask`], returned as is so that the MCP core answers with
    /// the `input_required` result. Nothing was sent.
    InputRequired(RpcError),
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::InvalidParams(m) | ToolError::Refused { message: m, .. } => f.write_str(m),
            ToolError::Resolve(e) => write!(f, "{e}"),
            ToolError::Controller(e) => write!(f, "{e}"),
            ToolError::InputRequired(_) => f.write_str("a person's answer is needed first"),
        }
    }
}

impl From<ResolveError> for ToolError {
    fn from(e: ResolveError) -> Self {
        ToolError::Resolve(e)
    }
}

impl From<ControllerError> for ToolError {
    fn from(e: ControllerError) -> Self {
        ToolError::Controller(e)
    }
}

pub(crate) const READ_ONLY: ToolAnnotations = ToolAnnotations {
    read_only_hint: true,
    destructive_hint: false,
    idempotent_hint: true,
    open_world_hint: false,
};

pub(crate) const SETTER: ToolAnnotations = ToolAnnotations {
    read_only_hint: false,
    destructive_hint: false,
    idempotent_hint: true,
    open_world_hint: false,
};

/// Every tool of the catalogue, in display order.
pub fn catalogue() -> Vec<Tool> {
    let mut tools = devices::tools();
    tools.extend(climate::tools());
    tools.extend(lights::tools());
    tools.extend(blinds::tools());
    tools.extend(security::tools());
    tools.extend(audio::tools());
    tools.extend(cameras::tools());
    tools.extend(workflows::tools());
    tools.extend(batch::tools());
    tools.extend(summary::tools());
    tools
}

/// The read-only tools a device key may call: each lists only the controls the key may touch
/// ([`Caller::permits`]). The other reads describe rooms or the whole house (summaries,
/// workflows naming other devices) and are refused to device keys.
pub const DEVICE_KEY_READS: [&str; 10] = [
    "list_devices",
    "get_lights_status",
    "get_blinds_status",
    "discover_rolladen_capabilities",
    "get_climate_status",
    "get_temperature_sensors",
    "get_zone_temperature",
    "get_audio_status",
    "get_security_status",
    "get_sensors_status",
];

/// `Some(INSUFFICIENT_PERMISSIONS)` when `caller` is a device key and `tool` is a read that
/// is not in [`DEVICE_KEY_READS`], or changes the shared workflows (`create_workflow`,
/// `delete_workflow`: what other keys run); checked for direct calls and for workflow steps
/// alike. Every other tool is limited per control ([`Caller::permits`]).
pub(crate) fn refused_to_device_key(tool: &Tool, caller: &Caller) -> Option<ToolError> {
    if !caller.limited_to_devices() {
        return None;
    }
    let message = if ["create_workflow", "delete_workflow"].contains(&tool.name) {
        format!("{}: device keys cannot change workflows", tool.name)
    } else if tool.annotations.read_only_hint && !DEVICE_KEY_READS.contains(&tool.name) {
        format!(
            "{} shows more than this device key's controls; device keys read theirs with {}",
            tool.name,
            DEVICE_KEY_READS.join(", ")
        )
    } else {
        return None;
    };
    Some(ToolError::Refused {
        code: "INSUFFICIENT_PERMISSIONS",
        message,
    })
}

/// The catalogue bound to a house, with the response caches. It is the MCP handler of the
/// home server; the `dispatch` module above tools, resources and prompts implements that.
pub struct HomeTools {
    house: Arc<House>,
    tools: Vec<Tool>,
    workflows: Arc<WorkflowStore>,
    /// Shared answers (a hit is an `Arc` and text rendered once, see [`SharedResult`]), and
    /// whether each says the age of its values (then a hit is aged and rendered anew).
    tool_cache: Cache<Result<(SharedResult, bool), RpcError>>,
    resource_cache: Cache<Result<Vec<ResourceContents>, RpcError>>,
    /// Calls of tools that act, finished: with the house's generation, what cache entries are
    /// checked against (workflow changes do not touch the house).
    writes: AtomicU64,
    /// The pending confirmations every call of this catalogue shares.
    pending: Arc<confirm::Pending>,
    /// The password pages every call of this catalogue shares (served by the HTTP transport,
    /// see [`HomeTools::password_pages`]).
    passwords: Arc<password::PasswordPages>,
}

impl HomeTools {
    /// The catalogue with an in-memory workflow store (nothing is written to disk). Caches
    /// are off; see [`HomeTools::with_caches`].
    pub fn new(house: Arc<House>) -> Self {
        Self::with_store(house, Arc::new(WorkflowStore::in_memory()))
    }

    /// The catalogue with the given workflow store (e.g. `<data_dir>/workflows.db`).
    pub fn with_store(house: Arc<House>, workflows: Arc<WorkflowStore>) -> Self {
        Self {
            house,
            tools: catalogue(),
            workflows,
            tool_cache: Cache::new(Duration::ZERO, 1),
            resource_cache: Cache::new(Duration::ZERO, 1),
            writes: AtomicU64::new(0),
            pending: Arc::new(confirm::Pending::default()),
            passwords: Arc::new(password::PasswordPages::default()),
        }
    }

    /// Confirmations live (and the user's answer is awaited) `lifetime` instead of
    /// [`confirm::LIFETIME`].
    pub fn with_confirmation_lifetime(mut self, lifetime: Duration) -> Self {
        self.pending = Arc::new(confirm::Pending::with_lifetime(lifetime));
        self.passwords = Arc::new(password::PasswordPages::with_lifetime(lifetime));
        self
    }

    /// The password pages of this catalogue's calls, for the HTTP transport that serves them
    /// (`/confirm/{id}`).
    pub fn password_pages(&self) -> Arc<password::PasswordPages> {
        self.passwords.clone()
    }

    /// Turns the response caches on (spec §8: read-only tools 30 s, resources 60 s by
    /// default; a zero TTL leaves that cache off).
    pub fn with_caches(mut self, config: CacheConfig) -> Self {
        use crate::metrics::CacheKind;
        self.tool_cache = Cache::new(config.tool_ttl, DEFAULT_CAPACITY).counted(CacheKind::Tool);
        self.resource_cache =
            Cache::new(config.resource_ttl, DEFAULT_CAPACITY).counted(CacheKind::Resource);
        self
    }

    /// The permission a call needs: the tool's own, and for `execute_workflow` also the
    /// highest permission among the workflow's steps (for the auth gate). `None` for an
    /// unknown tool.
    pub fn required_permission(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
    ) -> Option<Permission> {
        let tool = self.tool(name)?;
        Some(tool.permission.max(workflows::permission_of_call(
            &self.workflows,
            name,
            arguments,
        )))
    }

    /// Whether a call by a key limited to `scope` stays inside it, as far as the arguments
    /// tell ([`scope::check`]); every command is checked again when it is sent.
    pub fn check_scope(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
        scope: &crate::home::Scope,
    ) -> Result<(), String> {
        scope::check(&self.house.home(), name, arguments, scope)
    }

    /// The tool named `name`.
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The context tool handlers, resources and prompts work with.
    pub fn ctx(&self) -> Ctx<'_> {
        Ctx {
            house: &self.house,
            catalogue: &self.tools,
            workflows: &self.workflows,
        }
    }

    /// Runs a tool outside MCP (e.g. REST); same validation and envelope.
    pub fn call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        caller: &Caller,
    ) -> Result<CallToolResult, RpcError> {
        self.call_shared(name, arguments, caller)
            .map(SharedResult::into_result)
    }

    /// [`HomeTools::call`] as a [`SharedResult`]: a cached answer is not copied (`tools/call`).
    pub fn call_shared(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        caller: &Caller,
    ) -> Result<SharedResult, RpcError> {
        let tool = self.tool(name).ok_or_else(|| {
            RpcError::invalid_params(format!("unknown tool {name:?}"))
                .with_details("call tools/list for the available tools")
        })?;
        if let Some(refusal) = refused_to_device_key(tool, caller) {
            return Ok(SharedResult::new(failure(refusal)));
        }
        if !tool.annotations.read_only_hint {
            let result = self.run(tool, arguments, caller);
            // Whatever it did, nobody may read an answer from before it.
            self.writes.fetch_add(1, Ordering::SeqCst);
            self.tool_cache.clear();
            self.resource_cache.clear();
            return result.map(SharedResult::new);
        }
        if tool.permission == Permission::Cameras {
            // Pictures of people are never kept beyond the request: no cache, no coalescing.
            return self.run(tool, arguments, caller).map(SharedResult::new);
        }
        if caller.access().is_some_and(|a| a.is_limited()) {
            // The answer may be filtered to this key's rooms, categories or controls (list_rooms,
            // a device key's reads): never from or into the shared cache.
            return self.run(tool, arguments, caller).map(SharedResult::new);
        }
        let key = cache::tool_key(name, &arguments);
        let answer = self.tool_cache.get_or_compute_aged(
            &key,
            || self.generation(),
            || {
                let result = self.run(tool, arguments, caller).map(|r| {
                    // Whether it says how old its values are (most listings do not): only
                    // then does a cached copy change with time.
                    let ages = r.structured_content.as_ref().is_some_and(cache::has_age);
                    (SharedResult::new(r), ages)
                });
                let cacheable = matches!(&result, Ok((r, _)) if !r.result().is_error);
                (result, cacheable)
            },
            |result, by| {
                result.map(|(shared, ages)| {
                    if !ages {
                        return (shared, ages);
                    }
                    let mut r = shared.into_result();
                    if let Some(envelope) = r.structured_content.as_mut() {
                        if cache::age_by(envelope, by) {
                            r.content = vec![Content::Text {
                                text: envelope.to_string(),
                            }];
                        }
                    }
                    (SharedResult::new(r), ages)
                })
            },
        );
        answer.map(|(shared, _)| shared)
    }

    /// What cache entries are checked against: grows with every change of the house and every
    /// finished call of a tool that acts.
    pub fn generation(&self) -> u64 {
        self.house.generation() + self.writes.load(Ordering::SeqCst)
    }

    fn run(
        &self,
        tool: &Tool,
        arguments: Map<String, Value>,
        caller: &Caller,
    ) -> Result<CallToolResult, RpcError> {
        let ctx = Ctx {
            house: &self.house,
            catalogue: &self.tools,
            workflows: &self.workflows,
        };
        match tool.invoke(&ctx, &arguments, caller) {
            Ok(data) => Ok(success(data)),
            // Arguments outside the schema, or a value outside the control's range found when
            // the command was about to be sent: -32602 (spec §7.2), or a tool execution error
            // the model can read for clients at 2025-11-25 and later.
            Err(
                ToolError::InvalidParams(m)
                | ToolError::Controller(ControllerError::InvalidValue(m)),
            ) => {
                let message = format!("{}: {m}", tool.name);
                if caller
                    .request
                    .as_ref()
                    .is_some_and(RequestContext::argument_errors_as_tool_results)
                {
                    Ok(failure(ToolError::InvalidParams(message)))
                } else {
                    Err(RpcError::invalid_params(message))
                }
            }
            // The user is asked (2026-07-28): the MCP core turns this into `input_required`.
            Err(ToolError::InputRequired(ask)) => Err(ask),
            Err(e) => Ok(failure(e)),
        }
    }
}

impl HomeTools {
    /// The [`Caller`] of an MCP request.
    pub fn caller_of(&self, ctx: &RequestContext) -> Caller {
        Caller {
            request: Some(ctx.clone()),
            pending: self.pending.clone(),
            passwords: self.passwords.clone(),
            ..Caller::new(match &ctx.session_id {
                Some(s) => format!("{}:{}", ctx.transport, &s[..s.len().min(8)]),
                None => ctx.transport.to_string(),
            })
        }
    }
}

/// Tools that may run as tasks (MCP extension `io.modelcontextprotocol/tasks`): the
/// house-wide blind commands, which wait until the blinds report their new position (up to
/// the house's verify timeout), and the workflow runs, whose steps take their own time.
/// Their progress becomes the task's `statusMessage`; a confirmation they need becomes an
/// input request of the task.
pub const TASK_TOOLS: [&str; 4] = [
    "control_all_rolladen",
    "control_rolladen_unified",
    "execute_workflow",
    "execute_workflow_demo",
];

impl HomeTools {
    /// `tools/list`: every tool of the catalogue, its description ending in the permission
    /// it needs, its output schema the envelope around its `data` schema.
    pub fn list(&self) -> Vec<ToolDescriptor> {
        self.tools
            .iter()
            .map(|t| ToolDescriptor {
                name: t.name.into(),
                title: Some(t.title.into()),
                description: format!("{} (permission: {})", t.description, t.permission.as_str()),
                input_schema: (t.input_schema)(),
                output_schema: Some(envelope_schema((t.data_schema)())),
                annotations: t.annotations,
            })
            .collect()
    }

    /// The house the catalogue is bound to.
    pub fn house(&self) -> &Arc<House> {
        &self.house
    }

    /// The resource cache (off unless [`HomeTools::with_caches`]): it lives here, next to the
    /// tool cache, because every call of a tool that acts drops both.
    pub fn resource_cache(&self) -> &Cache<Result<Vec<ResourceContents>, RpcError>> {
        &self.resource_cache
    }
}

/// The output schema: the envelope (`status`, `data`, `timestamp`; only `data` is described)
/// around a tool's `data` schema. Output schemas are lean, as the whole `tools/list` goes into
/// an assistant's context: each names the fields a result always has (`required`) and types
/// those a caller branches on (lists, counts, statuses); the result itself carries the rest.
/// No `type` lists: a value that may be null is named in `required` only, which single-type
/// schema dialects can read too.
fn envelope_schema(data: Value) -> Value {
    json!({
        "type": "object",
        "properties": {"data": data},
        "required": ["data"]
    })
}

fn success(mut data: Value) -> CallToolResult {
    // A picture (`get_camera_image`) leaves `data` for an `image` block of its own.
    let image = data
        .as_object_mut()
        .and_then(|o| o.remove(cameras::IMAGE_FIELD));
    let envelope = json!({
        "status": "success",
        "data": data,
        "timestamp": crate::time::now_iso8601(),
    });
    let mut content = vec![Content::Text {
        text: envelope.to_string(),
    }];
    if let Some(img) = image {
        content.push(Content::Image {
            data: img["base64"].as_str().unwrap_or_default().to_string(),
            mime_type: img["mime_type"]
                .as_str()
                .unwrap_or("image/jpeg")
                .to_string(),
        });
    }
    CallToolResult {
        content,
        structured_content: Some(envelope),
        is_error: false,
    }
}

pub(crate) fn failure(e: ToolError) -> CallToolResult {
    let (code, message, details) = match e {
        ToolError::Resolve(ResolveError::NotFound { query, suggestions }) => (
            "DEVICE_NOT_FOUND",
            if suggestions.is_empty() {
                format!("nothing is named {query:?}")
            } else {
                format!(
                    "nothing is named {query:?}; did you mean {}?",
                    suggestions
                        .iter()
                        .map(view::candidate_label)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
            json!({"query": query, "suggestions": suggestions}),
        ),
        ToolError::Resolve(ResolveError::Ambiguous { query, candidates }) => (
            "INVALID_PARAMETERS",
            format!(
                "{query:?} matches {} things: {}; name the room or use the UUID",
                candidates.len(),
                candidates
                    .iter()
                    .map(view::candidate_label)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            json!({"query": query, "reason": "ambiguous", "candidates": candidates}),
        ),
        ToolError::Controller(e) => (e.code(), e.to_string(), controller_details(&e)),
        ToolError::Refused { code, message } => (code, message, json!({})),
        ToolError::InvalidParams(m) => ("INVALID_PARAMETERS", m, json!({})),
        e @ ToolError::InputRequired(_) => {
            ("HUMAN_CONFIRMATION_REQUIRED", e.to_string(), json!({}))
        }
    };
    let envelope = json!({
        "status": "error",
        "error": {"code": code, "message": message, "details": details},
        "timestamp": crate::time::now_iso8601(),
    });
    CallToolResult {
        content: vec![Content::Text {
            text: envelope.to_string(),
        }],
        structured_content: None,
        is_error: true,
    }
}

fn controller_details(e: &ControllerError) -> Value {
    match e {
        ControllerError::LockedOut { remaining_secs } => {
            json!({"retry_after_secs": remaining_secs})
        }
        ControllerError::Camera { failure, .. } => json!({"reason": failure.as_str()}),
        _ => json!({}),
    }
}
