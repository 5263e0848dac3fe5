//! Blinds: `discover_rolladen_capabilities`, `control_room_rolladen`, `control_all_rolladen`,
//! `control_rolladen_unified`.
//!
//! Positions are percent closed: 0 = fully open (up), 100 = fully closed (down), as Loxone's
//! `manualPosition/{0-100}` takes them (the Jalousie state `position` is the same as 0-1).
//! Room- and house-wide commands go to each Jalousie, never to CentralJalousie blocks (those
//! would move the same blinds a second time), and report per blind, so one failure does not
//! hide the others.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::args::{self, in_range};
use super::view;
use super::{Caller, Ctx, Permission, Tool, ToolError, READ_ONLY, SETTER};
use crate::home::{Action, Control, ControlKind, ControllerError, Family, Home, House};
use crate::loxone::commands::command_for;

pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "discover_rolladen_capabilities",
            title: "Discover blinds",
            description: "Lists every blind (Loxone Jalousie) and central blind block (CentralJalousie) with room, type, current position in percent closed (0 = fully open, 100 = fully closed; null for central blocks), style (blinds, shutters, curtain, awning), slat support, whether automatic shading is configured (isAutomatic), and the actions it supports (up, down, stop, shade, position, slats). Optional: room (name or UUID), limit.",
            permission: Permission::Read,
            annotations: READ_ONLY,
            input_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "room": {"type": "string", "description": "Room name or UUID"},
                        "limit": args::limit_schema()
                    },
                    "additionalProperties": false
                })
            },
            data_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "blinds": {"type": "array", "items": {
                            "type": "object",
                            "properties": {
                                "uuid": {"type": "string"},
                                "name": {"type": "string"},
                                "room": {"type": ["string", "null"]},
                                "type": {"type": "string", "enum": ["Jalousie", "CentralJalousie"]},
                                "position": {"type": ["number", "null"], "minimum": 0, "maximum": 100, "description": "Percent closed, 0 = fully open"},
                                "style": {"type": ["string", "null"]},
                                "slats": {"type": "boolean"},
                                "automatic_shading": {"type": "boolean"},
                                "actions": {"type": "array", "items": {"type": "string"}},
                                "controls": {"type": "integer", "description": "CentralJalousie: number of blinds it commands"}
                            },
                            "required": ["uuid", "name", "room", "type", "position", "slats", "automatic_shading", "actions"]
                        }},
                        "total": {"type": "integer"},
                        "position_meaning": {"type": "string"},
                        "warning": {"type": "string"}
                    },
                    "required": ["blinds", "total"]
                })
            },
            run: discover,
        },
        Tool {
            name: "control_room_rolladen",
            title: "Blinds of a room",
            description: "Moves every blind (Jalousie) of one room. action: up (fully open), down (fully closed), stop, shade (to the shading position), position (needs position: percent closed 0-100, 0 = fully open, 100 = fully closed). room: name or UUID. dry_run: true lists the blinds and the exact commands without sending anything. Reports each blind (ok or error).",
            permission: Permission::Control,
            annotations: SETTER,
            input_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "room": {"type": "string", "description": "Room name or UUID"},
                        "action": {"type": "string", "enum": ROOM_ACTIONS},
                        "position": position_schema(),
                        "dry_run": dry_run_schema()
                    },
                    "required": ["room", "action"],
                    "additionalProperties": false
                })
            },
            data_schema: control_data_schema,
            run: control_room,
        },
        Tool {
            name: "control_all_rolladen",
            title: "All blinds",
            description: "Moves every blind (Jalousie) of the house, each one individually (central blocks are not commanded, so nothing moves twice). action: up (fully open), down (fully closed), stop, shade (to the shading position), position (needs position: percent closed 0-100, 0 = fully open, 100 = fully closed). dry_run: true lists the blinds, their current position and the exact commands without sending anything. Reports each blind (ok or error).",
            permission: Permission::Control,
            annotations: SETTER,
            input_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "action": {"type": "string", "enum": ROOM_ACTIONS},
                        "position": position_schema(),
                        "dry_run": dry_run_schema()
                    },
                    "required": ["action"],
                    "additionalProperties": false
                })
            },
            data_schema: control_data_schema,
            run: control_all,
        },
        Tool {
            name: "control_rolladen_unified",
            title: "Blinds (unified)",
            description: "Moves blinds by scope. scope: room (target = room name or UUID), all (no target; every Jalousie of the house), devices (target = list of blind names or UUIDs; central blocks allowed here). action: up (fully open), down (fully closed), stop, shade, position (value = percent closed 0-100, 0 = fully open, 100 = fully closed), slats (value = slat angle 0-100 %, only blinds with slats). dry_run: true lists the blinds and the exact commands without sending anything. Reports each blind (ok or error).",
            permission: Permission::Control,
            annotations: SETTER,
            input_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "scope": {"type": "string", "enum": ["room", "all", "devices"]},
                        "target": {
                            "type": ["string", "array"],
                            "items": {"type": "string"},
                            "minItems": 1,
                            "description": "scope room: room name or UUID; scope devices: blind names or UUIDs; omitted for scope all"
                        },
                        "action": {"type": "string", "enum": ["up", "down", "stop", "shade", "position", "slats"]},
                        "value": {"type": "number", "minimum": 0, "maximum": 100, "description": "action position: percent closed (0 = fully open); action slats: slat angle in percent"},
                        "dry_run": dry_run_schema()
                    },
                    "required": ["scope", "action"],
                    "additionalProperties": false
                })
            },
            data_schema: control_data_schema,
            run: control_unified,
        },
    ]
}

