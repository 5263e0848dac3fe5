//! Blinds: `discover_rolladen_capabilities`, `control_room_rolladen`, `control_all_rolladen`,
//! `control_rolladen_unified`, `get_blinds_status`.
//!
//! Positions are percent closed: 0 = fully open (up), 100 = fully closed (down), as Loxone's
//! `manualPosition/{0-100}` takes them (the Jalousie state `position` is the same as 0-1).
//! Room- and house-wide commands go to each Jalousie, never to CentralJalousie blocks (those
//! would move the same blinds a second time), and go through the batch runner
//! ([`super::batch`]): one result per blind, so one failure does not hide the others.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::args::{self, in_range};
use super::batch::{self, Item, Members, RunOptions, Scope};
use super::view;
use super::{confirm_schema, Caller, Ctx, Permission, Reach, Tool, ToolError};
use crate::home::{Action, Control, ControlKind, ControllerError, Family, Home, House};

pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "discover_rolladen_capabilities",
            "Discover blinds",
            "Lists blinds and central blind blocks with room, position (% closed, 0 = open), style, slats, automatic shading, supported actions.",
            args::room_limit_schema,
            discover,
        )
        .reach(Reach::Room { room: "room", family: Family::Blinds })
        .per_control()
        .data(|| args::listing_schema("blinds", args::item_schema(&["name", "position", "actions"]), &[])),
        Tool::new(
            "control_room_rolladen",
            "Blinds of a room",
            "Moves every blind of a room: up (open), down (closed), stop, shade, position (position: % closed, 0 = fully open).",
            || {
                args::closed(
                    json!({
                        "room": args::room_schema(),
                        "action": {"type": "string", "enum": ROOM_ACTIONS},
                        "position": position_schema(),
                        "dry_run": args::dry_run_schema()
                    }),
                    &["room", "action"],
                )
            },
            control_room,
        )
        .permission(Permission::Control)
        .reach(Reach::Room { room: "room", family: Family::Blinds })
        .per_control()
        .data(batch::result_schema),
        Tool::new(
            "control_all_rolladen",
            "All blinds",
            "Moves every blind of the house, one by one: up, down, stop, shade, position (position: % closed, 0 = fully open). Needs confirmation (see confirm).",
            || {
                args::closed(
                    json!({
                        "action": {"type": "string", "enum": ROOM_ACTIONS},
                        "position": position_schema(),
                        "dry_run": args::dry_run_schema(),
                        "confirm": confirm_schema()
                    }),
                    &["action"],
                )
            },
            control_all,
        )
        .permission(Permission::Control)
        .reach(Reach::House(Family::Blinds))
        .per_control()
        .task()
        .data(batch::confirmable_result_schema),
        Tool::new(
            "control_rolladen_unified",
            "Blinds (unified)",
            "Blinds by scope: device (target: names or UUIDs, central blocks too), room (target), category (target: Loxone category or blinds), system (whole house; needs confirmation, see confirm). action: up (open), down (closed), stop, shade, position (value: % closed, 0 = fully open), slats (value: angle %).",
            || {
                args::closed(
                    json!({
                        "scope": batch::scope_schema(),
                        "target": batch::target_schema(),
                        "action": {"type": "string", "enum": ["up", "down", "stop", "shade", "position", "slats"]},
                        "value": {"type": "number", "minimum": 0, "maximum": 100},
                        "dry_run": args::dry_run_schema(),
                        "confirm": confirm_schema()
                    }),
                    &["scope", "action"],
                )
            },
            control_unified,
        )
        .permission(Permission::Control)
        .reach(Reach::Unified(Family::Blinds))
        .per_control()
        .task()
        .data(batch::confirmable_result_schema),
        Tool::new(
            "get_blinds_status",
            "Blinds status",
            "Lists blinds with room, position (% closed, 0 = open; null: unknown), state, style, automatic shading; not_open counts those not fully open.",
            || {
                args::closed(
                    json!({
                        "room": args::room_schema(),
                        "name": args::name_filter_schema(),
                        "state": {"type": "string", "enum": ["open", "closed", "partly_closed", "not_open"]},
                        "limit": args::limit_schema()
                    }),
                    &[],
                )
            },
            get_blinds_status,
        )
        .reach(Reach::Room { room: "room", family: Family::Blinds })
        .per_control()
        .data(|| args::listing_schema("blinds", json!({
                        "type": "object",
                        "properties": {
                            "state": {"enum": ["open", "closed", "partly_closed", null]}
                        },
                        "required": ["name", "position", "state"]
                    }), &["not_open"])),
    ]
}

