//! The lean profile's front doors (issue 33): a handful of general tools for small local
//! models, each a [`Tool::door`] whose arguments stand for the call of one declared tool of the
//! full catalogue (`control {scope: "room", target: "Küche", action: "off"}` is
//! `control_lights_unified {scope: "room", target: "Küche", action: "off"}`). A door only
//! translates words: the call it stands for runs as if called by name, with that tool's
//! permission, reach, confirmation, dry run, caches and audit entry ([`super::HomeTools`]
//! resolves the door before anything else), so there is no second implementation of any
//! action. What lean leaves out on purpose: `create_workflow` (writing a program of tool calls
//! is not for a small model; running, showing and deleting stored ones is); what
//! `control_multiple_devices` does takes one `control` call per device.
//!
//! Which family a room, category or house-wide `control` means is the family word of its
//! `family` argument ([`Family::parse`]) or, without one, the family whose tool takes the
//! action word (the lighting words of `control_lights_unified`, the blinds words of
//! `control_rolladen_unified`); any other word goes to `control_room_devices`.

use serde_json::json;

use super::schema::{tool_args, words, Limit, MAX_LIMIT};
use super::{blinds, lights, Call, Tool, ToolError};
use crate::home::bounds::{Range, PERCENT, TEMPERATURE};
use crate::home::{Family, Permission};

pub fn tools() -> Vec<Tool> {
    vec![
        Tool::door(
            "house_status",
            "What is on and what is wrong",
            "The house at a glance (about: summary, the default: lights on, blinds not open, open windows, temperatures, music, alarms) or one family's states: lights, blinds, climate, audio, security, sensors, temperatures. room narrows it; name (lights, blinds, sensors) filters by part of the name.",
            house_status,
        ),
        Tool::door(
            "find_devices",
            "Find devices and rooms",
            "Lists devices with room, category and state (filters room, category: a family such as lights, blinds, audio or a Loxone category, type: Loxone type), or rooms (what: rooms, name filter), or blinds with what they can do (what: blinds).",
            find_devices,
        ),
        Tool::door(
            "control",
            "Control a device, a room, a category or the house",
            "One action on a target. scope device (default): target is a device name or UUID (room for equal names); action on, off, dim, bright, up, down, stop, shade, slats, pulse, mood (mood: its name), color, white, set, select, text, play, pause (German words too); value 0-100 %. scope room / category / house: target is the room or category; family picks which devices (lights, blinds, or another family or Loxone type; default: lights for on, off, dim, bright, brightness; blinds for up, down, stop, shade, position, slats). House-wide actions are confirmed by the user; dry_run shows the commands.",
            control,
        )
        .permission(Permission::Control)
        .repeats(),
        Tool::door(
            "climate",
            "Room temperature and heating mode",
            "A room's climate: with temperature (°C) sets the comfort temperature, with mode (auto, heating, cooling, comfort, eco, off; duration_minutes for comfort, eco, off) sets the mode, with neither reads its temperatures.",
            climate,
        )
        .permission(Permission::Control),
        Tool::door(
            "alarm",
            "Alarm system",
            "The alarm: action status (default; what is armed, alarms), arm, disarm or acknowledge; alarm names one when there are several (or room). Arming and disarming are confirmed by the user.",
            alarm,
        )
        .permission(Permission::Security)
        .destructive(),
        Tool::door(
            "audio",
            "Music",
            "An audio zone (or room): action status (default; what plays where), play, pause, stop, next, previous, on, off, volume_up, volume_down, or volume with volume 0-100 % or step.",
            audio,
        )
        .permission(Permission::Control)
        .repeats(),
        Tool::door(
            "history",
            "History and energy",
            "The past, in local time: with device, what it did (min/mean/max per bucket, a meter's kWh, time on or open; state picks one of its values); without, the house's energy (kWh used, produced, imported, exported, stored; breakdown per unit; compare_with another period). period defaults to the last 24 h (device) or this month (energy).",
            history,
        ),
        Tool::door(
            "door",
            "Who is at the door",
            "Intercoms and cameras: action rings (default; ringing now, unanswered rings, newest first) or picture (for keys with the cameras grant; device: the intercom or camera; now, or of a ring: bell_event YYYYMMDDHHMMSS or latest).",
            door,
        ),
        Tool::door(
            "alerts",
            "Miniserver alerts",
            "The Miniserver's own alerts (Loxone Message Center): action list (default; active first, historic adds past ones), confirm an alert by its id (like the Loxone app's OK), or read (mark it read).",
            alerts,
        )
        .permission(Permission::Control),
        Tool::door(
            "workflows",
            "Stored workflows",
            "The owner's stored workflows (sequences of actions): action list (default), show, run (dry_run previews; house-wide steps are confirmed), delete, or demo (a short tour of the house). A workflow by name or id.",
            workflows,
        )
        .permission(Permission::Control)
        .destructive()
        .repeats(),
    ]
}

