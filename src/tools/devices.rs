//! Rooms and devices: `list_rooms`, `list_devices`, `control_device`.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::args;
use super::schema::{tool_args, words, Confirm, DryRun, Limit};
use super::view;
use super::{mark_unconfirmed, with_confirmation, Caller, Ctx, Reach, ToConfirm, Tool, ToolError};
use crate::home::bounds::{Range, HUE, KELVIN, MOOD, PERCENT, RADIO_OUTPUT, TEXT_MAX_CHARS};
use crate::home::{
    Action, Control, ControlKind, ControllerError, Family, Home, House, Primary, Risk,
};

pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "list_rooms",
            "List rooms",
            "Lists the rooms with their number of devices per category.",
            list_rooms,
        )
        .reach(Reach::Filtered)
        .data(|| {
            args::listing_schema(
                "rooms",
                args::item_schema(&["name", "devices_by_category"]),
                &[],
            )
        }),
        Tool::new(
            "list_devices",
            "List devices",
            "Lists devices with room, category and state (on, level %, blinds % closed with 0 = open, °C).",
            list_devices,
        )
        .lists(Reach::Listing)
        .data(|| {
            args::listing_schema(
                "devices",
                args::item_schema(&["uuid", "name", "category"]),
                &[],
            )
        }),
        Tool::new(
            "control_device",
            "Control a device",
            "Controls one device (name or UUID; room for equal names). action: on, off, dim/bright (value %, default 30/100), up/down/stop (blinds; value = % closed, 0 = open), shade, slats (value %), pulse, mood (scene id, or mood: its name), color (hue, saturation, value), white (kelvin, value), set/select (number; select 0 = all off), text, play/pause/next/previous; German words too. Refuses alarms and secured controls (arm_alarm, disarm_alarm); opens gates and doors only for keys whose owner allows it, after the user confirms. dry_run: what would be sent.",
            control_device,
        )
        .operates(Reach::Controls { room: "room" })
        .data(|| {
            with_confirmation(json!({
                "type": "object",
                "properties": {
                    "device": {"type": "object"},
                    "action": {"type": "string"},
                    "dry_run": {"type": "boolean"}
                },
                "required": ["device", "action"]
            }))
        }),
    ]
}

tool_args! {
    /// The arguments of `list_rooms`.
    struct ListRooms {
        name: Option<String> { about: "Part of the room name" },
        limit: Limit,
    }
}

/// Every room (a key limited to rooms sees only those).
fn list_rooms(house: &Ctx, a: ListRooms, caller: &Caller) -> Result<Value, ToolError> {
    let limit = a.limit.0;
    let home = house.home();
    let name = args::NameFilter::new(a.name.as_deref());
    let scope = caller.access().and_then(|a| a.scope.as_ref());
    let matching: Vec<_> = home
        .rooms
        .iter()
        .filter(|r| {
            name.matches(&r.name) && scope.is_none_or(|s| s.allows_room(&home, Some(&r.uuid)))
        })
        .collect();
    let rooms: Vec<Value> = matching
        .iter()
        .take(limit)
        .map(|r| {
            let controls = home.controls_in_room(&r.uuid);
            let mut by_family: BTreeMap<&str, usize> = BTreeMap::new();
            for c in &controls {
                *by_family.entry(home.family(c).as_str()).or_default() += 1;
            }
            json!({
                "uuid": r.uuid,
                "name": r.name,
                "device_count": controls.len(),
                "devices_by_category": by_family,
            })
        })
        .collect();
    Ok(json!({"rooms": rooms, "total": matching.len()}))
}

tool_args! {
    /// The arguments of `list_devices`.
    struct ListDevices {
        room: Option<String>,
        category: Option<String> {
            about: "A family (lighting, blinds, climate, audio, security, access, sensors, energy, other) or Loxone category",
        },
        kind: Option<String> { key: "type", about: "Loxone type, e.g. Dimmer, Jalousie" },
        include_state: bool { default: true },
        limit: Limit,
    }
}

