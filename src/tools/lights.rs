//! Lighting: `control_room_lights`, `control_all_lights`, `control_lights_unified`,
//! `room_all_on`, `set_dimmer`.
//!
//! Which controls are lights: top-level controls of the lighting family (Dimmer, EIBDimmer,
//! LightController v1, LightControllerV2, ColorPickerV2, Switch, TimedSwitch), except the
//! CentralLightController (it would switch every room a second time) and sub-controls (a
//! LightControllerV2's circuits and colour pickers follow their controller). Switch and
//! TimedSwitch are general-purpose blocks: they count as lights only when their Loxone category
//! is a lighting category (type `lights`) or when they have none, so "all lights off" leaves the
//! coffee machine's socket alone. Named devices (`set_dimmer`, scope `devices`) may be any
//! lighting control, sub-controls included.
//!
//! Every result lists each control with what was done (`ok`, `error`), so one failing light
//! does not hide the others; room- and house-wide calls take `dry_run: true`, which lists the
//! controls and the Loxone commands that would be sent, and sends nothing.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::args::{self, in_range};
use super::{Caller, Ctx, Permission, Tool, ToolError, SETTER};
use crate::home::{
    Action, CategoryKind, Control, ControlKind, ControllerError, Family, Home, House,
};
use crate::loxone::commands::command_for;

/// Default brightness of `dim` and `bright` without a value, in percent.
const DIM_DEFAULT: f64 = 30.0;
const BRIGHT_DEFAULT: f64 = 100.0;

pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "control_room_lights",
            title: "Switch a room's lights",
            description: "Switches every light of one room on or off: switches, dimmers, Loxone lighting controllers (Gen 1 LightController scenes and Gen 2 LightControllerV2 moods). room: name or UUID. action: on or off. brightness: optional, 0-100 %, with action on: dimmable lights are set to it (a LightControllerV2 to its master brightness), plain switches simply switch on. dry_run: true lists the lights and commands without sending anything. The result lists every light with ok/error.",
            permission: Permission::Control,
            annotations: SETTER,
            input_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "room": {"type": "string", "description": "Room name or UUID"},
                        "action": {"type": "string", "enum": ["on", "off"]},
                        "brightness": percent_schema("Brightness in percent for action on (0-100)"),
                        "dry_run": dry_run_schema()
                    },
                    "required": ["room", "action"],
                    "additionalProperties": false
                })
            },
            data_schema: result_schema,
            run: control_room_lights,
        },
        Tool {
            name: "control_all_lights",
            title: "Switch all lights of the house",
            description: "Switches every light of the house on or off, room by room (switches, dimmers, Gen 1 LightController, Gen 2 LightControllerV2; the central lighting block is not used, so nothing is switched twice). action: on or off. dry_run: true lists the lights and commands that would be sent without sending anything; use it before switching a whole house. The result lists every light with ok/error.",
            permission: Permission::Control,
            annotations: SETTER,
            input_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "action": {"type": "string", "enum": ["on", "off"]},
                        "dry_run": dry_run_schema()
                    },
                    "required": ["action"],
                    "additionalProperties": false
                })
            },
            data_schema: result_schema,
            run: control_all_lights,
        },
        Tool {
            name: "control_lights_unified",
            title: "Control lights (room, house or named lights)",
            description: "Controls lights by scope. scope: room (give room: name or UUID), all (the whole house) or devices (give devices: list of light names or UUIDs; room optional to pick among equal names). action: on, off, dim (value or 30 %), bright (value or 100 %), brightness (value required). value: brightness 0-100 %. Dimmable lights (Dimmer, EIBDimmer, LightControllerV2 master brightness, ColorPickerV2) take the level; plain switches and Gen 1 LightControllers switch on for a level above 0 and off at 0. dry_run: true lists the lights and commands without sending anything. The result lists every light with ok/error.",
            permission: Permission::Control,
            annotations: SETTER,
            input_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "scope": {"type": "string", "enum": ["room", "all", "devices"]},
                        "room": {"type": "string", "description": "Room name or UUID (required for scope room)"},
                        "devices": {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "Light names or UUIDs (required for scope devices)"},
                        "action": {"type": "string", "enum": ["on", "off", "dim", "bright", "brightness"]},
                        "value": percent_schema("Brightness in percent (0-100)"),
                        "dry_run": dry_run_schema()
                    },
                    "required": ["scope", "action"],
                    "additionalProperties": false
                })
            },
            data_schema: result_schema,
            run: control_lights_unified,
        },
        Tool {
            name: "room_all_on",
            title: "All lights of a room on",
            description: "Switches on every light of one room (a LightControllerV2 goes to its \"bright\" mood, a Gen 1 LightController to scene 9 \"all on\", dimmers to their last level). room_id: room name or UUID. dry_run: true lists the lights and commands without sending anything. The result lists every light with ok/error.",
            permission: Permission::Control,
            annotations: SETTER,
            input_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "room_id": {"type": "string", "description": "Room name or UUID"},
                        "dry_run": dry_run_schema()
                    },
                    "required": ["room_id"],
                    "additionalProperties": false
                })
            },
            data_schema: result_schema,
            run: room_all_on,
        },
        Tool {
            name: "set_dimmer",
            title: "Set a dimmer",
            description: "Sets the brightness of one dimmable light in percent, 0-100 (0 = off): Dimmer, EIBDimmer, ColorPickerV2, or a LightControllerV2 (master brightness; switched to its bright mood first, 0 switches it off). device_id: light name or UUID; room: optional room name or UUID to pick among lights of the same name.",
            permission: Permission::Control,
            annotations: SETTER,
            input_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "device_id": {"type": "string", "description": "Light name or UUID"},
                        "level": percent_schema("Brightness in percent (0-100, 0 = off)"),
                        "room": {"type": "string", "description": "Room name or UUID, to pick among lights of the same name"}
                    },
                    "required": ["device_id", "level"],
                    "additionalProperties": false
                })
            },
            data_schema: result_schema,
            run: set_dimmer,
        },
    ]
}

