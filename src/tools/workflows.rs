//! Workflows: `create_workflow`, `list_workflows`, `get_workflow`, `execute_workflow`,
//! `delete_workflow` and `execute_workflow_demo`.
//!
//! A workflow is checked completely when it is created: every step must name a tool of the
//! catalogue that is not a workflow tool (no recursion), and its arguments must fit that tool's
//! input schema ([`super::schema`]); the message names the step and the field
//! (`steps[2].arguments.action: must be one of on, off`). The workflow records the highest
//! permission among its steps (at least `control`, which executing needs): the auth gate asks
//! [`super::HomeTools::required_permission`] for it.
//!
//! Execution runs the stages of [`crate::workflow::stages`] in order, the steps of a parallel
//! group on scoped threads, waiting each step's delay first. Every step is reported (tool,
//! arguments, status, data or error, duration); a failing step does not stop the others unless
//! `stop_on_error` is set, in which case the remaining stages are reported as `skipped`.
//! `dry_run` sends nothing: tools with their own `dry_run` are called with it (so the result
//! shows the commands that would be sent), read-only tools run, every other step is `planned`,
//! and delays are not waited.

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::args;
use super::schema;
use super::{failure, Caller, Ctx, Permission, Tool, ToolError, READ_ONLY};
use crate::home::Family;
use crate::mcp::{Content, ToolAnnotations};
use crate::workflow::{self, NewWorkflow, Step, StoreError, Workflow, WorkflowKey, WorkflowStore};

/// The workflow tools themselves: never allowed as a step.
const WORKFLOW_TOOLS: [&str; 6] = [
    "create_workflow",
    "list_workflows",
    "get_workflow",
    "execute_workflow",
    "delete_workflow",
    "execute_workflow_demo",
];

const WRITER: ToolAnnotations = ToolAnnotations {
    read_only_hint: false,
    destructive_hint: false,
    idempotent_hint: false,
    open_world_hint: false,
};

pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "create_workflow",
            title: "Create a workflow",
            description: "Stores a named workflow of 1-50 tool calls, checked now (tools and arguments). Steps with the same parallel_group run together; delays total at most 3600 s. Returns its id and the permission executing it needs.",
            permission: Permission::Control,
            annotations: WRITER,
            input_schema: create_schema,
            data_schema: workflow_schema,
            run: create_workflow,
        },
        Tool {
            name: "list_workflows",
            title: "List workflows",
            description: "Lists stored workflows with their steps, tools and the permission executing them needs.",
            permission: Permission::Read,
            annotations: READ_ONLY,
            input_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "Part of the name"},
                        "limit": args::limit_schema()
                    },
                    "additionalProperties": false
                })
            },
            data_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "workflows": {"type": "array", "items": {
                            "type": "object",
                            "required": ["id", "name", "permission"]
                        }},
                        "total": {"type": "integer"}
                    },
                    "required": ["workflows", "total"]
                })
            },
            run: list_workflows,
        },
        Tool {
            name: "get_workflow",
            title: "Show a workflow",
            description: "Shows one stored workflow (name or id) with its steps and the stages they run in.",
            permission: Permission::Read,
            annotations: READ_ONLY,
            input_schema: || key_schema(json!({})),
            data_schema: workflow_schema,
            run: get_workflow,
        },
        Tool {
            name: "execute_workflow",
            title: "Execute a workflow",
            description: "Runs a stored workflow (name or id) stage by stage; reports each step (success, error, skipped, planned). stop_on_error stops after a failure; dry_run sends nothing. Needs the workflow's permission; security or house-wide steps need confirmation (see confirm).",
            permission: Permission::Control,
            annotations: ToolAnnotations {
                read_only_hint: false,
                destructive_hint: true,
                idempotent_hint: false,
                open_world_hint: false,
            },
            input_schema: || {
                key_schema(json!({
                    "dry_run": args::dry_run_schema(),
                    "stop_on_error": {"type": "boolean", "default": false},
                    "confirm": super::confirm_schema()
                }))
            },
            data_schema: run_schema,
            run: execute_workflow,
        },
        Tool {
            name: "delete_workflow",
            title: "Delete a workflow",
            description: "Deletes a stored workflow (name or id); returns it.",
            permission: Permission::Control,
            annotations: ToolAnnotations {
                read_only_hint: false,
                destructive_hint: true,
                idempotent_hint: true,
                open_world_hint: false,
            },
            input_schema: || key_schema(json!({})),
            data_schema: workflow_schema,
            run: delete_workflow,
        },
        Tool {
            name: "execute_workflow_demo",
            title: "Run the demonstration workflow",
            description: "Runs a built-in demo: lists rooms, switches one room's lights on and off again, reads temperatures, lists blinds, audio and alarms. Switches real lights unless dry_run.",
            permission: Permission::Control,
            annotations: WRITER,
            input_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "dry_run": args::dry_run_schema()
                    },
                    "additionalProperties": false
                })
            },
            data_schema: run_schema,
            run: execute_workflow_demo,
        },
    ]
}

