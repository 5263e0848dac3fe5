//! The house over time: the one query for what a control or one of its states did over a time
//! range ([`House::history`]), used by the `get_history` tool, the `home://history/...`
//! resource, `get_energy` and the dashboard's charts alike.
//!
//! **Where the values come from** (in this order, the first that can answer; the answer names
//! it in [`Series::source`]):
//! 1. the Miniserver's **Statistics V2** when the control's structure entry records the state
//!    in a `statisticV2` group: counters (`accumulated` groups) per hour, day, month or year as
//!    the Miniserver's own `diff` sums (the figures the Loxone app shows), everything else as
//!    the recorded values (`raw`);
//! 2. its **Statistics V1** month files when `statistic` records the state (columns mapped by
//!    output name, else a Meter's `total`, `actual` and a room controller's `tempActual`,
//!    `tempTarget` in that order, else the primary state first), their local wall-clock times
//!    read on the house's clock (the repeated autumn hour in series order);
//! 3. the server's **own record** of state changes ([`super::house::Record`]), kept for
//!    `[dashboard] history_days`.
//!
//! A source that fails (the Miniserver unreachable, an error answer) is named in
//! [`Series::left_out`] and the next one is asked; only when none can answer is it an error.
//!
//! **What a point is** depends on what the state measures ([`Measure`]): a *level*
//! (temperature, power, humidity) gives min, mean and max per bucket; a *counter* (a meter's
//! `total`) the amount it counted in the bucket, a reading below the one before being a reset
//! (the counter counted from 0 to the new reading; the Miniserver's `diff` for such a bucket is
//! recomputed from its raw records); a *switch* (on/off, open/closed, present) the seconds it
//! was on and how often it went on. Buckets are whole units of the house's calendar (a local
//! day has 23 or 25 hours on the days the clock changes), the first one the unit that contains
//! `from` (for weeks: from the day that contains it to the next Monday), the last one ending at
//! `to` or now.
//!
//! **Bounds**: a range is refused when it reaches into the future, when `from` is not before
//! `to`, or when it is longer than its resolution allows ([`max_days`]); an answer holds at
//! most `max_points` points (default [`DEFAULT_POINTS`], at most [`MAX_POINTS`]): more buckets
//! are merged (`step` says how many, the aggregates stay exact: min of mins, sums of sums), raw
//! values are cut, and [`Series::next`] says how to ask for the rest. The summary always covers
//! the whole range.

use std::fmt;

use jiff::{SignedDuration, Timestamp};
use serde_json::{json, Value as Json};

use super::house::{ControllerError, House};
use super::model::{Control, ControlKind, Home};
use super::primary::Primary;
use super::statistic::{Records, StatisticGroup, V2Mode, V2Request, V2Unit};
use super::time::{HouseTime, Unit};

/// Points an answer holds unless asked for more.
pub const DEFAULT_POINTS: usize = 200;
/// Points an answer holds at most (the range table's [`super::bounds::POINTS`]).
pub const MAX_POINTS: usize = super::bounds::POINTS.max as usize;
/// Values read from one source at most (about a year of one-minute records); more are left
/// out and the answer says so.
pub const MAX_SAMPLES: usize = 600_000;
/// Month files of Statistics V1 read for one question at most.
pub const MAX_V1_MONTHS: usize = 40;

/// How finely a history is answered: every recorded value, or one point per unit of the
/// house's calendar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    Raw,
    Every(Unit),
}

impl Resolution {
    /// `raw`, `hour`, `day`, `week`, `month`, `year`.
    pub const NAMES: &'static [&'static str] = &["raw", "hour", "day", "week", "month", "year"];

    /// Parses one of [`Resolution::NAMES`].
    pub fn parse(s: &str) -> Option<Resolution> {
        match s.trim().to_lowercase().as_str() {
            "raw" => Some(Resolution::Raw),
            other => Unit::parse(other).map(Resolution::Every),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Resolution::Raw => "raw",
            Resolution::Every(u) => u.as_str(),
        }
    }

    /// The resolution a range gets when none is asked: hours up to three days, days up to
    /// three months, months beyond.
    pub fn auto(from: Timestamp, to: Timestamp) -> Resolution {
        let days = to.duration_since(from).as_hours() / 24;
        Resolution::Every(if days <= 3 {
            Unit::Hour
        } else if days <= 93 {
            Unit::Day
        } else {
            Unit::Month
        })
    }
}

/// The longest range, in days, a resolution may cover: raw 31, hour 370, day and week 3660,
/// month and year 7320.
pub fn max_days(r: Resolution) -> i64 {
    match r {
        Resolution::Raw => 31,
        Resolution::Every(Unit::Hour) => 370,
        Resolution::Every(Unit::Day | Unit::Week) => 3660,
        Resolution::Every(Unit::Month | Unit::Year) => 7320,
    }
}

/// The range of a question in words: `period` ([`HouseTime::parse_period`]: `yesterday`,
/// `last month`, `-24h`, `2026-10`, `FROM/TO`), or `from` and `to`
/// ([`HouseTime::parse_instant`]; `to` defaults to now, `from` to 24 hours before `to`). Both
/// a period and `from`/`to` is an error.
pub fn range_of(
    time: &HouseTime,
    period: Option<&str>,
    from: Option<&str>,
    to: Option<&str>,
    now: Timestamp,
) -> Result<(Timestamp, Timestamp), HistoryError> {
    let words = |e: super::time::TimeWordError| HistoryError::Words(e.to_string());
    if let Some(p) = period.filter(|p| !p.trim().is_empty()) {
        if from.is_some() || to.is_some() {
            return Err(HistoryError::Words(
                "give either period or from/to, not both".into(),
            ));
        }
        return time.parse_period(p, now).map_err(words);
    }
    let to = match to {
        Some(t) => time.parse_instant(t, now).map_err(words)?,
        None => now,
    };
    let from = match from {
        Some(f) => time.parse_instant(f, now).map_err(words)?,
        None => to.checked_sub(SignedDuration::from_hours(24)).unwrap_or(to),
    };
    Ok((from, to))
}

/// A resolution in words ([`Resolution::NAMES`]; `auto` or nothing: [`Resolution::auto`]).
pub fn resolution_of(word: Option<&str>) -> Result<Option<Resolution>, HistoryError> {
    match word.map(str::trim) {
        None | Some("") | Some("auto") => Ok(None),
        Some(w) => Resolution::parse(w).map(Some).ok_or_else(|| {
            HistoryError::Words(format!(
                "resolution {w:?} is not one of raw, hour, day, week, month, year, auto"
            ))
        }),
    }
}

