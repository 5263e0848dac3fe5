//! Climate: room temperatures and heating/cooling modes on Loxone's room controllers
//! (Intelligent Room Controller Gen 1 `IRoomController`, Gen 2 `IRoomControllerV2`) and the
//! house-wide `ClimateController`, plus temperature readings.
//!
//! Tools: `get_temperature_sensors`, `get_zone_temperature`, `get_climate_status` (reads) and
//! `set_room_temperature`, `set_room_mode` (writes, each with `dry_run`). Writes act on every
//! climate control of one room and report one record per control (`ok`, the exact Loxone
//! commands, `error`), so one failure does not hide the others.
//!
//! What can be read: over HTTP a Miniserver gives a block's primary value only
//! (loxone-protocol.md §2.5), which for a room controller is the actual temperature
//! (`tempActual`) and for a ClimateController its `currentMode`. Targets and modes are not
//! readable that way, so the reads report actual temperatures and say so.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::args::{self, in_range};
use super::view;
use super::{Caller, Ctx, Permission, Tool, ToolError, READ_ONLY, SETTER};
use crate::home::resolve::ResolveError;
use crate::home::{Action, Control, ControlKind, ControllerError, Home, House, RoomMode};
use crate::loxone::commands::command_for;

/// Accepted target temperatures in °C (Loxone's frost protection lies below, nobody heats a
/// room above).
pub const MIN_TEMPERATURE: f64 = 5.0;
pub const MAX_TEMPERATURE: f64 = 35.0;

/// The words `set_room_mode` takes, in schema order.
const MODES: [&str; 6] = ["auto", "heating", "cooling", "comfort", "eco", "off"];

pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "get_temperature_sensors",
            title: "Temperature sensors",
            description: "Lists temperature readings in °C: analog temperature sensors and the actual temperature of each room controller. Optional: room (name or UUID), limit (1-500, default 50).",
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
                        "sensors": {"type": "array", "items": reading_schema()},
                        "total": {"type": "integer"},
                        "warning": {"type": "string"}
                    },
                    "required": ["sensors", "total"]
                })
            },
            run: get_temperature_sensors,
        },
        Tool {
            name: "get_zone_temperature",
            title: "Zone temperature",
            description: "Reads the actual temperature in °C of one zone. zone_id: a room (name or UUID; its room controller's reading, else its temperature sensor's), or a room controller or temperature sensor (name, \"Name [Room]\" or UUID). Returns the temperature and every reading it was taken from.",
            permission: Permission::Read,
            annotations: READ_ONLY,
            input_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "zone_id": {"type": "string", "description": "Room, room controller or temperature sensor: name or UUID"}
                    },
                    "required": ["zone_id"],
                    "additionalProperties": false
                })
            },
            data_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "zone_id": {"type": "string"},
                        "zone": {"type": "string", "description": "Name of the room or control read"},
                        "room": {"type": ["string", "null"]},
                        "temperature": {"type": ["number", "null"], "description": "Actual temperature in °C; null when the Miniserver gave none"},
                        "unit": {"type": "string"},
                        "source": {"type": ["string", "null"], "description": "UUID of the reading used"},
                        "readings": {"type": "array", "items": reading_schema()},
                        "warning": {"type": "string"}
                    },
                    "required": ["zone_id", "zone", "room", "temperature", "unit", "readings"]
                })
            },
            run: get_zone_temperature,
        },
        Tool {
            name: "get_climate_status",
            title: "Climate status",
            description: "Shows heating and cooling: every room controller (Gen 1 or Gen 2) with its room and actual temperature in °C, and the house-wide climate controller's current mode (no requirement, heating, cooling, heating boost, cooling boost, service, external heater). Target temperatures and room modes are not readable over the Miniserver's HTTP interface and are not shown. Optional: room (name or UUID), limit (1-500, default 50).",
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
                        "room_controllers": {"type": "array", "items": reading_schema()},
                        "climate_controllers": {"type": "array", "items": {
                            "type": "object",
                            "properties": {
                                "uuid": {"type": "string"},
                                "name": {"type": "string"},
                                "room": {"type": ["string", "null"]},
                                "current_mode": {"type": ["string", "null"], "enum": ["no requirement", "heating", "cooling", "heating boost", "cooling boost", "service", "external heater", "unknown", null]},
                                "current_mode_id": {"type": ["integer", "null"]}
                            },
                            "required": ["uuid", "name", "room", "current_mode", "current_mode_id"]
                        }},
                        "average_temperature": {"type": ["number", "null"], "description": "Mean of the room controllers' actual temperatures, °C"},
                        "total": {"type": "integer", "description": "Room controllers matching (before limit)"},
                        "warning": {"type": "string"}
                    },
                    "required": ["room_controllers", "climate_controllers", "average_temperature", "total"]
                })
            },
            run: get_climate_status,
        },
        Tool {
            name: "set_room_temperature",
            title: "Set room temperature",
            description: "Sets the comfort (target) temperature of a room in °C, 5-35, on its room controllers (Intelligent Room Controller Gen 1: comfort heating temperature; Gen 2: comfort temperature). It applies whenever the room is in comfort mode. room: name or UUID. dry_run: true lists the controllers and Loxone commands without sending anything. The result lists every controller with ok/error.",
            permission: Permission::Control,
            annotations: SETTER,
            input_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "room": {"type": "string", "description": "Room name or UUID"},
                        "temperature": {"type": "number", "minimum": MIN_TEMPERATURE, "maximum": MAX_TEMPERATURE, "description": "Target temperature in °C, e.g. 21.5"},
                        "dry_run": dry_run_schema()
                    },
                    "required": ["room", "temperature"],
                    "additionalProperties": false
                })
            },
            data_schema: || {
                let mut s = result_schema();
                s["properties"]["temperature"] = json!({"type": "number", "description": "°C"});
                s["required"].as_array_mut().expect("array").push(json!("temperature"));
                s
            },
            run: set_room_temperature,
        },
        Tool {
            name: "set_room_mode",
            title: "Set room heating/cooling mode",
            description: "Sets the heating/cooling mode of a room's climate controls. mode: auto (automatic heating and cooling by schedule; ends any override), heating (automatic, heating only), cooling (automatic, cooling only), comfort (comfort temperature now, until set back to auto), eco (economy temperature now, until auto), off (building protection only: frost/heat protection, until auto). Gen 2 room controllers take every mode; Gen 1 room controllers take auto, heating and cooling; a climate controller in the room (house-wide heating/cooling source) takes auto, heating, cooling and off. room: name or UUID. dry_run: true lists the controls and Loxone commands without sending anything. The result lists every control with ok/error.",
            permission: Permission::Control,
            annotations: SETTER,
            input_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "room": {"type": "string", "description": "Room name or UUID"},
                        "mode": {"type": "string", "enum": MODES, "description": "auto, heating, cooling, comfort, eco or off"},
                        "dry_run": dry_run_schema()
                    },
                    "required": ["room", "mode"],
                    "additionalProperties": false
                })
            },
            data_schema: || {
                let mut s = result_schema();
                s["properties"]["mode"] = json!({"type": "string", "enum": MODES});
                s["required"].as_array_mut().expect("array").push(json!("mode"));
                s
            },
            run: set_room_mode,
        },
    ]
}

/// One temperature reading in listings.
fn reading_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "uuid": {"type": "string"},
            "name": {"type": "string"},
            "room": {"type": ["string", "null"]},
            "type": {"type": "string"},
            "temperature": {"type": ["number", "null"], "description": "Actual temperature, °C"},
            "unit": {"type": "string"}
        },
        "required": ["uuid", "name", "room", "type", "temperature", "unit"]
    })
}

fn dry_run_schema() -> Value {
    json!({"type": "boolean", "default": false, "description": "List what would be done without sending anything"})
}

/// The `data` of both setters (each adds its own `temperature` or `mode`).
fn result_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "room": {"type": "string"},
            "dry_run": {"type": "boolean"},
            "controllers": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "uuid": {"type": "string"},
                    "name": {"type": "string"},
                    "type": {"type": "string"},
                    "ok": {"type": "boolean"},
                    "error": {"type": "string"},
                    "commands": {"type": "array", "items": {"type": "string"}, "description": "Loxone commands sent (or, in a dry run, that would be sent)"}
                },
                "required": ["uuid", "name", "type", "ok", "commands"]
            }},
            "total": {"type": "integer"},
            "succeeded": {"type": "integer"},
            "failed": {"type": "integer"}
        },
        "required": ["room", "dry_run", "controllers", "total", "succeeded", "failed"]
    })
}

