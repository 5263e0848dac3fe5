//! Whether a command took effect: after the batch runner ([`super::batch`]) or
//! `control_device` sends commands, [`verify`] waits (bounded) for each control's value to show
//! it, from the change bus or, unless the link is live, by re-reading ([`verify_reporting`]
//! also tells each confirmation as it comes); [`observable`] says which effects can be seen
//! at all.

use std::time::{Duration, Instant};

use crate::home::{
    Action, Control, ControlKind, Event, House, LinkMode, Source, Subscription, Value as HValue,
};

/// One control whose command's effect is awaited.
pub struct Target<'a> {
    pub control: &'a Control,
    /// Its primary value before the command, when known.
    pub before: Option<HValue>,
    /// The actions sent to it.
    pub actions: &'a [Action],
}

/// Waits at most `timeout` for the effect of commands on `targets`; one `true` (confirmed) or
/// `false` per target, in order. `sub` must have been subscribed before the commands were
/// sent. Changes on the bus confirm at once; unless the link is live
/// ([`LinkMode::WebSocket`]), the primary values are also re-read about every 100 ms (a
/// re-read's change is published on the bus too). A re-read that fails because the Miniserver
/// is out of reach stops re-reading; the wait goes on for bus events only.
pub fn verify(
    house: &House,
    sub: &Subscription,
    targets: &[Target],
    timeout: Duration,
) -> Vec<bool> {
    verify_reporting(house, sub, targets, timeout, &mut |_| {})
}

/// [`verify`], calling `confirmed(n)` each time the number `n` of confirmed targets grows
/// (not for those confirmed at once because they already were in the asked state).
pub fn verify_reporting(
    house: &House,
    sub: &Subscription,
    targets: &[Target],
    timeout: Duration,
    confirmed: &mut dyn FnMut(usize),
) -> Vec<bool> {
    let deadline = Instant::now() + timeout;
    // A command that found its control in the asked state changes nothing, so no change will
    // come: it is confirmed at once (a light `on` that was on).
    let mut done: Vec<bool> = targets
        .iter()
        .map(|t| {
            t.before
                .as_ref()
                .is_some_and(|v| expected(t.control, t.actions, v))
        })
        .collect();
    let mut reread = house.link().mode() != LinkMode::WebSocket;
    let confirms = |t: &Target, v: &HValue| -> bool {
        t.before.as_ref() != Some(v) || expected(t.control, t.actions, v)
    };
    let on_event = |e: Event, done: &mut [bool]| {
        if let Event::Change(ch) = e {
            for (i, t) in targets.iter().enumerate() {
                let ours = ch.uuid == t.control.uuid
                    || ch.control.as_deref() == Some(t.control.uuid.as_str());
                if ours && !done[i] && t.before.as_ref() != Some(&ch.value) {
                    done[i] = true;
                }
            }
        }
    };
    let mut reported = done.iter().filter(|d| **d).count();
    let mut tell = |done: &[bool]| {
        let n = done.iter().filter(|d| **d).count();
        if n > reported {
            reported = n;
            confirmed(n);
        }
    };
    loop {
        while let Some(e) = sub.try_recv() {
            on_event(e, &mut done);
        }
        if reread {
            for (i, t) in targets.iter().enumerate() {
                if done[i] {
                    continue;
                }
                match house.refresh(t.control, Source::Read) {
                    Ok(v) => done[i] = confirms(t, &v.value),
                    Err(e) if e.is_unreachable() => {
                        reread = false;
                        break;
                    }
                    Err(_) => {}
                }
            }
        }
        tell(&done);
        if done.iter().all(|d| *d) {
            break;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        if let Some(e) = sub.recv_timeout(left.min(Duration::from_millis(100))) {
            on_event(e, &mut done);
        }
    }
    tell(&done);
    done
}

/// Whether the effect of `a` on `c` shows in a value we can watch: with the polling fallback
/// only the block's primary value is seen (a switch's `active`, a blind's `position`, a
/// zone's `playState`...), so a target temperature, a colour, a volume step or a delayed arm
/// cannot be confirmed and is reported `verified: null` at once instead of waiting.
pub fn observable(c: &Control, a: &Action) -> bool {
    use Action as A;
    use ControlKind as K;
    matches!(
        (&c.kind, a),
        (
            K::Switch | K::TimedSwitch | K::Dimmer | K::EibDimmer,
            A::On | A::Off | A::Level(_)
        ) | (
            K::LightController | K::LightControllerV2,
            A::On | A::Off | A::Mood(_)
        ) | (K::Jalousie, A::Up | A::Down | A::Level(_) | A::Shade)
            | (K::Gate, A::Up | A::Down | A::On | A::Off)
            | (
                K::AudioZone | K::AudioZoneV2,
                A::Play | A::Pause | A::On | A::Off | A::Stop
            )
            | (K::Alarm, A::Arm { delayed: false, .. } | A::Disarm)
            | (K::Radio, A::Select(_) | A::Off | A::Next | A::Previous)
            | (
                K::Slider | K::ValueSelector | K::UpDownAnalog | K::LeftRightAnalog,
                A::Level(_)
            )
            | (K::TextInput, A::Text(_))
    )
}

/// Whether the primary value `v` (see `home::Primary`) already shows what `actions` asked, so
/// a command that found the device in the asked state counts: a switch on or off, a dimmer
/// at the level (percent), a blind fully up (position 0) or down (1), a LightControllerV2 in
/// the asked mood or off (778).
fn expected(c: &Control, actions: &[Action], v: &HValue) -> bool {
    let Some(x) = v.as_f64() else { return false };
    let digital = matches!(c.kind, ControlKind::Switch);
    let dimmer = matches!(c.kind, ControlKind::Dimmer | ControlKind::EibDimmer);
    let blind = matches!(c.kind, ControlKind::Jalousie);
    let moods = matches!(c.kind, ControlKind::LightControllerV2);
    match actions.last() {
        Some(Action::On) if digital || dimmer => x > 0.0,
        Some(Action::Off) if digital || dimmer => x == 0.0,
        Some(Action::Level(l)) if dimmer => (x - l).abs() < 0.5,
        Some(Action::Up) if blind => x == 0.0,
        Some(Action::Down) if blind => x == 1.0,
        Some(Action::Off) if moods => x == f64::from(crate::home::primary::MOOD_OFF),
        Some(Action::Mood(id)) if moods => x == f64::from(*id),
        _ => false,
    }
}
