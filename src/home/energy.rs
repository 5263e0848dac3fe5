//! Energy as people think of it: how much the house used, produced, bought, sold and stored
//! per day, week, month or year, for a period or compared with another, in kWh
//! ([`House::energy`]). It is built on the one history query ([`super::history`]): each
//! meter's counters (`total`, and `totalNeg` of a bidirectional or storage meter) as the
//! Miniserver's own `diff` sums (Statistics V2), its V1 files or the server's record; a
//! current period that the Miniserver totals itself (`totalDay`, `totalWeek`, `totalMonth`,
//! `totalYear` and their `Neg` twins, statistics.md A3) is read from those states.
//!
//! **What a meter is** ([`Role`]), decided here once: the node type an energy flow monitor
//! (`EnergyFlowMonitor`, `details.nodes[].ctrlUuid`) gives it (Grid, Production, Storage,
//! Load); else a Meter's `details.type` (`bidirectional`: the grid connection, `storage`: a
//! battery); else its name (PV, Solar, Photovoltaik: production); else a consumer.
//! **The figures**: `import` and `export` from the grid meter's `total` and `totalNeg`,
//! `production` from production meters, `discharge` and `charge` from storage meters'
//! `total` and `totalNeg`; `consumption` is the house's balance, import − export +
//! production + discharge − charge, when a grid meter is known, else the consumers' sum.

use jiff::Timestamp;
use serde_json::{json, Value as Json};

use super::history::{Agg, HistoryError, Query, Resolution, Series};
use super::house::House;
use super::model::{Control, ControlKind, Home};
use super::names::fold;
use super::time::{HouseTime, Unit};

/// What a meter measures for the house.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The grid connection: `total` bought (import), `totalNeg` sold (export).
    Grid,
    /// Production (photovoltaics): `total` produced.
    Production,
    /// A battery: `total` discharged, `totalNeg` charged.
    Storage,
    /// A consumer (a circuit, a car charger): `total` used.
    Consumer,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Grid => "grid",
            Role::Production => "production",
            Role::Storage => "storage",
            Role::Consumer => "consumer",
        }
    }
}

/// The figures of a period, kWh; `None` where the house has no meter for it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Figures {
    pub consumption: Option<f64>,
    pub production: Option<f64>,
    pub import: Option<f64>,
    pub export: Option<f64>,
    pub charge: Option<f64>,
    pub discharge: Option<f64>,
}

impl Figures {
    /// The figures' names in the order answers list them.
    pub const NAMES: [&'static str; 6] = [
        "consumption",
        "production",
        "import",
        "export",
        "charge",
        "discharge",
    ];

    fn get(&self, name: &str) -> Option<f64> {
        match name {
            "consumption" => self.consumption,
            "production" => self.production,
            "import" => self.import,
            "export" => self.export,
            "charge" => self.charge,
            "discharge" => self.discharge,
            _ => None,
        }
    }

    fn add(slot: &mut Option<f64>, v: f64) {
        *slot = Some(slot.unwrap_or(0.0) + v);
    }