words! {
    /// What `house_status` reports.
    enum About {
        Summary = "summary",
        Lights = "lights",
        Blinds = "blinds",
        Climate = "climate",
        Audio = "audio",
        Security = "security",
        Sensors = "sensors",
        Temperatures = "temperatures",
    }
}

tool_args! {
    /// The arguments of `house_status`.
    struct HouseStatus {
        about: Option<About>,
        room: Option<String>,
        name: Option<String> { about: "Part of the name" },
        limit: Option<u32> { range: Range::new(1.0, MAX_LIMIT as f64) },
    }
}

fn house_status(a: HouseStatus) -> Result<Call, ToolError> {
    let about = a.about.unwrap_or(About::Summary);
    let (tool, named) = match about {
        About::Summary => ("get_home_summary", false),
        About::Lights => ("get_lights_status", true),
        About::Blinds => ("get_blinds_status", true),
        About::Climate => ("get_climate_status", false),
        About::Audio => ("get_audio_status", false),
        About::Security => ("get_security_status", false),
        About::Sensors => ("get_sensors_status", true),
        About::Temperatures => ("get_temperature_sensors", false),
    };
    if a.name.is_some() && !named {
        return Err(ToolError::InvalidParams(format!(
            "name filters lights, blinds and sensors, not {}",
            about.as_str()
        )));
    }
    if about == About::Summary && a.limit.is_some() {
        return Err(ToolError::InvalidParams(
            "limit applies to the families' lists, not the summary".into(),
        ));
    }
    Ok(Call::new(
        tool,
        json!({"room": a.room, "name": a.name, "limit": a.limit}),
    ))
}

words! {
    /// What `find_devices` lists.
    enum What {
        Devices = "devices",
        Rooms = "rooms",
        Blinds = "blinds",
    }
}

tool_args! {
    /// The arguments of `find_devices`.
    struct FindDevices {
        what: Option<What>,
        room: Option<String>,
        category: Option<String>,
        kind: Option<String> { key: "type" },
        name: Option<String> { about: "Part of a room's name (what: rooms)" },
        limit: Limit,
    }
}

fn find_devices(a: FindDevices) -> Result<Call, ToolError> {
    let what = a.what.unwrap_or(What::Devices);
    let only = |given: &[(&str, bool)]| -> Result<(), ToolError> {
        match given.iter().find(|(_, g)| *g) {
            Some((field, _)) => Err(ToolError::InvalidParams(format!(
                "{field} does not filter {}",
                what.as_str()
            ))),
            None => Ok(()),
        }
    };
    let limit = a.limit.0;
    match what {
        What::Devices => {
            only(&[("name", a.name.is_some())])?;
            Ok(Call::new(
                "list_devices",
                json!({"room": a.room, "category": a.category, "type": a.kind, "limit": limit}),
            ))
        }
        What::Rooms => {
            only(&[
                ("room", a.room.is_some()),
                ("category", a.category.is_some()),
                ("type", a.kind.is_some()),
            ])?;
            Ok(Call::new(
                "list_rooms",
                json!({"name": a.name, "limit": limit}),
            ))
        }
        What::Blinds => {
            only(&[
                ("name", a.name.is_some()),
                ("category", a.category.is_some()),
                ("type", a.kind.is_some()),
            ])?;
            Ok(Call::new(
                "discover_rolladen_capabilities",
                json!({"room": a.room, "limit": limit}),
            ))
        }
    }
}

words! {
    /// What a `control` call's target is.
    enum Scope {
        Device = "device",
        Room = "room",
        Category = "category",
        House = "house",
    }
}

