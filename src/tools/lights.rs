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

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::args::{self, in_range};
use super::batch::{self, Item, Members, RunOptions, Scope};
use super::view;
use super::{confirm_schema, Caller, Ctx, Permission, Tool, ToolError, READ_ONLY, SETTER};

use crate::home::{Action, Control, ControlKind, ControllerError, Family, Home, House};

/// Default brightness of `dim` and `bright` without a value, in percent.
const DIM_DEFAULT: f64 = 30.0;
const BRIGHT_DEFAULT: f64 = 100.0;

pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "control_room_lights",
            title: "Switch a room's lights",
            description: "Switches every light of a room on or off; brightness (0-100 %) with on sets dimmable lights to it.",
            permission: Permission::Control,
            annotations: SETTER,
            input_schema: || {
                args::closed(
                    json!({
                        "room": args::room_schema(),
                        "action": {"type": "string", "enum": ["on", "off"]},
                        "brightness": percent_schema(),
                        "dry_run": args::dry_run_schema()
                    }),
                    &["room", "action"],
                )
            },
            data_schema: batch::result_schema,
            run: control_room_lights,
        },
        Tool {
            name: "control_all_lights",
            title: "Switch all lights of the house",
            description: "Switches every light of the house on or off, one by one; preview with dry_run. Needs confirmation (see confirm).",
            permission: Permission::Control,
            annotations: SETTER,
            input_schema: || {
                args::closed(
                    json!({
                        "action": {"type": "string", "enum": ["on", "off"]},
                        "dry_run": args::dry_run_schema(),
                        "confirm": confirm_schema()
                    }),
                    &["action"],
                )
            },
            data_schema: batch::confirmable_result_schema,
            run: control_all_lights,
        },
        Tool {
            name: "control_lights_unified",
            title: "Control lights",
            description: "Lights by scope: device (target: names or UUIDs; room for equal names), room (target or room), category (target: Loxone category or lighting), system (whole house; needs confirmation, see confirm). action: on, off, dim (value or 30), bright (value or 100), brightness (value). value: 0-100 %.",
            permission: Permission::Control,
            annotations: SETTER,
            input_schema: || {
                args::closed(
                    json!({
                        "scope": batch::scope_schema(),
                        "target": batch::target_schema(),
                        "room": args::room_schema(),
                        "action": {"type": "string", "enum": ["on", "off", "dim", "bright", "brightness"]},
                        "value": percent_schema(),
                        "dry_run": args::dry_run_schema(),
                        "confirm": confirm_schema()
                    }),
                    &["scope", "action"],
                )
            },
            data_schema: batch::confirmable_result_schema,
            run: control_lights_unified,
        },
        Tool {
            name: "room_all_on",
            title: "All lights of a room on",
            description: "Switches on every light of a room (LightControllerV2: bright mood; LightController: scene 9; dimmers: last level).",
            permission: Permission::Control,
            annotations: SETTER,
            input_schema: || {
                args::closed(
                    json!({
                        "room_id": args::room_schema(),
                        "dry_run": args::dry_run_schema()
                    }),
                    &["room_id"],
                )
            },
            data_schema: batch::result_schema,
            run: room_all_on,
        },
        Tool {
            name: "set_dimmer",
            title: "Set a dimmer",
            description: "Sets one dimmable light to level 0-100 % (0 = off); room picks among equal names.",
            permission: Permission::Control,
            annotations: SETTER,
            input_schema: || {
                args::closed(
                    json!({
                        "device_id": {"type": "string", "description": "Light name or UUID"},
                        "level": percent_schema(),
                        "room": args::room_schema()
                    }),
                    &["device_id", "level"],
                )
            },
            data_schema: batch::result_schema,
            run: set_dimmer,
        },
        Tool {
            name: "get_lights_status",
            title: "Lights status",
            description: "Lists lights with room, type, on (null: unknown), level % (dimmers), scene or mood_id (778 = off); on counts those on.",
            permission: Permission::Read,
            annotations: READ_ONLY,
            input_schema: || {
                args::closed(
                    json!({
                        "room": args::room_schema(),
                        "name": args::name_filter_schema(),
                        "type": {"type": "string", "description": "Loxone type, e.g. Dimmer"},
                        "state": {"type": "string", "enum": ["on", "off"]},
                        "limit": args::limit_schema()
                    }),
                    &[],
                )
            },
            data_schema: || args::listing_schema("lights", args::item_schema(&["name", "on"]), &["on"]),
            run: get_lights_status,
        },
    ]
}

