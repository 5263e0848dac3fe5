//! The tool catalogue: every tool is declared once ([`Tool`]: name, description, input and
//! output schema, annotations, permission, handler) and `tools/list` is generated from that
//! registry. One file per family; each knows only the [`House`], never HTTP or JSON-RPC.
//!
//! Results follow the spec's envelope (§2): the text content is the JSON
//! `{"status": "success", "data": ..., "timestamp": "<ISO 8601 UTC>"}` and `structuredContent`
//! carries the same object. Bad arguments are JSON-RPC -32602 naming the field. Failures of the
//! house (unknown device, Miniserver down) are results with `isError: true` and
//! `{"status": "error", "error": {"code", "message", "details"}, "timestamp"}`, codes per
//! spec §7.1 (`DEVICE_NOT_FOUND`, `CONNECTION_ERROR`, `INVALID_PARAMETERS`, ...).
//!
//! With [`HomeTools::with_caches`], answers of read-only tools and resource contents are
//! cached and identical concurrent requests coalesced ([`cache`]): a cached answer is the same
//! JSON, including the `timestamp` (and any `age_secs`) of the moment it was computed.

mod args;
mod audio;
mod batch;
mod blinds;
pub mod cache;
mod climate;
mod devices;
mod lights;
pub mod schema;
mod security;
pub(crate) mod summary;
pub(crate) mod view;
mod workflows;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::home::resolve::ResolveError;
use crate::home::{ControllerError, House};
use crate::mcp::{
    CallToolResult, Completion, CompletionRef, Content, GetPromptResult, Handler, Implementation,
    PromptDescriptor, RequestContext, ResourceContents, ResourceDescriptor, ResourceTemplate,
    RpcError, ToolAnnotations, ToolDescriptor,
};
use crate::workflow::WorkflowStore;
use cache::{Cache, CacheConfig, DEFAULT_CAPACITY};

/// What a caller must be allowed to do to use a tool (enforced by the auth gate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permission {
    /// Read the house: rooms, devices, values.
    Read,
    /// Operate devices: lights, blinds, climate, audio.
    Control,
    /// Security-relevant actions: alarm, gates and doors.
    Security,
    /// Server administration (keys, configuration).
    Admin,
}

impl Permission {
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Read => "read",
            Permission::Control => "control",
            Permission::Security => "security",
            Permission::Admin => "admin",
        }
    }
}

/// Who is calling, for the audit log of writes.
#[derive(Debug, Clone)]
pub struct Caller {
    pub label: String,
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

/// Why a tool call failed.
#[derive(Debug)]
pub enum ToolError {
    /// Arguments that do not fit the schema: JSON-RPC -32602 with this message.
    InvalidParams(String),
    /// A device or room name that matches nothing or several things.
    Resolve(ResolveError),
    /// The controller failed (unreachable, rejected, unsupported).
    Controller(ControllerError),
    /// A deliberate refusal (safety rule); `code` per spec §7.1.
    Refused { code: &'static str, message: String },
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
    tools.extend(workflows::tools());
    tools.extend(batch::tools());
    tools.extend(summary::tools());
    tools
}

/// The MCP [`Handler`] of the home server: the catalogue bound to a house.
pub struct HomeTools {
    house: Arc<House>,
    tools: Vec<Tool>,
    workflows: Arc<WorkflowStore>,
    tool_cache: Cache<Result<CallToolResult, RpcError>>,
    resource_cache: Cache<Result<Vec<ResourceContents>, RpcError>>,
    /// Calls of tools that act, finished: with the house's generation, what cache entries are
    /// checked against (workflow changes do not touch the house).
    writes: AtomicU64,
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
        }
    }

    /// Turns the response caches on (spec §8: read-only tools 30 s, resources 60 s by
    /// default; a zero TTL leaves that cache off).
    pub fn with_caches(mut self, config: CacheConfig) -> Self {
        self.tool_cache = Cache::new(config.tool_ttl, DEFAULT_CAPACITY);
        self.resource_cache = Cache::new(config.resource_ttl, DEFAULT_CAPACITY);
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
        let tool = self.tool(name).ok_or_else(|| {
            RpcError::invalid_params(format!("unknown tool {name:?}"))
                .with_details("call tools/list for the available tools")
        })?;
        if !tool.annotations.read_only_hint {
            let result = self.run(tool, arguments, caller);
            // Whatever it did, nobody may read an answer from before it.
            self.writes.fetch_add(1, Ordering::SeqCst);
            self.tool_cache.clear();
            self.resource_cache.clear();
            return result;
        }
        let key = cache::tool_key(name, &arguments);
        self.tool_cache.get_or_compute(
            &key,
            || self.generation(),
            || {
                let result = self.run(tool, arguments, caller);
                let cacheable = matches!(&result, Ok(r) if !r.is_error);
                (result, cacheable)
            },
        )
    }

