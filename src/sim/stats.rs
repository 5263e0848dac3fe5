//! The simulator's statistics: a seeded, deterministic history for every control whose entry
//! in the structure file declares `statistic` (V1) or `statisticV2` (V2), served the way a
//! Miniserver serves its SD card's recordings (statistics.md A1, A2, A4).
//!
//! Like the rest of the simulator it reads the structure JSON itself (never `crate::home` or
//! `crate::loxone`), so a misreading in the client cannot hide behind the same misreading here.
//!
//! **The history.** It begins at local midnight on the first day of the month thirteen
//! months before the simulator started ([`Calendar::start`]) and grows with the clock up to
//! now. Three things every house's history has, at fixed places relative to that start:
//! - a **month without data** ([`Calendar::gap`]): the local calendar month four months
//!   before the current one; the Miniserver was off, so nothing was recorded and counters did
//!   not advance (a V1 file for it is missing, V2 has no records in it);
//! - a **counter reset** ([`Calendar::reset`]): at 12:00 local time on the 15th of the month
//!   seven months back every counter (meter `total`, `totalNeg`) falls to 0 and counts on from
//!   there, as after a meter's `reset` command or a replaced meter;
//! - the house's **daylight-saving changes**: the records follow the simulator's time zone
//!   ([`super::SimConfig::time_zone`], Europe/Berlin by default), so the history holds a
//!   23-hour and a 25-hour local day; V1 records are stamped in local wall time (the repeated
//!   autumn hour appears twice, the spring hour not at all), V2 in Unix UTC, and `diff`
//!   buckets run from local midnight to local midnight.
//!
//! **What is recorded** follows the declaration: V1 every output of `statistic.outputs`
//! (a Meter's two in the order `total`, `actual`, as a live export names them
//! "Gesamtverbrauch,Leistung"; any other control's first output its primary state), V2 every
//! data point of every group by its `output` (a state name). Recording intervals follow the
//! V1 `frequency` and the V2 `mode` (8/9/10/11/12: every 5/10/30/60/15 minutes; "every change"
//! records digital states at each change, analog ones every 15 minutes). What a state carries
//! comes from the control: a Meter's `actual` (kW) and `total`/`totalNeg` (kWh counters) by its
//! role (a `bidirectional` meter is the grid connection, a name with PV/Solar production, with
//! Wallbox/Lade a car charger, else a consumer); temperatures indoors, outdoors or in a
//! cellar by unit and name; humidity, brightness, room controller targets; switches, door
//! contacts and presence as daily habits. Values are functions of the time and a seed (hash
//! noise, no random generator), so every run and every reader sees the same series.
//!
//! **Served** (the router hooks in `http.rs` and `ws.rs`): `jdev/sps/getStatisticInfo/{uuid}`,
//! `dev|jdev/sps/getStatistic/{uuid}/{raw|diff}/{from}/{until}/{unit}/{group}[/{output}]`
//! over HTTP and the WebSocket (little-endian u32 Unix time + f64 per output; an empty body
//! for no records), `stats/statisticdata.xml/{uuid}/{YYYYMM|YYYYMMDD}`, `stats/{uuid}.{YYYYMM}.xml`
//! and `stats/{uuid}_{group}.{YYYYMM}.xml` (404 for a month without data), the `stats` index
//! page, and `binstatisticdata/{uuid}/{YYYYMM|YYYYMMDD}` over the WebSocket (u32 local seconds
//! since 2009 + f64 per output; HTTP answers 404 for it, as a Gen 2 was seen to do). A fault
//! switch ([`StatsFault`]) makes these answers an error, empty or cut short.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Mutex;

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::Timestamp;
use serde_json::Value;

use super::answer::{Answer, Call, Ll};

/// The seed of every simulated series.
pub const SEED: u64 = 0x5EED_2026_1127;

/// Unix second of the Loxone epoch, 2009-01-01 00:00 UTC (the local epoch of V1 times is that
/// wall-clock moment in the house's zone).
const LOXONE_EPOCH_UNIX: i64 = 1_230_768_000;

/// Most records one answer holds (about 13 MB of a seven-output V1 month at one a minute);
/// more are left out of the answer, as a bound on the simulator's memory.
const MAX_RECORDS: usize = 1_000_000;

/// A fault for the statistics answers, switched by tests ([`super::Simulator::set_stats_fault`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatsFault {
    /// Data requests (`getStatistic`, the V1 files, `binstatisticdata`) answer this error
    /// code (`LL` envelope with the code, HTTP 200, as a Miniserver answers a command it
    /// cannot do).
    Error(u16),
    /// Data requests answer 200 with an empty body.
    Empty,
    /// Data answers lose their last 5 bytes (a record cut short).
    Truncated,
}

/// Where the history begins, its month without data and its counter reset (Unix seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Calendar {
    /// The first recorded instant: local midnight, first day of the month 13 months back.
    pub start: i64,
    /// The month without data: `[from, to)`, local month boundaries.
    pub gap: (i64, i64),
    /// The instant every counter falls to 0: 12:00 local on the 15th, seven months back.
    pub reset: i64,
}

/// What a recorded state carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Signal {
    /// A meter reading in kWh (counter) of this flow.
    Counter(Flow),
    /// A meter's power in kW (the hour's average) of this flow.
    Power(Flow),
    /// A temperature in °C.
    Temperature(Place),
    /// A room controller's target temperature in °C.
    Target,
    /// Relative humidity in %.
    Humidity,
    /// Brightness in lx.
    Brightness,
    /// A digital state (0/1) following a daily habit.
    Digital(Habit),
    /// Anything else: a slow wave around 50.
    Generic,
}

impl Signal {
    fn is_digital(self) -> bool {
        matches!(self, Signal::Digital(_))
    }
}

/// The role of a meter's energy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Flow {
    /// A consumer (household electricity).
    Load,
    /// Photovoltaic production.
    Production,
    /// From the grid.
    Import,
    /// To the grid.
    Export,
    /// A car charger.
    Wallbox,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Place {
    Indoor,
    Outdoor,
    Cellar,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Habit {
    /// On in the morning and the evening.
    Light,
    /// Open a few minutes three times a day.
    Door,
    /// Someone there in the morning and the evening.
    Presence,
    /// Never on (a water or smoke detector).
    Never,
}

/// How often a recording takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Every {
    /// At each change (digital states); analog ones every 15 minutes.
    Change,
    /// Every so many seconds, aligned to the Unix epoch.
    Secs(i64),
}

impl Every {
    /// The V1 `frequency` / V2 `mode` as an interval (per Loxone structure file docs).
    fn of(code: i64) -> Every {
        match code {
            1 | 7 => Every::Change,
            8 => Every::Secs(300),
            9 => Every::Secs(600),
            10 => Every::Secs(1800),
            11 => Every::Secs(3600),
            12 => Every::Secs(900),
            _ => Every::Secs(900),
        }
    }
}

/// One recorded column: the state's name and what it carries.
#[derive(Debug, Clone)]
struct Column {
    output: String,
    signal: Signal,
}

#[derive(Debug, Clone)]
struct Group {
    id: i64,
    every: Every,
    columns: Vec<Column>,
}

