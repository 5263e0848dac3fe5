//! Every read path against the Miniserver, from outside (issue 13): the real `home-mcp serve`
//! on a simulated Miniserver serving the demo house and each real structure file, driven over
//! the simulator's HTTP API as a wall button or the Loxone app would. For one control of every
//! type whose primary state the Miniserver reports and accepts a command for, two changes
//! (1 s apart) must each show on every read path a client has:
//!
//! * `list_devices` (the device's `state`),
//! * the family status tool (`get_lights_status`, `get_blinds_status`, `get_climate_status`,
//!   `get_audio_status`, `get_security_status`, `get_sensors_status`, chosen by the family
//!   `list_devices` reports as `category`),
//! * `resources/read home://devices/{uuid}` (its `state`, and the raw pushed value of the
//!   primary state in `states`),
//! * a resource subscription: a `notifications/resources/updated` naming the URI on the
//!   session's GET stream, after which a read shows the new value,
//! * the dashboard API (`/dashboard/api/rooms`, the device's `state`).
//!
//! The oracle is the simulator's own state read back over its API (`jdev/sps/io/{uuid}/all`)
//! once the command has taken effect there, put in words by this file's own table of what
//! each type shows (the tool descriptions: lights on/off and level %, blinds % closed,
//! temperatures °C, ...), never by the product's code. How long each path took is printed,
//! not asserted (`cargo bench --bench live` holds the figures and the goal).
//!
//! Negative cases: a command that leaves every state of a control as it was (checked at the
//! Miniserver) is not announced and changes no read; controls that are never commanded are
//! never announced while the others change. Both are bounded by a fence (`fence`): two changes
//! of a marker control, each followed to its notification, made once the notifier's
//! documented coalescing window has passed, so that nothing held from before and nothing the
//! checked commands caused can still arrive after them.
//!
//! The simulated Miniserver moves blinds and gates in 300 ms instead of 20 s and lets a room's
//! temperature reach its target at the next look instead of 0.5 °C a minute, so a room
//! controller's temperature (its primary value) can be changed from outside by its setpoint.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use serde_json::{json, Map, Value};

use home_mcp::app::UPDATE_INTERVAL;
use home_mcp::home::Primary;
use home_mcp::sim::{SimConfig, DEMO_STRUCTURE, DEMO_VALUES, DEMO_VISU_PASSWORD};

use crate::support::fixture_app::FIXTURES;
use crate::support::mcp::McpHttp;
use crate::support::net::request;
use crate::support::server::{Miniserver, Served};
use crate::support::sse;
use crate::support::{fixture_text, wait_until, PATIENCE};

/// The read paths, in the order figures are printed.
const PATHS: [&str; 5] = [
    "list_devices",
    "family tool",
    "resources/read",
    "subscription",
    "dashboard",
];
const SUBSCRIPTION: usize = 3;

/// Types whose primary state a client cannot change from outside on the simulated
/// Miniserver, and why. A type with a primary state must be here or have [`targets`].
const NOT_DRIVABLE: &[(&str, &str)] = &[
    (
        "InfoOnlyAnalog",
        "a sensor input: the simulator takes no command for it",
    ),
    (
        "InfoOnlyDigital",
        "a sensor input: the simulator takes no command for it",
    ),
    (
        "PresenceDetector",
        "a sensor: the simulator takes no command for it",
    ),
    (
        "WindowMonitor",
        "window contacts: the simulator takes no command for it",
    ),
    ("Meter", "a meter: the simulator takes no command for it"),
    (
        "ClimateController",
        "its currentMode follows the season; no command sets it",
    ),
    (
        "SmokeAlarm",
        "its level only rises on smoke; commands only mute or clear it",
    ),
];

// ---------------------------------------------------------------- the test's own table

/// The Loxone state that is a type's primary value (loxone-protocol.md §5.3; for types the
/// documents do not cover, the first of `value`, `active`, `position` the control has), or
/// `None` for types without one (central blocks, UpDownDigital).
fn primary_state(kind: &str, states: &Map<String, Value>) -> Option<&'static str> {
    Some(match kind {
        "Switch" | "Pushbutton" | "InfoOnlyDigital" | "PresenceDetector" => "active",
        "TimedSwitch" => "deactivationDelay",
        "Dimmer" | "EIBDimmer" | "Jalousie" | "Gate" => "position",
        "LightController" => "activeScene",
        "LightControllerV2" => "activeMoods",
        "ColorPickerV2" | "Colorpicker" => "color",
        "IRoomController" | "IRoomControllerV2" => "tempActual",
        "ClimateController" => "currentMode",
        "AudioZone" | "AudioZoneV2" => "playState",
        "Alarm" => "armed",
        "SmokeAlarm" => "level",
        "InfoOnlyAnalog" | "Slider" | "ValueSelector" | "UpDownAnalog" | "LeftRightAnalog" => {
            "value"
        }
        "WindowMonitor" => "numOpen",
        "Meter" => "actual",
        "Radio" => "activeOutput",
        "TextInput" => "text",
        "UpDownDigital"
        | "CentralLightController"
        | "CentralJalousie"
        | "CentralAudioZone"
        | "CentralAlarm" => return None,
        _ => ["value", "active", "position"]
            .into_iter()
            .find(|s| states.contains_key(*s))?,
    })
}