const ROOM_ACTIONS: [&str; 5] = ["up", "down", "stop", "shade", "position"];
const POSITION_MEANING: &str = "percent closed, 0 = fully open, 100 = fully closed";

fn position_schema() -> Value {
    json!({"type": "number", "minimum": 0, "maximum": 100, "description": "Percent closed: 0 = fully open, 100 = fully closed; required for action position"})
}

fn dry_run_schema() -> Value {
    json!({"type": "boolean", "default": false, "description": "List what would be sent, send nothing"})
}

fn control_data_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "scope": {"type": "string"},
            "room": {"type": ["string", "null"]},
            "action": {"type": "string"},
            "position": {"type": ["number", "null"]},
            "value": {"type": ["number", "null"]},
            "dry_run": {"type": "boolean"},
            "results": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "uuid": {"type": "string"},
                    "name": {"type": "string"},
                    "room": {"type": ["string", "null"]},
                    "ok": {"type": "boolean"},
                    "command": {"type": "string", "description": "The Loxone command: <uuid>/<command>"},
                    "current_position": {"type": ["number", "null"], "description": "dry_run: percent closed now"},
                    "error": {"type": "string"}
                },
                "required": ["uuid", "name", "room", "ok"]
            }},
            "total": {"type": "integer"},
            "succeeded": {"type": "integer"},
            "failed": {"type": "integer"}
        },
        "required": ["scope", "action", "dry_run", "results", "total", "succeeded", "failed"]
    })
}

/// Loxone `details.animation` of a Jalousie: how the blind looks and moves.
fn style(c: &Control) -> Option<&'static str> {
    let n = c.details.get("animation")?.as_i64()?;
    Some(match n {
        0 => "blinds",
        1 => "shutters",
        2 => "curtain",
        4 => "curtain_left",
        5 => "curtain_right",
        6 => "awning",
        _ => "other",
    })
}

/// Only venetian blinds (`animation` 0) have slats to tilt.
fn has_slats(c: &Control) -> bool {
    c.kind == ControlKind::Jalousie && c.details.get("animation").and_then(Value::as_i64) == Some(0)
}

fn is_blind(c: &Control) -> bool {
    c.kind == ControlKind::Jalousie
}

fn is_blind_or_central(c: &Control) -> bool {
    matches!(c.kind, ControlKind::Jalousie | ControlKind::CentralJalousie)
}

fn actions(c: &Control) -> Vec<&'static str> {
    let mut a = vec!["up", "down", "stop", "shade"];
    if c.kind == ControlKind::Jalousie {
        a.push("position");
        if has_slats(c) {
            a.push("slats");
        }
    }
    a
}