/// What a state measures, which decides what a point is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// A value at a time (temperature, power): min, mean, max.
    Level,
    /// A meter reading that grows (kWh): the amount counted per bucket.
    Counter,
    /// On/off, open/closed, present: time on and how often it went on.
    Switch,
}

impl Measure {
    pub fn as_str(self) -> &'static str {
        match self {
            Measure::Level => "level",
            Measure::Counter => "counter",
            Measure::Switch => "switch",
        }
    }
}

/// Where an answer's values come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    StatisticsV2,
    StatisticsV1,
    LocalRecord,
}

impl Source {
    /// `statistics_v2`, `statistics_v1`, `local_record`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::StatisticsV2 => "statistics_v2",
            Source::StatisticsV1 => "statistics_v1",
            Source::LocalRecord => "local_record",
        }
    }
}

/// One question: a control (its `uuidAction`), one of its states (default: its primary one),
/// a range `[from, to)` and a resolution (default [`Resolution::auto`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub control: String,
    pub state: Option<String>,
    pub from: Timestamp,
    pub to: Timestamp,
    pub resolution: Option<Resolution>,
    /// Default [`DEFAULT_POINTS`]; at most [`MAX_POINTS`].
    pub max_points: Option<usize>,
}

/// Why a history question has no answer. [`HistoryError::code`] maps each to the spec's
/// error codes (§7.1).
#[derive(Debug, Clone, PartialEq)]
pub enum HistoryError {
    /// No control has this UUID. `DEVICE_NOT_FOUND`.
    UnknownControl(String),
    /// The control has no such state (the names it has). `INVALID_PARAMETERS`.
    UnknownState {
        control: String,
        state: String,
        states: Vec<String>,
    },
    /// Neither the Miniserver nor the server's record keeps this state. `INVALID_PARAMETERS`.
    NoHistory { control: String, why: String },
    /// The range begins after now. `INVALID_PARAMETERS`.
    Future { from: String, now: String },
    /// `from` is not before `to`. `INVALID_PARAMETERS`.
    Reversed { from: String, to: String },
    /// The range is longer than the resolution allows ([`max_days`]). `INVALID_PARAMETERS`.
    TooLong {
        resolution: &'static str,
        days: i64,
        max_days: i64,
    },
    /// No source could be read (the last source's error). `CONNECTION_ERROR` etc.
    Unavailable(ControllerError),
    /// A time, period or resolution in words that is not understood (what is, in words).
    /// `INVALID_PARAMETERS`.
    Words(String),
}

impl HistoryError {
    /// The spec §7.1 error code.
    pub fn code(&self) -> &'static str {
        match self {
            HistoryError::UnknownControl(_) => "DEVICE_NOT_FOUND",
            HistoryError::Unavailable(e) => e.code(),
            _ => "INVALID_PARAMETERS",
        }
    }
}

impl fmt::Display for HistoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HistoryError::UnknownControl(c) => write!(f, "no device {c}"),
            HistoryError::UnknownState {
                control,
                state,
                states,
            } => write!(
                f,
                "{control} has no state {state:?}; its states are {}",
                states.join(", ")
            ),
            HistoryError::NoHistory { control, why } => {
                write!(f, "{control} has no history: {why}")
            }
            HistoryError::Future { from, now } => {
                write!(f, "the range begins in the future ({from}; now is {now})")
            }
            HistoryError::Reversed { from, to } => {
                write!(f, "from ({from}) must be before to ({to})")
            }
            HistoryError::TooLong {
                resolution,
                days,
                max_days,
            } => write!(
                f,
                "{days} days at resolution {resolution} is more than the {max_days} days it \
                 allows; shorten the range or choose a coarser resolution (raw, hour, day, week, \
                 month, year)"
            ),
            HistoryError::Unavailable(e) => write!(f, "the history could not be read: {e}"),
            HistoryError::Words(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for HistoryError {}

/// The aggregate of one bucket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Agg {
    /// Recorded values: smallest, time-weighted mean, largest, how many records.
    Level {
        min: f64,
        mean: f64,
        max: f64,
        count: usize,
    },
    /// What a counter counted in the bucket.
    Counter { sum: f64 },
    /// Seconds on, and how often it went on.
    Switch { on_secs: f64, changes: usize },
    /// One recorded value (resolution raw).
    Value(f64),
}

/// One point of an answer: a bucket `[start, end)` (for raw values `start == end`, the
/// record's time) and its aggregate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub start: Timestamp,
    pub end: Timestamp,
    pub agg: Agg,
}

/// Over the whole range.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Summary {
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub mean: Option<f64>,
    /// Records read in the range.
    pub count: usize,
    /// Counter: the amount counted.
    pub total: Option<f64>,
    /// Counter: the first and last reading in the range.
    pub first_reading: Option<f64>,
    pub last_reading: Option<f64>,
    /// Switch: seconds on, how often it went on, and the share of the covered time on.
    pub on_secs: Option<f64>,
    pub changes: Option<usize>,
    pub on_fraction: Option<f64>,
    /// Counter: resets seen (a reading below the one before).
    pub resets: usize,
}

/// How to ask for the rest: the same question with this range (and resolution).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Next {
    pub from: Timestamp,
    pub to: Timestamp,
    pub resolution: Resolution,
}

/// The answer to a [`Query`]. [`Series::to_json`] is its documented shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub control: String,
    pub name: String,
    pub room: Option<String>,
    pub kind: String,
    pub state: String,
    pub unit: Option<String>,
    pub measure: Measure,
    pub source: Source,
    /// How the source was asked, in words (`Statistics V2 group 2, diff per day`).
    pub source_detail: String,
    /// The range answered (whole buckets; may begin before the asked `from`).
    pub from: Timestamp,
    pub to: Timestamp,
    pub resolution: Resolution,
    /// Buckets merged into each point (1 unless the answer was bounded).
    pub step: usize,
    pub points: Vec<Point>,
    pub summary: Summary,
    /// Spans inside the range without any data (a month the Miniserver recorded nothing).
    pub no_data: Vec<(Timestamp, Timestamp)>,
    /// What was left out or could not be read, in words.
    pub left_out: Vec<String>,
    /// Whether values are missing because a source answered in part (a record cut short, an
    /// error for one month, the sample bound).
    pub partial: bool,
    pub next: Option<Next>,
}