fn num(v: &Value) -> Option<f64> {
    v.as_f64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// The first mood id of an `activeMoods` text (`"[777,2]"`), 778 (off) when empty.
fn first_mood(raw: &Value) -> f64 {
    raw.as_str()
        .unwrap_or("")
        .trim_matches(|c: char| c == '[' || c == ']' || c.is_whitespace())
        .split(',')
        .next()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(778.0)
}

/// Whether two raw values of a type's primary state are the same value for a client.
fn same(kind: &str, a: &Value, b: &Value) -> bool {
    match kind {
        "LightControllerV2" => first_mood(a) == first_mood(b),
        "TimedSwitch" => num(a).map(|x| x != 0.0) == num(b).map(|x| x != 0.0),
        _ => match (num(a), num(b)) {
            (Some(x), Some(y)) => (x - y).abs() < 1e-6,
            _ => a == b,
        },
    }
}

/// What `list_devices`, the device resource and the dashboard show as a device's `state`
/// for the raw primary value (the keys checked; a listing may add more, such as a unit).
fn words(kind: &str, raw: &Value) -> Fields {
    let x = num(raw);
    let on = |x: Option<f64>| json!(x.map(|x| x != 0.0));
    match kind {
        "Switch" | "Pushbutton" | "TimedSwitch" | "InfoOnlyDigital" => vec![("on", on(x))],
        "PresenceDetector" => vec![("presence", on(x))],
        "Dimmer" | "EIBDimmer" => vec![
            ("on", json!(x.map(|x| x > 0.0))),
            ("level", json!(x.map(round1))),
        ],
        "LightControllerV2" => {
            let m = first_mood(raw);
            vec![("on", json!(m != 778.0)), ("mood_id", json!(m))]
        }
        "LightController" => vec![("on", on(x)), ("scene", json!(x))],
        "Jalousie" => vec![("position", json!(x.map(|p| round1(p * 100.0))))],
        "Gate" => vec![("open_percent", json!(x.map(|p| round1(p * 100.0))))],
        "IRoomController" | "IRoomControllerV2" => vec![("temperature", json!(x.map(round1)))],
        "AudioZone" | "AudioZoneV2" => vec![("play_state", json!(x.map(play_word)))],
        "Alarm" => vec![("armed", on(x))],
        "WindowMonitor" => vec![("open", json!(x))],
        "Meter" => vec![("power", json!(x.map(round1)))],
        "TextInput" | "ColorPickerV2" => vec![("text", raw.clone())],
        _ => vec![("value", json!(x.map(round1)))],
    }
}

fn play_word(x: f64) -> &'static str {
    match x as i64 {
        2 => "playing",
        1 => "paused",
        _ => "stopped",
    }
}