tool_args! {
    /// The arguments of `control`.
    struct Control {
        target: String { min_chars: 1, about: "Device, room or category name or UUID; ignored for house" },
        scope: Option<Scope>,
        action: String { min_chars: 1 },
        value: Option<f64> { range: PERCENT, about: "%: brightness, blind closed (0 open), slat angle" },
        family: Option<String> { about: "room, category, house: which devices" },
        room: Option<String> { about: "The room of a device name found in several" },
        mood: Option<String> { min_chars: 1, about: "action mood: the mood's name" },
        scene: Option<u32> { about: "action mood: its id instead" },
        hue: Option<f64> { about: "color: 0-360" },
        saturation: Option<f64> { about: "color: %" },
        kelvin: Option<f64> { about: "white: 2700-6500" },
        number: Option<f64> { about: "set: a value; select: an output" },
        text: Option<String> { about: "text: the text" },
        dry_run: Option<bool>,
        confirm: Option<bool>,
    }
}

fn control(a: Control) -> Result<Call, ToolError> {
    let scope = a.scope.unwrap_or(Scope::Device);
    if scope == Scope::Device {
        if a.family.is_some() {
            return Err(ToolError::InvalidParams(
                "family picks devices of a room, category or the house; a device is named by target".into(),
            ));
        }
        return Ok(Call::new(
            "control_device",
            json!({"device": a.target, "room": a.room, "action": a.action, "value": a.value,
                   "mood": a.mood, "scene": a.scene, "hue": a.hue, "saturation": a.saturation,
                   "kelvin": a.kelvin, "number": a.number, "text": a.text,
                   "dry_run": a.dry_run, "confirm": a.confirm}),
        ));
    }
    let device_only = [
        ("room", a.room.is_some()),
        ("mood", a.mood.is_some()),
        ("scene", a.scene.is_some()),
        ("hue", a.hue.is_some()),
        ("saturation", a.saturation.is_some()),
        ("kelvin", a.kelvin.is_some()),
        ("number", a.number.is_some()),
        ("text", a.text.is_some()),
    ];
    if let Some((field, _)) = device_only.iter().find(|(_, g)| *g) {
        return Err(ToolError::InvalidParams(format!(
            "{field} goes with scope device; scope {} names its target",
            scope.as_str()
        )));
    }
    let family = match &a.family {
        Some(word) => Family::parse(word),
        None if lights::takes_action(&a.action) => Some(Family::Lighting),
        None if blinds::takes_action(&a.action) => Some(Family::Blinds),
        None => None,
    };
    let unified = match family {
        Some(Family::Lighting) => Some("control_lights_unified"),
        Some(Family::Blinds) => Some("control_rolladen_unified"),
        _ => None,
    };
    if let Some(tool) = unified {
        let (scope_word, target) = match scope {
            Scope::Room => ("room", Some(&a.target)),
            Scope::Category => ("category", Some(&a.target)),
            _ => ("system", None),
        };
        return Ok(Call::new(
            tool,
            json!({"scope": scope_word, "target": target, "action": a.action, "value": a.value,
                   "dry_run": a.dry_run, "confirm": a.confirm}),
        ));
    }
    match scope {
        Scope::Room => Ok(Call::new(
            "control_room_devices",
            json!({"room": a.target, "action": a.action, "value": a.value,
                   "device_type": a.family, "dry_run": a.dry_run, "confirm": a.confirm}),
        )),
        _ => Err(ToolError::InvalidParams(format!(
            "scope {} controls lights or blinds (family lights or blinds, or one of their \
             actions); {} of a room: scope room",
            scope.as_str(),
            a.family.as_deref().unwrap_or(&a.action)
        ))),
    }
}

tool_args! {
    /// The arguments of `climate`.
    struct Climate {
        room: String { min_chars: 1, about: "Room, room controller or sensor" },
        temperature: Option<f64> { range: TEMPERATURE, about: "°C" },
        mode: Option<String>,
        duration_minutes: Option<u32>,
        dry_run: Option<bool>,
    }
}

