//! Climate: `get_temperature_sensors`, `set_room_temperature`, `set_room_mode`,
//! `get_zone_temperature`, `get_climate_status`.
//!
//! A room's climate is its room controller(s): Intelligent Room Controller v1
//! (`IRoomController`) or V2 (`IRoomControllerV2`). The house-wide `ClimateController`
//! (heating/cooling block) is reported, and `set_room_mode` on its room sets its automatic mode
//! (`autoMode`). Temperatures are °C.
//!
//! `set_room_temperature` and `set_room_mode` answer in the batch runner's shape (see
//! [`super::batch`]): header `{scope: "room", target: <room name>, action, value, dry_run}`, one
//! result per controller (`status` ok, error, not_attempted or planned, with the exact
//! `<uuid>/<command>`s) and the `summary` counts; `set_room_mode` adds `duration_minutes`. Over HTTP only a controller's primary value, the actual
//! temperature, can be read; the named states (`tempTarget`, `operatingMode`, `activeMode`,
//! `openWindow`, ...) come from the live state store when the WebSocket link fills it, and are
//! `null` until then, never guessed.

use serde_json::{json, Value};

use super::args;
use super::batch::{self, Item, RunOptions};
use super::schema::{tool_args, words, DryRun, RoomListing};
use super::view;
use super::{Caller, Ctx, Reach, Tool, ToolError};
use crate::home::bounds::{OVERRIDE_MINUTES, TEMPERATURE};
use crate::home::resolve::ResolveError;
use crate::home::{Action, Control, ControlKind, Family, Home, House, OverrideTimer, RoomMode};

pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "get_temperature_sensors",
            "Temperature sensors",
            "Lists temperatures (°C) of sensors and room controllers.",
            get_temperature_sensors,
        )
        .lists(Reach::Room { room: "room", family: Family::Climate })
        .data(|| {
            args::listing_schema("sensors", args::item_schema(&["name", "temperature"]), &[])
        }),
        Tool::new(
            "set_room_temperature",
            "Set room temperature",
            "Sets a room's comfort temperature, 5-35 °C, on each of its room controllers.",
            set_room_temperature,
        )
        .operates(Reach::Room { room: "room", family: Family::Climate })
        .data(batch::result_schema),
        Tool::new(
            "set_room_mode",
            "Set room climate mode",
            "Sets a room's climate mode: auto (schedule; ends an override), heating, cooling, comfort, eco (that temperature now), off (frost/heat protection). duration_minutes limits comfort, eco, off (default: V2 until auto, V1 240). A Climate Controller in the room is set for the whole house.",
            set_room_mode,
        )
        .operates(Reach::Room { room: "room", family: Family::Climate })
        .data(mode_result_schema),
        Tool::new(
            "get_zone_temperature",
            "Zone temperature",
            "Reads a climate zone (room or room controller): actual and target °C, mode, open window per controller; null: not reported yet.",
            get_zone_temperature,
        )
        .lists(Reach::Resolved { arg: "zone_id", resolve: zone_reach })
        .data(|| {
            json!({
                "type": "object",
                "properties": {
                    "controllers": {"type": "array", "items": zone_schema()}
                },
                "required": ["zone_id", "room", "temperature", "target", "unit", "controllers"]
            })
        }),
        Tool::new(
            "get_climate_status",
            "Climate status",
            "Each room controller's actual and target °C, mode, override, open window, and the Climate Controller (current_mode, info_text); null: not reported yet.",
            get_climate_status,
        )
        .lists(Reach::Room { room: "room", family: Family::Climate })
        .data(|| {
            json!({
                "type": "object",
                "properties": {
                    "zones": {"type": "array", "items": zone_schema()},
                    "climate_controllers": {"type": "array", "items": {
                        "type": "object",
                        "required": ["name", "current_mode"]
                    }},
                    "total": {"type": "integer"}
                },
                "required": ["zones", "climate_controllers", "total"]
            })
        }),
    ]
}

