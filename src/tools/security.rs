//! Security: `arm_alarm`, `disarm_alarm`, `acknowledge_alarm`, `get_security_status`.
//!
//! Alarms are usually secured in Loxone (`isSecured`): their commands go as secured commands
//! with the visualisation password (PIN), see [`House::act_secured`](crate::home::House). The
//! PIN never passes through the model (no tool takes it as an argument): it comes from the
//! configuration (`visu_password`, `HOME_VISU_PASS`), else a person types it on this server's
//! page that a URL-mode elicitation opens ([`super::password`], [`Caller::password_source`]
//! decides which); it is never logged, echoed or put into an error message. A wrong PIN is an
//! `INVALID_PARAMETERS` tool error ("the code is wrong"), a missing one (no configuration, a
//! client without URL-mode elicitation) an `INVALID_PARAMETERS` tool error saying how the
//! owner configures it. Wrong PINs pause secured commands of the key that typed them (or, for
//! a wrong configured PIN, everybody's), longer with each run ([`crate::home::pin`]); a paused
//! caller gets `RATE_LIMIT_EXCEEDED` before anybody is asked.

use serde_json::{json, Value};

use super::args;
use super::password::Source;
use super::schema::{tool_args, Confirm, RoomListing};
use super::view::{self, round1, ValueReader};
use super::{
    mark_unconfirmed, with_confirmation, Caller, Confirmation, Ctx, Permission, Reach, ToConfirm,
    Tool, ToolError,
};
use crate::home::resolve::{Candidate, ResolveError};
use crate::home::{Action, Control, ControlKind, ControllerError, Family, Home, PinSource, Secret};

/// The description of the alarm tools' `alarm`.
const ALARM: &str = "Default: the only or the central alarm";

fn result_schema() -> Value {
    with_confirmation(json!({
        "type": "object",
        "properties": {
            "alarm": {"type": "object"},
            "action": {"enum": ["arm", "disarm", "acknowledge"]},
            "secured_command": {"type": "boolean"},
            "dry_run": {"type": "boolean"}
        },
        "required": ["alarm", "action", "secured_command"]
    }))
}

pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "arm_alarm",
            "Arm the alarm",
            "Arms the burglar alarm: delayed (default true) after its exit delay, false at once; motion false = shell protection only (single alarms); the user confirms first.",
            arm_alarm,
        )
        .operates(Reach::Controls { room: "room" })
        .permission(Permission::Security)
        .data(result_schema),
        Tool::new(
            "disarm_alarm",
            "Disarm the alarm",
            "Disarms the burglar alarm and ends a running alarm; the user confirms first.",
            disarm_alarm,
        )
        .operates(Reach::Controls { room: "room" })
        .permission(Permission::Security)
        .destructive()
        .data(result_schema),
        Tool::new(
            "acknowledge_alarm",
            "Acknowledge an alarm",
            "Acknowledges a triggered burglar or smoke alarm (silencing it) without disarming; the user confirms first.",
            acknowledge_alarm,
        )
        .operates(Reach::Controls { room: "room" })
        .permission(Permission::Security)
        .data(result_schema),
        Tool::new(
            "get_security_status",
            "Security status",
            "Burglar alarms (armed, arming, level 0-6, exit delay s), smoke alarms (level 0 none, 1 pre-alarm, 2 alarm), gates and doors (open_percent, 0 = closed), access controls; null: unknown. limit is per list.",
            get_security_status,
        )
        .lists(Reach::Room { room: "room", family: Family::Security })
        .data(|| {
            let entry = json!({"type": "array"});
            json!({
                "type": "object",
                "properties": {
                    "alarms": entry,
                    "smoke_alarms": entry,
                    "access": entry,
                    "visu_password_configured": {"type": "boolean"},
                    "truncated": {"type": "boolean"}
                },
                "required": ["alarms", "smoke_alarms", "access", "visu_password_configured", "truncated"]
            })
        }),
    ]
}

