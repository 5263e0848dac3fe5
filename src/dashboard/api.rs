//! The dashboard's JSON endpoints under `/dashboard/api/` (GET only). Values come from the
//! state store the live link keeps current (never a Miniserver round trip per device), except
//! the climate grid, which reuses `get_home_summary`'s query (a stale value is read again).
//!
//! Errors use the spec §7.1 object `{"error": {"code", "message", "details": {}}}`: an unknown
//! path, history type or trend period is 404 `NOT_FOUND`; a bad query parameter is 400
//! `INVALID_PARAMETERS`; a failing history store is 500 `INTERNAL_ERROR`.

use serde_json::{json, Value as Json};

use super::history::{HistoryType, Period};
use super::Dashboard;
use crate::home::{Control, ControlKind, Home, StateValue};
use crate::tools::view;

/// Device state changes shown by `data`.
pub const RECENT_CHANGES: usize = 10;
/// Entries of the AI activity feed shown by `data`.
pub const RECENT_ACTIVITY: usize = 20;

/// A JSON answer: HTTP status and body.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiAnswer {
    pub status: u16,
    pub body: Json,
}

impl ApiAnswer {
    fn ok(body: Json) -> Self {
        Self { status: 200, body }
    }

    /// The §7.1 error object with empty `details`.
    pub fn error(status: u16, code: &str, message: impl Into<String>) -> Self {
        Self {
            status,
            body: crate::error::ApiError::new(code, message).body(),
        }
    }
}

/// Routes `rest` (the path after `/dashboard/api/`) with the raw `query` string.
pub fn handle(dash: &Dashboard, rest: &str, query: &str) -> ApiAnswer {
    match rest.trim_end_matches('/').split_once('/') {
        None => match rest.trim_end_matches('/') {
            "status" => ApiAnswer::ok(status(dash)),
            "data" => data(dash),
            "rooms" => ApiAnswer::ok(json!({"rooms": rooms(&dash.house.home(), dash)})),
            "metrics" => ApiAnswer::ok(metrics(dash)),
            "series" => series(dash, query),
            "energy" => energy_history(dash, query),
            "charts" => charts(dash),
            other => not_found(other),
        },
        Some(("history", ty)) => history(dash, ty, query),

        Some(("trends", period)) => trends(dash, period, query),
        Some(_) => not_found(rest),
    }
}

fn not_found(what: &str) -> ApiAnswer {
    ApiAnswer::error(
        404,
        "NOT_FOUND",
        format!("no dashboard endpoint /dashboard/api/{what}"),
    )
}

fn param<'q>(query: &'q str, name: &str) -> Option<&'q str> {
    query
        .split('&')
        .find_map(|p| p.strip_prefix(name)?.strip_prefix('='))
}

/// A query parameter percent-decoded (`+` as a space, as browsers write forms); `None` when
/// absent or not UTF-8.
fn text_param(query: &str, name: &str) -> Option<String> {
    let raw = param(query, name)?.replace('+', " ");
    percent_encoding::percent_decode_str(&raw)
        .decode_utf8()
        .ok()
        .map(|c| c.into_owned())
}

/// A history question's failure as the §7.1 error object: 404 `DEVICE_NOT_FOUND` for an
/// unknown device, 400 `INVALID_PARAMETERS` for a bad range or a device without history,
/// 502 for a Miniserver that could not be read.
fn history_error(e: &crate::home::history::HistoryError) -> ApiAnswer {
    let status = match e.code() {
        "DEVICE_NOT_FOUND" => 404,
        "INVALID_PARAMETERS" => 400,
        _ => 502,
    };
    ApiAnswer::error(status, e.code(), e.to_string())
}