/// Timer length for comfort/eco/off on a v1 controller when none is given: v1 overrides are
/// always timers (`starttimer/{idx}/{seconds}`), so one must be chosen; 4 hours.
pub const V1_DEFAULT_MINUTES: u32 = 240;

/// `set_room_mode`'s result: the batch shape plus `duration_minutes` (as asked; a controller
/// that uses another says so in its `note`).
fn mode_result_schema() -> Value {
    let mut schema = batch::result_schema();
    if let Some(req) = schema["required"].as_array_mut() {
        req.push(json!("duration_minutes"));
    }
    schema
}

/// One room controller as the read tools report it (`temperature`, `target` in °C; `mode`
/// one of auto, heating, cooling, manual, manual_heating, manual_cooling, off; null values
/// not reported yet).
fn zone_schema() -> Value {
    json!({
        "type": "object",
        "required": ["name", "temperature", "target", "mode"]
    })
}

fn is_room_controller(c: &Control) -> bool {
    matches!(
        c.kind,
        ControlKind::IRoomController | ControlKind::IRoomControllerV2
    )
}

fn get_temperature_sensors(
    house: &Ctx,
    a: RoomListing,
    caller: &Caller,
) -> Result<Value, ToolError> {
    let limit = a.limit.0;
    let home = house.home();
    let matching = args::listing(&home, caller, a.room.as_deref(), |c| {
        view::is_temperature_sensor(c) || is_room_controller(c)
    })?;
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

tool_args! {
    /// The arguments of `set_room_temperature`.
    struct SetTemperature {
        room: String,
        temperature: f64 { range: TEMPERATURE, about: "°C, e.g. 21.5" },
        dry_run: DryRun,
    }
}

/// `set_room_temperature`: the comfort temperature (°C) on every room controller of the room,
/// in the batch shape (action `temperature`, value the °C). Errors: -32602 for bad arguments
/// (naming the field, e.g. a temperature outside 5-35); `DEVICE_NOT_FOUND` for an unknown room
/// or one without room controller; `CONNECTION_ERROR` when the Miniserver is out of reach.
fn set_room_temperature(
    house: &Ctx,
    a: SetTemperature,
    caller: &Caller,
) -> Result<Value, ToolError> {
    let t = a.temperature;
    let home = house.home();
    let (room, controllers) = room_controllers(&home, &a.room)?;
    let items = controllers
        .into_iter()
        .map(|c| Item::new(&home, c, vec![Action::Temperature(t)]))
        .collect();
    let opts = RunOptions {
        dry_run: a.dry_run.0,
        show_current: false,
    };
    batch::run(house, items, opts, caller).into_data(batch::header(
        "room",
        Some(&room),
        "temperature",
        Some(t),
    ))
}

/// A named state of `c` (e.g. `tempTarget`) from the live state store, by its state UUID; `None`
/// until the Miniserver reported it.
fn live(house: &House, c: &Control, state: &str) -> Option<crate::home::Value> {
    let uuid = c.state(state)?;
    house.states().get(uuid).map(|v| v.value)
}

fn live_number(house: &House, c: &Control, state: &str) -> Option<f64> {
    live(house, c, state).and_then(|v| v.as_f64())
}

/// The operating mode in words: V2 `operatingMode` (-1 off, 0-2 automatic, 3-5 manual), v1
/// `mode` (0-2 automatic, 3/4 automatic heating/cooling, 5/6 manual heating/cooling).
fn mode_word(c: &Control, n: f64) -> Option<&'static str> {
    match (&c.kind, n as i64) {
        (ControlKind::IRoomControllerV2, -1) => Some("off"),
        (ControlKind::IRoomControllerV2, 0) => Some("auto"),
        (ControlKind::IRoomControllerV2, 1) => Some("heating"),
        (ControlKind::IRoomControllerV2, 2) => Some("cooling"),
        (ControlKind::IRoomControllerV2, 3) => Some("manual"),
        (ControlKind::IRoomControllerV2, 4) => Some("manual_heating"),
        (ControlKind::IRoomControllerV2, 5) => Some("manual_cooling"),
        (ControlKind::IRoomController, 0..=2) => Some("auto"),
        (ControlKind::IRoomController, 3) => Some("heating"),
        (ControlKind::IRoomController, 4) => Some("cooling"),
        (ControlKind::IRoomController, 5) => Some("manual_heating"),
        (ControlKind::IRoomController, 6) => Some("manual_cooling"),
        _ => None,
    }
}