fn list_devices(house: &Ctx, a: ListDevices, caller: &Caller) -> Result<Value, ToolError> {
    let limit = a.limit.0;
    let home = house.home();
    let room = args::room_uuid(&home, a.room.as_deref())?;
    let category = a
        .category
        .as_deref()
        .map(|c| home.word(c))
        .transpose()
        .map_err(|e| ToolError::InvalidParams(format!("category: {e}")))?;
    let kind = args::control_type(&home, a.kind.as_deref(), &|_| true)?;
    let matching: Vec<&Control> = home
        .controls
        .iter()
        .filter(|c| args::listed(&home, caller, room.as_ref(), c))
        .filter(|c| category.as_ref().is_none_or(|w| w.contains(&home, c)))
        .filter(|c| kind.as_ref().is_none_or(|k| &c.kind == k))
        .collect();

    let include_state = a.include_state;
    let mut values = view::ValueReader::new(house);
    let devices: Vec<Value> = matching
        .iter()
        .take(limit)
        .map(|c| {
            let mut d = view::device(&home, c);
            if include_state && Primary::has_value(c) {
                d["state"] = match values.read(c) {
                    Some(v) => view::state_with_age(c, &v),
                    None => Value::Null,
                };
            }
            d
        })
        .collect();
    Ok(values.annotate(json!({"devices": devices, "total": matching.len()})))
}

words! {
    /// What `control_device` can be asked to do: the English words and the German ones people
    /// say to a Loxone house (ein/aus, hoch/runter, auf/zu, an/aus); the first of each is the
    /// name results report. Each names the values it uses ([`ACTION_VALUES`]).
    pub(crate) enum Verb {
        On = "on" | "ein" | "an" => ["value"],
        Off = "off" | "aus",
        Up = "up" | "open" | "hoch" | "auf" => ["value"],
        Down = "down" | "close" | "runter" | "ab" | "zu" => ["value"],
        Stop = "stop" | "stopp",
        Dim = "dim" | "dimmen" | "dunkler" => ["value"],
        Bright = "bright" | "hell" | "heller" => ["value"],
        Pulse = "pulse" | "impuls",
        Shade = "shade" | "beschatten",
        Slats = "slats" | "lamellen" => ["value"],
        Mood = "mood" | "scene" | "stimmung" | "szene" => ["scene", "mood"],
        Color = "color" | "colour" | "farbe" => ["hue", "saturation", "value"],
        White = "white" | "weiss" | "weiß" => ["value", "kelvin"],
        Set = "set" | "setzen" => ["number"],
        Select = "select" | "auswählen" => ["number"],
        Text = "text" => ["text"],
        Play = "play" | "abspielen",
        Pause = "pause",
        Next = "next" | "weiter",
        Previous = "previous" | "zurück",
    }
}

impl Verb {
    /// Whether the verb opens or switches something on (refused for gates and doors).
    fn opens(self) -> bool {
        matches!(self, Verb::On | Verb::Up | Verb::Pulse)
    }
}

/// The values of `control_device` an action word decides: one its word does not use is
/// refused ([`super::schema::Selects`]).
pub(crate) const ACTION_VALUES: &[&str] = &[
    "value",
    "scene",
    "mood",
    "hue",
    "saturation",
    "kelvin",
    "number",
    "text",
];

/// Saturation of `color` and colour temperature of `white` when not given.
const SATURATION_DEFAULT: f64 = 100.0;
const KELVIN_DEFAULT: f64 = KELVIN.min;

