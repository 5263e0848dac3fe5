//! Reading the house at a glance: `get_home_summary` (what is on, open, playing, armed) and
//! `get_sensors_status` (temperature, humidity, motion, door/window, brightness, meters).
//!
//! Only a control's primary value can be read over HTTP ([`House::value`]); named states
//! (a room controller's `tempTarget`, a window monitor's `windowStates`) come from the state
//! store once the Miniserver's event stream fills it. Until then they are reported as `null`,
//! never guessed.

use serde_json::{json, Value};

use super::args;
use super::schema::{tool_args, words, Limit};
use super::view::{self, ValueReader};
use super::{Caller, Ctx, Reach, Tool, ToolError};
use crate::home::resolve::fold;
use crate::home::{Control, ControlKind, Family, Home, House, Value as Reading};

words! {
    /// The sensor kinds of `get_sensors_status` ([`sensor_type`]).
    enum SensorType {
        Temperature = "temperature",
        Humidity = "humidity",
        Motion = "motion",
        DoorWindow = "door_window",
        Brightness = "brightness",
        Meter = "meter",
        Other = "other",
    }
}

pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "get_home_summary",
            "Home summary",
            "What is going on, to read first: lights on, blinds not open, open windows and doors, °C and target per room, audio playing, presence, alarms (armed), alerts (the Miniserver's own first). room narrows all but the alarms.",
            get_home_summary,
        )
        .reach(Reach::AllFamilies { room: "room" })
        .data(|| {
                let list = json!({"type": "array"});
                json!({
                    "type": "object",
                    "properties": {
                        "lights_on": list,
                        "blinds_not_open": list,
                        "openings": {"type": "object", "required": ["open_count", "open"]},
                        "climate": list,
                        "audio_playing": list,
                        "presence": list,
                        "alarm": list,
                        "alerts": list
                    },
                    "required": ["room", "lights_on", "blinds_not_open", "openings", "climate", "audio_playing", "presence", "alarm", "alerts"]
                })
            }),
        Tool::new(
            "get_sensors_status",
            "Sensors status",
            "Sensors and readings: temperature °C, humidity %, motion, door_window (open true/false, or number open), brightness lx, meter kW, other; null: unreadable.",
            get_sensors_status,
        )
        .lists(Reach::Room { room: "room", family: Family::Sensors })
        .data(|| args::listing_schema("sensors", json!({
                        "type": "object",
                        "properties": {"sensor_type": {"enum": SensorType::WORDS}},
                        "required": ["name", "value", "unit"]
                    }), &[])),
    ]
}

/// The sensor kind of a control, or `None` when it is no sensor.
pub(crate) fn sensor_type(c: &Control) -> Option<&'static str> {
    let name = fold(&c.name);
    let has = |words: &[&str]| words.iter().any(|w| name.contains(w));
    Some(match c.kind {
        ControlKind::PresenceDetector => "motion",
        ControlKind::WindowMonitor => "door_window",
        ControlKind::Meter => "meter",
        ControlKind::InfoOnlyAnalog => {
            let unit = view::unit(c).unwrap_or_default().to_lowercase();
            if view::is_temperature_sensor(c) {
                "temperature"
            } else if has(&["feucht", "humid"]) {
                "humidity"
            } else if unit == "lx" || unit == "lux" || has(&["hellig", "bright", "lux"]) {
                "brightness"
            } else {
                "other"
            }
        }
        ControlKind::InfoOnlyDigital => {
            if has(&["fenster", "window", "tur", "door", "kontakt", "contact"]) {
                "door_window"
            } else if has(&["bewegung", "motion", "prasenz", "presence"]) {
                "motion"
            } else {
                "other"
            }
        }
        _ => return None,
    })
}

/// The `(value, unit)` of a sensor reading.
fn reading(c: &Control, v: Option<&Reading>) -> (Value, Option<String>) {
    let n = v.and_then(Reading::as_f64);
    match c.kind {
        ControlKind::PresenceDetector | ControlKind::InfoOnlyDigital => {
            (n.map_or(Value::Null, |x| json!(x != 0.0)), None)
        }
        ControlKind::WindowMonitor => (n.map_or(Value::Null, |x| json!(x as i64)), None),
        ControlKind::Meter => (
            n.map_or(Value::Null, |x| json!(view::round1(x))),
            Some("kW".into()),
        ),
        _ => (
            n.map_or(Value::Null, |x| json!(view::round1(x))),
            view::unit(c),
        ),
    }
}

tool_args! {
    /// The arguments of `get_sensors_status`.
    struct SensorsArgs {
        room: Option<String>,
        kind: Option<SensorType> { key: "type" },
        name: Option<String> { about: args::NAME },
        limit: Limit,
    }
}