/// Values read from a source: in time order, with the last one before the range (a
/// switch's state as the range begins, a counter's reading to count from).
#[derive(Debug, Clone, Default)]
struct Samples {
    before: Option<(Timestamp, f64)>,
    within: Vec<(Timestamp, f64)>,
    /// Whether the source records at each change (then a value holds until the next one)
    /// rather than at fixed intervals (then a bucket without records has no data).
    every_change: bool,
    problems: Vec<String>,
    partial: bool,
    no_data: Vec<(Timestamp, Timestamp)>,
    /// A counter's amounts per bucket as the Miniserver summed them (V2 `diff`): bucket
    /// start and amount.
    diffs: Option<Vec<(Timestamp, f64)>>,
    detail: String,
}

/// What a state measures: a counter when a V2 `accumulated` group records it or it is a
/// Meter's `total...` reading; a switch for the on/off states of switches, digital inputs,
/// presence detectors (and a V1 output shown as digital); else a level.
pub fn measure_of(c: &Control, state: &str) -> Measure {
    if let Some((g, _)) = c.statistic.v2_group_of(state) {
        if g.accumulated {
            return Measure::Counter;
        }
    }
    if c.kind == ControlKind::Meter && state.starts_with("total") {
        return Measure::Counter;
    }
    let digital_kind = matches!(
        c.kind,
        ControlKind::Switch
            | ControlKind::InfoOnlyDigital
            | ControlKind::PresenceDetector
            | ControlKind::TimedSwitch
            | ControlKind::Pushbutton
    );
    if (digital_kind && matches!(state, "active" | "value"))
        || matches!(state, "open" | "isOpen")
        || (c.statistic.v1.as_ref().is_some_and(|v| {
            v1_column(c, state).is_some_and(|i| v.outputs.get(i).is_some_and(|o| o.visu_type == 1))
        }))
    {
        return Measure::Switch;
    }
    Measure::Level
}

/// The V1 column recording `state`: the output named like it, else by type (a Meter's outputs
/// are `total`, `actual`, as a live export names them "Gesamtverbrauch,Leistung"; a room
/// controller's `tempActual`, `tempTarget`), else the first output for the primary state.
pub fn v1_column(c: &Control, state: &str) -> Option<usize> {
    let v1 = c.statistic.v1.as_ref()?;
    if let Some(i) = v1
        .outputs
        .iter()
        .position(|o| o.name.eq_ignore_ascii_case(state))
    {
        return Some(i);
    }
    let by_type: &[&str] = match c.kind {
        ControlKind::Meter => &["total", "actual"],
        ControlKind::IRoomController | ControlKind::IRoomControllerV2 => {
            &["tempActual", "tempTarget"]
        }
        _ => &[],
    };
    if let Some(i) = by_type.iter().position(|s| *s == state) {
        return (i < v1.outputs.len()).then_some(i);
    }
    (by_type.is_empty() && Primary::of(c).is_state(state)).then_some(0)
}

/// The state a history is about when none is asked: the primary one; a Meter's `total` (what
/// people ask a meter about is what it counted).
pub fn default_state(c: &Control) -> Option<String> {
    if c.kind == ControlKind::Meter && c.state("total").is_some() {
        return Some("total".into());
    }
    match Primary::of(c) {
        Primary::State(s) => Some(s.to_string()),
        _ => c
            .statistic
            .v2
            .first()
            .and_then(|g| g.points.first())
            .map(|p| p.output.clone()),
    }
}

fn v2_unit(u: Unit) -> V2Unit {
    match u {
        Unit::Hour => V2Unit::Hour,
        // Weeks are summed from days.
        Unit::Day | Unit::Week => V2Unit::Day,
        Unit::Month => V2Unit::Month,
        Unit::Year => V2Unit::Year,
    }
}

/// The recording interval of a V2 group mode or V1 frequency, in seconds; `None` for "every
/// change" (per Loxone structure file docs).
fn interval_of(code: i64) -> Option<i64> {
    match code {
        8 => Some(300),
        9 => Some(600),
        10 => Some(1800),
        11 => Some(3600),
        12 => Some(900),
        2..=6 => Some(60),
        _ => None,
    }
}

fn secs(t: Timestamp) -> i64 {
    t.as_second()
}

fn at(s: i64) -> Timestamp {
    Timestamp::from_second(s).unwrap_or(Timestamp::UNIX_EPOCH)
}

fn round(x: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (x * f).round() / f
}

/// The parts of a question once checked.
struct Plan<'a> {
    control: &'a Control,
    state: String,
    measure: Measure,
    from: Timestamp,
    to: Timestamp,
    resolution: Resolution,
    max_points: usize,
    now: Timestamp,
}

impl House {
    /// Answers `q` (see the module docs). `now` is the caller's clock (tests pin it).
    pub fn history_at(&self, q: &Query, now: Timestamp) -> Result<Series, HistoryError> {
        let home = self.home();
        let control = home
            .control(&q.control)
            .ok_or_else(|| HistoryError::UnknownControl(q.control.clone()))?;
        let time = self.time();
        let state = match &q.state {
            Some(s) if control.states.contains_key(s.as_str()) || s == "value" => s.clone(),
            Some(s) => {
                return Err(HistoryError::UnknownState {
                    control: control.name.clone(),
                    state: s.clone(),
                    states: control.states.keys().cloned().collect(),
                })
            }
            None => default_state(control).ok_or_else(|| HistoryError::NoHistory {
                control: control.name.clone(),
                why: "it has no value that changes over time".into(),
            })?,
        };
        if q.from > now {
            return Err(HistoryError::Future {
                from: time.format(q.from),
                now: time.format(now),
            });
        }
        if q.from >= q.to {
            return Err(HistoryError::Reversed {
                from: time.format(q.from),
                to: time.format(q.to),
            });
        }
        let to = q.to.min(now);
        let resolution = q.resolution.unwrap_or_else(|| Resolution::auto(q.from, to));
        let days = to.duration_since(q.from).as_secs().div_euclid(86_400);
        if days > max_days(resolution) {
            return Err(HistoryError::TooLong {
                resolution: resolution.as_str(),
                days,
                max_days: max_days(resolution),
            });
        }
        // Whole calendar units; weeks are made of whole days, the first from the asked day.
        let from = match resolution {
            Resolution::Raw => q.from,
            Resolution::Every(Unit::Week) => time.start_of(Unit::Day, q.from),
            Resolution::Every(u) => time.start_of(u, q.from),
        };
        let plan = Plan {
            control,
            measure: measure_of(control, &state),
            state,
            from,
            to,
            resolution,
            max_points: q.max_points.unwrap_or(DEFAULT_POINTS).clamp(1, MAX_POINTS),
            now,
        };
        let (source, samples, mut notes) = self.read_samples(&plan)?;
        notes.extend(samples.problems.iter().cloned());
        Ok(build(self, &home, &plan, source, samples, notes))
    }