/// Fields a read shows, by key.
type Fields = Vec<(&'static str, Value)>;

/// A family status tool, the list in its answer and the fields of a control's entry.
type FamilyView = (&'static str, &'static str, Fields);

/// The family status tool that lists a control of `kind` in family `family` (as
/// `list_devices` reports it), the list in its answer, and the fields it shows for the raw
/// primary value; `None` when no family tool lists such a control.
fn family_view(kind: &str, family: &str, raw: &Value) -> Option<FamilyView> {
    let x = num(raw);
    let light = |fields| Some(("get_lights_status", "lights", fields));
    match (kind, family) {
        ("Switch" | "Pushbutton" | "TimedSwitch", "lighting") => light(words(kind, raw)),
        ("Dimmer" | "EIBDimmer" | "LightController" | "LightControllerV2", _) => {
            light(words(kind, raw))
        }
        ("Jalousie", _) => Some((
            "get_blinds_status",
            "blinds",
            vec![("position", json!(x.map(|p| round1(p * 100.0))))],
        )),
        ("IRoomController" | "IRoomControllerV2", _) => Some((
            "get_climate_status",
            "zones",
            vec![("temperature", json!(x.map(round1)))],
        )),
        ("ClimateController", _) => Some((
            "get_climate_status",
            "climate_controllers",
            vec![("current_mode", json!(x))],
        )),
        ("AudioZone" | "AudioZoneV2", _) => Some((
            "get_audio_status",
            "zones",
            vec![("play_state", json!(x.map(play_word)))],
        )),
        ("Alarm", _) => Some((
            "get_security_status",
            "alarms",
            vec![("armed", json!(x.map(|x| x != 0.0)))],
        )),
        ("SmokeAlarm", _) => Some((
            "get_security_status",
            "smoke_alarms",
            vec![("level", json!(x))],
        )),
        ("Gate", _) => Some((
            "get_security_status",
            "access",
            vec![("open_percent", json!(x.map(|p| round1(p * 100.0))))],
        )),
        ("InfoOnlyDigital" | "PresenceDetector", _) => Some((
            "get_sensors_status",
            "sensors",
            vec![("value", json!(x.map(|x| x != 0.0)))],
        )),
        ("WindowMonitor", _) => Some(("get_sensors_status", "sensors", vec![("value", json!(x))])),
        ("InfoOnlyAnalog" | "Meter", _) => Some((
            "get_sensors_status",
            "sensors",
            vec![("value", json!(x.map(round1)))],
        )),
        _ => None,
    }
}

/// A control of the structure file (the test's input) with what the Miniserver reports.
#[derive(Debug, Clone)]
struct Ctl {
    uuid: String,
    name: String,
    kind: String,
    secured: bool,
    details: Value,
    /// The primary state's name.
    state: &'static str,
    /// The family `list_devices` reports (`category`).
    family: String,
}

impl Ctl {
    fn uri(&self) -> String {
        format!("home://devices/{}", self.uuid)
    }
}

/// A number within `lo..hi` at `f` of the way, rounded to 0.1 (and never 0: a dimmer at 0 is off).
fn between(lo: f64, hi: f64, f: f64) -> f64 {
    (round1(lo + (hi - lo) * f)).max(0.1)
}

/// The bounds of a value block: its `min`/`max` states (ValueSelector, Dimmer) when they
/// make a range, else `details.min`/`max`, else 0..100.
fn bounds(c: &Ctl, states: &Map<String, Value>) -> (f64, f64) {
    let st = |k: &str| states.get(k).and_then(num);
    let det = |k: &str| c.details.get(k).and_then(num);
    match (st("min"), st("max")) {
        (Some(lo), Some(hi)) if hi > lo && c.kind != "Slider" => (lo, hi),
        _ => match (det("min"), det("max")) {
            (Some(lo), Some(hi)) if hi > lo => (lo, hi),
            _ => (0.0, 100.0),
        },
    }
}

/// Commands sent once before the changes (a room controller to manual mode, so that its
/// setpoint is the manual temperature).
fn setup(c: &Ctl) -> Vec<String> {
    match c.kind.as_str() {
        "IRoomControllerV2" => vec!["setOperatingMode/3".into()],
        _ => Vec::new(),
    }
}

/// Two commands and the raw primary value each leaves at the Miniserver, for a control of
/// a drivable type; `None` when the control cannot be changed from outside.
fn targets(c: &Ctl, states: &Map<String, Value>) -> Option<[(String, Value); 2]> {
    let n = |cmd: &str, v: f64| (cmd.to_string(), json!(v));
    Some(match c.kind.as_str() {
        "Switch" | "Pushbutton" => [n("on", 1.0), n("off", 0.0)],
        "TimedSwitch" => [n("on", -1.0), n("off", 0.0)],
        "Dimmer" | "EIBDimmer" => {
            let (lo, hi) = if c.kind == "Dimmer" {
                let hi = states.get("max").and_then(num).filter(|m| *m > 0.0);
                let hi = hi.unwrap_or(100.0);
                (states.get("min").and_then(num).unwrap_or(0.0), hi)
            } else {
                (0.0, 100.0)
            };
            let (a, b) = (between(lo, hi, 0.3), between(lo, hi, 0.7));
            [n(&a.to_string(), a), n(&b.to_string(), b)]
        }
        "LightController" => [n("on", 9.0), n("off", 0.0)],
        "LightControllerV2" => [
            ("changeTo/777".into(), json!("[777]")),
            ("changeTo/778".into(), json!("[778]")),
        ],
        "Jalousie" => [n("manualPosition/30", 0.3), n("manualPosition/70", 0.7)],
        "Gate" => [n("open", 1.0), n("close", 0.0)],
        "IRoomControllerV2" => [
            n("setManualTemperature/19.5", 19.5),
            n("setManualTemperature/23.5", 23.5),
        ],
        "IRoomController" => {
            let ix = states.get("currHeatTempIx").and_then(num).unwrap_or(0.0) as i64;
            states.get(&format!("temperatures[{ix}]"))?;
            [
                n(&format!("settemp/{ix}/19.5"), 19.5),
                n(&format!("settemp/{ix}/23.5"), 23.5),
            ]
        }
        "AudioZone" | "AudioZoneV2" => [n("play", 2.0), n("pause", 1.0)],
        "Alarm" => [n("on", 1.0), n("off", 0.0)],
        "Slider" | "ValueSelector" | "UpDownAnalog" | "LeftRightAnalog" => {
            let (lo, hi) = bounds(c, states);
            let (a, b) = (between(lo, hi, 0.3), between(lo, hi, 0.7));
            [n(&a.to_string(), a), n(&b.to_string(), b)]
        }
        "Radio" => {
            let mut ids: Vec<i64> = c
                .details
                .get("outputs")
                .and_then(Value::as_object)
                .map(|o| o.keys().filter_map(|k| k.parse().ok()).collect())
                .unwrap_or_default();
            ids.sort_unstable();
            let first = *ids.first()?;
            [n(&first.to_string(), first as f64), n("0", 0.0)]
        }
        "TextInput" => [
            ("read-paths-one".into(), json!("read-paths-one")),
            ("read-paths-two".into(), json!("read-paths-two")),
        ],
        _ => return None,
    })
}

/// A command that sets the value the control has now (nothing changes at the Miniserver,
/// which the caller checks), or `None`.
fn noop(c: &Ctl, states: &Map<String, Value>) -> Option<String> {
    let raw = states.get(c.state)?;
    let x = num(raw);
    Some(match c.kind.as_str() {
        "Switch" | "Pushbutton" | "Alarm" => (if x? != 0.0 { "on" } else { "off" }).into(),
        "TimedSwitch" => match x? {
            0.0 => "off".into(),
            d if d < 0.0 => "on".into(),
            _ => return None,
        },
        "Dimmer" | "EIBDimmer" if x? == 0.0 => "off".into(),
        "Dimmer" | "EIBDimmer" | "Slider" | "ValueSelector" | "UpDownAnalog"
        | "LeftRightAnalog" | "Radio" | "LightController" => format!("{}", x?),
        "LightControllerV2" => format!("changeTo/{}", first_mood(raw)),
        "Jalousie" => format!("manualPosition/{}", round1(x? * 100.0)),
        "Gate" if x? == 1.0 => "open".into(),
        "Gate" if x? == 0.0 => "close".into(),
        "IRoomControllerV2" => format!(
            "setManualTemperature/{}",
            states.get("manualTemperature").and_then(num)?
        ),
        "AudioZone" | "AudioZoneV2" => match x? as i64 {
            2 => "play".into(),
            1 => "pause".into(),
            _ => "stop".into(),
        },
        "TextInput" => match raw.as_str() {
            Some(t) if !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric()) => t.into(),
            _ => return None,
        },
        _ => return None,
    })
}