fn get_sensors_status(house: &Ctx, a: SensorsArgs, caller: &Caller) -> Result<Value, ToolError> {
    let limit = a.limit.0;
    let kind = a.kind.map(SensorType::as_str);
    let home = house.home();
    let room = args::room_uuid(&home, a.room.as_deref())?;
    let name = args::NameFilter::new(a.name.as_deref());
    let matching: Vec<(&Control, &str)> = home
        .controls
        .iter()
        .filter_map(|c| sensor_type(c).map(|t| (c, t)))
        .filter(|(c, _)| args::listed(&home, caller, room.as_ref(), c))
        .filter(|(_, t)| kind.is_none_or(|k| k == *t))
        .filter(|(c, _)| name.matches(&c.name))
        .collect();
    let mut values = ValueReader::new(house);
    let sensors: Vec<Value> = matching
        .iter()
        .take(limit)
        .map(|(c, t)| {
            let v = values.read(c).map(|s| s.value);
            let (value, unit) = reading(c, v.as_ref());
            let mut d = json!({
                "uuid": c.uuid,
                "name": c.name,
                "room": home.room_name(c),
                "sensor_type": t,
                "type": c.kind.as_str(),
                "value": value,
                "unit": unit,
            });
            if c.kind == ControlKind::WindowMonitor {
                d["windows"] = json!(monitored(c).len());
            }
            d
        })
        .collect();
    Ok(values.annotate(json!({"sensors": sensors, "total": matching.len()})))
}

