//! Per-type behaviour of simulated controls: the primary value a block reports over HTTP,
//! the commands it accepts after `jdev/sps/io/{uuid}/`, and how its states change over time.
//!
//! State and command names follow loxone-protocol.md §5.3; behaviour that no source states
//! is marked *inferred* where it is implemented. Units as on a real Miniserver: Jalousie and
//! Gate `position` 0..1 (0 = open/up for blinds, 1 = open for gates), while blind commands take
//! percent 0..100; Dimmer `position` in percent; temperatures in °C; delays in seconds.
//!
//! Time-dependent behaviour is lazy: a command records a [`Motion`] or a deadline, and
//! [`settle`] brings a control up to date whenever it is read or commanded, so the simulator
//! needs no background thread.

use std::time::{Duration, Instant};

use log::debug;
use serde_json::Value;

use super::house::{Ctl, House, Kind, Motion, Val};

/// Why a command was refused.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CmdError {
    /// Unknown command word for this control type (or a read-only type): code 404,
    /// "unrecognised command" per loxone-protocol.md §2.7.
    NotFound,
    /// A command whose argument is missing, does not parse as a number, or is out of the
    /// allowed set (e.g. an unknown mood id): code 400 "bad request" (our reading of §2.7).
    BadRequest(String),
}

/// Context of one command: the current time and the configured travel times.
pub(crate) struct Ctx {
    pub now: Instant,
    /// Full travel time of a blind or gate (0..1).
    pub travel: Duration,
}

/// Off mood of a LightControllerV2 (`activeMoods` `[778]`), per loxone-protocol.md §5.3.
pub(crate) const MOOD_OFF: i64 = 778;

/// Brings time-dependent states up to `now`: moving blinds and gates, delayed alarm arming,
/// TimedSwitch countdowns, IRoomController v1 timers, room temperatures drifting.
pub(crate) fn settle(c: &mut Ctl, now: Instant) {
    drift(c, now);
    if let Some(m) = c.motion.clone() {
        let (pos, done) = m.at(now);
        c.set("position", pos);
        if done {
            c.motion = None;
            if c.kind == Kind::Gate {
                c.set("active", 0.0);
            } else {
                c.set("up", 0.0);
                c.set("down", 0.0);
            }
        }
    }
    if let Some(deadline) = c.deadline {
        let remaining = deadline.saturating_duration_since(now).as_secs_f64();
        match c.kind {
            Kind::Alarm if remaining <= 0.0 => {
                c.set("armed", 1.0);
                c.set("armedDelay", 0.0);
                c.deadline = None;
            }
            Kind::Alarm => c.set("armedDelay", remaining),
            Kind::TimedSwitch if remaining <= 0.0 => {
                c.set("deactivationDelay", 0.0);
                c.deadline = None;
            }
            Kind::TimedSwitch => c.set("deactivationDelay", remaining),
            Kind::IRoomController if remaining <= 0.0 => irc_v1_stop_timer(c),
            Kind::IRoomController => c.set("override", remaining),
            // A ring (door.rs) ends: `bell` back to 0.
            Kind::Intercom | Kind::IntercomV2 if remaining <= 0.0 => {
                c.set("bell", 0.0);
                c.deadline = None;
            }
            Kind::Intercom | Kind::IntercomV2 => {}
            _ => c.deadline = None,
        }
    }
}

/// Resolution of a simulated room temperature (°C): `tempActual` moves in these steps, so a
/// slow drift sends an event now and then rather than on every WebSocket tick.
const TEMP_STEP: f64 = 0.1;

/// Room controllers: moves the exact temperature toward `tempTarget` by `rate` × elapsed
/// time (never past it) and shows it in `tempActual` in [`TEMP_STEP`] steps (the target
/// itself once reached). A `tempTarget` of exactly 0 counts as unset: no drift. A
/// `tempActual` changed from outside (more than a step away) restarts the drift from there.
fn drift(c: &mut Ctl, now: Instant) {
    let Some(mut d) = c.drift else { return };
    let dt = now.saturating_duration_since(d.at).as_secs_f64();
    d.at = d.at.max(now);
    let target = c.get("tempTarget");
    let shown = c.get("tempActual");
    if (d.exact - shown).abs() > TEMP_STEP + 1e-9 {
        d.exact = shown;
    }
    if target != 0.0 && target.is_finite() {
        let gap = target - d.exact;
        let step = d.rate * dt;
        d.exact = if gap.abs() <= step {
            target
        } else {
            d.exact + step * gap.signum()
        };
        let next = if d.exact == target {
            target
        } else {
            let steps = ((d.exact - shown) / TEMP_STEP).trunc();
            ((shown + steps * TEMP_STEP) * 1e6).round() / 1e6
        };
        if next != shown {
            c.set("tempActual", next);
        }
    }
    c.drift = Some(d);
}

