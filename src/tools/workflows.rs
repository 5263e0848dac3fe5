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

use serde_json::{json, Map, Value};

use super::args;
use super::schema::{tool_args, Args, Confirm, DryRun, Limit};
use super::{error_object, Caller, Ctx, Permission, Tool, ToolError};
use crate::error::ApiError;
use crate::home::bounds::Range;
use crate::home::Family;
use crate::workflow::{self, NewWorkflow, Step, StoreError, Workflow, WorkflowKey, WorkflowStore};

pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "create_workflow",
            "Create a workflow",
            "Stores a named workflow of 1-50 tool calls, checked now (tools and arguments). Steps with the same parallel_group run together; delays total at most 3600 s. Returns its id and the permission executing it needs.",
            create_workflow,
        )
        .permission(Permission::Control)
        .repeats()
        .workflow(true)
        .data(workflow_schema),
        Tool::new(
            "list_workflows",
            "List workflows",
            "Lists stored workflows with their steps, tools and the permission executing them needs.",
            list_workflows,
        )
        .workflow(false)
        .data(|| {
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
        }),
        Tool::new(
            "get_workflow",
            "Show a workflow",
            "Shows one stored workflow (name or id) with its steps and the stages they run in.",
            get_workflow,
        )
        .workflow(false)
        .data(workflow_schema),
        Tool::new(
            "execute_workflow",
            "Execute a workflow",
            "Runs a stored workflow (name or id) stage by stage; reports each step (success, error, skipped, planned). stop_on_error stops after a failure; dry_run sends nothing. Needs the workflow's permission; security or house-wide steps need confirmation (see confirm).",
            execute_workflow,
        )
        .permission(Permission::Control)
        .per_control()
        .destructive()
        .repeats()
        .task()
        .workflow(false)
        .raised_by(steps_permission)
        .data(run_schema),
        Tool::new(
            "delete_workflow",
            "Delete a workflow",
            "Deletes a stored workflow (name or id); returns it.",
            delete_workflow,
        )
        .permission(Permission::Control)
        .destructive()
        .workflow(true)
        .data(workflow_schema),
        Tool::new(
            "execute_workflow_demo",
            "Run the demonstration workflow",
            "Runs a built-in demo: lists rooms, switches one room's lights on and off again, reads temperatures, lists blinds, audio and alarms. Switches real lights unless dry_run.",
            execute_workflow_demo,
        )
        .permission(Permission::Control)
        .per_control()
        .repeats()
        .task()
        .workflow(false)
        .data(run_schema),
    ]
}

tool_args! {
    /// One step of `create_workflow`: a tool call, when it runs.
    struct StepArgs {
        tool: String,
        arguments: Map<String, Value> { otherwise: Map::new() },
        delay_seconds: f64 {
            range: Range::new(0.0, workflow::MAX_DELAY_SECONDS),
            about: "Waited before the step",
            otherwise: 0.0,
        },
        parallel_group: Option<u32> { range: Range::new(0.0, 1_000_000.0) },
    }
}

tool_args! {
    /// The arguments of `create_workflow`.
    struct Create {
        name: String { min_chars: 1, max_chars: workflow::MAX_NAME_CHARS },
        description: Option<String> { max_chars: workflow::MAX_DESCRIPTION_CHARS },
        steps: Vec<StepArgs> { min_items: 1, max_items: workflow::MAX_STEPS },
    }
}

tool_args! {
    /// The arguments of the tools that name one stored workflow.
    struct KeyArgs {
        name: Option<String>,
        id: Option<i64> { min: 1.0 },
    }
}

tool_args! {
    /// The arguments of `execute_workflow`.
    struct ExecuteArgs {
        name: Option<String>,
        id: Option<i64> { min: 1.0 },
        dry_run: DryRun,
        stop_on_error: bool { default: false },
        confirm: Confirm,
    }
}

tool_args! {
    /// The arguments of `list_workflows`.
    struct ListArgs {
        name: Option<String> { about: args::NAME },
        limit: Limit,
    }
}

tool_args! {
    /// The arguments of `execute_workflow_demo`.
    struct DemoArgs {
        dry_run: DryRun,
    }
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
    super::with_confirmation(json!({
        "type": "object",
        "properties": {
            "steps": super::statuses(&["success", "error", "skipped", "planned"])
        },
        "required": ["steps", "total", "succeeded", "failed", "skipped", "planned", "duration_ms"]
    }))
}