/// `GET series?device=D&state=S&period=P&from=F&to=T&resolution=R&max_points=N`: the history
/// of one device as `get_history` answers it (`home::history::Series::to_json`); `device` is
/// a name, a room-qualified name or a UUID; the range and resolution in the tool's words
/// (default the last 24 hours, the resolution chosen by the range).
pub fn series(dash: &Dashboard, query: &str) -> ApiAnswer {
    use crate::home::history::{range_of, resolution_of, Query};
    let house = &dash.house;
    let home = house.home();
    let Some(device) = text_param(query, "device") else {
        return ApiAnswer::error(400, "INVALID_PARAMETERS", "device is required");
    };
    let control = match home.resolve_control(&device, None, &|_| true) {
        Ok(c) => c,
        Err(e) => return ApiAnswer::error(404, "DEVICE_NOT_FOUND", e.to_string()),
    };
    let now = jiff::Timestamp::now();
    let (period, from, to) = (
        text_param(query, "period"),
        text_param(query, "from"),
        text_param(query, "to"),
    );
    let range = range_of(
        house.time(),
        period.as_deref(),
        from.as_deref(),
        to.as_deref(),
        now,
    );
    let resolution = resolution_of(text_param(query, "resolution").as_deref());
    let (Ok((from, to)), Ok(resolution)) = (range.clone(), resolution.clone()) else {
        let e = range.err().or(resolution.err()).expect("one failed");
        return history_error(&e);
    };
    let max_points = match param(query, "max_points").map(str::parse::<usize>) {
        None => None,
        Some(Ok(n)) if (1..=crate::home::history::MAX_POINTS).contains(&n) => Some(n),
        Some(_) => {
            return ApiAnswer::error(
                400,
                "INVALID_PARAMETERS",
                format!(
                    "max_points must be a whole number from 1 to {}",
                    crate::home::history::MAX_POINTS
                ),
            )
        }
    };
    let q = Query {
        control: control.uuid.clone(),
        state: text_param(query, "state").filter(|s| !s.is_empty()),
        from,
        to,
        resolution,
        max_points,
    };
    match house.history_at(&q, now) {
        Ok(s) => ApiAnswer::ok(s.to_json(house.time())),
        Err(e) => history_error(&e),
    }
}

/// `GET energy?period=P&breakdown=U`: the house's energy as `get_energy` answers it
/// (`home::energy::Energy::to_json`); default the last 30 days per day.
pub fn energy_history(dash: &Dashboard, query: &str) -> ApiAnswer {
    use crate::home::energy::EnergyQuery;
    let house = &dash.house;
    let now = jiff::Timestamp::now();
    let period = text_param(query, "period").unwrap_or_else(|| "last 30 days".into());
    let (from, to) = match house.time().parse_period(&period, now) {
        Ok(r) => r,
        Err(e) => return ApiAnswer::error(400, "INVALID_PARAMETERS", e.to_string()),
    };
    let breakdown = match text_param(query, "breakdown").as_deref() {
        None | Some("") => Some(crate::home::time::Unit::Day),
        Some("none") => None,
        Some(u) => match crate::home::time::Unit::parse(u) {
            Some(u) => Some(u),
            None => {
                return ApiAnswer::error(
                    400,
                    "INVALID_PARAMETERS",
                    "breakdown must be hour, day, week, month, year or none",
                )
            }
        },
    };
    let q = EnergyQuery {
        from,
        to,
        breakdown,
        meter: None,
    };
    match house.energy_at(&q, now) {
        Ok(e) => ApiAnswer::ok(e.to_json(house.time())),
        Err(e) => history_error(&e),
    }
}

/// `GET charts`: the devices the dashboard can chart, those the Miniserver keeps statistics
/// of or this server has recorded: `{"devices": [{"uuid", "name", "room", "state", "measure",
/// "unit"}]}` (their default state), temperatures first.
pub fn charts(dash: &Dashboard) -> ApiAnswer {
    use crate::home::history::{default_state, measure_of};
    let home = dash.house.home();
    let record = dash.house.local_record();
    let mut out: Vec<(u8, Json)> = Vec::new();
    for c in &home.controls {
        let recorded = record
            .and_then(|r| r.first_recorded(&c.uuid, None).ok().flatten())
            .is_some();
        if c.statistic.is_empty() && !recorded {
            continue;
        }
        let Some(state) = default_state(c) else {
            continue;
        };
        let unit = c.unit_of(&state);
        let order = match unit.as_deref() {
            Some("°C") => 0,
            Some("kWh") => 1,
            _ => 2,
        };
        out.push((
            order,
            json!({
                "uuid": c.uuid, "name": c.name, "room": view::room_of(&home, c),
                "state": state, "measure": measure_of(c, &state).as_str(), "unit": unit,
            }),
        ));
    }
    out.sort_by_key(|(o, _)| *o);
    ApiAnswer::ok(json!({"devices": out.into_iter().map(|x| x.1).collect::<Vec<_>>()}))
}