fn create_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": workflow::MAX_NAME_CHARS},
            "description": {"type": "string", "maxLength": workflow::MAX_DESCRIPTION_CHARS},
            "steps": {
                "type": "array", "minItems": 1, "maxItems": workflow::MAX_STEPS,
                "items": {
                    "type": "object",
                    "properties": {
                        "tool": {"type": "string"},
                        "arguments": {"type": "object"},
                        "delay_seconds": {"type": "number", "minimum": 0, "maximum": workflow::MAX_DELAY_SECONDS, "description": "Waited before the step"},
                        "parallel_group": {"type": "integer", "minimum": 0, "maximum": 1000000}
                    },
                    "required": ["tool"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["name", "steps"],
        "additionalProperties": false
    })
}

/// `name` or `id` (exactly one), plus `extra` properties.
fn key_schema(extra: Value) -> Value {
    let mut properties = json!({
        "name": {"type": "string"},
        "id": {"type": "integer", "minimum": 1}
    });
    if let (Some(p), Value::Object(extra)) = (properties.as_object_mut(), extra) {
        p.extend(extra);
    }
    json!({"type": "object", "properties": properties, "additionalProperties": false})
}

/// A stored workflow; `stages` are step indexes, stage by stage (a stage's steps run at the
/// same time).
fn workflow_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "steps": {"type": "array", "items": {"type": "object", "required": ["tool", "arguments"]}},
            "permission": {"enum": ["read", "control", "security", "admin"]}
        },
        "required": ["id", "name", "steps", "stages", "permission", "created_at"]
    })
}

fn run_schema() -> Value {
    let mut s = json!({
        "type": "object",
        "properties": {
            "steps": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "status": {"enum": ["success", "error", "skipped", "planned"]}
                }
            }}
        },
        "required": ["steps", "total", "succeeded", "failed", "skipped", "planned", "duration_ms"]
    });
    if let (Some(p), Value::Object(extra)) = (
        s["properties"].as_object_mut(),
        super::confirmation_data_schema(),
    ) {
        p.extend(extra);
    }
    s
}

/// Parses a stored permission name.
fn parse_permission(s: &str) -> Option<Permission> {
    [
        Permission::Read,
        Permission::Control,
        Permission::Security,
        Permission::Admin,
    ]
    .into_iter()
    .find(|p| p.as_str() == s)
}