fn percent_schema(description: &str) -> Value {
    json!({"type": "number", "minimum": 0, "maximum": 100, "description": description})
}

fn dry_run_schema() -> Value {
    json!({"type": "boolean", "default": false, "description": "List what would be done without sending anything"})
}

/// The `data` of every lighting tool.
fn result_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "scope": {"type": "string", "enum": ["room", "all", "devices"]},
            "room": {"type": ["string", "null"]},
            "action": {"type": "string"},
            "value": {"type": ["number", "null"], "description": "Brightness in percent, if any"},
            "dry_run": {"type": "boolean"},
            "devices": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "uuid": {"type": "string"},
                    "name": {"type": "string"},
                    "room": {"type": ["string", "null"]},
                    "type": {"type": "string"},
                    "ok": {"type": "boolean"},
                    "error": {"type": "string"},
                    "note": {"type": "string"},
                    "commands": {"type": "array", "items": {"type": "string"}, "description": "Loxone commands sent (or, in a dry run, that would be sent)"}
                },
                "required": ["uuid", "name", "room", "type", "ok"]
            }},
            "total": {"type": "integer"},
            "succeeded": {"type": "integer"},
            "failed": {"type": "integer"}
        },
        "required": ["scope", "action", "dry_run", "devices", "total", "succeeded", "failed"]
    })
}

/// What the caller wants every light to do.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Intent {
    On,
    Off,
    /// Brightness in percent.
    Level(f64),
}

/// Types that take a brightness.
fn dimmable(kind: &ControlKind) -> bool {
    matches!(
        kind,
        ControlKind::Dimmer
            | ControlKind::EibDimmer
            | ControlKind::LightControllerV2
            | ControlKind::ColorPickerV2
    )
}

/// Whether a top-level control is one of the lights that room- and house-wide calls switch.
fn is_light(home: &Home, c: &Control) -> bool {
    match c.kind {
        ControlKind::CentralLightController => false,
        ControlKind::Switch | ControlKind::TimedSwitch => c
            .category
            .as_deref()
            .and_then(|u| home.category(u))
            .is_none_or(|k| k.kind == CategoryKind::Lights),
        _ => c.family() == Family::Lighting,
    }
}

/// The lights of a room, in model order.
fn room_lights<'a>(home: &'a Home, room_uuid: &str) -> Vec<&'a Control> {
    home.controls_in_room(room_uuid)
        .into_iter()
        .filter(|c| is_light(home, c))
        .collect()
}