    /// `{"consumption": kWh, ...}` for the figures the house has, rounded to Wh.
    pub fn to_json(&self) -> Json {
        let mut m = serde_json::Map::new();
        for n in Self::NAMES {
            if let Some(v) = self.get(n) {
                m.insert(n.into(), json!(round3(v)));
            }
        }
        Json::Object(m)
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The energy flow monitors of the house: controls of type `EnergyFlowMonitor` (`EFM` in some
/// exports).
fn flow_monitors(home: &Home) -> impl Iterator<Item = &Control> {
    home.controls
        .iter()
        .filter(|c| matches!(c.kind.as_str(), "EnergyFlowMonitor" | "EFM"))
}

/// The role of the meter `c` (see the module docs).
pub fn role_of(home: &Home, c: &Control) -> Role {
    for efm in flow_monitors(home) {
        let nodes = efm.details.get("nodes").and_then(Json::as_array);
        for node in nodes.into_iter().flatten() {
            if node.get("ctrlUuid").and_then(Json::as_str) == Some(c.uuid.as_str()) {
                match node.get("nodeType").and_then(Json::as_str).unwrap_or("") {
                    "Grid" => return Role::Grid,
                    "Production" => return Role::Production,
                    "Storage" => return Role::Storage,
                    _ => return Role::Consumer,
                }
            }
        }
    }
    match c.details.get("type").and_then(Json::as_str) {
        Some("bidirectional") => return Role::Grid,
        Some("storage") => return Role::Storage,
        _ => {}
    }
    let name = fold(&c.name);
    if ["pv", "solar", "photovolt", "erzeugung", "production"]
        .iter()
        .any(|w| {
            name.split(|ch: char| !ch.is_alphanumeric())
                .any(|x| x.starts_with(w))
        })
    {
        return Role::Production;
    }
    Role::Consumer
}

/// The house's meters: top-level controls of type Meter with a `total` state.
pub fn meters(home: &Home) -> Vec<&Control> {
    home.controls
        .iter()
        .filter(|c| c.kind == ControlKind::Meter && c.state("total").is_some())
        .collect()
}

/// One question about energy: a period `[from, to)`, broken down per `unit` or not, for the
/// whole house or one `meter` (its `uuidAction`).
#[derive(Debug, Clone, PartialEq)]
pub struct EnergyQuery {
    pub from: Timestamp,
    pub to: Timestamp,
    pub breakdown: Option<Unit>,
    pub meter: Option<String>,
}

/// One meter's part of an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct MeterPart {
    pub uuid: String,
    pub name: String,
    pub room: Option<String>,
    pub role: Role,
    /// kWh counted on `total` and (grid, storage) `totalNeg`.
    pub total: Option<f64>,
    pub total_neg: Option<f64>,
    /// Where the amounts come from (`statistics_v2`, `statistics_v1`, `local_record`,
    /// `miniserver_totals`).
    pub source: String,
}

/// The answer to an [`EnergyQuery`].
#[derive(Debug, Clone, PartialEq)]
pub struct Energy {
    pub from: Timestamp,
    pub to: Timestamp,
    pub figures: Figures,
    /// Per bucket: start, end, figures.
    pub breakdown: Vec<(Timestamp, Timestamp, Figures)>,
    pub breakdown_unit: Option<Unit>,
    pub meters: Vec<MeterPart>,
    pub left_out: Vec<String>,
    pub partial: bool,
}

/// Adds one meter's amount `v` of `state` to `f` by the meter's role.
fn book(f: &mut Figures, role: Role, state: &str, v: f64) {
    let neg = state == "totalNeg";
    match (role, neg) {
        (Role::Grid, false) => Figures::add(&mut f.import, v),
        (Role::Grid, true) => Figures::add(&mut f.export, v),
        (Role::Production, _) => Figures::add(&mut f.production, v),
        (Role::Storage, false) => Figures::add(&mut f.discharge, v),
        (Role::Storage, true) => Figures::add(&mut f.charge, v),
        (Role::Consumer, _) => Figures::add(&mut f.consumption, v),
    }
}

/// The house's consumption from the balance when a grid meter is known (see the module docs).
fn balance(f: &mut Figures, has_grid: bool) {
    if has_grid {
        let v = f.import.unwrap_or(0.0) - f.export.unwrap_or(0.0)
            + f.production.unwrap_or(0.0)
            + f.discharge.unwrap_or(0.0)
            - f.charge.unwrap_or(0.0);
        f.consumption = Some(v);
    }
}

/// The current local `unit` period that `[from, to)` is, if it is one (from its start until
/// now, give or take a minute): the Miniserver totals it in `total{Day,Week,Month,Year}`.
fn current_period(
    time: &HouseTime,
    from: Timestamp,
    to: Timestamp,
    now: Timestamp,
) -> Option<Unit> {
    if now.duration_since(to) > jiff::SignedDuration::from_secs(60) {
        return None;
    }
    [Unit::Day, Unit::Week, Unit::Month, Unit::Year]
        .into_iter()
        .find(|u| time.start_of(*u, now) == from)
}

impl House {
    /// Answers `q` (see the module docs); `now` is the caller's clock.
    pub fn energy_at(&self, q: &EnergyQuery, now: Timestamp) -> Result<Energy, HistoryError> {
        let home = self.home();
        let time = self.time();
        let all = meters(&home);
        let chosen: Vec<&Control> = match &q.meter {
            Some(uuid) => {
                let c = home
                    .control(uuid)
                    .ok_or_else(|| HistoryError::UnknownControl(uuid.clone()))?;
                if c.kind != ControlKind::Meter || c.state("total").is_none() {
                    return Err(HistoryError::NoHistory {
                        control: c.name.clone(),
                        why: "it is not a meter (a control of type Meter with a total)".into(),
                    });
                }
                vec![c]
            }
            None => all,
        };
        if chosen.is_empty() {
            return Err(HistoryError::NoHistory {
                control: "the house".into(),
                why: "it has no meters (controls of type Meter)".into(),
            });
        }
        let has_grid = q.meter.is_none() && chosen.iter().any(|c| role_of(&home, c) == Role::Grid);
        let to = q.to.min(now);
        let mut answer = Energy {
            from: q.from,
            to,
            figures: Figures::default(),
            breakdown: Vec::new(),
            breakdown_unit: q.breakdown,
            meters: Vec::new(),
            left_out: Vec::new(),
            partial: false,
        };
        let current = match q.breakdown {
            None => current_period(time, q.from, q.to, now),
            Some(_) => None,
        };
        let mut last_error = None;
        for c in &chosen {
            let role = role_of(&home, c);
            let mut part = MeterPart {
                uuid: c.uuid.clone(),
                name: c.name.clone(),
                room: home.room_name(c).map(str::to_string),
                role,
                total: None,
                total_neg: None,
                source: String::new(),
            };
            let states: &[&str] = match role {
                Role::Grid | Role::Storage if c.state("totalNeg").is_some() => {
                    &["total", "totalNeg"]
                }
                _ => &["total"],
            };
            for state in states {
                // A current period the Miniserver totals itself.
                if let Some(unit) = current {
                    let name = format!(
                        "{state}{}",
                        match unit {
                            Unit::Day => "Day",
                            Unit::Week => "Week",
                            Unit::Month => "Month",
                            _ => "Year",
                        }
                    );
                    let v = c
                        .state(&name)
                        .and_then(|u| self.states().get(u))
                        .and_then(|v| v.value.as_f64());
                    if let Some(v) = v {
                        book(&mut answer.figures, role, state, v);
                        set_part(&mut part, state, v, "miniserver_totals");
                        continue;
                    }
                }
                let resolution = Resolution::Every(q.breakdown.unwrap_or(
                    if to.duration_since(q.from).as_hours() > 24 * 370 {
                        Unit::Month
                    } else {
                        Unit::Day
                    },
                ));
                let series = self.history_at(
                    &Query {
                        control: c.uuid.clone(),
                        state: Some((*state).to_string()),
                        from: q.from,
                        to,
                        resolution: Some(resolution),
                        max_points: Some(super::history::MAX_POINTS),
                    },
                    now,
                );
                let series = match series {
                    Ok(s) => s,
                    Err(e) => {
                        answer.left_out.push(format!("{} {state}: {e}", c.name));
                        answer.partial = true;
                        last_error = Some(e);
                        continue;
                    }
                };
                let amount = series.summary.total.unwrap_or(0.0);
                book(&mut answer.figures, role, state, amount);
                set_part(&mut part, state, amount, series.source.as_str());
                answer.partial |= series.partial;
                answer.left_out.extend(
                    series
                        .left_out
                        .iter()
                        .map(|n| format!("{} {state}: {n}", c.name)),
                );
                if !series.no_data.is_empty() {
                    answer.left_out.push(format!(
                        "{} {state}: no data {}",
                        c.name,
                        series
                            .no_data
                            .iter()
                            .map(|(a, b)| format!("{} to {}", time.format(*a), time.format(*b)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                if q.breakdown.is_some() {
                    merge_breakdown(&mut answer.breakdown, &series, role, state);
                }
            }
            answer.meters.push(part);
        }
        if answer.meters.iter().all(|m| m.total.is_none()) {
            if let Some(e) = last_error {
                return Err(e);
            }
        }
        balance(&mut answer.figures, has_grid);
        for (_, _, f) in answer.breakdown.iter_mut() {
            balance(f, has_grid);
        }
        Ok(answer)
    }

    /// [`House::energy_at`] with the current time.
    pub fn energy(&self, q: &EnergyQuery) -> Result<Energy, HistoryError> {
        self.energy_at(q, Timestamp::now())
    }
}

fn set_part(part: &mut MeterPart, state: &str, v: f64, source: &str) {
    if state == "totalNeg" {
        part.total_neg = Some(v);
    } else {
        part.total = Some(v);
    }
    if !part.source.contains(source) {
        if !part.source.is_empty() {
            part.source.push_str(", ");
        }
        part.source.push_str(source);
    }
}

/// Adds a meter's buckets to the breakdown (buckets of all meters share their starts).
fn merge_breakdown(
    rows: &mut Vec<(Timestamp, Timestamp, Figures)>,
    s: &Series,
    role: Role,
    state: &str,
) {
    for p in &s.points {
        let Agg::Counter { sum } = p.agg else {
            continue;
        };
        let i = match rows.iter().position(|r| r.0 == p.start) {
            Some(i) => i,
            None => {
                rows.push((p.start, p.end, Figures::default()));
                rows.len() - 1
            }
        };
        book(&mut rows[i].2, role, state, sum);
    }
    rows.sort_by_key(|r| r.0);
}

impl Energy {
    /// The answer as JSON: `{"from", "to", "unit": "kWh", "figures": {"consumption",
    /// "production", "import", "export", "charge", "discharge"} (those the house has),
    /// "breakdown": {"unit", "columns": ["start", figures...], "rows": [[start, kWh...]]} |
    /// null, "meters": [{"uuid", "name", "room", "role", "total", "total_neg", "source"}],
    /// "left_out": [text], "partial"}`; times ISO 8601 with the house's offset.
    pub fn to_json(&self, time: &HouseTime) -> Json {
        let names: Vec<&str> = Figures::NAMES
            .into_iter()
            .filter(|n| self.figures.get(n).is_some())
            .collect();
        let breakdown = self.breakdown_unit.map(|u| {
            let mut columns = vec!["start"];
            columns.extend(names.iter());
            let rows: Vec<Json> = self
                .breakdown
                .iter()
                .map(|(start, _, f)| {
                    let mut row = vec![json!(time.format(*start))];
                    row.extend(names.iter().map(|n| json!(f.get(n).map(round3))));
                    Json::Array(row)
                })
                .collect();
            json!({"unit": u.as_str(), "columns": columns, "rows": rows})
        });
        json!({
            "from": time.format(self.from),
            "to": time.format(self.to),
            "time_zone": time.name(),
            "unit": "kWh",
            "figures": self.figures.to_json(),
            "breakdown": breakdown,
            "meters": self.meters.iter().map(|m| json!({
                "uuid": m.uuid, "name": m.name, "room": m.room, "role": m.role.as_str(),
                "total": m.total.map(round3), "total_neg": m.total_neg.map(round3),
                "source": m.source,
            })).collect::<Vec<_>>(),
            "left_out": self.left_out,
            "partial": self.partial,
        })
    }
}

/// `b` compared with `a`: per figure both have, the difference `b - a` in kWh and in percent
/// of `a` (`null` when `a` is 0): `{"consumption": {"kwh", "percent"}, ...}`.
pub fn compare(a: &Figures, b: &Figures) -> Json {
    let mut m = serde_json::Map::new();
    for n in Figures::NAMES {
        if let (Some(x), Some(y)) = (a.get(n), b.get(n)) {
            let percent = (x.abs() > 1e-9).then(|| ((y - x) / x * 1000.0).round() / 10.0);
            m.insert(n.into(), json!({"kwh": round3(y - x), "percent": percent}));
        }
    }
    Json::Object(m)
}