/// The extra permission a call needs beyond its tool's own: for `execute_workflow`, the
/// workflow's recorded permission (`Read` when the workflow does not exist or the arguments
/// are bad: the call then fails anyway).
pub(super) fn permission_of_call(
    store: &WorkflowStore,
    tool: &str,
    arguments: &Map<String, Value>,
) -> Permission {
    if tool != "execute_workflow" {
        return Permission::Read;
    }
    let key = match (arguments.get("name"), arguments.get("id")) {
        (Some(Value::String(n)), None) => WorkflowKey::Name(n.clone()),
        (None, Some(id)) => match id.as_i64() {
            Some(id) => WorkflowKey::Id(id),
            None => return Permission::Read,
        },
        _ => return Permission::Read,
    };
    match store.get(&key) {
        // An unreadable permission asks for the most.
        Ok(Some(w)) => parse_permission(&w.permission).unwrap_or(Permission::Admin),
        _ => Permission::Read,
    }
}

fn store_error(e: StoreError) -> ToolError {
    match e {
        StoreError::Duplicate(name) => ToolError::InvalidParams(format!(
            "name: a workflow named {name:?} exists already; choose another name or delete it first"
        )),
        other => ToolError::Refused {
            code: "INTERNAL_ERROR",
            message: other.to_string(),
        },
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Create {
    name: String,
    description: Option<String>,
    steps: Vec<Step>,
}

fn create_workflow(ctx: &Ctx, a: &Map<String, Value>, _: &Caller) -> Result<Value, ToolError> {
    // Our own schema first: its errors carry the path (`steps[3].delay_seconds`).
    schema::validate(&create_schema(), &Value::Object(a.clone()))
        .map_err(|e| ToolError::InvalidParams(e.to_string()))?;
    let a: Create = args::parse(a)?;
    let name = a.name.trim().to_string();
    workflow::check_shape(&name, a.description.as_deref(), &a.steps)
        .map_err(ToolError::InvalidParams)?;
    let mut permission = Permission::Control;
    for (i, step) in a.steps.iter().enumerate() {
        let tool = check_step(ctx.catalogue, step)
            .map_err(|m| ToolError::InvalidParams(format!("steps[{i}].{m}")))?;
        permission = permission.max(tool.permission);
    }
    let stored = ctx
        .workflows
        .create(&NewWorkflow {
            name,
            description: a.description.filter(|d| !d.trim().is_empty()),
            steps: a.steps,
            permission: permission.as_str().to_string(),
        })
        .map_err(store_error)?;
    log::info!(
        "workflow {:?} (id {}) created: {} steps, permission {}",
        stored.name,
        stored.id,
        stored.steps.len(),
        stored.permission
    );
    Ok(workflow_json(&stored))
}

/// The step's tool, if the step may call it with these arguments; otherwise the reason,
/// starting with the field (`tool: ...`, `arguments.action: ...`).
fn check_step<'a>(catalogue: &'a [Tool], step: &Step) -> Result<&'a Tool, String> {
    if WORKFLOW_TOOLS.contains(&step.tool.as_str()) {
        return Err(format!(
            "tool: {:?} is a workflow tool; a workflow cannot run workflow tools",
            step.tool
        ));
    }
    let tool = catalogue
        .iter()
        .find(|t| t.name == step.tool)
        .ok_or_else(|| {
            format!(
                "tool: unknown tool {:?}; call tools/list for the available tools",
                step.tool
            )
        })?;
    schema::validate_at(
        &(tool.input_schema)(),
        &Value::Object(step.arguments.clone()),
        "arguments",
    )
    .map_err(|e| format!("{} (tool {})", e.message, tool.name))?;
    if tool.permission == Permission::Cameras {
        return Err(format!(
            "tool: {:?} returns pictures, which a workflow cannot pass on",
            tool.name
        ));
    }
    Ok(tool)
}