fn climate(a: Climate) -> Result<Call, ToolError> {
    match (a.temperature, a.mode) {
        (Some(_), Some(_)) => Err(ToolError::InvalidParams(
            "temperature or mode, one at a time".into(),
        )),
        (Some(t), None) => Ok(Call::new(
            "set_room_temperature",
            json!({"room": a.room, "temperature": t, "dry_run": a.dry_run}),
        )),
        (None, Some(mode)) => Ok(Call::new(
            "set_room_mode",
            json!({"room": a.room, "mode": mode, "duration_minutes": a.duration_minutes,
                   "dry_run": a.dry_run}),
        )),
        (None, None) if a.duration_minutes.is_some() || a.dry_run.is_some() => Err(
            ToolError::InvalidParams("duration_minutes and dry_run go with a mode".into()),
        ),
        (None, None) => Ok(Call::new(
            "get_zone_temperature",
            json!({"zone_id": a.room}),
        )),
    }
}

words! {
    /// What `alarm` does.
    enum AlarmAction {
        Status = "status",
        Arm = "arm",
        Disarm = "disarm",
        Acknowledge = "acknowledge",
    }
}

tool_args! {
    /// The arguments of `alarm`.
    struct Alarm {
        action: Option<AlarmAction>,
        alarm: Option<String>,
        room: Option<String>,
        delayed: Option<bool> { about: "arm: with the exit delay (default true)" },
        motion: Option<bool> { about: "arm: with motion sensors (default true)" },
        confirm: Option<bool>,
    }
}

fn alarm(a: Alarm) -> Result<Call, ToolError> {
    let action = a.action.unwrap_or(AlarmAction::Status);
    if action != AlarmAction::Arm && (a.delayed.is_some() || a.motion.is_some()) {
        return Err(ToolError::InvalidParams(
            "delayed and motion go with arm".into(),
        ));
    }
    let named = json!({"alarm": a.alarm, "room": a.room, "confirm": a.confirm});
    match action {
        AlarmAction::Status => {
            if a.alarm.is_some() || a.confirm.is_some() {
                return Err(ToolError::InvalidParams(
                    "status reads every alarm (room narrows it)".into(),
                ));
            }
            Ok(Call::new("get_security_status", json!({"room": a.room})))
        }
        AlarmAction::Arm => {
            let mut args = named;
            args["delayed"] = json!(a.delayed);
            args["motion"] = json!(a.motion);
            Ok(Call::new("arm_alarm", args))
        }
        AlarmAction::Disarm => Ok(Call::new("disarm_alarm", named)),
        AlarmAction::Acknowledge => Ok(Call::new("acknowledge_alarm", named)),
    }
}

words! {
    /// What `audio` does.
    enum AudioAction {
        Status = "status",
        Play = "play",
        Pause = "pause",
        Stop = "stop",
        Next = "next",
        Previous = "previous",
        On = "on",
        Off = "off",
        VolumeUp = "volume_up",
        VolumeDown = "volume_down",
        Volume = "volume",
    }
}

tool_args! {
    /// The arguments of `audio`.
    struct Audio {
        zone: Option<String> { about: "Zone or room (status: a room narrows it)" },
        action: Option<AudioAction>,
        volume: Option<f64> { range: PERCENT },
        step: Option<f64> { about: "volume: change by this many %" },
        dry_run: Option<bool>,
    }
}

fn audio(a: Audio) -> Result<Call, ToolError> {
    let action = a.action.unwrap_or(AudioAction::Status);
    if action != AudioAction::Volume && (a.volume.is_some() || a.step.is_some()) {
        return Err(ToolError::InvalidParams(
            "volume and step go with action volume".into(),
        ));
    }
    if action == AudioAction::Status {
        if a.dry_run.is_some() {
            return Err(ToolError::InvalidParams("status sends nothing".into()));
        }
        return Ok(Call::new("get_audio_status", json!({"room": a.zone})));
    }
    let Some(zone) = a.zone else {
        return Err(ToolError::InvalidParams(format!(
            "zone: {} needs the zone (or its room)",
            action.as_str()
        )));
    };
    if action == AudioAction::Volume {
        return Ok(Call::new(
            "set_audio_volume",
            json!({"zone": zone, "volume": a.volume, "step": a.step, "dry_run": a.dry_run}),
        ));
    }
    Ok(Call::new(
        "control_audio_zone",
        json!({"zone": zone, "action": action.as_str(), "dry_run": a.dry_run}),
    ))
}