tool_args! {
    /// The arguments of `control_device`, and of each operation of `control_multiple_devices`.
    pub(crate) struct ControlDevice {
        device: String { about: "Name, \"Name Room\" or UUID" },
        room: Option<String>,
        action: Verb { selects: ACTION_VALUES },
        /// Percent 0-100: brightness, blind position (% closed), slat angle.
        value: Option<f64> { range: PERCENT, about: "%: brightness, blind closed, slat angle" },
        /// Mood id (LightControllerV2) or scene number 0-9 (LightController).
        scene: Option<u32> { range: MOOD, about: "Mood id (777 bright, 778 off) or scene 0-9" },
        /// A LightControllerV2 mood by the owner's name (`Fernsehen`), read from its
        /// `moodList` ([`House::mood`]).
        mood: Option<String> {
            min_chars: 1,
            max_chars: 100,
            about: "Mood by its name in Loxone (LightControllerV2), instead of scene",
        },
        /// Hue 0-360 ° for `color`.
        hue: Option<f64> { range: HUE },
        /// Saturation for `color`.
        saturation: f64 { range: PERCENT, default: SATURATION_DEFAULT },
        /// Colour temperature for `white`.
        kelvin: f64 { range: KELVIN, default: KELVIN_DEFAULT },
        /// A plain number for `set` (within the control's own min..max) or an output for
        /// `select`.
        number: Option<f64>,
        /// The text for `text` (TextInput).
        text: Option<String> { min_chars: 1, max_chars: TEXT_MAX_CHARS },
        dry_run: DryRun { about: "Send nothing; answer the command that would be sent" },
        confirm: Confirm,
    }
}

/// What goes with an action word: the values of a [`ControlDevice`] after its `action`.
pub(crate) struct Values<'a> {
    pub value: Option<f64>,
    pub scene: Option<u32>,
    pub mood: Option<&'a str>,
    pub hue: Option<f64>,
    pub saturation: f64,
    pub kelvin: f64,
    pub number: Option<f64>,
    pub text: Option<&'a str>,
}

impl Values<'_> {
    /// Only a `value` (percent), the others as when not given.
    pub fn percent(value: Option<f64>) -> Self {
        Values {
            value,
            scene: None,
            mood: None,
            hue: None,
            saturation: SATURATION_DEFAULT,
            kelvin: KELVIN_DEFAULT,
            number: None,
            text: None,
        }
    }
}

impl ControlDevice {
    /// The values that go with its action.
    pub fn values(&self) -> Values<'_> {
        Values {
            value: self.value,
            scene: self.scene,
            mood: self.mood.as_deref(),
            hue: self.hue,
            saturation: self.saturation,
            kelvin: self.kelvin,
            number: self.number,
            text: self.text.as_deref(),
        }
    }
}

fn required<T>(field: &str, verb: Verb, v: Option<T>) -> Result<T, ToolError> {
    v.ok_or_else(|| {
        ToolError::InvalidParams(format!("{field} is required for action {}", verb.as_str()))
    })
}