/// `GET status`: `{"version", "uptime_secs", "link": {"mode": "websocket" | "polling" |
/// "disconnected", "degraded", "since_secs", "last_error", "reconnects", "events_received",
/// "last_event_secs"}, "stop": the stop's state (`home::StopStatus::to_json`: "stopped",
/// "since", "stopped_by", "lift", "stop_switch", "admin"), "miniserver": {"name", "serial",
/// "structure"}, "counts": {"rooms", "controls", "ws_clients"}, "history": {"days",
/// "persistent", "pending", "written"}}`.
pub fn status(dash: &Dashboard) -> Json {
    let home = dash.house.home();
    json!({
        "version": env!("CARGO_PKG_VERSION"),
        "uptime_secs": dash.started.elapsed().as_secs(),
        "link": dash.house.link().snapshot().to_json(),
        "stop": dash.house.stop_shown().to_json(),
        "miniserver": {
            "name": home.ms_info.ms_name,
            "serial": home.ms_info.serial_nr,
            "structure": home.last_modified,
        },
        "counts": {
            "rooms": home.rooms.len(),
            "controls": home.controls.len(),
            "ws_clients": dash.ws_clients(),
        },
        "history": {
            "days": dash.history.config().days,
            "persistent": dash.history.path().is_some(),
            "pending": dash.history.pending(),
            "written": dash.history.written(),
        },
    })
}

/// One device of a room: `{"uuid", "name", "type", "category", "state": the primary value in
/// words (e.g. `{"on": true}`) or `null` when not known yet, "age_secs": seconds since it was
/// learnt or `null`}`.
/// A control's primary value as the state store knows it, without asking the Miniserver
/// ([`crate::home::House::known_value`], the same decision every tool read makes).
fn primary(dash: &Dashboard, c: &Control) -> Option<StateValue> {
    dash.house.known_value(c)
}

fn device(dash: &Dashboard, c: &Control) -> Json {
    let v = primary(dash, c);
    json!({
        "uuid": c.uuid,
        "name": c.name,
        "type": c.kind.as_str(),
        "category": dash.house.home().family(c).as_str(),
        "state": v.as_ref().map(|v| view::state(c, &v.value)),
        "age_secs": v.as_ref().map(|v| v.age_secs().round()),
    })
}

/// `GET rooms`: `{"rooms": [{"uuid", "name", "devices": [device]}]}` in structure-file
/// order; devices without a room come last in a room with `"uuid": null, "name": "Other"`.
pub fn rooms(home: &Home, dash: &Dashboard) -> Vec<Json> {
    let mut out: Vec<Json> = home
        .rooms
        .iter()
        .map(|r| {
            let devices: Vec<Json> = home
                .controls_in_room(&r.uuid)
                .into_iter()
                .map(|c| device(dash, c))
                .collect();
            json!({"uuid": r.uuid, "name": r.name, "devices": devices})
        })
        .collect();
    let other: Vec<Json> = home
        .controls
        .iter()
        .filter(|c| c.room.as_deref().is_none_or(|r| home.room(r).is_none()))
        .map(|c| device(dash, c))
        .collect();
    if !other.is_empty() {
        out.push(json!({"uuid": null, "name": "Other", "devices": other}));
    }
    out
}

/// Alarms and smoke alarms: `[{"uuid", "name", "room", "type", "armed": bool | null (alarms),
/// "level": number | null (the alarm level; 0 = quiet)}]`.
fn alarms(dash: &Dashboard, home: &Home) -> Vec<Json> {
    home.controls
        .iter()
        .filter(|c| matches!(c.kind, ControlKind::Alarm | ControlKind::SmokeAlarm))
        .map(|c| {
            let primary = primary(dash, c).and_then(|v| v.value.as_f64());
            let level = view::named_state(&dash.house, c, "level").and_then(|v| v.as_f64());
            let armed = (c.kind == ControlKind::Alarm)
                .then(|| primary.map(|v| v != 0.0))
                .flatten();
            json!({
                "uuid": c.uuid, "name": c.name, "room": view::room_of(home, c),
                "type": c.kind.as_str(), "armed": armed,
                "level": level.or((c.kind == ControlKind::SmokeAlarm).then_some(primary).flatten()),
            })
        })
        .collect()
}

/// Meters: `[{"uuid", "name", "room", "power": number | null, "unit", "total": number |
/// null (the meter's counter, as the Miniserver reports it)}]`.
fn energy(dash: &Dashboard, home: &Home) -> Vec<Json> {
    home.controls
        .iter()
        .filter(|c| c.kind == ControlKind::Meter)
        .map(|c| {
            let power = primary(dash, c)
                .and_then(|v| v.value.as_f64())
                .map(view::round1);
            let total = view::named_state(&dash.house, c, "total").and_then(|v| v.as_f64());
            json!({
                "uuid": c.uuid, "name": c.name, "room": view::room_of(home, c),
                "power": power, "unit": view::unit(c).unwrap_or_else(|| "kW".into()),
                "total": total.map(view::round1),
            })
        })
        .collect()
}

