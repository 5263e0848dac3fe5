//! Lighting: `control_room_lights`, `control_all_lights`, `control_lights_unified`,
//! `room_all_on`, `set_dimmer`.
//!
//! Which controls are lights: top-level controls of the lighting family ([`Home::family`]:
//! Dimmer, EIBDimmer, LightController v1, LightControllerV2, ColorPickerV2, and the generic
//! Switch, TimedSwitch and Pushbutton when their Loxone category is a lighting one, type
//! `lights`) that take `on`/`off`, except the CentralLightController (it would switch every room
//! a second time) and sub-controls (a LightControllerV2's circuits and colour pickers follow
//! their controller). A switch in no category or another one is not a light, so "all lights
//! off" leaves the coffee machine's socket and the storm protection alone. Named devices (`set_dimmer`, scope `device`) may be any
//! lighting control, sub-controls included.
//!
//! Switching goes through the batch runner ([`super::batch`]): every result lists each light
//! with its status and commands in the shape all batch tools share, so one failing light does
//! not hide the others; room- and house-wide calls take `dry_run: true`, which lists the
//! controls and the Loxone commands that would be sent, and sends nothing.

use serde_json::{json, Value};

use super::args;
use super::batch::{self, Item, Members, RunOptions, Scope};
use super::schema::{tool_args, words, Confirm, DryRun, Limit, Names};
use super::view;
use super::{Caller, Ctx, Reach, Tool, ToolError};
use crate::home::bounds::PERCENT;

use crate::home::{Action, Control, ControlKind, ControllerError, Family, Home};

/// Default brightness of `dim` and `bright` without a value, in percent.
const DIM_DEFAULT: f64 = 30.0;
const BRIGHT_DEFAULT: f64 = 100.0;

pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "control_room_lights",
            "Switch a room's lights",
            "Switches every light of a room on or off; brightness (0-100 %) with on sets dimmable lights to it.",
            control_room_lights,
        )
        .operates(Reach::Room { room: "room", family: Family::Lighting })
        .data(batch::result_schema),
        Tool::new(
            "control_all_lights",
            "Switch all lights of the house",
            "Switches every light of the house on or off, one by one; preview with dry_run. Needs confirmation (see confirm).",
            control_all_lights,
        )
        .operates(Reach::House(Family::Lighting))
        .data(batch::confirmable_result_schema),
        Tool::new(
            "control_lights_unified",
            "Control lights",
            "Lights by scope: device (target: names or UUIDs; room for equal names), room (target or room), category (target: Loxone category or lighting), system (whole house; needs confirmation, see confirm). action: on, off, dim (value or 30), bright (value or 100), brightness (value). value: 0-100 %.",
            control_lights_unified,
        )
        .operates(Reach::Unified(Family::Lighting))
        .data(batch::confirmable_result_schema),
        Tool::new(
            "room_all_on",
            "All lights of a room on",
            "Switches on every light of a room (LightControllerV2: bright mood; LightController: scene 9; dimmers: last level).",
            room_all_on,
        )
        .operates(Reach::Room { room: "room_id", family: Family::Lighting })
        .data(batch::result_schema),
        Tool::new(
            "set_dimmer",
            "Set a dimmer",
            "Sets one dimmable light to level 0-100 % (0 = off); room picks among equal names.",
            set_dimmer,
        )
        .operates(Reach::Controls { room: "room" })
        .data(batch::result_schema),
        Tool::new(
            "get_lights_status",
            "Lights status",
            "Lists lights with room, type, on (null: unknown), level % (dimmers), scene or mood_id (778 = off); on counts those on.",
            get_lights_status,
        )
        .lists(Reach::Room { room: "room", family: Family::Lighting })
        .data(|| args::listing_schema("lights", args::item_schema(&["name", "on"]), &["on"])),
    ]
}

words! {
    /// On or off: the action of the room and house switches, and a state to list.
    enum OnOff {
        On = "on" => ["brightness"],
        Off = "off",
    }
}

words! {
    /// The actions of `control_lights_unified`.
    enum LightAction {
        On = "on" => ["value"],
        Off = "off",
        Dim = "dim" => ["value"],
        Bright = "bright" => ["value"],
        Brightness = "brightness" => ["value"],
    }
}

/// Whether `word` is an action of `control_lights_unified` (the lean `control` sends its room,
/// category and house-wide calls with such a word there).
pub(crate) fn takes_action(word: &str) -> bool {
    LightAction::from_word(word).is_some()
}

/// What the caller wants every light to do.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Intent {
    On,
    Off,
    /// Brightness in percent.
    Level(f64),
}

