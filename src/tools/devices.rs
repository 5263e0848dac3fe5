//! Rooms and devices: `list_rooms`, `list_devices`, `control_device`.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::args::{self, in_range};
use super::view;
use super::{
    confirm_schema, confirmation_data_schema, mark_unconfirmed, Caller, Ctx, Permission, ToConfirm,
    Tool, ToolError, READ_ONLY,
};
use crate::home::resolve::fold;
use crate::home::{
    Action, Control, ControlKind, ControllerError, Family, Home, House, Primary, Risk,
};
use crate::mcp::ToolAnnotations;

pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "list_rooms",
            title: "List rooms",
            description: "Lists the rooms with their number of devices per category.",
            permission: Permission::Read,
            annotations: READ_ONLY,
            input_schema: || {
                args::closed(
                    json!({
                        "name": {"type": "string", "description": "Part of the room name"},
                        "limit": args::limit_schema()
                    }),
                    &[],
                )
            },
            data_schema: || args::listing_schema("rooms", args::item_schema(&["name", "devices_by_category"]), &[]),
            run: list_rooms,
        },
        Tool {
            name: "list_devices",
            title: "List devices",
            description: "Lists devices with room, category and state (on, level %, blinds % closed with 0 = open, °C).",
            permission: Permission::Read,
            annotations: READ_ONLY,
            input_schema: || {
                args::closed(
                    json!({
                        "room": args::room_schema(),
                        "category": {"type": "string", "description": "A family (lighting, blinds, climate, audio, security, access, sensors, energy, other) or Loxone category"},
                        "type": {"type": "string", "description": "Loxone type, e.g. Dimmer, Jalousie"},
                        "include_state": {"type": "boolean", "default": true},
                        "limit": args::limit_schema()
                    }),
                    &[],
                )
            },
            data_schema: || args::listing_schema("devices", args::item_schema(&["uuid", "name", "category"]), &[]),
            run: list_devices,
        },
        Tool {
            name: "control_device",
            title: "Control a device",
            description: "Controls one device (name or UUID; room for equal names). action: on, off, dim/bright (value %, default 30/100), up/down/stop (blinds; value = % closed, 0 = open), shade, slats (value %), pulse, mood (scene id, or mood: its name), color (hue, saturation, value), white (kelvin, value), set/select (number; select 0 = all off), text, play/pause/next/previous; German words too. Refuses alarms and secured controls (arm_alarm, disarm_alarm); opens gates and doors only for keys whose owner allows it, after the user confirms. dry_run: what would be sent.",
            permission: Permission::Control,
            annotations: ToolAnnotations {
                read_only_hint: false,
                destructive_hint: false,
                idempotent_hint: true,
                open_world_hint: false,
            },
            input_schema: || {
                let mut props = device_command_schema();
                props.insert("device".into(), json!({"type": "string", "description": "Name, \"Name Room\" or UUID"}));
                props.insert("room".into(), json!({"type": "string"}));
                props.insert("dry_run".into(), json!({"type": "boolean", "description": "Send nothing; answer the command that would be sent"}));
                props.insert("confirm".into(), confirm_schema());
                json!({
                    "type": "object",
                    "properties": props,
                    "required": ["device", "action"],
                    "additionalProperties": false
                })
            },
            data_schema: || {
                let mut s = json!({
                    "type": "object",
                    "properties": {
                        "device": {"type": "object"},
                        "action": {"type": "string"},
                        "dry_run": {"type": "boolean"}
                    },
                    "required": ["device", "action"]
                });
                if let (Some(p), Value::Object(extra)) =
                    (s["properties"].as_object_mut(), confirmation_data_schema())
                {
                    p.extend(extra);
                }
                s
            },
            run: control_device,
        },
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListRooms {
    name: Option<String>,
    limit: Option<i64>,
}

