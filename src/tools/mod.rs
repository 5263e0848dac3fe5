//! The tool catalogue: every tool is declared once, next to its handler ([`Tool`]: name,
//! title, description, the argument type its input schema and parser are generated from
//! ([`schema`]), output schema, permission, what it reaches ([`Reach`]), what a device key may do
//! with it, whether it runs as a task, its hints). `tools/list`, the auth gate and the audit
//! log (through [`crate::home::ToolFacts`], which [`HomeTools`] implements), tasks and workflows
//! read these facts from the declaration, nowhere else. One file per family; each knows only
//! the [`House`], never HTTP, JSON-RPC or the Loxone adapter: a tool plans
//! [`Action`](crate::home::Action)s and the house words and sends them.
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

mod alerts;
mod args;
mod audio;
mod batch;
mod blinds;
pub mod cache;
pub mod caller;
mod cameras;
mod climate;
mod devices;
mod history;
mod lean;
mod lights;
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
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::audit::{target_of, AuditLog, Entry};
use crate::home::resolve::ResolveError;
use crate::home::{Action, ControllerError, House, Profile, ToolFacts};
use crate::mcp::{
    CallToolResult, Content, RequestContext, ResourceContents, RpcError, SharedResult,
    ToolAnnotations, ToolDescriptor,
};
use crate::workflow::WorkflowStore;
use cache::{Cache, CacheConfig, DEFAULT_CAPACITY};
use schema::Args;
pub use scope::Reach;

pub use crate::home::Permission;
/// Who confirmed, and where the visualisation password comes from: the MCP layer's stores.
pub use crate::mcp::{confirm, password};
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

/// The `data` schema of a confirmable tool: `data` with the properties of the confirmation's
/// outcome ([`mark_unconfirmed`]; `confirmation` carries the question and what to do next).
pub(crate) fn with_confirmation(mut data: Value) -> Value {
    if let Some(p) = data["properties"].as_object_mut() {
        p.insert("confirmation_required".into(), json!({"type": "boolean"}));
        p.insert("cancelled".into(), json!({"type": "boolean"}));
        p.insert("confirmed_by".into(), json!({"type": "string"}));
    }
    data
}

/// The schema of a list of records whose `status` is one of `words` (batch results, workflow
/// steps).
pub(crate) fn statuses(words: &[&str]) -> Value {
    json!({"type": "array", "items": {
        "type": "object",
        "properties": {"status": {"enum": words}}
    }})
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

/// A tool's handler as the catalogue runs it: the arguments (checked against its schema) in,
/// `data` of the envelope out; made by [`Tool::new`] from the typed handler.
type Run =
    Box<dyn Fn(&Ctx, &Map<String, Value>, &Caller) -> Result<Value, ToolError> + Send + Sync>;

/// A front door's route ([`Tool::door`]): the call of a declared tool its (schema-checked)
/// arguments stand for.
type Route = Box<dyn Fn(&Map<String, Value>) -> Result<Call, ToolError> + Send + Sync>;

/// The call of a declared tool a front door's arguments stand for ([`Tool::door`]): the tool
/// by name and its arguments, checked against that tool's own schema when it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub tool: &'static str,
    pub arguments: Map<String, Value>,
}

impl Call {
    /// The call of `tool` with `arguments` (a JSON object; anything else gives no arguments),
    /// the fields whose value is `null` left out (an absent optional argument of the door).
    pub fn new(tool: &'static str, arguments: Value) -> Call {
        let arguments = match arguments {
            Value::Object(m) => m.into_iter().filter(|(_, v)| !v.is_null()).collect(),
            _ => Map::new(),
        };
        Call { tool, arguments }
    }
}

/// What raises the permission a call needs above its tool's own ([`Tool::raises`]).
pub type Raises = fn(&WorkflowStore, &Map<String, Value>) -> Permission;

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

/// What a device key (an API key limited to the controls of its allow-list) may do with a
/// tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceKeys {
    /// Call it: it lists or operates controls one by one, each checked against the key
    /// ([`Caller::permits`]).
    PerControl,
    /// Not call it: it shows more than the key's controls (rooms, summaries, workflows naming
    /// other devices).
    ShowsMore,
    /// Not call it: it changes the shared workflows, which other keys run.
    ChangesWorkflows,
}