/// The permission `execute_workflow` needs beyond its own: the recorded permission of the
/// workflow its arguments name, as the call itself finds it (`Read` when none is named or
/// found: the call then fails anyway).
fn steps_permission(store: &WorkflowStore, arguments: &Map<String, Value>) -> Permission {
    let named = ExecuteArgs::take(arguments).and_then(|a| key(a.name.as_deref(), a.id));
    match named.map(|key| store.get(&key)) {
        // An unreadable permission asks for the most.
        Ok(Ok(Some(w))) => Permission::parse(&w.permission).unwrap_or(Permission::Admin),
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

fn create_workflow(ctx: &Ctx, a: Create, _: &Caller) -> Result<Value, ToolError> {
    let name = a.name.trim().to_string();
    let steps: Vec<Step> = a
        .steps
        .into_iter()
        .map(|s| Step {
            tool: s.tool,
            arguments: s.arguments,
            delay_seconds: s.delay_seconds,
            parallel_group: s.parallel_group,
        })
        .collect();
    workflow::check_shape(&name, a.description.as_deref(), &steps)
        .map_err(ToolError::InvalidParams)?;
    let mut permission = Permission::Control;
    for (i, step) in steps.iter().enumerate() {
        let tool = check_step(ctx.catalogue, step)
            .map_err(|m| ToolError::InvalidParams(format!("steps[{i}].{m}")))?;
        permission = permission.max(tool.permission);
    }
    let stored = ctx
        .workflows
        .create(&NewWorkflow {
            name,
            description: a.description.filter(|d| !d.trim().is_empty()),
            steps,
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
    let tool = catalogue
        .iter()
        .find(|t| t.name == step.tool)
        .ok_or_else(|| {
            format!(
                "tool: unknown tool {:?}; call tools/list for the available tools",
                step.tool
            )
        })?;
    if tool.is_door() {
        return Err(format!(
            "tool: {:?} is a front door of the lean profile; a step names the tool it stands for",
            step.tool
        ));
    }
    if tool.workflow {
        return Err(format!(
            "tool: {:?} is a workflow tool; a workflow cannot run workflow tools",
            step.tool
        ));
    }
    if tool.pictures {
        return Err(format!(
            "tool: {:?} returns pictures, which a workflow cannot pass on",
            step.tool
        ));
    }
    tool.parse(&step.arguments, "arguments")
        .map_err(|e| format!("{e} (tool {})", tool.name))?;
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

fn list_workflows(ctx: &Ctx, a: ListArgs, _: &Caller) -> Result<Value, ToolError> {
    let limit = a.limit.0;
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

/// The workflow `name` or `id` names: exactly one of them.
fn key(name: Option<&str>, id: Option<i64>) -> Result<WorkflowKey, ToolError> {
    match (name, id) {
        (Some(n), None) if !n.trim().is_empty() => Ok(WorkflowKey::Name(n.trim().to_string())),
        (None, Some(id)) => Ok(WorkflowKey::Id(id)),
        (Some(_), Some(_)) => Err(ToolError::InvalidParams(
            "give either name or id, not both".into(),
        )),
        _ => Err(ToolError::InvalidParams(
            "name or id: give the workflow's name or id".into(),
        )),
    }
}

/// The stored workflow `key` names, or a `INVALID_PARAMETERS` result listing the workflows that
/// exist.
fn find(ctx: &Ctx, key: &WorkflowKey) -> Result<Workflow, ToolError> {
    match ctx.workflows.get(key).map_err(store_error)? {
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

fn get_workflow(ctx: &Ctx, a: KeyArgs, _: &Caller) -> Result<Value, ToolError> {
    Ok(workflow_json(&find(ctx, &key(a.name.as_deref(), a.id)?)?))
}

fn delete_workflow(ctx: &Ctx, a: KeyArgs, caller: &Caller) -> Result<Value, ToolError> {
    let key = key(a.name.as_deref(), a.id)?;
    let w = find(ctx, &key)?;
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
        None => find(ctx, &key).map(|w| workflow_json(&w)),
    }
}

fn execute_workflow(ctx: &Ctx, a: ExecuteArgs, caller: &Caller) -> Result<Value, ToolError> {
    let w = find(ctx, &key(a.name.as_deref(), a.id)?)?;
    let dry_run = a.dry_run.0;
    let stop_on_error = a.stop_on_error;
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
            Some((caller.confirm(a.confirm.0, &ask)?, q))
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
    let tool = |s: &Step| ctx.catalogue.iter().find(|t| t.name == s.tool);
    let security = |s: &Step| tool(s).is_some_and(|t| t.permission >= Permission::Security);
    let house_wide = |s: &Step| tool(s).is_some_and(|t| t.reach.house_wide(&s.arguments));
    let recorded = Permission::parse(&w.permission).unwrap_or(Permission::Admin);
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
                                json!({"error": ApiError::new("INTERNAL_ERROR", "the step panicked").object()}),
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
                json!({"error": ApiError::new("INVALID_PARAMETERS", m).object()}),
                Duration::ZERO,
            )
        }
    };
    if let Some(refusal) = tool.refuses_device_key(ctx.catalogue, caller) {
        let error = json!({"error": error_object(refusal)});
        return record(i, p, "error", error, Duration::ZERO);
    }
    let mut arguments = p.step.arguments.clone();
    if dry_run {
        let has_dry_run = tool.input_schema.pointer("/properties/dry_run").is_some();
        if has_dry_run {
            arguments.insert("dry_run".into(), Value::Bool(true));
        } else if tool.permission.writes() {
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

fn execute_workflow_demo(ctx: &Ctx, a: DemoArgs, caller: &Caller) -> Result<Value, ToolError> {
    let dry_run = a.dry_run.0;
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
