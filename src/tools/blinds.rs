//! Blinds: `discover_rolladen_capabilities`, `control_room_rolladen`, `control_all_rolladen`,
//! `control_rolladen_unified`, `get_blinds_status`.
//!
//! Positions are percent closed: 0 = fully open (up), 100 = fully closed (down), as Loxone's
//! `manualPosition/{0-100}` takes them (the Jalousie state `position` is the same as 0-1).
//! Room- and house-wide commands go to each Jalousie, never to CentralJalousie blocks (those
//! would move the same blinds a second time), and go through the batch runner
//! ([`super::batch`]): one result per blind, so one failure does not hide the others.

use serde_json::{json, Value};

use super::args;
use super::batch::{self, Item, Members, RunOptions, Scope};
use super::schema::{tool_args, words, Confirm, DryRun, Limit, Names, RoomListing};
use super::view;
use super::{Caller, Ctx, Reach, Tool, ToolError};
use crate::home::bounds::PERCENT;
use crate::home::{Action, Control, ControlKind, ControllerError, Family, Home};

pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "discover_rolladen_capabilities",
            "Discover blinds",
            "Lists blinds and central blind blocks with room, position (% closed, 0 = open), style, slats, automatic shading, supported actions.",
            discover,
        )
        .lists(Reach::Room { room: "room", family: Family::Blinds })
        .data(|| {
            args::listing_schema(
                "blinds",
                args::item_schema(&["name", "position", "actions"]),
                &[],
            )
        }),
        Tool::new(
            "control_room_rolladen",
            "Blinds of a room",
            "Moves every blind of a room: up (open), down (closed), stop, shade, position (position: % closed, 0 = fully open).",
            control_room,
        )
        .operates(Reach::Room { room: "room", family: Family::Blinds })
        .data(batch::result_schema),
        Tool::new(
            "control_all_rolladen",
            "All blinds",
            "Moves every blind of the house, one by one: up, down, stop, shade, position (position: % closed, 0 = fully open). Needs confirmation (see confirm).",
            control_all,
        )
        .operates(Reach::House(Family::Blinds))
        .task()
        .data(batch::confirmable_result_schema),
        Tool::new(
            "control_rolladen_unified",
            "Blinds (unified)",
            "Blinds by scope: device (target: names or UUIDs, central blocks too), room (target), category (target: Loxone category or blinds), system (whole house; needs confirmation, see confirm). action: up (open), down (closed), stop, shade, position (value: % closed, 0 = fully open), slats (value: angle %).",
            control_unified,
        )
        .operates(Reach::Unified(Family::Blinds))
        .task()
        .data(batch::confirmable_result_schema),
        Tool::new(
            "get_blinds_status",
            "Blinds status",
            "Lists blinds with room, position (% closed, 0 = open; null: unknown), state, style, automatic shading; not_open counts those not fully open.",
            get_blinds_status,
        )
        .lists(Reach::Room { room: "room", family: Family::Blinds })
        .data(|| {
            args::listing_schema(
                "blinds",
                json!({
                    "type": "object",
                    "properties": {
                        "state": {"enum": ["open", "closed", "partly_closed", null]}
                    },
                    "required": ["name", "position", "state"]
                }),
                &["not_open"],
            )
        }),
    ]
}

const POSITION_MEANING: &str = "percent closed, 0 = fully open, 100 = fully closed";

/// The description of a room- or house-wide blind command's `position`.
const POSITION: &str = "% closed, for action position";

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