/// The AI activity feed: the newest `n` entries of `source`, newest first, or an empty list
/// without one. The source is the audit log of tool calls when one is configured (each entry
/// a JSON object as the audit log writes it); the dashboard passes its own
/// ([`Dashboard::with_activity`]).
pub fn recent_activity(source: Option<&dyn Fn(usize) -> Vec<Json>>, n: usize) -> Vec<Json> {
    match source {
        Some(f) => f(n).into_iter().take(n).collect(),
        None => Vec::new(),
    }
}

/// The Message Center as the page shows it, active entries first: `{"available" (the
/// Miniserver has a Message Center), "active": [entry, most severe first], "counts":
/// {"info", "warning", "important", "critical"}, "notifications": [the newest 5, newest
/// first], "fetched_at", "last_error"}`; entries and notifications as
/// `home::Alert::to_json` and `home::Notification::to_json` give them.
pub fn alerts(dash: &Dashboard, home: &Home) -> Json {
    let snap = dash.house.alerts();
    let counts: serde_json::Map<String, Json> = snap
        .active_counts()
        .iter()
        .map(|(s, n)| (s.as_str().to_string(), json!(n)))
        .collect();
    json!({
        "available": home.message_center.is_some(),
        "active": snap.active().map(|a| a.to_json(home)).collect::<Vec<_>>(),
        "counts": counts,
        "notifications": snap.notifications.iter().rev().take(5)
            .map(|n| n.to_json(home)).collect::<Vec<_>>(),
        "fetched_at": snap.fetched_at.map(crate::time::iso8601),
        "last_error": snap.last_error,
    })
}

/// `GET data`, the whole page: `{"status": <status>, "alerts": <alerts>, "rooms": <rooms>, "changes": [history
/// row, newest first, at most 10: {"at", "at_ms", "kind", "uuid", "name", "room", "state",
/// "value", "text"}], "climate": [{"room", "temperature": °C | null, "target": °C | null}],
/// "alarm": <alarms>, "energy": <meters>, "activity": [audit entries, newest first],
/// "passwords": <wrong visualisation passwords: who, runs, pauses>}` (the last as
/// [`crate::home::pin::PinGuard::snapshot`] shows it).
pub fn data(dash: &Dashboard) -> ApiAnswer {
    let home = dash.house.home();
    let changes = match dash.history.recent_changes(RECENT_CHANGES) {
        Ok(rows) => rows.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
        Err(e) => return store_error(&e),
    };
    let mut values = view::ValueReader::new(&dash.house);
    let climate = crate::tools::summary::climate(&dash.house, &home, None, &mut values);
    let activity = recent_activity(dash.activity.as_deref().map(|f| f as _), RECENT_ACTIVITY);
    ApiAnswer::ok(json!({
        "status": status(dash),
        "alerts": alerts(dash, &home),
        "rooms": rooms(&home, dash),
        "changes": changes,
        "climate": climate,
        "alarm": alarms(dash, &home),
        "energy": energy(dash, &home),
        "doorbells": doorbells(dash, &home),
        "activity": activity,
        "passwords": dash.house.pins().snapshot(std::time::Instant::now()),
    }))
}

/// The intercoms and cameras for the doorbell card: `[{"uuid", "name", "room", "kind",
/// "ringing", "last_ring": "YYYYMMDDHHMMSS" | null, "last_ring_time": ISO 8601 in the house's
/// time zone | null}]`. Their pictures come from `GET /dashboard/api/doorbells/{uuid}/picture`
/// (only when the person at the dashboard asks, with the key's `cameras` grant;
/// `src/http/dashboard.rs`).
fn doorbells(dash: &Dashboard, home: &Home) -> Vec<Json> {
    let time = dash.house.time();
    home.controls
        .iter()
        .filter_map(|c| Some((c, crate::home::camera::camera_kind(c)?)))
        .map(|(c, kind)| {
            let last = dash.house.bell_events(c).and_then(|e| e.last().cloned());
            json!({
                "uuid": c.uuid,
                "name": c.name,
                "room": view::room_of(home, c),
                "kind": kind.as_str(),
                "ringing": dash.house.state_text(c, "bell").is_some_and(|b| b.trim() == "1"),
                "last_ring_time": last.as_deref().and_then(|s| time.parse_compact(s, None)).map(|t| time.format(t)),
                "last_ring": last,
            })
        })
        .collect()
}

