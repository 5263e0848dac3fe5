//! One value per control: which of a control's pushed states is its primary value, per
//! control type. This table is the one place that decides it; [`House::value`] and the
//! dashboard read through it, so a listing, a status tool, a resource and a command's
//! verification all see the value the Miniserver last pushed.
//!
//! The choices follow the Loxone structure file documentation and match what a Miniserver
//! answers to `jdev/sps/io/{uuidAction}` (the simulator's `primary` in `sim/controls.rs`
//! implements the same table on the other side of the wire).
//!
//! [`House::value`]: super::House::value

use super::model::{Control, ControlKind};
use super::state::{StateStore, StateValue, Value};

/// LightControllerV2 mood id "Off" (all circuits off), per Loxone clients (PyLoxone,
/// openHAB): `changeTo/778` switches off, and an empty `activeMoods` reads as 778.
pub const MOOD_OFF: u32 = 778;

/// How a control type's primary value is made from its states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Primary {
    /// One state, as pushed: `active` (Switch, Pushbutton, presence, digital info),
    /// `position` (Dimmer, Jalousie, Gate; blinds and gates 0..1, dimmers percent),
    /// `tempActual` (room controllers, °C), `playState` (audio), `armed` (Alarm), `level`
    /// (SmokeAlarm), `value`, `actual` (Meter), `activeOutput` (Radio), `numOpen`
    /// (WindowMonitor), `activeScene` (LightController v1), `currentMode`, `color`, `text`
    /// (TextInput).
    State(&'static str),
    /// LightControllerV2: the first id in the `activeMoods` text (`"[777,2]"`), 778 (off)
    /// when the list is empty.
    FirstMood,
    /// TimedSwitch: 1 while `deactivationDelay` is not 0 (on, or counting down), else 0.
    TimedSwitch,
    /// No primary state to push (central blocks, UpDownDigital, and types whose states we do
    /// not know): the value is read over HTTP.
    None,
}

impl Primary {
    /// Whether `c` has a primary value to show or poll: a type the model knows, except the
    /// central blocks ([`ControlKind::is_central`]: they command others and report nothing of
    /// their own), and a type it does not know when it has a pushed primary state (its
    /// `value`, `active` or `position`). Listings show it and the polling fallback reads it.
    pub fn has_value(c: &Control) -> bool {
        match c.kind {
            ControlKind::Unknown(_) => Primary::of(c) != Primary::None,
            ref k => !k.is_central(),
        }
    }

    /// The primary state rule of `c`'s type. Types the model does not know use the first of
    /// `value`, `active`, `position` that the control has.
    pub fn of(c: &Control) -> Primary {
        use ControlKind as K;
        match &c.kind {
            K::Switch | K::Pushbutton | K::InfoOnlyDigital | K::PresenceDetector => {
                Primary::State("active")
            }
            K::TimedSwitch => Primary::TimedSwitch,
            K::Dimmer | K::EibDimmer | K::Jalousie | K::Gate => Primary::State("position"),
            K::LightController => Primary::State("activeScene"),
            K::LightControllerV2 => Primary::FirstMood,
            K::ColorPickerV2 | K::ColorPicker => Primary::State("color"),
            K::IRoomController | K::IRoomControllerV2 => Primary::State("tempActual"),
            K::ClimateController => Primary::State("currentMode"),
            K::AudioZone | K::AudioZoneV2 => Primary::State("playState"),
            K::Alarm => Primary::State("armed"),
            K::SmokeAlarm => Primary::State("level"),
            K::InfoOnlyAnalog
            | K::Slider
            | K::ValueSelector
            | K::UpDownAnalog
            | K::LeftRightAnalog => Primary::State("value"),
            K::WindowMonitor => Primary::State("numOpen"),
            K::Meter => Primary::State("actual"),
            K::Radio => Primary::State("activeOutput"),
            K::TextInput => Primary::State("text"),
            // An UpDownDigital (a virtual input of two pulses) has no states to push.
            K::UpDownDigital
            | K::CentralLightController
            | K::CentralJalousie
            | K::CentralAudioZone
            | K::CentralAlarm => Primary::None,
            _ => ["value", "active", "position"]
                .into_iter()
                .find(|s| c.state(s).is_some())
                .map_or(Primary::None, Primary::State),
        }
    }

    /// Whether the pushed state `name` is the primary value as it is (a [`Primary::State`]
    /// rule), so its raw value can be put in words like the primary value.
    pub fn is_state(self, name: &str) -> bool {
        matches!(self, Primary::State(s) if s == name)
    }

    /// The control's primary value from the pushed states in `store`, or `None` while a
    /// state it needs has not been pushed (or the control has no such state).
    pub fn read(self, c: &Control, store: &StateStore) -> Option<StateValue> {
        let get = |name: &str| store.get(c.state(name)?);
        match self {
            Primary::State(name) => get(name),
            Primary::FirstMood => {
                let v = get("activeMoods")?;
                let id = match &v.value {
                    Value::Text(t) => first_mood(t),
                    Value::Number(n) => *n,
                };
                Some(StateValue {
                    value: Value::Number(id),
                    ..v
                })
            }
            Primary::TimedSwitch => {
                let v = get("deactivationDelay")?;
                let on = v.value.as_f64().is_some_and(|d| d != 0.0);
                Some(StateValue {
                    value: Value::Number(if on { 1.0 } else { 0.0 }),
                    ..v
                })
            }
            Primary::None => None,
        }
    }
}

/// The first mood id of an `activeMoods` text such as `"[777,2]"`; [`MOOD_OFF`] when the
/// list is empty or unreadable.
pub fn first_mood(text: &str) -> f64 {
    text.trim_matches(|c: char| c == '[' || c == ']' || c.is_whitespace())
        .split(',')
        .next()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .unwrap_or(f64::from(MOOD_OFF))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    #[test]
    fn moods_read_as_their_first_id() {
        assert_eq!(first_mood("[777,2]"), 777.0);
        assert_eq!(first_mood("[]"), 778.0);
        assert_eq!(first_mood(" [ 5 ] "), 5.0);
        assert_eq!(first_mood("nonsense"), 778.0);
    }

    #[test]
    fn a_switch_reads_its_pushed_active_state() {
        let mut c = Control::new("ctl", "Deckenlicht", ControlKind::Switch);
        c.states.insert(
            "active".into(),
            super::super::model::StateRef::Uuid("st-active".into()),
        );
        let store = StateStore::new();
        assert_eq!(Primary::of(&c), Primary::State("active"));
        assert_eq!(Primary::of(&c).read(&c, &store), None, "nothing pushed yet");
        let t = SystemTime::now();
        store.apply(
            "st-active",
            Value::Number(1.0),
            t,
            super::super::Source::Event,
        );
        // A value under the control's own uuidAction is not its primary state.
        store.apply("ctl", Value::Number(0.0), t, super::super::Source::Read);
        let v = Primary::of(&c).read(&c, &store).unwrap();
        assert_eq!(v.value, Value::Number(1.0));
    }
}