const ROOM_ACTIONS: [&str; 5] = ["up", "down", "stop", "shade", "position"];
const POSITION_MEANING: &str = "percent closed, 0 = fully open, 100 = fully closed";

fn position_schema() -> Value {
    json!({"type": "number", "minimum": 0, "maximum": 100, "description": "% closed, for action position"})
}

/// Loxone `details.animation` of a Jalousie: how the blind looks and moves.
fn style(c: &Control) -> Option<&'static str> {
    let n = c.details.get("animation")?.as_i64()?;
    Some(match n {
        0 => "blinds",
        1 => "shutters",
        2 => "curtain",
        4 => "curtain_left",
        5 => "curtain_right",
        6 => "awning",
        _ => "other",
    })
}

/// Only venetian blinds (`animation` 0) have slats to tilt.
fn has_slats(c: &Control) -> bool {
    c.kind == ControlKind::Jalousie && c.details.get("animation").and_then(Value::as_i64) == Some(0)
}

fn is_blind(c: &Control) -> bool {
    c.kind == ControlKind::Jalousie
}

fn is_blind_or_central(c: &Control) -> bool {
    matches!(c.kind, ControlKind::Jalousie | ControlKind::CentralJalousie)
}

fn actions(c: &Control) -> Vec<&'static str> {
    let mut a = vec!["up", "down", "stop", "shade"];
    if c.kind == ControlKind::Jalousie {
        a.push("position");
        if has_slats(c) {
            a.push("slats");
        }
    }
    a
}

/// Percent closed, one decimal, from the Jalousie state 0..1.
fn percent(v: f64) -> f64 {
    view::round1(v * 100.0)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Discover {
    room: Option<String>,
    limit: Option<i64>,
}

fn discover(house: &Ctx, a: &Map<String, Value>, caller: &Caller) -> Result<Value, ToolError> {
    let a: Discover = args::parse(a)?;
    let limit = args::limit(a.limit)?;
    let home = house.home();
    let matching = args::listing(&home, caller, a.room.as_deref(), is_blind_or_central)?;
    let mut values = view::ValueReader::new(house);
    let blinds: Vec<Value> = matching
        .iter()
        .take(limit)
        .map(|c| {
            let position = if is_blind(c) {
                values
                    .read(c)
                    .and_then(|v| v.value.as_f64())
                    .map(percent)
            } else {
                None
            };
            let mut d = json!({
                "uuid": c.uuid,
                "name": c.name,
                "room": home.room_name(c),
                "type": c.kind.as_str(),
                "position": position,
                "style": if is_blind(c) { style(c) } else { None },
                "slats": has_slats(c),
                "automatic_shading": c.details.get("isAutomatic").and_then(Value::as_bool).unwrap_or(false),
                "actions": actions(c),
            });
            if c.kind == ControlKind::CentralJalousie {
                d["controls"] = json!(c
                    .details
                    .get("controls")
                    .and_then(Value::as_array)
                    .map_or(0, |v| v.len()));
            }
            d
        })
        .collect();
    Ok(values.annotate(json!({
        "blinds": blinds,
        "total": matching.len(),
        "position_meaning": POSITION_MEANING,
    })))
}

#[derive(Deserialize, Clone, Copy, PartialEq, Debug)]
#[serde(rename_all = "lowercase")]
enum RoomAction {
    Up,
    Down,
    Stop,
    Shade,
    Position,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Debug)]
#[serde(rename_all = "lowercase")]
enum UnifiedAction {
    Up,
    Down,
    Stop,
    Shade,
    Position,
    Slats,
}

impl From<RoomAction> for UnifiedAction {
    fn from(a: RoomAction) -> Self {
        match a {
            RoomAction::Up => UnifiedAction::Up,
            RoomAction::Down => UnifiedAction::Down,
            RoomAction::Stop => UnifiedAction::Stop,
            RoomAction::Shade => UnifiedAction::Shade,
            RoomAction::Position => UnifiedAction::Position,
        }
    }
}

impl UnifiedAction {
    fn as_str(self) -> &'static str {
        match self {
            UnifiedAction::Up => "up",
            UnifiedAction::Down => "down",
            UnifiedAction::Stop => "stop",
            UnifiedAction::Shade => "shade",
            UnifiedAction::Position => "position",
            UnifiedAction::Slats => "slats",
        }
    }
}