/// V2 `activeMode` in words (0 eco, 1 comfort, 2 building protection, 3 manual, 4 off).
fn override_word(n: f64) -> Option<&'static str> {
    match n as i64 {
        0 => Some("eco"),
        1 => Some("comfort"),
        2 => Some("building_protection"),
        3 => Some("manual"),
        4 => Some("off"),
        _ => None,
    }
}

/// The record of one room controller (see [`zone_schema`]).
fn zone(house: &House, home: &Home, c: &Control, values: &mut view::ValueReader) -> Value {
    let mode_state = if c.kind == ControlKind::IRoomControllerV2 {
        "operatingMode"
    } else {
        "mode"
    };
    let over = match c.kind {
        ControlKind::IRoomControllerV2 => {
            live_number(house, c, "activeMode").and_then(override_word)
        }
        _ => None,
    };
    json!({
        "uuid": c.uuid,
        "name": c.name,
        "type": c.kind.as_str(),
        "room": home.room_name(c),
        "temperature": values.read(c).and_then(|v| v.value.as_f64()).map(view::round1),
        "target": live_number(house, c, "tempTarget").map(view::round1),
        "unit": "°C",
        "mode": live_number(house, c, mode_state).and_then(|n| mode_word(c, n)),
        "override": over,
        "open_window": live_number(house, c, "openWindow").map(|n| n != 0.0),
    })
}

words! {
    /// The `mode` words of `set_room_mode`.
    enum Mode {
        Auto = "auto",
        Heating = "heating",
        Cooling = "cooling",
        Comfort = "comfort" => ["duration_minutes"],
        Eco = "eco" => ["duration_minutes"],
        Off = "off" => ["duration_minutes"],
    }
}

tool_args! {
    /// The arguments of `set_room_mode`.
    struct SetMode {
        room: String,
        mode: Mode { selects: &["duration_minutes"] },
        duration_minutes: Option<u32> {
            range: OVERRIDE_MINUTES,
            about: "comfort, eco, off: minutes until the schedule resumes",
        },
        dry_run: DryRun,
    }
}

/// The actions that put controller `c` into `mode`: auto also ends an override (room
/// controllers; a ClimateController has none); comfort, eco and off carry the timer (a v1
/// controller gets [`V1_DEFAULT_MINUTES`] when none is given). Returns the minutes `c` uses.
fn mode_actions(c: &Control, mode: Mode, minutes: Option<u32>) -> (Vec<Action>, Option<u32>) {
    let minutes = match (mode, &c.kind, minutes) {
        (Mode::Comfort | Mode::Eco | Mode::Off, ControlKind::IRoomController, None) => {
            Some(V1_DEFAULT_MINUTES)
        }
        _ => minutes,
    };
    let timer = minutes.map(OverrideTimer::from_now);
    let actions = match mode {
        Mode::Auto if c.kind == ControlKind::ClimateController => vec![RoomMode::Auto],
        Mode::Auto => vec![RoomMode::Auto, RoomMode::EndOverride],
        Mode::Heating => vec![RoomMode::Heating],
        Mode::Cooling => vec![RoomMode::Cooling],
        Mode::Comfort => vec![RoomMode::Comfort(timer)],
        Mode::Eco => vec![RoomMode::Eco(timer)],
        Mode::Off => vec![RoomMode::Off(timer)],
    };
    (actions.into_iter().map(Action::RoomMode).collect(), minutes)
}