/// Percent closed, one decimal, from the Jalousie state 0..1.
fn percent(v: f64) -> f64 {
    view::round1(v * 100.0)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Discover {
    room: Option<String>,
    limit: Option<i64>,
}

fn discover(house: &Ctx, a: &Map<String, Value>, _: &Caller) -> Result<Value, ToolError> {
    let a: Discover = args::parse(a)?;
    let limit = args::limit(a.limit)?;
    let home = house.home();
    let room = args::room_uuid(&home, a.room.as_deref())?;
    let matching: Vec<&Control> = home
        .controls
        .iter()
        .filter(|c| room.as_ref().is_none_or(|r| c.room.as_ref() == Some(r)))
        .filter(|c| is_blind_or_central(c))
        .collect();
    let mut values = view::ValueReader::new(house);
    let blinds: Vec<Value> = matching
        .iter()
        .take(limit)
        .map(|c| {
            let position = if is_blind(c) {
                values
                    .read(c)
                    .and_then(|v| v.value.as_f64())
                    .map(percent)
            } else {
                None
            };
            let mut d = json!({
                "uuid": c.uuid,
                "name": c.name,
                "room": home.room_name(c),
                "type": c.kind.as_str(),
                "position": position,
                "style": if is_blind(c) { style(c) } else { None },
                "slats": has_slats(c),
                "automatic_shading": c.details.get("isAutomatic").and_then(Value::as_bool).unwrap_or(false),
                "actions": actions(c),
            });
            if c.kind == ControlKind::CentralJalousie {
                d["controls"] = json!(c
                    .details
                    .get("controls")
                    .and_then(Value::as_array)
                    .map_or(0, |v| v.len()));
            }
            d
        })
        .collect();
    Ok(values.annotate(json!({
        "blinds": blinds,
        "total": matching.len(),
        "position_meaning": POSITION_MEANING,
    })))
}

#[derive(Deserialize, Clone, Copy, PartialEq, Debug)]
#[serde(rename_all = "lowercase")]
enum RoomAction {
    Up,
    Down,
    Stop,
    Shade,
    Position,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Debug)]
#[serde(rename_all = "lowercase")]
enum UnifiedAction {
    Up,
    Down,
    Stop,
    Shade,
    Position,
    Slats,
}

impl From<RoomAction> for UnifiedAction {
    fn from(a: RoomAction) -> Self {
        match a {
            RoomAction::Up => UnifiedAction::Up,
            RoomAction::Down => UnifiedAction::Down,
            RoomAction::Stop => UnifiedAction::Stop,
            RoomAction::Shade => UnifiedAction::Shade,
            RoomAction::Position => UnifiedAction::Position,
        }
    }
}

impl UnifiedAction {
    fn as_str(self) -> &'static str {
        match self {
            UnifiedAction::Up => "up",
            UnifiedAction::Down => "down",
            UnifiedAction::Stop => "stop",
            UnifiedAction::Shade => "shade",
            UnifiedAction::Position => "position",
            UnifiedAction::Slats => "slats",
        }
    }
}

/// The [`Action`] for `action` with the percent `value` (named `field` in errors): range
/// checked, required for position and slats, refused for the others.
fn to_action(action: UnifiedAction, value: Option<f64>, field: &str) -> Result<Action, ToolError> {
    let value = value.map(|v| in_range(field, v, 0.0, 100.0)).transpose()?;
    let needs = |v: Option<f64>| {
        v.ok_or_else(|| {
            ToolError::InvalidParams(format!(
                "{field} (0-100) is required for action {}",
                action.as_str()
            ))
        })
    };
    match (action, value) {
        (UnifiedAction::Position, v) => Ok(Action::Level(needs(v)?)),
        (UnifiedAction::Slats, v) => Ok(Action::Slats(needs(v)?)),
        (_, Some(_)) => Err(ToolError::InvalidParams(format!(
            "{field} only applies to action position{}, not {}",
            if field == "value" { " or slats" } else { "" },
            action.as_str()
        ))),
        (UnifiedAction::Up, None) => Ok(Action::Up),
        (UnifiedAction::Down, None) => Ok(Action::Down),
        (UnifiedAction::Stop, None) => Ok(Action::Stop),
        (UnifiedAction::Shade, None) => Ok(Action::Shade),
    }
}

