//! The simulator's own model of a house: every control and sub-control of a structure file
//! with its current state values, read straight from the JSON with `serde_json::Value`.
//!
//! Deliberately independent of `crate::loxone` and `crate::home`: the simulator is "another
//! Miniserver", so a misreading of the structure file in the client cannot hide behind the
//! same misreading here. State names are the keys of each control's `states` object; a state
//! that holds an array of UUIDs (IRoomController v1 `temperatures`) becomes one entry per
//! element, named `temperatures[0]`, `temperatures[1]`, ...

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::SimError;

/// A state value: numbers for the value-event table, text for the text-event table
/// (loxone-protocol.md §4.3).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    Num(f64),
    Text(String),
}

impl Val {
    pub(crate) fn num(&self) -> f64 {
        match self {
            Val::Num(n) => *n,
            Val::Text(t) => t
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .unwrap_or(0.0),
        }
    }
}

/// The control types the simulator gives behaviour to; anything else is `Other` (readable,
/// no commands).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    Switch,
    Pushbutton,
    TimedSwitch,
    Dimmer,
    EibDimmer,
    LightController,
    LightControllerV2,
    ColorPickerV2,
    CentralLightController,
    Jalousie,
    CentralJalousie,
    Gate,
    IRoomController,
    IRoomControllerV2,
    ClimateController,
    AudioZone,
    AudioZoneV2,
    CentralAudioZone,
    Alarm,
    CentralAlarm,
    SmokeAlarm,
    InfoOnlyAnalog,
    InfoOnlyDigital,
    PresenceDetector,
    WindowMonitor,
    Meter,
    UpDownDigital,
    UpDownAnalog,
    Slider,
    ValueSelector,
    Radio,
    TextInput,
    /// Door Controller (Loxone Intercom, custom camera): see `door.rs`.
    Intercom,
    IntercomV2,
    Other(String),
}

impl Kind {
    fn parse(t: &str) -> Kind {
        match t {
            "Switch" => Kind::Switch,
            "Pushbutton" => Kind::Pushbutton,
            "TimedSwitch" => Kind::TimedSwitch,
            "Dimmer" => Kind::Dimmer,
            "EIBDimmer" => Kind::EibDimmer,
            "LightController" => Kind::LightController,
            "LightControllerV2" => Kind::LightControllerV2,
            "ColorPickerV2" => Kind::ColorPickerV2,
            "CentralLightController" => Kind::CentralLightController,
            "Jalousie" => Kind::Jalousie,
            "CentralJalousie" => Kind::CentralJalousie,
            "Gate" => Kind::Gate,
            "IRoomController" => Kind::IRoomController,
            "IRoomControllerV2" => Kind::IRoomControllerV2,
            "ClimateController" => Kind::ClimateController,
            "AudioZone" => Kind::AudioZone,
            "AudioZoneV2" => Kind::AudioZoneV2,
            "CentralAudioZone" => Kind::CentralAudioZone,
            "Alarm" => Kind::Alarm,
            "CentralAlarm" => Kind::CentralAlarm,
            "SmokeAlarm" => Kind::SmokeAlarm,
            "InfoOnlyAnalog" => Kind::InfoOnlyAnalog,
            "InfoOnlyDigital" => Kind::InfoOnlyDigital,
            "PresenceDetector" => Kind::PresenceDetector,
            "WindowMonitor" => Kind::WindowMonitor,
            "Meter" => Kind::Meter,
            "UpDownDigital" => Kind::UpDownDigital,
            "UpDownAnalog" => Kind::UpDownAnalog,
            "Slider" => Kind::Slider,
            "ValueSelector" => Kind::ValueSelector,
            "Radio" => Kind::Radio,
            "TextInput" => Kind::TextInput,
            "Intercom" => Kind::Intercom,
            "IntercomV2" => Kind::IntercomV2,
            other => Kind::Other(other.to_string()),
        }
    }
}

/// Something moving towards a target over time (Jalousie, Gate), evaluated lazily: the
/// position is computed from `start` whenever the control is read or commanded.
#[derive(Debug, Clone)]
pub(crate) struct Motion {
    pub from: f64,
    pub to: f64,
    pub start: Instant,
    /// Time for a full 0..1 travel.
    pub travel: Duration,
}