/// The alarm a call means: by name (filtered to `kinds`), else the only Alarm, else the only
/// CentralAlarm when there are several alarms; otherwise the candidates are listed.
fn pick_alarm<'a>(
    home: &'a Home,
    name: Option<&str>,
    room: Option<&str>,
    kinds: &[ControlKind],
) -> Result<&'a Control, ToolError> {
    if let Some(n) = name {
        return Ok(home.resolve_control(n, room, &|c| kinds.contains(&c.kind))?);
    }
    let room = args::room_uuid(home, room)?;
    let in_scope = |c: &&Control| room.is_none() || c.room == room;
    let alarms: Vec<&Control> = home
        .controls
        .iter()
        .filter(|c| c.kind == ControlKind::Alarm)
        .filter(in_scope)
        .collect();
    let centrals: Vec<&Control> = home
        .controls
        .iter()
        .filter(|c| c.kind == ControlKind::CentralAlarm)
        .filter(in_scope)
        .collect();
    match (alarms.as_slice(), centrals.as_slice()) {
        ([one], _) => Ok(one),
        (_, [central]) => Ok(central),
        ([], []) => Err(ToolError::Refused {
            code: "DEVICE_NOT_FOUND",
            message: "there is no alarm (Loxone Alarm or CentralAlarm) here".into(),
        }),
        _ => Err(ToolError::Resolve(ResolveError::Ambiguous {
            query: "alarm".into(),
            candidates: alarms
                .iter()
                .chain(centrals.iter())
                .map(|c| Candidate {
                    uuid: c.uuid.clone(),
                    name: c.name.clone(),
                    room: home.room_name(c).map(str::to_string),
                    kind: c.kind.as_str().to_string(),
                })
                .collect(),
        })),
    }
}

const BURGLAR: [ControlKind; 2] = [ControlKind::Alarm, ControlKind::CentralAlarm];

/// Sends `action` (secured when the control is) and builds the result.
fn send(
    ctx: &Ctx,
    c: &Control,
    action: Action,
    code: Option<&Secret>,
    caller: &Caller,
    extra: Value,
) -> Result<Value, ToolError> {
    let home = ctx.home();
    caller.act_secured(ctx, c, &action, code)?;
    let armed = armed_now(ctx, c);
    let mut out = json!({
        "alarm": view::device(&home, c),
        "action": match action {
            Action::Arm { .. } => "arm",
            Action::Disarm => "disarm",
            _ => "acknowledge",
        },
        "secured_command": c.is_secured,
        "armed": armed,
    });
    if let (Value::Object(o), Value::Object(e)) = (&mut out, extra) {
        o.extend(e);
    }
    Ok(out)
}

tool_args! {
    /// The arguments of `arm_alarm`.
    struct ArmArgs {
        alarm: Option<String> { about: ALARM },
        room: Option<String>,
        delayed: bool { default: true },
        motion: bool { default: true },
        confirm: Confirm,
    }
}

fn arm_alarm(ctx: &Ctx, a: ArmArgs, caller: &Caller) -> Result<Value, ToolError> {
    let home = ctx.home();
    let c = pick_alarm(&home, a.alarm.as_deref(), a.room.as_deref(), &BURGLAR)?;
    let delayed = a.delayed;
    let motion = match (&c.kind, a.motion) {
        (ControlKind::CentralAlarm, false) => {
            return Err(ToolError::InvalidParams(format!(
                "motion: {} is a central alarm, which arms each alarm with its own movement setting; name a single alarm to arm it without movement sensors",
                c.name
            )))
        }
        (ControlKind::CentralAlarm, true) => None,
        (_, m) => Some(m),
    };
    let action = Action::Arm {
        delayed,
        motion: motion.unwrap_or(true),
    };
    guarded(
        ctx,
        "arm_alarm",
        c,
        action,
        caller,
        a.confirm.0,
        json!({"delayed": delayed, "motion": motion}),
    )
}

tool_args! {
    /// The arguments of `disarm_alarm` and `acknowledge_alarm`.
    struct AlarmArgs {
        alarm: Option<String> { about: ALARM },
        room: Option<String>,
        confirm: Confirm,
    }
}