/// `GET metrics`: `{"uptime_secs", "events_received" (values from the Miniserver),
/// "link_reconnects", "bus_published", "bus_subscribers", "ws_clients", "ws_messages_queued",
/// "ws_clients_dropped" (too slow to take a frame), "ws_messages_dropped" (queue full),
/// "ws_refused" (over the limit), "history_rows_written",
/// "history_rows_pending"}`; the HTTP layer adds `mcp_sessions` and `sse_streams`.
pub fn metrics(dash: &Dashboard) -> Json {
    let link = dash.house.link().snapshot();
    json!({
        "uptime_secs": dash.started.elapsed().as_secs(),
        "events_received": link.events_received,
        "link_reconnects": link.reconnects,
        "bus_published": dash.house.bus().published(),
        "bus_subscribers": dash.house.bus().subscriber_count(),
        "ws_clients": dash.ws_clients(),
        "ws_messages_queued": dash.hub.sent(),
        "ws_clients_dropped": dash.hub.dropped_clients(),
        "ws_messages_dropped": dash.hub.dropped_messages(),
        "ws_refused": dash.hub.refused(),
        "history_rows_written": dash.history.written(),
        "history_rows_pending": dash.history.pending(),
    })
}

fn store_error(e: &super::history::HistoryError) -> ApiAnswer {
    log::warn!("dashboard: {e}");
    ApiAnswer::error(500, "INTERNAL_ERROR", "the history store failed")
}

/// `GET history/{type}?hours=N` (`type`: see [`HistoryType::NAMES`]; `hours` 1 to 24 ×
/// `history_days`, default 24): `{"type", "hours", "from": ISO, "to": ISO, "count",
/// "entries": [history row, oldest first, at most 5000]}`.
pub fn history(dash: &Dashboard, ty: &str, query: &str) -> ApiAnswer {
    let Some(t) = HistoryType::parse(ty) else {
        return ApiAnswer::error(
            404,
            "NOT_FOUND",
            format!(
                "unknown history type {ty:?}; use one of {}",
                HistoryType::NAMES.join(", ")
            ),
        );
    };
    let max = 24 * i64::from(dash.history.config().days.max(1));
    let hours = match param(query, "hours") {
        None => 24.min(max),
        Some(h) => match h.parse::<i64>() {
            Ok(n) if (1..=max).contains(&n) => n,
            _ => {
                return ApiAnswer::error(
                    400,
                    "INVALID_PARAMETERS",
                    format!("hours must be a whole number from 1 to {max}"),
                )
            }
        },
    };
    match dash.history.history(t, hours) {
        Ok(rows) => {
            let now = std::time::SystemTime::now();
            let from = now - std::time::Duration::from_secs(hours as u64 * 3600);
            ApiAnswer::ok(json!({
                "type": ty, "hours": hours,
                "from": crate::time::iso8601(from), "to": crate::time::iso8601(now),
                "count": rows.len(),
                "entries": rows.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
            }))
        }
        Err(e) => store_error(&e),
    }
}

/// `GET trends/{period}?type=T` (`period`: `hour` (last 24 h), `day` (last 7 days), `week`
/// (the whole retention); `type` default `temperature`): `{"period", "type", "hours",
/// "series": [{"uuid", "name", "room", "buckets": [{"start": ISO, "start_ms", "min", "avg",
/// "max", "count"}]}]}`, numeric values only.
pub fn trends(dash: &Dashboard, period: &str, query: &str) -> ApiAnswer {
    let Some(p) = Period::parse(period) else {
        return ApiAnswer::error(
            404,
            "NOT_FOUND",
            format!("unknown trend period {period:?}; use hour, day or week"),
        );
    };
    let ty = param(query, "type").unwrap_or("temperature");
    let Some(t) = HistoryType::parse(ty) else {
        return ApiAnswer::error(
            400,
            "INVALID_PARAMETERS",
            format!("type must be one of {}", HistoryType::NAMES.join(", ")),
        );
    };
    match dash.history.trends(t, p) {
        Ok(series) => ApiAnswer::ok(json!({
            "period": p.as_str(), "type": ty,
            "hours": p.span_hours(dash.history.config().days),
            "series": series,
        })),
        Err(e) => store_error(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_and_activity() {
        assert_eq!(param("a=1&hours=5", "hours"), Some("5"));
        assert_eq!(param("hoursx=5", "hours"), None);
        assert!(recent_activity(None, 10).is_empty());
        let f = |n: usize| vec![json!({"tool": "x"}); n + 3];
        assert_eq!(recent_activity(Some(&f), 2).len(), 2);
    }
}