/// The actions that carry out `intent` on `c`, and a note when the light cannot do exactly
/// that (a switch asked for a brightness).
fn plan(c: &Control, intent: Intent) -> (Vec<Action>, Option<String>) {
    match intent {
        Intent::On => (vec![Action::On], None),
        Intent::Off => (vec![Action::Off], None),
        Intent::Level(v) if v <= 0.0 => (vec![Action::Off], None),
        // A V2 in its "off" mood keeps its lights off whatever the master brightness: go to
        // the bright mood first, then scale it.
        Intent::Level(v) if c.kind == ControlKind::LightControllerV2 => {
            (vec![Action::On, Action::Level(v)], None)
        }
        Intent::Level(v) if c.kind.is_dimmable() => (vec![Action::Level(v)], None),
        Intent::Level(_) => (
            vec![Action::On],
            Some(format!("{} cannot be dimmed; switched on", c.kind)),
        ),
    }
}

/// One batch item per light.
fn items<'h>(home: &Home, lights: &[&'h Control], intent: Intent) -> Vec<Item<'h>> {
    lights
        .iter()
        .map(|c| {
            let (actions, note) = plan(c, intent);
            Item::new(home, c, actions).with_note(note)
        })
        .collect()
}

/// Which lights a call names: a scope with its target or room (see [`batch::select`]).
struct Which<'a> {
    scope: Scope,
    target: Option<&'a Names>,
    room: Option<&'a str>,
}

/// Carries out `intent` (the word `action`) on the lights `which` names and builds the result
/// (header: the scope, the target's name, `action`, the brightness); house-wide calls are
/// confirmed first ([`batch::run_confirmed`], `confirm` the argument).
fn switch(
    house: &Ctx,
    caller: &Caller,
    which: Which,
    intent: Intent,
    action: &str,
    dry_run: DryRun,
    confirm: Confirm,
) -> Result<Value, ToolError> {
    let home = house.home();
    let (target, lights) = batch::select(&home, which.scope, which.target, which.room, &members())?;
    let level = match intent {
        Intent::Level(v) => Some(v),
        _ => None,
    };
    let header = batch::header(which.scope.as_str(), target.as_deref(), action, level);
    let opts = RunOptions {
        dry_run: dry_run.0,
        show_current: false,
    };
    let ask = (which.scope == Scope::System).then(|| match intent {
        Intent::On => batch::Ask::new("Switch on", "lights"),
        Intent::Off => batch::Ask::new("Switch off", "lights"),
        Intent::Level(v) => {
            batch::Ask::new("Set", "lights").with_suffix(format!(" to {v} % brightness"))
        }
    });
    let items = items(&home, &lights, intent);
    batch::run_confirmed(house, items, opts, caller, confirm.0, ask, header)
}

/// How scope targeting finds lights.
fn members() -> Members<'static> {
    Members {
        family: Family::Lighting,
        noun: "lights",
        member: &Home::is_light,
    }
}

tool_args! {
    /// The arguments of `control_room_lights`.
    struct RoomLights {
        room: String,
        action: OnOff { selects: &["brightness"] },
        brightness: Option<f64> { range: PERCENT },
        dry_run: DryRun,
    }
}

fn control_room_lights(house: &Ctx, a: RoomLights, caller: &Caller) -> Result<Value, ToolError> {
    let intent = match (a.action, a.brightness) {
        (OnOff::On, Some(b)) => Intent::Level(b),
        (OnOff::On, None) => Intent::On,
        // A brightness with off is refused by the declaration (`selects`).
        (OnOff::Off, _) => Intent::Off,
    };
    let room = Which {
        scope: Scope::Room,
        target: None,
        room: Some(&a.room),
    };
    let action = a.action.as_str();
    switch(
        house,
        caller,
        room,
        intent,
        action,
        a.dry_run,
        Confirm(None),
    )
}

tool_args! {
    /// The arguments of `control_all_lights`.
    struct AllLights {
        action: OnOff,
        dry_run: DryRun,
        confirm: Confirm,
    }
}

fn control_all_lights(house: &Ctx, a: AllLights, caller: &Caller) -> Result<Value, ToolError> {
    let intent = match a.action {
        OnOff::On => Intent::On,
        OnOff::Off => Intent::Off,
    };
    let house_wide = Which {
        scope: Scope::System,
        target: None,
        room: None,
    };
    let action = a.action.as_str();
    switch(
        house, caller, house_wide, intent, action, a.dry_run, a.confirm,
    )
}

tool_args! {
    /// The arguments of `control_lights_unified`.
    struct Unified {
        scope: Scope,
        target: Option<Names> { about: batch::TARGET },
        room: Option<String>,
        action: LightAction { selects: &["value"] },
        value: Option<f64> { range: PERCENT },
        dry_run: DryRun,
        confirm: Confirm,
    }
}