fn disarm_alarm(ctx: &Ctx, a: AlarmArgs, caller: &Caller) -> Result<Value, ToolError> {
    let home = ctx.home();
    let c = pick_alarm(&home, a.alarm.as_deref(), a.room.as_deref(), &BURGLAR)?;
    guarded(
        ctx,
        "disarm_alarm",
        c,
        Action::Disarm,
        caller,
        a.confirm.0,
        json!({}),
    )
}

/// Sends `action` to the alarm `c` once it is confirmed ([`Caller::confirm`], class
/// [`crate::home::Risk::Alarm`]): the question names the alarm, its room, the action and
/// whether it is armed now. Unconfirmed, nothing is sent and the answer says why.
#[allow(clippy::too_many_arguments)]
fn guarded(
    ctx: &Ctx,
    tool: &str,
    c: &Control,
    action: Action,
    caller: &Caller,
    confirm: Option<bool>,
    extra: Value,
) -> Result<Value, ToolError> {
    let home = ctx.home();
    let armed = armed_now(ctx, c);
    let (verb, name) = match &action {
        Action::Arm { delayed: true, .. } => ("Arm (after the exit delay)", "arm"),
        Action::Arm { .. } => ("Arm at once", "arm"),
        Action::Disarm => ("Disarm", "disarm"),
        _ => ("Acknowledge (silence)", "acknowledge"),
    };
    let question = format!(
        "{verb} the alarm {}{}{}?",
        c.name,
        home.room_name(c)
            .map(|r| format!(" ({r})"))
            .unwrap_or_default(),
        match armed {
            Some(true) => ", which is armed now",
            Some(false) => ", which is not armed now",
            None => "",
        }
    );
    let ask = ToConfirm {
        risk: ctx.risk(c).max(crate::home::Risk::Alarm),
        tool,
        controls: vec![c.uuid.clone()],
        command: format!("{action:?}"),
        question: &question,
    };
    // Where the visualisation password comes from decides who confirms: a person typing it
    // on the page has confirmed; otherwise the usual question (or nothing can be sent).
    // A caller whose secured commands pause after wrong passwords is told so before anybody
    // is asked (and no page is opened).
    let (outcome, code) = match caller.password_source(ctx, c) {
        Source::NotNeeded => (caller.confirm(confirm, &ask)?, None),
        Source::Configured => {
            ctx.pin_admit(&caller.typist(), PinSource::Configured)?;
            (caller.confirm(confirm, &ask)?, None)
        }
        Source::Unavailable => {
            return Err(ToolError::Controller(ControllerError::VisuPasswordMissing(
                c.name.clone(),
            )))
        }
        Source::Page(opener) => {
            ctx.pin_admit(&caller.typist(), PinSource::Page)?;
            match caller.ask_password(&ask, opener)? {
                Ok(pw) => (
                    Confirmation::Go(super::confirm::ConfirmedBy::Page),
                    Some(pw),
                ),
                Err(reason) => (Confirmation::Cancelled(reason), None),
            }
        }
    };
    if let Confirmation::Go(by) = outcome {
        let mut out = send(ctx, c, action, code.as_ref(), caller, extra)?;
        out["confirmed_by"] = json!(by.as_str());
        return Ok(out);
    }
    let mut out = json!({
        "alarm": view::device(&home, c),
        "action": name,
        "secured_command": c.is_secured,
        "armed": armed,
    });
    if let (Value::Object(o), Value::Object(e)) = (&mut out, extra) {
        o.extend(e);
    }
    mark_unconfirmed(&mut out, &question, &outcome);
    Ok(out)
}

/// Whether a single alarm is armed (its value); `None` for a central alarm or when unknown.
fn armed_now(ctx: &Ctx, c: &Control) -> Option<bool> {
    match c.kind {
        ControlKind::Alarm => ctx
            .value(c)
            .ok()
            .and_then(|v| v.value.as_f64())
            .map(|x| x != 0.0),
        _ => None,
    }
}