fn discover(house: &Ctx, a: RoomListing, caller: &Caller) -> Result<Value, ToolError> {
    let limit = a.limit.0;
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

words! {
    /// The actions of the room- and house-wide blind commands.
    enum RoomAction {
        Up = "up",
        Down = "down",
        Stop = "stop",
        Shade = "shade",
        Position = "position" => ["position"],
    }
}

/// Whether `word` is an action of `control_rolladen_unified` (the lean `control` sends its
/// room, category and house-wide calls with such a word there).
pub(crate) fn takes_action(word: &str) -> bool {
    UnifiedAction::from_word(word).is_some()
}

words! {
    /// The actions of `control_rolladen_unified`.
    enum UnifiedAction {
        Up = "up",
        Down = "down",
        Stop = "stop",
        Shade = "shade",
        Position = "position" => ["value"],
        Slats = "slats" => ["value"],
    }
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

/// The [`Action`] for `action` with the percent `value` (named `field` in errors): required
/// for position and slats (the declarations refuse it with the others, `selects`).
fn to_action(action: UnifiedAction, value: Option<f64>, field: &str) -> Result<Action, ToolError> {
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
        (UnifiedAction::Up, _) => Ok(Action::Up),
        (UnifiedAction::Down, _) => Ok(Action::Down),
        (UnifiedAction::Stop, _) => Ok(Action::Stop),
        (UnifiedAction::Shade, _) => Ok(Action::Shade),
    }
}

/// Carries out `action` with its percent `value` (named `field` in errors) on the blinds
/// `scope` and `target` name (every Jalousie, never a CentralJalousie, which would move the
/// same blinds a second time; for the slats action only those with slats, except named ones,
/// which each report their own error) and builds the result; the whole house is confirmed
/// first ([`batch::run_confirmed`], `confirm` the argument).
#[allow(clippy::too_many_arguments)]
fn move_blinds(
    house: &Ctx,
    caller: &Caller,
    scope: Scope,
    target: Option<&Names>,
    (action, value, field): (UnifiedAction, Option<f64>, &str),
    dry_run: DryRun,
    confirm: Confirm,
) -> Result<Value, ToolError> {
    let word = action.as_str();
    let action = to_action(action, value, field)?;
    let home = house.home();
    let (target, blinds) = if scope == Scope::Device {
        let members = Members {
            family: Family::Blinds,
            noun: "blinds",
            member: &|_, c| is_blind(c),
        };
        batch::select(&home, scope, target, None, &members)?
    } else {
        select(&home, scope, target, &action)?
    };
    let header = batch::header(scope.as_str(), target.as_deref(), word, value);
    let ask = (scope == Scope::System).then(|| match &action {
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
                    &home,
                    c,
                    ToolError::Controller(ControllerError::Unsupported(format!(
                        "{} has no slats ({})",
                        c.name,
                        style(c).unwrap_or("no slat support")
                    ))),
                )
            } else {
                Item::new(&home, c, vec![action.clone()])
            }
        })
        .collect();
    let opts = RunOptions {
        dry_run: dry_run.0,
        show_current: true,
    };
    batch::run_confirmed(house, items, opts, caller, confirm.0, ask, header)
}

/// The blinds a scope names (slat-capable ones only for the slats action, except named ones).
fn select<'h>(
    home: &'h Home,
    scope: Scope,
    target: Option<&Names>,
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

tool_args! {
    /// The arguments of `control_room_rolladen`.
    struct RoomArgs {
        room: String,
        action: RoomAction { selects: &["position"] },
        position: Option<f64> { range: PERCENT, about: POSITION },
        dry_run: DryRun,
    }
}

fn control_room(house: &Ctx, a: RoomArgs, caller: &Caller) -> Result<Value, ToolError> {
    let room = Names(vec![a.room]);
    let action = (a.action.into(), a.position, "position");
    let (dry_run, confirm) = (a.dry_run, Confirm(None));
    move_blinds(
        house,
        caller,
        Scope::Room,
        Some(&room),
        action,
        dry_run,
        confirm,
    )
}

tool_args! {
    /// The arguments of `control_all_rolladen`.
    struct AllArgs {
        action: RoomAction { selects: &["position"] },
        position: Option<f64> { range: PERCENT, about: POSITION },
        dry_run: DryRun,
        confirm: Confirm,
    }
}

fn control_all(house: &Ctx, a: AllArgs, caller: &Caller) -> Result<Value, ToolError> {
    let action = (a.action.into(), a.position, "position");
    move_blinds(
        house,
        caller,
        Scope::System,
        None,
        action,
        a.dry_run,
        a.confirm,
    )
}

tool_args! {
    /// The arguments of `control_rolladen_unified`.
    struct UnifiedArgs {
        scope: Scope,
        target: Option<Names> { about: batch::TARGET },
        action: UnifiedAction { selects: &["value"] },
        value: Option<f64> { range: PERCENT },
        dry_run: DryRun,
        confirm: Confirm,
    }
}

fn control_unified(house: &Ctx, a: UnifiedArgs, caller: &Caller) -> Result<Value, ToolError> {
    let target = a.target.as_ref();
    let action = (a.action, a.value, "value");
    move_blinds(house, caller, a.scope, target, action, a.dry_run, a.confirm)
}

words! {
    /// The states `get_blinds_status` lists: open (0 %), closed (100 %), partly closed, and
    /// every one not fully open.
    enum State {
        Open = "open",
        Closed = "closed",
        PartlyClosed = "partly_closed",
        NotOpen = "not_open",
    }
}

tool_args! {
    /// The arguments of `get_blinds_status`.
    struct BlindsStatus {
        room: Option<String>,
        name: Option<String> { about: args::NAME },
        state: Option<State>,
        limit: Limit,
    }
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

fn get_blinds_status(house: &Ctx, a: BlindsStatus, caller: &Caller) -> Result<Value, ToolError> {
    let limit = a.limit.0;
    let want = a.state.map(State::as_str);
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
