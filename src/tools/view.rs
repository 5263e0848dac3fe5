//! How controls look in tool results: a compact JSON record per device, and the primary value
//! translated into words a user understands (on/off, level %, position %, °C).

use serde_json::{json, Value as Json};

use crate::home::primary::MOOD_OFF;
use crate::home::resolve::Candidate;
use crate::home::{Control, ControlKind, Home, House, StateValue, Value};

/// `"Deckenlicht (Küche)"`, the way candidates are listed in messages.
pub fn candidate_label(c: &Candidate) -> String {
    match &c.room {
        Some(r) => format!("{} ({r})", c.name),
        None => c.name.clone(),
    }
}

/// The device record: `uuid`, `name`, `type` (Loxone type), `category` (family: lighting,
/// blinds, ...), `loxone_category` (the user's category name), `room`, `secured`.
pub fn device(home: &Home, c: &Control) -> Json {
    json!({
        "uuid": c.uuid,
        "name": c.name,
        "type": c.kind.as_str(),
        "category": home.family(c).as_str(),
        "loxone_category": c.category.as_deref().and_then(|u| home.category(u)).map(|k| k.name.as_str()),
        "room": room_of(home, c),
        "secured": c.is_secured,
    })
}

/// The room name of a control or sub-control (a sub-control's room is its parent's).
pub fn room_of<'h>(home: &'h Home, c: &Control) -> Option<&'h str> {
    if let Some(r) = home.room_name(c) {
        return Some(r);
    }
    let (parent, _) = c.uuid.split_once('/')?;
    home.control(parent).and_then(|p| home.room_name(p))
}

/// `"Deckenlicht (Küche)"`: a control as a short label for compact listings.
pub fn label(home: &Home, c: &Control) -> String {
    match room_of(home, c) {
        Some(r) => format!("{} ({r})", c.name),
        None => c.name.clone(),
    }
}

/// A named state of `c` (`tempTarget`, `windowStates`, ...) as the [`House`]'s state store
/// knows it (filled by the Miniserver's event stream); `None` when not (yet) known. Only the
/// primary value can be read over HTTP, so this never asks the Miniserver.
pub fn named_state(house: &House, c: &Control, name: &str) -> Option<Value> {
    house.states().get(c.state(name)?).map(|v| v.value)
}

/// The unit of an analog value from its `details.format` (`"%.1f°"` -> `"°C"`,
/// `"%.0f%%"` -> `"%"`, `"%.1f kW"` -> `"kW"`), if any.
pub fn unit(c: &Control) -> Option<String> {
    crate::home::model::unit_of_format(c.details.get("format")?.as_str()?)
}

/// Whether an analog sensor measures temperature (by unit, else by name).
pub fn is_temperature_sensor(c: &Control) -> bool {
    if c.kind != ControlKind::InfoOnlyAnalog {
        return false;
    }
    match unit(c) {
        Some(u) => u.starts_with('°'),
        None => {
            let n = crate::home::resolve::fold(&c.name);
            n.contains("temp")
        }
    }
}

/// The primary value of `c` in words, e.g. `{"on": true, "level": 60}` for a dimmer,
/// `{"position": 40}` (percent closed, 0 = fully open) for a blind.
pub fn state(c: &Control, v: &Value) -> Json {
    use ControlKind as K;
    let n = v.as_f64();
    let Some(x) = n else {
        return json!({ "text": match v { Value::Text(t) => t.as_str(), Value::Number(_) => "" } });
    };
    match &c.kind {
        K::Switch | K::TimedSwitch | K::Pushbutton | K::InfoOnlyDigital => json!({"on": x != 0.0}),
        K::PresenceDetector => json!({"presence": x != 0.0}),
        K::Dimmer | K::EibDimmer | K::ColorPickerV2 => json!({"on": x > 0.0, "level": round1(x)}),
        K::LightControllerV2 => json!({"on": x as u32 != MOOD_OFF, "mood_id": x as i64}),
        K::LightController => json!({"on": x != 0.0, "scene": x as i64}),
        K::Jalousie => {
            json!({"position": round1(x * 100.0), "position_meaning": "percent closed, 0 = fully open"})
        }
        K::Gate => json!({"open_percent": round1(x * 100.0)}),
        K::IRoomController | K::IRoomControllerV2 => {
            json!({"temperature": round1(x), "unit": "°C"})
        }
        K::AudioZone | K::AudioZoneV2 => {
            json!({"play_state": match x as i64 { 2 => "playing", 1 => "paused", _ => "stopped" }})
        }
        K::Alarm => json!({"armed": x != 0.0}),
        K::WindowMonitor => json!({"open": x as i64}),
        K::Meter => json!({"power": round1(x), "unit": unit(c).unwrap_or_else(|| "kW".into())}),
        _ => match unit(c) {
            Some(u) => json!({"value": round1(x), "unit": u}),
            None => json!({"value": round1(x)}),
        },
    }
}

