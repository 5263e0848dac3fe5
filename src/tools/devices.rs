//! Rooms and devices: `list_rooms`, `list_devices`, `control_device`.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::args::{self, in_range};
use super::view;
use super::{Caller, Ctx, Permission, Tool, ToolError, READ_ONLY};
use crate::home::resolve::fold;
use crate::home::{Action, Control, ControlKind, ControllerError, Family, Home};
use crate::mcp::ToolAnnotations;

pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "list_rooms",
            title: "List rooms",
            description: "Lists the rooms of the house with their number of devices and the devices per category (lighting, blinds, climate, audio, security, access, sensors, energy, other). Optional: name filter (part of the room name, accents optional) and limit.",
            permission: Permission::Read,
            annotations: READ_ONLY,
            input_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "Only rooms whose name contains this text"},
                        "limit": args::limit_schema()
                    },
                    "additionalProperties": false
                })
            },
            data_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "rooms": {"type": "array", "items": {
                            "type": "object",
                            "properties": {
                                "uuid": {"type": "string"},
                                "name": {"type": "string"},
                                "device_count": {"type": "integer"},
                                "devices_by_category": {"type": "object", "additionalProperties": {"type": "integer"}}
                            },
                            "required": ["uuid", "name", "device_count", "devices_by_category"]
                        }},
                        "total": {"type": "integer"}
                    },
                    "required": ["rooms", "total"]
                })
            },
            run: list_rooms,
        },
        Tool {
            name: "list_devices",
            title: "List devices",
            description: "Lists devices (Loxone controls) with their room, category and current state (lights on/off and level in %, blinds position in % closed where 0 = fully open, temperatures in °C). Filters: room (name or UUID), category (lighting, blinds, climate, audio, security, access, sensors, energy, other, or a Loxone category name), type (Loxone control type such as Dimmer, Jalousie, LightControllerV2); limit (default 50, max 500).",
            permission: Permission::Read,
            annotations: READ_ONLY,
            input_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "room": {"type": "string", "description": "Room name or UUID"},
                        "category": {"type": "string", "description": "lighting, blinds, climate, audio, security, access, sensors, energy, other, or a Loxone category name"},
                        "type": {"type": "string", "description": "Loxone control type, e.g. Dimmer, Jalousie, LightControllerV2"},
                        "include_state": {"type": "boolean", "default": true, "description": "Read current values from the Miniserver"},
                        "limit": args::limit_schema()
                    },
                    "additionalProperties": false
                })
            },
            data_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "devices": {"type": "array", "items": {
                            "type": "object",
                            "properties": {
                                "uuid": {"type": "string"},
                                "name": {"type": "string"},
                                "type": {"type": "string"},
                                "category": {"type": "string"},
                                "loxone_category": {"type": ["string", "null"]},
                                "room": {"type": ["string", "null"]},
                                "secured": {"type": "boolean"},
                                "state": {"type": ["object", "null"]}
                            },
                            "required": ["uuid", "name", "type", "category"]
                        }},
                        "total": {"type": "integer", "description": "Matching devices before the limit"},
                        "warning": {"type": "string"}
                    },
                    "required": ["devices", "total"]
                })
            },
            run: list_devices,
        },
        Tool {
            name: "control_device",
            title: "Control a device",
            description: "Controls one device by name or UUID. action: on, off (lights, switches, audio play/pause), dim or bright (lights; value = brightness 0-100 %, default 30 for dim and 100 for bright), up, down, stop (blinds; with value = position 0-100 % closed, 0 = fully open). value is a number 0-100. If the name exists in several rooms, give room or a room-qualified name (\"Deckenlicht Küche\"). Alarms, secured controls and opening gates or doors are refused here.",
            permission: Permission::Control,
            annotations: ToolAnnotations {
                read_only_hint: false,
                destructive_hint: false,
                idempotent_hint: true,
                open_world_hint: false,
            },
            input_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "device": {"type": "string", "description": "Device name or UUID"},
                        "action": {"type": "string", "enum": ["on", "off", "up", "down", "stop", "dim", "bright"]},
                        "value": {"type": "number", "minimum": 0, "maximum": 100, "description": "Brightness or position in percent"},
                        "room": {"type": "string", "description": "Room name or UUID, to pick among devices of the same name"}
                    },
                    "required": ["device", "action"],
                    "additionalProperties": false
                })
            },
            data_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "device": {"type": "object"},
                        "action": {"type": "string"},
                        "value": {"type": ["number", "null"]},
                        "reported_value": {"description": "What the Miniserver answered (number or text), if anything"}
                    },
                    "required": ["device", "action"]
                })
            },
            run: control_device,
        },
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListRooms {
    name: Option<String>,
    limit: Option<i64>,
}