fn is_room_controller(c: &Control) -> bool {
    matches!(
        c.kind,
        ControlKind::IRoomController | ControlKind::IRoomControllerV2
    )
}

/// A temperature reading of `c` for listings: actual temperature in °C, `null` if unreadable.
fn reading(home: &Home, values: &mut view::ValueReader, c: &Control) -> Value {
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
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Listing {
    room: Option<String>,
    limit: Option<i64>,
}

fn get_temperature_sensors(
    house: &Ctx,
    a: &Map<String, Value>,
    _: &Caller,
) -> Result<Value, ToolError> {
    let a: Listing = args::parse(a)?;
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
        .map(|c| reading(&home, &mut values, c))
        .collect();
    Ok(values.annotate(json!({"sensors": sensors, "total": matching.len()})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Zone {
    zone_id: String,
}

/// Whether `c` gives a temperature: a room controller or an analog temperature sensor.
fn gives_temperature(c: &Control) -> bool {
    is_room_controller(c) || view::is_temperature_sensor(c)
}

fn get_zone_temperature(
    house: &Ctx,
    a: &Map<String, Value>,
    _: &Caller,
) -> Result<Value, ToolError> {
    let a: Zone = args::parse(a)?;
    if a.zone_id.trim().is_empty() {
        return Err(ToolError::InvalidParams(
            "zone_id must name a room, room controller or temperature sensor".into(),
        ));
    }
    let home = house.home();
    // A room first (people say "Küche"), then a control that gives a temperature.
    let (zone, room, sources): (String, Option<String>, Vec<&Control>) = match home
        .resolve_room(&a.zone_id)
    {
        Ok(r) => {
            let mut in_room: Vec<&Control> = home
                .controls_in_room(&r.uuid)
                .into_iter()
                .filter(|c| gives_temperature(c))
                .collect();
            // Room controllers first: they regulate the room.
            in_room.sort_by_key(|c| !is_room_controller(c));
            if in_room.is_empty() {
                return Err(ToolError::Refused {
                    code: "DEVICE_NOT_FOUND",
                    message: format!("{} has no room controller or temperature sensor", r.name),
                });
            }
            (r.name.clone(), Some(r.name.clone()), in_room)
        }
        Err(e @ ResolveError::Ambiguous { .. }) => return Err(e.into()),
        Err(ResolveError::NotFound { .. }) => {
            let c = match home.resolve_control(&a.zone_id, None, &gives_temperature) {
                Ok(c) => c,
                Err(e @ ResolveError::Ambiguous { .. }) => return Err(e.into()),
                Err(not_found) => {
                    // Known, but not a temperature: say what it is.
                    if let Ok(other) = home.resolve_control(&a.zone_id, None, &|_| true) {
                        return Err(ToolError::Refused {
                                code: "INVALID_PARAMETERS",
                                message: format!(
                                    "zone_id: {} is a {} ({}), not a room, room controller or temperature sensor",
                                    other.name,
                                    other.kind,
                                    other.family().as_str()
                                ),
                            });
                    }
                    return Err(not_found.into());
                }
            };
            (
                c.name.clone(),
                home.room_name(c).map(str::to_string),
                vec![c],
            )
        }
    };
    let mut values = view::ValueReader::new(house);
    let readings: Vec<Value> = sources
        .iter()
        .map(|c| reading(&home, &mut values, c))
        .collect();
    let used = readings.iter().find(|r| r["temperature"].is_number());
    let out = json!({
        "zone_id": a.zone_id,
        "zone": zone,
        "room": room,
        "temperature": used.map(|r| r["temperature"].clone()),
        "unit": "°C",
        "source": used.map(|r| r["uuid"].clone()),
        "readings": readings,
    });
    Ok(values.annotate(out))
}

/// A ClimateController's `currentMode` in words (Loxone structure-file docs: 0 no
/// requirement, 1 heating, 2 cooling, 3 heating boost, 4 cooling boost, 5 service mode,
/// 6 external heater; not in our protocol notes, so *inferred* as far as we are concerned).
fn climate_mode_word(id: i64) -> &'static str {
    match id {
        0 => "no requirement",
        1 => "heating",
        2 => "cooling",
        3 => "heating boost",
        4 => "cooling boost",
        5 => "service",
        6 => "external heater",
        _ => "unknown",
    }
}

fn get_climate_status(house: &Ctx, a: &Map<String, Value>, _: &Caller) -> Result<Value, ToolError> {
    let a: Listing = args::parse(a)?;
    let limit = args::limit(a.limit)?;
    let home = house.home();
    let room = args::room_uuid(&home, a.room.as_deref())?;
    let in_scope = |c: &&Control| room.as_ref().is_none_or(|r| c.room.as_ref() == Some(r));
    let controllers: Vec<&Control> = home
        .controls
        .iter()
        .filter(in_scope)
        .filter(|c| is_room_controller(c))
        .collect();
    let mut values = view::ValueReader::new(house);
    let room_controllers: Vec<Value> = controllers
        .iter()
        .take(limit)
        .map(|c| reading(&home, &mut values, c))
        .collect();
    let temps: Vec<f64> = room_controllers
        .iter()
        .filter_map(|r| r["temperature"].as_f64())
        .collect();
    let average =
        (!temps.is_empty()).then(|| view::round1(temps.iter().sum::<f64>() / temps.len() as f64));
    let climate_controllers: Vec<Value> = home
        .controls
        .iter()
        .filter(in_scope)
        .filter(|c| c.kind == ControlKind::ClimateController)
        .map(|c| {
            let id = values
                .read(c)
                .and_then(|v| v.value.as_f64())
                .map(|x| x as i64);
            json!({
                "uuid": c.uuid,
                "name": c.name,
                "room": home.room_name(c),
                "current_mode": id.map(climate_mode_word),
                "current_mode_id": id,
            })
        })
        .collect();
    Ok(values.annotate(json!({
        "room_controllers": room_controllers,
        "climate_controllers": climate_controllers,
        "average_temperature": average,
        "total": controllers.len(),
    })))
}

/// Carries out (or, in a dry run, only describes) each control's actions; one record per
/// control with the exact commands. A control whose type cannot do an action is not touched.
/// After the first error meaning the Miniserver is out of reach, nothing more is sent.
/// Returns the records and the first error.
fn apply(
    house: &House,
    controls: &[(&Control, Vec<Action>)],
    dry_run: bool,
    caller: &Caller,
) -> (Vec<Value>, Option<ToolError>) {
    let mut first_error: Option<ToolError> = None;
    let mut out_of_reach: Option<ControllerError> = None;
    let records = controls
        .iter()
        .map(|(c, actions)| {
            let mut rec = json!({"uuid": c.uuid, "name": c.name, "type": c.kind.as_str()});
            let planned: Result<Vec<String>, ToolError> = if c.is_secured {
                Err(ToolError::Refused {
                    code: "INSUFFICIENT_PERMISSIONS",
                    message: format!(
                        "{} is a secured control (visualisation password); not operated",
                        c.name
                    ),
                })
            } else {
                actions
                    .iter()
                    .map(|a| {
                        command_for(c, a)
                            .map(|cmd| format!("{}/{}", cmd.target, cmd.command))
                            .map_err(|e| ToolError::Controller(ControllerError::Unsupported(e)))
                    })
                    .collect()
            };
            let mut error = None;
            match planned {
                Ok(commands) => {
                    rec["commands"] = json!(commands);
                    for action in actions.iter().filter(|_| !dry_run) {
                        if let Some(e) = &out_of_reach {
                            error = Some(ToolError::Controller(e.clone()));
                            break;
                        }
                        if let Err(e) = house.act(c, action, &caller.label) {
                            if e.is_unreachable() {
                                out_of_reach = Some(e.clone());
                            }
                            error = Some(ToolError::Controller(e));
                            break;
                        }
                    }
                }
                Err(e) => {
                    rec["commands"] = json!([]);
                    error = Some(e);
                }
            }
            rec["ok"] = json!(error.is_none());
            if let Some(e) = error {
                rec["error"] = json!(error_text(&e));
                first_error.get_or_insert(e);
            }
            rec
        })
        .collect();
    (records, first_error)
}

fn error_text(e: &ToolError) -> String {
    match e {
        ToolError::Controller(c) => c.to_string(),
        ToolError::Refused { message, .. } | ToolError::InvalidParams(message) => message.clone(),
        ToolError::Resolve(r) => r.to_string(),
    }
}

/// The `data` of a setter. When every control failed (outside a dry run, or in any run when
/// no control can do what was asked), the call fails with the first error instead.
fn setter_result(
    room: &str,
    dry_run: bool,
    (records, first_error): (Vec<Value>, Option<ToolError>),
    extra: (&str, Value),
) -> Result<Value, ToolError> {
    let failed = records.iter().filter(|r| r["ok"] == false).count();
    let unsupported = matches!(
        first_error,
        Some(ToolError::Controller(ControllerError::Unsupported(_)))
    );
    if failed == records.len() && (!dry_run || unsupported) {
        if let Some(e) = first_error {
            return Err(e);
        }
    }
    let mut out = json!({
        "room": room,
        "dry_run": dry_run,
        "total": records.len(),
        "succeeded": records.len() - failed,
        "failed": failed,
        "controllers": records,
    });
    out[extra.0] = extra.1;
    Ok(out)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetTemperature {
    room: String,
    temperature: f64,
    dry_run: Option<bool>,
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
    let dry_run = a.dry_run.unwrap_or(false);
    let home = house.home();
    let room = home.resolve_room(&a.room)?;
    let controllers: Vec<(&Control, Vec<Action>)> = home
        .controls_in_room(&room.uuid)
        .into_iter()
        .filter(|c| is_room_controller(c))
        .map(|c| (c, vec![Action::Temperature(t)]))
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
    let applied = apply(house, &controllers, dry_run, caller);
    setter_result(&room.name, dry_run, applied, ("temperature", json!(t)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetMode {
    room: String,
    mode: String,
    dry_run: Option<bool>,
}

fn parse_mode(got: &str) -> Result<RoomMode, ToolError> {
    Ok(match got.trim().to_lowercase().as_str() {
        "auto" => RoomMode::Auto,
        "heating" => RoomMode::Heating,
        "cooling" => RoomMode::Cooling,
        "comfort" => RoomMode::Comfort,
        "eco" => RoomMode::Eco,
        "off" => RoomMode::Off,
        _ => {
            return Err(ToolError::InvalidParams(format!(
                "mode must be one of {} (got {got:?})",
                MODES.join(", ")
            )))
        }
    })
}

fn mode_word(m: RoomMode) -> &'static str {
    match m {
        RoomMode::Auto => "auto",
        RoomMode::Heating => "heating",
        RoomMode::Cooling => "cooling",
        RoomMode::Comfort => "comfort",
        RoomMode::Eco => "eco",
        RoomMode::Off => "off",
    }
}

/// The actions that put `c` into `mode`. On a Gen 2 controller the automatic modes first end
/// any override (comfort/eco/off set earlier), or the override would keep ruling the room.
fn mode_actions(c: &Control, mode: RoomMode) -> Vec<Action> {
    let automatic = matches!(mode, RoomMode::Auto | RoomMode::Heating | RoomMode::Cooling);
    if c.kind == ControlKind::IRoomControllerV2 && automatic {
        vec![Action::Stop, Action::RoomMode(mode)]
    } else {
        vec![Action::RoomMode(mode)]
    }
}

fn set_room_mode(house: &Ctx, a: &Map<String, Value>, caller: &Caller) -> Result<Value, ToolError> {
    let a: SetMode = args::parse(a)?;
    let mode = parse_mode(&a.mode)?;
    let dry_run = a.dry_run.unwrap_or(false);
    let home = house.home();
    let room = home.resolve_room(&a.room)?;
    let controls: Vec<(&Control, Vec<Action>)> = home
        .controls_in_room(&room.uuid)
        .into_iter()
        .filter(|c| is_room_controller(c) || c.kind == ControlKind::ClimateController)
        .map(|c| (c, mode_actions(c, mode)))
        .collect();
    if controls.is_empty() {
        return Err(ToolError::Refused {
            code: "DEVICE_NOT_FOUND",
            message: format!("{} has no room controller or climate controller", room.name),
        });
    }
    let applied = apply(house, &controls, dry_run, caller);
    setter_result(
        &room.name,
        dry_run,
        applied,
        ("mode", json!(mode_word(mode))),
    )
}