// ---------------------------------------------------------------- reading like a client

/// The notifications of one subscribed session, with the time each arrived.
struct Notes {
    rx: Receiver<(Instant, String)>,
    /// Every `notifications/resources/updated` seen so far: arrival and URI.
    log: Vec<(Instant, String)>,
}

impl Notes {
    /// Subscribes `mcp`'s session to `uris` and opens its GET stream; a thread stamps each
    /// `notifications/resources/updated` with its arrival time.
    fn open(mcp: &mut McpHttp, uris: &[String]) -> Notes {
        for uri in uris {
            let r = mcp.rpc("resources/subscribe", json!({"uri": uri}));
            assert_eq!(r["result"], json!({}), "subscribed to {uri}: {r}");
        }
        let sid = mcp.session.clone().expect("a session");
        let mut g = sse::open_get(mcp.addr, &sid, None);
        assert_eq!(g.status, 200, "the GET stream opens");
        sse::expect_prelude(&mut g);
        let events = g.events();
        let (tx, rx) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            for e in events {
                let at = Instant::now();
                if let Some(why) = &e.error {
                    let _ = tx.send((at, format!("!stream failed: {why}")));
                    return;
                }
                let v = e.json();
                if v["method"] == "notifications/resources/updated" {
                    let uri = v["params"]["uri"].as_str().unwrap_or("?").to_string();
                    if tx.send((at, uri)).is_err() {
                        return;
                    }
                }
            }
        });
        Notes {
            rx,
            log: Vec::new(),
        }
    }

    /// Takes in what has arrived; fails when the stream failed.
    fn drain(&mut self) {
        while let Ok((at, uri)) = self.rx.try_recv() {
            assert!(!uri.starts_with('!'), "{uri}");
            self.log.push((at, uri));
        }
    }
}

/// Reads the server as its clients do.
struct Reads {
    mcp: McpHttp,
    addr: std::net::SocketAddr,
}

impl Reads {
    fn new(served: &Served) -> Reads {
        Reads {
            mcp: McpHttp::connect(served.addr, None),
            addr: served.addr,
        }
    }

    /// `list_devices` (all of them): entry by UUID.
    fn listed(&mut self) -> BTreeMap<String, Value> {
        let data = self.mcp.ok("list_devices", json!({"limit": 500}));
        let all = data["devices"].as_array().expect("devices");
        assert_eq!(data["total"].as_u64(), Some(all.len() as u64), "all listed");
        all.iter()
            .map(|d| (d["uuid"].as_str().unwrap().to_string(), d.clone()))
            .collect()
    }

    /// One family tool's entries by UUID from its list `list`.
    fn family(&mut self, tool: &str, list: &str) -> BTreeMap<String, Value> {
        let data = self.mcp.ok(tool, json!({"limit": 500}));
        data[list]
            .as_array()
            .unwrap_or_else(|| panic!("{tool} has no {list}: {data}"))
            .iter()
            .map(|d| (d["uuid"].as_str().unwrap().to_string(), d.clone()))
            .collect()
    }

    /// `resources/read home://devices/{uuid}`: the resource's JSON.
    fn resource(&mut self, c: &Ctl) -> Value {
        let r = self.mcp.rpc("resources/read", json!({"uri": c.uri()}));
        let text = r["result"]["contents"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("resources/read {}: {r}", c.uri()));
        serde_json::from_str(text).expect("the resource is JSON")
    }