fn list_rooms(house: &Ctx, a: &Map<String, Value>, _: &Caller) -> Result<Value, ToolError> {
    let a: ListRooms = args::parse(a)?;
    let limit = args::limit(a.limit)?;
    let home = house.home();
    let needle = a.name.as_deref().map(fold);
    let matching: Vec<_> = home
        .rooms
        .iter()
        .filter(|r| {
            needle
                .as_ref()
                .is_none_or(|n| fold(&r.name).contains(n.as_str()))
        })
        .collect();
    let rooms: Vec<Value> = matching
        .iter()
        .take(limit)
        .map(|r| {
            let controls = home.controls_in_room(&r.uuid);
            let mut by_family: BTreeMap<&str, usize> = BTreeMap::new();
            for c in &controls {
                *by_family.entry(c.family().as_str()).or_default() += 1;
            }
            json!({
                "uuid": r.uuid,
                "name": r.name,
                "device_count": controls.len(),
                "devices_by_category": by_family,
            })
        })
        .collect();
    Ok(json!({"rooms": rooms, "total": matching.len()}))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListDevices {
    room: Option<String>,
    category: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    include_state: Option<bool>,
    limit: Option<i64>,
}

/// A category filter: a device family or one of the user's Loxone categories.
enum CategoryFilter {
    Family(Family),
    Loxone(String),
}

fn category_filter(home: &Home, s: &str) -> Result<CategoryFilter, ToolError> {
    if let Some(f) = Family::parse(s) {
        return Ok(CategoryFilter::Family(f));
    }
    let folded = fold(s);
    if let Some(c) = home
        .categories
        .iter()
        .find(|c| fold(&c.name) == folded || c.uuid.eq_ignore_ascii_case(s))
    {
        return Ok(CategoryFilter::Loxone(c.uuid.clone()));
    }
    Err(ToolError::InvalidParams(format!(
        "category {s:?} is unknown; use one of {} or a Loxone category ({})",
        Family::ALL.map(|f| f.as_str()).join(", "),
        home.categories
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

fn list_devices(house: &Ctx, a: &Map<String, Value>, _: &Caller) -> Result<Value, ToolError> {
    let a: ListDevices = args::parse(a)?;
    let limit = args::limit(a.limit)?;
    let home = house.home();
    let room = args::room_uuid(&home, a.room.as_deref())?;
    let category = a
        .category
        .as_deref()
        .map(|c| category_filter(&home, c))
        .transpose()?;
    let kind = match &a.kind {
        Some(t) => {
            let folded = fold(t);
            let known: Vec<&str> = {
                let mut v: Vec<&str> = home.controls.iter().map(|c| c.kind.as_str()).collect();
                v.sort_unstable();
                v.dedup();
                v
            };
            match known.iter().find(|k| fold(k) == folded) {
                Some(k) => Some(ControlKind::from_type(k)),
                None => {
                    return Err(ToolError::InvalidParams(format!(
                        "type {t:?} does not occur in this house; types present: {}",
                        known.join(", ")
                    )))
                }
            }
        }
        None => None,
    };
    let matching: Vec<&Control> = home
        .controls
        .iter()
        .filter(|c| room.as_ref().is_none_or(|r| c.room.as_ref() == Some(r)))
        .filter(|c| match &category {
            None => true,
            Some(CategoryFilter::Family(f)) => c.family() == *f,
            Some(CategoryFilter::Loxone(u)) => c.category.as_ref() == Some(u),
        })
        .filter(|c| kind.as_ref().is_none_or(|k| &c.kind == k))
        .collect();

    let include_state = a.include_state.unwrap_or(true);
    let mut values = view::ValueReader::new(house);
    let devices: Vec<Value> = matching
        .iter()
        .take(limit)
        .map(|c| {
            let mut d = view::device(&home, c);
            if include_state && has_primary_value(c) {
                d["state"] = match values.read(c) {
                    Some(v) => view::state(c, &v.value),
                    None => Value::Null,
                };
            }
            d
        })
        .collect();
    Ok(values.annotate(json!({"devices": devices, "total": matching.len()})))
}

/// Types whose block has a primary value worth reading over HTTP.
fn has_primary_value(c: &Control) -> bool {
    !matches!(
        c.kind,
        ControlKind::Unknown(_)
            | ControlKind::CentralJalousie
            | ControlKind::CentralLightController
            | ControlKind::CentralAudioZone
            | ControlKind::CentralAlarm
    )
}

#[derive(Deserialize, Clone, Copy, PartialEq, Debug)]
#[serde(rename_all = "lowercase")]
enum DeviceAction {
    On,
    Off,
    Up,
    Down,
    Stop,
    Dim,
    Bright,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ControlDevice {
    device: String,
    action: DeviceAction,
    value: Option<f64>,
    room: Option<String>,
}

/// Types whose "on"/"dim"/"bright" take a brightness.
fn dimmable(kind: &ControlKind) -> bool {
    matches!(
        kind,
        ControlKind::Dimmer
            | ControlKind::EibDimmer
            | ControlKind::LightControllerV2
            | ControlKind::ColorPickerV2
    )
}

fn control_device(
    house: &Ctx,
    a: &Map<String, Value>,
    caller: &Caller,
) -> Result<Value, ToolError> {
    let home = house.home();
    let DevicePlan {
        control: c,
        action,
        action_name,
        value,
    } = plan_device(&home, a)?;
    let outcome = house.act(c, &action, &caller.label)?;
    Ok(json!({
        "device": view::device(&home, c),
        "action": action_name,
        "value": value,
        "reported_value": outcome.value.map(|v| match v {
            crate::home::Value::Number(n) => json!(n),
            crate::home::Value::Text(t) => json!(t),
        }),
    }))
}

/// What `control_device` would do: the control, the [`Action`], the action's name and value.
pub(crate) struct DevicePlan<'h> {
    pub control: &'h Control,
    pub action: Action,
    pub action_name: String,
    pub value: Option<f64>,
}

/// Parses `control_device` arguments, resolves the device and maps the action, with every
/// refusal of `control_device`, without sending anything (shared with the batch tools).
pub(crate) fn plan_device<'h>(
    home: &'h Home,
    a: &Map<String, Value>,
) -> Result<DevicePlan<'h>, ToolError> {
    let a: ControlDevice = args::parse(a)?;
    let value = a
        .value
        .map(|v| in_range("value", v, 0.0, 100.0))
        .transpose()?;
    let c = home.resolve_control(&a.device, a.room.as_deref(), &|_| true)?;

    if c.family() == Family::Security || c.is_secured {
        return Err(ToolError::Refused {
            code: "INSUFFICIENT_PERMISSIONS",
            message: format!(
                "{} is {}; control_device does not operate alarms or secured controls",
                c.name,
                if c.is_secured {
                    "a secured control (visualisation password)"
                } else {
                    "part of the security system"
                }
            ),
        });
    }
    let opening = matches!(a.action, DeviceAction::On | DeviceAction::Up);
    if c.family() == Family::Access && opening {
        return Err(ToolError::Refused {
            code: "INSUFFICIENT_PERMISSIONS",
            message: format!(
                "{} is a gate or door; control_device does not open gates or doors (close and stop are allowed)",
                c.name
            ),
        });
    }

    let action = match (a.action, value) {
        (DeviceAction::On, Some(v)) if dimmable(&c.kind) => Action::Level(v),
        (DeviceAction::On, _) => Action::On,
        (DeviceAction::Off, _) => Action::Off,
        (DeviceAction::Dim, v) => Action::Level(v.unwrap_or(30.0)),
        (DeviceAction::Bright, v) => Action::Level(v.unwrap_or(100.0)),
        (DeviceAction::Up | DeviceAction::Down, Some(v)) if c.kind == ControlKind::Jalousie => {
            Action::Level(v)
        }
        (DeviceAction::Up, _) => Action::Up,
        (DeviceAction::Down, _) => Action::Down,
        (DeviceAction::Stop, _) => Action::Stop,
    };
    if matches!(a.action, DeviceAction::Dim | DeviceAction::Bright) && !dimmable(&c.kind) {
        return Err(ToolError::Controller(ControllerError::Unsupported(
            format!("{} ({}) cannot be dimmed; use on or off", c.name, c.kind),
        )));
    }
    Ok(DevicePlan {
        control: c,
        action,
        action_name: format!("{:?}", a.action).to_lowercase(),
        value,
    })
}
