//! Audio: `control_audio_zone`, `set_audio_volume`, `get_audio_status`.
//!
//! An audio zone is a Loxone `AudioZone` (Music Server, v1) or `AudioZoneV2` (Audioserver). A
//! `CentralAudioZone` names the zones listed in its `details.controls`; a room name names the
//! zones of that room. Commands go to each zone and are reported per zone, so one failure does
//! not hide the others. Volumes are percent 0-100.
//!
//! Over HTTP only a zone's primary value, its play state, can be read; `volume`, `power` and
//! the track come from the live state store once the WebSocket link fills it (`null` until
//! then, never guessed).

use serde_json::{json, Value};

use super::args;
use super::schema::{tool_args, words, DryRun, RoomListing};
use super::view;
use super::{Caller, Ctx, Reach, Tool, ToolError};
use crate::home::bounds::{PERCENT, VOLUME_STEP};
use crate::home::resolve::ResolveError;
use crate::home::{Action, Control, ControlKind, ControllerError, Family, Home, House};

/// Volume step in percent points when the zone's `volumeStep` is not known live (the value
/// Loxone zones commonly have; only used to size volume_up/volume_down on v1 zones and to count
/// presses on V2 zones).
pub const DEFAULT_VOLUME_STEP: f64 = 3.0;

pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "control_audio_zone",
            "Control audio zone",
            "Controls audio zones: play, pause, stop (pauses), next, previous, on (play), off (v1 powers off, V2 pauses), volume_up, volume_down (one step).",
            control_audio_zone,
        )
        .operates(Reach::Controls { room: "room" })
        .repeats()
        .data(results_schema),
        Tool::new(
            "set_audio_volume",
            "Set audio volume",
            "Sets audio zones' volume: volume (0-100 %) or step (percent points, negative = quieter; V2 zones step by presses).",
            set_audio_volume,
        )
        .operates(Reach::Controls { room: "room" })
        .repeats()
        .data(results_schema),
        Tool::new(
            "get_audio_status",
            "Audio status",
            "Lists audio zones with room, play_state, power, volume % and title/artist/station (v1); null: unknown.",
            get_audio_status,
        )
        .lists(Reach::Room { room: "room", family: Family::Audio })
        .data(|| {
            args::listing_schema(
                "zones",
                args::item_schema(&["name", "play_state", "volume"]),
                &["playing"],
            )
        }),
    ]
}

/// `data` of the two commanding tools.
fn results_schema() -> Value {
    let props = json!({
        "results": {"type": "array", "items": {
            "type": "object",
            "required": ["name", "ok", "commands"]
        }},
        "dry_run": {"type": "boolean"},
        "total": {"type": "integer"},
        "succeeded": {"type": "integer"},
        "failed": {"type": "integer"}
    });
    json!({
        "type": "object",
        "properties": props,
        "required": ["zone", "dry_run", "results", "total", "succeeded", "failed"]
    })
}

fn is_zone(c: &Control) -> bool {
    matches!(c.kind, ControlKind::AudioZone | ControlKind::AudioZoneV2)
}

fn is_audio(c: &Control) -> bool {
    is_zone(c) || c.kind == ControlKind::CentralAudioZone
}

/// The zones `query` names: a zone (UUID or name, room-qualified names too), a central audio
/// block's zones, or a room's zones. Errors: the zone resolver's (ambiguous, or not found with
/// suggestions) unless a room matches; a room without zones is refused naming the room.
fn zones<'h>(home: &'h Home, query: &str) -> Result<Vec<&'h Control>, ToolError> {
    match home.resolve_control(query, None, &is_audio) {
        Ok(c) if c.kind == ControlKind::CentralAudioZone => {
            let members: Vec<&Control> = home
                .controls
                .iter()
                .filter(|z| is_zone(z))
                .filter(|z| {
                    c.details
                        .get("controls")
                        .and_then(Value::as_array)
                        .is_some_and(|l| {
                            l.iter().any(|e| {
                                e.get("uuid")
                                    .and_then(Value::as_str)
                                    .is_some_and(|u| u.eq_ignore_ascii_case(&z.uuid))
                            })
                        })
                })
                .collect();
            if members.is_empty() {
                return Err(ToolError::Refused {
                    code: "DEVICE_NOT_FOUND",
                    message: format!("{} lists no audio zones", c.name),
                });
            }
            Ok(members)
        }
        Ok(c) => Ok(vec![c]),
        Err(zone_err @ ResolveError::NotFound { .. }) => match home.resolve_room(query) {
            Ok(room) => {
                let found: Vec<&Control> = home
                    .controls_in_room(&room.uuid)
                    .into_iter()
                    .filter(|c| is_zone(c))
                    .collect();
                if found.is_empty() {
                    Err(ToolError::Refused {
                        code: "DEVICE_NOT_FOUND",
                        message: format!("{} has no audio zone", room.name),
                    })
                } else {
                    Ok(found)
                }
            }
            Err(ResolveError::NotFound { .. }) => Err(args::wrong_kind(
                home,
                query,
                "an audio zone (AudioZone, AudioZoneV2, CentralAudioZone)",
            )
            .unwrap_or(zone_err.into())),
            Err(e) => Err(e.into()),
        },
        Err(e) => Err(e.into()),
    }
}

