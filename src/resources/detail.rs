//! Composed resources: one device with all its states (`home://devices/{uuid}`), a room
//! overview (`home://rooms/{room}/overview`) and the weather (`home://weather`).

use serde_json::{json, Value};

use super::{room_key, run_tool, RpcError};
use crate::home::resolve::fold;
use crate::home::{Control, ControlKind, Family, Home, StateRef, StateValue};
use crate::tools::view::{self, ValueReader};
use crate::tools::Ctx;

/// A live value as JSON: number or text, with its age and source.
fn live(v: &StateValue) -> Value {
    let value = match &v.value {
        crate::home::Value::Number(n) => json!(n),
        crate::home::Value::Text(t) => json!(t),
    };
    json!({"value": value, "age_secs": v.age_secs().round(), "source": v.source.as_str()})
}

/// `home://devices/{uuid}`: the device record, its primary state (read when stale), every
/// named state as the live store knows it (`null` when not reported yet) and its sub-controls.
pub fn device(ctx: &Ctx, home: &Home, uuid: &str, uri: &str) -> Result<Value, RpcError> {
    let Some(c) = home.control(uuid) else {
        return Err(super::not_found(uri, "no device has this UUID", Vec::new()));
    };
    let mut values = ValueReader::new(ctx);
    let state = values
        .read(c)
        .map_or(Value::Null, |v| view::state_with_age(c, &v));
    let states: serde_json::Map<String, Value> = c
        .states
        .iter()
        .map(|(name, r)| {
            let v = match r {
                StateRef::Uuid(u) => json!({
                    "uuid": u,
                    "live": ctx.states().get(u).as_ref().map_or(Value::Null, live),
                }),
                StateRef::Uuids(us) => json!({
                    "uuids": us,
                    "live": us.iter().map(|u| ctx.states().get(u).as_ref().map_or(Value::Null, live)).collect::<Vec<_>>(),
                }),
            };
            (name.clone(), v)
        })
        .collect();
    let room = c.room.as_deref().and_then(|r| home.room(r));
    Ok(values.annotate(json!({
        "device": view::device(home, c),
        "state": state,
        "states": states,
        "sub_controls": c.sub_controls.iter().map(|s| {
            let mut d = view::device(home, s);
            d["uri"] = json!(format!("home://devices/{}", s.uuid));
            d
        }).collect::<Vec<_>>(),
        "room_uri": room.map(|r| format!("home://rooms/{}/overview", room_key(home, r))),
    })))
}

/// `home://rooms/{room}/overview`: devices per family (as `list_rooms` counts them),
/// statistics drawn from the room's `get_home_summary`, and that summary.
pub fn overview(ctx: &Ctx, home: &Home, room_uuid: &str) -> Result<Value, RpcError> {
    let Some(room) = home.room(room_uuid) else {
        return Err(RpcError::internal("room vanished"));
    };
    let rooms = run_tool(ctx, "list_rooms", &json!({"name": room.name, "limit": 500}))?;
    let entry = rooms["rooms"]
        .as_array()
        .and_then(|rs| rs.iter().find(|r| r["uuid"] == room.uuid.as_str()))
        .cloned()
        .unwrap_or(Value::Null);
    let summary = run_tool(ctx, "get_home_summary", &json!({"room": room.uuid}))?;
    let len = |k: &str| summary[k].as_array().map_or(0, Vec::len);
    let climate = summary["climate"]
        .as_array()
        .and_then(|c| c.first())
        .cloned();
    let key = room_key(home, room);
    Ok(json!({
        "room": {"uuid": room.uuid, "name": room.name, "slug": key},
        "device_count": entry["device_count"],
        "devices_by_family": entry["devices_by_category"],
        "statistics": {
            "lights_on": len("lights_on"),
            "blinds_not_open": len("blinds_not_open"),
            "open_windows": summary["openings"]["open_count"],
            "temperature": climate.as_ref().map_or(Value::Null, |c| c["temperature"].clone()),
            "target": climate.as_ref().map_or(Value::Null, |c| c["target"].clone()),
            "audio_playing": len("audio_playing"),
            "presence": len("presence") > 0,
        },
        "summary": summary,
        "devices_uri": format!("home://rooms/{key}/devices"),
    }))
}

/// Words of weather sources and outdoor sensors (folded).
const WEATHER_WORDS: [&str; 14] = [
    "wetter",
    "weather",
    "aussen",
    "outdoor",
    "outside",
    "wind",
    "regen",
    "rain",
    "niederschlag",
    "sonne",
    "sun",
    "dammerung",
    "dusk",
    "frost",
];

/// Whether a control is a weather source: a weather-server block, or a sensor named like an
/// outdoor measurement ("Außentemperatur", "Wind", "Regen").
pub fn is_weather(home: &Home, c: &Control) -> bool {
    let t = fold(c.kind.as_str());
    if t.contains("weather") || t.contains("wetter") {
        return true;
    }
    if home.family(c) != Family::Sensors {
        return false;
    }
    let n = fold(&c.name);
    WEATHER_WORDS.iter().any(|w| n.contains(w))
}

/// `home://weather`: weather blocks and outdoor sensors with their readings (empty with a
/// note when the house has none).
pub fn weather(ctx: &Ctx, home: &Home) -> Value {
    let mut values = ValueReader::new(ctx);
    let sources: Vec<Value> = home
        .controls
        .iter()
        .filter(|c| is_weather(home, c))
        .map(|c| {
            let mut d = view::device(home, c);
            d["state"] = if matches!(c.kind, ControlKind::Unknown(_)) {
                Value::Null
            } else {
                values
                    .read(c)
                    .map_or(Value::Null, |v| view::state_with_age(c, &v))
            };
            d
        })
        .collect();
    let mut out = json!({"total": sources.len(), "sources": sources});
    if out["total"] == 0 {
        out["note"] = json!("this house has no weather station or outdoor sensors");
    }
    values.annotate(out)
}