    /// `/dashboard/api/rooms`: device by UUID.
    fn dashboard(&self) -> BTreeMap<String, Value> {
        let r = request::<&str>(self.addr, "GET", "/dashboard/api/rooms", &[], "");
        assert_eq!(r.status, 200, "the dashboard API answers: {r:?}");
        let v = r.json();
        let mut out = BTreeMap::new();
        for room in v["rooms"].as_array().expect("rooms") {
            for d in room["devices"].as_array().expect("devices") {
                out.insert(d["uuid"].as_str().unwrap().to_string(), d.clone());
            }
        }
        out
    }
}

/// Whether `got` (an object) has each expected field (numbers within 0.01).
fn shows(want: &[(&str, Value)], got: &Value) -> bool {
    want.iter().all(|(k, w)| {
        let g = &got[*k];
        match (w.as_f64(), g.as_f64()) {
            (Some(a), Some(b)) => (a - b).abs() < 0.01,
            _ => w == g,
        }
    })
}

/// What every read path should show for `c` given its raw primary value at the Miniserver.
#[derive(Debug, Clone)]
struct Expected {
    raw: Value,
    words: Fields,
    family: Option<FamilyView>,
}

fn expected(c: &Ctl, raw: &Value) -> Expected {
    Expected {
        raw: raw.clone(),
        words: words(&c.kind, raw),
        family: family_view(&c.kind, &c.family, raw),
    }
}

/// Checks the polled read paths (all but the subscription) of `c`; `Err` with what the
/// first path that disagrees shows. `paths` selects them by index into [`PATHS`].
fn check_paths(
    r: &mut Reads,
    c: &Ctl,
    want: &Expected,
    paths: &[usize],
    cache: &mut Snapshot,
) -> Result<(), (usize, String)> {
    for &p in paths {
        let ok = match p {
            0 => {
                let d = cache.listed(r).get(&c.uuid).cloned().unwrap_or(Value::Null);
                shows(&want.words, &d["state"]).then_some(()).ok_or(d)
            }
            1 => match &want.family {
                None => Ok(()),
                Some((tool, list, fields)) => {
                    let d = cache
                        .family(r, tool, list)
                        .get(&c.uuid)
                        .cloned()
                        .unwrap_or(Value::Null);
                    shows(fields, &d).then_some(()).ok_or(d)
                }
            },
            2 => {
                let v = r.resource(c);
                let live = &v["states"][c.state]["live"]["value"];
                let same_raw = same(&c.kind, live, &want.raw);
                (shows(&want.words, &v["state"]) && same_raw)
                    .then_some(())
                    .ok_or(json!({"state": v["state"], "live": live}))
            }
            4 => {
                let d = cache
                    .dashboard(r)
                    .get(&c.uuid)
                    .cloned()
                    .unwrap_or(Value::Null);
                shows(&want.words, &d["state"]).then_some(()).ok_or(d)
            }
            _ => Ok(()),
        };
        if let Err(seen) = ok {
            return Err((p, format!("{} shows {seen}, want {want:?}", PATHS[p])));
        }
    }
    Ok(())
}

/// Answers of the listing paths, read at most once per probe (many controls are checked
/// against one answer).
#[derive(Default)]
struct Snapshot {
    listed: Option<BTreeMap<String, Value>>,
    family: BTreeMap<String, BTreeMap<String, Value>>,
    dashboard: Option<BTreeMap<String, Value>>,
}

impl Snapshot {
    fn listed(&mut self, r: &mut Reads) -> &BTreeMap<String, Value> {
        self.listed.get_or_insert_with(|| r.listed())
    }
    fn family(&mut self, r: &mut Reads, tool: &str, list: &str) -> &BTreeMap<String, Value> {
        self.family
            .entry(format!("{tool}/{list}"))
            .or_insert_with(|| r.family(tool, list))
    }
    fn dashboard(&mut self, r: &mut Reads) -> &BTreeMap<String, Value> {
        self.dashboard.get_or_insert_with(|| r.dashboard())
    }
}

// ---------------------------------------------------------------- the house under test

struct Bench {
    what: String,
    ms: Miniserver,
    _served: Served,
    reads: Reads,
}

impl Bench {
    fn start(what: &str, structure: &str, values: Option<&str>) -> Bench {
        let config = SimConfig {
            blind_travel: Duration::from_millis(300),
            temp_drift_per_minute: 1e9,
            ..SimConfig::default()
        };
        let ms = Miniserver::start(structure, values, config);
        let served = Served::start(&ms, "", &[]);
        served.wait_link("websocket");
        let reads = Reads::new(&served);
        Bench {
            what: what.to_string(),
            ms,
            _served: served,
            reads,
        }
    }

    /// The Miniserver's states of `c`.
    fn states(&self, c: &Ctl) -> Map<String, Value> {
        self.ms.api.states(&c.uuid)
    }

    fn send(&self, c: &Ctl, command: &str) {
        if c.secured {
            self.ms
                .api
                .secured_command(&c.uuid, command, DEMO_VISU_PASSWORD);
        } else {
            self.ms.api.command(&c.uuid, command);
        }
    }