/// The actions that carry out `intent` on `c`, and a note when the light cannot do exactly
/// that (a switch asked for a brightness).
fn plan(c: &Control, intent: Intent) -> (Vec<Action>, Option<String>) {
    match intent {
        Intent::On => (vec![Action::On], None),
        Intent::Off => (vec![Action::Off], None),
        Intent::Level(v) if v <= 0.0 => (vec![Action::Off], None),
        // A V2 in its "off" mood keeps its lights off whatever the master brightness: go to
        // the bright mood first, then scale it.
        Intent::Level(v) if c.kind == ControlKind::LightControllerV2 => {
            (vec![Action::On, Action::Level(v)], None)
        }
        Intent::Level(v) if dimmable(&c.kind) => (vec![Action::Level(v)], None),
        Intent::Level(_) => (
            vec![Action::On],
            Some(format!("{} cannot be dimmed; switched on", c.kind)),
        ),
    }
}

/// One record per control, and the first failure (the call's error when every light failed).
struct Applied {
    devices: Vec<Value>,
    first_error: Option<ToolError>,
}

/// Carries out (or, in a dry run, only describes) `intent` on every control; one record each.
fn apply(
    house: &House,
    home: &Home,
    controls: &[&Control],
    intent: Intent,
    dry_run: bool,
    caller: &Caller,
) -> Applied {
    let mut first_error = None;
    let mut out_of_reach: Option<ControllerError> = None;
    let devices = controls
        .iter()
        .map(|c| {
            let mut rec = json!({
                "uuid": c.uuid,
                "name": c.name,
                "room": room_of(home, c),
                "type": c.kind.as_str(),
            });
            let (actions, note) = plan(c, intent);
            if let Some(n) = note {
                rec["note"] = json!(n);
            }
            let mut commands = Vec::new();
            let mut error: Option<ToolError> = None;
            if c.is_secured {
                error = Some(ToolError::Refused {
                    code: "INSUFFICIENT_PERMISSIONS",
                    message: format!(
                        "{} is a secured control (visualisation password); not operated",
                        c.name
                    ),
                });
            }
            for action in &actions {
                if error.is_some() {
                    break;
                }
                match command_for(c, action) {
                    Ok(cmd) => commands.push(format!("{}/{}", cmd.target, cmd.command)),
                    Err(e) => {
                        error = Some(ToolError::Controller(ControllerError::Unsupported(e)));
                        break;
                    }
                }
                if dry_run {
                    continue;
                }
                if let Some(e) = &out_of_reach {
                    error = Some(ToolError::Controller(e.clone()));
                    rec["note"] = json!("not sent: the Miniserver is out of reach");
                    break;
                }
                if let Err(e) = house.act(c, action, &caller.label) {
                    if e.is_unreachable() {
                        out_of_reach = Some(e.clone());
                    }
                    error = Some(ToolError::Controller(e));
                }
            }
            rec["commands"] = json!(commands);
            rec["ok"] = json!(error.is_none());
            if let Some(e) = error {
                rec["error"] = json!(error_text(&e));
                first_error.get_or_insert(e);
            }
            rec
        })
        .collect();
    Applied {
        devices,
        first_error,
    }
}

fn error_text(e: &ToolError) -> String {
    match e {
        ToolError::Controller(c) => c.to_string(),
        ToolError::Refused { message, .. } | ToolError::InvalidParams(message) => message.clone(),
        ToolError::Resolve(r) => r.to_string(),
    }
}

/// The room name of a control or sub-control (a sub-control's room is its parent's).
fn room_of(home: &Home, c: &Control) -> Option<String> {
    if let Some(r) = home.room_name(c) {
        return Some(r.to_string());
    }
    let parent = c.uuid.split('/').next()?;
    home.control(parent)
        .and_then(|p| home.room_name(p))
        .map(str::to_string)
}

