//! Climate: `get_temperature_sensors`, `set_room_temperature`.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::args::{self, in_range};
use super::view;
use super::{Caller, Ctx, Permission, Tool, ToolError, READ_ONLY, SETTER};
use crate::home::{Action, Control, ControlKind};

/// Accepted target temperatures in °C (Loxone's frost protection lies below, nobody heats a
/// room above).
pub const MIN_TEMPERATURE: f64 = 5.0;
pub const MAX_TEMPERATURE: f64 = 35.0;

pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "get_temperature_sensors",
            title: "Temperature sensors",
            description: "Lists temperature readings in °C: analog temperature sensors and the actual temperature of each room controller. Optional: room (name or UUID), limit.",
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
                        "sensors": {"type": "array", "items": {
                            "type": "object",
                            "properties": {
                                "uuid": {"type": "string"},
                                "name": {"type": "string"},
                                "room": {"type": ["string", "null"]},
                                "type": {"type": "string"},
                                "temperature": {"type": ["number", "null"]},
                                "unit": {"type": "string"}
                            },
                            "required": ["uuid", "name", "type", "temperature", "unit"]
                        }},
                        "total": {"type": "integer"},
                        "warning": {"type": "string"}
                    },
                    "required": ["sensors", "total"]
                })
            },
            run: get_temperature_sensors,
        },
        Tool {
            name: "set_room_temperature",
            title: "Set room temperature",
            description: "Sets the comfort (target) temperature of a room in °C, 5-35, on its room controller (Intelligent Room Controller V1 or V2). room: name or UUID.",
            permission: Permission::Control,
            annotations: SETTER,
            input_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "room": {"type": "string", "description": "Room name or UUID"},
                        "temperature": {"type": "number", "minimum": MIN_TEMPERATURE, "maximum": MAX_TEMPERATURE, "description": "Target temperature in °C, e.g. 21.5"}
                    },
                    "required": ["room", "temperature"],
                    "additionalProperties": false
                })
            },
            data_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "room": {"type": "string"},
                        "temperature": {"type": "number"},
                        "controllers": {"type": "array", "items": {"type": "object"}}
                    },
                    "required": ["room", "temperature", "controllers"]
                })
            },
            run: set_room_temperature,
        },
    ]
}

fn is_room_controller(c: &Control) -> bool {
    matches!(
        c.kind,
        ControlKind::IRoomController | ControlKind::IRoomControllerV2
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Sensors {
    room: Option<String>,
    limit: Option<i64>,
}

fn get_temperature_sensors(
    house: &Ctx,
    a: &Map<String, Value>,
    _: &Caller,
) -> Result<Value, ToolError> {
    let a: Sensors = args::parse(a)?;
    let limit = args::limit(a.limit)?;
    let home = house.home();
    let room = args::room_uuid(&home, a.room.as_deref())?;
    let matching: Vec<&Control> = home
        .controls
        .iter()
        .filter(|c| room.as_ref().is_none_or(|r| c.room.as_ref() == Some(r)))
        .filter(|c| view::is_temperature_sensor(c) || is_room_controller(c))
        .collect();
    let mut values = view::ValueReader::new(house);
    let sensors: Vec<Value> = matching
        .iter()
        .take(limit)
        .map(|c| {
            let temperature = values
                .read(c)
                .and_then(|v| v.value.as_f64())
                .map(view::round1);
            json!({
                "uuid": c.uuid,
                "name": c.name,
                "room": home.room_name(c),
                "type": c.kind.as_str(),
                "temperature": temperature,
                "unit": "°C",
            })
        })
        .collect();
    Ok(values.annotate(json!({"sensors": sensors, "total": matching.len()})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetTemperature {
    room: String,
    temperature: f64,
}

fn set_room_temperature(
    house: &Ctx,
    a: &Map<String, Value>,
    caller: &Caller,
) -> Result<Value, ToolError> {
    let a: SetTemperature = args::parse(a)?;
    let t = in_range(
        "temperature",
        a.temperature,
        MIN_TEMPERATURE,
        MAX_TEMPERATURE,
    )?;
    let home = house.home();
    let room = home.resolve_room(&a.room)?;
    let controllers: Vec<&Control> = home
        .controls_in_room(&room.uuid)
        .into_iter()
        .filter(|c| is_room_controller(c))
        .collect();
    if controllers.is_empty() {
        return Err(ToolError::Refused {
            code: "DEVICE_NOT_FOUND",
            message: format!(
                "{} has no room controller (Intelligent Room Controller)",
                room.name
            ),
        });
    }
    let mut done = Vec::new();
    for c in controllers {
        house.act(c, &Action::Temperature(t), &caller.label)?;
        done.push(json!({"uuid": c.uuid, "name": c.name, "type": c.kind.as_str(), "target": t}));
    }
    Ok(json!({"room": room.name, "temperature": t, "controllers": done}))
}