/// A named state of `c` from the live state store, by its state UUID.
fn live(house: &House, c: &Control, state: &str) -> Option<crate::home::Value> {
    let uuid = c.state(state)?;
    house.states().get(uuid).map(|v| v.value)
}

fn live_number(house: &House, c: &Control, state: &str) -> Option<f64> {
    live(house, c, state).and_then(|v| v.as_f64())
}

fn live_text(house: &House, c: &Control, state: &str) -> Option<String> {
    match live(house, c, state)? {
        crate::home::Value::Text(t) if !t.is_empty() => Some(t),
        _ => None,
    }
}

/// The zone's volume step in percent points: live `volumeStep`, else [`DEFAULT_VOLUME_STEP`].
fn volume_step(house: &House, c: &Control) -> f64 {
    live_number(house, c, "volumeStep")
        .filter(|s| *s > 0.0)
        .unwrap_or(DEFAULT_VOLUME_STEP)
}

/// Sends each zone its actions in order (stopping at a zone's first failure, and asking no
/// more once the Miniserver is out of reach), or with `dry_run` only lists the commands;
/// per-zone results and counts. When nothing succeeded because the Miniserver is out of reach,
/// that error.
fn run_on(
    house: &House,
    home: &Home,
    targets: &[&Control],
    actions_for: &dyn Fn(&Control) -> Vec<Action>,
    dry_run: bool,
    caller: &Caller,
) -> Result<Value, ToolError> {
    // A device key acts on (and sees) only its own zones; the others are named in `skipped`.
    let mut skipped = Vec::new();
    let targets: Vec<&Control> = targets
        .iter()
        .copied()
        .filter(|c| match caller.permits(home, c) {
            Err(_) if caller.limited_to_devices() => {
                skipped.push(view::label(home, c));
                false
            }
            _ => true,
        })
        .collect();
    if targets.is_empty() && !skipped.is_empty() {
        return Err(ToolError::Refused {
            code: "INSUFFICIENT_PERMISSIONS",
            message: format!(
                "nothing was sent: none of these is one of the devices of this API key: {}",
                skipped.join(", ")
            ),
        });
    }
    let mut out_of_reach: Option<ControllerError> = None;
    let mut succeeded = 0;
    let mut results = Vec::new();
    for c in &targets {
        let mut sent = Vec::new();
        let mut error = None;
        for action in actions_for(c) {
            let cmd = match house.command(c, &action) {
                Ok(cmd) => cmd,
                Err(e) => {
                    error = Some(e.to_string());
                    break;
                }
            };
            if dry_run {
                sent.push(cmd.command);
                continue;
            }
            if let Some(e) = &out_of_reach {
                error = Some(format!("not sent: {e}"));
                break;
            }
            match caller.act(house, c, &action) {
                Ok(_) => sent.push(cmd.command),
                Err(e) => {
                    error = Some(e.to_string());
                    if e.stops_batch() {
                        out_of_reach = Some(e);
                    }
                    break;
                }
            }
        }
        let mut r = json!({
            "uuid": c.uuid, "name": c.name, "type": c.kind.as_str(),
            "room": home.room_name(c), "ok": error.is_none(), "commands": sent,
        });
        match error {
            None => succeeded += 1,
            Some(e) => r["error"] = json!(e),
        }
        results.push(r);
    }
    if succeeded == 0 {
        if let Some(e) = out_of_reach {
            return Err(ToolError::Controller(e));
        }
    }
    let mut out = json!({
        "dry_run": dry_run,
        "results": results,
        "total": targets.len(),
        "succeeded": succeeded,
        "failed": targets.len() - succeeded,
    });
    if !skipped.is_empty() {
        out["skipped"] = json!(skipped);
    }
    Ok(out)
}

/// Adds `zone` and the fields of `extra` to a `run_on` result.
fn with(mut base: Value, extra: Value) -> Value {
    if let (Value::Object(b), Value::Object(e)) = (&mut base, extra) {
        b.extend(e);
    }
    base
}

words! {
    /// The actions of `control_audio_zone`.
    enum ZoneAction {
        Play = "play",
        Pause = "pause",
        Stop = "stop",
        Next = "next",
        Previous = "previous",
        On = "on",
        Off = "off",
        VolumeUp = "volume_up",
        VolumeDown = "volume_down",
    }
}

tool_args! {
    /// The arguments of `control_audio_zone`.
    struct ControlArgs {
        zone: String { about: "A zone, a central audio block or a room" },
        action: ZoneAction,
        dry_run: DryRun,
    }
}