/// The [`Action`] for `action` with the percent `value` (named `field` in errors): range
/// checked, required for position and slats, refused for the others.
fn to_action(action: UnifiedAction, value: Option<f64>, field: &str) -> Result<Action, ToolError> {
    let value = value.map(|v| in_range(field, v, 0.0, 100.0)).transpose()?;
    let needs = |v: Option<f64>| {
        v.ok_or_else(|| {
            ToolError::InvalidParams(format!(
                "{field} (0-100) is required for action {}",
                action.as_str()
            ))
        })
    };
    match (action, value) {
        (UnifiedAction::Position, v) => Ok(Action::Level(needs(v)?)),
        (UnifiedAction::Slats, v) => Ok(Action::Slats(needs(v)?)),
        (_, Some(_)) => Err(ToolError::InvalidParams(format!(
            "{field} only applies to action position{}, not {}",
            if field == "value" { " or slats" } else { "" },
            action.as_str()
        ))),
        (UnifiedAction::Up, None) => Ok(Action::Up),
        (UnifiedAction::Down, None) => Ok(Action::Down),
        (UnifiedAction::Stop, None) => Ok(Action::Stop),
        (UnifiedAction::Shade, None) => Ok(Action::Shade),
    }
}

/// How scope targeting finds blinds for `action`: every Jalousie (never a CentralJalousie,
/// which would move the same blinds a second time); for the slats action only those with slats.
#[allow(clippy::too_many_arguments)]
fn run_blinds(
    house: &House,
    home: &Home,
    blinds: &[&Control],
    action: &Action,
    dry_run: bool,
    caller: &Caller,
    header: Value,
    confirm: (Option<bool>, bool),
) -> Result<Value, ToolError> {
    let ask = confirm.1.then(|| match action {
        Action::Up => batch::Ask::new("Open", "blinds"),
        Action::Down => batch::Ask::new("Close", "blinds"),
        Action::Stop => batch::Ask::new("Stop", "blinds"),
        Action::Shade => batch::Ask::new("Shade", "blinds"),
        Action::Slats(v) => {
            batch::Ask::new("Tilt the slats of", "blinds").with_suffix(format!(" to {v} %"))
        }
        Action::Level(v) => {
            batch::Ask::new("Move", "blinds").with_suffix(format!(" to {v} % closed"))
        }
        other => batch::Ask::new(format!("Send {} to", super::action_label(other)), "blinds"),
    });
    let items = blinds
        .iter()
        .map(|c| {
            if matches!(action, Action::Slats(_)) && !has_slats(c) {
                Item::refused_for(
                    home,
                    c,
                    ToolError::Controller(ControllerError::Unsupported(format!(
                        "{} has no slats ({})",
                        c.name,
                        style(c).unwrap_or("no slat support")
                    ))),
                )
            } else {
                Item::new(home, c, vec![action.clone()])
            }
        })
        .collect();
    let opts = RunOptions {
        dry_run,
        show_current: true,
    };
    batch::run_confirmed(house, items, opts, caller, confirm.0, ask, header)
}

