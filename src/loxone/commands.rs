//! Per control type: which Loxone command carries out an [`Action`], as data in one place, and
//! the Loxone client as the house's [`Controller`] ([`Client`]'s `act`, `act_secured`, `read`,
//! `command` and `picture`): actions become these commands, answers become values, pictures
//! come from `camimage` or the camera ([`super::camera`]), and [`LoxoneError`] (and a camera's
//! [`CameraError`]) is mapped once to the controller-independent [`ControllerError`].
//!
//! Sources: `loxone-protocol.md` §5.3 (Loxone's structure-file docs and maintained clients).
//! Commands go to `jdev/sps/io/{target}/{segment}/...`; `target` is the control's `uuidAction`
//! or a sub-control's (e.g. `<uuid>/masterValue`). A [`Command`] keeps its segments apart, so a
//! value (a TextInput's text) is always one segment, whatever characters it holds.

use super::camera::{resolve_placeholders, CameraError, CameraSource, Credentials, VideoInfo};
use super::client::{parse_number_prefix, Client, LlAnswer, LoxoneError};
use super::picture::{self, PictureError, PictureLimits};
use crate::home::{
    Action, Alert, AlertOp, CameraFailure, CameraKind, CameraPicture, Control, ControlKind,
    Controller, ControllerError, MessageCenter, Obtained, PictureAsk, PictureRequest, Secret,
    Value,
};

/// LightControllerV2 mood id "Off" (all circuits off), per Loxone clients (PyLoxone, openHAB);
/// defined once with the primary-state table.
pub use crate::home::primary::MOOD_OFF;
/// LightControllerV2 mood id "Bright" (all circuits at 100 %), per Loxone clients.
pub const MOOD_BRIGHT: u32 = 777;

/// One HTTP command: where it goes and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    /// The control's `uuidAction`, or a sub-control's as the structure file gives it
    /// (`<uuid>/masterValue`).
    pub target: String,
    /// The path segments after the target (`["manualPosition", "40"]`, `["changeTo", "778"]`,
    /// a TextInput's text as one segment). Each is sent as exactly one URL path segment
    /// ([`super::client::segment`]), so no value can change the shape of the URL.
    pub segments: Vec<String>,
}

impl Command {
    /// The command as answers and logs show it: the segments joined by `/`
    /// (`manualPosition/40`; a text as it is).
    pub fn command(&self) -> String {
        self.segments.join("/")
    }
}