    /// Waits until the Miniserver's primary value of `c` is `target` (a blind has arrived);
    /// what every path should show then, from the Miniserver's answer.
    fn settled(&self, c: &Ctl, target: &Value) -> Expected {
        let raw = wait_until(
            &format!("{}: {} ({}) at {target}", self.what, c.name, c.kind),
            PATIENCE,
            || {
                let raw = self.states(c).get(c.state).cloned().unwrap_or(Value::Null);
                if same(&c.kind, &raw, target) {
                    Ok(raw)
                } else {
                    Err(raw)
                }
            },
        );
        expected(c, &raw)
    }

    /// Waits until every control in `controls` shows the Miniserver's current value on every
    /// polled path.
    fn all_agree(&mut self, controls: &[Ctl], when: &str) {
        let what = format!(
            "{}: every read path shows the Miniserver's values ({when})",
            self.what
        );
        wait_until(&what, PATIENCE, || {
            let mut snap = Snapshot::default();
            for c in controls {
                let raw = self.states(c).get(c.state).cloned().unwrap_or(Value::Null);
                let want = expected(c, &raw);
                check_paths(&mut self.reads, c, &want, &[0, 1, 2, 4], &mut snap)
                    .map_err(|(_, why)| format!("{} ({}): {why}", c.name, c.kind))?;
            }
            Ok::<(), String>(())
        });
    }
}

/// Latencies of one change, per path.
struct Followed {
    ctl: String,
    kind: String,
    change: usize,
    /// `None` where the path does not show this control (no family tool lists it).
    took: [Option<Duration>; 5],
}

/// After a change of `c` sent at `t0`: waits until every path shows `want`; how long each
/// took from `t0` (the subscription: until the notification after which a read showed it),
/// `None` for a path that does not show the control.
fn follow(
    b: &mut Bench,
    notes: &mut Notes,
    c: &Ctl,
    t0: Instant,
    want: &Expected,
) -> [Option<Duration>; 5] {
    let mut took: [Option<Duration>; 5] = [None; 5];
    if want.family.is_none() {
        took[1] = Some(Duration::ZERO);
    }
    // Notifications already looked at.
    let mut seen = notes.log.len();
    let uri = c.uri();
    let what = format!(
        "{}: every read path to show {} ({}) at {:?}",
        b.what, c.name, c.kind, want.words
    );
    wait_until(&what, PATIENCE, || {
        let mut snap = Snapshot::default();
        for p in [0, 1, 2, 4] {
            if took[p].is_none() && check_paths(&mut b.reads, c, want, &[p], &mut snap).is_ok() {
                took[p] = Some(t0.elapsed());
            }
        }
        if took[SUBSCRIPTION].is_none() {
            notes.drain();
            let latest = notes.log[seen..]
                .iter()
                .rev()
                .find(|(at, u)| *u == uri && *at >= t0)
                .map(|(at, _)| *at);
            seen = notes.log.len();
            if let Some(at) = latest {
                // A client hears of an update and reads the resource.
                if check_paths(&mut b.reads, c, want, &[2], &mut snap).is_ok() {
                    took[SUBSCRIPTION] = Some(at.duration_since(t0));
                }
            }
        }
        if took.iter().all(Option::is_some) {
            let mut shown = took;
            if want.family.is_none() {
                shown[1] = None;
            }
            return Ok(shown);
        }
        let missing: Vec<&str> = (0..5)
            .filter(|p| took[*p].is_none())
            .map(|p| PATHS[p])
            .collect();
        let mut snap = Snapshot::default();
        let why = check_paths(&mut b.reads, c, want, &[0, 1, 2, 4], &mut snap).err();
        Err((missing, why))
    })
}

/// Changes `c` at the Miniserver (to the target it is not at) and follows it on every
/// path: when the command was sent and how long each path took.
fn change(b: &mut Bench, notes: &mut Notes, c: &Ctl) -> (Instant, [Option<Duration>; 5]) {
    let states = b.states(c);
    let t = targets(c, &states).expect("a drivable type");
    let (cmd, target) = if same(&c.kind, &states[c.state], &t[0].1) {
        t[1].clone()
    } else {
        t[0].clone()
    };
    let t0 = Instant::now();
    b.send(c, &cmd);
    let want = b.settled(c, &target);
    (t0, follow(b, notes, c, t0, &want))
}

/// Makes sure no notification from before is still on its way: the notifier holds a URI's
/// second update for [`UPDATE_INTERVAL`] after its first (the product's documented
/// coalescing), so once that long has passed since the last notification (or the
/// subscription), every held one is due; a change of `marker` then makes the notifier
/// send what is due, and a second change, made after the first one's notification arrived,
/// comes after all of it on the stream.
fn fence(b: &mut Bench, notes: &mut Notes, marker: &Ctl, subscribed: Instant) {
    loop {
        notes.drain();
        let last = notes.log.last().map_or(subscribed, |(at, _)| *at);
        // Waiting out the product's coalescing window (a documented interval, not a guess
        // at how long a thread needs): the marker changes below are the actual fence.
        match (last.max(subscribed) + UPDATE_INTERVAL).checked_duration_since(Instant::now()) {
            Some(left) => std::thread::sleep(left),
            None => break,
        }
    }
    change(b, notes, marker);
    change(b, notes, marker);
}