/// One tool, declared once, next to its handler: everything `tools/list`, the auth gate, the
/// audit log, tasks and workflows know of it is read from here. Built with [`Tool::new`] and
/// the setters below; what is not set is the safe default (permission `read`, reaching
/// nothing a scoped key may use, refused to device keys, answered inline, idempotent).
pub struct Tool {
    pub name: &'static str,
    pub title: &'static str,
    /// What it does, with units and ranges.
    pub description: &'static str,
    /// What a caller needs; whether the call writes follows from it
    /// ([`Permission::writes`]): writes are audited and drop the caches, and only reads are
    /// `readOnlyHint`.
    pub permission: Permission,
    /// For a tool that runs others (`execute_workflow`): the highest permission among the
    /// steps of the stored workflow the arguments name (the auth gate asks for it too).
    pub raises: Option<Raises>,
    /// What a call reaches, for keys limited to rooms or categories and for workflows
    /// (house-wide steps are confirmed first).
    pub reach: Reach,
    /// What a device key may do with it.
    pub device_keys: DeviceKeys,
    /// Whether it may run as a task (MCP extension `io.modelcontextprotocol/tasks`): the
    /// house-wide blind commands, which wait until the blinds report their new position (up
    /// to the house's verify timeout), and the workflow runs, whose steps take their own time.
    /// Their progress becomes the task's `statusMessage`; a confirmation they need becomes an
    /// input request of the task.
    pub task: bool,
    /// A workflow tool: never a step of a workflow (no recursion).
    pub workflow: bool,
    /// `destructiveHint`: it may undo or remove something (disarming, deleting a workflow).
    pub destructive: bool,
    /// `idempotentHint`: calling it twice does what calling it once does (not so for steps of
    /// a volume, next track, or creating and running workflows).
    pub idempotent: bool,
    /// It shows pictures of people (camera and intercom pictures, issue 30): a key needs the
    /// `cameras` grant besides the permission ([`ToolFacts::shows_pictures`]; the gate
    /// refuses otherwise, before anything reaches a camera); every call is audited although it
    /// only reads ([`Tool::audited`]); its answers are never cached, and it is never a workflow
    /// step. It stays `readOnlyHint`.
    pub pictures: bool,
    /// The tool profiles whose catalogue lists it ([`Profile`]; default `full` only): a
    /// caller sees and may call only the tools of its profile.
    pub profiles: &'static [Profile],
    /// For a front door of the lean profile ([`Tool::door`]): the call of a declared tool
    /// its arguments stand for. The call is then that tool's in every respect (permission,
    /// reach, device keys, confirmation, dry run, caches, audit); the door only translates.
    route: Option<Route>,
    /// JSON Schema of the arguments, generated from the handler's argument type ([`Args`]).
    pub input_schema: Value,
    /// JSON Schema of the envelope's `data`.
    pub data_schema: fn() -> Value,
    /// The parser of its argument type, without running it ([`Tool::parse`]).
    take: fn(&Map<String, Value>) -> Result<(), ToolError>,
    run: Run,
}

/// [`Args::take`] of `A`, the value dropped: whether arguments parse.
fn takes<A: Args>(arguments: &Map<String, Value>) -> Result<(), ToolError> {
    A::take(arguments).map(drop)
}