fn workflow_json(w: &Workflow) -> Value {
    json!({
        "id": w.id,
        "name": w.name,
        "description": w.description,
        "steps": w.steps,
        "stages": workflow::stages(&w.steps),
        "permission": w.permission,
        "created_at": w.created_at,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    name: Option<String>,
    limit: Option<i64>,
}

fn list_workflows(ctx: &Ctx, a: &Map<String, Value>, _: &Caller) -> Result<Value, ToolError> {
    let a: ListArgs = args::parse(a)?;
    let limit = args::limit(a.limit)?;
    let needle = a.name.as_deref().map(str::to_lowercase);
    let all = ctx.workflows.list().map_err(store_error)?;
    let matching: Vec<&Workflow> = all
        .iter()
        .filter(|w| {
            needle
                .as_ref()
                .is_none_or(|n| w.name.to_lowercase().contains(n.as_str()))
        })
        .collect();
    let workflows: Vec<Value> = matching
        .iter()
        .take(limit)
        .map(|w| {
            let mut tools: Vec<&str> = Vec::new();
            for s in &w.steps {
                if !tools.contains(&s.tool.as_str()) {
                    tools.push(&s.tool);
                }
            }
            json!({
                "id": w.id,
                "name": w.name,
                "description": w.description,
                "step_count": w.steps.len(),
                "tools": tools,
                "permission": w.permission,
                "created_at": w.created_at,
            })
        })
        .collect();
    Ok(json!({"workflows": workflows, "total": matching.len()}))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyArgs {
    name: Option<String>,
    id: Option<i64>,
    dry_run: Option<bool>,
    stop_on_error: Option<bool>,
    confirm: Option<bool>,
}

impl KeyArgs {
    fn key(&self) -> Result<WorkflowKey, ToolError> {
        match (&self.name, self.id) {
            (Some(n), None) if !n.trim().is_empty() => Ok(WorkflowKey::Name(n.trim().to_string())),
            (None, Some(id)) if id >= 1 => Ok(WorkflowKey::Id(id)),
            (None, Some(id)) => Err(ToolError::InvalidParams(format!(
                "id must be at least 1 (got {id})"
            ))),
            (Some(_), Some(_)) => Err(ToolError::InvalidParams(
                "give either name or id, not both".into(),
            )),
            _ => Err(ToolError::InvalidParams(
                "name or id: give the workflow's name or id".into(),
            )),
        }
    }
}

/// The stored workflow `a` names, or a `INVALID_PARAMETERS` result listing the workflows that
/// exist.
fn find(ctx: &Ctx, a: &KeyArgs) -> Result<Workflow, ToolError> {
    let key = a.key()?;
    match ctx.workflows.get(&key).map_err(store_error)? {
        Some(w) => Ok(w),
        None => {
            let names: Vec<String> = ctx
                .workflows
                .list()
                .map_err(store_error)?
                .into_iter()
                .map(|w| format!("{:?} (id {})", w.name, w.id))
                .collect();
            Err(ToolError::Refused {
                code: "INVALID_PARAMETERS",
                message: if names.is_empty() {
                    format!("no workflow with {key}; no workflows are stored")
                } else {
                    format!(
                        "no workflow with {key}; stored workflows: {}",
                        names.join(", ")
                    )
                },
            })
        }
    }
}

fn get_workflow(ctx: &Ctx, a: &Map<String, Value>, _: &Caller) -> Result<Value, ToolError> {
    let a: KeyArgs = args::parse(a)?;
    if a.dry_run.is_some() || a.stop_on_error.is_some() || a.confirm.is_some() {
        return Err(ToolError::InvalidParams(
            "unknown field `dry_run`/`stop_on_error`/`confirm`, expected `name` or `id`".into(),
        ));
    }
    Ok(workflow_json(&find(ctx, &a)?))
}

fn delete_workflow(ctx: &Ctx, a: &Map<String, Value>, caller: &Caller) -> Result<Value, ToolError> {
    let a: KeyArgs = args::parse(a)?;
    if a.dry_run.is_some() || a.stop_on_error.is_some() || a.confirm.is_some() {
        return Err(ToolError::InvalidParams(
            "unknown field `dry_run`/`stop_on_error`/`confirm`, expected `name` or `id`".into(),
        ));
    }
    let w = find(ctx, &a)?;
    match ctx
        .workflows
        .delete(&WorkflowKey::Id(w.id))
        .map_err(store_error)?
    {
        Some(w) => {
            log::info!(
                "workflow {:?} (id {}) deleted by {}",
                w.name,
                w.id,
                caller.label
            );
            Ok(workflow_json(&w))
        }
        // Deleted by someone else in between.
        None => find(ctx, &a).map(|w| workflow_json(&w)),
    }
}

fn execute_workflow(
    ctx: &Ctx,
    a: &Map<String, Value>,
    caller: &Caller,
) -> Result<Value, ToolError> {
    let a: KeyArgs = args::parse(a)?;
    let w = find(ctx, &a)?;
    let dry_run = a.dry_run.unwrap_or(false);
    let stop_on_error = a.stop_on_error.unwrap_or(false);
    let planned: Vec<Planned> = w
        .steps
        .iter()
        .map(|s| Planned {
            step: s.clone(),
            purpose: None,
            skip: None,
        })
        .collect();
    let label = format!("{} (workflow {:?})", caller.label, w.name);
    let confirmation = match (dry_run, confirm_question(ctx, &w)) {
        (false, Some((risk, q))) => {
            let ask = super::ToConfirm {
                risk,
                tool: "execute_workflow",
                controls: vec![w.id.to_string()],
                command: format!(
                    "run {}",
                    serde_json::to_string(&w.steps).unwrap_or_default()
                ),
                question: &q,
            };
            Some((caller.confirm(a.confirm, &ask)?, q))
        }
        _ => None,
    };
    let unconfirmed = confirmation.as_ref().filter(|(c, _)| c.by().is_none());
    let confirmed_by = confirmation.as_ref().and_then(|(c, _)| c.by());
    let dry_run = dry_run || unconfirmed.is_some();
    let mut out = run(
        ctx,
        &planned,
        caller,
        &label,
        dry_run,
        stop_on_error,
        confirmed_by,
    );
    if let Some((outcome, q)) = unconfirmed {
        super::mark_unconfirmed(&mut out, q, outcome);
    }
    if let Some(by) = confirmed_by {
        out["confirmed_by"] = json!(by.as_str());
    }
    log::info!(
        "workflow {:?} run by {}{}: {} ok, {} failed, {} skipped, {} ms",
        w.name,
        label,
        if dry_run { " (dry run)" } else { "" },
        out["succeeded"],
        out["failed"],
        out["skipped"],
        out["duration_ms"]
    );
    out["workflow"] = json!({"id": w.id, "name": w.name, "permission": w.permission});
    Ok(out)
}

/// The question before running `w`, when it has security steps (a step tool, or the
/// workflow's recorded permission, of `security` or more) or house-wide steps
/// (`control_all_lights`, `control_all_rolladen`, a unified tool with scope `system`); `None`
/// when it needs no confirmation.
fn confirm_question(ctx: &Ctx, w: &Workflow) -> Option<(crate::home::Risk, String)> {
    let security = |s: &Step| {
        ctx.catalogue
            .iter()
            .find(|t| t.name == s.tool)
            .is_some_and(|t| t.permission >= Permission::Security)
    };
    let house_wide = |s: &Step| match s.tool.as_str() {
        "control_all_lights" | "control_all_rolladen" => true,
        "control_lights_unified" | "control_rolladen_unified" => s
            .arguments
            .get("scope")
            .and_then(Value::as_str)
            .is_some_and(|v| {
                super::batch::Scope::parse(v).is_ok_and(|s| s == super::batch::Scope::System)
            }),
        _ => false,
    };
    let recorded = parse_permission(&w.permission).unwrap_or(Permission::Admin);
    let flagged: Vec<String> = w
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| security(s) || house_wide(s))
        .map(|(i, s)| format!("step {i} {}", describe_step(s)))
        .collect();
    if flagged.is_empty() && recorded < Permission::Security {
        return None;
    }
    let what = if flagged.is_empty() {
        format!("it needs the {} permission", w.permission)
    } else {
        format!("it includes {}", flagged.join(", "))
    };
    let risk = if w.steps.iter().any(security) || recorded >= Permission::Security {
        crate::home::Risk::Alarm
    } else {
        crate::home::Risk::HouseWide
    };
    Some((
        risk,
        format!(
            "Run the workflow {:?} ({} steps; {what})?",
            w.name,
            w.steps.len()
        ),
    ))
}

/// "disarm_alarm" or "control_all_lights (action off)" for the confirmation question.
fn describe_step(s: &Step) -> String {
    match s.arguments.get("action").and_then(Value::as_str) {
        Some(a) => format!("{} (action {a})", s.tool),
        None => s.tool.clone(),
    }
}

/// A step as the executor sees it: maybe with a purpose (demo) or a reason to skip it.
struct Planned {
    step: Step,
    purpose: Option<String>,
    skip: Option<String>,
}

/// Runs `steps` stage by stage and reports each. The steps run as `outer` labelled `label`,
/// `confirmed` when the user confirmed the whole workflow (its steps do not ask again; else
/// a step that needs confirmation asks for itself), and without progress of their own: `outer`
/// reports one progress notification per finished step ("step 2 control_room_lights:
/// success").
fn run(
    ctx: &Ctx,
    steps: &[Planned],
    outer: &Caller,
    label: &str,
    dry_run: bool,
    stop_on_error: bool,
    confirmed: Option<super::confirm::ConfirmedBy>,
) -> Value {
    let started = Instant::now();
    let caller = &outer.nested(label, confirmed);
    let total = steps.len();
    let mut done = 0;
    let mut tell = |i: usize, r: &Value| {
        done += 1;
        outer.progress(
            done,
            total,
            &format!(
                "step {i} {}: {}",
                steps[i].step.tool,
                r["status"].as_str().unwrap_or("done")
            ),
        );
    };
    let plain: Vec<Step> = steps.iter().map(|p| p.step.clone()).collect();
    let mut records: Vec<Option<Value>> = vec![None; steps.len()];
    let mut stopped: Option<usize> = None;
    for stage in workflow::stages(&plain) {
        let skip = match stopped {
            Some(failed) => Some(format!("stop_on_error: step {failed} failed")),
            None if outer.cancelled() => Some("the request was cancelled".to_string()),
            None => None,
        };
        if let Some(reason) = skip {
            for &i in &stage {
                let r = record(
                    i,
                    &steps[i],
                    "skipped",
                    json!({ "reason": reason }),
                    Duration::ZERO,
                );
                tell(i, &r);
                records[i] = Some(r);
            }
            continue;
        }
        let results: Vec<(usize, Value)> = if stage.len() == 1 {
            let i = stage[0];
            vec![(i, run_step(ctx, i, &steps[i], caller, dry_run))]
        } else {
            std::thread::scope(|s| {
                let handles: Vec<_> = stage
                    .iter()
                    .map(|&i| {
                        (
                            i,
                            s.spawn(move || run_step(ctx, i, &steps[i], caller, dry_run)),
                        )
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|(i, h)| {
                        let r = h.join().unwrap_or_else(|_| {
                            record(
                                i,
                                &steps[i],
                                "error",
                                json!({"error": {"code": "INTERNAL_ERROR", "message": "the step panicked", "details": {}}}),
                                Duration::ZERO,
                            )
                        });
                        (i, r)
                    })
                    .collect()
            })
        };
        for (i, r) in results {
            if stop_on_error && r["status"] == "error" && stopped.is_none() {
                stopped = Some(i);
            }
            tell(i, &r);
            records[i] = Some(r);
        }
    }
    let records: Vec<Value> = records.into_iter().flatten().collect();
    let count = |s: &str| records.iter().filter(|r| r["status"] == s).count();
    json!({
        "dry_run": dry_run,
        "stop_on_error": stop_on_error,
        "total": records.len(),
        "succeeded": count("success"),
        "failed": count("error"),
        "skipped": count("skipped"),
        "planned": count("planned"),
        "duration_ms": started.elapsed().as_millis() as u64,
        "steps": records,
    })
}

/// One step's report: the common fields plus `extra` (`data`, `error` or `reason`).
fn record(i: usize, p: &Planned, status: &str, extra: Value, took: Duration) -> Value {
    let mut r = json!({
        "index": i,
        "tool": p.step.tool,
        "arguments": p.step.arguments,
        "parallel_group": p.step.parallel_group,
        "delay_seconds": p.step.delay_seconds,
        "status": status,
        "duration_ms": took.as_millis() as u64,
    });
    if let Some(purpose) = &p.purpose {
        r["purpose"] = json!(purpose);
    }
    if let (Some(r), Value::Object(extra)) = (r.as_object_mut(), extra) {
        r.extend(extra);
    }
    r
}

fn run_step(ctx: &Ctx, i: usize, p: &Planned, caller: &Caller, dry_run: bool) -> Value {
    if let Some(reason) = &p.skip {
        return record(i, p, "skipped", json!({"reason": reason}), Duration::ZERO);
    }
    // The catalogue may have changed since the workflow was stored.
    let tool = match check_step(ctx.catalogue, &p.step) {
        Ok(t) => t,
        Err(m) => {
            return record(
                i,
                p,
                "error",
                json!({"error": {"code": "INVALID_PARAMETERS", "message": m, "details": {}}}),
                Duration::ZERO,
            )
        }
    };
    if let Some(refusal) = super::refused_to_device_key(tool, caller) {
        let error = json!({"error": error_object(refusal)});
        return record(i, p, "error", error, Duration::ZERO);
    }
    let mut arguments = p.step.arguments.clone();
    if dry_run {
        let has_dry_run = (tool.input_schema)()
            .pointer("/properties/dry_run")
            .is_some();
        if has_dry_run {
            arguments.insert("dry_run".into(), Value::Bool(true));
        } else if !tool.annotations.read_only_hint {
            return record(
                i,
                p,
                "planned",
                json!({"reason": format!("dry run: {} changes the house and has no dry run of its own, so it is not called", tool.name)}),
                Duration::ZERO,
            );
        }
    } else if p.step.delay_seconds > 0.0 {
        // The delay ends early when the request is cancelled (a task's tasks/cancel): the
        // step is then skipped, and its thread free within a tenth of a second.
        let end = Instant::now() + Duration::from_secs_f64(p.step.delay_seconds);
        loop {
            if caller.cancelled() {
                let reason = "the request was cancelled during the step's delay";
                return record(i, p, "skipped", json!({ "reason": reason }), Duration::ZERO);
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(100)));
        }
    }
    let started = Instant::now();
    let result = tool.invoke(ctx, &arguments, caller);
    let took = started.elapsed();
    match result {
        Ok(data) => record(i, p, "success", json!({"data": data}), took),
        Err(e) => record(i, p, "error", json!({"error": error_object(e)}), took),
    }
}

/// The `{code, message, details}` a failed tool call reports, exactly as a direct call would.
fn error_object(e: ToolError) -> Value {
    let r = failure(e);
    let text = match r.content.first() {
        Some(Content::Text { text }) => text.as_str(),
        _ => "{}",
    };
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|mut v| v.get_mut("error").map(Value::take))
        .unwrap_or_else(
            || json!({"code": "INTERNAL_ERROR", "message": "unreadable error", "details": {}}),
        )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DemoArgs {
    dry_run: Option<bool>,
}

fn execute_workflow_demo(
    ctx: &Ctx,
    a: &Map<String, Value>,
    caller: &Caller,
) -> Result<Value, ToolError> {
    let a: DemoArgs = args::parse(a)?;
    let dry_run = a.dry_run.unwrap_or(false);
    let steps = demo_plan(ctx, caller);
    let label = format!("{} (demo workflow)", caller.label);
    let home = ctx.home();
    let mut out = run(ctx, &steps, caller, &label, dry_run, false, None);
    out["workflow"] = json!({
        "name": "demo",
        "permission": Permission::Control.as_str(),
        "house": if home.ms_info.project_name.is_empty() { &home.ms_info.ms_name } else { &home.ms_info.project_name },
        "rooms": home.rooms.len(),
        "devices": home.controls.len(),
    });
    Ok(out)
}

/// The demonstration, fitted to the loaded house: each step either runs or says why it is
/// skipped. Steps whose tool is not in the catalogue or whose arguments the tool's schema
/// rejects are skipped too, so the demo keeps working as the catalogue changes.
fn demo_plan(ctx: &Ctx, caller: &Caller) -> Vec<Planned> {
    let home = ctx.home();
    let has = |f: Family| home.controls.iter().any(|c| home.family(c) == f);
    let mut plan = Vec::new();
    let mut add = |tool: &str, arguments: Value, purpose: String, skip: Option<String>| {
        let Value::Object(arguments) = arguments else {
            unreachable!("demo arguments are objects")
        };
        let step = Step {
            tool: tool.to_string(),
            arguments,
            delay_seconds: 0.0,
            parallel_group: None,
        };
        let skip = skip.or_else(|| {
            check_step(ctx.catalogue, &step)
                .err()
                .map(|m| format!("not available in this build: {m}"))
        });
        plan.push(Planned {
            step,
            purpose: Some(purpose),
            skip,
        });
    };

    add(
        "list_rooms",
        json!({"limit": 50}),
        "See which rooms the house has".into(),
        None,
    );
    add(
        "get_home_summary",
        json!({}),
        "What is on, open or playing right now".into(),
        None,
    );
    match first_room_with_lights(ctx, caller) {
        Some((uuid, name)) => {
            for action in ["on", "off"] {
                add(
                    "control_room_lights",
                    json!({"room": uuid, "action": action}),
                    format!("Switch the lights of {name} {action}"),
                    None,
                );
            }
        }
        None => {
            let reason = Some("no room of this house has lights".to_string());
            for action in ["on", "off"] {
                add(
                    "control_room_lights",
                    json!({"action": action}),
                    format!("Switch the lights of a room {action}"),
                    reason.clone(),
                );
            }
        }
    }
    let climate =
        has(Family::Climate) || home.controls.iter().any(super::view::is_temperature_sensor);
    add(
        "get_temperature_sensors",
        json!({"limit": 20}),
        "Read the room temperatures (°C)".into(),
        (!climate).then(|| "the house has no temperature sensors or room controllers".into()),
    );
    add(
        "discover_rolladen_capabilities",
        json!({"limit": 20}),
        "List the blinds and their positions".into(),
        (!has(Family::Blinds)).then(|| "the house has no blinds".into()),
    );
    for (family, what) in [(Family::Audio, "audio zones"), (Family::Security, "alarms")] {
        add(
            "list_devices",
            json!({"category": family.as_str(), "limit": 20}),
            format!("List the {what} and their state"),
            (!has(family)).then(|| format!("the house has no {what}")),
        );
    }
    plan
}

/// The first room (by name) where `control_room_lights` finds lights, asked with a dry run so
/// the choice is exactly the tool's own notion of a light and nothing is sent.
fn first_room_with_lights(ctx: &Ctx, caller: &Caller) -> Option<(String, String)> {
    let tool = ctx
        .catalogue
        .iter()
        .find(|t| t.name == "control_room_lights")?;
    let home = ctx.home();
    home.rooms.iter().find_map(|room| {
        let Value::Object(probe) = json!({"room": room.uuid, "action": "off", "dry_run": true})
        else {
            return None;
        };
        let data = tool.invoke(ctx, &probe, caller).ok()?;
        let found = data["results"].as_array().is_some_and(|d| !d.is_empty());
        found.then(|| (room.uuid.clone(), room.name.clone()))
    })
}