tool_args! {
    /// The arguments of `history`.
    struct History {
        device: Option<String> { about: "A device's past; without: the house's energy" },
        room: Option<String>,
        state: Option<String>,
        period: Option<String> { about: "yesterday, last month, last 30 days, 2026-10, -24h" },
        from: Option<String>,
        to: Option<String>,
        resolution: Option<String> { about: "device: auto, raw, hour, day, week, month, year" },
        compare_with: Option<String> { about: "energy: another period" },
        breakdown: Option<String> { about: "energy: hour, day, week, month, year" },
        meter: Option<String> { about: "energy: one meter" },
    }
}

fn history(a: History) -> Result<Call, ToolError> {
    match a.device {
        Some(device) => {
            let energy = [
                ("compare_with", a.compare_with.is_some()),
                ("breakdown", a.breakdown.is_some()),
                ("meter", a.meter.is_some()),
            ];
            if let Some((field, _)) = energy.iter().find(|(_, g)| *g) {
                return Err(ToolError::InvalidParams(format!(
                    "{field} goes with the energy (no device)"
                )));
            }
            Ok(Call::new(
                "get_history",
                json!({"device": device, "room": a.room, "state": a.state, "period": a.period,
                       "from": a.from, "to": a.to, "resolution": a.resolution}),
            ))
        }
        None => {
            let device = [
                ("room", a.room.is_some()),
                ("state", a.state.is_some()),
                ("from", a.from.is_some()),
                ("to", a.to.is_some()),
                ("resolution", a.resolution.is_some()),
            ];
            if let Some((field, _)) = device.iter().find(|(_, g)| *g) {
                return Err(ToolError::InvalidParams(format!(
                    "{field} goes with a device's history (device)"
                )));
            }
            Ok(Call::new(
                "get_energy",
                json!({"period": a.period, "compare_with": a.compare_with,
                       "breakdown": a.breakdown, "meter": a.meter}),
            ))
        }
    }
}

words! {
    /// What `door` does.
    enum DoorAction {
        Rings = "rings",
        Picture = "picture",
    }
}

tool_args! {
    /// The arguments of `door`.
    struct Door {
        action: Option<DoorAction>,
        device: Option<String> { about: "The intercom or camera (name, room or UUID)" },
        room: Option<String>,
        bell_event: Option<String> { about: "picture: of a ring (YYYYMMDDHHMMSS or latest)" },
    }
}

fn door(a: Door) -> Result<Call, ToolError> {
    match a.action.unwrap_or(DoorAction::Rings) {
        DoorAction::Rings => {
            if a.bell_event.is_some() {
                return Err(ToolError::InvalidParams(
                    "bell_event goes with picture".into(),
                ));
            }
            Ok(Call::new(
                "list_doorbell_events",
                json!({"device": a.device, "room": a.room}),
            ))
        }
        DoorAction::Picture => {
            let Some(device) = a.device else {
                return Err(ToolError::InvalidParams(
                    "device: picture needs the intercom or camera (its name or room)".into(),
                ));
            };
            Ok(Call::new(
                "get_camera_image",
                json!({"device": device, "room": a.room, "bell_event": a.bell_event}),
            ))
        }
    }
}

words! {
    /// What `alerts` does.
    enum AlertsAction {
        List = "list",
        Confirm = "confirm",
        Read = "read",
    }
}

tool_args! {
    /// The arguments of `alerts`.
    struct Alerts {
        action: Option<AlertsAction>,
        alert: Option<String> { about: "confirm, read: the alert's id" },
        historic: Option<bool>,
        limit: Option<u32> { range: Range::new(1.0, MAX_LIMIT as f64) },
    }
}

fn alerts(a: Alerts) -> Result<Call, ToolError> {
    let action = a.action.unwrap_or(AlertsAction::List);
    if action == AlertsAction::List {
        if a.alert.is_some() {
            return Err(ToolError::InvalidParams(
                "alert goes with confirm or read".into(),
            ));
        }
        return Ok(Call::new(
            "list_alerts",
            json!({"historic": a.historic, "limit": a.limit}),
        ));
    }
    if a.historic.is_some() || a.limit.is_some() {
        return Err(ToolError::InvalidParams(
            "historic and limit go with list".into(),
        ));
    }
    let Some(alert) = a.alert else {
        return Err(ToolError::InvalidParams(format!(
            "alert: {} needs the alert's id (alerts list shows it)",
            action.as_str()
        )));
    };
    Ok(Call::new(
        "confirm_alert",
        json!({"alert": alert, "action": action.as_str()}),
    ))
}