/// A brightness in percent.
fn percent_schema() -> Value {
    json!({"type": "number", "minimum": 0, "maximum": 100})
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

/// Runs `intent` on `lights` and builds the result; house-wide calls (`ask`) are confirmed
/// first ([`batch::run_confirmed`]).
#[allow(clippy::too_many_arguments)]
fn switch(
    house: &House,
    home: &Home,
    lights: &[&Control],
    intent: Intent,
    dry_run: bool,
    caller: &Caller,
    header: Value,
    confirm: Confirm,
) -> Result<Value, ToolError> {
    let opts = RunOptions {
        dry_run,
        show_current: false,
    };
    let ask = confirm.1.then(|| match intent {
        Intent::On => batch::Ask::new("Switch on", "lights"),
        Intent::Off => batch::Ask::new("Switch off", "lights"),
        Intent::Level(v) => {
            batch::Ask::new("Set", "lights").with_suffix(format!(" to {v} % brightness"))
        }
    });
    batch::run_confirmed(
        house,
        items(home, lights, intent),
        opts,
        caller,
        confirm.0,
        ask,
        header,
    )
}

/// The `confirm` argument and whether the call needs confirmation at all.
#[derive(Clone, Copy)]
struct Confirm(Option<bool>, bool);

/// No confirmation needed.
const NO_CONFIRM: Confirm = Confirm(None, false);

fn percent(field: &str, v: Option<f64>) -> Result<Option<f64>, ToolError> {
    v.map(|v| in_range(field, v, 0.0, 100.0)).transpose()
}

/// How scope targeting finds lights.
fn members() -> Members<'static> {
    Members {
        family: Family::Lighting,
        noun: "lights",
        member: &Home::is_light,
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RoomLights {
    room: String,
    action: String,
    brightness: Option<f64>,
    dry_run: Option<bool>,
}

fn control_room_lights(
    house: &Ctx,
    a: &Map<String, Value>,
    caller: &Caller,
) -> Result<Value, ToolError> {
    let a: RoomLights = args::parse(a)?;
    let action = args::one_of("action", &a.action, &["on", "off"])?;
    let brightness = percent("brightness", a.brightness)?;
    let intent = match (action, brightness) {
        ("on", Some(b)) => Intent::Level(b),
        ("on", None) => Intent::On,
        (_, None) => Intent::Off,
        (_, Some(_)) => {
            return Err(ToolError::InvalidParams(
                "brightness only goes with action on".into(),
            ))
        }
    };
    let home = house.home();
    let (room, lights) = batch::select(&home, Scope::Room, None, Some(&a.room), &members())?;
    let header = batch::header("room", room.as_deref(), action, brightness);
    switch(
        house,
        &home,
        &lights,
        intent,
        a.dry_run.unwrap_or(false),
        caller,
        header,
        NO_CONFIRM,
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AllLights {
    action: String,
    dry_run: Option<bool>,
    confirm: Option<bool>,
}

fn control_all_lights(
    house: &Ctx,
    a: &Map<String, Value>,
    caller: &Caller,
) -> Result<Value, ToolError> {
    let a: AllLights = args::parse(a)?;
    let action = args::one_of("action", &a.action, &["on", "off"])?;
    let intent = if action == "on" {
        Intent::On
    } else {
        Intent::Off
    };
    let home = house.home();
    let (_, lights) = batch::select(&home, Scope::System, None, None, &members())?;
    let header = batch::header("system", None, action, None);
    switch(
        house,
        &home,
        &lights,
        intent,
        a.dry_run.unwrap_or(false),
        caller,
        header,
        Confirm(a.confirm, true),
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Unified {
    scope: String,
    target: Option<Value>,
    room: Option<String>,
    action: String,
    value: Option<f64>,
    dry_run: Option<bool>,
    confirm: Option<bool>,
}

fn control_lights_unified(
    house: &Ctx,
    a: &Map<String, Value>,
    caller: &Caller,
) -> Result<Value, ToolError> {
    let a: Unified = args::parse(a)?;
    let scope = Scope::parse(&a.scope)?;
    let action = args::one_of(
        "action",
        &a.action,
        &["on", "off", "dim", "bright", "brightness"],
    )?;
    let value = percent("value", a.value)?;
    let intent = match (action, value) {
        ("on", Some(v)) => Intent::Level(v),
        ("on", None) => Intent::On,
        ("off", _) => Intent::Off,
        ("dim", v) => Intent::Level(v.unwrap_or(DIM_DEFAULT)),
        ("bright", v) => Intent::Level(v.unwrap_or(BRIGHT_DEFAULT)),
        (_, Some(v)) => Intent::Level(v),
        (_, None) => {
            return Err(ToolError::InvalidParams(
                "value (0-100) is required with action brightness".into(),
            ))
        }
    };
    let level = match intent {
        Intent::Level(v) => Some(v),
        _ => None,
    };
    let home = house.home();
    let (target, lights) = batch::select(
        &home,
        scope,
        a.target.as_ref(),
        a.room.as_deref(),
        &members(),
    )?;
    let header = batch::header(scope.as_str(), target.as_deref(), action, level);
    switch(
        house,
        &home,
        &lights,
        intent,
        a.dry_run.unwrap_or(false),
        caller,
        header,
        Confirm(a.confirm, scope == Scope::System),
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RoomAllOn {
    room_id: String,
    dry_run: Option<bool>,
}

fn room_all_on(house: &Ctx, a: &Map<String, Value>, caller: &Caller) -> Result<Value, ToolError> {
    let a: RoomAllOn = args::parse(a)?;
    let home = house.home();
    let (room, lights) = batch::select(&home, Scope::Room, None, Some(&a.room_id), &members())?;
    let header = batch::header("room", room.as_deref(), "on", None);
    switch(
        house,
        &home,
        &lights,
        Intent::On,
        a.dry_run.unwrap_or(false),
        caller,
        header,
        NO_CONFIRM,
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetDimmer {
    device_id: String,
    level: f64,
    room: Option<String>,
}

fn set_dimmer(house: &Ctx, a: &Map<String, Value>, caller: &Caller) -> Result<Value, ToolError> {
    let a: SetDimmer = args::parse(a)?;
    let level = in_range("level", a.level, 0.0, 100.0)?;
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LightsStatus {
    room: Option<String>,
    name: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    state: Option<String>,
    limit: Option<i64>,
}

fn get_lights_status(
    house: &Ctx,
    a: &Map<String, Value>,
    caller: &Caller,
) -> Result<Value, ToolError> {
    let a: LightsStatus = args::parse(a)?;
    let limit = args::limit(a.limit)?;
    let want_on = match a.state.as_deref() {
        None => None,
        Some(s) => Some(args::one_of("state", s, &["on", "off"])? == "on"),
    };
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
