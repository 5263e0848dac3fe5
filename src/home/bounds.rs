//! What a value sent to a control may be (issue 15): every number of an [`Action`] is finite
//! and inside the range of the control that receives it, and a text is short enough to travel
//! as one URL path segment. [`check`] decides it for every command, at the last moment before
//! it is sent ([`super::House::act`]).
//!
//! The named ranges below ([`Range`]: [`PERCENT`], [`HUE`], [`KELVIN`], [`TEMPERATURE`],
//! [`VOLUME_STEP`], [`RADIO_OUTPUT`], [`MOOD`], [`OVERRIDE_MINUTES`]) are the one table of
//! them: [`check`] compares with them, and the tools' argument types take their schema's
//! `minimum`/`maximum` from them, so what a tool's schema announces, what its parser admits
//! and what the house accepts are one number each.
//!
//! Out-of-range values are **refused, never clamped**: "set the irrigation to 100 min" on a
//! block that stops at 60 must not silently become 60. Ranges:
//! - percent (dimmers, light master brightness, blind positions, slats, volume, colour
//!   saturation and brightness): [`PERCENT`]; hue [`HUE`]; white [`KELVIN`]; volume steps
//!   [`VOLUME_STEP`];
//! - target temperatures: [`TEMPERATURE`] °C; Radio outputs [`RADIO_OUTPUT`];
//! - value blocks (Slider, ValueSelector, UpDownAnalog, LeftRightAnalog): the control's own
//!   `min`..`max`: a ValueSelector's live `min`/`max` states when known (it can change them at
//!   run time), else the structure file's `details.min`/`details.max`; a block that gives
//!   neither is bounded by [`UNKNOWN_RANGE`];
//! - text (TextInput): 1..=[`TEXT_MAX_CHARS`] characters, not only dots (`.` and `..` are
//!   dot segments, which HTTP stacks remove from a path whether escaped or not).

use super::action::Action;
use super::model::{Control, ControlKind};

/// A closed range of accepted numbers, both ends included.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

impl Range {
    pub const fn new(min: f64, max: f64) -> Range {
        Range { min, max }
    }

    /// Whether `v` is a finite number inside the range.
    pub fn contains(self, v: f64) -> bool {
        v.is_finite() && v >= self.min && v <= self.max
    }
}

/// Percent 0-100: brightness, blind position (% closed), slat angle, volume, colour
/// saturation.
pub const PERCENT: Range = Range::new(0.0, 100.0);
/// Hue 0-360 °.
pub const HUE: Range = Range::new(0.0, 360.0);
/// White light's colour temperature, 2700-6500 K (ColorPickerV2 `temp`).
pub const KELVIN: Range = Range::new(2700.0, 6500.0);
/// Accepted target temperatures in °C (Loxone's frost protection lies below, nobody heats a
/// room above).
pub const TEMPERATURE: Range = Range::new(5.0, 35.0);
/// A volume change in percent points (negative = quieter).
pub const VOLUME_STEP: Range = Range::new(-100.0, 100.0);
/// Radio outputs a `select` may name (0 = all off); Loxone's Radio block has at most 16
/// outputs, the tools accept up to 64 for extended blocks.
pub const RADIO_OUTPUT: Range = Range::new(0.0, 64.0);
/// A LightControllerV2 mood id (777 bright, 778 off, the owner's own) or a LightController
/// scene number 0-9.
pub const MOOD: Range = Range::new(0.0, 9999.0);
/// How long a comfort, eco or off override of a room's climate lasts, in minutes: up to one
/// week.
pub const OVERRIDE_MINUTES: Range = Range::new(1.0, 10_080.0);

/// Points a history answer holds (`get_history`'s `max_points`, [`super::history`]).
pub const POINTS: Range = Range::new(1.0, 2000.0);

/// Longest text sent to a TextInput, in characters. 255 is what the Loxone app's text field
/// takes and what the tools' schemas announce; percent-encoded (up to 12 bytes per character
/// for 4-byte UTF-8) it stays near 3 KB, under the request-line limits of embedded HTTP
/// servers such as the Miniserver's.
pub const TEXT_MAX_CHARS: usize = 255;

/// The range of a value block that names no `min`/`max` (neither in its live states nor in
/// the structure file): wide enough for any real setting (seconds in a day, litres, lux, watts),
/// narrow enough that no value becomes a hundreds-of-digits command (`-1e308` once did).
pub const UNKNOWN_RANGE: (f64, f64) = (-1_000_000_000.0, 1_000_000_000.0);

/// The range a `set` value for `control` must lie in (value blocks; percent 0-100 for the
/// others), from `live` (the current number of one of the control's named states, e.g.
/// `"min"`, if known) and the structure file's details.
pub fn value_range(control: &Control, live: &dyn Fn(&str) -> Option<f64>) -> (f64, f64) {
    use ControlKind as K;
    match control.kind {
        K::Slider | K::ValueSelector | K::UpDownAnalog | K::LeftRightAnalog => {
            let detail = |k: &str| control.details.get(k).and_then(serde_json::Value::as_f64);
            let state = |k: &str| {
                (control.kind == K::ValueSelector)
                    .then(|| live(k))
                    .flatten()
                    .filter(|v| v.is_finite())
            };
            let lo = state("min").or_else(|| detail("min"));
            let hi = state("max").or_else(|| detail("max"));
            match (lo, hi) {
                (Some(lo), Some(hi)) if lo <= hi => (lo, hi),
                (Some(lo), None) => (lo, UNKNOWN_RANGE.1.max(lo)),
                (None, Some(hi)) => (UNKNOWN_RANGE.0.min(hi), hi),
                _ => UNKNOWN_RANGE,
            }
        }
        _ => (PERCENT.min, PERCENT.max),
    }
}