/// A control with statistics.
#[derive(Debug, Clone)]
struct Recorded {
    name: String,
    /// Noise of this control's own series.
    salt: u64,
    v1: Option<Group>,
    v2: Vec<Group>,
}

/// The statistics of one simulated Miniserver. See the module docs.
pub(crate) struct Stats {
    tz: TimeZone,
    calendar: Calendar,
    controls: HashMap<String, Recorded>,
    /// Hourly energy prefix sums per (flow, salt), extended as time goes on.
    sums: Mutex<HashMap<(Flow, u64), Vec<f64>>>,
    fault: Mutex<Option<StatsFault>>,
}

impl std::fmt::Debug for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stats")
            .field("calendar", &self.calendar)
            .field("controls", &self.controls.len())
            .finish_non_exhaustive()
    }
}

/// A number in [0, 1) from two words (SplitMix64 finaliser): the simulator's noise.
fn unit(a: u64, b: u64) -> f64 {
    let mut z = a
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(b)
        .wrapping_add(SEED);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// A word from a text (FNV-1a), for per-control noise.
fn salt_of(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

fn fold(s: &str) -> String {
    s.to_lowercase()
        .replace(['ä', 'à', 'á'], "a")
        .replace(['ö', 'ó'], "o")
        .replace(['ü', 'ú'], "u")
        .replace('ß', "ss")
}

fn has(name: &str, words: &[&str]) -> bool {
    words.iter().any(|w| name.contains(w))
}

/// The local midnight starting `date` in `tz`, as a Unix second.
fn midnight(tz: &TimeZone, date: Date) -> i64 {
    date.to_zoned_datetime(tz.clone())
        .and_then(|z| z.start_of_day())
        .map(|z| z.timestamp().as_second())
        .unwrap_or(0)
}

/// The local date of Unix second `t`.
fn local_date(tz: &TimeZone, t: i64) -> Date {
    Timestamp::from_second(t)
        .map(|ts| ts.to_zoned_datetime(tz.clone()).date())
        .unwrap_or(Date::ZERO)
}

/// The first day of the month `back` months before `date`'s.
fn months_back(date: Date, back: i32) -> Date {
    let total = date.year() as i32 * 12 + (date.month() as i32 - 1) - back;
    Date::new(
        total.div_euclid(12) as i16,
        (total.rem_euclid(12) + 1) as i8,
        1,
    )
    .unwrap_or(date)
}

/// Seconds east of UTC of `tz` at Unix second `t`.
fn offset_at(tz: &TimeZone, t: i64) -> i64 {
    Timestamp::from_second(t)
        .map(|ts| i64::from(tz.to_offset(ts).seconds()))
        .unwrap_or(0)
}

/// Unix second `t` as Miniserver-local seconds since 2009-01-01 00:00 (V1 time).
fn local_secs(tz: &TimeZone, t: i64) -> i64 {
    t + offset_at(tz, t) - LOXONE_EPOCH_UNIX
}

/// `YYYY-MM-DD HH:MM:SS` of Unix second `t` on the house's wall clock (V1 `T`).
fn wall_clock(tz: &TimeZone, t: i64) -> String {
    Timestamp::from_second(t)
        .map(|ts| {
            ts.to_zoned_datetime(tz.clone())
                .strftime("%Y-%m-%d %H:%M:%S")
                .to_string()
        })
        .unwrap_or_default()
}

/// The signal of a control's state, read from its type, unit and name.
fn signal_of(control: &Value, state: &str, digital_hint: bool) -> Signal {
    let ty = control.get("type").and_then(Value::as_str).unwrap_or("");
    let name = fold(control.get("name").and_then(Value::as_str).unwrap_or(""));
    let details = control.get("details");
    let detail = |k: &str| {
        details
            .and_then(|d| d.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let habit = || {
        if ty == "PresenceDetector" || has(&name, &["prasenz", "presence", "bewegung", "motion"]) {
            Habit::Presence
        } else if has(&name, &["tur", "door", "fenster", "window", "tor", "gate"]) {
            Habit::Door
        } else if has(
            &name,
            &["wasser", "water", "rauch", "smoke", "leck", "leak"],
        ) {
            Habit::Never
        } else {
            Habit::Light
        }
    };
    match ty {
        "Meter" => {
            let grid = detail("type") == "bidirectional";
            let flow = if grid {
                Flow::Import
            } else if has(&name, &["pv", "solar", "photovolt"]) {
                Flow::Production
            } else if has(&name, &["wallbox", "lade", "charg"]) {
                Flow::Wallbox
            } else {
                Flow::Load
            };
            match state {
                "actual" => Signal::Power(flow),
                "totalNeg" if grid => Signal::Counter(Flow::Export),
                _ => Signal::Counter(flow),
            }
        }
        "IRoomController" | "IRoomControllerV2" => match state {
            "tempTarget" => Signal::Target,
            _ => Signal::Temperature(Place::Indoor),
        },
        "InfoOnlyAnalog" => {
            let format = detail("format");
            if format.contains('°') || has(&name, &["temp"]) {
                Signal::Temperature(
                    if has(&name, &["aussen", "auss", "outdoor", "outside", "exterior"]) {
                        Place::Outdoor
                    } else if has(&name, &["keller", "cellar", "basement"]) {
                        Place::Cellar
                    } else {
                        Place::Indoor
                    },
                )
            } else if format.contains('%') || has(&name, &["feucht", "humid"]) {
                Signal::Humidity
            } else if format.contains("lx") || has(&name, &["hellig", "bright", "lux"]) {
                Signal::Brightness
            } else {
                Signal::Generic
            }
        }
        "Switch" | "InfoOnlyDigital" | "PresenceDetector" | "TimedSwitch" | "Pushbutton" => {
            Signal::Digital(habit())
        }
        _ if digital_hint || matches!(state, "active" | "open") => Signal::Digital(habit()),
        _ => Signal::Generic,
    }
}

/// The state a V1 output records: a Meter's outputs are `total`, `actual` (the order of a live
/// export's "Gesamtverbrauch,Leistung"), an output named like a state that state, else the
/// first output the control's primary state.
fn v1_state(control: &Value, index: usize, name: &str) -> String {
    let states = control.get("states").and_then(Value::as_object);
    if let Some(s) = states.and_then(|s| s.keys().find(|k| k.eq_ignore_ascii_case(name))) {
        return s.clone();
    }
    let ty = control.get("type").and_then(Value::as_str).unwrap_or("");
    match (ty, index) {
        ("Meter", 0) => "total".into(),
        ("Meter", _) => "actual".into(),
        ("IRoomController" | "IRoomControllerV2", 1) => "tempTarget".into(),
        ("IRoomController" | "IRoomControllerV2", _) => "tempActual".into(),
        _ => states
            .and_then(|s| {
                ["value", "active", "actual", "position"]
                    .iter()
                    .find(|k| s.contains_key(**k))
                    .map(|k| k.to_string())
            })
            .unwrap_or_else(|| "value".into()),
    }
}

fn integer(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// The controls of `doc` (and their sub-controls) with statistics.
fn recorded(doc: &Value) -> HashMap<String, Recorded> {
    let mut out = HashMap::new();
    fn walk(map: Option<&serde_json::Map<String, Value>>, out: &mut HashMap<String, Recorded>) {
        let Some(map) = map else { return };
        for (key, c) in map {
            let uuid = c
                .get("uuidAction")
                .and_then(Value::as_str)
                .unwrap_or(key)
                .to_lowercase();
            let v1 = c.get("statistic").and_then(|s| {
                let outputs = s.get("outputs")?.as_array()?;
                let freq = integer(s.get("frequency")).unwrap_or(0);
                if freq == 0 || outputs.is_empty() {
                    return None;
                }
                Some(Group {
                    id: 0,
                    every: Every::of(freq),
                    columns: outputs
                        .iter()
                        .enumerate()
                        .map(|(i, o)| {
                            let name = o.get("name").and_then(Value::as_str).unwrap_or("");
                            let state = v1_state(c, i, name);
                            let digital = integer(o.get("visuType")) == Some(1);
                            Column {
                                signal: signal_of(c, &state, digital),
                                output: state,
                            }
                        })
                        .collect(),
                })
            });
            let v2: Vec<Group> = c
                .get("statisticV2")
                .and_then(|s| s.get("groups"))
                .and_then(Value::as_array)
                .map(|groups| {
                    groups
                        .iter()
                        .filter_map(|g| {
                            let id = integer(g.get("id"))?;
                            let mode = integer(g.get("mode")).unwrap_or(0);
                            let columns: Vec<Column> = g
                                .get("dataPoints")?
                                .as_array()?
                                .iter()
                                .filter_map(|p| {
                                    let output = p.get("output")?.as_str()?.to_string();
                                    Some(Column {
                                        signal: signal_of(c, &output, false),
                                        output,
                                    })
                                })
                                .collect();
                            (mode != 0 && !columns.is_empty()).then_some(Group {
                                id,
                                every: Every::of(mode),
                                columns,
                            })
                        })
                        .collect()
                })
                .unwrap_or_default();
            if v1.is_some() || !v2.is_empty() {
                out.insert(
                    uuid.clone(),
                    Recorded {
                        name: c
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        salt: salt_of(&uuid),
                        v1,
                        v2,
                    },
                );
            }
            walk(c.get("subControls").and_then(Value::as_object), out);
        }
    }
    walk(doc.get("controls").and_then(Value::as_object), &mut out);
    out
}

/// Seconds of a local day, from local midnight.
fn second_of_day(tz: &TimeZone, t: i64) -> i64 {
    (t + offset_at(tz, t)).rem_euclid(86_400)
}

/// Days since 1970-01-01 on the local calendar (the season's clock).
fn local_day(tz: &TimeZone, t: i64) -> i64 {
    (t + offset_at(tz, t)).div_euclid(86_400)
}

/// 1 in midsummer, -1 in midwinter.
fn season(day: i64) -> f64 {
    (std::f64::consts::TAU * ((day as f64 - 172.0) / 365.2425)).cos()
}

/// How bright the sun is at local second-of-day `sod` on local day `day`, 0..1.
fn sun(sod: i64, day: i64) -> f64 {
    let daylen = 12.0 + 4.0 * season(day);
    let rise = 13.0 - daylen / 2.0;
    let h = sod as f64 / 3600.0;
    let x = (h - rise) / daylen;
    if (0.0..=1.0).contains(&x) {
        (std::f64::consts::PI * x).sin()
    } else {
        0.0
    }
}

/// Energy in kWh of `flow` in the hour starting at Unix second `h0` (house noise `house`,
/// the control's own `salt` for a wallbox), rounded to Wh.
fn hourly_energy(tz: &TimeZone, flow: Flow, h0: i64, salt: u64, house: u64) -> f64 {
    let sod = second_of_day(tz, h0);
    let day = local_day(tz, h0);
    let hour = sod / 3600;
    let load = || {
        let evening = if (17..22).contains(&hour) { 0.9 } else { 0.0 };
        let morning = if (6..9).contains(&hour) { 0.4 } else { 0.0 };
        0.3 + evening + morning + 0.3 * (-season(day)).max(0.0) + 0.2 * unit(house, h0 as u64)
    };
    let production = || {
        // A 5 kWp roof: a clear midsummer noon gives 4 kW, winter days a fraction of it.
        let clouds = 0.4 + 0.6 * unit(house ^ 0xC10D, day as u64);
        4.0 * sun(sod + 1800, day) * clouds * (0.55 + 0.45 * season(day))
    };
    let e = match flow {
        Flow::Load => load(),
        Flow::Production => production(),
        Flow::Import => (load() - production()).max(0.0),
        Flow::Export => (production() - load()).max(0.0),
        Flow::Wallbox => {
            let charges = unit(salt, day as u64);
            let hours = if charges < 0.15 { 3 } else { 2 };
            if charges < 0.35 && (19..19 + hours).contains(&hour) {
                11.0
            } else {
                0.0
            }
        }
    };
    (e * 1000.0).round() / 1000.0
}

/// The on-intervals of a habit on the local day starting at `day0` (Unix), as Unix seconds.
fn habit_intervals(habit: Habit, day0: i64, day: i64, salt: u64) -> Vec<(i64, i64)> {
    let jitter =
        |i: u64, span: i64| ((unit(salt ^ i, day as u64) - 0.5) * 2.0 * span as f64) as i64;
    let at = |h: i64, m: i64| day0 + h * 3600 + m * 60;
    match habit {
        Habit::Light => vec![
            (at(6, 30) + jitter(1, 1800), at(7, 15) + jitter(2, 1200)),
            (at(18, 0) + jitter(3, 1800), at(22, 45) + jitter(4, 1800)),
        ],
        Habit::Door => vec![
            (at(7, 40) + jitter(1, 900), at(7, 42) + jitter(1, 900)),
            (at(12, 10) + jitter(2, 900), at(12, 11) + jitter(2, 900)),
            (at(17, 30) + jitter(3, 900), at(17, 33) + jitter(3, 900)),
        ],
        Habit::Presence => vec![
            (at(7, 0) + jitter(1, 1800), at(8, 30) + jitter(2, 1800)),
            (at(17, 0) + jitter(3, 1800), at(23, 0) + jitter(4, 1800)),
        ],
        Habit::Never => Vec::new(),
    }
}

impl Stats {
    /// The statistics of the house `doc` in the zone `tz`, its history ending `now` (Unix
    /// second) and growing with the clock.
    pub(crate) fn new(doc: &Value, tz: TimeZone, now: i64) -> Stats {
        let today = local_date(&tz, now);
        let start = midnight(&tz, months_back(today, 13));
        let gap_month = months_back(today, 4);
        let gap = (
            midnight(&tz, gap_month),
            midnight(&tz, months_back(today, 3)),
        );
        let reset_day = months_back(today, 7)
            .with()
            .day(15)
            .build()
            .unwrap_or(months_back(today, 7));
        let reset = midnight(&tz, reset_day) + 12 * 3600;
        Stats {
            tz,
            calendar: Calendar { start, gap, reset },
            controls: recorded(doc),
            sums: Mutex::new(HashMap::new()),
            fault: Mutex::new(None),
        }
    }

    pub(crate) fn calendar(&self) -> Calendar {
        self.calendar
    }

    pub(crate) fn set_fault(&self, fault: Option<StatsFault>) {
        *self.fault.lock().unwrap_or_else(|e| e.into_inner()) = fault;
    }

    pub(crate) fn fault(&self) -> Option<StatsFault> {
        *self.fault.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `t` falls into the month without data.
    fn in_gap(&self, t: i64) -> bool {
        (self.calendar.gap.0..self.calendar.gap.1).contains(&t)
    }

    /// The kWh a counter of `flow` has gained from the start to Unix second `t` (hours in the
    /// gap add nothing; linear within an hour).
    fn gained(&self, flow: Flow, salt: u64, t: i64, now: i64) -> f64 {
        let start = self.calendar.start;
        if t <= start {
            return 0.0;
        }
        let hours = ((now.max(t) - start) / 3600 + 2) as usize;
        let mut sums = self.sums.lock().unwrap_or_else(|e| e.into_inner());
        let house = salt_of("house");
        let key_salt = if flow == Flow::Wallbox { salt } else { 0 };
        let prefix = sums.entry((flow, key_salt)).or_insert_with(|| vec![0.0]);
        while prefix.len() <= hours {
            let k = prefix.len() - 1;
            let h0 = start + k as i64 * 3600;
            let e = if self.in_gap(h0) {
                0.0
            } else {
                hourly_energy(&self.tz, flow, h0, salt, house)
            };
            let last = prefix[k];
            prefix.push(last + e);
        }
        let k = ((t - start) / 3600) as usize;
        let within = (t - start - k as i64 * 3600) as f64 / 3600.0;
        prefix[k] + (prefix[k + 1] - prefix[k]) * within
    }

    /// The value of `signal` at Unix second `t` (for a control of noise `salt`).
    fn value(&self, signal: Signal, salt: u64, t: i64, now: i64) -> f64 {
        let tz = &self.tz;
        let sod = second_of_day(tz, t);
        let day = local_day(tz, t);
        let hourly = |s: u64| unit(salt ^ s, (t / 3600) as u64);
        let r1 = |x: f64| (x * 10.0).round() / 10.0;
        match signal {
            Signal::Counter(flow) => {
                let base = 1000.0 + (unit(salt, 7) * 20_000.0).round();
                let c = &self.calendar;
                let v = if t < c.reset {
                    base + self.gained(flow, salt, t, now)
                } else {
                    self.gained(flow, salt, t, now) - self.gained(flow, salt, c.reset, now)
                };
                (v * 1000.0).round() / 1000.0
            }
            Signal::Power(flow) => {
                let h0 = t - t.rem_euclid(3600);
                hourly_energy(tz, flow, h0, salt, salt_of("house"))
            }
            Signal::Temperature(place) => {
                let daily = (std::f64::consts::TAU * (sod as f64 / 86_400.0 - 0.6)).cos();
                r1(match place {
                    Place::Indoor => 21.0 + 0.8 * daily + 0.5 * season(day) + 0.4 * hourly(1),
                    Place::Outdoor => 9.0 + 10.0 * season(day) + 5.0 * daily + 2.0 * hourly(2),
                    Place::Cellar => 13.0 + 3.0 * season(day) + 0.2 * hourly(3),
                })
            }
            Signal::Target => {
                let hour = sod / 3600;
                if (6..22).contains(&hour) {
                    21.0
                } else {
                    18.0
                }
            }
            Signal::Humidity => (48.0 + 8.0 * season(day) + 6.0 * hourly(4)).round(),
            Signal::Brightness => {
                let clouds = 0.3 + 0.7 * unit(salt ^ 5, day as u64);
                (60_000.0 * sun(sod, day) * clouds).round()
            }
            Signal::Digital(habit) => {
                let day0 = t - sod;
                let on = habit_intervals(habit, day0, day, salt)
                    .iter()
                    .any(|(a, b)| (*a..*b).contains(&t));
                if on {
                    1.0
                } else {
                    0.0
                }
            }
            Signal::Generic => r1(50.0 + 20.0 * season(day) + 5.0 * hourly(6)),
        }
    }

    /// The record times of a group in `[from, until]` (Unix seconds, within the history and
    /// outside the month without data), at most [`MAX_RECORDS`].
    fn times(&self, group: &Group, salt: u64, from: i64, until: i64, now: i64) -> Vec<i64> {
        let from = from.max(self.calendar.start);
        let until = until.min(now);
        let mut out = Vec::new();
        if from > until {
            return out;
        }
        let digital = group.columns.iter().all(|c| c.signal.is_digital());
        match group.every {
            Every::Change if digital => {
                // The first record is where the history begins; then every change of any
                // column, day by day.
                if from == self.calendar.start {
                    out.push(from);
                }
                let mut day = local_date(&self.tz, from);
                loop {
                    let day0 = midnight(&self.tz, day);
                    if day0 > until || out.len() >= MAX_RECORDS {
                        break;
                    }
                    let n = local_day(&self.tz, day0 + 43_200);
                    let mut changes: Vec<i64> = group
                        .columns
                        .iter()
                        .filter_map(|c| match c.signal {
                            Signal::Digital(h) => Some(habit_intervals(h, day0, n, salt)),
                            _ => None,
                        })
                        .flatten()
                        .flat_map(|(a, b)| [a, b])
                        .filter(|t| (from..=until).contains(t) && *t > self.calendar.start)
                        .collect();
                    changes.sort_unstable();
                    changes.dedup();
                    out.extend(changes);
                    match day.tomorrow() {
                        Ok(d) => day = d,
                        Err(_) => break,
                    }
                }
            }
            every => {
                let step = match every {
                    Every::Secs(s) => s,
                    Every::Change => 900,
                };
                let mut t = from + (step - from.rem_euclid(step)) % step;
                while t <= until && out.len() < MAX_RECORDS {
                    out.push(t);
                    t += step;
                }
            }
        }
        out.retain(|t| !self.in_gap(*t));
        out.truncate(MAX_RECORDS);
        out
    }

    /// The records of `group`'s `columns` in `[from, until]`: Unix times and one row each.
    fn records(
        &self,
        rec: &Recorded,
        group: &Group,
        columns: &[usize],
        from: i64,
        until: i64,
        now: i64,
    ) -> (Vec<i64>, Vec<f64>) {
        let times = self.times(group, rec.salt, from, until, now);
        let mut values = Vec::with_capacity(times.len() * columns.len());
        for &t in &times {
            for &c in columns {
                values.push(self.value(group.columns[c].signal, rec.salt, t, now));
            }
        }
        (times, values)
    }

    fn find(&self, uuid: &str) -> Option<&Recorded> {
        self.controls.get(&uuid.to_lowercase())
    }

    /// Whether `uuid` has any statistics (V1 or V2).
    #[cfg(test)]
    pub(crate) fn knows(&self, uuid: &str) -> bool {
        self.find(uuid).is_some()
    }

    /// The raw V2 records of `output` of `uuid` in `[from, until]` (Unix seconds): what a test
    /// reads as its oracle. `None` when the control records no such data point in V2.
    pub(crate) fn v2_series(
        &self,
        uuid: &str,
        output: &str,
        from: i64,
        until: i64,
        now: i64,
    ) -> Option<Vec<(i64, f64)>> {
        let rec = self.find(uuid)?;
        let (group, col) = rec.v2.iter().find_map(|g| {
            g.columns
                .iter()
                .position(|c| c.output.eq_ignore_ascii_case(output))
                .map(|i| (g, i))
        })?;
        let (t, v) = self.records(rec, group, &[col], from, until, now);
        Some(t.into_iter().zip(v).collect())
    }

    /// `jdev/sps/getStatisticInfo/{uuid}`: the value text `[{"id":..,"activeSince":..}]`;
    /// `None` for a control without statistics.
    pub(crate) fn info(&self, uuid: &str) -> Option<String> {
        let rec = self.find(uuid)?;
        let list: Vec<Value> = rec
            .v2
            .iter()
            .map(|g| serde_json::json!({"id": g.id, "activeSince": self.calendar.start}))
            .collect();
        Some(Value::Array(list).to_string())
    }

    /// `getStatistic/{uuid}/{mode}/{from}/{until}/{unit}/{group}[/{output}]` (the segments
    /// after `getStatistic`): the body, or the error code (404 unknown control, group or
    /// output; 400 a malformed request).
    pub(crate) fn v2_body(&self, segs: &[String], now: i64) -> Result<Vec<u8>, u16> {
        let [uuid, mode, from, until, unit_name, group, rest @ ..] = segs else {
            return Err(400);
        };
        let rec = self.find(uuid).ok_or(404u16)?;
        let group_id: i64 = group.parse().map_err(|_| 400u16)?;
        let group = rec.v2.iter().find(|g| g.id == group_id).ok_or(404u16)?;
        let columns: Vec<usize> = match rest {
            [] => (0..group.columns.len()).collect(),
            [output] => vec![group
                .columns
                .iter()
                .position(|c| c.output.eq_ignore_ascii_case(output))
                .ok_or(404u16)?],
            _ => return Err(400),
        };
        let from: i64 = from.parse().map_err(|_| 400u16)?;
        let until: i64 = until.parse().map_err(|_| 400u16)?;
        let diff = match mode.to_lowercase().as_str() {
            "raw" => false,
            "diff" => true,
            _ => return Err(400),
        };
        let unit_name = unit_name.to_lowercase();
        if !matches!(
            unit_name.as_str(),
            "all" | "hour" | "day" | "month" | "year"
        ) {
            return Err(400);
        }
        let mut body = Vec::new();
        let push = |body: &mut Vec<u8>, t: i64, row: &[f64]| {
            body.extend_from_slice(&(t.clamp(0, i64::from(u32::MAX)) as u32).to_le_bytes());
            for v in row {
                body.extend_from_slice(&v.to_le_bytes());
            }
        };
        let width = columns.len();
        if !diff && unit_name == "all" {
            let (times, values) = self.records(rec, group, &columns, from, until, now);
            for (i, t) in times.iter().enumerate() {
                push(&mut body, *t, &values[i * width..(i + 1) * width]);
            }
            return Ok(body);
        }
        // Per unit: local buckets [b0, b1). `diff` sums the differences of consecutive
        // records ending in (b0, b1]: a counter's gain from the bucket's start to its end
        // when records fall on the boundaries (an hourly meter's 00:00 record closes the
        // day before). `raw` gives the bucket's last record (inferred: the documents do not
        // say), stamped with the bucket's start.
        let mut b0 = self.bucket_start(&unit_name, from.max(self.calendar.start));
        let looked_back = self.calendar.start.max(b0 - 40 * 86_400);
        let (mut times, mut values) = self.records(
            rec,
            group,
            &columns,
            looked_back,
            until.saturating_add(1),
            now,
        );
        if times.len() >= MAX_RECORDS {
            times.truncate(MAX_RECORDS);
            values.truncate(MAX_RECORDS * width);
        }
        let at = |k: usize, c: usize| values[k * width + c];
        while b0 <= until.min(now) {
            let b1 = self.next_bucket(&unit_name, b0);
            let row: Option<Vec<f64>> = if diff {
                // Last record at or before b0, and those in (b0, b1].
                let before = times.partition_point(|t| *t <= b0);
                let end = times.partition_point(|t| *t <= b1);
                (end > before).then(|| {
                    (0..width)
                        .map(|c| {
                            let mut sum = 0.0;
                            let mut prev = at(before.saturating_sub(1), c);
                            for k in before..end {
                                sum += at(k, c) - prev;
                                prev = at(k, c);
                            }
                            (sum * 1000.0).round() / 1000.0
                        })
                        .collect()
                })
            } else {
                let first = times.partition_point(|t| *t < b0);
                let end = times.partition_point(|t| *t < b1);
                (end > first).then(|| (0..width).map(|c| at(end - 1, c)).collect())
            };
            if let Some(row) = row {
                push(&mut body, b0, &row);
            }
            b0 = b1;
        }
        Ok(body)
    }

    /// The local start of the `unit` ("hour", "day", "month", "year") containing `t`.
    fn bucket_start(&self, unit_name: &str, t: i64) -> i64 {
        let d = local_date(&self.tz, t);
        match unit_name {
            "hour" => t - t.rem_euclid(3600),
            "day" => midnight(&self.tz, d),
            "month" => midnight(&self.tz, d.first_of_month()),
            _ => midnight(&self.tz, d.first_of_year()),
        }
    }

    /// The local start of the `unit` after the one starting at `b0`.
    fn next_bucket(&self, unit_name: &str, b0: i64) -> i64 {
        let d = local_date(&self.tz, b0);
        let next = match unit_name {
            "hour" => return b0 + 3600,
            "day" => d.tomorrow().ok(),
            "month" => d.last_of_month().tomorrow().ok(),
            _ => d.last_of_year().tomorrow().ok(),
        };
        next.map_or(i64::MAX, |n| midnight(&self.tz, n))
    }

    /// The V1 records of `uuid` in the local month `yyyymm` (or the local day `yyyymmdd`), or
    /// of one V2 group (`group`): the group, the Unix times and the rows; `None` when there is
    /// no such recording or no record in that time.
    fn v1_period(
        &self,
        uuid: &str,
        group: Option<i64>,
        date: &str,
        now: i64,
    ) -> Option<(&Recorded, &Group, Vec<i64>, Vec<f64>)> {
        let rec = self.find(uuid)?;
        let g = match group {
            None => rec.v1.as_ref()?,
            Some(id) => rec.v2.iter().find(|g| g.id == id)?,
        };
        let num = |s: &str| s.parse::<i16>().ok();
        let (year, month) = (num(date.get(0..4)?)?, num(date.get(4..6)?)?);
        let (from_date, to_date) = match date.len() {
            6 => {
                let d = Date::new(year, month as i8, 1).ok()?;
                (d, d.last_of_month().tomorrow().ok()?)
            }
            8 => {
                let d = Date::new(year, month as i8, num(date.get(6..8)?)? as i8).ok()?;
                (d, d.tomorrow().ok()?)
            }
            _ => return None,
        };
        let from = midnight(&self.tz, from_date);
        let to = midnight(&self.tz, to_date) - 1;
        let cols: Vec<usize> = (0..g.columns.len()).collect();
        let (t, v) = self.records(rec, g, &cols, from, to, now);
        (!t.is_empty()).then_some((rec, g, t, v))
    }

    /// A V1 month file `stats/statisticdata.xml/{uuid}/{date}` (or `stats/{uuid}.{YYYYMM}.xml`,
    /// or with `group` the V2 group file `stats/{uuid}_{group}.{YYYYMM}.xml`): `None` (404) when
    /// there is no recording or no record that month.
    pub(crate) fn v1_xml(
        &self,
        uuid: &str,
        group: Option<i64>,
        date: &str,
        now: i64,
    ) -> Option<String> {
        let (rec, g, times, values) = self.v1_period(uuid, group, date, now)?;
        let width = g.columns.len();
        let names: Vec<&str> = g.columns.iter().map(|c| c.output.as_str()).collect();
        let mut xml = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
        let _ = writeln!(
            xml,
            "<Statistics Name=\"{}\" NumOutputs=\"{width}\" Outputs=\"{}\"{}>",
            xml_escape(&rec.name),
            xml_escape(&names.join(",")),
            group
                .map(|g| format!(" StatsGroup=\"{g}\""))
                .unwrap_or_default()
        );
        for (i, t) in times.iter().enumerate() {
            let _ = write!(xml, "<S T=\"{}\"", wall_clock(&self.tz, *t));
            for c in 0..width {
                let col = if c == 0 {
                    "V".to_string()
                } else {
                    format!("V{}", c + 1)
                };
                let _ = write!(xml, " {col}=\"{:.3}\"", values[i * width + c]);
            }
            xml.push_str("/>\n");
        }
        xml.push_str("</Statistics>\n");
        Some(xml)
    }

    /// `binstatisticdata/{uuid}/{date}`: the V1 records as u32 local seconds since 2009 and
    /// one f64 per output; `None` when there is no recording or no record in that time.
    pub(crate) fn binstat(&self, uuid: &str, date: &str, now: i64) -> Option<Vec<u8>> {
        let (_, g, times, values) = self.v1_period(uuid, None, date, now)?;
        let width = g.columns.len();
        let mut body = Vec::with_capacity(times.len() * (4 + 8 * width));
        for (i, t) in times.iter().enumerate() {
            let local = local_secs(&self.tz, *t).clamp(0, i64::from(u32::MAX)) as u32;
            body.extend_from_slice(&local.to_le_bytes());
            for v in &values[i * width..(i + 1) * width] {
                body.extend_from_slice(&v.to_le_bytes());
            }
        }
        Some(body)
    }

    /// The `stats` index page: one link per month file (V1 `{uuid}.{YYYYMM}.xml`, V2 groups
    /// `{uuid}_{group}.{YYYYMM}.xml`), months with records only.
    pub(crate) fn index(&self, now: i64) -> String {
        let mut months = Vec::new();
        let mut d = local_date(&self.tz, self.calendar.start);
        let last = local_date(&self.tz, now);
        while (d.year(), d.month()) <= (last.year(), last.month()) {
            if !self.in_gap(midnight(&self.tz, d)) {
                months.push(format!("{:04}{:02}", d.year(), d.month()));
            }
            d = months_back(d, -1);
        }
        let mut uuids: Vec<&String> = self.controls.keys().collect();
        uuids.sort();
        let mut html = String::from("<html><head><title>Statistics</title></head><body>\n");
        for uuid in uuids {
            let rec = &self.controls[uuid];
            for m in &months {
                if rec.v1.is_some() {
                    let _ = writeln!(html, "<a href=\"{uuid}.{m}.xml\">{uuid}.{m}.xml</a><br>");
                }
                for g in &rec.v2 {
                    let _ = writeln!(
                        html,
                        "<a href=\"{uuid}_{}.{m}.xml\">{uuid}_{}.{m}.xml</a><br>",
                        g.id, g.id
                    );
                }
            }
        }
        html.push_str("</body></html>\n");
        html
    }

    /// The live states a meter's history implies now: `total`/`totalNeg` (the counters now)
    /// and the period totals `totalDay/Week/Month/Year` and their `Neg` twins (what was
    /// counted since the local period began), for the states `uuid` has. Empty for a control
    /// without V2 counters.
    pub(crate) fn meter_states(
        &self,
        uuid: &str,
        states: &[String],
        now: i64,
    ) -> Vec<(String, f64)> {
        let Some(rec) = self.find(uuid) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let counters: Vec<(&str, Signal)> = rec
            .v2
            .iter()
            .chain(rec.v1.iter())
            .flat_map(|g| g.columns.iter())
            .filter_map(|c| match c.signal {
                Signal::Counter(_) => Some((c.output.as_str(), c.signal)),
                _ => None,
            })
            .collect();
        let today = local_date(&self.tz, now);
        let weekday = i64::from(today.weekday().to_monday_zero_offset());
        let starts = [
            ("Day", midnight(&self.tz, today)),
            ("Week", midnight(&self.tz, today) - weekday * 86_400),
            ("Month", midnight(&self.tz, today.first_of_month())),
            ("Year", midnight(&self.tz, today.first_of_year())),
        ];
        for (output, signal) in counters {
            let Signal::Counter(flow) = signal else {
                continue;
            };
            let now_v = self.value(signal, rec.salt, now, now);
            if states.iter().any(|s| s == output) {
                out.push((output.to_string(), now_v));
            }
            let twin = if output == "totalNeg" {
                "totalNeg"
            } else {
                "total"
            };
            for (period, since) in starts {
                let name = format!("{twin}{period}");
                if states.contains(&name) {
                    let gained = self.gained(flow, rec.salt, now, now)
                        - self.gained(flow, rec.salt, since.max(self.calendar.start), now);
                    out.push((name, (gained * 1000.0).round() / 1000.0));
                }
            }
        }
        out
    }
}

/// The uuidAction of the `{control}` a row matched.
fn target_uuid(sim: &super::Simulator, call: &Call<'_>) -> Option<String> {
    let idx = call.target?;
    let house = sim.house.lock().unwrap_or_else(|e| e.into_inner());
    house.ctls.get(idx).map(|c| c.uuid.clone())
}

fn now_secs() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// Statistics files and data cannot come through `jdev/sys/enc|fenc` (statistics.md A1:
/// "Gen1 command encryption cannot carry statistic files"): such a request gets 400.
fn refused_encrypted(call: &Call<'_>) -> Option<Answer> {
    call.encrypted.then_some(Answer::Error(400, "Bad Request"))
}

/// A data answer as the fault switch has it: an `LL` error code instead, an empty body, or
/// the last 5 bytes cut off.
fn faulted(sim: &super::Simulator, mut body: Vec<u8>, content_type: &'static str) -> Answer {
    match sim.stats.fault() {
        Some(StatsFault::Error(code)) => return Answer::Ll(Ll::coded(code, "")),
        Some(StatsFault::Empty) => body.clear(),
        Some(StatsFault::Truncated) => body.truncate(body.len().saturating_sub(5)),
        None => {}
    }
    Answer::Data(content_type, body)
}

/// The same for a text file.
fn faulted_text(sim: &super::Simulator, text: String) -> Answer {
    match sim.stats.fault() {
        Some(StatsFault::Error(code)) => Answer::Ll(Ll::coded(code, "")),
        Some(StatsFault::Empty) => Answer::Text(XML, String::new()),
        Some(StatsFault::Truncated) => {
            let mut t = text;
            let cut = t.len().saturating_sub(5);
            while !t.is_char_boundary(cut) {
                t.pop();
            }
            t.truncate(cut.min(t.len()));
            Answer::Text(XML, t)
        }
        None => Answer::Text(XML, text),
    }
}

const XML: &str = "text/xml";
const OCTETS: &str = "application/octet-stream";

/// `sps/getStatisticInfo/{control}`: the V2 groups with data and since when, as JSON text in
/// `value` (statistics.md A2 saw both text and an array; the text is the harder case).
pub(crate) fn info(sim: &super::Simulator, call: &mut Call<'_>) -> Answer {
    let Some(uuid) = target_uuid(sim, call) else {
        return Answer::Error(404, "Not Found");
    };
    Answer::Ll(Ll::ok(sim.stats.info(&uuid).unwrap_or_else(|| "[]".into())))
}

/// `sps/getStatistic/{control}/{mode}/{from}/{until}/{unit}/{group}[/{output}]`: records of
/// a u32 Unix second and one f64 per output, an empty body for none; 404 for an unknown group
/// or output, 400 for a malformed request (*inferred*: the documents do not say).
pub(crate) fn data(sim: &super::Simulator, call: &mut Call<'_>) -> Answer {
    if let Some(refused) = refused_encrypted(call) {
        return refused;
    }
    let Some(uuid) = target_uuid(sim, call) else {
        return Answer::Error(404, "Not Found");
    };
    let mut segs = vec![uuid];
    segs.extend(call.rest.iter().cloned());
    match sim.stats.v2_body(&segs, now_secs()) {
        Ok(body) => faulted(sim, body, OCTETS),
        Err(404) => Answer::Error(404, "Not Found"),
        Err(_) => Answer::Error(400, "Bad Request"),
    }
}

/// `stats`: the index page, a link per month file.
pub(crate) fn index(sim: &super::Simulator, call: &mut Call<'_>) -> Answer {
    if let Some(refused) = refused_encrypted(call) {
        return refused;
    }
    Answer::Text("text/html", sim.stats.index(now_secs()))
}

/// `stats/{uuid}.{YYYYMM}.xml` (V1) or `stats/{uuid}_{group}.{YYYYMM}.xml` (a V2 group): the
/// month's file, 404 when there is none.
pub(crate) fn file(sim: &super::Simulator, call: &mut Call<'_>) -> Answer {
    if let Some(refused) = refused_encrypted(call) {
        return refused;
    }
    let name = &call.args[0];
    let parsed = name.strip_suffix(".xml").and_then(|f| f.rsplit_once('.'));
    let Some((stem, month)) = parsed else {
        return Answer::Error(404, "Not Found");
    };
    let (uuid, group) = match stem.rsplit_once('_') {
        Some((u, g)) => match g.parse::<i64>() {
            Ok(g) => (u, Some(g)),
            Err(_) => (stem, None),
        },
        None => (stem, None),
    };
    match sim.stats.v1_xml(uuid, group, month, now_secs()) {
        Some(xml) => faulted_text(sim, xml),
        None => Answer::Error(404, "Not Found"),
    }
}

/// `stats/statisticdata.xml/{uuid}/{YYYYMM|YYYYMMDD}`: the V1 file of a month or one day of
/// it, 404 when there is none.
pub(crate) fn statisticdata(sim: &super::Simulator, call: &mut Call<'_>) -> Answer {
    if let Some(refused) = refused_encrypted(call) {
        return refused;
    }
    match sim
        .stats
        .v1_xml(&call.args[0], None, &call.args[1], now_secs())
    {
        Some(xml) => faulted_text(sim, xml),
        None => Answer::Error(404, "Not Found"),
    }
}

/// `binstatisticdata/{uuid}/{YYYYMM|YYYYMMDD}` (WebSocket only): the V1 records as u32
/// Miniserver-local seconds since 2009 and one f64 per output; 404 when there are none.
pub(crate) fn binstat(sim: &super::Simulator, call: &mut Call<'_>) -> Answer {
    if let Some(refused) = refused_encrypted(call) {
        return refused;
    }
    match sim.stats.binstat(&call.args[0], &call.args[1], now_secs()) {
        Some(body) => faulted(sim, body, OCTETS),
        None => Answer::Error(404, "Not Found"),
    }
}

impl super::Simulator {
    /// Sets or clears the fault of the statistics answers ([`StatsFault`]).
    pub fn set_stats_fault(&self, fault: Option<StatsFault>) {
        self.stats.set_fault(fault);
    }

    /// Where the simulated history begins, its month without data and its counter reset.
    pub fn stats_calendar(&self) -> Calendar {
        self.stats.calendar()
    }

    /// The V2 records of `output` of the control `uuid` in `[from, until]` (Unix seconds), as
    /// `getStatistic/.../raw/.../all` serves them; `None` when V2 does not record it. For
    /// in-process tests; tests over the wire read the same through the HTTP API.
    pub fn stats_series(
        &self,
        uuid: &str,
        output: &str,
        from: i64,
        until: i64,
    ) -> Option<Vec<(i64, f64)>> {
        self.stats.v2_series(uuid, output, from, until, now_secs())
    }
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn berlin() -> TimeZone {
        TimeZone::posix("CET-1CEST,M3.5.0,M10.5.0/3").unwrap()
    }

    fn doc() -> Value {
        serde_json::json!({"controls": {
            "m1": {"name": "Stromzähler", "type": "Meter", "uuidAction": "m1",
                   "details": {"type": "bidirectional"},
                   "states": {"actual": "s1", "total": "s2", "totalNeg": "s3"},
                   "statisticV2": {"groups": [
                       {"id": 1, "mode": 11, "dataPoints": [{"title": "P", "output": "actual"}]},
                       {"id": 2, "mode": 11, "accumulated": true, "dataPoints": [
                           {"title": "I", "output": "total"}, {"title": "E", "output": "totalNeg"}]}]},
                   "statistic": {"frequency": 11, "outputs": [
                       {"id": 0, "name": "Gesamtverbrauch"}, {"id": 1, "name": "Leistung"}]}},
            "l1": {"name": "Deckenlicht", "type": "Switch", "uuidAction": "l1",
                   "states": {"active": "s4"},
                   "statisticV2": {"groups": [{"id": 1, "mode": 1, "dataPoints": [{"output": "active"}]}]}},
            "t1": {"name": "Raumtemperatur", "type": "InfoOnlyAnalog", "uuidAction": "t1",
                   "details": {"format": "%.1f°"}, "states": {"value": "s5"},
                   "statistic": {"frequency": 12, "outputs": [{"id": 0, "name": "Temperatur"}]}},
            "x": {"name": "Nichts", "type": "Switch", "uuidAction": "x", "states": {"active": "s6"}}
        }})
    }

    /// 2026-11-27 12:00 UTC.
    const NOW: i64 = 1_795_780_800;

    fn stats() -> Stats {
        Stats::new(&doc(), berlin(), NOW)
    }

    fn rows(body: &[u8], width: usize) -> Vec<(i64, Vec<f64>)> {
        body.chunks_exact(4 + 8 * width)
            .map(|r| {
                let t = u32::from_le_bytes([r[0], r[1], r[2], r[3]]) as i64;
                let v = (0..width)
                    .map(|k| f64::from_le_bytes(r[4 + 8 * k..12 + 8 * k].try_into().unwrap()))
                    .collect();
                (t, v)
            })
            .collect()
    }

    fn segs(s: &str) -> Vec<String> {
        s.split('/').map(str::to_string).collect()
    }

    #[test]
    fn the_calendar_is_fixed_relative_to_the_start() {
        let s = stats();
        let c = s.calendar();
        // Start: 2025-10-01 00:00 CEST; gap: July 2026; reset: 2026-04-15 12:00 CEST.
        assert_eq!(c.start, 1_759_269_600);
        assert_eq!(c.gap, (1_782_856_800, 1_785_535_200));
        assert_eq!(c.reset, 1_776_247_200);
        assert!(s.knows("M1") && s.knows("l1") && !s.knows("x"));
    }

    #[test]
    fn counters_grow_pause_in_the_gap_and_fall_at_the_reset() {
        let s = stats();
        let c = s.calendar();
        let series = s.v2_series("m1", "total", c.start, NOW, NOW).unwrap();
        assert!(
            series.len() > 9000,
            "a year of hourly records: {}",
            series.len()
        );
        let mut drops = 0;
        for w in series.windows(2) {
            if w[1].1 < w[0].1 {
                drops += 1;
                assert!(
                    w[1].0 >= c.reset && w[0].0 < c.reset,
                    "the drop is at the reset"
                );
            }
        }
        assert_eq!(drops, 1);
        assert!(series.iter().all(|(t, _)| !(c.gap.0..c.gap.1).contains(t)));
        // Export and import never both in one hour.
        let im = s
            .v2_series("m1", "total", c.start, c.start + 86_400 * 3, NOW)
            .unwrap();
        assert_eq!(im.len(), 73);
    }

    #[test]
    fn diff_days_follow_local_midnights_and_the_dst_day_has_23_hours() {
        let s = stats();
        // 2026-03-29 is 23 hours long in Berlin: 2026-03-28 23:00 UTC to 2026-03-29 22:00 UTC.
        let day0 = 1_774_738_800;
        let body = s
            .v2_body(
                &segs(&format!("m1/diff/{day0}/{}/day/2/total", day0 + 86_399)),
                NOW,
            )
            .unwrap();
        let r = rows(&body, 1);
        assert_eq!(r[0].0, day0);
        assert_eq!(
            r.len(),
            2,
            "the DST day and the next one begin in the range"
        );
        let raw = s
            .v2_series("m1", "total", day0, day0 + 23 * 3600, NOW)
            .unwrap();
        assert_eq!(raw.len(), 24, "midnight to midnight, both ends");
        let expected = raw.last().unwrap().1 - raw[0].1;
        assert!(
            (r[0].1[0] - expected).abs() < 1e-6,
            "{} vs {expected}",
            r[0].1[0]
        );
        let hours = s
            .v2_series("m1", "actual", day0, day0 + 23 * 3600 - 1, NOW)
            .unwrap();
        assert_eq!(hours.len(), 23);
    }

    #[test]
    fn v1_files_are_local_time_and_the_gap_month_has_none() {
        let s = stats();
        assert!(
            s.v1_xml("m1", None, "202607", NOW).is_none(),
            "July 2026 has no data"
        );
        let oct = s.v1_xml("m1", None, "202610", NOW).unwrap();
        // The repeated autumn hour: 02:00 local twice on 2026-10-25.
        assert_eq!(
            oct.matches("T=\"2026-10-25 02:00:00\"").count(),
            2,
            "{}",
            &oct[..400]
        );
        let mar = s.v1_xml("m1", None, "202603", NOW).unwrap();
        assert!(!mar.contains("T=\"2026-03-29 02:00:00\""));
        assert!(mar.contains("NumOutputs=\"2\" Outputs=\"total,actual\""));
        let bin = s.binstat("m1", "202603", NOW).unwrap();
        let first = rows(&bin, 2)[0].clone();
        // 2026-03-01 00:00 local = 541_555_200 local seconds since 2009.
        assert_eq!(first.0, 541_555_200);
        let day = s.v1_xml("t1", None, "20260329", NOW).unwrap();
        assert_eq!(day.matches("<S ").count(), 23 * 4);
        assert!(s.index(NOW).contains("m1.202603.xml") && !s.index(NOW).contains("m1.202607.xml"));
    }

    #[test]
    fn a_light_records_its_changes() {
        let s = stats();
        let week = s
            .v2_series("l1", "active", NOW - 7 * 86_400, NOW, NOW)
            .unwrap();
        assert!(week.len() >= 26 && week.len() <= 28, "{}", week.len());
        assert!(
            week.windows(2).all(|w| w[0].1 != w[1].1),
            "changes alternate"
        );
    }

    #[test]
    fn bad_requests_are_refused() {
        let s = stats();
        assert_eq!(s.v2_body(&segs("nope/raw/0/1/all/1"), NOW), Err(404));
        assert_eq!(s.v2_body(&segs("m1/raw/0/1/all/9"), NOW), Err(404));
        assert_eq!(s.v2_body(&segs("m1/raw/0/1/all/2/bogus"), NOW), Err(404));
        assert_eq!(s.v2_body(&segs("m1/cooked/0/1/all/2"), NOW), Err(400));
        assert_eq!(s.v2_body(&segs("m1/raw/x/1/all/2"), NOW), Err(400));
        assert_eq!(s.v2_body(&segs("m1/raw/0"), NOW), Err(400));
        assert_eq!(s.v2_body(&segs("m1/raw/0/1/week/2"), NOW), Err(400));
        assert_eq!(s.v2_body(&segs("m1/raw/0/1/all/2"), NOW), Ok(Vec::new()));
        let both = s
            .v2_body(&segs(&format!("m1/raw/{}/{}/all/2", NOW - 7200, NOW)), NOW)
            .unwrap();
        assert_eq!(rows(&both, 2).len(), 3);
        assert!(s.info("m1").unwrap().contains("\"id\":2"));
        assert_eq!(s.info("t1").unwrap(), "[]");
    }

    #[test]
    fn meter_states_agree_with_the_history() {
        let s = stats();
        let names: Vec<String> = [
            "total",
            "totalNeg",
            "totalDay",
            "totalMonth",
            "totalNegYear",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let st = s.meter_states("m1", &names, NOW);
        let get = |n: &str| st.iter().find(|(k, _)| k == n).unwrap().1;
        let last = s.v2_series("m1", "total", NOW - 3600, NOW, NOW).unwrap();
        assert!((get("total") - last.last().unwrap().1).abs() < 0.01);
        assert!(get("totalDay") >= 0.0 && get("totalMonth") >= get("totalDay"));
        assert!(get("totalNegYear") >= 0.0);
    }
}