/// The command for `action` on `control`, or `Err` with a sentence naming what the type
/// supports. Values are checked before a command is sent ([`crate::home::bounds`]: finite, in
/// the control's range); here they are only formatted.
pub fn command_for(control: &Control, action: &Action) -> Result<Command, String> {
    use Action::*;
    use ControlKind as K;
    let own = |segments: &[&str]| {
        Ok(Command {
            target: control.uuid.clone(),
            segments: segments.iter().map(|s| s.to_string()).collect(),
        })
    };
    let unsupported = |supported: &str| {
        Err(format!(
            "{} ({}) does not support {}; it supports {supported}",
            control.name,
            control.kind,
            action_name(action)
        ))
    };
    match (&control.kind, action) {
        (K::Switch | K::TimedSwitch, On) => own(&["on"]),
        (K::Switch | K::TimedSwitch, Off) => own(&["off"]),
        // TimedSwitch: `pulse` starts the staircase timer (deactivationDelayTotal seconds).
        (K::TimedSwitch, Pulse) => own(&["pulse"]),
        (K::TimedSwitch, _) => unsupported("on, off, pulse (timer)"),
        (K::Switch, _) => unsupported("on, off"),
        // Pushbutton: momentary; `on` is a pulse too, so a button is never left held.
        (K::Pushbutton, On | Pulse) => own(&["pulse"]),
        (K::Pushbutton, _) => unsupported("on (pulse)"),
        (K::Dimmer | K::EibDimmer, On) => own(&["on"]),
        (K::Dimmer | K::EibDimmer, Off) => own(&["off"]),
        (K::Dimmer | K::EibDimmer, Level(v)) => own(&[&number(*v)]),
        (K::Dimmer | K::EibDimmer, _) => unsupported("on, off, a level 0-100"),
        // v1: scene 9 is "all on", scene 0 "all off" (Loxone docs); `{n}` selects scene n.
        (K::LightController, On) => own(&["on"]),
        (K::LightController, Off) => own(&["off"]),
        (K::LightController, Mood(n)) if *n <= 9 => own(&[&n.to_string()]),
        (K::LightController, _) => unsupported("on, off, a scene 0-9"),
        (K::LightControllerV2, On) => own(&["changeTo", &MOOD_BRIGHT.to_string()]),
        (K::LightControllerV2, Off) => own(&["changeTo", &MOOD_OFF.to_string()]),
        (K::LightControllerV2, Mood(id)) => own(&["changeTo", &id.to_string()]),
        (K::LightControllerV2, Level(v)) => match master_value_target(control) {
            Some(target) => Ok(Command {
                target,
                segments: vec![number(*v)],
            }),
            None => Err(format!(
                "{} (LightControllerV2) has no master brightness in this structure file (no \
                 masterValue sub-control); dim its circuits instead: {}",
                control.name,
                control
                    .sub_controls
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        },
        (K::LightControllerV2, _) => unsupported("on, off, a mood id, a brightness 0-100"),
        (K::ColorPickerV2, Level(v)) => own(&["setBrightness", &number(*v)]),
        (K::ColorPickerV2, Off) => own(&["setBrightness", "0"]),
        (K::ColorPickerV2, On) => own(&["setBrightness", "100"]),
        (
            K::ColorPickerV2,
            Color {
                hue,
                saturation,
                brightness,
            },
        ) => own(&[&format!(
            "hsv({},{},{})",
            number(*hue),
            number(*saturation),
            number(*brightness)
        )]),
        (K::ColorPickerV2, White { brightness, kelvin }) => own(&[&format!(
            "temp({},{})",
            number(*brightness),
            number(*kelvin)
        )]),
        (K::ColorPickerV2, _) => {
            unsupported("on, off, a brightness 0-100, a colour (hue, saturation), white (kelvin)")
        }
        // The central light block has one command in the Loxone app: all lights off.
        (K::CentralLightController, Off) => own(&["off"]),
        (K::CentralLightController, _) => unsupported("off (all lights off)"),
        (K::Jalousie | K::CentralJalousie, Up) => own(&["FullUp"]),
        (K::Jalousie | K::CentralJalousie, Down) => own(&["FullDown"]),
        (K::Jalousie | K::CentralJalousie, Stop) => own(&["stop"]),
        (K::Jalousie | K::CentralJalousie, Shade) => own(&["shade"]),
        // 0 = fully open (up), 100 = fully closed (down), as manualPosition takes it.
        (K::Jalousie, Level(v)) => own(&["manualPosition", &number(*v)]),
        (K::Jalousie, Slats(v)) => own(&["manualLamelle", &number(*v)]),
        (K::Jalousie, _) => unsupported("up, down, stop, shade, a position 0-100, slats 0-100"),
        (K::CentralJalousie, _) => unsupported("up, down, stop, shade"),
        (K::Gate, Up | On) => own(&["open"]),
        (K::Gate, Down | Off) => own(&["close"]),
        (K::Gate, Stop) => own(&["stop"]),
        (K::Gate, _) => unsupported("up (open), down (close), stop"),
        (K::IRoomControllerV2, Temperature(t)) => own(&["setComfortTemperature", &number(*t)]),
        // v1: temperature index 1 is the comfort heating temperature (Loxone docs).
        (K::IRoomController, Temperature(t)) => own(&["settemp", "1", &number(*t)]),
        (K::IRoomControllerV2, RoomMode(m)) => Ok(Command {
            target: control.uuid.clone(),
            segments: irc_v2_mode(m),
        }),
        (K::IRoomController, RoomMode(m)) => match irc_v1_mode(m) {
            Some(segments) => Ok(Command {
                target: control.uuid.clone(),
                segments,
            }),
            None => unsupported("comfort, eco and off only with a duration (v1 timers end)"),
        },
        (K::IRoomController | K::IRoomControllerV2, _) => unsupported("a temperature, a mode"),
        // ClimateController (§5.3): `autoMode/{-1..2}`. The research notes give only the range;
        // the meaning (-1 off, 0 heating and cooling allowed, 1 heating only, 2 cooling only) is
        // our reading of Loxone's structure-file docs. It has no timer and no comfort/eco
        // temperatures (those belong to the room controllers).
        (K::ClimateController, RoomMode(m)) => match climate_auto_mode(m) {
            Some(n) => own(&["autoMode", &n.to_string()]),
            None => unsupported(
                "the modes auto (heating and cooling), heating, cooling and off (without a \
                 duration: it has no timer)",
            ),
        },
        (K::ClimateController, _) => unsupported("the modes auto, heating, cooling and off"),
        (K::AudioZone | K::AudioZoneV2 | K::CentralAudioZone, On | Play) => own(&["play"]),
        (K::AudioZone | K::AudioZoneV2 | K::CentralAudioZone, Pause | Stop) => own(&["pause"]),
        // v1 has a power switch; V2 and the central block only play and pause.
        (K::AudioZone, Off) => own(&["off"]),
        (K::AudioZoneV2 | K::CentralAudioZone, Off) => own(&["pause"]),
        (K::AudioZone | K::AudioZoneV2, Next) => own(&["next"]),
        (K::AudioZone | K::AudioZoneV2, Previous) => own(&["prev"]),
        (K::AudioZone | K::AudioZoneV2, Level(v)) => own(&["volume", &number(*v)]),
        (K::AudioZone, VolumeStep(s)) => own(&["volstep", &number(*s)]),
        (K::AudioZoneV2, VolumeStep(s)) if *s > 0.0 => own(&["volUp"]),
        (K::AudioZoneV2, VolumeStep(s)) if *s < 0.0 => own(&["volDown"]),
        (K::AudioZone | K::AudioZoneV2, _) => {
            unsupported("play, pause, stop, on, off, next, previous, a volume 0-100, a volume step")
        }
        (K::CentralAudioZone, _) => unsupported("play, pause, on (play), off (pause)"),
        (K::UpDownDigital | K::LeftRightDigital, Up) => own(&["PulseUp"]),
        (K::UpDownDigital | K::LeftRightDigital, Down) => own(&["PulseDown"]),
        (K::UpDownDigital | K::LeftRightDigital, _) => unsupported("up, down"),
        // The value goes as it is; the caller checks it against details.min..max.
        (K::Slider | K::ValueSelector | K::UpDownAnalog | K::LeftRightAnalog, Level(v)) => {
            own(&[&number(*v)])
        }
        (K::Slider | K::ValueSelector | K::UpDownAnalog | K::LeftRightAnalog, _) => {
            unsupported("a value")
        }
        // Alarm (§5.3): `on`/`delayedon` with `/1` = with movement sensors, `/0` = without.
        (K::Alarm, Arm { delayed, motion }) => own(&[
            if *delayed { "delayedon" } else { "on" },
            &u8::from(*motion).to_string(),
        ]),
        (K::Alarm | K::CentralAlarm, Disarm) => own(&["off"]),
        (K::Alarm | K::CentralAlarm, Acknowledge) => own(&["quit"]),
        (K::Alarm, _) => unsupported("arm, disarm, acknowledge"),
        // CentralAlarm (§5.3) takes `on`/`delayedon` without a movement argument: each alarm
        // keeps its own movement setting, so "without motion" needs a single alarm.
        (
            K::CentralAlarm,
            Arm {
                delayed,
                motion: true,
            },
        ) => own(&[if *delayed { "delayedon" } else { "on" }]),
        (K::CentralAlarm, _) => {
            unsupported("arm (each alarm with its own motion setting), disarm, acknowledge")
        }
        // SmokeAlarm (§5.3): `confirm` acknowledges (and silences) an alarm.
        (K::SmokeAlarm, Acknowledge) => own(&["confirm"]),
        (K::SmokeAlarm, _) => unsupported("acknowledge"),
        // Radio: `{id}` selects output id, `reset` (or 0) switches all outputs off.
        (K::Radio, Off | Select(0)) => own(&["reset"]),
        (K::Radio, Select(n)) => own(&[&n.to_string()]),
        (K::Radio, Next) => own(&["next"]),
        (K::Radio, Previous) => own(&["prev"]),
        (K::Radio, _) => unsupported("off (reset), an output number, next, previous"),
        // TextInput: the text is one segment, whatever it contains (`/`, `..`, `?`, `%`):
        // percent-encoded on the way, decoded by the Miniserver into the text.
        (K::TextInput, Text(t)) => own(&[t]),
        (K::TextInput, _) => unsupported("a text"),
        (
            K::InfoOnlyAnalog
            | K::InfoOnlyDigital
            | K::InfoOnlyText
            | K::TextState
            | K::PresenceDetector
            | K::WindowMonitor
            | K::Meter,
            _,
        ) => Err(format!(
            "{} ({}) is read-only: it reports values and takes no commands",
            control.name, control.kind
        )),
        _ => Err(format!(
            "{} ({}) cannot be controlled with {}",
            control.name,
            control.kind,
            action_name(action)
        )),
    }
}

/// IRoomControllerV2 (loxone-protocol.md §5.3): `operatingMode` 0 automatic, 1 automatic
/// heating only, 2 automatic cooling only (3-5 are the manual twins); overrides use the
/// `activeMode` ids 1 comfort, 0 eco, 2 building protection (as in `details.timerModes`), with
/// the end in seconds since 2009 or none (until `stopOverride`).
fn irc_v2_mode(m: &crate::home::RoomMode) -> Vec<String> {
    use crate::home::RoomMode as M;
    let over = |id: u32, t: &Option<crate::home::OverrideTimer>| {
        let mut s = vec!["override".to_string(), id.to_string()];
        s.extend(t.map(|t| t.until.to_string()));
        s
    };
    let op = |n: u8| vec!["setOperatingMode".to_string(), n.to_string()];
    match m {
        M::Auto => op(0),
        M::Heating => op(1),
        M::Cooling => op(2),
        M::Comfort(t) => over(1, t),
        M::Eco(t) => over(0, t),
        M::Off(t) => over(2, t),
        M::EndOverride => vec!["stopOverride".into()],
    }
}

/// IRoomController v1 (loxone-protocol.md §5.3): `mode/{n}` with 0 automatic, 3 automatic
/// heating, 4 automatic cooling (1/2 are states only: "automatic, heating/cooling now");
/// overrides are timers on a temperature index, `starttimer/{idx}/{seconds}` with 1 comfort
/// heating, 0 economy, 3 empty house (building protection); `stoptimer` ends one. A v1 timer
/// needs a duration: `None` when it has none.
fn irc_v1_mode(m: &crate::home::RoomMode) -> Option<Vec<String>> {
    use crate::home::RoomMode as M;
    let timer = |idx: u32, t: &Option<crate::home::OverrideTimer>| {
        t.map(|t| {
            vec![
                "starttimer".to_string(),
                idx.to_string(),
                (u64::from(t.minutes) * 60).to_string(),
            ]
        })
    };
    let mode = |n: u8| Some(vec!["mode".to_string(), n.to_string()]);
    match m {
        M::Auto => mode(0),
        M::Heating => mode(3),
        M::Cooling => mode(4),
        M::Comfort(t) => timer(1, t),
        M::Eco(t) => timer(0, t),
        M::Off(t) => timer(3, t),
        M::EndOverride => Some(vec!["stoptimer".into()]),
    }
}

/// ClimateController `autoMode` value of a mode (see the comment in [`command_for`]): 0 heating
/// and cooling allowed, 1 heating only, 2 cooling only, -1 off. `None` for what the block
/// cannot do: comfort, eco, ending an override, and off with a timer.
fn climate_auto_mode(m: &crate::home::RoomMode) -> Option<i8> {
    use crate::home::RoomMode as M;
    match m {
        M::Auto => Some(0),
        M::Heating => Some(1),
        M::Cooling => Some(2),
        M::Off(None) => Some(-1),
        M::Off(Some(_)) | M::Comfort(_) | M::Eco(_) | M::EndOverride => None,
    }
}

/// Where a LightControllerV2's master brightness goes: its `…/masterValue` sub-control, which
/// structure files list since Loxone Config 10 (older files, such as the TheJack75 fixture,
/// have none, and the Miniserver then knows no such target).
fn master_value_target(control: &Control) -> Option<String> {
    control
        .sub_controls
        .iter()
        .find(|s| s.uuid.ends_with("/masterValue"))
        .map(|s| s.uuid.clone())
}

fn action_name(action: &Action) -> String {
    match action {
        Action::On => "on".into(),
        Action::Off => "off".into(),
        Action::Up => "up".into(),
        Action::Down => "down".into(),
        Action::Stop => "stop".into(),
        Action::Level(v) => format!("level {v}"),
        Action::Temperature(t) => format!("temperature {t}"),
        Action::Shade => "shade".into(),
        Action::Slats(v) => format!("slats {v}"),
        Action::Pulse => "pulse".into(),
        Action::Mood(id) => format!("mood {id}"),
        Action::Color { .. } => "a colour".into(),
        Action::White { .. } => "white light".into(),
        Action::RoomMode(m) => format!("mode {}", room_mode_name(m)),
        Action::Play => "play".into(),
        Action::Pause => "pause".into(),
        Action::Next => "next".into(),
        Action::Previous => "previous".into(),
        Action::VolumeStep(v) => format!("volume step {v}"),
        Action::Arm { .. } => "arm".into(),
        Action::Disarm => "disarm".into(),
        Action::Acknowledge => "acknowledge".into(),
        Action::Select(n) => format!("select {n}"),
        Action::Text(_) => "a text".into(),
    }
}

/// The word for a room mode, as the `set_room_mode` tool takes it.
fn room_mode_name(m: &crate::home::RoomMode) -> &'static str {
    use crate::home::RoomMode as M;
    match m {
        M::Auto => "auto",
        M::Heating => "heating",
        M::Cooling => "cooling",
        M::Comfort(_) => "comfort",
        M::Eco(_) => "eco",
        M::Off(_) => "off",
        M::EndOverride => "end override",
    }
}

/// Formats a number the way Loxone commands take it: no exponent, at most 2 decimals, no
/// trailing zeros (`21.5`, `40`).
pub fn number(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

// The Loxone client as the house's `Controller`: actions become these commands, answers
// become values, and `LoxoneError` is mapped once to the controller-independent
// `ControllerError`.

impl From<LoxoneError> for ControllerError {
    fn from(e: LoxoneError) -> Self {
        match e {
            LoxoneError::Connection(m) => ControllerError::Connection(m),
            LoxoneError::Unavailable => {
                ControllerError::Connection("the Miniserver is restarting (503)".into())
            }
            LoxoneError::Unauthorized => ControllerError::Unauthorized(
                "check HOME_USER and HOME_PASS (401 Unauthorized)".into(),
            ),
            // Passed on only when the fresh login could not follow; the next request logs in.
            e @ LoxoneError::TokenUnknown => ControllerError::Connection(e.to_string()),
            LoxoneError::LockedOut { remaining_secs } => {
                ControllerError::LockedOut { remaining_secs }
            }
            LoxoneError::NotFound(m) => ControllerError::NotFound(m),
            LoxoneError::Forbidden(m) => ControllerError::Rejected {
                code: 403,
                message: m,
            },
            LoxoneError::Status { code, message } => ControllerError::Rejected { code, message },
            LoxoneError::BadAnswer(m) => ControllerError::Rejected {
                code: 0,
                message: m,
            },
            LoxoneError::WrongVisuPassword => ControllerError::VisuPasswordWrong,
            LoxoneError::InvalidSegment(m) => ControllerError::InvalidValue(m),
        }
    }
}

impl From<CameraError> for ControllerError {
    fn from(e: CameraError) -> Self {
        let failure = match &e {
            CameraError::BadUrl(_) => CameraFailure::NoAddress,
            CameraError::Busy { .. } => CameraFailure::Busy,
            CameraError::Connection(_) | CameraError::Status(_) => CameraFailure::Unreachable,
            CameraError::Timeout { .. } => CameraFailure::Timeout,
            CameraError::TooLarge { .. } => CameraFailure::TooLarge,
            CameraError::Unauthorized { .. } => CameraFailure::Unauthorized,
            CameraError::NotAPicture(_) | CameraError::NoFrame(_) => CameraFailure::NotAPicture,
            CameraError::Picture(_) => CameraFailure::Undecodable,
        };
        ControllerError::Camera {
            failure,
            message: e.to_string(),
        }
    }
}

impl From<PictureError> for ControllerError {
    fn from(e: PictureError) -> Self {
        CameraError::from(e).into()
    }
}

/// The answer's value as a number when it is one (units such as `"31.0 Liter"` or `"21.5°"`
/// are dropped), else as text (`"hsv(20,100,50)"`, dates, names).
fn answer_value(a: &LlAnswer) -> Option<Value> {
    let text = a.value_text()?;
    let trimmed = text.trim();
    let numeric_len = trimmed
        .char_indices()
        .take_while(|(i, c)| {
            c.is_ascii_digit() || *c == '.' || (*i == 0 && (*c == '-' || *c == '+'))
        })
        .count();
    let rest = &trimmed[numeric_len..];
    Some(match parse_number_prefix(trimmed) {
        Some(n) if !rest.chars().any(|c| c.is_ascii_digit()) => Value::Number(n),
        _ => Value::Text(text),
    })
}

/// The command the Loxone adapter sends for `action` on `control` ([`command_for`]), as the
/// house shows it ([`Controller::command`]). A controller of tests that wraps or stands in
/// for the client words its commands the same way with this.
pub fn house_command(
    control: &Control,
    action: &Action,
) -> Result<crate::home::Command, ControllerError> {
    let cmd = command_for(control, action).map_err(ControllerError::Unsupported)?;
    Ok(crate::home::Command {
        command: cmd.command(),
        target: cmd.target,
    })
}

impl Controller for Client {
    fn command(
        &self,
        control: &Control,
        action: &Action,
    ) -> Result<crate::home::Command, ControllerError> {
        house_command(control, action)
    }

    fn act(&self, control: &Control, action: &Action) -> Result<Option<Value>, ControllerError> {
        let cmd = command_for(control, action).map_err(ControllerError::Unsupported)?;
        let answer = self.command(&cmd.target, &cmd.segments)?;
        Ok(answer_value(&answer))
    }

    fn act_secured(
        &self,
        control: &Control,
        action: &Action,
        visu_password: &Secret,
    ) -> Result<Option<Value>, ControllerError> {
        let cmd = command_for(control, action).map_err(ControllerError::Unsupported)?;
        let answer = self.secured_command(&cmd.target, &cmd.segments, visu_password.expose())?;
        Ok(answer_value(&answer))
    }

    fn read(&self, control: &Control) -> Result<Value, ControllerError> {
        let answer = self.read_value(&control.uuid)?;
        answer_value(&answer).ok_or_else(|| ControllerError::Rejected {
            code: 0,
            message: format!("no value in the answer for {}", control.uuid),
        })
    }

    /// Bell pictures come from the Miniserver (`camimage`, bounded like a camera fetch); the
    /// current picture from the camera itself: an IntercomV2's stream at its `address` with the
    /// Miniserver user's credentials, otherwise the `alertImage` (a still) or else the
    /// `streamUrl` of the control's `securedDetails`, with its own credentials (or the
    /// Miniserver user's when the URL is the Miniserver itself).
    fn picture(
        &self,
        control: &Control,
        request: &PictureRequest,
    ) -> Result<CameraPicture, ControllerError> {
        let limits = PictureLimits {
            max_side: request.max_side,
            ..PictureLimits::default()
        };
        if let PictureAsk::BellEvent(stamp) = &request.ask {
            let max = self.cameras().limits().max_bytes;
            let body = match self.camimage(&control.uuid, stamp, max) {
                Err(LoxoneError::NotFound(_)) => {
                    return Err(ControllerError::InvalidValue(format!(
                        "the Miniserver has no picture of a ring of {} at {stamp:?}",
                        control.name
                    )))
                }
                Err(LoxoneError::BadAnswer(m)) if m.contains("larger than") => {
                    return Err(CameraError::TooLarge { limit: max }.into())
                }
                other => other?,
            };
            let pic = picture::scale_jpeg(&body, &limits)?;
            return Ok(CameraPicture {
                bytes_read: body.len() as u64,
                jpeg: pic.jpeg,
                width: pic.width,
                height: pic.height,
                source_width: pic.source_width,
                source_height: pic.source_height,
                obtained: Obtained::BellPicture,
            });
        }
        let source = camera_source(self, control, request)?;
        let (pic, fetched) = self
            .cameras()
            .fetch_picture(&control.uuid, &source, &limits)?;
        Ok(CameraPicture {
            jpeg: pic.jpeg,
            width: pic.width,
            height: pic.height,
            source_width: pic.source_width,
            source_height: pic.source_height,
            obtained: match fetched.obtained {
                super::camera::Obtained::Still => Obtained::Still,
                super::camera::Obtained::StreamFrame => Obtained::StreamFrame,
            },
            bytes_read: fetched.bytes_read,
        })
    }

    /// The Message Center's entries ([`super::message_center`]).
    fn alerts(&self, mc: &MessageCenter) -> Result<Vec<Alert>, ControllerError> {
        self.message_center_entries(mc)
    }

    /// `readEntry` or the confirm action ([`super::message_center`]).
    fn alert_op(
        &self,
        mc: &MessageCenter,
        entry: &str,
        op: AlertOp,
    ) -> Result<(), ControllerError> {
        self.message_center_op(mc, entry, op)
    }
}

/// Where the current picture of `control` comes from; only the Miniserver's own data (the
/// V2's `address` state, `securedDetails`) name it.
fn camera_source(
    client: &Client,
    control: &Control,
    request: &PictureRequest,
) -> Result<CameraSource, ControllerError> {
    let miniserver = Credentials {
        user: client.user().to_string(),
        password: client.password().to_string(),
    };
    let no_address = |why: String| ControllerError::Camera {
        failure: CameraFailure::NoAddress,
        message: format!("{}: {why}", control.name),
    };
    if request.kind == CameraKind::IntercomV2 {
        let address = request
            .address
            .as_deref()
            .ok_or_else(|| no_address("no address reported".into()))?;
        let url = format!("http://{}/mjpg/video.mjpg", address.trim());
        return Ok(CameraSource::new(&url, Some(miniserver))?);
    }
    let details = client.secured_details(&control.uuid)?;
    let video = VideoInfo::parse(&details).map_err(no_address)?;
    let url = video
        .alert_image
        .clone()
        .or_else(|| video.stream_url.clone())
        .ok_or_else(|| {
            no_address("Loxone Config gives it no picture or stream URL (videoInfo)".into())
        })?;
    let url = resolve_placeholders(&url, client.base_url());
    let source = CameraSource::new(&url, video.credentials)?;
    let on_miniserver = source.origin().eq_ignore_ascii_case(client.base_url());
    Ok(if on_miniserver {
        source.or_credentials(Some(miniserver))
    } else {
        source
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn control(kind: ControlKind) -> Control {
        Control::new("0f869a64-0200-0a9b-ffffd4c75dbaf53c", "Test", kind)
    }

    #[test]
    fn light_controller_v2_uses_moods_and_master_value() {
        let c = control(ControlKind::LightControllerV2);
        assert_eq!(
            command_for(&c, &Action::Off).unwrap().command(),
            "changeTo/778"
        );
        assert_eq!(
            command_for(&c, &Action::On).unwrap().command(),
            "changeTo/777"
        );
        // Without a masterValue sub-control there is no master brightness to set.
        let err = command_for(&c, &Action::Level(40.0)).unwrap_err();
        assert!(err.contains("no master brightness"), "{err}");
        let mut c = c;
        let master = format!("{}/masterValue", c.uuid);
        c.sub_controls
            .push(Control::new(master.clone(), "Master", ControlKind::Dimmer));
        let lvl = command_for(&c, &Action::Level(40.0)).unwrap();
        assert_eq!(lvl.target, master);
        assert_eq!(lvl.command(), "40");
        assert_eq!(
            command_for(&c, &Action::Mood(3)).unwrap().command(),
            "changeTo/3"
        );
    }

    #[test]
    fn jalousie_maps_percent_positions() {
        let c = control(ControlKind::Jalousie);
        assert_eq!(command_for(&c, &Action::Up).unwrap().command(), "FullUp");
        assert_eq!(
            command_for(&c, &Action::Level(35.5)).unwrap().command(),
            "manualPosition/35.5"
        );
        assert_eq!(command_for(&c, &Action::Shade).unwrap().command(), "shade");
        assert_eq!(
            command_for(&c, &Action::Slats(30.0)).unwrap().command(),
            "manualLamelle/30"
        );
        let err = command_for(&c, &Action::On).unwrap_err();
        assert!(err.contains("up, down, stop"), "{err}");
        let central = control(ControlKind::CentralJalousie);
        assert_eq!(
            command_for(&central, &Action::Shade).unwrap().command(),
            "shade"
        );
        assert!(command_for(&central, &Action::Slats(30.0)).is_err());
    }

    #[test]
    fn alarms_map_arm_disarm_and_acknowledge() {
        let a = control(ControlKind::Alarm);
        let arm = |delayed, motion| Action::Arm { delayed, motion };
        assert_eq!(
            command_for(&a, &arm(true, true)).unwrap().command(),
            "delayedon/1"
        );
        assert_eq!(
            command_for(&a, &arm(false, false)).unwrap().command(),
            "on/0"
        );
        assert_eq!(command_for(&a, &Action::Disarm).unwrap().command(), "off");
        assert_eq!(
            command_for(&a, &Action::Acknowledge).unwrap().command(),
            "quit"
        );
        assert!(command_for(&a, &Action::On).is_err());
        let c = control(ControlKind::CentralAlarm);
        assert_eq!(
            command_for(&c, &arm(true, true)).unwrap().command(),
            "delayedon"
        );
        assert_eq!(command_for(&c, &arm(false, true)).unwrap().command(), "on");
        assert!(command_for(&c, &arm(true, false)).is_err());
        assert_eq!(command_for(&c, &Action::Disarm).unwrap().command(), "off");
        let s = control(ControlKind::SmokeAlarm);
        assert_eq!(
            command_for(&s, &Action::Acknowledge).unwrap().command(),
            "confirm"
        );
        assert!(command_for(&s, &Action::Disarm).is_err());
    }

    #[test]
    fn room_controllers_map_modes() {
        use crate::home::{OverrideTimer, RoomMode as M};
        let t = Some(OverrideTimer {
            minutes: 90,
            until: 500_000_000,
        });
        let cmd = |c: &Control, m: M| command_for(c, &Action::RoomMode(m)).map(|c| c.command());
        let v2 = control(ControlKind::IRoomControllerV2);
        assert_eq!(cmd(&v2, M::Auto).unwrap(), "setOperatingMode/0");
        assert_eq!(cmd(&v2, M::Heating).unwrap(), "setOperatingMode/1");
        assert_eq!(cmd(&v2, M::Cooling).unwrap(), "setOperatingMode/2");
        assert_eq!(cmd(&v2, M::Comfort(t)).unwrap(), "override/1/500000000");
        assert_eq!(cmd(&v2, M::Eco(None)).unwrap(), "override/0");
        assert_eq!(cmd(&v2, M::Off(t)).unwrap(), "override/2/500000000");
        assert_eq!(cmd(&v2, M::EndOverride).unwrap(), "stopOverride");
        let v1 = control(ControlKind::IRoomController);
        assert_eq!(cmd(&v1, M::Auto).unwrap(), "mode/0");
        assert_eq!(cmd(&v1, M::Heating).unwrap(), "mode/3");
        assert_eq!(cmd(&v1, M::Cooling).unwrap(), "mode/4");
        assert_eq!(cmd(&v1, M::Comfort(t)).unwrap(), "starttimer/1/5400");
        assert_eq!(cmd(&v1, M::Eco(t)).unwrap(), "starttimer/0/5400");
        assert_eq!(cmd(&v1, M::Off(t)).unwrap(), "starttimer/3/5400");
        assert_eq!(cmd(&v1, M::EndOverride).unwrap(), "stoptimer");
        assert!(cmd(&v1, M::Eco(None)).unwrap_err().contains("duration"));
        assert!(command_for(&v1, &Action::Play).is_err());
    }

    #[test]
    fn climate_controller_maps_auto_modes() {
        use crate::home::{OverrideTimer, RoomMode as M};
        let c = control(ControlKind::ClimateController);
        let cmd = |m: M| command_for(&c, &Action::RoomMode(m)).map(|c| c.command());
        assert_eq!(cmd(M::Auto).unwrap(), "autoMode/0");
        assert_eq!(cmd(M::Heating).unwrap(), "autoMode/1");
        assert_eq!(cmd(M::Cooling).unwrap(), "autoMode/2");
        assert_eq!(cmd(M::Off(None)).unwrap(), "autoMode/-1");
        assert_eq!(
            command_for(&c, &Action::RoomMode(M::Auto)).unwrap().target,
            c.uuid
        );
        let timer = Some(OverrideTimer {
            minutes: 30,
            until: 500_000_000,
        });
        for m in [
            M::Comfort(None),
            M::Eco(timer),
            M::EndOverride,
            M::Off(timer),
        ] {
            let err = cmd(m).unwrap_err();
            assert!(
                err.contains("Test (ClimateController) does not support"),
                "{err}"
            );
            assert!(
                err.contains("auto (heating and cooling), heating, cooling"),
                "{err}"
            );
        }
        let err = command_for(&c, &Action::Temperature(21.0)).unwrap_err();
        assert!(
            err.contains("the modes auto, heating, cooling and off"),
            "{err}"
        );
        assert!(command_for(&c, &Action::On).is_err());
    }

    #[test]
    fn audio_zones_map_playback_and_volume() {
        let cmd = |c: &Control, a: Action| command_for(c, &a).map(|c| c.command());
        let v1 = control(ControlKind::AudioZone);
        let v2 = control(ControlKind::AudioZoneV2);
        let central = control(ControlKind::CentralAudioZone);
        for c in [&v1, &v2, &central] {
            assert_eq!(cmd(c, Action::Play).unwrap(), "play");
            assert_eq!(cmd(c, Action::On).unwrap(), "play");
            assert_eq!(cmd(c, Action::Pause).unwrap(), "pause");
            assert_eq!(cmd(c, Action::Stop).unwrap(), "pause");
        }
        assert_eq!(cmd(&v1, Action::Off).unwrap(), "off");
        assert_eq!(cmd(&v2, Action::Off).unwrap(), "pause");
        assert_eq!(cmd(&v2, Action::Next).unwrap(), "next");
        assert_eq!(cmd(&v1, Action::Previous).unwrap(), "prev");
        assert_eq!(cmd(&v2, Action::Level(35.0)).unwrap(), "volume/35");
        assert_eq!(cmd(&v1, Action::VolumeStep(-5.0)).unwrap(), "volstep/-5");
        assert_eq!(cmd(&v2, Action::VolumeStep(3.0)).unwrap(), "volUp");
        assert_eq!(cmd(&v2, Action::VolumeStep(-3.0)).unwrap(), "volDown");
        assert!(cmd(&v2, Action::VolumeStep(0.0)).is_err());
        assert!(cmd(&central, Action::Level(20.0)).is_err());
        assert!(cmd(&central, Action::Next).is_err());
    }

    #[test]
    fn sensors_cannot_be_controlled() {
        let c = control(ControlKind::InfoOnlyAnalog);
        assert!(command_for(&c, &Action::On).is_err());
    }

    #[test]
    fn a_text_is_one_segment() {
        let c = control(ControlKind::TextInput);
        let t = "x/../../../../jdev/sys/reboot";
        let cmd = command_for(&c, &Action::Text(t.into())).unwrap();
        assert_eq!(cmd.segments, vec![t.to_string()]);
        let v2 = control(ControlKind::IRoomControllerV2);
        let cmd = command_for(&v2, &Action::RoomMode(crate::home::RoomMode::Auto)).unwrap();
        assert_eq!(cmd.segments, vec!["setOperatingMode", "0"]);
    }

    #[test]
    fn numbers_are_plain() {
        assert_eq!(number(21.5), "21.5");
        assert_eq!(number(40.0), "40");
        assert_eq!(number(0.004), "0");
        assert_eq!(number(-0.001), "0");
    }
}

#[cfg(test)]
mod controller {
    use super::*;

    fn ll(v: &str) -> LlAnswer {
        LlAnswer {
            control: String::new(),
            value: serde_json::Value::String(v.into()),
            code: 200,
            extra: Default::default(),
        }
    }

    #[test]
    fn values_are_numbers_or_text() {
        assert_eq!(answer_value(&ll("75.000")), Some(Value::Number(75.0)));
        assert_eq!(answer_value(&ll("31.0 Liter")), Some(Value::Number(31.0)));
        assert_eq!(answer_value(&ll("-2.5°")), Some(Value::Number(-2.5)));
        assert_eq!(
            answer_value(&ll("hsv(20,100,50)")),
            Some(Value::Text("hsv(20,100,50)".into()))
        );
        assert_eq!(
            answer_value(&ll("2017-11-22 18:41:01")),
            Some(Value::Text("2017-11-22 18:41:01".into()))
        );
    }

    #[test]
    fn errors_map_to_spec_codes() {
        let e: ControllerError = LoxoneError::Connection("refused".into()).into();
        assert_eq!(e.code(), "CONNECTION_ERROR");
        let e: ControllerError = LoxoneError::NotFound("x".into()).into();
        assert_eq!(e.code(), "DEVICE_NOT_FOUND");
        let e: ControllerError = LoxoneError::LockedOut { remaining_secs: 9 }.into();
        assert!(e.to_string().contains("9 s"));
    }
}