impl Motion {
    /// Position at `now` (0..1) and whether the target is reached.
    pub(crate) fn at(&self, now: Instant) -> (f64, bool) {
        let dist = (self.to - self.from).abs();
        let travel = self.travel.as_secs_f64().max(1e-6);
        let done = now.saturating_duration_since(self.start).as_secs_f64() / travel;
        if done >= dist {
            (self.to, true)
        } else {
            (self.from + (self.to - self.from).signum() * done, false)
        }
    }
}

/// A room temperature drifting toward its target (IRoomController v1 and v2), evaluated
/// lazily like [`Motion`]: [`super::controls::settle`] advances it to the time of the read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Drift {
    /// °C per second (positive, finite).
    pub rate: f64,
    /// The simulated room temperature in °C; `tempActual` shows it in 0.1 °C steps.
    pub exact: f64,
    /// Up to when the drift has been applied.
    pub at: Instant,
}

/// One control or sub-control with its live state.
#[derive(Debug, Clone)]
pub(crate) struct Ctl {
    pub uuid: String,
    pub name: String,
    pub kind: Kind,
    pub details: Value,
    /// State names in the order of `/all` outputs: sorted by name, as serde_json's map
    /// (without `preserve_order`) yields them; a real Miniserver numbers its block outputs.
    pub state_names: Vec<String>,
    /// `(state name, state UUID)` as the structure file lists them (array states once per
    /// element, `temperatures[1]`); the WebSocket event tables are keyed by these UUIDs.
    pub state_uuids: Vec<(String, String)>,
    /// Current values, including a few internal ones not in the file (e.g. `manualTemperature`).
    pub states: HashMap<String, Val>,
    pub motion: Option<Motion>,
    /// Dimmer: the last non-zero position, restored by `on`.
    pub last_on: f64,
    /// Alarm `delayedon`: when arming completes. TimedSwitch `pulse`: when it switches off.
    pub deadline: Option<Instant>,
    /// `isSecured`: commands need the visualisation password (`jdev/sps/ios/...`).
    pub secured: bool,
    /// Room controllers: `tempActual` drifting toward `tempTarget` ([`House::start_drift`]).
    pub drift: Option<Drift>,
}

impl Ctl {
    pub(crate) fn get(&self, state: &str) -> f64 {
        self.states.get(state).map(Val::num).unwrap_or(0.0)
    }

    pub(crate) fn text(&self, state: &str) -> String {
        match self.states.get(state) {
            Some(Val::Text(t)) => t.clone(),
            Some(Val::Num(n)) => n.to_string(),
            None => String::new(),
        }
    }

    pub(crate) fn set(&mut self, state: &str, v: f64) {
        self.states.insert(state.to_string(), Val::Num(v));
    }

    pub(crate) fn set_text(&mut self, state: &str, t: impl Into<String>) {
        self.states.insert(state.to_string(), Val::Text(t.into()));
    }

    /// `details.<key>` as a number, if present.
    pub(crate) fn detail_num(&self, key: &str) -> Option<f64> {
        self.details.get(key).and_then(Value::as_f64)
    }