/// The value a block answers to `jdev/sps/io/{uuid}` and `/state` (loxone-protocol.md §2.5),
/// and whether it is digital (formatted `"0"`/`"1"` rather than `"75.000"`).
///
/// Our choice per type (*inferred*; the Miniserver reads the block's main output): switches,
/// push buttons, presence and digital info `active`; TimedSwitch 1 while on or counting down;
/// dimmers `position` (percent); LightController v1 `activeScene`; LightControllerV2 the first
/// active mood id (778 = off); ColorPickerV2 the `color` text; Jalousie and Gate `position`
/// (0..1); room controllers `tempActual` (°C); ClimateController `currentMode`; audio zones
/// `playState` (0 stop, 1 pause, 2 play); Alarm `armed`; SmokeAlarm `level`; analog info,
/// Slider, ValueSelector, UpDownAnalog `value`; WindowMonitor `numOpen`; Meter `actual`;
/// Radio `activeOutput`; TextInput the `text`; UpDownDigital 1 up / -1 down / 0; central
/// blocks 0.
pub(crate) fn primary(c: &Ctl) -> (Val, bool) {
    let n = |s: &str| Val::Num(c.get(s));
    match &c.kind {
        Kind::Switch | Kind::Pushbutton | Kind::InfoOnlyDigital | Kind::PresenceDetector => {
            (n("active"), true)
        }
        Kind::TimedSwitch => (
            Val::Num(if c.get("deactivationDelay") != 0.0 {
                1.0
            } else {
                0.0
            }),
            true,
        ),
        Kind::Dimmer | Kind::EibDimmer | Kind::Jalousie | Kind::Gate => (n("position"), false),
        Kind::LightController => (n("activeScene"), false),
        Kind::LightControllerV2 => (
            Val::Num(active_moods(c).first().copied().unwrap_or(MOOD_OFF) as f64),
            false,
        ),
        Kind::ColorPickerV2 => (Val::Text(c.text("color")), false),
        Kind::IRoomController | Kind::IRoomControllerV2 => (n("tempActual"), false),
        Kind::ClimateController => (n("currentMode"), false),
        Kind::AudioZone | Kind::AudioZoneV2 => (n("playState"), false),
        Kind::Alarm => (n("armed"), true),
        Kind::SmokeAlarm => (n("level"), false),
        Kind::InfoOnlyAnalog | Kind::Slider | Kind::ValueSelector | Kind::UpDownAnalog => {
            (n("value"), false)
        }
        Kind::WindowMonitor => (n("numOpen"), false),
        Kind::Meter => (n("actual"), false),
        Kind::Radio => (n("activeOutput"), false),
        Kind::TextInput => (Val::Text(c.text("text")), false),
        Kind::Intercom | Kind::IntercomV2 => (n("bell"), true),
        Kind::UpDownDigital => (Val::Num(c.get("up") - c.get("down")), true),
        Kind::CentralLightController
        | Kind::CentralJalousie
        | Kind::CentralAudioZone
        | Kind::CentralAlarm => (Val::Num(0.0), false),
        Kind::Other(_) => {
            for s in ["value", "active", "position"] {
                if c.states.contains_key(s) {
                    return (n(s), s == "active");
                }
            }
            (Val::Num(0.0), false)
        }
    }
}

/// States reported as integers in `/all` output objects (like `"Q1" ... "value": 0` in the
/// loxone-java alarm capture); all other numbers get three decimals.
pub(crate) fn is_digital_state(name: &str) -> bool {
    matches!(
        name,
        "active"
            | "up"
            | "down"
            | "armed"
            | "power"
            | "mute"
            | "openWindow"
            | "safetyActive"
            | "autoAllowed"
            | "autoActive"
            | "locked"
            | "disabledMove"
            | "testAlarm"
            | "isLocked"
            | "preventOpen"
            | "preventClose"
    )
}