/// Every room (a key limited to rooms sees only those).
fn list_rooms(house: &Ctx, a: &Map<String, Value>, caller: &Caller) -> Result<Value, ToolError> {
    let a: ListRooms = args::parse(a)?;
    let limit = args::limit(a.limit)?;
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListDevices {
    room: Option<String>,
    category: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    include_state: Option<bool>,
    limit: Option<i64>,
}

fn list_devices(house: &Ctx, a: &Map<String, Value>, caller: &Caller) -> Result<Value, ToolError> {
    let a: ListDevices = args::parse(a)?;
    let limit = args::limit(a.limit)?;
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

    let include_state = a.include_state.unwrap_or(true);
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

/// What `control_device` can be asked to do, after the user's word (English or German) has
/// been read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Verb {
    On,
    Off,
    Up,
    Down,
    Stop,
    Dim,
    Bright,
    Pulse,
    Shade,
    Slats,
    Mood,
    Color,
    White,
    Set,
    Select,
    Text,
    Play,
    Pause,
    Next,
    Previous,
}

/// Every accepted action word with its meaning; the schema's enum is generated from it.
/// German words as people say them to a Loxone house (ein/aus, hoch/runter, auf/zu, an/aus).
const VERBS: &[(&str, Verb)] = &[
    ("on", Verb::On),
    ("ein", Verb::On),
    ("an", Verb::On),
    ("off", Verb::Off),
    ("aus", Verb::Off),
    ("up", Verb::Up),
    ("open", Verb::Up),
    ("hoch", Verb::Up),
    ("auf", Verb::Up),
    ("down", Verb::Down),
    ("close", Verb::Down),
    ("runter", Verb::Down),
    ("ab", Verb::Down),
    ("zu", Verb::Down),
    ("stop", Verb::Stop),
    ("stopp", Verb::Stop),
    ("dim", Verb::Dim),
    ("dimmen", Verb::Dim),
    ("dunkler", Verb::Dim),
    ("bright", Verb::Bright),
    ("hell", Verb::Bright),
    ("heller", Verb::Bright),
    ("pulse", Verb::Pulse),
    ("impuls", Verb::Pulse),
    ("shade", Verb::Shade),
    ("beschatten", Verb::Shade),
    ("slats", Verb::Slats),
    ("lamellen", Verb::Slats),
    ("mood", Verb::Mood),
    ("scene", Verb::Mood),
    ("stimmung", Verb::Mood),
    ("szene", Verb::Mood),
    ("color", Verb::Color),
    ("colour", Verb::Color),
    ("farbe", Verb::Color),
    ("white", Verb::White),
    ("weiss", Verb::White),
    ("weiß", Verb::White),
    ("set", Verb::Set),
    ("setzen", Verb::Set),
    ("select", Verb::Select),
    ("auswählen", Verb::Select),
    ("text", Verb::Text),
    ("play", Verb::Play),
    ("abspielen", Verb::Play),
    ("pause", Verb::Pause),
    ("next", Verb::Next),
    ("weiter", Verb::Next),
    ("previous", Verb::Previous),
    ("zurück", Verb::Previous),
];

impl Verb {
    /// Reads an action word, case- and accent-insensitively (`"AUS"`, `"zuruck"`).
    pub(crate) fn parse(word: &str) -> Result<Verb, ToolError> {
        let w = fold(word);
        VERBS
            .iter()
            .find(|(name, _)| fold(name) == w)
            .map(|(_, v)| *v)
            .ok_or_else(|| {
                ToolError::InvalidParams(format!(
                    "action {word:?} is not one of: {}",
                    verb_words().join(", ")
                ))
            })
    }

    /// The English name, as results report it.
    pub(crate) fn as_str(self) -> &'static str {
        VERBS
            .iter()
            .find(|(_, v)| *v == self)
            .map(|(n, _)| *n)
            .unwrap_or("?")
    }

    /// Whether the verb opens or switches something on (refused for gates and doors).
    fn opens(self) -> bool {
        matches!(self, Verb::On | Verb::Up | Verb::Pulse)
    }
}

/// Every accepted action word, for the schema and error messages.
pub(crate) fn verb_words() -> Vec<&'static str> {
    VERBS.iter().map(|(n, _)| *n).collect()
}

/// One device command as the user gives it: the action word and its optional parameters.
/// Shared by `control_device` and the batch tools.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeviceCommand {
    pub action: String,
    /// Percent 0-100: brightness, blind position (% closed), slat angle.
    pub value: Option<f64>,
    /// Mood id (LightControllerV2) or scene number 0-9 (LightController).
    pub scene: Option<u32>,
    /// A LightControllerV2 mood by the owner's name (`Fernsehen`), read from its `moodList`
    /// ([`House::mood`]).
    pub mood: Option<String>,
    /// Hue 0-360 ° for `color`.
    pub hue: Option<f64>,
    /// Saturation 0-100 % for `color` (default 100).
    pub saturation: Option<f64>,
    /// Colour temperature 2700-6500 K for `white` (default 2700).
    pub kelvin: Option<f64>,
    /// A plain number for `set` (within the control's own min..max) or an output for `select`.
    pub number: Option<f64>,
    /// The text for `text` (TextInput), 1-255 characters ([`crate::home::bounds::TEXT_MAX_CHARS`]).
    pub text: Option<String>,
}