    /// [`House::history_at`] with the current time.
    pub fn history(&self, q: &Query) -> Result<Series, HistoryError> {
        self.history_at(q, Timestamp::now())
    }

    /// Tries the sources in order; the first that answers wins, the failures are noted.
    fn read_samples(&self, p: &Plan) -> Result<(Source, Samples, Vec<String>), HistoryError> {
        let c = p.control;
        let mut notes = Vec::new();
        let mut last_error = None;
        if let Some(stats) = self.statistics() {
            if let Some((group, position)) = c.statistic.v2_group_of(&p.state) {
                match self.read_v2(stats.as_ref(), p, group, position) {
                    Ok(s) => return Ok((Source::StatisticsV2, s, notes)),
                    Err(e) => {
                        notes.push(format!("Statistics V2 could not be read: {e}"));
                        last_error = Some(e);
                    }
                }
            }
            if let Some(column) = v1_column(c, &p.state) {
                match self.read_v1(stats.as_ref(), p, column) {
                    Ok(s) => return Ok((Source::StatisticsV1, s, notes)),
                    Err(e) => {
                        notes.push(format!("Statistics V1 could not be read: {e}"));
                        last_error = Some(e);
                    }
                }
            }
        }
        if let Some(record) = self.local_record() {
            let first = recorded_names(p)
                .iter()
                .filter_map(|n| record.first_recorded(&c.uuid, Some(n)).ok().flatten())
                .min();
            if first.is_some() {
                match read_local(record.as_ref(), p) {
                    Ok(s) => {
                        if !c.statistic.is_empty() && last_error.is_none() {
                            notes.push(
                                "the Miniserver's statistics do not record this state".into(),
                            );
                        }
                        return Ok((Source::LocalRecord, s, notes));
                    }
                    Err(e) => notes.push(format!("the local record could not be read: {e}")),
                }
            }
        }
        match last_error {
            Some(e) => Err(HistoryError::Unavailable(e)),
            None => Err(HistoryError::NoHistory {
                control: c.name.clone(),
                why: format!(
                    "the Miniserver records no statistics of its state {:?} and this server \
                     has recorded nothing of it yet ({})",
                    p.state,
                    match self.local_record() {
                        Some(_) =>
                            "it records changes as they happen; see [dashboard] \
                                    history_states, history_devices and history_skip",
                        None => "it keeps no record",
                    }
                ),
            }),
        }
    }

    fn read_v2(
        &self,
        stats: &dyn super::house::Statistics,
        p: &Plan,
        group: &StatisticGroup,
        position: usize,
    ) -> Result<Samples, ControllerError> {
        let interval = interval_of(group.mode);
        let mut s = Samples {
            every_change: interval.is_none(),
            ..Samples::default()
        };
        let request = |mode: V2Mode, unit: V2Unit, from: i64, until: i64| V2Request {
            group: group.id,
            output: group.points[position].output.clone(),
            group_size: group.points.len(),
            mode,
            unit,
            from_unix: from,
            until_unix: until,
        };
        // Which groups hold data, and since when: a group the Miniserver does not list has
        // none (statistics.md A2).
        match stats.v2_info(p.control) {
            Ok(info) => match info.iter().find(|g| g.id == group.id) {
                None => s.problems.push(format!(
                    "the Miniserver lists no data of group {}",
                    group.id
                )),
                Some(g) if g.active_since > secs(p.from) => {
                    s.no_data.push((p.from, at(g.active_since).min(p.to)));
                }
                Some(_) => {}
            },
            Err(e) if e.is_unreachable() => return Err(e),
            Err(e) => s.problems.push(format!("getStatisticInfo: {e}")),
        }
        let until = secs(p.to) - 1;
        if let (Measure::Counter, Resolution::Every(unit)) = (p.measure, p.resolution) {
            let answer = stats.v2_data(
                p.control,
                &request(V2Mode::Diff, v2_unit(unit), secs(p.from), until),
            )?;
            s.partial |= !answer.problems.is_empty();
            s.problems.extend(answer.problems.iter().cloned());
            let mut diffs = Vec::with_capacity(answer.len());
            for i in 0..answer.len() {
                let start = at(answer.times[i]);
                let v = answer.row(i)[0];
                if v >= 0.0 {
                    diffs.push((start, v));
                    continue;
                }
                // A negative amount: the counter was reset in this bucket. Count it from the
                // raw records instead (a reading below the one before counts from 0).
                let time = self.time();
                let b0 = time.start_of(Unit::from_v2(v2_unit(unit)), start);
                let b1 = time.next_start(Unit::from_v2(v2_unit(unit)), start);
                let look = interval.unwrap_or(86_400) * 2;
                let raw = stats.v2_data(
                    p.control,
                    &request(V2Mode::Raw, V2Unit::All, secs(b0) - look, secs(b1)),
                )?;
                let mut amount = 0.0;
                let mut prev: Option<f64> = None;
                for k in 0..raw.len() {
                    let (t, r) = (raw.times[k], raw.row(k)[0]);
                    if let Some(before) = prev {
                        if t > secs(b0) && t <= secs(b1) {
                            amount += if r < before { r } else { r - before };
                        }
                    }
                    prev = Some(r);
                }
                s.problems.push(format!(
                    "the counter was reset in the bucket of {}; its amount is counted from the \
                     recorded readings",
                    time.format(b0)
                ));
                diffs.push((start, round(amount, 6)));
            }
            s.diffs = Some(diffs);
            s.detail = format!(
                "Statistics V2 group {} ({}), diff per {}",
                group.id,
                group.points[position].output,
                v2_unit(unit).as_str()
            );
            return Ok(s);
        }
        let look = match (p.measure, interval) {
            (Measure::Switch, _) | (_, None) => 7 * 86_400,
            (_, Some(i)) => 2 * i,
        };
        // A counter's reading at `to` closes the last bucket.
        let until = if p.measure == Measure::Counter {
            until + 1
        } else {
            until
        };
        let answer = stats.v2_data(
            p.control,
            &request(V2Mode::Raw, V2Unit::All, secs(p.from) - look, until),
        )?;
        s.partial |= !answer.problems.is_empty();
        s.problems.extend(answer.problems.iter().cloned());
        for i in 0..answer.len().min(MAX_SAMPLES) {
            let t = at(answer.times[i]);
            let v = answer.row(i)[0];
            if t < p.from || (t == p.from && p.measure == Measure::Counter) {
                s.before = Some((t, v));
            } else if t < p.to || (t == p.to && p.measure == Measure::Counter) {
                s.within.push((t, v));
            }
        }
        if answer.len() > MAX_SAMPLES {
            s.partial = true;
            s.problems.push(format!(
                "more than {MAX_SAMPLES} records; the later ones are left out"
            ));
        }
        s.detail = format!(
            "Statistics V2 group {} ({}), raw records",
            group.id, group.points[position].output
        );
        Ok(s)
    }