/// The `data` of a lighting result. When every light failed (outside a dry run), the call
/// fails with the first error (e.g. the Miniserver is out of reach).
fn result(
    scope: &str,
    room: Option<&str>,
    action: &str,
    value: Option<f64>,
    dry_run: bool,
    applied: Applied,
) -> Result<Value, ToolError> {
    let Applied {
        devices,
        first_error,
    } = applied;
    let failed = devices.iter().filter(|d| d["ok"] == false).count();
    if !dry_run && failed == devices.len() {
        if let Some(e) = first_error {
            return Err(e);
        }
    }
    Ok(json!({
        "scope": scope,
        "room": room,
        "action": action,
        "value": value,
        "dry_run": dry_run,
        "total": devices.len(),
        "succeeded": devices.len() - failed,
        "failed": failed,
        "devices": devices,
    }))
}

/// Maps a string field to one of `allowed`, the error naming the field.
fn one_of<'a>(field: &str, got: &str, allowed: &[&'a str]) -> Result<&'a str, ToolError> {
    let g = got.trim().to_lowercase();
    allowed.iter().find(|a| **a == g).copied().ok_or_else(|| {
        ToolError::InvalidParams(format!(
            "{field} must be one of {} (got {got:?})",
            allowed.join(", ")
        ))
    })
}

fn percent(field: &str, v: Option<f64>) -> Result<Option<f64>, ToolError> {
    v.map(|v| in_range(field, v, 0.0, 100.0)).transpose()
}