fn control_lights_unified(house: &Ctx, a: Unified, caller: &Caller) -> Result<Value, ToolError> {
    let intent = match (a.action, a.value) {
        (LightAction::On, Some(v)) => Intent::Level(v),
        (LightAction::On, None) => Intent::On,
        (LightAction::Off, _) => Intent::Off,
        (LightAction::Dim, v) => Intent::Level(v.unwrap_or(DIM_DEFAULT)),
        (LightAction::Bright, v) => Intent::Level(v.unwrap_or(BRIGHT_DEFAULT)),
        (LightAction::Brightness, Some(v)) => Intent::Level(v),
        (LightAction::Brightness, None) => {
            return Err(ToolError::InvalidParams(
                "value (0-100) is required with action brightness".into(),
            ))
        }
    };
    let which = Which {
        scope: a.scope,
        target: a.target.as_ref(),
        room: a.room.as_deref(),
    };
    let action = a.action.as_str();
    switch(house, caller, which, intent, action, a.dry_run, a.confirm)
}

tool_args! {
    /// The arguments of `room_all_on`.
    struct RoomAllOn {
        room_id: String,
        dry_run: DryRun,
    }
}

fn room_all_on(house: &Ctx, a: RoomAllOn, caller: &Caller) -> Result<Value, ToolError> {
    let room = Which {
        scope: Scope::Room,
        target: None,
        room: Some(&a.room_id),
    };
    switch(
        house,
        caller,
        room,
        Intent::On,
        "on",
        a.dry_run,
        Confirm(None),
    )
}

tool_args! {
    /// The arguments of `set_dimmer`.
    struct SetDimmer {
        device_id: String { about: "Light name or UUID" },
        level: f64 { range: PERCENT },
        room: Option<String>,
    }
}

fn set_dimmer(house: &Ctx, a: SetDimmer, caller: &Caller) -> Result<Value, ToolError> {
    let level = a.level;
    let home = house.home();
    let c = home.resolve_control(&a.device_id, a.room.as_deref(), &|c| {
        home.family(c) == Family::Lighting
    })?;
    if !c.kind.is_dimmable() {
        return Err(ToolError::Controller(ControllerError::Unsupported(
            format!(
            "{} ({}) cannot be dimmed; use control_room_lights or control_device with on or off",
            c.name, c.kind
        ),
        )));
    }
    let report = batch::run(
        house,
        items(&home, &[c], Intent::Level(level)),
        RunOptions::default(),
        caller,
    );
    report.into_single(batch::header("device", None, "brightness", Some(level)))
}

tool_args! {
    /// The arguments of `get_lights_status`.
    struct LightsStatus {
        room: Option<String>,
        name: Option<String> { about: args::NAME },
        kind: Option<String> { key: "type", about: "Loxone type, e.g. Dimmer" },
        state: Option<OnOff>,
        limit: Limit,
    }
}

fn get_lights_status(house: &Ctx, a: LightsStatus, caller: &Caller) -> Result<Value, ToolError> {
    let limit = a.limit.0;
    let want_on = a.state.map(|s| s == OnOff::On);
    let home = house.home();
    let room = args::room_uuid(&home, a.room.as_deref())?;
    let kind = args::control_type(&home, a.kind.as_deref(), &|c| home.is_light(c))?;
    let name = args::NameFilter::new(a.name.as_deref());
    let candidates: Vec<&Control> = home
        .controls
        .iter()
        .filter(|c| home.is_light(c) && args::listed(&home, caller, room.as_ref(), c))
        .filter(|c| kind.as_ref().is_none_or(|k| &c.kind == k))
        .filter(|c| name.matches(&c.name))
        .collect();
    let mut values = view::ValueReader::new(house);
    let mut lights = Vec::new();
    let mut on_count = 0;
    for c in candidates {
        let state = values.read(c).map(|v| view::state(c, &v.value));
        let on = state
            .as_ref()
            .and_then(|s| s.get("on"))
            .and_then(Value::as_bool);
        if on == Some(true) {
            on_count += 1;
        }
        if want_on.is_some() && on != want_on {
            continue;
        }
        let mut d = json!({
            "uuid": c.uuid,
            "name": c.name,
            "room": home.room_name(c),
            "type": c.kind.as_str(),
            "dimmable": c.kind.is_dimmable(),
            "on": on,
        });
        if let Some(Value::Object(s)) = state {
            for (k, v) in s {
                if k != "on" {
                    d[k] = v;
                }
            }
        }
        lights.push(d);
    }
    let total = lights.len();
    lights.truncate(limit);
    Ok(values.annotate(json!({"lights": lights, "total": total, "on": on_count})))
}