/// The windows and doors a WindowMonitor watches: `(name, room UUID)` from its details.
fn monitored(c: &Control) -> Vec<(String, Option<String>)> {
    c.details
        .get("windows")
        .and_then(Value::as_array)
        .map(|ws| {
            ws.iter()
                .map(|w| {
                    (
                        w.get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("?")
                            .to_string(),
                        w.get("room").and_then(Value::as_str).map(str::to_string),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The open windows of a WindowMonitor by name, from its `windowStates` (per window a bit
/// set: 1 closed, 2 tilted, 4 open) when the state store knows them.
fn open_windows(
    house: &House,
    home: &Home,
    c: &Control,
    room: Option<&str>,
) -> Option<Vec<String>> {
    let Some(Reading::Text(states)) = view::named_state(house, c, "windowStates") else {
        return None;
    };
    let flags: Vec<i64> = states
        .split(',')
        .map(|s| s.trim().parse::<f64>().unwrap_or(0.0) as i64)
        .collect();
    Some(
        monitored(c)
            .into_iter()
            .zip(flags)
            .filter(|(_, f)| f & 6 != 0)
            .filter(|((_, r), _)| room.is_none_or(|want| r.as_deref() == Some(want)))
            .map(|((name, r), f)| {
                let room_name = r.as_deref().and_then(|u| home.room(u)).map(|r| &r.name);
                let tilted = if f & 4 == 0 { ", tilted" } else { "" };
                match room_name {
                    Some(rn) => format!("{name} ({rn}{tilted})"),
                    None => format!("{name}{}", if tilted.is_empty() { "" } else { " (tilted)" }),
                }
            })
            .collect(),
    )
}

tool_args! {
    /// The arguments of `get_home_summary`.
    struct SummaryArgs {
        room: Option<String>,
    }
}

fn get_home_summary(house: &Ctx, a: SummaryArgs, _: &Caller) -> Result<Value, ToolError> {
    let home = house.home();
    let room = match a.room.as_deref() {
        Some(r) => Some(home.resolve_room(r)?),
        None => None,
    };
    let room_uuid = room.map(|r| r.uuid.as_str());
    let in_scope = |c: &Control| room_uuid.is_none_or(|r| c.room.as_deref() == Some(r));
    // In a room summary the room is implied; in the house summary every name carries it.
    let label = |c: &Control| {
        if room.is_some() {
            c.name.clone()
        } else {
            view::label(&home, c)
        }
    };
    let mut values = ValueReader::new(house);
    let mut num = |c: &Control| values.read(c).and_then(|v| v.value.as_f64());

    let mut lights_on = Vec::new();
    let mut blinds = Vec::new();
    let mut audio = Vec::new();
    let mut presence = Vec::new();
    let mut alerts = Vec::new();
    let mut alarm = Vec::new();
    let mut open = Vec::new();
    let mut open_count: Option<i64> = None;
    for c in home.controls.iter() {
        let is_alarm = c.kind == ControlKind::Alarm;
        if !in_scope(c) && !is_alarm {
            continue;
        }
        match c.kind {
            _ if home.is_light(c) => {
                if let Some(v) = values_on(c, num(c)) {
                    if v {
                        lights_on.push(label(c));
                    }
                }
            }
            ControlKind::Jalousie => {
                if let Some(p) = num(c).map(|v| view::round1(v * 100.0)) {
                    if p > 0.5 {
                        blinds.push(json!({"name": label(c), "position": p}));
                    }
                }
            }
            ControlKind::AudioZone | ControlKind::AudioZoneV2 if num(c) == Some(2.0) => {
                audio.push(label(c));
            }
            ControlKind::PresenceDetector if num(c).is_some_and(|v| v != 0.0) => {
                presence
                    .push(view::room_of(&home, c).map_or_else(|| c.name.clone(), str::to_string));
            }
            ControlKind::Alarm => {
                alarm.push(
                    json!({"name": view::label(&home, c), "armed": num(c).map(|v| v != 0.0)}),
                );
            }
            ControlKind::SmokeAlarm => {
                if let Some(level) = num(c).filter(|v| *v > 0.0) {
                    alerts.push(format!("{}: alarm level {level}", label(c)));
                }
            }
            ControlKind::WindowMonitor if room.is_none() => {
                if let Some(n) = num(c) {
                    *open_count.get_or_insert(0) += n as i64;
                }
                if let Some(names) = open_windows(house, &home, c, None) {
                    open.extend(names);
                }
            }
            ControlKind::InfoOnlyDigital => {
                let on = num(c).is_some_and(|v| v != 0.0);
                if on && sensor_type(c) == Some("door_window") {
                    open.push(label(c));
                } else if on && home.family(c) == Family::Security {
                    alerts.push(format!("{}: active", label(c)));
                }
            }
            _ => {}
        }
    }
    // A room summary: the house's window monitors, narrowed to this room's windows.
    if let Some(r) = room_uuid {
        for c in home
            .controls
            .iter()
            .filter(|c| c.kind == ControlKind::WindowMonitor)
        {
            if let Some(names) = open_windows(house, &home, c, Some(r)) {
                *open_count.get_or_insert(0) += names.len() as i64;
                open.extend(names);
            }
        }
    }
    // Door contacts count too when no window monitor reported.
    if open_count.is_none() && !open.is_empty() {
        open_count = Some(open.len() as i64);
    }

    let named = open.len() as i64;
    let mut openings = json!({"open_count": open_count, "open": open});
    if open_count.is_some_and(|n| n > named) {
        openings["note"] = json!(
            "which windows are open arrives with the Miniserver's live updates; only the count is known"
        );
    }
    // The house's own alerts first: the stop, then the Miniserver's Message Center, most
    // severe first (in a room summary, that room's entries).
    let mut first = Vec::new();
    let stop = house.stop_shown();
    if stop.stopped {
        first.push(format!(
            "the assistant is stopped ({}): commands are refused",
            stop.stopped_by().join(", ")
        ));
    }
    let snapshot = house.alerts();
    first.extend(
        snapshot
            .active()
            .filter(|a| room_uuid.is_none_or(|r| a.room.as_deref() == Some(r)))
            .map(|a| a.line(&home)),
    );
    first.extend(alerts);
    let alerts = first;
    let climate = climate(house, &home, room_uuid, &mut values);
    Ok(values.annotate(json!({
        "room": room.map(|r| r.name.as_str()),
        "lights_on": lights_on,
        "blinds_not_open": blinds,
        "openings": openings,
        "climate": climate,
        "audio_playing": audio,
        "presence": presence,
        "alarm": alarm,
        "alerts": alerts,
    })))
}

/// Whether a light is on, from its primary value.
fn values_on(c: &Control, v: Option<f64>) -> Option<bool> {
    let v = v?;
    view::state(c, &Reading::Number(v))
        .get("on")
        .and_then(Value::as_bool)
}

/// Per room: the room controller's actual temperature and its target (when the state store
/// knows `tempTarget`), else a temperature sensor's reading.
pub(crate) fn climate(
    house: &House,
    home: &Home,
    room: Option<&str>,
    values: &mut ValueReader,
) -> Vec<Value> {
    let mut out = Vec::new();
    for r in home
        .rooms
        .iter()
        .filter(|r| room.is_none_or(|u| u == r.uuid))
    {
        let controls = home.controls_in_room(&r.uuid);
        let controller = controls.iter().find(|c| {
            matches!(
                c.kind,
                ControlKind::IRoomController | ControlKind::IRoomControllerV2
            )
        });
        let entry = match controller {
            Some(c) => {
                let t = values
                    .read(c)
                    .and_then(|v| v.value.as_f64())
                    .map(view::round1);
                let target = view::named_state(house, c, "tempTarget")
                    .and_then(|v| v.as_f64())
                    .map(view::round1);
                json!({"room": r.name, "temperature": t, "target": target})
            }
            None => match controls.iter().find(|c| view::is_temperature_sensor(c)) {
                Some(c) => {
                    let t = values
                        .read(c)
                        .and_then(|v| v.value.as_f64())
                        .map(view::round1);
                    json!({"room": r.name, "temperature": t, "target": null})
                }
                None => continue,
            },
        };
        out.push(entry);
    }
    out
}