/// The room controllers of a room, or a refusal naming the room.
fn room_controllers<'h>(
    home: &'h Home,
    room: &str,
) -> Result<(String, Vec<&'h Control>), ToolError> {
    controllers_in(home, room, false)
}

/// The room controllers of `room` and, `with_climate`, any ClimateController (what
/// `set_room_mode` acts on), or a refusal naming the room.
fn controllers_in<'h>(
    home: &'h Home,
    room: &str,
    with_climate: bool,
) -> Result<(String, Vec<&'h Control>), ToolError> {
    let room = home.resolve_room(room)?;
    let controllers: Vec<&Control> = home
        .controls_in_room(&room.uuid)
        .into_iter()
        .filter(|c| {
            is_room_controller(c) || (with_climate && c.kind == ControlKind::ClimateController)
        })
        .collect();
    if controllers.is_empty() {
        return Err(ToolError::Refused {
            code: "DEVICE_NOT_FOUND",
            message: format!(
                "{} has no room controller (Intelligent Room Controller){}",
                room.name,
                if with_climate {
                    " and no Climate Controller"
                } else {
                    ""
                }
            ),
        });
    }
    Ok((room.name.clone(), controllers))
}

/// `set_room_mode`: every room controller and ClimateController of the room, in the batch
/// shape (action = the mode word, value = `duration_minutes`). Errors: -32602 for bad
/// arguments (naming the field); `DEVICE_NOT_FOUND` for an unknown room or one without
/// controllers; `INVALID_PARAMETERS` when no controller of the room can take the mode;
/// `CONNECTION_ERROR` when nothing was done because the Miniserver is out of reach.
fn set_room_mode(house: &Ctx, a: SetMode, caller: &Caller) -> Result<Value, ToolError> {
    // A duration with auto, heating or cooling is refused by the declaration (`selects`).
    let minutes = a.duration_minutes;
    let mode_word = a.mode.as_str();
    let home = house.home();
    let (room, controllers) = controllers_in(&home, &a.room, true)?;
    // Plan: a controller that cannot take the mode (a ClimateController asked for comfort or
    // eco) is that item's error; when no controller of the room can, the call is refused.
    let mut items = Vec::with_capacity(controllers.len());
    let mut unsupported = Vec::new();
    for c in controllers {
        let (actions, used) = mode_actions(c, a.mode, minutes);
        if let Some(e) = actions.iter().find_map(|x| house.command(c, x).err()) {
            unsupported.push(e.to_string());
            items.push(Item::refused_for(&home, c, ToolError::Controller(e)));
            continue;
        }
        let mut notes = Vec::new();
        if used != minutes {
            if let Some(n) = used {
                notes.push(format!(
                    "duration_minutes {n}: a v1 room controller's override is always a timer"
                ));
            }
        }
        if c.kind == ControlKind::ClimateController {
            notes.push(
                "house-wide heating/cooling block: its mode applies to the whole house".into(),
            );
        }
        let note = (!notes.is_empty()).then(|| notes.join("; "));
        items.push(Item::new(&home, c, actions).with_note(note));
    }
    if unsupported.len() == items.len() {
        return Err(ToolError::Refused {
            code: "INVALID_PARAMETERS",
            message: format!(
                "mode {mode_word}: nothing in {room} supports it: {}",
                unsupported.join("; ")
            ),
        });
    }
    let opts = RunOptions {
        dry_run: a.dry_run.0,
        show_current: false,
    };
    let mut header = batch::header("room", Some(&room), mode_word, minutes.map(f64::from));
    header["duration_minutes"] = json!(minutes);
    batch::run(house, items, opts, caller).into_data(header)
}

tool_args! {
    /// The arguments of `get_zone_temperature`.
    struct ZoneArgs {
        zone_id: String { about: "Room name/UUID or room controller name/UUID" },
    }
}