    fn read_v1(
        &self,
        stats: &dyn super::house::Statistics,
        p: &Plan,
        column: usize,
    ) -> Result<Samples, ControllerError> {
        let time = self.time();
        let v1 = p.control.statistic.v1.as_ref().ok_or_else(|| {
            ControllerError::Unsupported("the control has no V1 statistics".into())
        })?;
        let interval = interval_of(v1.frequency);
        let mut s = Samples {
            every_change: interval.is_none(),
            detail: format!(
                "Statistics V1 month files, output {} ({})",
                column,
                v1.outputs.get(column).map_or("", |o| o.name.as_str())
            ),
            ..Samples::default()
        };
        let look = match (p.measure, interval) {
            (Measure::Switch, _) | (_, None) => SignedDuration::from_hours(24 * 7),
            (_, Some(i)) => SignedDuration::from_secs(2 * i),
        };
        let first = p.from.checked_sub(look).unwrap_or(p.from);
        // The local months from the one before the range (the value it begins with) to the
        // one containing its end.
        let mut months = Vec::new();
        let mut m = time.start_of(Unit::Month, first);
        // A counter's reading at `to` closes the last bucket (it may open the next month).
        while m < p.to || (m == p.to && p.measure == Measure::Counter) {
            months.push(m);
            m = time.next_start(Unit::Month, m);
        }
        if months.len() > MAX_V1_MONTHS {
            let skipped = months.len() - MAX_V1_MONTHS;
            months.drain(..skipped);
            s.partial = true;
            s.problems.push(format!(
                "at most {MAX_V1_MONTHS} month files are read per question; the first \
                 {skipped} months of the range are left out"
            ));
        }
        let mut prev: Option<Timestamp> = None;
        let mut total = 0usize;
        for start in months {
            let z = time.zoned(start);
            let records = match stats.v1_month(p.control, i32::from(z.year()), z.month() as u8) {
                Ok(r) => r,
                Err(e) if e.is_unreachable() => return Err(e),
                Err(e) => {
                    s.partial = true;
                    s.problems.push(format!(
                        "the month {} could not be read: {e}",
                        z.strftime("%Y-%m")
                    ));
                    continue;
                }
            };
            if !records.problems.is_empty() {
                s.partial = true;
                s.problems.extend(
                    records
                        .problems
                        .iter()
                        .map(|m| format!("{}: {m}", z.strftime("%Y-%m"))),
                );
            }
            if records.is_empty() {
                let end = time.next_start(Unit::Month, start);
                if end > p.from && start < p.to {
                    s.no_data.push((start.max(p.from), end.min(p.to)));
                }
                continue;
            }
            push_v1(&mut s, &records, column, time, &mut prev, p, &mut total);
        }
        Ok(s)
    }
}

impl Unit {
    fn from_v2(u: V2Unit) -> Unit {
        match u {
            V2Unit::Hour | V2Unit::All => Unit::Hour,
            V2Unit::Day => Unit::Day,
            V2Unit::Month => Unit::Month,
            V2Unit::Year => Unit::Year,
        }
    }
}

/// Adds one V1 month's records of `column` to `s`, their local times read in series order.
fn push_v1(
    s: &mut Samples,
    records: &Records,
    column: usize,
    time: &HouseTime,
    prev: &mut Option<Timestamp>,
    p: &Plan,
    total: &mut usize,
) {
    if column >= records.width {
        return;
    }
    for i in 0..records.len() {
        let Some(t) = time.from_local_secs(records.times[i], *prev) else {
            continue;
        };
        *prev = Some(t);
        let v = records.row(i)[column];
        let counter = p.measure == Measure::Counter;
        if t < p.from || (t == p.from && counter) {
            s.before = Some((t, v));
        } else if t < p.to || (t == p.to && counter) {
            if *total >= MAX_SAMPLES {
                if !s.partial {
                    s.partial = true;
                    s.problems.push(format!(
                        "more than {MAX_SAMPLES} records; the later ones are left out"
                    ));
                }
                return;
            }
            *total += 1;
            s.within.push((t, v));
        }
    }
}

/// The names the local record keeps the state under: its own, and `value` for a primary
/// state (a polled primary value is kept so).
fn recorded_names(p: &Plan) -> Vec<String> {
    let mut names = vec![p.state.clone()];
    if p.state != "value" && Primary::of(p.control).is_state(&p.state) {
        names.push("value".into());
    }
    names
}