fn control_audio_zone(house: &Ctx, a: ControlArgs, caller: &Caller) -> Result<Value, ToolError> {
    let home = house.home();
    let targets = zones(&home, &a.zone)?;
    let actions_for = |c: &Control| -> Vec<Action> {
        vec![match a.action {
            ZoneAction::Play => Action::Play,
            ZoneAction::Pause => Action::Pause,
            ZoneAction::Stop => Action::Stop,
            ZoneAction::Next => Action::Next,
            ZoneAction::Previous => Action::Previous,
            ZoneAction::On => Action::On,
            ZoneAction::Off => Action::Off,
            ZoneAction::VolumeUp => Action::VolumeStep(volume_step(house, c)),
            ZoneAction::VolumeDown => Action::VolumeStep(-volume_step(house, c)),
        }]
    };
    let out = run_on(house, &home, &targets, &actions_for, a.dry_run.0, caller)?;
    Ok(with(
        out,
        json!({"zone": a.zone, "action": a.action.as_str()}),
    ))
}

/// A volume change: to an absolute percent, or by percent points.
#[derive(Clone, Copy)]
enum Change {
    To(f64),
    By(f64),
}

tool_args! {
    /// The arguments of `set_audio_volume`.
    struct VolumeArgs {
        zone: String { about: "As in control_audio_zone" },
        volume: Option<f64> { range: PERCENT },
        step: Option<f64> { range: VOLUME_STEP },
        dry_run: DryRun,
    }
}

/// The actions for a relative change of `step` points on zone `c`: v1 `volstep/{step}`; V2 an
/// absolute volume when the current one is known live, else the nearest number of
/// `volUp`/`volDown` presses of its volume step (at least one).
fn step_actions(house: &House, c: &Control, step: f64) -> Vec<Action> {
    if c.kind == ControlKind::AudioZone {
        return vec![Action::VolumeStep(step)];
    }
    if let Some(now) = live_number(house, c, "volume") {
        return vec![Action::Level((now + step).clamp(0.0, 100.0))];
    }
    let zone_step = volume_step(house, c);
    let presses = ((step.abs() / zone_step).round() as usize).max(1);
    vec![Action::VolumeStep(step.signum() * zone_step); presses]
}

fn set_audio_volume(house: &Ctx, a: VolumeArgs, caller: &Caller) -> Result<Value, ToolError> {
    let change = match (a.volume, a.step) {
        (Some(v), None) => Change::To(v),
        (None, Some(s)) => {
            if s == 0.0 {
                return Err(ToolError::InvalidParams(
                    "step must not be 0 (use -100..100, negative = quieter)".into(),
                ));
            }
            Change::By(s)
        }
        (Some(_), Some(_)) => {
            return Err(ToolError::InvalidParams(
                "give either volume (0-100) or step (-100..100), not both".into(),
            ))
        }
        (None, None) => {
            return Err(ToolError::InvalidParams(
                "missing field `volume` (0-100) or `step` (-100..100)".into(),
            ))
        }
    };
    let home = house.home();
    let targets = zones(&home, &a.zone)?;
    let actions_for = |c: &Control| -> Vec<Action> {
        match change {
            Change::To(v) => vec![Action::Level(v)],
            Change::By(s) => step_actions(house, c, s),
        }
    };
    let out = run_on(house, &home, &targets, &actions_for, a.dry_run.0, caller)?;
    Ok(with(
        out,
        json!({"zone": a.zone, "volume": a.volume, "step": a.step}),
    ))
}

fn get_audio_status(house: &Ctx, a: RoomListing, caller: &Caller) -> Result<Value, ToolError> {
    let limit = a.limit.0;
    let home = house.home();
    let matching = args::listing(&home, caller, a.room.as_deref(), is_zone)?;
    let mut values = view::ValueReader::new(house);
    let mut playing = 0;
    let zones: Vec<Value> = matching
        .iter()
        .take(limit)
        .map(|c| {
            let state = values
                .read(c)
                .and_then(|v| v.value.as_f64())
                .map(|x| match x as i64 {
                    2 => "playing",
                    1 => "paused",
                    _ => "stopped",
                });
            if state == Some("playing") {
                playing += 1;
            }
            json!({
                "uuid": c.uuid,
                "name": c.name,
                "type": c.kind.as_str(),
                "room": home.room_name(c),
                "play_state": state,
                "power": live_number(house, c, "power").map(|p| p != 0.0),
                "volume": live_number(house, c, "volume").map(view::round1),
                "title": live_text(house, c, "songName"),
                "artist": live_text(house, c, "artist"),
                "station": live_text(house, c, "station"),
            })
        })
        .collect();
    Ok(values.annotate(json!({
        "zones": zones,
        "total": matching.len(),
        "playing": playing,
    })))
}