    /// What cache entries are checked against: grows with every change of the house and every
    /// finished call of a tool that acts.
    fn generation(&self) -> u64 {
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
        match (tool.run)(&ctx, &arguments, caller) {
            Ok(data) => Ok(success(data)),
            Err(ToolError::InvalidParams(m)) => {
                Err(RpcError::invalid_params(format!("{}: {m}", tool.name)))
            }
            Err(e) => Ok(failure(e)),
        }
    }
}

const INSTRUCTIONS: &str = "home-mcp controls a Loxone smart home. Start with \
get_home_summary (what is on, open, playing, armed) or list_rooms / list_devices to see what \
exists; devices and rooms are named as in the Loxone app (German or English, accents optional) \
or by UUID. When a name exists in several rooms, add the room. control_device operates one \
device (on/off, dim 0-100 %, blinds up/down/stop or a position 0 open .. 100 closed, moods, \
colours); control_multiple_devices and control_room_devices do several at once. Room- and \
house-wide tools (lights, blinds, room devices, room modes) accept dry_run: true to preview the \
exact commands: use it before acting on a whole house. set_room_temperature (°C) and \
set_room_mode (auto, heating, cooling, comfort, eco, off) run the climate; control_audio_zone \
and set_audio_volume the music. Alarms are operated only with arm_alarm / disarm_alarm (they \
may need the visualisation password as code); gates and doors are never opened by \
control_device. Status reads per family: get_lights_status, get_blinds_status, \
get_climate_status, get_audio_status, get_security_status, get_sensors_status. Values the \
Miniserver has not reported are null, never guessed.";

impl Handler for HomeTools {
    fn server_info(&self) -> Implementation {
        Implementation {
            name: "home-mcp".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            title: Some("Loxone home (home-mcp)".into()),
        }
    }

    fn instructions(&self) -> String {
        INSTRUCTIONS.to_string()
    }

    fn list_tools(&self) -> Vec<ToolDescriptor> {
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

    fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        ctx: &RequestContext,
    ) -> Result<CallToolResult, RpcError> {
        let caller = Caller {
            label: match &ctx.session_id {
                Some(s) => format!("{}:{}", ctx.transport, &s[..s.len().min(8)]),
                None => ctx.transport.to_string(),
            },
        };
        self.call(name, arguments, &caller)
    }

    fn list_resources(&self) -> Vec<ResourceDescriptor> {
        crate::resources::list(&self.house.home())
    }

    fn list_resource_templates(&self) -> Vec<ResourceTemplate> {
        crate::resources::templates()
    }

    fn read_resource(
        &self,
        uri: &str,
        _ctx: &RequestContext,
    ) -> Result<Vec<ResourceContents>, RpcError> {
        // The system resources describe the link and the server itself, which change without
        // a change of the house's generation: always read fresh (they ask no Miniserver).
        if uri.starts_with("home://system/") {
            return crate::resources::read(&self.ctx(), uri);
        }
        self.resource_cache.get_or_compute(
            uri,
            || self.generation(),
            || {
                let result = crate::resources::read(&self.ctx(), uri);
                let cacheable = result.is_ok();
                (result, cacheable)
            },
        )
    }

    fn check_subscribable(&self, uri: &str) -> Result<(), RpcError> {
        crate::resources::check(&self.house.home(), uri)
    }

    fn list_prompts(&self) -> Vec<PromptDescriptor> {
        crate::prompts::list()
    }

    fn get_prompt(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
        _ctx: &RequestContext,
    ) -> Result<GetPromptResult, RpcError> {
        crate::prompts::get(&self.ctx(), name, arguments)
    }

    fn complete(
        &self,
        reference: &CompletionRef,
        argument: &str,
        value: &str,
        context: &Map<String, Value>,
    ) -> Result<Completion, RpcError> {
        crate::resources::complete(&self.house.home(), reference, argument, value, context)
    }
}

/// The output schema: the envelope around a tool's `data` schema.
fn envelope_schema(data: Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["success"]},
            "data": data,
            "timestamp": {"type": "string", "description": "ISO 8601 UTC"}
        },
        "required": ["status", "data", "timestamp"]
    })
}

fn success(data: Value) -> CallToolResult {
    let envelope = json!({
        "status": "success",
        "data": data,
        "timestamp": crate::time::now_iso8601(),
    });
    CallToolResult {
        content: vec![Content::Text {
            text: envelope.to_string(),
        }],
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
        _ => json!({}),
    }
}