/// The local record of the state (and of `value`, under which a polled primary value is kept).
fn read_local(record: &dyn super::house::Record, p: &Plan) -> Result<Samples, String> {
    let c = p.control;
    let names = recorded_names(p);
    let look = match p.measure {
        Measure::Switch => 7 * 86_400_000,
        _ => 86_400_000,
    };
    let from_ms = p.from.as_millisecond();
    let mut s = Samples {
        every_change: true,
        detail: format!(
            "the server's own record of state changes (kept {} days)",
            record.retention_days()
        ),
        ..Samples::default()
    };
    let mut all: Vec<(i64, f64)> = Vec::new();
    let mut before: Option<(i64, f64)> = None;
    for name in &names {
        let (b, r) = record.series(
            &c.uuid,
            name,
            from_ms - look,
            p.to.as_millisecond() + 1,
            MAX_SAMPLES,
        )?;
        if let Some(b) = b {
            if before.is_none_or(|x| b.0 > x.0) {
                before = Some(b);
            }
        }
        for i in 0..r.len() {
            all.push((r.times[i], r.row(i)[0]));
        }
        if !r.problems.is_empty() {
            s.partial = true;
            s.problems.extend(r.problems.iter().cloned());
        }
    }
    all.sort_by_key(|x| x.0);
    let ms = |m: i64| Timestamp::from_millisecond(m).unwrap_or(Timestamp::UNIX_EPOCH);
    let counter = p.measure == Measure::Counter;
    let to_ms = p.to.as_millisecond();
    for (t, v) in all {
        if t < from_ms || (t == from_ms && counter) {
            before = Some((t, v));
        } else if t < to_ms || (t == to_ms && counter) {
            s.within.push((ms(t), v));
        }
    }
    s.before = before.map(|(t, v)| (ms(t), v));
    let first = names
        .iter()
        .filter_map(|n| record.first_recorded(&c.uuid, Some(n)).ok().flatten())
        .min();
    if let Some(first) = first {
        if first > from_ms {
            s.no_data.push((p.from, ms(first).min(p.to)));
        }
    }
    let kept_since = p.now.as_millisecond() - i64::from(record.retention_days()) * 86_400_000;
    if from_ms < kept_since {
        s.problems.push(format!(
            "the local record keeps {} days; older values are not kept",
            record.retention_days()
        ));
    }
    Ok(s)
}

/// Per-bucket aggregation of a level: min and max of the records, the time-weighted mean
/// (a value holds until the next record; at fixed intervals the plain mean), their count.
fn level_bucket(
    samples: &[(Timestamp, f64)],
    carried: Option<f64>,
    b0: Timestamp,
    b1: Timestamp,
    every_change: bool,
) -> Option<Agg> {
    if samples.is_empty() {
        return carried.filter(|_| every_change).map(|v| Agg::Level {
            min: v,
            max: v,
            mean: v,
            count: 0,
        });
    }
    let min = samples.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    let max = samples
        .iter()
        .map(|x| x.1)
        .fold(f64::NEG_INFINITY, f64::max);
    let mean = if every_change {
        let mut weighted = 0.0;
        let mut span = 0.0;
        let mut cur = carried.map(|v| (b0, v));
        for &(t, v) in samples {
            if let Some((t0, v0)) = cur {
                let d = t.duration_since(t0).as_secs_f64();
                weighted += v0 * d;
                span += d;
            }
            cur = Some((t, v));
        }
        if let Some((t0, v0)) = cur {
            let d = b1.duration_since(t0).as_secs_f64().max(0.0);
            weighted += v0 * d;
            span += d;
        }
        if span > 0.0 {
            weighted / span
        } else {
            samples.iter().map(|x| x.1).sum::<f64>() / samples.len() as f64
        }
    } else {
        samples.iter().map(|x| x.1).sum::<f64>() / samples.len() as f64
    };
    Some(Agg::Level {
        min,
        max,
        mean,
        count: samples.len(),
    })
}

/// What a counter counted from `before` through `samples` (a reading below the previous one is
/// a reset: counted from 0), and how many resets.
fn counted(before: Option<f64>, samples: &[(Timestamp, f64)]) -> (f64, usize) {
    let mut sum = 0.0;
    let mut resets = 0;
    let mut prev = before;
    for &(_, v) in samples {
        if let Some(p) = prev {
            if v < p {
                resets += 1;
                sum += v;
            } else {
                sum += v - p;
            }
        }
        prev = Some(v);
    }
    (sum, resets)
}

/// Seconds on and how often it went on in `[b0, b1)`, the state at `b0` being `carried`
/// (unknown: counted from the first record).
fn switch_bucket(
    samples: &[(Timestamp, f64)],
    carried: Option<f64>,
    b0: Timestamp,
    b1: Timestamp,
) -> Option<Agg> {
    if samples.is_empty() && carried.is_none() {
        return None;
    }
    let mut on = 0.0;
    let mut changes = 0;
    let mut cur = carried.map(|v| (b0, v));
    for &(t, v) in samples {
        if let Some((t0, v0)) = cur {
            if v0 != 0.0 {
                on += t.duration_since(t0).as_secs_f64();
            }
            if v0 == 0.0 && v != 0.0 {
                changes += 1;
            }
        } else if v != 0.0 && carried.is_none() {
            // The first record of all is on: it went on then (or earlier; unknown).
        }
        cur = Some((t, v));
    }
    if let Some((t0, v0)) = cur {
        if v0 != 0.0 {
            on += b1.duration_since(t0).as_secs_f64().max(0.0);
        }
    }
    Some(Agg::Switch {
        on_secs: on,
        changes,
    })
}

