//! Per control type: which Loxone command carries out an [`Action`], as data in one place.
//!
//! Sources: `loxone-protocol.md` §5.3 (Loxone's structure-file docs and maintained clients).
//! Commands go to `jdev/sps/io/{target}/{command}`; `target` is the control's `uuidAction` or a
//! sub-control's (e.g. `<uuid>/masterValue`).

use crate::home::{Action, Control, ControlKind};

/// LightControllerV2 mood id "Off" (all circuits off), per Loxone clients (PyLoxone, openHAB).
pub const MOOD_OFF: u32 = 778;
/// LightControllerV2 mood id "Bright" (all circuits at 100 %), per Loxone clients.
pub const MOOD_BRIGHT: u32 = 777;

/// One HTTP command: where it goes and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    pub target: String,
    pub command: String,
}

/// The command for `action` on `control`, or `Err` with a sentence naming what the type
/// supports. Values are checked by the caller (percent 0-100, temperature range); here they are
/// only formatted.
pub fn command_for(control: &Control, action: &Action) -> Result<Command, String> {
    use Action::*;
    use ControlKind as K;
    let own = |c: &str| {
        Ok(Command {
            target: control.uuid.clone(),
            command: c.to_string(),
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
        (K::Switch | K::TimedSwitch, On) => own("on"),
        (K::Switch | K::TimedSwitch, Off) => own("off"),
        // TimedSwitch: `pulse` starts the staircase timer (deactivationDelayTotal seconds).
        (K::TimedSwitch, Pulse) => own("pulse"),
        (K::TimedSwitch, _) => unsupported("on, off, pulse (timer)"),
        (K::Switch, _) => unsupported("on, off"),
        // Pushbutton: momentary; `on` is a pulse too, so a button is never left held.
        (K::Pushbutton, On | Pulse) => own("pulse"),
        (K::Pushbutton, _) => unsupported("on (pulse)"),
        (K::Dimmer | K::EibDimmer, On) => own("on"),
        (K::Dimmer | K::EibDimmer, Off) => own("off"),
        (K::Dimmer | K::EibDimmer, Level(v)) => own(&number(*v)),
        (K::Dimmer | K::EibDimmer, _) => unsupported("on, off, a level 0-100"),
        // v1: scene 9 is "all on", scene 0 "all off" (Loxone docs); `{n}` selects scene n.
        (K::LightController, On) => own("on"),
        (K::LightController, Off) => own("off"),
        (K::LightController, Mood(n)) if *n <= 9 => own(&n.to_string()),
        (K::LightController, _) => unsupported("on, off, a scene 0-9"),
        (K::LightControllerV2, On) => own(&format!("changeTo/{MOOD_BRIGHT}")),
        (K::LightControllerV2, Off) => own(&format!("changeTo/{MOOD_OFF}")),
        (K::LightControllerV2, Mood(id)) => own(&format!("changeTo/{id}")),
        (K::LightControllerV2, Level(v)) => match master_value_target(control) {
            Some(target) => Ok(Command {
                target,
                command: number(*v),
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
        (K::ColorPickerV2, Level(v)) => own(&format!("setBrightness/{}", number(*v))),
        (K::ColorPickerV2, Off) => own("setBrightness/0"),
        (K::ColorPickerV2, On) => own("setBrightness/100"),
        (
            K::ColorPickerV2,
            Color {
                hue,
                saturation,
                brightness,
            },
        ) => own(&format!(
            "hsv({},{},{})",
            number(*hue),
            number(*saturation),
            number(*brightness)
        )),
        (K::ColorPickerV2, White { brightness, kelvin }) => own(&format!(
            "temp({},{})",
            number(*brightness),
            number(*kelvin)
        )),
        (K::ColorPickerV2, _) => {
            unsupported("on, off, a brightness 0-100, a colour (hue, saturation), white (kelvin)")
        }
        // The central light block has one command in the Loxone app: all lights off.
        (K::CentralLightController, Off) => own("off"),
        (K::CentralLightController, _) => unsupported("off (all lights off)"),
        (K::Jalousie | K::CentralJalousie, Up) => own("FullUp"),
        (K::Jalousie | K::CentralJalousie, Down) => own("FullDown"),
        (K::Jalousie | K::CentralJalousie, Stop) => own("stop"),
        (K::Jalousie | K::CentralJalousie, Shade) => own("shade"),
        // 0 = fully open (up), 100 = fully closed (down), as manualPosition takes it.
        (K::Jalousie, Level(v)) => own(&format!("manualPosition/{}", number(*v))),
        (K::Jalousie, Slats(v)) => own(&format!("manualLamelle/{}", number(*v))),
        (K::Jalousie, _) => unsupported("up, down, stop, shade, a position 0-100, slats 0-100"),
        (K::CentralJalousie, _) => unsupported("up, down, stop, shade"),
        (K::Gate, Up | On) => own("open"),
        (K::Gate, Down | Off) => own("close"),
        (K::Gate, Stop) => own("stop"),
        (K::Gate, _) => unsupported("up (open), down (close), stop"),
        (K::IRoomControllerV2, Temperature(t)) => {
            own(&format!("setComfortTemperature/{}", number(*t)))
        }
        // v1: temperature index 1 is the comfort heating temperature (Loxone docs).
        (K::IRoomController, Temperature(t)) => own(&format!("settemp/1/{}", number(*t))),
        (K::IRoomController | K::IRoomControllerV2, _) => unsupported("a temperature"),
        (K::AudioZone | K::AudioZoneV2 | K::CentralAudioZone, On) => own("play"),
        (K::AudioZone | K::AudioZoneV2 | K::CentralAudioZone, Off | Stop) => own("pause"),
        (K::AudioZone | K::AudioZoneV2, Level(v)) => own(&format!("volume/{}", number(*v))),
        (K::AudioZone | K::AudioZoneV2 | K::CentralAudioZone, _) => {
            unsupported("on (play), off (pause), a volume 0-100")
        }
        (K::UpDownDigital | K::LeftRightDigital, Up) => own("PulseUp"),
        (K::UpDownDigital | K::LeftRightDigital, Down) => own("PulseDown"),
        (K::UpDownDigital | K::LeftRightDigital, _) => unsupported("up, down"),
        // The value goes as it is; the caller checks it against details.min..max.
        (K::Slider | K::ValueSelector | K::UpDownAnalog | K::LeftRightAnalog, Level(v)) => {
            own(&number(*v))
        }
        (K::Slider | K::ValueSelector | K::UpDownAnalog | K::LeftRightAnalog, _) => {
            unsupported("a value")
        }
        // Alarm (§5.3): `on`/`delayedon` with `/1` = with movement sensors, `/0` = without.
        (K::Alarm, Arm { delayed, motion }) => own(&format!(
            "{}/{}",
            if *delayed { "delayedon" } else { "on" },
            u8::from(*motion)
        )),
        (K::Alarm | K::CentralAlarm, Disarm) => own("off"),
        (K::Alarm | K::CentralAlarm, Acknowledge) => own("quit"),
        (K::Alarm, _) => unsupported("arm, disarm, acknowledge"),
        // CentralAlarm (§5.3) takes `on`/`delayedon` without a movement argument: each alarm
        // keeps its own movement setting, so "without motion" needs a single alarm.
        (
            K::CentralAlarm,
            Arm {
                delayed,
                motion: true,
            },
        ) => own(if *delayed { "delayedon" } else { "on" }),
        (K::CentralAlarm, _) => {
            unsupported("arm (each alarm with its own motion setting), disarm, acknowledge")
        }
        // SmokeAlarm (§5.3): `confirm` acknowledges (and silences) an alarm.
        (K::SmokeAlarm, Acknowledge) => own("confirm"),
        (K::SmokeAlarm, _) => unsupported("acknowledge"),
        // Radio: `{id}` selects output id, `reset` (or 0) switches all outputs off.
        (K::Radio, Off | Select(0)) => own("reset"),
        (K::Radio, Select(n)) => own(&n.to_string()),
        (K::Radio, Next) => own("next"),
        (K::Radio, Previous) => own("prev"),
        (K::Radio, _) => unsupported("off (reset), an output number, next, previous"),
        // TextInput: the text is the command (each path segment is percent-encoded on the way).
        (K::TextInput, Text(t)) => own(t),
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
        Action::RoomMode(m) => format!("mode {m:?}").to_lowercase(),
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
            command_for(&c, &Action::Off).unwrap().command,
            "changeTo/778"
        );
        assert_eq!(
            command_for(&c, &Action::On).unwrap().command,
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
        assert_eq!(lvl.command, "40");
        assert_eq!(
            command_for(&c, &Action::Mood(3)).unwrap().command,
            "changeTo/3"
        );
    }

    #[test]
    fn jalousie_maps_percent_positions() {
        let c = control(ControlKind::Jalousie);
        assert_eq!(command_for(&c, &Action::Up).unwrap().command, "FullUp");
        assert_eq!(
            command_for(&c, &Action::Level(35.5)).unwrap().command,
            "manualPosition/35.5"
        );
        assert_eq!(command_for(&c, &Action::Shade).unwrap().command, "shade");
        assert_eq!(
            command_for(&c, &Action::Slats(30.0)).unwrap().command,
            "manualLamelle/30"
        );
        let err = command_for(&c, &Action::On).unwrap_err();
        assert!(err.contains("up, down, stop"), "{err}");
        let central = control(ControlKind::CentralJalousie);
        assert_eq!(
            command_for(&central, &Action::Shade).unwrap().command,
            "shade"
        );
        assert!(command_for(&central, &Action::Slats(30.0)).is_err());
    }

    #[test]
    fn alarms_map_arm_disarm_and_acknowledge() {
        let a = control(ControlKind::Alarm);
        let arm = |delayed, motion| Action::Arm { delayed, motion };
        assert_eq!(
            command_for(&a, &arm(true, true)).unwrap().command,
            "delayedon/1"
        );
        assert_eq!(command_for(&a, &arm(false, false)).unwrap().command, "on/0");
        assert_eq!(command_for(&a, &Action::Disarm).unwrap().command, "off");
        assert_eq!(
            command_for(&a, &Action::Acknowledge).unwrap().command,
            "quit"
        );
        assert!(command_for(&a, &Action::On).is_err());
        let c = control(ControlKind::CentralAlarm);
        assert_eq!(
            command_for(&c, &arm(true, true)).unwrap().command,
            "delayedon"
        );
        assert_eq!(command_for(&c, &arm(false, true)).unwrap().command, "on");
        assert!(command_for(&c, &arm(true, false)).is_err());
        assert_eq!(command_for(&c, &Action::Disarm).unwrap().command, "off");
        let s = control(ControlKind::SmokeAlarm);
        assert_eq!(
            command_for(&s, &Action::Acknowledge).unwrap().command,
            "confirm"
        );
        assert!(command_for(&s, &Action::Disarm).is_err());
    }

    #[test]
    fn sensors_cannot_be_controlled() {
        let c = control(ControlKind::InfoOnlyAnalog);
        assert!(command_for(&c, &Action::On).is_err());
    }

    #[test]
    fn numbers_are_plain() {
        assert_eq!(number(21.5), "21.5");
        assert_eq!(number(40.0), "40");
        assert_eq!(number(0.004), "0");
        assert_eq!(number(-0.001), "0");
    }
}