/// Schema properties of [`DeviceCommand`] (merged into the tools' input schemas).
pub(crate) fn device_command_schema() -> Map<String, Value> {
    let v = json!({
        "action": {"type": "string", "enum": verb_words()},
        "value": {"type": "number", "minimum": 0, "maximum": 100, "description": "%: brightness, blind closed, slat angle"},
        "scene": {"type": "integer", "minimum": 0, "maximum": 9999, "description": "Mood id (777 bright, 778 off) or scene 0-9"},
        "mood": {"type": "string", "minLength": 1, "maxLength": 100, "description": "Mood by its name in Loxone (LightControllerV2), instead of scene"},
        "hue": {"type": "number", "minimum": 0, "maximum": 360},
        "saturation": {"type": "number", "minimum": 0, "maximum": 100, "default": 100},
        "kelvin": {"type": "number", "minimum": 2700, "maximum": 6500, "default": 2700},
        "number": {"type": "number"},
        "text": {"type": "string", "minLength": 1, "maxLength": crate::home::bounds::TEXT_MAX_CHARS}
    });
    match v {
        Value::Object(m) => m,
        _ => unreachable!("a JSON object literal"),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ControlDevice {
    device: String,
    room: Option<String>,
    #[serde(flatten)]
    command: DeviceCommand,
}

fn required<T>(field: &str, verb: Verb, v: Option<T>) -> Result<T, ToolError> {
    v.ok_or_else(|| {
        ToolError::InvalidParams(format!("{field} is required for action {}", verb.as_str()))
    })
}

/// Turns a [`DeviceCommand`] into the [`Action`] for control `c`, checking ranges (each error
/// names the field: -32602) and the safety rules: alarms and secured controls are refused
/// (`INSUFFICIENT_PERMISSIONS`; they have their own tools), gates and doors are opened only
/// when `open_allowed` (the key's owner allows it; a person then confirms each opening). A
/// verb the type does not support is left to the command table, which names what the type
/// supports.
pub(crate) fn plan(
    house: &House,
    home: &Home,
    c: &Control,
    cmd: &DeviceCommand,
    open_allowed: bool,
) -> Result<(Verb, Action), ToolError> {
    let verb = Verb::parse(&cmd.action)?;
    let value = cmd
        .value
        .map(|v| in_range("value", v, 0.0, 100.0))
        .transpose()?;
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
    let action = match verb {
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
        Verb::Mood => Action::Mood(match (cmd.scene, cmd.mood.as_deref()) {
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
            hue: in_range("hue", required("hue", verb, cmd.hue)?, 0.0, 360.0)?,
            saturation: in_range("saturation", cmd.saturation.unwrap_or(100.0), 0.0, 100.0)?,
            brightness: value.unwrap_or(100.0),
        },
        Verb::White => Action::White {
            brightness: value.unwrap_or(100.0),
            kelvin: in_range("kelvin", cmd.kelvin.unwrap_or(2700.0), 2700.0, 6500.0)?,
        },
        Verb::Set => {
            // The structure file's range here (-32602 naming the field); a ValueSelector's
            // live min/max are checked again when the command is sent (House::act).
            let n = required("number", verb, cmd.number)?;
            let (lo, hi) = crate::home::bounds::value_range(c, &|_| None);
            Action::Level(in_range("number", n, lo, hi)?)
        }
        Verb::Select => {
            let n = required("number", verb, cmd.number)?;
            let max = crate::home::bounds::MAX_RADIO_OUTPUT;
            if n.fract() != 0.0 || !(0.0..=max).contains(&n) {
                return Err(ToolError::InvalidParams(format!(
                    "number must be a whole output number 0-{max} for select (got {})",
                    args::short_number(n)
                )));
            }
            Action::Select(n as u32)
        }
        Verb::Text => {
            let t = required("text", verb, cmd.text.clone())?;
            crate::home::bounds::check_text(&t).map_err(ToolError::InvalidParams)?;
            Action::Text(t)
        }
        Verb::Play => Action::Play,
        Verb::Pause => Action::Pause,
        Verb::Next => Action::Next,
        Verb::Previous => Action::Previous,
    };
    Ok((verb, action))
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

/// Parses `control_device` arguments, resolves the device and maps the action with every
/// refusal of `control_device`, without sending anything (shared with the batch tools).
/// Errors: -32602 for bad arguments (checked before the device is looked up), the resolver's
/// `DEVICE_NOT_FOUND`/ambiguous, `INSUFFICIENT_PERMISSIONS` for refused devices.
pub(crate) fn plan_device<'h>(
    house: &House,
    home: &'h Home,
    a: &Map<String, Value>,
    open_allowed: bool,
) -> Result<DevicePlan<'h>, ToolError> {
    let a: ControlDevice = args::parse(a)?;
    Verb::parse(&a.command.action)?;
    let c = home.resolve_control(&a.device, a.room.as_deref(), &|_| true)?;
    let (verb, action) = plan(house, home, c, &a.command, open_allowed)?;
    Ok(DevicePlan {
        control: c,
        opens: verb.opens(),
        action,
        action_name: verb.as_str().to_string(),
        value: a.command.value.or(a.command.number),
    })
}

/// `control_device`: one command to one device. `dry_run` answers what would be sent; a
/// command of a class that needs confirmation ([`Risk::needs_confirmation`]: opening a gate or
/// door, or a control the owner put in a class) is sent only once confirmed
/// ([`Caller::confirm`]).
fn control_device(
    house: &Ctx,
    a: &Map<String, Value>,
    caller: &Caller,
) -> Result<Value, ToolError> {
    let mut rest = a.clone();
    let flag = |v: Option<Value>, name: &str| match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(_) => Err(ToolError::InvalidParams(format!(
            "{name} must be true or false"
        ))),
    };
    let dry_run = flag(rest.remove("dry_run"), "dry_run")?.unwrap_or(false);
    let confirm = flag(rest.remove("confirm"), "confirm")?;
    let home = house.home();
    let p = plan_device(house.house, &home, &rest, caller.opens_doors())?;
    let command = crate::loxone::commands::command_for(p.control, &p.action)
        .ok()
        .map(|k| k.command());
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
    if dry_run {
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
            confirm,
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
