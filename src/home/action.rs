//! The commands the house carries to a control ([`Action`]), controller-independent: the
//! Loxone adapter maps each to the control type's own command (`loxone::commands`), and
//! [`super::bounds`] checks its values against the control before it is sent.

/// A controller-independent command for one control. The adapter maps it to the control
/// type's own command (per Loxone structure file docs, see `loxone::commands`).
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Switch on (lights: last level or the "bright" mood).
    On,
    /// Switch off.
    Off,
    /// Blinds fully up (open), gates open.
    Up,
    /// Blinds fully down (closed), gates closed.
    Down,
    /// Stop a moving blind or gate.
    Stop,
    /// Set a level in percent 0-100: dimmer brightness, light master brightness, blind position
    /// (0 = fully open, 100 = fully closed, as Loxone's `manualPosition`), audio zone volume.
    Level(f64),
    /// Set the comfort (target) temperature in °C.
    Temperature(f64),
    /// Blinds to their shading position (Loxone `shade`).
    Shade,
    /// Set the slat (lamella) angle of a blind in percent 0-100 (Loxone `manualLamelle`).
    Slats(f64),
    /// A short pulse: push buttons, a TimedSwitch's timer.
    Pulse,
    /// Activate a lighting scene: a LightController (v1) scene number 0-9 or a
    /// LightControllerV2 mood id (`changeTo/{id}`).
    Mood(u32),
    /// A colour: hue 0-360 °, saturation and brightness 0-100 % (ColorPickerV2 `hsv(h,s,v)`).
    Color {
        hue: f64,
        saturation: f64,
        brightness: f64,
    },
    /// White light: brightness 0-100 % and colour temperature in kelvin 2700-6500
    /// (ColorPickerV2 `temp(bri,kelvin)`).
    White { brightness: f64, kelvin: f64 },
    /// The operating mode of a room's climate control.
    RoomMode(RoomMode),
    /// Audio: start playback.
    Play,
    /// Audio: pause playback.
    Pause,
    /// Audio: next track or station.
    Next,
    /// Audio: previous track or station.
    Previous,
    /// Audio: change the volume by this many percent points (negative = quieter). AudioZone v1
    /// takes the size (`volstep/{n}`); AudioZoneV2 only knows one press of its own
    /// `volumeStep` (`volUp`/`volDown`), so there the sign alone counts.
    VolumeStep(f64),
    /// Alarm: arm, after the configured delay if `delayed`, with motion sensors if `motion`.
    Arm { delayed: bool, motion: bool },
    /// Alarm: disarm.
    Disarm,
    /// Alarm and smoke alarm: acknowledge (quit) a triggered alarm.
    Acknowledge,
    /// Select one output of a Radio block (1-16); 0 = all off.
    Select(u32),
    /// Set the text of a TextInput.
    Text(String),
}

/// The operating mode of a room's climate control (IRoomController v1/v2); the house-wide
/// ClimateController takes `Auto`, `Heating`, `Cooling` and `Off` without a timer as its
/// `autoMode`.
///
/// Loxone keeps two things apart: the *operating mode* (automatic, heating only, cooling only;
/// V2 `setOperatingMode/{n}`, v1 `mode/{n}`) and a temporary *override* of the scheduled
/// temperature (comfort, eco, building protection; V2 `override/{id}/{until}`, v1
/// `starttimer/{idx}/{seconds}`), ended by [`RoomMode::EndOverride`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoomMode {
    /// Automatic: heating and cooling as the schedule and season say.
    Auto,
    /// Automatic, heating only.
    Heating,
    /// Automatic, cooling only.
    Cooling,
    /// Comfort temperature now (override), for the timer's time or (V2 only) until ended.
    Comfort(Option<OverrideTimer>),
    /// Economy (absent) temperature now (override), as `Comfort`.
    Eco(Option<OverrideTimer>),
    /// Building protection only (frost/heat protection): effectively off (override), as
    /// `Comfort`.
    Off(Option<OverrideTimer>),
    /// End a running comfort/eco/off override: back to the schedule (V2 `stopOverride`, v1
    /// `stoptimer`).
    EndOverride,
}

/// How long a [`RoomMode`] override lasts: both forms Loxone needs, computed once by the
/// caller so that the command mapping stays free of clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverrideTimer {
    /// Duration in minutes (v1 `starttimer` takes it in seconds).
    pub minutes: u32,
    /// End as seconds since 2009-01-01 00:00 UTC, the Loxone epoch (V2 `override` takes it).
    pub until: u64,
}

impl OverrideTimer {
    /// A timer of `minutes` starting now.
    pub fn from_now(minutes: u32) -> Self {
        Self {
            minutes,
            until: super::time::loxone_now() + u64::from(minutes) * 60,
        }
    }
}