/// Parses a finite decimal number with `.` (§2.4: analog inputs take a decimal with `.`).
pub(crate) fn parse_num(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// A word that is meant as a number: starts with a digit, sign or point.
fn looks_numeric(s: &str) -> bool {
    s.starts_with(|ch: char| ch.is_ascii_digit() || ch == '-' || ch == '+' || ch == '.')
}

/// The numeric argument at `i`, or 400.
fn arg(cmd: &[String], i: usize) -> Result<f64, CmdError> {
    let raw = cmd
        .get(i)
        .ok_or_else(|| CmdError::BadRequest("missing value".into()))?;
    parse_num(raw).ok_or_else(|| CmdError::BadRequest(format!("not a number: {raw}")))
}

/// A command word that is a value itself (`{pos}`, `{value}`, `{id}`): `Ok(None)` when the
/// word is not numeric at all (caller answers 404), 400 when it looks numeric but does not parse.
fn value_word(w: &str) -> Result<Option<f64>, CmdError> {
    match parse_num(w) {
        Some(v) => Ok(Some(v)),
        None if looks_numeric(w) => Err(CmdError::BadRequest(format!("not a number: {w}"))),
        None => Ok(None),
    }
}

type CmdResult = Result<Option<String>, CmdError>;

/// Applies `cmd` (path segments after the target, URL-decoded, at least one) to control
/// `idx`. `Ok(Some(v))` overrides the answer's `value` (e.g. `"1"` after a pulse);
/// `Ok(None)` answers the primary value after the command.
pub(crate) fn command(house: &mut House, idx: usize, cmd: &[String], ctx: &Ctx) -> CmdResult {
    command_at_depth(house, idx, cmd, ctx, 0)
}

fn command_at_depth(
    house: &mut House,
    idx: usize,
    cmd: &[String],
    ctx: &Ctx,
    depth: u8,
) -> CmdResult {
    let word = cmd.first().map(|w| w.to_lowercase()).unwrap_or_default();
    settle(&mut house.ctls[idx], ctx.now);
    let kind = house.ctls[idx].kind.clone();
    debug!(
        "sim: {} {} ({:?}) <- {}",
        house.ctls[idx].uuid,
        house.ctls[idx].name,
        kind,
        cmd.join("/")
    );
    match kind {
        Kind::CentralLightController => central(house, idx, &word, &["off"], ctx, depth, |child| {
            if child.kind == Kind::LightControllerV2 {
                vec!["changeTo".into(), MOOD_OFF.to_string()]
            } else {
                vec!["off".into()]
            }
        }),
        Kind::CentralJalousie => {
            let allowed = ["fullup", "fulldown", "stop", "shade", "auto", "noauto"];
            central(house, idx, &word, &allowed, ctx, depth, |_| cmd.to_vec())
        }
        Kind::CentralAudioZone => {
            let allowed = [
                "play", "pause", "stop", "on", "off", "volume", "volup", "voldown",
            ];
            central(house, idx, &word, &allowed, ctx, depth, |_| cmd.to_vec())
        }
        Kind::CentralAlarm => {
            let allowed = ["on", "off", "quit", "delayedon"];
            central(house, idx, &word, &allowed, ctx, depth, |_| cmd.to_vec())
        }
        _ => single(&mut house.ctls[idx], &word, cmd, ctx),
    }
}

/// Central blocks (loxone-protocol.md §5.3): apply a command to every control listed in
/// `details.controls`. Children that refuse it are skipped (*inferred*).
fn central(
    house: &mut House,
    idx: usize,
    word: &str,
    allowed: &[&str],
    ctx: &Ctx,
    depth: u8,
    child_cmd: impl Fn(&Ctl) -> Vec<String>,
) -> CmdResult {
    if !allowed.contains(&word) || depth > 2 {
        return Err(CmdError::NotFound);
    }
    let children: Vec<usize> = house.ctls[idx]
        .detail_controls()
        .iter()
        .filter_map(|u| house.index_of_uuid(u))
        .filter(|&c| c != idx)
        .collect();
    for ch in children {
        let sub = child_cmd(&house.ctls[ch]);
        if let Err(e) = command_at_depth(house, ch, &sub, ctx, depth + 1) {
            debug!("sim: central child {} refused: {e:?}", house.ctls[ch].name);
        }
    }
    Ok(Some("1".into()))
}

fn on_off(v: bool) -> f64 {
    if v {
        1.0
    } else {
        0.0
    }
}

/// Commands of one (non-central) control.
fn single(c: &mut Ctl, word: &str, cmd: &[String], ctx: &Ctx) -> CmdResult {
    match c.kind.clone() {
        // Switch: on/off per §5.3; `pulse` toggles (*inferred*, like the block's toggle input);
        // the generic digital-input aliases of §2.4 are accepted too.
        Kind::Switch => {
            let v = match word {
                "on" | "ein" | "1" => 1.0,
                "off" | "aus" | "0" => 0.0,
                "pulse" | "impuls" => on_off(c.get("active") == 0.0),
                _ => return Err(CmdError::NotFound),
            };
            c.set("active", v);
            Ok(None)
        }
        // Pushbutton: `pulse` is momentary, the state stays 0 and the answer is "1" like the
        // captured `.../pulse` answer (§2.1); `on`/`off` hold it (§5.3).
        Kind::Pushbutton => match word {
            "pulse" | "impuls" => {
                c.set("active", 0.0);
                Ok(Some("1".into()))
            }
            "on" | "ein" | "1" => {
                c.set("active", 1.0);
                Ok(None)
            }
            "off" | "aus" | "0" => {
                c.set("active", 0.0);
                Ok(None)
            }
            _ => Err(CmdError::NotFound),
        },
        // TimedSwitch (§5.3): deactivationDelay -1 = on permanently, 0 = off, >0 = seconds left.
        Kind::TimedSwitch => {
            match word {
                "on" => {
                    c.deadline = None;
                    c.set("deactivationDelay", -1.0);
                }
                "off" => {
                    c.deadline = None;
                    c.set("deactivationDelay", 0.0);
                }
                "pulse" => {
                    let total = c.get("deactivationDelayTotal").clamp(0.0, 1e6);
                    c.set("deactivationDelay", total);
                    c.deadline = Some(ctx.now + Duration::from_secs_f64(total));
                }
                _ => return Err(CmdError::NotFound),
            }
            Ok(None)
        }
        Kind::Dimmer | Kind::EibDimmer => dimmer(c, word),
        Kind::LightController => light_controller_v1(c, word),
        Kind::LightControllerV2 => light_controller_v2(c, word, cmd),
        Kind::ColorPickerV2 => color_picker(c, word, cmd),
        Kind::Jalousie => jalousie(c, word, cmd, ctx),
        Kind::Gate => {
            // Gate (§5.3): position 1 open, 0 closed; active 1 opening, -1 closing.
            match word {
                "open" | "forceopen" => move_to(c, 1.0, ctx),
                "close" | "forceclose" => move_to(c, 0.0, ctx),
                "stop" => stop(c),
                _ => return Err(CmdError::NotFound),
            }
            Ok(None)
        }
        Kind::IRoomControllerV2 => irc_v2(c, word, cmd),
        Kind::IRoomController => irc_v1(c, word, cmd, ctx),
        Kind::ClimateController => {
            match word {
                "automode" => c.set("autoMode", arg(cmd, 1)?.clamp(-1.0, 2.0)),
                "setservicemode" => c.set("serviceMode", arg(cmd, 1)?.clamp(0.0, 4.0)),
                "ventilation" => c.set("ventilation", on_off(arg(cmd, 1)? != 0.0)),
                "setheatingboundary" => c.set("heatingTempBoundary", arg(cmd, 1)?),
                "setcoolingboundary" => c.set("coolingTempBoundary", arg(cmd, 1)?),
                "resetmaintenance" => c.set("nextMaintenance", 0.0),
                _ => return Err(CmdError::NotFound),
            }
            Ok(None)
        }
        Kind::AudioZone | Kind::AudioZoneV2 => audio(c, word, cmd),
        Kind::Alarm => alarm(c, word, cmd, ctx),
        // SmokeAlarm (§5.3): mute silences, confirm acknowledges.
        Kind::SmokeAlarm => {
            match word {
                "mute" => {
                    c.set("acousticAlarm", 0.0);
                    c.set("areAlarmSignalsOff", 1.0);
                }
                "confirm" => {
                    for s in ["level", "nextLevel", "acousticAlarm", "testAlarm"] {
                        c.set(s, 0.0);
                    }
                    c.set("areAlarmSignalsOff", 0.0);
                }
                "servicemode" => c.set("timeServiceMode", arg(cmd, 1)?.max(0.0)),
                "startdrill" => c.set("testAlarm", 1.0),
                _ => return Err(CmdError::NotFound),
            }
            Ok(None)
        }
        // UpDownAnalog, Slider, ValueSelector (§5.3): `{value}` clamped to min..max
        // (ValueSelector: its `min`/`max` states when set, else details).
        Kind::UpDownAnalog | Kind::Slider | Kind::ValueSelector => {
            let v = value_word(word)?.ok_or(CmdError::NotFound)?;
            let (lo, hi) = bounds(c);
            c.set("value", v.clamp(lo, hi));
            Ok(None)
        }
        Kind::Radio => radio(c, word),
        Kind::Intercom | Kind::IntercomV2 => intercom(c, word, cmd),
        // TextInput (§5.3): the rest of the path, URL-decoded, is the new text.
        Kind::TextInput => {
            c.set_text("text", cmd.join("/"));
            Ok(None)
        }
        // UpDownDigital (§2.4 two-output virtual input): pulses answer "1" and leave both 0.
        Kind::UpDownDigital => match word {
            "pulseup" | "pulsedown" => {
                c.set("up", 0.0);
                c.set("down", 0.0);
                Ok(Some("1".into()))
            }
            "upon" => {
                c.set("up", 1.0);
                c.set("down", 0.0);
                Ok(None)
            }
            "downon" => {
                c.set("down", 1.0);
                c.set("up", 0.0);
                Ok(None)
            }
            "upoff" => {
                c.set("up", 0.0);
                Ok(None)
            }
            "downoff" => {
                c.set("down", 0.0);
                Ok(None)
            }
            _ => Err(CmdError::NotFound),
        },
        // Read-only blocks: no commands in this simulator.
        Kind::InfoOnlyAnalog
        | Kind::InfoOnlyDigital
        | Kind::PresenceDetector
        | Kind::WindowMonitor
        | Kind::Meter
        | Kind::Other(_) => Err(CmdError::NotFound),
        Kind::CentralLightController
        | Kind::CentralJalousie
        | Kind::CentralAudioZone
        | Kind::CentralAlarm => Err(CmdError::NotFound),
    }
}

/// Lower and upper bound of a value block.
fn bounds(c: &Ctl) -> (f64, f64) {
    let from_state = |s: &str| {
        c.states
            .get(s)
            .map(Val::num)
            .filter(|_| c.kind == Kind::ValueSelector)
    };
    let lo = from_state("min")
        .or_else(|| c.detail_num("min"))
        .unwrap_or(0.0);
    let hi = from_state("max")
        .filter(|&m| m > lo)
        .or_else(|| c.detail_num("max"))
        .unwrap_or(100.0);
    (lo, hi.max(lo))
}

/// Dimmer and EIBDimmer (§5.3): `on` restores the last non-zero position, `off` stores it,
/// `{pos}` sets percent clamped to `min..max`, except 0 which switches off (*inferred*);
/// `plus`/`minus` step by `step`.
fn dimmer(c: &mut Ctl, word: &str) -> CmdResult {
    let (lo, hi) = if c.kind == Kind::EibDimmer {
        (0.0, 100.0)
    } else {
        let hi = if c.get("max") > 0.0 {
            c.get("max")
        } else {
            100.0
        };
        (c.get("min").clamp(0.0, hi), hi)
    };
    let cur = c.get("position");
    let step = if c.get("step") > 0.0 {
        c.get("step")
    } else {
        1.0
    };
    let target = match word {
        "on" => c.last_on,
        "off" => 0.0,
        "plus" => cur + step,
        "minus" => cur - step,
        w => value_word(w)?.ok_or(CmdError::NotFound)?,
    };
    let pos = if target <= 0.0 {
        0.0
    } else {
        target.clamp(lo, hi)
    };
    if pos > 0.0 {
        c.last_on = pos;
    }
    c.set("position", pos);
    Ok(None)
}

/// Scene ids of a LightController v1 `sceneList` text (`1="Hell",2="Essen"`).
fn scene_ids(c: &Ctl) -> Vec<i64> {
    let mut ids: Vec<i64> = c
        .text("sceneList")
        .split(',')
        .filter_map(|e| e.split('=').next()?.trim().parse().ok())
        .collect();
    ids.push(0);
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// LightController v1 (§5.3): `on` = scene 9, `off` = scene 0, `{n}` 0..9, plus/minus cycle
/// through the scenes in `sceneList` (and 0).
fn light_controller_v1(c: &mut Ctl, word: &str) -> CmdResult {
    let cur = c.get("activeScene") as i64;
    let ids = scene_ids(c);
    let pos = ids.iter().position(|&i| i == cur).unwrap_or(0);
    let scene = match word {
        "on" => 9,
        "off" => 0,
        "plus" => ids[(pos + 1) % ids.len()],
        "minus" => ids[(pos + ids.len() - 1) % ids.len()],
        w => {
            let v = value_word(w)?.ok_or(CmdError::NotFound)?;
            if !(0.0..=9.0).contains(&v) || v.fract() != 0.0 {
                return Err(CmdError::BadRequest(format!("no scene {w}")));
            }
            v as i64
        }
    };
    c.set("activeScene", scene as f64);
    Ok(None)
}

/// Mood ids in `moodList` order. The static moods "Bright" (777) and "Off" (778) exist in
/// every LightControllerV2 (PyLoxone and openHAB rely on them), so they are known even when
/// no `moodList` value was loaded (a bare structure file).
fn mood_ids(c: &Ctl) -> Vec<i64> {
    let mut ids: Vec<i64> = serde_json::from_str::<Value>(&c.text("moodList"))
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|m| m.get("id").and_then(Value::as_i64))
        .collect();
    for id in [777, MOOD_OFF] {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

/// Ids in `activeMoods` (a JSON array text such as `[1,3]`).
pub(crate) fn active_moods(c: &Ctl) -> Vec<i64> {
    serde_json::from_str::<Vec<i64>>(&c.text("activeMoods")).unwrap_or_default()
}

fn set_moods(c: &mut Ctl, mut ids: Vec<i64>) {
    ids.retain(|&i| i != MOOD_OFF);
    ids.dedup();
    if ids.is_empty() {
        ids.push(MOOD_OFF);
    }
    let text = format!(
        "[{}]",
        ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
    );
    c.set_text("activeMoods", text);
    // activeMoodsNum: the single mood, -1 for a mix (*inferred*).
    c.set(
        "activeMoodsNum",
        if ids.len() == 1 { ids[0] as f64 } else { -1.0 },
    );
}

/// LightControllerV2 (§5.3): `changeTo/{id}` (778 or 0 = off), `addMood/{id}`,
/// `removeMood/{id}`, `plus`/`minus` through `moodList`. Unknown mood ids are 400 (*inferred*).
fn light_controller_v2(c: &mut Ctl, word: &str, cmd: &[String]) -> CmdResult {
    let known = mood_ids(c);
    let mood_arg = |cmd: &[String]| -> Result<i64, CmdError> {
        let v = arg(cmd, 1)?;
        let id = v as i64;
        if v.fract() != 0.0 || !(id == MOOD_OFF || id == 0 || known.contains(&id)) {
            return Err(CmdError::BadRequest(format!("no mood {v}")));
        }
        Ok(if id == 0 { MOOD_OFF } else { id })
    };
    let mut active = active_moods(c);
    match word {
        "changeto" => active = vec![mood_arg(cmd)?],
        "addmood" => active.push(mood_arg(cmd)?),
        "removemood" => {
            let id = mood_arg(cmd)?;
            active.retain(|&m| m != id);
        }
        "plus" | "minus" => {
            let cycle: Vec<i64> = if known.is_empty() {
                vec![MOOD_OFF]
            } else {
                known
            };
            let cur = active.first().copied().unwrap_or(MOOD_OFF);
            let pos = cycle.iter().position(|&m| m == cur).unwrap_or(0);
            let next = if word == "plus" {
                (pos + 1) % cycle.len()
            } else {
                (pos + cycle.len() - 1) % cycle.len()
            };
            active = vec![cycle[next]];
        }
        _ => return Err(CmdError::NotFound),
    }
    set_moods(c, active);
    Ok(None)
}

/// Parses `name(a,b[,c])` into its numbers.
fn call_args(word: &str, name: &str, n: usize) -> Option<Vec<f64>> {
    let inner = word
        .strip_prefix(name)?
        .strip_prefix('(')?
        .strip_suffix(')')?;
    let v: Vec<f64> = inner.split(',').filter_map(parse_num).collect();
    (v.len() == n && inner.split(',').count() == n).then_some(v)
}

/// ColorPickerV2 (§5.3): `hsv(h,s,v)` (h 0..360, s and v percent), `temp(bri,kelvin)`,
/// `setBrightness/{v}`; the `color` text state takes the same form.
fn color_picker(c: &mut Ctl, word: &str, cmd: &[String]) -> CmdResult {
    let bad = || CmdError::BadRequest(format!("bad colour {word}"));
    if word.starts_with("hsv(") {
        let v = call_args(word, "hsv", 3).ok_or_else(bad)?;
        let (h, s, b) = (
            v[0].clamp(0.0, 360.0),
            v[1].clamp(0.0, 100.0),
            v[2].clamp(0.0, 100.0),
        );
        c.set_text("color", format!("hsv({h},{s},{b})"));
    } else if word.starts_with("temp(") {
        let v = call_args(word, "temp", 2).ok_or_else(bad)?;
        let (b, k) = (v[0].clamp(0.0, 100.0), v[1].clamp(2700.0, 6500.0));
        c.set_text("color", format!("temp({b},{k})"));
    } else if word == "setbrightness" {
        let b = arg(cmd, 1)?.clamp(0.0, 100.0);
        let color = c.text("color");
        let new = if let Some(v) = call_args(&color, "temp", 2) {
            format!("temp({b},{})", v[1])
        } else if let Some(v) = call_args(&color, "hsv", 3) {
            format!("hsv({},{},{b})", v[0], v[1])
        } else {
            format!("hsv(0,0,{b})")
        };
        c.set_text("color", new);
    } else {
        return Err(CmdError::NotFound);
    }
    Ok(None)
}

/// Starts moving a blind or gate towards `target` (0..1) at the configured travel time.
fn move_to(c: &mut Ctl, target: f64, ctx: &Ctx) {
    let pos = c.get("position");
    let target = target.clamp(0.0, 1.0);
    if c.kind == Kind::Jalousie {
        c.set("targetPosition", target);
    }
    if (target - pos).abs() < 1e-9 {
        stop(c);
        return;
    }
    c.motion = Some(Motion {
        from: pos,
        to: target,
        start: ctx.now,
        travel: ctx.travel,
    });
    if c.kind == Kind::Gate {
        c.set("active", if target > pos { 1.0 } else { -1.0 });
    } else {
        c.set("up", on_off(target < pos));
        c.set("down", on_off(target > pos));
    }
}

/// Freezes a blind or gate where it is (the caller has settled it).
fn stop(c: &mut Ctl) {
    c.motion = None;
    if c.kind == Kind::Gate {
        c.set("active", 0.0);
    } else {
        c.set("up", 0.0);
        c.set("down", 0.0);
        let pos = c.get("position");
        c.set("targetPosition", pos);
    }
}

/// Jalousie (§5.3): `FullUp`/`up` move to 0, `FullDown`/`down` to 1 (`up`/`down` keep moving
/// until `UpOff`/`DownOff`/`stop`), `shade` to `shadePosition` (1 if unset),
/// `manualPosition/{0-100}` to percent/100, `manualLamelle/{0-100}` sets
/// `targetPositionLamelle` at once, `auto`/`NoAuto` toggle `autoActive`.
fn jalousie(c: &mut Ctl, word: &str, cmd: &[String], ctx: &Ctx) -> CmdResult {
    match word {
        "fullup" | "up" => move_to(c, 0.0, ctx),
        "fulldown" | "down" => move_to(c, 1.0, ctx),
        "upoff" | "downoff" | "stop" => stop(c),
        "shade" => {
            let shade = c.get("shadePosition");
            move_to(c, if shade > 0.0 { shade } else { 1.0 }, ctx);
        }
        "auto" => c.set("autoActive", 1.0),
        "noauto" => c.set("autoActive", 0.0),
        "manualposition" => {
            let p = arg(cmd, 1)?.clamp(0.0, 100.0);
            move_to(c, p / 100.0, ctx);
        }
        "manuallamelle" => {
            let p = arg(cmd, 1)?.clamp(0.0, 100.0);
            c.set("targetPositionLamelle", p / 100.0);
        }
        "manualposblind" => {
            let (p, l) = (
                arg(cmd, 1)?.clamp(0.0, 100.0),
                arg(cmd, 2)?.clamp(0.0, 100.0),
            );
            c.set("targetPositionLamelle", l / 100.0);
            move_to(c, p / 100.0, ctx);
        }
        _ => return Err(CmdError::NotFound),
    }
    Ok(None)
}

/// Recomputes `tempTarget` of an IRoomControllerV2 from `activeMode` (0 eco = comfort -
/// absentMinOffset, 1 comfort (+ offset), 2 building protection and 4 off = frost protection,
/// 3 manual = the manual temperature). The formula is *inferred* from the state names.
fn irc_v2_target(c: &mut Ctl) {
    let comfort = c.get("comfortTemperature");
    let t = match c.get("activeMode") as i64 {
        0 => comfort - c.get("absentMinOffset"),
        1 => comfort + c.get("comfortTemperatureOffset"),
        3 => c.get("manualTemperature"),
        _ => c.get("frostProtectTemperature"),
    };
    c.set("tempTarget", t);
}

/// IRoomControllerV2 (§5.3). `setOperatingMode/{0-5}`: 3..5 are the manual modes and select
/// `activeMode` 3 (*inferred*); `override/{modeId}[/{until}][/{temp}]` sets `activeMode` and
/// records one `overrideEntries` entry until `stopOverride`.
fn irc_v2(c: &mut Ctl, word: &str, cmd: &[String]) -> CmdResult {
    match word {
        "setcomforttemperature" | "setcomfortmodetemp" => c.set("comfortTemperature", arg(cmd, 1)?),
        "setcomforttemperaturecool" => c.set("comfortTemperatureCool", arg(cmd, 1)?),
        "setmanualtemperature" => c.set("manualTemperature", arg(cmd, 1)?),
        "setcomforttolerance" => c.set("comfortTolerance", arg(cmd, 1)?),
        "setabsentmintemperature" => c.set("absentMinOffset", arg(cmd, 1)?),
        "setabsentmaxtemperature" => c.set("absentMaxOffset", arg(cmd, 1)?),
        "setoperatingmode" => {
            let m = arg(cmd, 1)?;
            if !(-1.0..=5.0).contains(&m) || m.fract() != 0.0 {
                return Err(CmdError::BadRequest(format!("no operating mode {m}")));
            }
            c.set("operatingMode", m);
            if m >= 3.0 {
                c.set("activeMode", 3.0);
            } else if c.get("activeMode") == 3.0 {
                let scheduled = c.get("scheduledMode");
                c.set("activeMode", scheduled);
            }
        }
        "override" => {
            let m = arg(cmd, 1)?;
            if !(0.0..=4.0).contains(&m) || m.fract() != 0.0 {
                return Err(CmdError::BadRequest(format!("no mode {m}")));
            }
            let until = match cmd.get(2) {
                Some(_) => Some(arg(cmd, 2)?),
                None => None,
            };
            if cmd.get(3).is_some() {
                c.set("manualTemperature", arg(cmd, 3)?);
            }
            if matches!(c.text("overrideEntries").trim(), "" | "[]") {
                let cur = c.get("activeMode");
                c.set("scheduledMode", cur);
            }
            c.set("activeMode", m);
            let entry = serde_json::json!([{
                "reason": m as i64,
                "end": until.unwrap_or(0.0),
                "isTimer": until.is_some(),
                "source": "sim",
            }]);
            c.set_text("overrideEntries", entry.to_string());
        }
        "stopoverride" => {
            if !matches!(c.text("overrideEntries").trim(), "" | "[]") {
                let scheduled = c.get("scheduledMode");
                c.set("activeMode", scheduled);
                c.set_text("overrideEntries", "[]");
            }
        }
        _ => return Err(CmdError::NotFound),
    }
    irc_v2_target(c);
    Ok(None)
}

/// IRoomController v1 (§5.3, openHAB syntax): `mode/{0-6}`, `service/{0-4}`,
/// `settemp/{idx}/{°}` (also PyLoxone's `setTemp`) sets `temperatures[idx]`; `tempTarget`
/// follows the temperature at `currHeatTempIx`. `starttimer/{idx}/{seconds}` runs an override
/// on temperature `idx` (`override` counts down from `overrideTotal`, `tempTarget` is that
/// temperature, relative ones added to comfort `temperatures[1]`, *inferred* from
/// `details.temperatures[].isAbsolute`); `stoptimer` or the end of the time returns to
/// `currHeatTempIx`.
fn irc_v1(c: &mut Ctl, word: &str, cmd: &[String], ctx: &Ctx) -> CmdResult {
    let temperature_index = |c: &Ctl, idx: f64| -> Result<String, CmdError> {
        let name = format!("temperatures[{}]", idx as i64);
        if idx.fract() != 0.0 || idx < 0.0 || !c.states.contains_key(&name) {
            return Err(CmdError::BadRequest(format!("no temperature {idx}")));
        }
        Ok(name)
    };
    match word {
        "mode" | "setmode" => {
            let m = arg(cmd, 1)?;
            if !(0.0..=6.0).contains(&m) || m.fract() != 0.0 {
                return Err(CmdError::BadRequest(format!("no mode {m}")));
            }
            c.set("mode", m);
        }
        "service" => c.set("serviceMode", arg(cmd, 1)?.clamp(0.0, 4.0)),
        "settemp" => {
            let idx = arg(cmd, 1)?;
            let name = temperature_index(c, idx)?;
            let t = arg(cmd, 2)?;
            c.set(&name, t);
            if c.get("currHeatTempIx") == idx && c.deadline.is_none() {
                c.set("tempTarget", t);
            }
        }
        "starttimer" => {
            let idx = arg(cmd, 1)?;
            temperature_index(c, idx)?;
            let secs = arg(cmd, 2)?;
            if secs <= 0.0 {
                return Err(CmdError::BadRequest(format!("no duration {secs}")));
            }
            c.set("timerIndex", idx);
            c.set("override", secs);
            c.set("overrideTotal", secs);
            c.deadline = Some(ctx.now + Duration::from_secs_f64(secs.min(1e9)));
            let t = irc_v1_temperature(c, idx);
            c.set("tempTarget", t);
        }
        "stoptimer" => irc_v1_stop_timer(c),
        _ => return Err(CmdError::NotFound),
    }
    Ok(None)
}

/// The temperature in °C of v1 temperature index `idx`: absolute ones as set, relative ones
/// (eco, increased heat, party) added to comfort `temperatures[1]` (*inferred*).
fn irc_v1_temperature(c: &Ctl, idx: f64) -> f64 {
    let own = c.get(&format!("temperatures[{}]", idx as i64));
    let absolute = c
        .details
        .get("temperatures")
        .and_then(|t| t.get((idx as i64).to_string()))
        .and_then(|t| t.get("isAbsolute"))
        .and_then(Value::as_bool)
        .unwrap_or(true);
    if absolute {
        own
    } else {
        c.get("temperatures[1]") + own
    }
}

/// Ends a v1 timer: the target follows `currHeatTempIx` again.
fn irc_v1_stop_timer(c: &mut Ctl) {
    c.deadline = None;
    c.set("override", 0.0);
    c.set("overrideTotal", 0.0);
    c.set("timerIndex", -1.0);
    let ix = c.get("currHeatTempIx");
    let t = irc_v1_temperature(c, ix);
    c.set("tempTarget", t);
}

/// AudioZone v1 and V2 (§5.3): play/pause/stop set `playState` 2/1/0 (and power on),
/// `on`/`off` set `power` (off also stops), `volume/{n}` clamped to 0..100 (v1: to `maxVolume`
/// when set), `volUp`/`volDown` (v1 `volstep/{±n}`) by `volumeStep`; next/prev keep playing.
fn audio(c: &mut Ctl, word: &str, cmd: &[String]) -> CmdResult {
    let max = match (c.kind == Kind::AudioZone, c.get("maxVolume")) {
        (true, m) if m > 0.0 => m.min(100.0),
        _ => 100.0,
    };
    let step = if c.get("volumeStep") > 0.0 {
        c.get("volumeStep")
    } else {
        3.0
    };
    let vol = c.get("volume");
    match word {
        "play" | "next" | "prev" => {
            c.set("power", 1.0);
            c.set("playState", 2.0);
        }
        "pause" => c.set("playState", 1.0),
        "stop" => c.set("playState", 0.0),
        "on" => c.set("power", 1.0),
        "off" => {
            c.set("power", 0.0);
            c.set("playState", 0.0);
        }
        "volume" => c.set("volume", arg(cmd, 1)?.clamp(0.0, max)),
        "volup" => c.set("volume", (vol + step).clamp(0.0, max)),
        "voldown" => c.set("volume", (vol - step).clamp(0.0, max)),
        "volstep" if c.kind == Kind::AudioZone => {
            c.set("volume", (vol + arg(cmd, 1)?).clamp(0.0, max))
        }
        "shuffle" if c.kind == Kind::AudioZone => {
            let s = c.get("shuffle");
            c.set("shuffle", on_off(s == 0.0));
        }
        "repeat" if c.kind == Kind::AudioZone => {
            let r = arg(cmd, 1)?;
            if ![0.0, 1.0, 3.0].contains(&r) {
                return Err(CmdError::BadRequest(format!("no repeat mode {r}")));
            }
            c.set("repeat", r);
        }
        "source" if c.kind == Kind::AudioZone => {
            let s = arg(cmd, 1)?;
            if !(1.0..=8.0).contains(&s) || s.fract() != 0.0 {
                return Err(CmdError::BadRequest(format!("no source {s}")));
            }
            c.set("source", s);
        }
        _ => return Err(CmdError::NotFound),
    }
    Ok(None)
}

/// Alarm (§5.3): `on` arms now, `on/{0|1}` without/with movement sensors (`disabledMove`
/// 1/0), `delayedon[/{0|1}]` arms after `armedDelayTotal` seconds (counting down in
/// `armedDelay`), `off` disarms and clears the alarm level, `quit` acknowledges (level 0),
/// `dismv/{0|1}` sets `disabledMove`.
fn alarm(c: &mut Ctl, word: &str, cmd: &[String], ctx: &Ctx) -> CmdResult {
    let movement = |c: &mut Ctl| -> Result<(), CmdError> {
        if cmd.get(1).is_some() {
            let m = arg(cmd, 1)?;
            c.set("disabledMove", on_off(m == 0.0));
        }
        Ok(())
    };
    match word {
        "on" => {
            movement(c)?;
            c.deadline = None;
            c.set("armed", 1.0);
            c.set("armedDelay", 0.0);
        }
        "delayedon" => {
            movement(c)?;
            let total = c.get("armedDelayTotal").clamp(0.0, 1e6);
            if total <= 0.0 {
                c.set("armed", 1.0);
            } else if c.get("armed") == 0.0 {
                c.set("armedDelay", total);
                c.deadline = Some(ctx.now + Duration::from_secs_f64(total));
            }
        }
        "off" => {
            c.deadline = None;
            for s in [
                "armed",
                "armedDelay",
                "level",
                "nextLevel",
                "nextLevelDelay",
            ] {
                c.set(s, 0.0);
            }
        }
        "quit" => {
            c.set("level", 0.0);
            c.set("nextLevel", 0.0);
        }
        "dismv" => c.set("disabledMove", on_off(arg(cmd, 1)? != 0.0)),
        _ => return Err(CmdError::NotFound),
    }
    Ok(None)
}

/// Radio (§5.3): `{id}` selects an output from `details.outputs` (0 = all off, unknown ids
/// 400), `reset` = 0, `next`/`prev` cycle through 0 and the outputs.
/// Intercom and IntercomV2 (Structure File docs): `answer` ends a ring (`bell` 0; rings come
/// from door.rs); IntercomV2 `mute/{0|1}` sets `muted`. Output sub-controls are Pushbuttons.
fn intercom(c: &mut Ctl, word: &str, cmd: &[String]) -> CmdResult {
    match word {
        "answer" => {
            c.set("bell", 0.0);
            c.deadline = None;
            Ok(None)
        }
        "mute" if c.kind == Kind::IntercomV2 => {
            let v = match cmd.get(1).map(String::as_str) {
                Some("1") => 1.0,
                Some("0") => 0.0,
                _ => return Err(CmdError::BadRequest("mute takes 0 or 1".into())),
            };
            c.set("muted", v);
            Ok(None)
        }
        _ => Err(CmdError::NotFound),
    }
}

fn radio(c: &mut Ctl, word: &str) -> CmdResult {
    let mut ids: Vec<i64> = c
        .details
        .get("outputs")
        .and_then(Value::as_object)
        .map(|o| o.keys().filter_map(|k| k.parse().ok()).collect())
        .unwrap_or_default();
    ids.push(0);
    ids.sort_unstable();
    ids.dedup();
    let cur = c.get("activeOutput") as i64;
    let pos = ids.iter().position(|&i| i == cur).unwrap_or(0);
    let id = match word {
        "reset" => 0,
        "next" => ids[(pos + 1) % ids.len()],
        "prev" => ids[(pos + ids.len() - 1) % ids.len()],
        w => {
            let v = value_word(w)?.ok_or(CmdError::NotFound)?;
            if v.fract() != 0.0 || !ids.contains(&(v as i64)) {
                return Err(CmdError::BadRequest(format!("no output {w}")));
            }
            v as i64
        }
    };
    c.set("activeOutput", id as f64);
    Ok(None)
}