/// Builds the answer from what a source gave.
fn build(
    house: &House,
    home: &Home,
    p: &Plan,
    source: Source,
    mut s: Samples,
    mut notes: Vec<String>,
) -> Series {
    let time = house.time();
    let c = p.control;
    let unit = c.unit_of(&p.state).or_else(|| {
        c.statistic
            .v2_group_of(&p.state)
            .and_then(|(g, i)| g.points[i].format.as_deref())
            .and_then(super::model::unit_of_format)
    });
    let mut summary = Summary {
        count: s.within.len(),
        ..Summary::default()
    };
    let mut points = Vec::new();
    let mut next = None;
    let mut step = 1;
    let end = p.to;
    match p.resolution {
        Resolution::Raw => {
            for &(t, v) in s.within.iter().take(p.max_points) {
                points.push(Point {
                    start: t,
                    end: t,
                    agg: Agg::Value(v),
                });
            }
            if s.within.len() > p.max_points {
                next = Some(Next {
                    from: s.within[p.max_points].0,
                    to: p.to,
                    resolution: Resolution::Raw,
                });
                notes.push(format!(
                    "{} of {} values are shown; `next` asks for the rest",
                    p.max_points,
                    s.within.len()
                ));
            }
        }
        Resolution::Every(u) => {
            let mut buckets = Vec::new();
            let mut b0 = p.from;
            while b0 < end {
                let b1 = time.next_start(u, b0).min(end);
                buckets.push((b0, b1));
                if b1 <= b0 {
                    break;
                }
                b0 = b1;
            }
            let summed = s.diffs.is_some();
            if let Some(diffs) = s.diffs.take() {
                // Counter amounts the Miniserver summed (each stamped with its bucket's
                // start); weeks from days.
                summary.count = diffs.len();
                for &(b0, b1) in &buckets {
                    let in_bucket: Vec<f64> = diffs
                        .iter()
                        .filter(|(t, _)| *t >= b0 && *t < b1)
                        .map(|x| x.1)
                        .collect();
                    if !in_bucket.is_empty() {
                        points.push(Point {
                            start: b0,
                            end: b1,
                            agg: Agg::Counter {
                                sum: in_bucket.iter().sum(),
                            },
                        });
                    }
                }
            } else {
                // A counter's readings count for the bucket they end: (b0, b1], so the
                // reading at midnight closes the day before (as the Miniserver's `diff`).
                let closes = |t: Timestamp, b1: Timestamp| match p.measure {
                    Measure::Counter => t <= b1,
                    _ => t < b1,
                };
                let mut i = 0;
                let mut carried = s.before.map(|x| x.1);
                for &(b0, b1) in &buckets {
                    let first = i;
                    while i < s.within.len() && closes(s.within[i].0, b1) {
                        i += 1;
                    }
                    let slice = &s.within[first..i];
                    let agg = match p.measure {
                        Measure::Level => level_bucket(slice, carried, b0, b1, s.every_change),
                        Measure::Switch => switch_bucket(slice, carried, b0, b1),
                        Measure::Counter => {
                            let (sum, resets) = counted(carried, slice);
                            summary.resets += resets;
                            (!slice.is_empty()).then_some(Agg::Counter { sum })
                        }
                    };
                    if let Some(agg) = agg {
                        points.push(Point {
                            start: b0,
                            end: b1,
                            agg,
                        });
                    }
                    if let Some(&(_, v)) = slice.last() {
                        carried = Some(v);
                    }
                }
            }
            // Spans of fixed-interval data without any record.
            if !s.every_change || summed {
                let mut open: Option<Timestamp> = None;
                let mut pi = 0;
                for &(b0, _) in &buckets {
                    let has = pi < points.len() && points[pi].start == b0;
                    if has {
                        pi += 1;
                        if let Some(o) = open.take() {
                            s.no_data.push((o, b0));
                        }
                    } else if open.is_none() {
                        open = Some(b0);
                    }
                }
                if let Some(o) = open {
                    // The current bucket may simply not have a record yet.
                    if end.duration_since(o) > SignedDuration::from_hours(2) {
                        s.no_data.push((o, end));
                    }
                }
            }
            summarize(&mut summary, &points, p.measure, &s);
            if points.len() > p.max_points {
                step = points.len().div_ceil(p.max_points);
                let full_to = points[p.max_points - 1].end;
                points = merge(&points, step);
                next = Some(Next {
                    from: p.from,
                    to: full_to,
                    resolution: p.resolution,
                });
                notes.push(format!(
                    "{} buckets are merged {step} to a point to stay within {} points; `next` \
                     asks for the first {} at full resolution",
                    points.len() * step,
                    p.max_points,
                    p.max_points
                ));
            }
        }
    }
    if p.resolution == Resolution::Raw {
        summarize_raw(&mut summary, &s, p);
    }
    s.no_data.sort_by_key(|x| x.0);
    s.no_data.dedup();
    Series {
        control: c.uuid.clone(),
        name: c.name.clone(),
        room: home.room_name(c).map(str::to_string).or_else(|| {
            let (parent, _) = c.uuid.split_once('/')?;
            home.control(parent)
                .and_then(|p| home.room_name(p))
                .map(str::to_string)
        }),
        kind: c.kind.as_str().to_string(),
        state: p.state.clone(),
        unit,
        measure: p.measure,
        source,
        source_detail: s.detail.clone(),
        from: p.from,
        to: p.to,
        resolution: p.resolution,
        step,
        points,
        summary,
        no_data: s.no_data,
        left_out: notes,
        partial: s.partial,
        next,
    }
}

/// The whole range's summary from the buckets (before merging).
fn summarize(sum: &mut Summary, points: &[Point], measure: Measure, s: &Samples) {
    let mut min = f64::INFINITY;
    let mut max = f64::NEG_INFINITY;
    let (mut weighted, mut span) = (0.0, 0.0);
    let (mut total, mut on, mut changes, mut covered) = (0.0, 0.0, 0, 0.0);
    for pt in points {
        let d = pt.end.duration_since(pt.start).as_secs_f64();
        match pt.agg {
            Agg::Level {
                min: a,
                mean,
                max: b,
                ..
            } => {
                min = min.min(a);
                max = max.max(b);
                weighted += mean * d;
                span += d;
            }
            Agg::Counter { sum: x } => total += x,
            Agg::Switch {
                on_secs,
                changes: n,
            } => {
                on += on_secs;
                changes += n;
                covered += d;
            }
            Agg::Value(_) => {}
        }
    }
    match measure {
        Measure::Level if span > 0.0 => {
            sum.min = Some(min);
            sum.max = Some(max);
            sum.mean = Some(weighted / span);
        }
        Measure::Counter => {
            sum.total = Some(total);
            // The readings when the records themselves were read (not the Miniserver's sums).
            if !s.within.is_empty() {
                sum.first_reading = s.before.map(|x| x.1).or(s.within.first().map(|x| x.1));
                sum.last_reading = s.within.last().map(|x| x.1);
            }
        }
        Measure::Switch if covered > 0.0 => {
            sum.on_secs = Some(on);
            sum.changes = Some(changes);
            sum.on_fraction = Some(on / covered);
        }
        _ => {}
    }
}