fn acknowledge_alarm(ctx: &Ctx, a: AlarmArgs, caller: &Caller) -> Result<Value, ToolError> {
    let home = ctx.home();
    let kinds = [
        ControlKind::Alarm,
        ControlKind::CentralAlarm,
        ControlKind::SmokeAlarm,
    ];
    let c = pick_alarm(&home, a.alarm.as_deref(), a.room.as_deref(), &kinds)?;
    guarded(
        ctx,
        "acknowledge_alarm",
        c,
        Action::Acknowledge,
        caller,
        a.confirm.0,
        json!({}),
    )
}

fn get_security_status(ctx: &Ctx, a: RoomListing, caller: &Caller) -> Result<Value, ToolError> {
    let limit = a.limit.0;
    let home = ctx.home();
    let room = args::room_uuid(&home, a.room.as_deref())?;
    let mut reader = ValueReader::new(ctx);
    let mut primary = |c: &Control| reader.read(c).and_then(|v| v.value.as_f64());
    // A named state (level, armedDelay, ...) when the state store knows it (WebSocket, issue 4).
    let named = |c: &Control, state: &str| {
        c.state(state)
            .and_then(|u| ctx.states().get(u))
            .and_then(|v| v.value.as_f64())
    };
    let in_scope =
        |c: &Control| (room.is_none() || c.room == room) && caller.permits(&home, c).is_ok();

    let mut alarms = Vec::new();
    let mut smoke = Vec::new();
    let mut access = Vec::new();
    let mut truncated = false;
    let mut push = |list: &mut Vec<Value>, v: Value| {
        if list.len() < limit {
            list.push(v);
        } else {
            truncated = true;
        }
    };
    for c in home.controls.iter().filter(|c| in_scope(c)) {
        let mut rec = view::device(&home, c);
        match c.kind {
            ControlKind::Alarm => {
                let armed = primary(c).map(|x| x != 0.0);
                let delay = named(c, "armedDelay");
                rec["armed"] = json!(armed);
                rec["arming"] = json!(delay.map(|d| d > 0.0));
                rec["arming_delay_s"] = json!(delay.map(round1));
                rec["level"] = json!(named(c, "level"));
                rec["motion"] = json!(named(c, "disabledMove").map(|d| d == 0.0));
                push(&mut alarms, rec);
            }
            ControlKind::CentralAlarm => {
                let members: Vec<&Control> = c
                    .details
                    .get("controls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|m| m.get("uuid").and_then(Value::as_str))
                    .filter_map(|u| home.control(u))
                    .collect();
                let states: Vec<Option<bool>> = members
                    .iter()
                    .map(|m| primary(m).map(|x| x != 0.0))
                    .collect();
                rec["armed"] = match states.iter().copied().collect::<Option<Vec<bool>>>() {
                    Some(s) if !s.is_empty() => json!(s.iter().all(|&x| x)),
                    _ => Value::Null,
                };
                rec["alarms"] = json!(members.iter().map(|m| m.name.as_str()).collect::<Vec<_>>());
                push(&mut alarms, rec);
            }
            ControlKind::SmokeAlarm => {
                let level = primary(c);
                rec["level"] = json!(level);
                rec["alarm"] = json!(level.map(|l| l > 0.0));
                push(&mut smoke, rec);
            }
            ControlKind::Gate => {
                rec["open_percent"] = json!(primary(c).map(|p| round1(p * 100.0)));
                rec["moving"] = json!(named(c, "active").map(|a| a != 0.0));
                push(&mut access, rec);
            }
            ControlKind::NfcCodeTouch | ControlKind::Intercom => push(&mut access, rec),
            _ => {}
        }
    }
    let any = |list: &[Value], key: &str| -> Value {
        let vals: Vec<&Value> = list.iter().map(|r| &r[key]).collect();
        if vals.iter().any(|v| v.as_bool() == Some(true)) {
            json!(true)
        } else if vals.iter().all(|v| v.is_boolean()) {
            json!(false)
        } else {
            Value::Null
        }
    };
    let out = json!({
        "any_armed": any(&alarms, "armed"),
        "any_alarm": any(&smoke, "alarm"),
        "alarms": alarms,
        "smoke_alarms": smoke,
        "access": access,
        "visu_password_configured": ctx.has_visu_password(),
        "truncated": truncated,
    });
    Ok(reader.annotate(out))
}