    /// UUIDs listed in `details.controls[].uuid` (Central* blocks).
    pub(crate) fn detail_controls(&self) -> Vec<String> {
        self.details
            .get("controls")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|c| c.get("uuid").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// All controls plus the lookup tables used for routing.
#[derive(Debug)]
pub(crate) struct House {
    pub ctls: Vec<Ctl>,
    by_uuid: HashMap<String, usize>,
    by_name: HashMap<String, Vec<usize>>,
}

/// States that carry text rather than numbers; they start as "" (or a type default).
const TEXT_STATES: &[&str] = &[
    "jLocked",
    "activeMoods",
    "moodList",
    "favoriteMoods",
    "additionalMoods",
    "circuitNames",
    "sceneList",
    "color",
    "sequence",
    "infoText",
    "autoInfoText",
    "overrideEntries",
    "modeList",
    "songName",
    "artist",
    "album",
    "station",
    "cover",
    "sourceList",
    "sensors",
    "windowStates",
    "text",
    "controls",
    "events",
    "temperatureBoundaryInfo",
    "favorites",
    "entries",
    "lastBellEvents",
    "lastBellTimestamp",
    "address",
    "answers",
    "videoSettingsIntern",
    "videoSettingsExtern",
];

impl House {
    /// Builds the house from a structure document and optional initial values
    /// (`{ "<uuidAction>": { "<state>": number | string | array | object } }`; arrays and
    /// objects are stored as their JSON text, as text states carry JSON on a real Miniserver).
    pub(crate) fn new(doc: &Value, values: Option<&Value>) -> Result<House, SimError> {
        let controls = doc
            .get("controls")
            .and_then(Value::as_object)
            .ok_or_else(|| SimError::Structure("no \"controls\" object".into()))?;
        let mut house = House {
            ctls: Vec::new(),
            by_uuid: HashMap::new(),
            by_name: HashMap::new(),
        };
        for (key, c) in controls {
            // A control left out (a duplicate) takes its sub-controls with it.
            if !house.add(key, c, true) {
                continue;
            }
            if let Some(subs) = c.get("subControls").and_then(Value::as_object) {
                for (skey, s) in subs {
                    house.add(skey, s, false);
                }
            }
        }
        if let Some(values) = values {
            let obj = values
                .as_object()
                .ok_or_else(|| SimError::Values("not a JSON object".into()))?;
            for (uuid, states) in obj {
                let idx = house
                    .index_of_uuid(uuid)
                    .ok_or_else(|| SimError::Values(format!("unknown control {uuid}")))?;
                let states = states
                    .as_object()
                    .ok_or_else(|| SimError::Values(format!("{uuid}: not an object")))?;
                for (name, v) in states {
                    let val = match v {
                        Value::Number(n) => Val::Num(n.as_f64().unwrap_or(0.0)),
                        Value::Bool(b) => Val::Num(f64::from(u8::from(*b))),
                        Value::String(s) => Val::Text(s.clone()),
                        Value::Null => continue,
                        other => Val::Text(other.to_string()),
                    };
                    house.ctls[idx].states.insert(name.clone(), val);
                }
            }
        }
        for c in &mut house.ctls {
            c.last_on = match (c.get("position"), c.get("max")) {
                (p, _) if p > 0.0 => p,
                (_, m) if m > 0.0 => m,
                _ => 100.0,
            };
            if c.kind == Kind::IRoomControllerV2 {
                let comfort = c.get("comfortTemperature");
                let mode = c.get("activeMode");
                c.states
                    .entry("manualTemperature".into())
                    .or_insert(Val::Num(comfort));
                c.states
                    .entry("scheduledMode".into())
                    .or_insert(Val::Num(mode));
            }
        }
        Ok(house)
    }

    /// Adds the control `c` (its key `key` in its map); `false` when it is left out: a
    /// control whose `uuidAction` (without regard to case) an earlier one has, as the product's
    /// structure reader does (the first in the file is kept, with a warning in the log).
    fn add(&mut self, key: &str, c: &Value, top_level: bool) -> bool {
        let uuid = c
            .get("uuidAction")
            .and_then(Value::as_str)
            .unwrap_or(key)
            .to_string();
        if self.by_uuid.contains_key(&uuid.to_lowercase()) {
            log::warn!("sim: structure file: {key}: uuidAction {uuid} is used by an earlier control; skipped");
            return false;
        }
        let kind = Kind::parse(c.get("type").and_then(Value::as_str).unwrap_or(""));
        let name = c
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut state_names = Vec::new();
        let mut state_uuids = Vec::new();
        let mut states = HashMap::new();
        if let Some(st) = c.get("states").and_then(Value::as_object) {
            for (sname, sv) in st {
                let names: Vec<String> = match sv {
                    Value::Array(a) => (0..a.len()).map(|i| format!("{sname}[{i}]")).collect(),
                    _ => vec![sname.clone()],
                };
                let uuids: Vec<Option<&str>> = match sv {
                    Value::Array(a) => a.iter().map(Value::as_str).collect(),
                    other => vec![other.as_str()],
                };
                for (n, u) in names.iter().zip(uuids) {
                    if let Some(u) = u {
                        state_uuids.push((n.clone(), u.to_lowercase()));
                    }
                }
                for n in names {
                    states.insert(n.clone(), default_value(&kind, &n, c.get("details")));
                    state_names.push(n);
                }
            }
        }
        let idx = self.ctls.len();
        self.by_uuid.insert(uuid.to_lowercase(), idx);
        if top_level {
            self.by_name.entry(name.clone()).or_default().push(idx);
        }
        self.ctls.push(Ctl {
            uuid,
            name,
            kind,
            details: c.get("details").cloned().unwrap_or(Value::Null),
            state_names,
            state_uuids,
            states,
            motion: None,
            last_on: 0.0,
            deadline: None,
            drift: None,
            secured: match c.get("isSecured") {
                Some(Value::Bool(b)) => *b,
                Some(Value::Number(n)) => n.as_f64().unwrap_or(0.0) != 0.0,
                Some(Value::String(s)) => matches!(s.trim(), "1" | "true"),
                _ => false,
            },
        });
        true
    }

    /// Lets the room temperature (`tempActual`) of every IRoomController and
    /// IRoomControllerV2 drift toward its `tempTarget` at `per_minute` °C per minute from
    /// `now` on. Zero, negative or non-finite rates leave the temperatures still.
    pub(crate) fn start_drift(&mut self, per_minute: f64, now: Instant) {
        if !(per_minute.is_finite() && per_minute > 0.0) {
            return;
        }
        for c in &mut self.ctls {
            if matches!(c.kind, Kind::IRoomController | Kind::IRoomControllerV2) {
                c.drift = Some(Drift {
                    rate: per_minute / 60.0,
                    exact: c.get("tempActual"),
                    at: now,
                });
            }
        }
    }

    /// Index of a control by `uuidAction` (case-insensitive).
    pub(crate) fn index_of_uuid(&self, uuid: &str) -> Option<usize> {
        self.by_uuid.get(&uuid.to_lowercase()).copied()
    }

    /// Indices of top-level controls with exactly this name.
    pub(crate) fn indices_of_name(&self, name: &str) -> &[usize] {
        self.by_name.get(name).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Index by uuid, else by a name that is unique.
    pub(crate) fn find(&self, key: &str) -> Option<usize> {
        self.index_of_uuid(key)
            .or_else(|| match self.indices_of_name(key) {
                [one] => Some(*one),
                _ => None,
            })
    }
}

/// Starting value of a state not given in the values file (`details`: the control's
/// structure-file details).
fn default_value(kind: &Kind, state: &str, details: Option<&Value>) -> Val {
    let detail = |k: &str| details.and_then(|d| d.get(k)).and_then(Value::as_f64);
    match (kind, state) {
        // A ValueSelector's range as its commands are clamped to (`bounds` in controls.rs):
        // the details' min/max, else 0-100. A range of 0 to 0 (a bare default) announced a
        // block that takes no value but 0, while the simulator took any value up to 100.
        (Kind::ValueSelector, "min") => Val::Num(detail("min").unwrap_or(0.0)),
        (Kind::ValueSelector, "max") => Val::Num(detail("max").unwrap_or(100.0)),
        (Kind::LightControllerV2, "activeMoods") => Val::Text("[778]".into()),
        (Kind::LightControllerV2, "moodList") => {
            Val::Text(r#"[{"name":"Viel Licht","shortName":"Hell","id":777,"static":true,"used":0,"t":0},{"name":"Aus","shortName":"Aus","id":778,"static":true,"used":0,"t":0}]"#.into())
        }
        (Kind::LightControllerV2, "activeMoodsNum") => Val::Num(778.0),
        (Kind::Dimmer, "max") => Val::Num(100.0),
        (Kind::Dimmer, "step") => Val::Num(1.0),
        // Loxone Config gives a ValueSelector step 1 by default.
        (Kind::ValueSelector, "step") => Val::Num(1.0),
        (Kind::IRoomControllerV2, "overrideEntries") => Val::Text("[]".into()),
        (_, "volumeStep") => Val::Num(3.0),
        (_, s) if TEXT_STATES.contains(&s) => Val::Text(String::new()),
        _ => Val::Num(0.0),
    }
}