/// The whole check on one house.
fn every_read_path_follows_the_miniserver(what: &str, structure: &str, values: Option<&str>) {
    let mut b = Bench::start(what, structure, values);
    let doc: Value = serde_json::from_str(structure).expect("the structure file is JSON");
    let listed = b.reads.listed();

    // The controls with a primary value at the Miniserver (top-level: what the listings show).
    let mut controls: Vec<Ctl> = Vec::new();
    for (uuid, c) in doc["controls"].as_object().expect("controls") {
        let kind = c["type"].as_str().unwrap_or("").to_string();
        // The states the structure file names (the Miniserver reports these).
        let named = c["states"].as_object().cloned().unwrap_or_default();
        let Some(state) = primary_state(&kind, &named) else {
            continue;
        };
        if !b.ms.api.states(uuid).contains_key(state) {
            continue;
        }
        let entry = listed
            .get(uuid)
            .unwrap_or_else(|| panic!("{what}: {uuid} is not listed"));
        controls.push(Ctl {
            uuid: uuid.clone(),
            name: c["name"].as_str().unwrap_or("").to_string(),
            kind,
            secured: c["isSecured"].as_bool().unwrap_or(false),
            details: c["details"].clone(),
            state,
            family: entry["category"].as_str().unwrap_or("").to_string(),
        });
    }
    assert!(
        !controls.is_empty(),
        "{what}: no control has a primary state"
    );

    // The product's table of primary states agrees on which controls have one.
    let home = home_mcp::loxone::structure::parse_structure(structure).expect("parses");
    let ours: BTreeSet<&str> = controls.iter().map(|c| c.uuid.as_str()).collect();
    let product: BTreeSet<&str> = home
        .controls
        .iter()
        .filter(|c| Primary::of(c) != Primary::None)
        .map(|c| c.uuid.as_str())
        .collect();
    assert_eq!(ours, product, "{what}: controls with a primary state");

    // One control per type that can be changed from outside; every other type is known to
    // be read-only at the Miniserver.
    let mut reps: Vec<Ctl> = Vec::new();
    let mut undrivable: BTreeSet<String> = BTreeSet::new();
    for c in &controls {
        if reps.iter().any(|r| r.kind == c.kind) {
            continue;
        }
        if targets(c, &b.states(c)).is_some() {
            reps.push(c.clone());
        } else {
            assert!(
                NOT_DRIVABLE.iter().any(|(k, _)| *k == c.kind) || is_unknown_type(&c.kind),
                "{what}: {} ({}) has a primary state but no way to change it from outside",
                c.name,
                c.kind
            );
            undrivable.insert(c.kind.clone());
        }
    }
    let undrivable: BTreeSet<String> = undrivable
        .into_iter()
        .filter(|k| !reps.iter().any(|r| &r.kind == k))
        .collect();
    assert!(
        reps.len() >= 2,
        "{what}: too few types to change from outside: {reps:?}"
    );
    // The marker of the negative cases comes first: a type whose command changes one state
    // (its own no-op is then checked in the other houses).
    reps.sort_by_key(|c| {
        !matches!(
            c.kind.as_str(),
            "Switch" | "Pushbutton" | "Slider" | "Dimmer" | "TextInput"
        )
    });

    for c in &reps {
        for cmd in setup(c) {
            b.send(c, &cmd);
        }
    }
    // Before: every path shows every control as the Miniserver has it (the initial tables
    // may still be arriving).
    b.all_agree(&controls, "before");

    // A session subscribed to every control with a primary state, its GET stream open.
    let uris: Vec<String> = controls.iter().map(Ctl::uri).collect();
    let mut session = McpHttp::connect(b.reads.addr, None);
    let subscribed = Instant::now();
    let mut notes = Notes::open(&mut session, &uris);
    // The first representative is the marker of the negative cases.
    let marker = reps[0].clone();

    // Negative: commands that change nothing at the Miniserver (checked there) are not
    // announced. Fenced on both sides (see `fence`): nothing announced before is still held
    // when they are sent, and whatever they caused has arrived when the check is made.
    fence(&mut b, &mut notes, &marker, subscribed);
    let quiet_from = notes.log.len();
    let mut noops: Vec<Ctl> = Vec::new();
    for c in &reps[1..] {
        let before = b.states(c);
        let Some(cmd) = noop(c, &before) else {
            continue;
        };
        b.send(c, &cmd);
        if b.states(c) == before {
            noops.push(c.clone());
        }
    }
    fence(&mut b, &mut notes, &marker, subscribed);
    let heard: Vec<&String> = notes.log[quiet_from..]
        .iter()
        .map(|(_, u)| u)
        .filter(|u| noops.iter().any(|c| &c.uri() == *u))
        .collect();
    assert_eq!(
        heard,
        Vec::<&String>::new(),
        "{what}: announced after a command that changed nothing"
    );
    // And their reads still show what the Miniserver has (unchanged).
    b.all_agree(&noops, "after commands that changed nothing");

    // Two changes per representative, 1 s apart (round 1 for all, then round 2).
    let mut figures: Vec<Followed> = Vec::new();
    let mut first_sent: Vec<Instant> = Vec::new();
    for round in 0..2 {
        for (i, c) in reps.iter().enumerate() {
            if round == 1 {
                // A person's second press, a second after the first (realism only: the
                // verdict does not depend on it).
                let due = first_sent[i] + Duration::from_secs(1);
                if let Some(left) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(left);
                }
            }
            let (t0, took) = change(&mut b, &mut notes, c);
            if round == 0 {
                first_sent.push(t0);
            }
            figures.push(Followed {
                ctl: c.name.clone(),
                kind: c.kind.clone(),
                change: round + 1,
                took,
            });
        }
    }

    // Negative: controls nobody changed were never announced while the others changed (from
    // the first fence on; what came before was the initial tables arriving).
    fence(&mut b, &mut notes, &marker, subscribed);
    let commanded: BTreeSet<String> = reps.iter().map(Ctl::uri).collect();
    let bystanders: Vec<&String> = notes.log[quiet_from..]
        .iter()
        .map(|(_, u)| u)
        .filter(|u| !commanded.contains(*u))
        .collect();
    assert_eq!(
        bystanders,
        Vec::<&String>::new(),
        "{what}: controls nobody changed were announced"
    );
    // After: every path shows every control as the Miniserver has it.
    b.all_agree(&controls, "after");

    report(what, &reps, &noops, &undrivable, &controls, &figures);
}