/// The summary of a raw answer, from every value in the range.
fn summarize_raw(sum: &mut Summary, s: &Samples, p: &Plan) {
    if s.within.is_empty() {
        return;
    }
    match p.measure {
        Measure::Counter => {
            let (total, resets) = counted(s.before.map(|x| x.1), &s.within);
            sum.total = Some(total);
            sum.resets = resets;
            sum.first_reading = s.before.map(|x| x.1).or(s.within.first().map(|x| x.1));
            sum.last_reading = s.within.last().map(|x| x.1);
        }
        Measure::Switch => {
            if let Some(Agg::Switch { on_secs, changes }) =
                switch_bucket(&s.within, s.before.map(|x| x.1), p.from, p.to)
            {
                sum.on_secs = Some(on_secs);
                sum.changes = Some(changes);
                let covered = p.to.duration_since(p.from).as_secs_f64();
                sum.on_fraction = (covered > 0.0).then_some(on_secs / covered);
            }
        }
        Measure::Level => {
            if let Some(Agg::Level { min, mean, max, .. }) = level_bucket(
                &s.within,
                s.before.map(|x| x.1),
                p.from,
                p.to,
                s.every_change,
            ) {
                sum.min = Some(min);
                sum.max = Some(max);
                sum.mean = Some(mean);
            }
        }
    }
}

/// Merges every `step` consecutive points into one, keeping the aggregates exact.
fn merge(points: &[Point], step: usize) -> Vec<Point> {
    points
        .chunks(step)
        .map(|chunk| {
            let start = chunk[0].start;
            let end = chunk[chunk.len() - 1].end;
            let agg = chunk[1..].iter().fold(chunk[0].agg, |acc, pt| {
                match (acc, pt.agg) {
                    (
                        Agg::Level {
                            min: a,
                            mean: m1,
                            max: b,
                            count: n1,
                        },
                        Agg::Level {
                            min: c,
                            mean: m2,
                            max: d,
                            count: n2,
                        },
                    ) => {
                        // Weighted by covered time.
                        let w1 = pt.start.duration_since(start).as_secs_f64();
                        let w2 = pt.end.duration_since(pt.start).as_secs_f64();
                        let mean = if w1 + w2 > 0.0 {
                            (m1 * w1 + m2 * w2) / (w1 + w2)
                        } else {
                            (m1 + m2) / 2.0
                        };
                        Agg::Level {
                            min: a.min(c),
                            mean,
                            max: b.max(d),
                            count: n1 + n2,
                        }
                    }
                    (Agg::Counter { sum: a }, Agg::Counter { sum: b }) => {
                        Agg::Counter { sum: a + b }
                    }
                    (
                        Agg::Switch {
                            on_secs: a,
                            changes: n,
                        },
                        Agg::Switch {
                            on_secs: b,
                            changes: m,
                        },
                    ) => Agg::Switch {
                        on_secs: a + b,
                        changes: n + m,
                    },
                    (acc, _) => acc,
                }
            });
            Point { start, end, agg }
        })
        .collect()
}

impl Series {
    /// The columns of [`Series::to_json`]'s `points` rows.
    pub fn columns(&self) -> &'static [&'static str] {
        match (self.resolution, self.measure) {
            (Resolution::Raw, _) => &["time", "value"],
            (_, Measure::Level) => &["start", "min", "mean", "max", "count"],
            (_, Measure::Counter) => &["start", "amount"],
            (_, Measure::Switch) => &["start", "on_seconds", "went_on"],
        }
    }

    /// The answer as JSON (times ISO 8601 with the house's offset, numbers rounded to what the
    /// source resolves):
    ///
    /// `{"device": {"uuid", "name", "room", "type"}, "state", "unit", "measure": "level" |
    /// "counter" | "switch", "source": "statistics_v2" | "statistics_v1" | "local_record",
    /// "source_detail", "time_zone", "from", "to", "resolution", "step" (buckets per point),
    /// "columns": [...], "points": [[start, ...], ...], "summary": {...}, "no_data": [{"from",
    /// "to"}], "left_out": [text], "partial", "next": {"from", "to", "resolution"} | null}`.
    ///
    /// Columns: raw `time, value`; a level `start, min, mean, max, count`; a counter `start,
    /// amount` (what it counted in the bucket, in `unit`); a switch `start, on_seconds,
    /// went_on`. The summary has `min, max, mean, count` (level), `total, first_reading,
    /// last_reading, resets` (counter) or `on_seconds, on_hours, went_on, on_fraction`
    /// (switch).
    pub fn to_json(&self, time: &HouseTime) -> Json {
        let t = |x: Timestamp| time.format(x);
        let r = |x: f64| round(x, 3);
        let rows: Vec<Json> = self
            .points
            .iter()
            .map(|p| match p.agg {
                Agg::Value(v) => json!([t(p.start), r(v)]),
                Agg::Level {
                    min,
                    mean,
                    max,
                    count,
                } => json!([t(p.start), r(min), r(mean), r(max), count]),
                Agg::Counter { sum } => json!([t(p.start), r(sum)]),
                Agg::Switch { on_secs, changes } => {
                    json!([t(p.start), on_secs.round() as i64, changes])
                }
            })
            .collect();
        let s = &self.summary;
        let summary = match self.measure {
            Measure::Level => json!({
                "min": s.min.map(r), "max": s.max.map(r), "mean": s.mean.map(r),
                "count": s.count,
            }),
            Measure::Counter => json!({
                "total": s.total.map(r), "first_reading": s.first_reading.map(r),
                "last_reading": s.last_reading.map(r), "resets": s.resets, "count": s.count,
            }),
            Measure::Switch => json!({
                "on_seconds": s.on_secs.map(|x| x.round() as i64),
                "on_hours": s.on_secs.map(|x| round(x / 3600.0, 2)),
                "went_on": s.changes,
                "on_fraction": s.on_fraction.map(|x| round(x, 3)),
                "count": s.count,
            }),
        };
        json!({
            "device": {"uuid": self.control, "name": self.name, "room": self.room, "type": self.kind},
            "state": self.state,
            "unit": self.unit,
            "measure": self.measure.as_str(),
            "source": self.source.as_str(),
            "source_detail": self.source_detail,
            "time_zone": time.name(),
            "from": t(self.from),
            "to": t(self.to),
            "resolution": self.resolution.as_str(),
            "step": self.step,
            "columns": self.columns(),
            "points": rows,
            "summary": summary,
            "no_data": self.no_data.iter().map(|(a, b)| json!({"from": t(*a), "to": t(*b)})).collect::<Vec<_>>(),
            "left_out": self.left_out,
            "partial": self.partial,
            "next": self.next.map(|n| json!({"from": t(n.from), "to": t(n.to), "resolution": n.resolution.as_str()})),
        })
    }
}