/// Sends (or, with `dry_run`, only shows) `action` to each of `targets`; the per-blind results
/// and the counts. When nothing succeeded because the Miniserver is out of reach, that error.
fn run_on(
    house: &House,
    home: &Home,
    targets: &[&Control],
    action: &Action,
    dry_run: bool,
    caller: &Caller,
) -> Result<Value, ToolError> {
    let mut values = view::ValueReader::new(house);
    let mut out_of_reach: Option<ControllerError> = None;
    let mut succeeded = 0;
    let mut results = Vec::new();
    for c in targets {
        let mut r = json!({"uuid": c.uuid, "name": c.name, "room": home.room_name(c)});
        let outcome: Result<(), String> = if matches!(action, Action::Slats(_)) && !has_slats(c) {
            Err(format!(
                "{} has no slats ({})",
                c.name,
                style(c).unwrap_or("no slat support")
            ))
        } else {
            match command_for(c, action) {
                Err(e) => Err(e),
                Ok(cmd) => {
                    r["command"] = json!(format!("{}/{}", cmd.target, cmd.command));
                    if dry_run {
                        if is_blind(c) {
                            r["current_position"] =
                                json!(values.read(c).and_then(|v| v.value.as_f64()).map(percent));
                        }
                        Ok(())
                    } else if let Some(e) = &out_of_reach {
                        Err(format!("not sent: {e}"))
                    } else {
                        match house.act(c, action, &caller.label) {
                            Ok(_) => Ok(()),
                            Err(e) => {
                                let m = e.to_string();
                                if e.is_unreachable() {
                                    out_of_reach = Some(e);
                                }
                                Err(m)
                            }
                        }
                    }
                }
            }
        };
        match outcome {
            Ok(()) => {
                succeeded += 1;
                r["ok"] = json!(true);
            }
            Err(e) => {
                r["ok"] = json!(false);
                r["error"] = json!(e);
            }
        }
        results.push(r);
    }
    if succeeded == 0 {
        if let Some(e) = out_of_reach {
            return Err(ToolError::Controller(e));
        }
    }
    Ok(json!({
        "dry_run": dry_run,
        "results": results,
        "total": targets.len(),
        "succeeded": succeeded,
        "failed": targets.len() - succeeded,
    }))
}

/// Merges `extra` fields into the object `base`.
fn with(mut base: Value, extra: Value) -> Value {
    if let (Value::Object(b), Value::Object(e)) = (&mut base, extra) {
        b.extend(e);
    }
    base
}

/// The Jalousies of a room (slat-capable ones only for the slats action); refused when none.
fn room_blinds<'h>(
    home: &'h Home,
    room: &str,
    action: &Action,
) -> Result<(String, Vec<&'h Control>), ToolError> {
    let room = home.resolve_room(room)?;
    let slats = matches!(action, Action::Slats(_));
    let blinds: Vec<&Control> = home
        .controls_in_room(&room.uuid)
        .into_iter()
        .filter(|c| is_blind(c) && (!slats || has_slats(c)))
        .collect();
    if blinds.is_empty() {
        return Err(ToolError::Refused {
            code: "DEVICE_NOT_FOUND",
            message: format!(
                "{} has no blinds{}",
                room.name,
                if slats { " with slats" } else { "" }
            ),
        });
    }
    Ok((room.name.clone(), blinds))
}

/// Every Jalousie of the house (slat-capable ones only for the slats action).
fn all_blinds<'h>(home: &'h Home, action: &Action) -> Result<Vec<&'h Control>, ToolError> {
    let slats = matches!(action, Action::Slats(_));
    let blinds: Vec<&Control> = home
        .controls
        .iter()
        .filter(|c| is_blind(c) && (!slats || has_slats(c)))
        .collect();
    if blinds.is_empty() {
        return Err(ToolError::Refused {
            code: "DEVICE_NOT_FOUND",
            message: format!(
                "this house has no blinds{}",
                if slats { " with slats" } else { "" }
            ),
        });
    }
    Ok(blinds)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RoomArgs {
    room: String,
    action: RoomAction,
    position: Option<f64>,
    dry_run: Option<bool>,
}