/// `Ok` when every value of `action` fits `control` (see the module docs); else the reason,
/// naming the value, the control and the allowed range.
pub fn check(
    control: &Control,
    action: &Action,
    live: &dyn Fn(&str) -> Option<f64>,
) -> Result<(), String> {
    let within = |what: &str, v: f64, range: Range| {
        if range.contains(v) {
            Ok(())
        } else {
            let v = if v.is_finite() && v.abs() < 1e15 {
                v.to_string()
            } else {
                format!("{v:e}")
            };
            Err(format!(
                "{what} {v} is outside what {} accepts: {} to {}; nothing was sent",
                control.name, range.min, range.max
            ))
        }
    };
    match action {
        Action::Level(v) => {
            let (lo, hi) = value_range(control, live);
            within("value", *v, Range::new(lo, hi))
        }
        Action::Temperature(t) => within("temperature", *t, TEMPERATURE),
        Action::Slats(v) => within("slat angle", *v, PERCENT),
        Action::VolumeStep(s) => within("volume step", *s, VOLUME_STEP),
        Action::Color {
            hue,
            saturation,
            brightness,
        } => within("hue", *hue, HUE)
            .and(within("saturation", *saturation, PERCENT))
            .and(within("brightness", *brightness, PERCENT)),
        Action::White { brightness, kelvin } => within("brightness", *brightness, PERCENT)
            .and(within("colour temperature", *kelvin, KELVIN)),
        Action::Select(n) => within("output", f64::from(*n), RADIO_OUTPUT),
        Action::Text(t) => check_text(t),
        _ => Ok(()),
    }
}

/// `Ok` for a text a TextInput may receive: 1..=[`TEXT_MAX_CHARS`] characters, not only dots.
pub fn check_text(t: &str) -> Result<(), String> {
    let n = t.chars().count();
    if n == 0 || n > TEXT_MAX_CHARS {
        Err(format!(
            "text must be 1-{TEXT_MAX_CHARS} characters (got {n})"
        ))
    } else if t.chars().all(|c| c == '.') {
        Err("text must not consist of dots only (a URL dot segment)".into())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(kind: ControlKind, details: serde_json::Value) -> Control {
        let mut c = Control::new("u", "Block", kind);
        if let serde_json::Value::Object(d) = details {
            c.details = d;
        }
        c
    }

    #[test]
    fn value_blocks_use_live_states_then_details() {
        let none = |_: &str| None;
        let live = |k: &str| match k {
            "min" => Some(5.0),
            "max" => Some(60.0),
            _ => None,
        };
        let vs = block(ControlKind::ValueSelector, serde_json::json!({}));
        assert_eq!(value_range(&vs, &live), (5.0, 60.0));
        assert_eq!(value_range(&vs, &none), UNKNOWN_RANGE);
        let slider = block(
            ControlKind::Slider,
            serde_json::json!({"min": 0, "max": 10}),
        );
        // Live states count for ValueSelectors only.
        assert_eq!(value_range(&slider, &live), (0.0, 10.0));
        let dimmer = block(ControlKind::Dimmer, serde_json::json!({}));
        assert_eq!(value_range(&dimmer, &none), (0.0, 100.0));
    }

    #[test]
    fn out_of_range_and_non_finite_values_are_refused() {
        let none = |_: &str| None;
        let live = |k: &str| (k == "max").then_some(60.0).or(Some(5.0));
        let vs = block(ControlKind::ValueSelector, serde_json::json!({}));
        assert!(check(&vs, &Action::Level(60.0), &live).is_ok());
        let e = check(&vs, &Action::Level(61.0), &live).unwrap_err();
        assert!(e.contains("5 to 60"), "{e}");
        assert!(check(&vs, &Action::Level(-1e308), &none).is_err());
        assert!(check(&vs, &Action::Level(f64::NAN), &none).is_err());
        assert!(check(&vs, &Action::Level(f64::INFINITY), &none).is_err());
        let d = block(ControlKind::Dimmer, serde_json::json!({}));
        assert!(check(&d, &Action::Level(100.5), &none).is_err());
        assert!(check(&d, &Action::Temperature(80.0), &none).is_err());
        assert!(check(&d, &Action::Select(65), &none).is_err());
        assert!(check(&d, &Action::Select(16), &none).is_ok());
        assert!(check(&d, &Action::Text("..".into()), &none).is_err());
        assert!(check(&d, &Action::Text("x".repeat(256)), &none).is_err());
        assert!(check(&d, &Action::Text("ü".repeat(255)), &none).is_ok());
    }
}