/// Types the product does not know by name (their primary state is the first of `value`,
/// `active`, `position`); the simulator takes no command for them.
fn is_unknown_type(kind: &str) -> bool {
    !matches!(
        kind,
        "Switch"
            | "Pushbutton"
            | "TimedSwitch"
            | "Dimmer"
            | "EIBDimmer"
            | "LightController"
            | "LightControllerV2"
            | "ColorPickerV2"
            | "Jalousie"
            | "Gate"
            | "IRoomController"
            | "IRoomControllerV2"
            | "AudioZone"
            | "AudioZoneV2"
            | "Alarm"
            | "Slider"
            | "ValueSelector"
            | "UpDownAnalog"
            | "LeftRightAnalog"
            | "Radio"
            | "TextInput"
    )
}

fn ms(d: Duration) -> String {
    format!("{:.0}", d.as_secs_f64() * 1e3)
}

/// Prints what was covered and the latency of each path per change (figures, not verdicts).
fn report(
    what: &str,
    reps: &[Ctl],
    noops: &[Ctl],
    undrivable: &BTreeSet<String>,
    controls: &[Ctl],
    figures: &[Followed],
) {
    let mut out = format!(
        "read paths, {what}: {} controls with a primary state checked before and after; \
         changed from outside: {}; not changeable from outside: {}; no-op checked: {}\n",
        controls.len(),
        reps.iter()
            .map(|c| c.kind.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        undrivable.iter().cloned().collect::<Vec<_>>().join(", "),
        noops
            .iter()
            .map(|c| c.kind.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    );
    out.push_str(&format!(
        "  {:<22} {:<6} {}\n",
        "type (control)",
        "change",
        PATHS.map(|p| format!("{p:>16}")).join("")
    ));
    for f in figures {
        out.push_str(&format!(
                "  {:<22} {:<6} {}   ({})\n",
                f.kind,
                f.change,
                f.took
                    .map(|d| d
                        .map_or_else(|| format!("{:>16}", "n/a"), |d| format!("{:>13} ms", ms(d))))
                    .join(""),
                f.ctl
            ));
    }
    for (p, name) in PATHS.iter().enumerate() {
        let mut all: Vec<Duration> = figures.iter().filter_map(|f| f.took[p]).collect();
        all.sort();
        if all.is_empty() {
            continue;
        }
        let at = |q: f64| all[((all.len() as f64 * q).ceil() as usize).clamp(1, all.len()) - 1];
        out.push_str(&format!(
            "  {name:<14} p50 {:>5} ms  max {:>5} ms  within 1 s: {}/{}\n",
            ms(at(0.5)),
            ms(at(1.0)),
            all.iter().filter(|d| **d <= Duration::from_secs(1)).count(),
            all.len()
        ));
    }
    println!("{out}");
}

#[test]
fn every_read_path_follows_the_demo_house() {
    every_read_path_follows_the_miniserver("demo", DEMO_STRUCTURE, Some(DEMO_VALUES));
}

#[test]
fn every_read_path_follows_the_smarteon_sample_app() {
    let f = FIXTURES[0];
    every_read_path_follows_the_miniserver(f, &fixture_text(f), None);
}

#[test]
fn every_read_path_follows_the_smarteon_showroom() {
    let f = FIXTURES[1];
    every_read_path_follows_the_miniserver(f, &fixture_text(f), None);
}

#[test]
fn every_read_path_follows_the_solarnetwork_house() {
    let f = FIXTURES[2];
    every_read_path_follows_the_miniserver(f, &fixture_text(f), None);
}

#[test]
fn every_read_path_follows_the_uk_demo_miniserver() {
    let f = FIXTURES[3];
    every_read_path_follows_the_miniserver(f, &fixture_text(f), None);
}