impl Tool {
    /// A tool with the safe defaults (see [`Tool`]), run by `run`: its argument type `A`
    /// gives the input schema and the parser ([`Args`]), so the two cannot disagree.
    pub fn new<A: Args + 'static>(
        name: &'static str,
        title: &'static str,
        description: &'static str,
        run: fn(&Ctx, A, &Caller) -> Result<Value, ToolError>,
    ) -> Tool {
        Tool {
            name,
            title,
            description,
            permission: Permission::Read,
            raises: None,
            reach: Reach::Refused,
            device_keys: DeviceKeys::ShowsMore,
            task: false,
            workflow: false,
            destructive: false,
            idempotent: true,
            pictures: false,
            profiles: &[Profile::Full],
            route: None,
            input_schema: A::schema(),
            data_schema: || json!({"type": "object"}),
            take: takes::<A>,
            run: Box::new(move |ctx, arguments, caller| run(ctx, A::take(arguments)?, caller)),
        }
    }

    /// A front door of the lean profile (issue 33): its arguments `A` stand for the call of a
    /// declared tool that `route` picks (typically a full tool with the same words), which
    /// then runs as if called by name: the same permission, reach, device-key rule,
    /// confirmations, dry runs, caches and audit entry ([`HomeTools::call`] resolves the door
    /// first, [`ToolFacts`] too). The door itself only declares what `tools/list` shows: its
    /// schema, and annotations as the highest of its targets (set with
    /// [`Tool::permission`], [`Tool::destructive`], [`Tool::repeats`]). Listed in the lean
    /// profile only; never a workflow step.
    pub fn door<A: Args + 'static>(
        name: &'static str,
        title: &'static str,
        description: &'static str,
        route: fn(A) -> Result<Call, ToolError>,
    ) -> Tool {
        let mut tool = Tool::new(name, title, description, |_: &Ctx, _: A, _: &Caller| {
            Ok(Value::Null)
        });
        tool.profiles = &[Profile::Lean];
        // Run outside `HomeTools::call` (which resolves doors first), the door hands its call
        // to the declared tool of the catalogue all the same.
        tool.run = Box::new(move |ctx, arguments, caller| {
            let call = route(A::take(arguments)?)?;
            ctx.catalogue
                .iter()
                .find(|t| t.name == call.tool && !t.is_door())
                .ok_or_else(|| ToolError::InvalidParams(format!("no tool {}", call.tool)))?
                .invoke(ctx, &call.arguments, caller)
        });
        tool.route = Some(Box::new(move |arguments| route(A::take(arguments)?)));
        tool
    }

    /// The profiles whose catalogue lists it (default: `full` only).
    pub fn in_profiles(mut self, profiles: &'static [Profile]) -> Tool {
        self.profiles = profiles;
        self
    }

    /// Whether `profile`'s catalogue lists it.
    pub fn in_profile(&self, profile: Profile) -> bool {
        self.profiles.contains(&profile)
    }

    /// Whether it is a front door ([`Tool::door`]).
    pub fn is_door(&self) -> bool {
        self.route.is_some()
    }

    /// For a front door: the call its `arguments` stand for (they are checked against the
    /// door's own schema first, for messages naming its fields); `None` for every other tool.
    pub fn route(&self, arguments: &Map<String, Value>) -> Option<Result<Call, ToolError>> {
        let route = self.route.as_ref()?;
        Some(
            self.check_arguments(arguments)
                .and_then(|()| route(arguments)),
        )
    }

    /// The permission a call needs (default `read`).
    pub fn permission(mut self, permission: Permission) -> Tool {
        self.permission = permission;
        self
    }

    /// What a call reaches (default [`Reach::Refused`]).
    pub fn reach(mut self, reach: Reach) -> Tool {
        self.reach = reach;
        self
    }

    /// It operates controls, reaching `reach`: permission `control`, and a device key may call
    /// it (each control is checked when its command is sent).
    pub fn operates(self, reach: Reach) -> Tool {
        self.permission(Permission::Control)
            .reach(reach)
            .per_control()
    }

    /// It reads controls, reaching `reach`: a device key may call it (it lists only the key's
    /// controls).
    pub fn lists(self, reach: Reach) -> Tool {
        self.reach(reach).per_control()
    }

    /// A device key may call it: it lists or operates controls one by one.
    pub fn per_control(mut self) -> Tool {
        self.device_keys = DeviceKeys::PerControl;
        self
    }

    /// A workflow tool: never a step of a workflow; with `changes`, it changes the shared
    /// workflows (refused to device keys, [`DeviceKeys::ChangesWorkflows`]).
    pub fn workflow(mut self, changes: bool) -> Tool {
        self.workflow = true;
        if changes {
            self.device_keys = DeviceKeys::ChangesWorkflows;
        }
        self
    }

    /// The call needs the highest of its own permission and what `raises` finds for its
    /// arguments ([`Tool::raises`]).
    pub fn raised_by(mut self, raises: Raises) -> Tool {
        self.raises = Some(raises);
        self
    }

    /// It may run as a task.
    pub fn task(mut self) -> Tool {
        self.task = true;
        self
    }

    /// `destructiveHint`.
    pub fn destructive(mut self) -> Tool {
        self.destructive = true;
        self
    }

    /// Not `idempotentHint`.
    pub fn repeats(mut self) -> Tool {
        self.idempotent = false;
        self
    }

    /// It shows pictures of people ([`Tool::pictures`]).
    pub fn shows_pictures(mut self) -> Tool {
        self.pictures = true;
        self
    }

    /// Whether calls are recorded in the audit log: those that write ([`Permission::writes`])
    /// and those that show pictures ([`Tool::pictures`]). The one place this is decided.
    pub fn audited(&self) -> bool {
        self.permission.writes() || self.pictures
    }

    /// The JSON Schema of its `data`.
    pub fn data(mut self, schema: fn() -> Value) -> Tool {
        self.data_schema = schema;
        self
    }

    /// The annotations `tools/list` shows, from the declaration: `readOnlyHint` exactly when
    /// the permission does not write.
    pub fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            read_only_hint: !self.permission.writes(),
            destructive_hint: self.destructive,
            idempotent_hint: self.idempotent,
            open_world_hint: false,
        }
    }

    /// Runs the tool: `arguments` are checked against its own `inputSchema` first
    /// ([`Tool::check_arguments`], for messages naming the field), then parsed into its
    /// argument type (generated from the same fields) and handed to its handler. Every way a
    /// tool is run goes through here: MCP and REST calls ([`HomeTools::call`]), workflow steps,
    /// resources.
    pub fn invoke(
        &self,
        ctx: &Ctx,
        arguments: &Map<String, Value>,
        caller: &Caller,
    ) -> Result<Value, ToolError> {
        self.check_arguments(arguments)?;
        (self.run)(ctx, arguments, caller)
    }

    /// `Ok` when `arguments` would reach the handler: they fit the schema (as
    /// [`Tool::check_arguments`]; messages name the field under `at`, e.g. `arguments.level`)
    /// and parse into the argument type. Nothing runs (a workflow's steps are checked so when
    /// it is created).
    pub fn parse(&self, arguments: &Map<String, Value>, at: &str) -> Result<(), ToolError> {
        schema::validate_at(&self.input_schema, &Value::Object(arguments.clone()), at)
            .map_err(|e| ToolError::InvalidParams(e.message))?;
        (self.take)(arguments)
    }

    /// `Ok` when `arguments` fit the tool's `inputSchema` (types, enums, ranges, required and
    /// unknown fields; see [`schema`]); else [`ToolError::InvalidParams`] naming the field
    /// and what it allows (`number must be of type number (got string)`,
    /// `value must be between 0 and 100 (got 150)`,
    /// ``unknown field `colour`, expected one of ...``).
    pub fn check_arguments(&self, arguments: &Map<String, Value>) -> Result<(), ToolError> {
        schema::validate(&self.input_schema, &Value::Object(arguments.clone()))
            .map_err(|e| ToolError::InvalidParams(e.to_string()))
    }

    /// [`ToolError::Refused`] (`INSUFFICIENT_PERMISSIONS`) when `caller` is a device key and
    /// the declaration refuses device keys ([`DeviceKeys`]); checked for direct calls and
    /// workflow steps alike. `catalogue` names the reads a device key may use instead.
    pub(crate) fn refuses_device_key(
        &self,
        catalogue: &[Tool],
        caller: &Caller,
    ) -> Option<ToolError> {
        if !caller.limited_to_devices() {
            return None;
        }
        let message = match self.device_keys {
            DeviceKeys::PerControl => return None,
            DeviceKeys::ChangesWorkflows => {
                format!("{}: device keys cannot change workflows", self.name)
            }
            DeviceKeys::ShowsMore => format!(
                "{} shows more than this device key's controls; device keys read theirs with {}",
                self.name,
                catalogue
                    .iter()
                    .filter(|t| !t.permission.writes() && t.device_keys == DeviceKeys::PerControl)
                    .map(|t| t.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        Some(ToolError::Refused {
            code: "INSUFFICIENT_PERMISSIONS",
            message,
        })
    }
}

/// Why a tool call failed.
#[derive(Debug, Clone)]
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

impl ToolError {
    /// The spec §7.1 error code (`INVALID_PARAMETERS`, `DEVICE_NOT_FOUND`, the controller's,
    /// a refusal's own, ...).
    pub fn code(&self) -> &'static str {
        match self {
            ToolError::InvalidParams(_) => "INVALID_PARAMETERS",
            ToolError::Resolve(ResolveError::NotFound { .. }) => "DEVICE_NOT_FOUND",
            ToolError::Resolve(_) => "INVALID_PARAMETERS",
            ToolError::Controller(e) => e.code(),
            ToolError::Refused { code, .. } => code,
            ToolError::InputRequired(_) => "HUMAN_CONFIRMATION_REQUIRED",
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
    tools.extend(history::tools());
    tools.extend(alerts::tools());
    tools.extend(lean::tools());
    tools
}

/// The audit log's operation for a run of wrong visualisation passwords that started a pause
/// ([`crate::home::pin`]); its target says which run and how long.
pub const PIN_PAUSE_OPERATION: &str = "visu_password.pause";

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
    /// Where every call of a tool that writes is recorded ([`HomeTools::with_audit`]).
    audit: Option<Arc<AuditLog>>,
    /// The tool profile of callers whose key names none ([`HomeTools::with_profile`]).
    profile: Profile,
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
            audit: None,
            profile: Profile::Full,
        }
    }

    /// The tool profile of callers whose API key names none (`[mcp] profile`,
    /// `stdio --profile`; default `full`).
    pub fn with_profile(mut self, profile: Profile) -> Self {
        self.profile = profile;
        self
    }

    /// The tool profile `caller` sees: its key's, else the server's default.
    pub fn profile_of(&self, caller: &Caller) -> Profile {
        self.profile_for(caller.request.as_ref().and_then(|r| r.caller.as_ref()))
    }

    /// The tool profile of a request's `caller` (`None`: no key, e.g. stdio): its key's,
    /// else the server's default.
    pub fn profile_for(&self, caller: Option<&crate::mcp::Caller>) -> Profile {
        caller.and_then(|c| c.profile).unwrap_or(self.profile)
    }

    /// The declared tool a call of `name` with `arguments` runs (a front door resolved);
    /// `None` for an unknown tool or a door's arguments that make no call.
    fn declared(&self, name: &str, arguments: &Map<String, Value>) -> Option<&Tool> {
        self.resolve(self.tool(name)?, arguments.clone())
            .ok()
            .map(|(t, _)| t)
    }

    /// The declared tool and arguments a call of `tool` stands for: a front door's route
    /// ([`Tool::door`]) resolved, every other tool as it is. `Err`: the door's arguments
    /// do not make a call (its schema, or what its route refuses), or the route names no
    /// declared tool.
    fn resolve<'t>(
        &'t self,
        tool: &'t Tool,
        arguments: Map<String, Value>,
    ) -> Result<(&'t Tool, Map<String, Value>), ToolError> {
        match tool.route(&arguments) {
            None => Ok((tool, arguments)),
            Some(call) => {
                let call = call?;
                let target = self
                    .tool(call.tool)
                    .filter(|t| !t.is_door())
                    .ok_or_else(|| {
                        ToolError::InvalidParams(format!("{} names no tool", call.tool))
                    })?;
                Ok((target, call.arguments))
            }
        }
    }

    /// Records every MCP call of an audited tool ([`Tool::audited`]: it writes or shows
    /// pictures) in `log`: who (the request's caller and transport), what (the tool and
    /// [`target_of`] its arguments; for a picture its camera and size), the outcome (`ok` or the error code of the typed result, never read back
    /// from the rendered answer), the latency and who confirmed it.
    pub fn with_audit(mut self, log: Arc<AuditLog>) -> Self {
        self.audit = Some(log);
        self
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

    /// The permission a call needs: the tool's own, raised for `execute_workflow` to the
    /// highest among the workflow's steps ([`Tool::raises`]); `None` for an unknown tool.
    pub fn required_permission(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
    ) -> Option<Permission> {
        let door = self.tool(name)?;
        // A front door needs what the call it stands for needs; arguments that make no call
        // need `read`, and the call answers why.
        let Ok((tool, arguments)) = self.resolve(door, arguments.clone()) else {
            return Some(Permission::Read);
        };
        let arguments = &arguments;
        Some(match tool.raises {
            Some(raises) => tool.permission.max(raises(&self.workflows, arguments)),
            None => tool.permission,
        })
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
        let profile = self.profile_of(caller);
        if !tool.in_profile(profile) {
            return Err(RpcError::invalid_params(format!(
                "{name} is not a tool of the {profile} profile this caller uses; its tools are {}",
                self.names_in(profile).join(", ")
            ))
            .with_details(format!(
                "the {profile} profile lists {} tools (tools/list); the owner chooses a key's \
                 profile (keys update --profile, the admin page)",
                self.names_in(profile).len()
            )));
        }
        // Messages about arguments name the door the caller used, and the tool it stands for.
        let door = tool.is_door().then_some(tool.name);
        let (tool, arguments) = match self.resolve(tool, arguments) {
            Ok(resolved) => resolved,
            Err(e) => return render(tool, None, caller, Err(e)).map(SharedResult::new),
        };
        if tool.permission.writes() {
            let result = self.run(tool, door, arguments, caller);
            // Whatever it did, nobody may read an answer from before it.
            self.writes.fetch_add(1, Ordering::SeqCst);
            self.tool_cache.clear();
            self.resource_cache.clear();
            return result.map(SharedResult::new);
        }
        if tool.pictures || caller.access().is_some_and(|a| a.is_limited()) {
            // Pictures of people are never kept beyond the request (no cache, no coalescing).

            // An answer filtered to this key's rooms, categories or controls (list_rooms, a
            // device key's reads) never goes from or into the shared cache either.
            return self
                .run(tool, door, arguments, caller)
                .map(SharedResult::new);
        }
        // The declared tool's name: a door's call shares the answer of the call it stands for.
        let key = cache::tool_key(tool.name, &arguments);
        let answer = self.tool_cache.get_or_compute_aged(
            &key,
            || self.generation(),
            || {
                let result = self.run(tool, door, arguments, caller).map(|r| {
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

    /// Runs `tool` for `caller` (a device key refused where the declaration says so) and
    /// renders the answer; a call of a tool that writes is recorded in the audit log
    /// ([`HomeTools::with_audit`]) with its typed outcome.
    /// The stop, for a tool that writes ([`Permission::writes`], the declaration's fact):
    /// while the house is stopped (the stop switch off or unknown, the admin page's stop;
    /// [`crate::home::stop`]) every call of it is refused before its arguments are even read,
    /// so nothing is sent (`ASSISTANT_STOPPED`, saying who can lift it where); the refusal is
    /// audited like every call of a tool that writes. Reads pass. (The house refuses again at
    /// the last moment before a command is sent, `House::act`.)
    fn stopped(&self, tool: &Tool) -> Option<ToolError> {
        if !tool.permission.writes() {
            return None;
        }
        let status = self.house.stop_status();
        status
            .stopped
            .then(|| ToolError::Controller(ControllerError::Stopped(Box::new(status))))
    }

    fn run(
        &self,
        tool: &Tool,
        door: Option<&str>,
        arguments: Map<String, Value>,
        caller: &Caller,
    ) -> Result<CallToolResult, RpcError> {
        let started = Instant::now();
        let result = match tool.refuses_device_key(&self.tools, caller) {
            Some(refusal) => Err(refusal),
            None => match self.stopped(tool) {
                Some(stop) => Err(stop),
                None => tool.invoke(&self.ctx(), &arguments, caller),
            },
        };
        if let (true, Some(log), Some(request)) = (tool.audited(), &self.audit, &caller.request) {
            let (outcome, confirmed_by) = match &result {
                Ok(data) => ("ok", data.get("confirmed_by").and_then(Value::as_str)),
                // A 2026-07-28 client is asked first (multi round-trip request): nothing was
                // sent.
                Err(ToolError::InputRequired(_)) => ("INPUT_REQUIRED", None),
                Err(e) => (e.code(), None),
            };
            // A picture handed out names its camera and bytes, never the picture.
            let picture = match &result {
                Ok(data) if tool.pictures => cameras::audit_target(data),
                _ => None,
            };
            let entry = Entry::new(
                request.caller.as_ref(),
                request.transport,
                tool.name,
                &picture.unwrap_or_else(|| target_of(&arguments)),
                outcome,
                started.elapsed(),
            );
            log.record(entry.confirmed_by(confirmed_by.map(str::to_string)));
            // A run of wrong visualisation passwords that started a pause: a row of its own,
            // naming the key (the owner sees who is guessing).
            if let Err(ToolError::Controller(ControllerError::VisuPasswordWrongPaused(run))) =
                &result
            {
                log.record(Entry::new(
                    request.caller.as_ref(),
                    request.transport,
                    PIN_PAUSE_OPERATION,
                    &run.summary(),
                    "RATE_LIMIT_EXCEEDED",
                    Duration::ZERO,
                ));
            }
        }
        render(tool, door, caller, result)
    }
}

/// The answer to a call of `tool` that came to `result`: the envelope, or for arguments
/// outside the schema (or a value outside the control's range found when the command was about
/// to be sent) JSON-RPC -32602 (spec §7.2), or a tool execution error the model can read for
/// clients at 2025-11-25 and later; a question to the user (2026-07-28) goes to the MCP core,
/// which turns it into `input_required`. Messages name the tool (and the lean `door` the
/// caller used: `control (control_device): ...`).
fn render(
    tool: &Tool,
    door: Option<&str>,
    caller: &Caller,
    result: Result<Value, ToolError>,
) -> Result<CallToolResult, RpcError> {
    match result {
        Ok(mut data) => {
            // A picture leaves `data` for an `image` block of its own.
            let image = match tool.pictures {
                true => cameras::take_image(&mut data),
                false => None,
            };
            let mut answer = success(data);
            answer.content.extend(image);
            Ok(answer)
        }
        Err(
            ToolError::InvalidParams(m) | ToolError::Controller(ControllerError::InvalidValue(m)),
        ) => {
            let message = match door {
                Some(door) => format!("{door} ({}): {m}", tool.name),
                None => format!("{}: {m}", tool.name),
            };
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
        Err(ToolError::InputRequired(ask)) => Err(ask),
        Err(e) => Ok(failure(e)),
    }
}

impl ToolFacts for HomeTools {
    fn required_permission(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
    ) -> Option<Permission> {
        HomeTools::required_permission(self, name, arguments)
    }

    fn shows_pictures(&self, name: &str, arguments: &Map<String, Value>) -> bool {
        self.declared(name, arguments).is_some_and(|t| t.pictures)
    }

    fn audited(&self, name: &str, arguments: &Map<String, Value>) -> bool {
        self.declared(name, arguments).is_some_and(Tool::audited)
            || self
                .required_permission(name, arguments)
                .is_some_and(Permission::writes)
    }

    /// What the tool declares it reaches ([`Reach::check`]); an unknown tool is refused. A
    /// front door reaches what the call it stands for reaches; arguments that make no call
    /// pass (the call answers why).
    fn check_scope(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
        scope: &crate::home::Scope,
    ) -> Result<(), String> {
        let Some(door) = self.tool(name) else {
            return Reach::Refused.check(&self.house.home(), arguments, scope);
        };
        match self.resolve(door, arguments.clone()) {
            Ok((tool, arguments)) => tool.reach.check(&self.house.home(), &arguments, scope),
            Err(_) => Ok(()),
        }
    }
}

impl HomeTools {
    /// The [`Caller`] of an MCP request.
    pub fn caller_of(&self, ctx: &RequestContext) -> Caller {
        Caller {
            request: Some(ctx.clone()),
            ..Caller::new(match &ctx.session_id {
                Some(s) => format!("{}:{}", ctx.transport, &s[..s.len().min(8)]),
                None => ctx.transport.to_string(),
            })
        }
    }

    /// `tools/list` of the server's default profile ([`HomeTools::list_for`]).
    pub fn list(&self) -> Vec<ToolDescriptor> {
        self.list_for(self.profile)
    }

    /// The names of the tools `profile` lists, in display order.
    pub fn names_in(&self, profile: Profile) -> Vec<&'static str> {
        self.tools
            .iter()
            .filter(|t| t.in_profile(profile))
            .map(|t| t.name)
            .collect()
    }

    /// `tools/list` for `profile`: every tool of the catalogue its profile lists, its
    /// description ending in the permission it needs (and `cameras` for a tool that shows
    /// pictures), its output schema the envelope around its `data` schema.
    pub fn list_for(&self, profile: Profile) -> Vec<ToolDescriptor> {
        self.tools
            .iter()
            .filter(|t| t.in_profile(profile))
            .map(|t| ToolDescriptor {
                name: t.name.into(),
                title: Some(t.title.into()),
                description: if t.is_door() && t.permission.writes() {
                    // A door needs what the call it stands for needs.
                    format!(
                        "{} (permission: read to look, {} to act)",
                        t.description,
                        t.permission.as_str()
                    )
                } else {
                    format!(
                        "{} (permission: {}{})",
                        t.description,
                        t.permission.as_str(),
                        if t.pictures { ", cameras" } else { "" }
                    )
                },
                input_schema: t.input_schema.clone(),
                output_schema: Some(envelope_schema((t.data_schema)())),
                annotations: t.annotations(),
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

/// The failed answer: the envelope `{"status": "error", "error": {code, message, details},
/// "timestamp"}` with `isError`.
pub(crate) fn failure(e: ToolError) -> CallToolResult {
    let envelope = api_error(e).envelope();
    CallToolResult {
        content: vec![Content::Text {
            text: envelope.to_string(),
        }],
        structured_content: None,
        is_error: true,
    }
}

/// The spec's error object (§7.1) of `e`: `{code, message, details}`, the details naming what
/// a client can act on (the names that came close, the candidates, when to retry). What a
/// failed call answers, and what a workflow reports for a failed step.
pub(crate) fn error_object(e: ToolError) -> Value {
    api_error(e).object()
}

/// The spec's §7.1 error of `e` ([`crate::error::ApiError`], the one builder): its code
/// ([`ToolError::code`]), message, and details (the query and suggestions or candidates of a
/// name, `retry_after_secs` of a lock-out).
pub(crate) fn api_error(e: ToolError) -> crate::error::ApiError {
    let code = e.code();
    let names = |list: &[crate::home::resolve::Candidate]| {
        list.iter()
            .map(view::candidate_label)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (message, details) = match e {
        ToolError::Resolve(ResolveError::NotFound { query, suggestions }) => (
            if suggestions.is_empty() {
                format!("nothing is named {query:?}")
            } else {
                format!(
                    "nothing is named {query:?}; did you mean {}?",
                    names(&suggestions)
                )
            },
            json!({"query": query, "suggestions": suggestions}),
        ),
        ToolError::Resolve(ResolveError::Ambiguous { query, candidates }) => (
            format!(
                "{query:?} matches {} things: {}; name the room or use the UUID",
                candidates.len(),
                names(&candidates)
            ),
            json!({"query": query, "reason": "ambiguous", "candidates": candidates}),
        ),
        ToolError::Controller(c @ ControllerError::LockedOut { remaining_secs }) => {
            (c.to_string(), json!({"retry_after_secs": remaining_secs}))
        }
        ToolError::Controller(ControllerError::Camera { failure, message }) => {
            (message, json!({"reason": failure.as_str()}))
        }
        ToolError::Controller(
            c @ ControllerError::VisuPasswordBlocked {
                remaining_secs,
                pause_secs,
                run,
                ..
            },
        ) => (
            c.to_string(),
            json!({"retry_after_secs": remaining_secs, "pause_secs": pause_secs, "run": run}),
        ),
        ToolError::Controller(ControllerError::VisuPasswordWrongPaused(ref run)) => (
            e.to_string(),
            json!({"retry_after_secs": run.pause_secs, "pause_secs": run.pause_secs,
                   "run": run.run, "wrong": run.wrong}),
        ),
        // Who stopped it, since when, and who can lift it where.
        ToolError::Controller(ControllerError::Stopped(status)) => {
            (status.explain(), status.to_json())
        }
        e => (e.to_string(), json!({})),
    };
    crate::error::ApiError::new(code, message).with_details(details)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value schema `s` admits: an enum's first word, the minimum, `minLength` characters,
    /// `minItems` samples, an object of its required fields, the first branch of an `anyOf`.
    fn sample(s: &Value) -> Value {
        if let Some(first) = s["enum"].as_array().and_then(|e| e.first()) {
            return first.clone();
        }
        if let Some(first) = s["anyOf"].as_array().and_then(|b| b.first()) {
            return sample(first);
        }
        match s["type"].as_str().unwrap_or("object") {
            "integer" | "number" => s.get("minimum").cloned().unwrap_or(json!(1)),
            "boolean" => json!(true),
            "string" => json!("x".repeat(s["minLength"].as_u64().unwrap_or(1) as usize)),
            "array" => Value::Array(
                (0..s["minItems"].as_u64().unwrap_or(1))
                    .map(|_| sample(&s["items"]))
                    .collect(),
            ),
            _ => Value::Object(
                s["required"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(|r| (r.to_string(), sample(&s["properties"][r])))
                    .collect(),
            ),
        }
    }

    /// The boundary values of property schema `p`, each with whether the schema admits it:
    /// both ends of a range and just outside them, a fraction for an integer, every word of an
    /// enum and one that is none, both ends of a length or a number of items and just
    /// outside, each branch of an `anyOf`, and a value of a wrong type.
    fn boundaries(p: &Value) -> Vec<(Value, bool)> {
        let mut cases = Vec::new();
        if let Some(branches) = p["anyOf"].as_array() {
            cases.extend(branches.iter().flat_map(boundaries));
            cases.push((json!(7), false));
            return cases;
        }
        let ty = p["type"].as_str().unwrap_or("object");
        if let Some(words) = p["enum"].as_array() {
            cases.extend(words.iter().map(|w| (w.clone(), true)));
            cases.push((json!("surely-no-such-word"), false));
        }
        let min = p["minimum"].as_f64();
        let max = p["maximum"].as_f64();
        match ty {
            "integer" | "number" => {
                for (end, outside) in [(min, -1.0), (max, 1.0)] {
                    if let Some(end) = end {
                        cases.push((json!(end), true));
                        cases.push((json!(end + outside), false));
                    }
                }
                if min.is_none() && max.is_none() {
                    cases.push((json!(0), true));
                }
                if ty == "integer" {
                    let whole = min.or(max).unwrap_or(0.0);
                    cases.push((json!(whole + 0.5), false));
                    // JSON Schema's integer admits 2.0 as well as 2.
                    cases.push((Value::from(whole), true));
                }
                cases.push((json!("12"), false));
            }
            "string" => {
                if p.get("enum").is_none() {
                    let lo = p["minLength"].as_u64().unwrap_or(0) as usize;
                    cases.push((json!("x".repeat(lo.max(1))), true));
                    if lo > 0 {
                        cases.push((json!("x".repeat(lo - 1)), false));
                    }
                    if let Some(hi) = p["maxLength"].as_u64() {
                        cases.push((json!("ü".repeat(hi as usize)), true));
                        cases.push((json!("ü".repeat(hi as usize + 1)), false));
                    }
                }
                cases.push((json!(12), false));
            }
            "boolean" => {
                cases.push((json!(true), true));
                cases.push((json!(false), true));
                cases.push((json!("true"), false));
            }
            "array" => {
                let item = sample(&p["items"]);
                let lo = p["minItems"].as_u64().unwrap_or(0) as usize;
                cases.push((Value::Array(vec![item.clone(); lo.max(1)]), true));
                if lo > 0 {
                    cases.push((Value::Array(vec![item.clone(); lo - 1]), false));
                }
                if let Some(hi) = p["maxItems"].as_u64() {
                    cases.push((Value::Array(vec![item.clone(); hi as usize]), true));
                    cases.push((Value::Array(vec![item; hi as usize + 1]), false));
                }
                cases.push((json!({"not": "a list"}), false));
            }
            _ => {
                cases.push((sample(p), true));
                cases.push((json!([1]), false));
            }
        }
        cases
    }

    /// Feeds `tool` `arguments`: `admit` says whether its schema admits them; the parser must
    /// agree, and a refusal must name `field`.
    fn feed(tool: &Tool, arguments: &Map<String, Value>, field: &str, admit: bool) {
        let r = tool.parse(arguments, "");
        match (admit, r) {
            (true, Ok(())) => {}
            (false, Err(ToolError::InvalidParams(m))) => {
                assert!(
                    m.contains(field),
                    "{}: {m:?} does not name {field}",
                    tool.name
                )
            }
            (admit, r) => panic!(
                "{}: {} with {arguments:?}: the schema {} it, the parser said {r:?}",
                tool.name,
                field,
                if admit { "admits" } else { "refuses" }
            ),
        }
    }

    /// Every `(field, word)` of the word fields (`enum`) of an object schema.
    fn words_of(schema: &Value) -> Vec<(String, Value)> {
        schema["properties"]
            .as_object()
            .into_iter()
            .flatten()
            .flat_map(|(k, p)| {
                p["enum"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(move |w| (k.clone(), w.clone()))
            })
            .collect()
    }

    /// `base`, or `base` with another word (`action`, `mode`) where the word in `base` does not
    /// use `key` (a field the word decides, [`schema::Selects`]): the arguments that give
    /// `key` with `value` parse.
    fn with_word_using(
        tool: &Tool,
        schema: &Value,
        base: &Map<String, Value>,
        key: &str,
        value: Value,
    ) -> Map<String, Value> {
        let parses = |b: &Map<String, Value>| {
            let mut args = b.clone();
            args.insert(key.into(), value.clone());
            tool.parse(&args, "").is_ok()
        };
        if parses(base) {
            return base.clone();
        }
        words_of(schema)
            .into_iter()
            .filter(|(k, _)| k != key)
            .map(|(k, w)| {
                let mut b = base.clone();
                b.insert(k, w);
                b
            })
            .find(parses)
            .unwrap_or_else(|| base.clone())
    }

    /// A field a word does not use is refused, naming the field and the word; with a word
    /// that uses it, it is taken (the declarations' `selects`, one rule for every tool).
    #[test]
    fn a_value_the_word_does_not_use_is_refused_not_ignored() {
        let tools = catalogue();
        let tool = |name: &str| tools.iter().find(|t| t.name == name).unwrap();
        let args = |v: Value| v.as_object().cloned().unwrap();
        let refused = |name: &str, v: Value, field: &str, word: &str| match tool(name)
            .parse(&args(v.clone()), "")
        {
            Err(ToolError::InvalidParams(m)) => assert!(
                m.contains(field) && m.contains(word) && m.contains("does not go with"),
                "{name} {v}: {m}"
            ),
            other => panic!("{name} {v}: {other:?}"),
        };
        refused(
            "control_device",
            json!({"device": "x", "action": "on", "number": 1e308}),
            "number",
            "on",
        );
        refused(
            "control_device",
            json!({"device": "x", "action": "aus", "value": 50}),
            "value",
            "off",
        );
        refused(
            "control_multiple_devices",
            json!({"operations": [{"device": "x", "action": "stop", "hue": 5}]}),
            "hue",
            "stop",
        );
        refused(
            "control_room_lights",
            json!({"room": "x", "action": "off", "brightness": 20}),
            "brightness",
            "off",
        );
        refused(
            "control_lights_unified",
            json!({"scope": "room", "target": "x", "action": "off", "value": 20}),
            "value",
            "off",
        );
        refused(
            "control_all_rolladen",
            json!({"action": "up", "position": 20}),
            "position",
            "up",
        );
        refused(
            "set_room_mode",
            json!({"room": "x", "mode": "auto", "duration_minutes": 30}),
            "duration_minutes",
            "auto",
        );
        for (name, v) in [
            (
                "control_device",
                json!({"device": "x", "action": "set", "number": 5}),
            ),
            (
                "control_device",
                json!({"device": "x", "action": "ein", "value": 50}),
            ),
            (
                "control_device",
                json!({"device": "x", "action": "white", "kelvin": 3000}),
            ),
            (
                "control_room_lights",
                json!({"room": "x", "action": "on", "brightness": 20}),
            ),
            (
                "set_room_mode",
                json!({"room": "x", "mode": "eco", "duration_minutes": 30}),
            ),
        ] {
            assert!(tool(name).parse(&args(v.clone()), "").is_ok(), "{name} {v}");
        }
    }

    /// Every tool's generated schema and its parser agree at the schema's boundaries: what the
    /// schema admits parses, what it refuses is refused naming the field (issue 27).
    #[test]
    fn schemas_and_parsers_agree_at_every_boundary() {
        let mut fed = 0;
        for tool in catalogue() {
            let schema = &tool.input_schema;
            let Value::Object(base) = sample(schema) else {
                panic!("{}: the arguments are an object", tool.name)
            };
            feed(&tool, &base, "", true);
            let mut unknown = base.clone();
            unknown.insert("surely_unknown_field".into(), json!(1));
            feed(&tool, &unknown, "surely_unknown_field", false);
            let required: Vec<&str> = schema["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            for r in &required {
                let mut missing = base.clone();
                missing.remove(*r);
                feed(&tool, &missing, r, false);
            }
            let properties = schema["properties"].as_object().expect("properties");
            for (key, p) in properties {
                let base = with_word_using(&tool, schema, &base, key, sample(p));
                for (v, admit) in boundaries(p) {
                    let mut args = base.clone();
                    args.insert(key.clone(), v);
                    feed(&tool, &args, key, admit);
                    fed += 1;
                }
                // The fields of the objects of a list (operations, steps), in its first entry.
                let Some(item_props) = p["items"]["properties"].as_object() else {
                    continue;
                };
                for (inner, q) in item_props {
                    let Value::Object(item_base) = sample(&p["items"]) else {
                        continue;
                    };
                    let in_list = |item: Map<String, Value>| {
                        let mut list = sample(p);
                        list[0] = Value::Object(item);
                        let mut args = base.clone();
                        args.insert(key.clone(), list);
                        args
                    };
                    // The entry's word that uses `inner`, found as for the top level.
                    let item_base = [item_base.clone()]
                        .into_iter()
                        .chain(words_of(&p["items"]).into_iter().map(|(k, w)| {
                            let mut b = item_base.clone();
                            b.insert(k, w);
                            b
                        }))
                        .find(|b| {
                            let mut item = b.clone();
                            item.insert(inner.clone(), sample(q));
                            tool.parse(&in_list(item), "").is_ok()
                        })
                        .unwrap_or(item_base);
                    for (v, admit) in boundaries(q) {
                        let mut item = item_base.clone();
                        item.insert(inner.clone(), v);
                        let args = in_list(item);
                        feed(&tool, &args, &format!("{key}[0].{inner}"), admit);
                        fed += 1;
                    }
                }
            }
        }
        println!("{fed} boundary cases over the catalogue");
        assert!(fed > 500, "the walk fed the tools: {fed}");
    }
}