/// Turns `verb` with its `values` into the [`Action`] for control `c`, checking what the
/// arguments' schema cannot know (what the verb needs, the control's own range for `set`; each
/// error names the field: -32602) and the safety rules: alarms and secured controls are
/// refused (`INSUFFICIENT_PERMISSIONS`; they have their own tools), gates and doors are opened
/// only when `open_allowed` (the key's owner allows it; a person then confirms each opening). A
/// verb the type does not support is left to the controller's command table, which names what
/// the type supports.
pub(crate) fn plan(
    house: &House,
    home: &Home,
    c: &Control,
    verb: Verb,
    values: &Values,
    open_allowed: bool,
) -> Result<Action, ToolError> {
    let value = values.value;
    if home.family(c) == Family::Security || c.is_secured {
        return Err(ToolError::Refused {
            code: "INSUFFICIENT_PERMISSIONS",
            message: format!(
                "{} is {}; control_device does not operate alarms or secured controls (use arm_alarm / disarm_alarm)",
                c.name,
                if c.is_secured {
                    "a secured control (visualisation password)"
                } else {
                    "part of the security system"
                }
            ),
        });
    }
    if verb.opens() && home.guards_access(c) && !open_allowed {
        return Err(ToolError::Refused {
            code: "INSUFFICIENT_PERMISSIONS",
            message: format!(
                "{} opens a gate or door; this key may not open gates or doors (close and stop are allowed). The server's owner can allow it for the key (home-mcp keys update KEY --open-doors yes); a person then confirms each opening",
                c.name
            ),
        });
    }
    Ok(match verb {
        Verb::On => match value {
            Some(v) if c.kind.is_dimmable() => Action::Level(v),
            _ => Action::On,
        },
        Verb::Off => Action::Off,
        Verb::Dim | Verb::Bright => {
            if !c.kind.is_dimmable() {
                return Err(ToolError::Controller(ControllerError::Unsupported(
                    format!("{} ({}) cannot be dimmed; use on or off", c.name, c.kind),
                )));
            }
            let default = if verb == Verb::Dim { 30.0 } else { 100.0 };
            Action::Level(value.unwrap_or(default))
        }
        Verb::Up | Verb::Down => match value {
            Some(v) if c.kind == ControlKind::Jalousie => Action::Level(v),
            _ if verb == Verb::Up => Action::Up,
            _ => Action::Down,
        },
        Verb::Stop => Action::Stop,
        Verb::Pulse => Action::Pulse,
        Verb::Shade => Action::Shade,
        Verb::Slats => Action::Slats(required("value", verb, value)?),
        Verb::Mood => Action::Mood(match (values.scene, values.mood) {
            (Some(_), Some(_)) => {
                return Err(ToolError::InvalidParams(
                    "give the mood either by name (mood) or by id (scene), not both".into(),
                ))
            }
            (None, Some(word)) => house
                .mood(c, word)
                .map_err(|e| ToolError::InvalidParams(format!("mood: {e}")))?,
            (scene, None) => required("scene", verb, scene)?,
        }),
        Verb::Color => Action::Color {
            hue: required("hue", verb, values.hue)?,
            saturation: values.saturation,
            brightness: value.unwrap_or(100.0),
        },
        Verb::White => Action::White {
            brightness: value.unwrap_or(100.0),
            kelvin: values.kelvin,
        },
        Verb::Set => {
            // The structure file's range here (-32602 naming the field); a ValueSelector's
            // live min/max are checked again when the command is sent (House::act).
            let n = required("number", verb, values.number)?;
            let (lo, hi) = crate::home::bounds::value_range(c, &|_| None);
            if !Range::new(lo, hi).contains(n) {
                return Err(ToolError::InvalidParams(format!(
                    "number must be between {lo} and {hi} (got {})",
                    args::short_number(n)
                )));
            }
            Action::Level(n)
        }
        Verb::Select => {
            let n = required("number", verb, values.number)?;
            if n.fract() != 0.0 || !RADIO_OUTPUT.contains(n) {
                return Err(ToolError::InvalidParams(format!(
                    "number must be a whole output number 0-{} for select (got {})",
                    RADIO_OUTPUT.max,
                    args::short_number(n)
                )));
            }
            Action::Select(n as u32)
        }
        Verb::Text => {
            let t = required("text", verb, values.text)?;
            crate::home::bounds::check_text(t).map_err(ToolError::InvalidParams)?;
            Action::Text(t.to_string())
        }
        Verb::Play => Action::Play,
        Verb::Pause => Action::Pause,
        Verb::Next => Action::Next,
        Verb::Previous => Action::Previous,
    })
}

/// A planned `control_device` operation: the resolved control and the action to send.
pub(crate) struct DevicePlan<'h> {
    pub control: &'h Control,
    /// Whether the action opens or switches on ([`Verb::opens`]).
    pub opens: bool,
    pub action: Action,
    /// The action word in English (`"on"`, `"mood"`, ...).
    pub action_name: String,
    /// The `value` (percent) or `number` given, if any.
    pub value: Option<f64>,
}