/// Reads primary values for a listing. After the first failure meaning the Miniserver is out
/// of reach (unreachable, credentials, lock-out) it asks no more (one timeout, not one per
/// device) and keeps the reason for the result's `warning`.
pub struct ValueReader<'a> {
    house: &'a House,
    pub warning: Option<String>,
    /// Age in seconds of the oldest value returned.
    oldest: Option<f64>,
}

impl<'a> ValueReader<'a> {
    pub fn new(house: &'a House) -> Self {
        Self {
            house,
            warning: None,
            oldest: None,
        }
    }

    /// The control's value, or `None` when it cannot be had.
    pub fn read(&mut self, c: &Control) -> Option<StateValue> {
        if self.warning.is_some() {
            return None;
        }
        match self.house.value(c) {
            Ok(v) => {
                let age = v.age_secs();
                self.oldest = Some(self.oldest.map_or(age, |o| o.max(age)));
                Some(v)
            }
            Err(e) if e.is_unreachable() => {
                self.warning = Some(format!("current values unavailable: {e}"));
                None
            }
            Err(_) => None,
        }
    }

    /// Adds `warning` to a listing result when values were missing, `age_secs` (the age in
    /// seconds of the oldest value shown) when values were shown, and, while the Miniserver
    /// link is down, `link: "disconnected"` (values are as old as `age_secs` says).
    pub fn annotate(self, mut out: Json) -> Json {
        if let Some(w) = self.warning {
            out["warning"] = Json::String(w);
        }
        if let Some(age) = self.oldest {
            out["age_secs"] = json!(age.round());
        }
        if self.house.link().mode() == crate::home::LinkMode::Disconnected {
            out["link"] = json!("disconnected");
        }
        out
    }
}

/// The primary value of `c` in words ([`state`]) with `age_secs`: seconds since the value
/// was learnt from the Miniserver.
pub fn state_with_age(c: &Control, v: &StateValue) -> Json {
    let mut s = state(c, &v.value);
    s["age_secs"] = json!(v.age_secs().round());
    s
}

/// Rounds to one decimal (21.4999 -> 21.5).
pub fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn control(kind: ControlKind, format: Option<&str>) -> Control {
        let mut details = serde_json::Map::new();
        if let Some(f) = format {
            details.insert("format".into(), Json::from(f));
        }
        let mut c = Control::new("u", "Temperatur Küche", kind);
        c.details = details;
        c
    }

    #[test]
    fn units_come_from_format() {
        assert_eq!(
            unit(&control(ControlKind::InfoOnlyAnalog, Some("%.1f°"))).as_deref(),
            Some("°C")
        );
        assert_eq!(
            unit(&control(ControlKind::InfoOnlyAnalog, Some("%.0f%%"))).as_deref(),
            Some("%")
        );
        assert_eq!(
            unit(&control(ControlKind::InfoOnlyAnalog, Some("%.2f kW"))).as_deref(),
            Some("kW")
        );
        assert_eq!(unit(&control(ControlKind::InfoOnlyAnalog, None)), None);
        assert!(is_temperature_sensor(&control(
            ControlKind::InfoOnlyAnalog,
            Some("%.1f°")
        )));
        assert!(!is_temperature_sensor(&control(
            ControlKind::InfoOnlyAnalog,
            Some("%.0f%%")
        )));
        assert!(is_temperature_sensor(&control(
            ControlKind::InfoOnlyAnalog,
            None
        )));
    }

    #[test]
    fn states_in_words() {
        let blind = control(ControlKind::Jalousie, None);
        assert_eq!(state(&blind, &Value::Number(0.4))["position"], 40.0);
        let lc = control(ControlKind::LightControllerV2, None);
        assert_eq!(state(&lc, &Value::Number(778.0))["on"], false);
        let dim = control(ControlKind::Dimmer, None);
        assert_eq!(
            state(&dim, &Value::Number(60.0)),
            json!({"on": true, "level": 60.0})
        );
    }
}