/// The blinds a scope names (slat-capable ones only for the slats action, except named ones).
fn select<'h>(
    home: &'h Home,
    scope: Scope,
    target: Option<&Value>,
    action: &Action,
) -> Result<(Option<String>, Vec<&'h Control>), ToolError> {
    let slats = matches!(action, Action::Slats(_));
    let member = move |_: &Home, c: &Control| is_blind(c) && (!slats || has_slats(c));
    let members = Members {
        family: Family::Blinds,
        noun: if slats { "blinds with slats" } else { "blinds" },
        member: &member,
    };
    batch::select(home, scope, target, None, &members)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RoomArgs {
    room: String,
    action: RoomAction,
    position: Option<f64>,
    dry_run: Option<bool>,
}

fn control_room(house: &Ctx, a: &Map<String, Value>, caller: &Caller) -> Result<Value, ToolError> {
    let a: RoomArgs = args::parse(a)?;
    let action = to_action(a.action.into(), a.position, "position")?;
    let home = house.home();
    let (room, blinds) = select(&home, Scope::Room, Some(&json!(a.room)), &action)?;
    let header = batch::header(
        "room",
        room.as_deref(),
        UnifiedAction::from(a.action).as_str(),
        a.position,
    );
    run_blinds(
        house,
        &home,
        &blinds,
        &action,
        a.dry_run.unwrap_or(false),
        caller,
        header,
        (None, false),
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AllArgs {
    action: RoomAction,
    position: Option<f64>,
    dry_run: Option<bool>,
    confirm: Option<bool>,
}

fn control_all(house: &Ctx, a: &Map<String, Value>, caller: &Caller) -> Result<Value, ToolError> {
    let a: AllArgs = args::parse(a)?;
    let action = to_action(a.action.into(), a.position, "position")?;
    let home = house.home();
    let (_, blinds) = select(&home, Scope::System, None, &action)?;
    let header = batch::header(
        "system",
        None,
        UnifiedAction::from(a.action).as_str(),
        a.position,
    );
    run_blinds(
        house,
        &home,
        &blinds,
        &action,
        a.dry_run.unwrap_or(false),
        caller,
        header,
        (a.confirm, true),
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UnifiedArgs {
    scope: String,
    target: Option<Value>,
    action: UnifiedAction,
    value: Option<f64>,
    dry_run: Option<bool>,
    confirm: Option<bool>,
}

fn control_unified(
    house: &Ctx,
    a: &Map<String, Value>,
    caller: &Caller,
) -> Result<Value, ToolError> {
    let a: UnifiedArgs = args::parse(a)?;
    let scope = Scope::parse(&a.scope)?;
    let action = to_action(a.action, a.value, "value")?;
    let home = house.home();
    // Named blinds: every one is addressed (a central block too); a blind without slats
    // asked for slats reports its own error.
    let (target, blinds) = if scope == Scope::Device {
        let members = Members {
            family: Family::Blinds,
            noun: "blinds",
            member: &|_, c| is_blind(c),
        };
        batch::select(&home, scope, a.target.as_ref(), None, &members)?
    } else {
        select(&home, scope, a.target.as_ref(), &action)?
    };
    let header = batch::header(
        scope.as_str(),
        target.as_deref(),
        a.action.as_str(),
        a.value,
    );
    run_blinds(
        house,
        &home,
        &blinds,
        &action,
        a.dry_run.unwrap_or(false),
        caller,
        header,
        (a.confirm, scope == Scope::System),
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BlindsStatus {
    room: Option<String>,
    name: Option<String>,
    state: Option<String>,
    limit: Option<i64>,
}

/// A blind's position in words: open (0 %), closed (100 %), partly closed.
fn position_word(p: f64) -> &'static str {
    if p <= 0.5 {
        "open"
    } else if p >= 99.5 {
        "closed"
    } else {
        "partly_closed"
    }
}

fn get_blinds_status(
    house: &Ctx,
    a: &Map<String, Value>,
    caller: &Caller,
) -> Result<Value, ToolError> {
    let a: BlindsStatus = args::parse(a)?;
    let limit = args::limit(a.limit)?;
    let states = ["open", "closed", "partly_closed", "not_open"];
    let want = a
        .state
        .as_deref()
        .map(|s| args::one_of("state", s, &states))
        .transpose()?;
    let home = house.home();
    let room = args::room_uuid(&home, a.room.as_deref())?;
    let name = args::NameFilter::new(a.name.as_deref());
    let mut values = view::ValueReader::new(house);
    let mut blinds = Vec::new();
    let mut not_open = 0;
    for c in home.controls.iter().filter(|c| is_blind(c)) {
        if caller.permits(&home, c).is_err()
            || room.as_ref().is_some_and(|r| c.room.as_ref() != Some(r))
            || !name.matches(&c.name)
        {
            continue;
        }
        let position = values.read(c).and_then(|v| v.value.as_f64()).map(percent);
        let word = position.map(position_word);
        if word.is_some_and(|w| w != "open") {
            not_open += 1;
        }
        let keep = match want {
            None => true,
            Some("not_open") => word.is_some_and(|w| w != "open"),
            Some(w) => word == Some(w),
        };
        if keep {
            blinds.push(json!({
                "uuid": c.uuid,
                "name": c.name,
                "room": home.room_name(c),
                "position": position,
                "state": word,
                "style": style(c),
                "automatic_shading": c.details.get("isAutomatic").and_then(Value::as_bool).unwrap_or(false),
            }));
        }
    }
    let total = blinds.len();
    blinds.truncate(limit);
    Ok(values.annotate(json!({
        "blinds": blinds,
        "total": total,
        "not_open": not_open,
        "position_meaning": POSITION_MEANING,
    })))
}