/// Resolves the device of a `control_device` call and maps its action with every refusal of
/// `control_device`, without sending anything (shared with the batch tools). Errors: the
/// resolver's `DEVICE_NOT_FOUND`/ambiguous, -32602 for what the action needs, and
/// `INSUFFICIENT_PERMISSIONS` for refused devices.
pub(crate) fn plan_device<'h>(
    house: &House,
    home: &'h Home,
    a: &ControlDevice,
    open_allowed: bool,
) -> Result<DevicePlan<'h>, ToolError> {
    let c = home.resolve_control(&a.device, a.room.as_deref(), &|_| true)?;
    let action = plan(house, home, c, a.action, &a.values(), open_allowed)?;
    Ok(DevicePlan {
        control: c,
        opens: a.action.opens(),
        action,
        action_name: a.action.as_str().to_string(),
        value: a.value.or(a.number),
    })
}

/// `control_device`: one command to one device. `dry_run` answers what would be sent; a
/// command of a class that needs confirmation ([`Risk::needs_confirmation`]: opening a gate or
/// door, or a control the owner put in a class) is sent only once confirmed
/// ([`Caller::confirm`]).
fn control_device(house: &Ctx, a: ControlDevice, caller: &Caller) -> Result<Value, ToolError> {
    let home = house.home();
    let p = plan_device(house.house, &home, &a, caller.opens_doors())?;
    // The command as the controller's one mapping words it (what a dry run shows).
    let command = house.command(p.control, &p.action).ok().map(|c| c.command);
    let risk = house.risk(p.control);
    let needs = match risk {
        Risk::Access => p.opens,
        r => r.needs_confirmation(),
    };
    let mut data = json!({
        "device": view::device(&home, p.control),
        "action": p.action_name,
        "value": p.value,
        "command": command,
    });
    if a.dry_run.0 {
        // Refused as the command itself would be: a dry run answers what would be sent.
        house.check_values(p.control, &p.action)?;
        data["dry_run"] = json!(true);
        data["confirmation_required"] = json!(needs);
        return Ok(data);
    }
    if needs {
        // "Open Garagentor (Garage)?", "Heizstrahler (Bad): on?"
        let room = home
            .room_name(p.control)
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        let question = match risk {
            Risk::Access => format!("Open {}{room}?", p.control.name),
            _ => format!(
                "{}{room}: {}{}?",
                p.control.name,
                p.action_name,
                p.value
                    .map(|v| format!(" {}", args::short_number(v)))
                    .unwrap_or_default()
            ),
        };
        let outcome = caller.confirm(
            a.confirm.0,
            &ToConfirm {
                risk,
                tool: "control_device",
                controls: vec![p.control.uuid.clone()],
                command: format!("{:?}", p.action),
                question: &question,
            },
        )?;
        mark_unconfirmed(&mut data, &question, &outcome);
        if outcome.by().is_none() {
            return Ok(data);
        }
    }
    let timeout = house.verify_timeout();
    // Subscribed (and the value before taken) before the command, so no effect slips past.
    let check =
        (!timeout.is_zero() && super::verify::observable(p.control, &p.action)).then(|| {
            let before = house.value(p.control).ok().map(|v| v.value);
            (house.bus().subscribe(256), before)
        });
    let outcome = caller.act(house, p.control, &p.action)?;
    let verified = check.map(|(sub, before)| {
        let actions = [p.action.clone()];
        let target = super::verify::Target {
            control: p.control,
            before,
            actions: &actions,
        };
        super::verify::verify(house, &sub, &[target], timeout)[0]
    });
    data["verified"] = json!(verified);
    data["dry_run"] = json!(false);
    data["reported_value"] = json!(outcome.value.map(|v| match v {
        crate::home::Value::Number(n) => json!(n),
        crate::home::Value::Text(t) => json!(t),
    }));
    Ok(data)
}