/// The room controllers `query` names: a room's (by UUID or name), else one controller by UUID
/// or (room-qualified) name. An unknown name is the room resolver's error (room suggestions).
fn zone_controllers<'h>(
    home: &'h Home,
    query: &str,
) -> Result<(Option<String>, Vec<&'h Control>), ToolError> {
    match home.resolve_room(query) {
        Ok(room) => {
            let (name, controllers) = room_controllers(home, &room.uuid)?;
            Ok((Some(name), controllers))
        }
        Err(room_err @ ResolveError::NotFound { .. }) => {
            match home.resolve_control(query, None, &is_room_controller) {
                Ok(c) => Ok((home.room_name(c).map(str::to_string), vec![c])),
                Err(ResolveError::NotFound { .. }) => Err(args::wrong_kind(
                    home,
                    query,
                    "a room controller (IRoomController, IRoomControllerV2)",
                )
                .unwrap_or(room_err.into())),
                Err(e) => Err(e.into()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// The controllers `get_zone_temperature` reads for `query` ([`zone_controllers`]): what the
/// tool reaches, for the scope check of its declaration.
fn zone_reach<'h>(home: &'h Home, query: &str) -> Result<Vec<&'h Control>, String> {
    zone_controllers(home, query)
        .map(|(_, controllers)| controllers)
        .map_err(|e| e.to_string())
}

fn get_zone_temperature(house: &Ctx, a: ZoneArgs, caller: &Caller) -> Result<Value, ToolError> {
    let home = house.home();
    let (room, controllers) = zone_controllers(&home, &a.zone_id)?;
    if let Some(Err(denied)) = controllers
        .iter()
        .map(|c| caller.permits(&home, c))
        .find(Result::is_err)
    {
        return Err(ToolError::Refused {
            code: "INSUFFICIENT_PERMISSIONS",
            message: denied.to_string(),
        });
    }
    let mut values = view::ValueReader::new(house);
    let zones: Vec<Value> = controllers
        .iter()
        .map(|c| zone(house, &home, c, &mut values))
        .collect();
    let first = &zones[0];
    if let Some(w) = &values.warning {
        if zones.iter().all(|z| z["temperature"].is_null()) {
            // Nothing could be read: the Miniserver is out of reach.
            return Err(ToolError::Refused {
                code: "CONNECTION_ERROR",
                message: w.clone(),
            });
        }
    }
    Ok(values.annotate(json!({
        "zone_id": a.zone_id,
        "room": room,
        "temperature": first["temperature"],
        "target": first["target"],
        "unit": "°C",
        "controllers": zones,
    })))
}

fn get_climate_status(house: &Ctx, a: RoomListing, caller: &Caller) -> Result<Value, ToolError> {
    let limit = a.limit.0;
    let home = house.home();
    let room = args::room_uuid(&home, a.room.as_deref())?;
    let in_room = |c: &&Control| args::listed(&home, caller, room.as_ref(), c);
    let mut values = view::ValueReader::new(house);
    let matching: Vec<&Control> = home
        .controls
        .iter()
        .filter(in_room)
        .filter(|c| is_room_controller(c))
        .collect();
    let zones: Vec<Value> = matching
        .iter()
        .take(limit)
        .map(|c| zone(house, &home, c, &mut values))
        .collect();
    let climate: Vec<Value> = home
        .controls
        .iter()
        .filter(in_room)
        .filter(|c| c.kind == ControlKind::ClimateController)
        .take(limit)
        .map(|c| {
            let info = match live(house, c, "infoText") {
                Some(crate::home::Value::Text(t)) => Some(t),
                _ => None,
            };
            json!({
                "uuid": c.uuid,
                "name": c.name,
                "room": home.room_name(c),
                "current_mode": values.read(c).and_then(|v| v.value.as_f64()),
                "info_text": info,
            })
        })
        .collect();
    Ok(values.annotate(json!({
        "zones": zones,
        "climate_controllers": climate,
        "total": matching.len(),
    })))
}