fn no_lights(what: &str) -> ToolError {
    ToolError::Refused {
        code: "DEVICE_NOT_FOUND",
        message: format!("{what} has no lights"),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RoomLights {
    room: String,
    action: String,
    brightness: Option<f64>,
    dry_run: Option<bool>,
}

fn control_room_lights(
    house: &Ctx,
    a: &Map<String, Value>,
    caller: &Caller,
) -> Result<Value, ToolError> {
    let a: RoomLights = args::parse(a)?;
    let action = one_of("action", &a.action, &["on", "off"])?;
    let brightness = percent("brightness", a.brightness)?;
    let intent = match (action, brightness) {
        ("on", Some(b)) => Intent::Level(b),
        ("on", None) => Intent::On,
        (_, None) => Intent::Off,
        (_, Some(_)) => {
            return Err(ToolError::InvalidParams(
                "brightness only goes with action on".into(),
            ))
        }
    };
    let home = house.home();
    let room = home.resolve_room(&a.room)?;
    let lights = room_lights(&home, &room.uuid);
    if lights.is_empty() {
        return Err(no_lights(&room.name));
    }
    let dry_run = a.dry_run.unwrap_or(false);
    let devices = apply(house, &home, &lights, intent, dry_run, caller);
    result(
        "room",
        Some(&room.name),
        action,
        brightness,
        dry_run,
        devices,
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AllLights {
    action: String,
    dry_run: Option<bool>,
}

fn control_all_lights(
    house: &Ctx,
    a: &Map<String, Value>,
    caller: &Caller,
) -> Result<Value, ToolError> {
    let a: AllLights = args::parse(a)?;
    let action = one_of("action", &a.action, &["on", "off"])?;
    let intent = if action == "on" {
        Intent::On
    } else {
        Intent::Off
    };
    let home = house.home();
    let lights = house_lights(&home);
    if lights.is_empty() {
        return Err(no_lights("the house"));
    }
    let dry_run = a.dry_run.unwrap_or(false);
    let devices = apply(house, &home, &lights, intent, dry_run, caller);
    result("all", None, action, None, dry_run, devices)
}

/// Every light of the house, room by room in room order, then lights without a room.
fn house_lights(home: &Home) -> Vec<&Control> {
    let mut out: Vec<&Control> = home
        .rooms
        .iter()
        .flat_map(|r| room_lights(home, &r.uuid))
        .collect();
    out.extend(
        home.controls
            .iter()
            .filter(|c| is_light(home, c))
            .filter(|c| c.room.as_deref().is_none_or(|r| home.room(r).is_none())),
    );
    out
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Unified {
    scope: String,
    room: Option<String>,
    devices: Option<Vec<String>>,
    action: String,
    value: Option<f64>,
    dry_run: Option<bool>,
}

fn control_lights_unified(
    house: &Ctx,
    a: &Map<String, Value>,
    caller: &Caller,
) -> Result<Value, ToolError> {
    let a: Unified = args::parse(a)?;
    let scope = one_of("scope", &a.scope, &["room", "all", "devices"])?;
    let action = one_of(
        "action",
        &a.action,
        &["on", "off", "dim", "bright", "brightness"],
    )?;
    let value = percent("value", a.value)?;
    let intent = match (action, value) {
        ("on", Some(v)) => Intent::Level(v),
        ("on", None) => Intent::On,
        ("off", _) => Intent::Off,
        ("dim", v) => Intent::Level(v.unwrap_or(DIM_DEFAULT)),
        ("bright", v) => Intent::Level(v.unwrap_or(BRIGHT_DEFAULT)),
        (_, Some(v)) => Intent::Level(v),
        (_, None) => {
            return Err(ToolError::InvalidParams(
                "value (0-100) is required with action brightness".into(),
            ))
        }
    };
    let level = match intent {
        Intent::Level(v) => Some(v),
        _ => None,
    };
    let dry_run = a.dry_run.unwrap_or(false);
    let home = house.home();
    match scope {
        "room" => {
            if a.devices.is_some() {
                return Err(ToolError::InvalidParams(
                    "devices only goes with scope devices".into(),
                ));
            }
            let Some(q) = a.room.as_deref() else {
                return Err(ToolError::InvalidParams(
                    "room is required when scope is room".into(),
                ));
            };
            let room = home.resolve_room(q)?;
            let lights = room_lights(&home, &room.uuid);
            if lights.is_empty() {
                return Err(no_lights(&room.name));
            }
            let devices = apply(house, &home, &lights, intent, dry_run, caller);
            result("room", Some(&room.name), action, level, dry_run, devices)
        }
        "all" => {
            if a.room.is_some() || a.devices.is_some() {
                return Err(ToolError::InvalidParams(
                    "room and devices do not go with scope all".into(),
                ));
            }
            let lights = house_lights(&home);
            if lights.is_empty() {
                return Err(no_lights("the house"));
            }
            let devices = apply(house, &home, &lights, intent, dry_run, caller);
            result("all", None, action, level, dry_run, devices)
        }
        _ => {
            let names = match a.devices.as_deref() {
                Some(d) if !d.is_empty() => d,
                _ => {
                    return Err(ToolError::InvalidParams(
                        "devices (a non-empty list of light names or UUIDs) is required when scope is devices"
                            .into(),
                    ))
                }
            };
            // Resolve every name before acting: a misunderstood name stops the whole call.
            let mut lights: Vec<&Control> = Vec::new();
            for n in names {
                let c = home
                    .resolve_control(n, a.room.as_deref(), &|c| c.family() == Family::Lighting)?;
                if !lights.iter().any(|l| l.uuid == c.uuid) {
                    lights.push(c);
                }
            }
            let devices = apply(house, &home, &lights, intent, dry_run, caller);
            result("devices", None, action, level, dry_run, devices)
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RoomAllOn {
    room_id: String,
    dry_run: Option<bool>,
}

fn room_all_on(house: &Ctx, a: &Map<String, Value>, caller: &Caller) -> Result<Value, ToolError> {
    let a: RoomAllOn = args::parse(a)?;
    let home = house.home();
    let room = home.resolve_room(&a.room_id)?;
    let lights = room_lights(&home, &room.uuid);
    if lights.is_empty() {
        return Err(no_lights(&room.name));
    }
    let dry_run = a.dry_run.unwrap_or(false);
    let devices = apply(house, &home, &lights, Intent::On, dry_run, caller);
    result("room", Some(&room.name), "on", None, dry_run, devices)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetDimmer {
    device_id: String,
    level: f64,
    room: Option<String>,
}

fn set_dimmer(house: &Ctx, a: &Map<String, Value>, caller: &Caller) -> Result<Value, ToolError> {
    let a: SetDimmer = args::parse(a)?;
    let level = in_range("level", a.level, 0.0, 100.0)?;
    let home = house.home();
    let c = home.resolve_control(&a.device_id, a.room.as_deref(), &|c| {
        c.family() == Family::Lighting
    })?;
    if !dimmable(&c.kind) {
        return Err(ToolError::Controller(ControllerError::Unsupported(
            format!(
            "{} ({}) cannot be dimmed; use control_room_lights or control_device with on or off",
            c.name, c.kind
        ),
        )));
    }
    let devices = apply(house, &home, &[c], Intent::Level(level), false, caller);
    result("devices", None, "brightness", Some(level), false, devices)
}