words! {
    /// What `workflows` does.
    enum WorkflowAction {
        List = "list",
        Show = "show",
        Run = "run",
        Delete = "delete",
        Demo = "demo",
    }
}

tool_args! {
    /// The arguments of `workflows`.
    struct Workflows {
        action: Option<WorkflowAction>,
        name: Option<String> { about: "list: part of the name" },
        id: Option<i64> { min: 1.0 },
        dry_run: Option<bool>,
        stop_on_error: Option<bool>,
        confirm: Option<bool>,
    }
}

fn workflows(a: Workflows) -> Result<Call, ToolError> {
    let action = a.action.unwrap_or(WorkflowAction::List);
    let given = |fields: &[(&str, bool)]| -> Result<(), ToolError> {
        match fields.iter().find(|(_, g)| *g) {
            Some((field, _)) => Err(ToolError::InvalidParams(format!(
                "{field} does not go with {}",
                action.as_str()
            ))),
            None => Ok(()),
        }
    };
    let key = json!({"name": a.name, "id": a.id});
    let runs = [
        ("dry_run", a.dry_run.is_some()),
        ("stop_on_error", a.stop_on_error.is_some()),
        ("confirm", a.confirm.is_some()),
    ];
    match action {
        WorkflowAction::List => {
            given(&[("id", a.id.is_some())])?;
            given(&runs)?;
            Ok(Call::new("list_workflows", json!({"name": a.name})))
        }
        WorkflowAction::Show => {
            given(&runs)?;
            Ok(Call::new("get_workflow", key))
        }
        WorkflowAction::Delete => {
            given(&runs)?;
            Ok(Call::new("delete_workflow", key))
        }
        WorkflowAction::Run => Ok(Call::new(
            "execute_workflow",
            json!({"name": a.name, "id": a.id, "dry_run": a.dry_run,
                   "stop_on_error": a.stop_on_error, "confirm": a.confirm}),
        )),
        WorkflowAction::Demo => {
            given(&[
                ("name", a.name.is_some()),
                ("id", a.id.is_some()),
                ("stop_on_error", a.stop_on_error.is_some()),
                ("confirm", a.confirm.is_some()),
            ])?;
            Ok(Call::new(
                "execute_workflow_demo",
                json!({"dry_run": a.dry_run}),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::catalogue;

    /// Every door names a declared tool of the full profile, and its arguments fit that
    /// tool's schema, for each of its routes.
    #[test]
    fn every_route_names_a_full_tool_with_arguments_it_takes() {
        let all = catalogue();
        let calls = [
            house_status(HouseStatus {
                about: Some(About::Lights),
                room: Some("Küche".into()),
                name: Some("Decke".into()),
                limit: Some(5),
            }),
            control(Control {
                target: "Küche".into(),
                scope: Some(Scope::Room),
                action: "off".into(),
                value: None,
                family: None,
                room: None,
                mood: None,
                scene: None,
                hue: None,
                saturation: None,
                kelvin: None,
                number: None,
                text: None,
                dry_run: Some(true),
                confirm: None,
            }),
            control(Control {
                target: "Wohnzimmer".into(),
                scope: Some(Scope::Room),
                action: "down".into(),
                value: None,
                family: None,
                room: None,
                mood: None,
                scene: None,
                hue: None,
                saturation: None,
                kelvin: None,
                number: None,
                text: None,
                dry_run: None,
                confirm: None,
            }),
            climate(Climate {
                room: "Bad".into(),
                temperature: None,
                mode: Some("eco".into()),
                duration_minutes: Some(60),
                dry_run: None,
            }),
        ];
        for call in calls {
            let call = call.expect("a call");
            let tool = all
                .iter()
                .find(|t| t.name == call.tool)
                .unwrap_or_else(|| panic!("{} is declared", call.tool));
            assert!(tool.in_profile(crate::home::Profile::Full) && !tool.is_door());
            tool.parse(&call.arguments, "")
                .unwrap_or_else(|e| panic!("{}: {e}", call.tool));
        }
    }
}
