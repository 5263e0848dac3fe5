//! The house over time: `get_history` (what one device, or one of its states, did over a time
//! range) and `get_energy` (used, produced, bought, sold, stored, per period or compared with
//! another). Both only ask the home model's one query ([`crate::home::history`],
//! [`crate::home::energy`]): the Miniserver's Statistics V2, then V1, then the server's own
//! record; their answers say their source, unit and what was left out, and are bounded in
//! points (see `Series::to_json` and `Energy::to_json` for the shapes).

use jiff::Timestamp;
use serde_json::{json, Value};

use super::schema::{tool_args, words};
use super::{Caller, Ctx, Reach, Tool, ToolError};
use crate::home::bounds::POINTS;
use crate::home::energy::{compare, EnergyQuery};
use crate::home::history::{range_of, HistoryError, Query, Resolution};
use crate::home::time::Unit;
use crate::home::Family;

words! {
    /// `resolution` of `get_history`.
    enum ResolutionWord {
        Auto = "auto",
        Raw = "raw",
        Hour = "hour",
        Day = "day",
        Week = "week",
        Month = "month",
        Year = "year",
    }
}

words! {
    /// `breakdown` of `get_energy`.
    enum UnitWord {
        Hour = "hour",
        Day = "day",
        Week = "week",
        Month = "month",
        Year = "year",
    }
}

impl UnitWord {
    fn unit(self) -> Unit {
        match self {
            UnitWord::Hour => Unit::Hour,
            UnitWord::Day => Unit::Day,
            UnitWord::Week => Unit::Week,
            UnitWord::Month => Unit::Month,
            UnitWord::Year => Unit::Year,
        }
    }
}

/// What a time argument takes, for the schema.
const WHEN: &str = "ISO 8601 or -24h, -7d";
const PERIOD: &str = "yesterday, last month, last 30 days, 2026-10, -24h, FROM/TO";

pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "get_history",
            "History",
            "A device's past, local time: min/mean/max per bucket, a meter's kWh per bucket, time on/open. Default last 24 h; source and unit named; next asks for more.",
            get_history,
        )
        .lists(Reach::Controls { room: "room" })
        .data(|| json!({"type": "object", "required": ["source", "unit", "columns", "points", "summary"]})),
        Tool::new(
            "get_energy",
            "Energy",
            "kWh used, produced, imported, exported, stored in a period (default this month), per breakdown unit, compared with another period (kWh, %).",
            get_energy,
        )
        .reach(Reach::House(Family::Energy))
        .data(|| json!({"type": "object", "required": ["figures", "meters"]})),
    ]
}

tool_args! {
    /// The arguments of `get_history`.
    struct HistoryArgs {
        device: String { min_chars: 1, max_chars: 200 },
        room: Option<String>,
        state: Option<String> { about: "Default: its main value", max_chars: 64 },
        period: Option<String> { about: PERIOD, max_chars: 120 },
        from: Option<String> { about: WHEN, max_chars: 64 },
        to: Option<String> { max_chars: 64 },
        resolution: Option<ResolutionWord>,
        max_points: Option<u32> { range: POINTS },
    }
}

tool_args! {
    /// The arguments of `get_energy`.
    struct EnergyArgs {
        period: Option<String> { max_chars: 120 },
        compare_with: Option<String> { max_chars: 120 },
        breakdown: Option<UnitWord>,
        meter: Option<String> { max_chars: 200 },
    }
}

/// A history question's failure as a tool error: the Miniserver's as [`ToolError::Controller`],
/// the rest with their code (`DEVICE_NOT_FOUND`, `INVALID_PARAMETERS`) as a tool result.
fn failed(e: HistoryError) -> ToolError {
    match e {
        HistoryError::Unavailable(c) => ToolError::Controller(c),
        e => ToolError::Refused {
            code: e.code(),
            message: e.to_string(),
        },
    }
}

fn get_history(ctx: &Ctx, a: HistoryArgs, caller: &Caller) -> Result<Value, ToolError> {
    let home = ctx.home();
    let c = home.resolve_control(&a.device, a.room.as_deref(), &|_| true)?;
    caller.permits(&home, c).map_err(|d| ToolError::Refused {
        code: "INSUFFICIENT_PERMISSIONS",
        message: d.to_string(),
    })?;
    let now = Timestamp::now();
    let time = ctx.time();
    let (from, to) = range_of(
        time,
        a.period.as_deref(),
        a.from.as_deref(),
        a.to.as_deref(),
        now,
    )
    .map_err(failed)?;
    let resolution = a.resolution.and_then(|r| match r {
        ResolutionWord::Auto => None,
        ResolutionWord::Raw => Some(Resolution::Raw),
        ResolutionWord::Hour => Some(Resolution::Every(Unit::Hour)),
        ResolutionWord::Day => Some(Resolution::Every(Unit::Day)),
        ResolutionWord::Week => Some(Resolution::Every(Unit::Week)),
        ResolutionWord::Month => Some(Resolution::Every(Unit::Month)),
        ResolutionWord::Year => Some(Resolution::Every(Unit::Year)),
    });
    let q = Query {
        control: c.uuid.clone(),
        state: a.state,
        from,
        to,
        resolution,
        max_points: a.max_points.map(|n| n as usize),
    };
    let series = ctx.history_at(&q, now).map_err(failed)?;
    Ok(series.to_json(time))
}

fn get_energy(ctx: &Ctx, a: EnergyArgs, _caller: &Caller) -> Result<Value, ToolError> {
    let home = ctx.home();
    let meter = match &a.meter {
        Some(m) => Some(home.resolve_control(m, None, &|_| true)?.uuid.clone()),
        None => None,
    };
    let now = Timestamp::now();
    let time = ctx.time();
    let period = |text: Option<&str>| {
        range_of(time, Some(text.unwrap_or("this month")), None, None, now).map_err(failed)
    };
    let (from, to) = period(a.period.as_deref())?;
    let breakdown = a.breakdown.map(UnitWord::unit);
    let ask = |from, to| {
        ctx.energy_at(
            &EnergyQuery {
                from,
                to,
                breakdown,
                meter: meter.clone(),
            },
            now,
        )
        .map_err(failed)
    };
    let energy = ask(from, to)?;
    let mut out = energy.to_json(time);
    if let Some(other) = a.compare_with.as_deref() {
        let (f2, t2) = period(Some(other))?;
        let before = ask(f2, t2)?;
        let mut shown = before.to_json(time);
        shown["difference"] = compare(&before.figures, &energy.figures);
        out["compare"] = shown;
    }
    Ok(out)
}