fn control_room(house: &Ctx, a: &Map<String, Value>, caller: &Caller) -> Result<Value, ToolError> {
    let a: RoomArgs = args::parse(a)?;
    let action = to_action(a.action.into(), a.position, "position")?;
    let home = house.home();
    let (room, blinds) = room_blinds(&home, &a.room, &action)?;
    let dry_run = a.dry_run.unwrap_or(false);
    let done = run_on(house, &home, &blinds, &action, dry_run, caller)?;
    Ok(with(
        json!({
            "scope": "room",
            "room": room,
            "action": UnifiedAction::from(a.action).as_str(),
            "position": a.position,
        }),
        done,
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AllArgs {
    action: RoomAction,
    position: Option<f64>,
    dry_run: Option<bool>,
}

fn control_all(house: &Ctx, a: &Map<String, Value>, caller: &Caller) -> Result<Value, ToolError> {
    let a: AllArgs = args::parse(a)?;
    let action = to_action(a.action.into(), a.position, "position")?;
    let home = house.home();
    let blinds = all_blinds(&home, &action)?;
    let dry_run = a.dry_run.unwrap_or(false);
    let done = run_on(house, &home, &blinds, &action, dry_run, caller)?;
    Ok(with(
        json!({
            "scope": "all",
            "action": UnifiedAction::from(a.action).as_str(),
            "position": a.position,
        }),
        done,
    ))
}

#[derive(Deserialize, Clone, Copy, PartialEq, Debug)]
#[serde(rename_all = "lowercase")]
enum Scope {
    Room,
    All,
    Devices,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UnifiedArgs {
    scope: Scope,
    target: Option<Value>,
    action: UnifiedAction,
    value: Option<f64>,
    dry_run: Option<bool>,
}

/// `target` as a list of names: a string or a non-empty array of strings.
fn target_names(target: Option<&Value>, scope: &str) -> Result<Vec<String>, ToolError> {
    let missing = || {
        ToolError::InvalidParams(format!(
            "target is required for scope {scope} ({})",
            if scope == "room" {
                "a room name or UUID"
            } else {
                "blind names or UUIDs"
            }
        ))
    };
    let bad = || ToolError::InvalidParams("target must be a string or an array of strings".into());
    let names = match target {
        None => return Err(missing()),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string).ok_or_else(bad))
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err(bad()),
    };
    if names.is_empty() || names.iter().any(|n| n.trim().is_empty()) {
        return Err(missing());
    }
    Ok(names)
}

fn control_unified(
    house: &Ctx,
    a: &Map<String, Value>,
    caller: &Caller,
) -> Result<Value, ToolError> {
    let a: UnifiedArgs = args::parse(a)?;
    let action = to_action(a.action, a.value, "value")?;
    let dry_run = a.dry_run.unwrap_or(false);
    let home = house.home();
    let (room, blinds): (Option<String>, Vec<&Control>) = match a.scope {
        Scope::All => {
            if a.target.is_some() {
                return Err(ToolError::InvalidParams(
                    "target must be omitted for scope all".into(),
                ));
            }
            (None, all_blinds(&home, &action)?)
        }
        Scope::Room => {
            let names = target_names(a.target.as_ref(), "room")?;
            if names.len() != 1 {
                return Err(ToolError::InvalidParams(
                    "target must be one room for scope room".into(),
                ));
            }
            let (room, blinds) = room_blinds(&home, &names[0], &action)?;
            (Some(room), blinds)
        }
        Scope::Devices => {
            let names = target_names(a.target.as_ref(), "devices")?;
            // Resolve every name before acting: a typo moves nothing.
            let mut blinds: Vec<&Control> = Vec::new();
            for n in &names {
                let c = home.resolve_control(n, None, &|c| c.family() == Family::Blinds)?;
                if !blinds.iter().any(|b| b.uuid == c.uuid) {
                    blinds.push(c);
                }
            }
            (None, blinds)
        }
    };
    let done = run_on(house, &home, &blinds, &action, dry_run, caller)?;
    Ok(with(
        json!({
            "scope": match a.scope { Scope::Room => "room", Scope::All => "all", Scope::Devices => "devices" },
            "room": room,
            "action": a.action.as_str(),
            "value": a.value,
        }),
        done,
    ))
}
