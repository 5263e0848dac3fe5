//! The house as tools see it: the model ([`Home`]), the live values ([`StateStore`]) and a
//! [`Controller`] that carries [`Action`]s to the real building. Tools call [`House`]; the
//! Loxone adapter implements [`Controller`]. Every write is logged with the caller's label.
//!
//! The house also holds the change [`Bus`] and the [`LinkStatus`]: every value that enters the
//! store through [`House::record`] (reads, the polling thread, later WebSocket events) and
//! differs from the remembered one is published on the bus.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use super::alerts::{Alert, AlertEvent, AlertOp, Alerts, AlertsSnapshot, Notification};
use super::bus::{Bus, Change, Event};
use super::camera::{self, CameraFailure, CameraKind, CameraPicture, PictureAsk, PictureRequest};
use super::link::{LinkMode, LinkSnapshot, LinkStatus};
use super::model::{Control, Home, MessageCenter};
use super::pin::{PinGuard, PinSource, Typist};
use super::primary::Primary;
use super::risk::{Risk, RiskRules};
use super::state::{Source, StateStore, StateValue, Value};
use super::stop::{AdminStops, Look, StopGuard, StopStatus, SwitchSource};
use crate::ratelimit::RateLimiter;

pub use super::action::{Action, OverrideTimer, RoomMode};
use super::statistic::{GroupSince, Records, V2Request};
use super::time::HouseTime;

/// Default of `[server] verify_timeout_ms`: how long control tools wait for a command's effect.
pub const DEFAULT_VERIFY_TIMEOUT: Duration = Duration::from_millis(1500);

/// Why the controller could not act or read. Each variant maps to one error code of the spec
/// (§7.1) via [`ControllerError::code`].
#[derive(Debug, Clone, PartialEq)]
pub enum ControllerError {
    /// The Miniserver cannot be reached (refused, timeout, DNS). `CONNECTION_ERROR`.
    Connection(String),
    /// The Miniserver rejected our credentials. `CONNECTION_ERROR`.
    Unauthorized(String),
    /// The Miniserver blocks us after failed logins; no request is sent until it passes.
    /// `CONNECTION_ERROR`.
    LockedOut { remaining_secs: u64 },
    /// The Miniserver does not know the control or command. `DEVICE_NOT_FOUND`.
    NotFound(String),
    /// The control type has no command for this action. `INVALID_PARAMETERS`.
    Unsupported(String),
    /// A value outside what the control accepts (a number beyond its range, not finite, a
    /// text too long; see [`super::bounds`]). Nothing was sent. `INVALID_PARAMETERS`.
    InvalidValue(String),
    /// The Miniserver answered with an error code. `CONNECTION_ERROR`.
    Rejected { code: u16, message: String },
    /// The control is secured and no visualisation password was given or configured (the
    /// control's name). `INVALID_PARAMETERS`.
    VisuPasswordMissing(String),
    /// The Miniserver refused the visualisation password (Loxone code 500).
    /// `INVALID_PARAMETERS`. Never carries the password.
    VisuPasswordWrong,
    /// The Miniserver refused the visualisation password, and that ended a run of wrong ones
    /// ([`super::pin`]): secured commands of whoever typed it (or with the configured
    /// password) now pause. `INVALID_PARAMETERS`, the details say how long.
    VisuPasswordWrongPaused(super::pin::Run),
    /// Secured commands of this caller (or with the configured password) pause after wrong
    /// visualisation passwords ([`super::pin`]); nothing was sent. `RATE_LIMIT_EXCEEDED`.
    VisuPasswordBlocked {
        remaining_secs: u64,
        /// The whole pause, and the run of wrong passwords that started it.
        pause_secs: u64,
        run: u32,
        source: super::pin::PinSource,
    },
    /// The caller may not touch the control ([`Access::permits`](super::Access::permits): the
    /// API key is limited to some rooms or categories, or to its devices); the message
    /// ([`Denied`](super::Denied)'s) names the control and its room. Nothing was sent.
    /// `INSUFFICIENT_PERMISSIONS`.
    OutOfScope(String),
    /// The outbound command limit ([`CommandLimits`]) refused a command: too many to this
    /// control (`control` is its name) or to the Miniserver as a whole (`control` is `None`)
    /// in the window. Nothing was sent. `RATE_LIMIT_EXCEEDED`.
    CommandsLimited {
        control: Option<String>,
        limit: u32,
        window_secs: u64,
        retry_after_secs: u64,
    },
    /// A camera or intercom gave no picture ([`CameraFailure`] says why; the message is for
    /// the owner and never holds a URL or credentials). `CONNECTION_ERROR`.
    Camera {
        failure: CameraFailure,
        message: String,
    },
    /// The house is stopped (the stop switch is off or unknown, or the admin page's stop
    /// holds; see [`super::stop`]): nothing was sent. `ASSISTANT_STOPPED`.
    Stopped(Box<StopStatus>),
    /// A command to the stop switch itself: lifting or setting the stop is a person's act,
    /// never a tool's (the control's name). Nothing was sent. `INSUFFICIENT_PERMISSIONS`.
    StopSwitchReserved(String),
    /// No Message Center entry has this id (among those the Miniserver listed when last
    /// asked). Nothing was sent. `INVALID_PARAMETERS`.
    NoSuchAlert(String),
    /// The entry does not offer this action (its id, the action, the actions it offers).
    /// Nothing was sent. `INVALID_PARAMETERS`.
    ActionNotOffered {
        alert: String,
        action: String,
        offered: Vec<String>,
    },
}

/// Outbound limits on commands toward the Miniserver (`[miniserver] max_commands_per_control`,
/// `max_commands`), so that no client, however fast or confused, can make blind motors or
/// relays chatter: within each `window` at most `per_control` commands go to one control and
/// at most `total` to the Miniserver. Reads are not limited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandLimits {
    /// Commands to one control (by `uuidAction`) per window; at least 1.
    pub per_control: u32,
    /// Commands to the Miniserver in all per window; at least 1.
    pub total: u32,
    /// The fixed window both counts run in (10 s from the config file).
    pub window: Duration,
}

impl Default for CommandLimits {
    /// 6 commands per control and 120 in all per 10 s: enough for "all lights off" in a large
    /// house and for a few quick corrections to one dimmer, not for a relay clicking at 1 Hz.
    fn default() -> Self {
        Self {
            per_control: 6,
            total: 120,
            window: Duration::from_secs(10),
        }
    }
}

/// How long a Message Center entry list counts as fresh: an id it does not have is refused
/// without reading the list again ([`House::act_on_alert`]).
pub const ALERTS_FRESH: Duration = Duration::from_secs(2);

impl ControllerError {
    /// Whether the Miniserver is out of reach for every further request (unreachable, our
    /// credentials rejected, locked out): batch operations stop asking after the first such
    /// error instead of waiting for one timeout per device.
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            ControllerError::Connection(_)
                | ControllerError::Unauthorized(_)
                | ControllerError::LockedOut { .. }
        )
    }

    /// Whether no further command of a batch can pass now: the Miniserver is out of reach
    /// ([`ControllerError::is_unreachable`]) or the house-wide outbound command limit is used
    /// up. Batches stop sending at the first such error (the rest are `not_attempted`).
    pub fn stops_batch(&self) -> bool {
        self.is_unreachable()
            || matches!(
                self,
                ControllerError::CommandsLimited { control: None, .. }
                    | ControllerError::Stopped(_)
            )
    }

    /// The spec §7.1 error code.
    pub fn code(&self) -> &'static str {
        match self {
            ControllerError::NotFound(_) => "DEVICE_NOT_FOUND",
            ControllerError::Unsupported(_)
            | ControllerError::InvalidValue(_)
            | ControllerError::VisuPasswordMissing(_)
            | ControllerError::VisuPasswordWrong
            | ControllerError::VisuPasswordWrongPaused(_)
            | ControllerError::NoSuchAlert(_)
            | ControllerError::ActionNotOffered { .. } => "INVALID_PARAMETERS",
            ControllerError::OutOfScope(_) | ControllerError::StopSwitchReserved(_) => {
                "INSUFFICIENT_PERMISSIONS"
            }
            ControllerError::Stopped(_) => "ASSISTANT_STOPPED",
            ControllerError::VisuPasswordBlocked { .. }
            | ControllerError::CommandsLimited { .. } => "RATE_LIMIT_EXCEEDED",
            _ => "CONNECTION_ERROR",
        }
    }
}

impl fmt::Display for ControllerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ControllerError::Connection(m) => write!(f, "cannot reach the Miniserver: {m}"),
            ControllerError::Unauthorized(m) => {
                write!(f, "the Miniserver rejected the credentials: {m}")
            }
            ControllerError::LockedOut { remaining_secs } => write!(
                f,
                "the Miniserver blocks this client after failed logins; retry in {remaining_secs} s"
            ),
            ControllerError::NotFound(m) => write!(f, "the Miniserver does not know {m}"),
            ControllerError::Camera { message, .. } => f.write_str(message),
            ControllerError::Unsupported(m) | ControllerError::InvalidValue(m) => f.write_str(m),
            ControllerError::Rejected { code, message } => {
                write!(f, "the Miniserver answered {code}: {message}")
            }
            ControllerError::VisuPasswordMissing(name) => write!(
                f,
                "{name} is secured with the Loxone visualisation password, which this server does \
                 not have: its owner configures it on the server (visu_password in the \
                 [miniserver] section of the config file, or the HOME_VISU_PASS environment \
                 variable), or uses an MCP client that opens this server's own page for the \
                 user to type it (URL-mode elicitation over HTTP); the password is not for the \
                 chat"
            ),
            ControllerError::VisuPasswordWrong => f.write_str(
                "the Miniserver refused the visualisation password (code 500): the code is wrong",
            ),
            ControllerError::VisuPasswordWrongPaused(run) => write!(
                f,
                "the Miniserver refused the visualisation password (code 500): the code is \
                 wrong; that ends run {} of wrong passwords {}: secured commands {} pause for \
                 {} s (each further run pauses twice as long, up to a day)",
                run.run,
                match run.source {
                    super::pin::PinSource::Page => "typed by this key",
                    super::pin::PinSource::Configured => "with the configured password",
                },
                match run.source {
                    super::pin::PinSource::Page => "of this key",
                    super::pin::PinSource::Configured => "with it",
                },
                run.pause_secs
            ),
            ControllerError::VisuPasswordBlocked {
                remaining_secs,
                pause_secs,
                run,
                source,
            } => write!(
                f,
                "too many wrong visualisation passwords {}: secured commands {} pause for \
                 {remaining_secs} s more (a pause of {pause_secs} s after run {run}); nothing \
                 was sent",
                match source {
                    super::pin::PinSource::Page => "typed by this key",
                    super::pin::PinSource::Configured => "configured on the server",
                },
                match source {
                    super::pin::PinSource::Page => "of this key",
                    super::pin::PinSource::Configured => "with it",
                },
            ),
            ControllerError::OutOfScope(why) => f.write_str(why),
            ControllerError::Stopped(status) => f.write_str(&status.explain()),
            ControllerError::StopSwitchReserved(name) => write!(
                f,
                "{name} is the assistant's stop switch: only a person switches it (in the \
                 Loxone app, at its wall button or in Loxone Config); nothing was sent"
            ),
            ControllerError::NoSuchAlert(id) => write!(
                f,
                "the Message Center has no entry {id:?}; list the alerts to see their ids"
            ),
            ControllerError::ActionNotOffered {
                alert,
                action,
                offered,
            } => write!(
                f,
                "the Message Center entry {alert:?} does not offer {action} (it offers: {}); \
                 nothing was sent",
                if offered.is_empty() {
                    "nothing".to_string()
                } else {
                    offered.join(", ")
                }
            ),
            ControllerError::CommandsLimited {
                control,
                limit,
                window_secs,
                retry_after_secs,
            } => write!(
                f,
                "outbound command limit: at most {limit} commands per {window_secs} s {} \
                 (protects motors and relays); nothing was sent; retry in {retry_after_secs} s",
                match control {
                    Some(name) => format!("to {name}"),
                    None => "to the Miniserver".to_string(),
                }
            ),
        }
    }
}

impl std::error::Error for ControllerError {}

/// A secret text, such as the visualisation password (PIN) of secured controls. `Debug` prints
/// `***`, there is no `Display`, so it cannot end up in a log line or an error message by
/// accident; [`Secret::expose`] is the one way to read it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }

    /// The secret text, for hashing it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// A command as the controller would send it, for dry runs and answers: where it goes (the
/// control's `uuidAction`, or a sub-control's such as `<uuid>/masterValue`) and what it says
/// (`manualPosition/40`, `changeTo/778`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub target: String,
    pub command: String,
}

impl Command {
    /// `<target>/<command>`, as batch results list it.
    pub fn path(&self) -> String {
        format!("{}/{}", self.target, self.command)
    }
}

/// The seam to the building automation. Implemented by the Loxone client; tests can plug in
/// their own.
pub trait Controller: Send + Sync {
    /// The command `action` becomes for `control`, without sending it: the one mapping
    /// [`Controller::act`] sends too. [`ControllerError::Unsupported`] names what the control's
    /// type supports.
    fn command(&self, control: &Control, action: &Action) -> Result<Command, ControllerError>;
    /// Carries out `action` on `control`; returns the value the controller reports afterwards,
    /// if it reports one.
    fn act(&self, control: &Control, action: &Action) -> Result<Option<Value>, ControllerError>;
    /// Reads the control's primary value (e.g. a switch's `active`, a dimmer's `position`).
    fn read(&self, control: &Control) -> Result<Value, ControllerError>;
    /// Carries out `action` on a secured control with the visualisation password (Loxone
    /// `jdev/sps/ios/...`). A wrong password is [`ControllerError::VisuPasswordWrong`].
    /// Controllers without secured commands refuse.
    fn act_secured(
        &self,
        control: &Control,
        action: &Action,
        visu_password: &Secret,
    ) -> Result<Option<Value>, ControllerError> {
        let _ = (action, visu_password);
        Err(ControllerError::Unsupported(format!(
            "{} is secured and this controller cannot send secured commands",
            control.name
        )))
    }

    /// Fetches a picture of the camera or intercom `control` as `request` says (see
    /// [`super::camera`]), scaled so its long side is at most `request.max_side`. Pictures
    /// are not kept. Controllers without cameras refuse.
    fn picture(
        &self,
        control: &Control,
        request: &PictureRequest,
    ) -> Result<CameraPicture, ControllerError> {
        let _ = request;
        Err(ControllerError::Unsupported(format!(
            "{}: this controller fetches no pictures",
            control.name
        )))
    }

    /// Reads every entry of the Message Center `mc` (active and historic). Controllers
    /// without one refuse.
    fn alerts(&self, mc: &MessageCenter) -> Result<Vec<Alert>, ControllerError> {
        Err(ControllerError::Unsupported(format!(
            "this controller cannot read the Message Center {}",
            mc.name
        )))
    }

    /// Carries out `op` on the entry `entry` of the Message Center `mc` (the house checked
    /// that the entry exists and offers it). Controllers without one refuse.
    fn alert_op(
        &self,
        mc: &MessageCenter,
        entry: &str,
        op: AlertOp,
    ) -> Result<(), ControllerError> {
        let _ = (entry, op);
        Err(ControllerError::Unsupported(format!(
            "this controller cannot act on the Message Center {}",
            mc.name
        )))
    }
}

/// The seam to the Miniserver's statistics (implemented by the Loxone adapter). Every call
/// is bounded in time and bytes by the implementation; an empty answer is `Ok` with no
/// records, a Miniserver that cannot be asked is an error.
pub trait Statistics: Send + Sync {
    /// `jdev/sps/getStatisticInfo/{uuid}`: the V2 groups with data.
    fn v2_info(&self, control: &Control) -> Result<Vec<GroupSince>, ControllerError>;
    /// `dev/sps/getStatistic/...`: the records of one data point (width 1, times Unix UTC).
    fn v2_data(&self, control: &Control, request: &V2Request) -> Result<Records, ControllerError>;
    /// One month of the V1 recording (every output, in the order of `statistic.outputs`;
    /// times are Miniserver-local seconds since 2009-01-01). No file for that month is `Ok`
    /// with no records.
    fn v1_month(&self, control: &Control, year: i32, month: u8)
        -> Result<Records, ControllerError>;
}

/// The seam to the server's own record of state changes (implemented by the SQLite store of
/// `record`).
pub trait Record: Send + Sync {
    /// The numeric values of `control`'s `state` (`value` for its primary value) recorded in
    /// `[from_ms, to_ms)` (Unix milliseconds), oldest first, at most `limit` (then a problem
    /// says so), and the last value before `from_ms` if any (a switch's state when the range
    /// begins). Width 1, times in Unix milliseconds.
    fn series(
        &self,
        control: &str,
        state: &str,
        from_ms: i64,
        to_ms: i64,
        limit: usize,
    ) -> Result<(Option<(i64, f64)>, Records), String>;
    /// The first time `control`'s `state` (any state with `None`) was recorded (Unix
    /// milliseconds), if ever.
    fn first_recorded(&self, control: &str, state: Option<&str>) -> Result<Option<i64>, String>;
    /// How many days rows are kept.
    fn retention_days(&self) -> u32;
}

/// What a command did: the control, the value the controller reported, when.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub value: Option<Value>,
    pub at: SystemTime,
}

/// The house: model + live values + controller. Shared as `Arc<House>`.
pub struct House {
    home: RwLock<Arc<Home>>,
    states: StateStore,
    controller: Arc<dyn Controller>,
    value_max_age: Duration,
    /// The configured visualisation password for secured controls, if any.
    visu_password: Option<Secret>,
    /// The owner's additions to the risk classes ([`super::risk`]).
    risk_rules: RiskRules,
    /// Wrong visualisation passwords and the pauses they earned ([`super::pin`]).
    pins: PinGuard,
    bus: Arc<Bus>,
    link: Arc<LinkStatus>,
    verify_timeout: Duration,
    /// The outbound command limits and their counters (`None`: unlimited).
    command_limits: Option<(CommandLimits, RateLimiter)>,
    /// Counts what changes readers' view besides the store's changes: commands (they drop
    /// remembered values), failed reads and model replacements. See [`House::generation`].
    epoch: AtomicU64,
    /// When each control (by `uuidAction`) was last commanded: for `value_max_age` after
    /// that its pushed value may predate the command's effect, so [`House::value`] reads it
    /// from the Miniserver instead (read your own write).
    commanded: Mutex<std::collections::HashMap<String, SystemTime>>,
    /// The newest structure file that could not be read on reload, until a model replaces
    /// the one in use (see [`House::reject_structure`]).
    rejected_structure: Mutex<Option<RejectedStructure>>,
    /// The Message Center's entries and the notifications ([`super::alerts`]).
    alerts: Alerts,
    /// The stop switch and the admin stop ([`super::stop`]).
    stop: StopGuard,
    /// The house's clock (`[home] time_zone`).
    time: HouseTime,
    /// The Miniserver's statistics ([`House::with_statistics`]); `None`: not asked.
    statistics: Option<Arc<dyn Statistics>>,
    /// The server's own record of state changes ([`House::with_record`]); `None`: none kept.
    record: Option<Arc<dyn Record>>,
    /// Longest side of pictures handed out ([`House::picture`]), in pixels.
    picture_max_side: u32,
}

/// A structure file the Miniserver offered on reload that could not be read at all (the
/// model in use stays the one before). The reload watch does not fetch it again while
/// `jdev/sps/LoxAPPversion3` still answers `version`; `/health` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectedStructure {
    /// The Miniserver's `jdev/sps/LoxAPPversion3` answer the file was fetched for.
    pub version: String,
    /// Why it could not be read (the structure reader's error, as text).
    pub error: String,
}

impl House {
    /// `value_max_age`: remembered values older than this are read again before use.
    pub fn new(home: Home, controller: Arc<dyn Controller>, value_max_age: Duration) -> Self {
        Self {
            home: RwLock::new(Arc::new(home)),
            states: StateStore::new(),
            controller,
            value_max_age,
            visu_password: None,
            risk_rules: RiskRules::default(),
            pins: PinGuard::default(),
            bus: Arc::new(Bus::default()),
            link: Arc::new(LinkStatus::new()),
            verify_timeout: DEFAULT_VERIFY_TIMEOUT,
            command_limits: None,
            epoch: AtomicU64::new(0),
            commanded: Mutex::new(std::collections::HashMap::new()),
            rejected_structure: Mutex::new(None),
            alerts: Alerts::default(),
            stop: StopGuard::default(),
            time: HouseTime::system(),
            statistics: None,
            record: None,
            picture_max_side: 640,
        }
    }

    /// Asks `statistics` for the Miniserver's recordings (`home::history`).
    pub fn with_statistics(mut self, statistics: Arc<dyn Statistics>) -> Self {
        self.statistics = Some(statistics);
        self
    }

    /// Reads the server's own record of state changes through `record` (`home::history`).
    pub fn with_record(mut self, record: Arc<dyn Record>) -> Self {
        self.record = Some(record);
        self
    }

    /// The Miniserver's statistics, if they are asked.
    pub fn statistics(&self) -> Option<&Arc<dyn Statistics>> {
        self.statistics.as_ref()
    }

    /// The server's own record of state changes, if one is kept.
    pub fn local_record(&self) -> Option<&Arc<dyn Record>> {
        self.record.as_ref()
    }

    /// Pictures of cameras are scaled so their long side is at most `pixels` (default 640;
    /// at least 16).
    pub fn with_picture_max_side(mut self, pixels: u32) -> Self {
        self.picture_max_side = pixels.max(16);
        self
    }

    /// Longest side of pictures handed out, in pixels.
    pub fn picture_max_side(&self) -> u32 {
        self.picture_max_side
    }

    /// The house's time zone (default: the system's, [`HouseTime::system`]).
    pub fn with_time_zone(mut self, time: HouseTime) -> Self {
        self.time = time;
        self
    }

    /// The house's clock: local days, Miniserver-local seconds, ISO 8601 with the local
    /// offset ([`super::time`]).
    pub fn time(&self) -> &HouseTime {
        &self.time
    }

    /// Limits the commands sent to the Miniserver (see [`CommandLimits`]); a house without
    /// this call sends every command it is asked to (tests, tools that batch on purpose).
    pub fn with_command_limits(mut self, limits: CommandLimits) -> Self {
        self.command_limits = Some((limits, RateLimiter::new(limits.window)));
        self
    }

    /// Counts one command to `control` against the limits; the error says which limit refused.
    /// [`ControllerError::InvalidValue`] when a value of `action` does not fit `control`
    /// ([`super::bounds::check`], with the live values of the control's named states): checked
    /// for every command before anything else, so a refused value costs no command budget; a
    /// dry run asks the same (it answers what would be sent, so it refuses what would be).
    pub fn check_values(&self, control: &Control, action: &Action) -> Result<(), ControllerError> {
        let live = |state: &str| {
            let uuid = control.state(state)?;
            self.states.get(uuid)?.value.as_f64()
        };
        super::bounds::check(control, action, &live).map_err(|m| {
            log::info!("refused a command to {}: {m}", control.name);
            ControllerError::InvalidValue(m)
        })
    }

    /// Counts one command to the target `key` (a control's `uuidAction`; `name` for the
    /// refusal) against the outbound limits.
    fn admit_command(&self, key: &str, name: &str) -> Result<(), ControllerError> {
        let Some((limits, limiter)) = &self.command_limits else {
            return Ok(());
        };
        let refused = |name: Option<&str>, limit: u32, retry: u64| {
            log::warn!(
                "outbound command limit: {} refused ({limit} per {} s)",
                name.unwrap_or("the Miniserver"),
                limits.window.as_secs().max(1)
            );
            ControllerError::CommandsLimited {
                control: name.map(str::to_string),
                limit,
                window_secs: limits.window.as_secs().max(1),
                retry_after_secs: retry,
            }
        };
        limiter
            .hit(key, limits.per_control)
            .map_err(|i| refused(Some(name), limits.per_control, i.retry_after))?;
        limiter
            .hit("*", limits.total)
            .map_err(|i| refused(None, limits.total, i.retry_after))?;
        Ok(())
    }

    /// A number that grows whenever what a reader of the house sees may have changed: a state
    /// value changed (the store's change number), a command was sent (it drops remembered
    /// values, so the next read asks the Miniserver), a read failed, or the model was
    /// replaced. Equal generations before and after a computation mean it saw one consistent
    /// house; the response caches (`tools::cache`) keep an answer only while it is unchanged.
    pub fn generation(&self) -> u64 {
        self.states.seq() + self.epoch.load(Ordering::SeqCst)
    }

    fn bump(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// Sets how long control tools wait for a command's effect (`Duration::ZERO`: they do not
    /// verify). Default [`DEFAULT_VERIFY_TIMEOUT`].
    pub fn with_verify_timeout(mut self, timeout: Duration) -> Self {
        self.verify_timeout = timeout;
        self
    }

    /// How long control tools wait for a command's effect; zero means no verification.
    pub fn verify_timeout(&self) -> Duration {
        self.verify_timeout
    }

    /// The change bus: subscribe to hear every state change and structure reload.
    pub fn bus(&self) -> &Arc<Bus> {
        &self.bus
    }

    /// The status of the link to the Miniserver.
    pub fn link(&self) -> &Arc<LinkStatus> {
        &self.link
    }

    /// Records `value` for the state or control `uuid` (belonging to `control`, when known) as
    /// learnt at `at` from `source`; when it changed, publishes an [`Event::Change`] and
    /// returns `true`.
    pub fn record(
        &self,
        uuid: &str,
        control: Option<&str>,
        value: Value,
        at: SystemTime,
        source: Source,
    ) -> bool {
        let Some(seq) = self.states.apply(uuid, value.clone(), at, source) else {
            return false;
        };
        self.bus.publish(Event::Change(Change {
            uuid: uuid.to_string(),
            control: control.map(str::to_string),
            value,
            at,
            seq,
            source,
        }));
        true
    }

    /// Reads the control's primary value from the controller now and records it (publishing a
    /// change if it differs). Errors are the controller's.
    pub fn refresh(
        &self,
        control: &Control,
        source: Source,
    ) -> Result<StateValue, ControllerError> {
        let v = self.controller.read(control).inspect_err(|_| self.bump())?;
        let at = SystemTime::now();
        self.record(&control.uuid, Some(&control.uuid), v.clone(), at, source);
        Ok(self.states.get(&control.uuid).unwrap_or(StateValue {
            value: v,
            updated: at,
            source,
            seq: self.states.seq(),
        }))
    }

    /// Sets the configured visualisation password used by [`House::act_secured`] when the caller
    /// gives none.
    pub fn with_visu_password(mut self, visu_password: Option<Secret>) -> Self {
        self.visu_password = visu_password;
        self
    }

    /// Whether a visualisation password is configured.
    pub fn has_visu_password(&self) -> bool {
        self.visu_password.is_some()
    }

    /// Sets the owner's additions to the risk classes (`[risk]` of the configuration).
    pub fn with_risk_rules(mut self, rules: RiskRules) -> Self {
        self.risk_rules = rules;
        self
    }

    /// The risk class of operating `c` ([`super::risk::class_of`] with the owner's rules): the
    /// one place every tool asks.
    pub fn risk(&self, c: &Control) -> Risk {
        super::risk::class_of(&self.home(), c, &self.risk_rules)
    }

    /// The current model (cheap: an `Arc`).
    pub fn home(&self) -> Arc<Home> {
        self.home.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces the model (structure file changed), forgets remembered values and a
    /// [`RejectedStructure`].
    pub fn replace_home(&self, home: Home) {
        *self.home.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(home);
        *self
            .rejected_structure
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = None;
        self.states.clear();
        self.bump();
    }

    /// Notes that the structure file of `version` could not be read (`error`); the model
    /// stays. Replaces an earlier rejection; cleared by [`House::replace_home`].
    pub fn reject_structure(&self, version: &str, error: &str) {
        *self
            .rejected_structure
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(RejectedStructure {
            version: version.to_string(),
            error: error.to_string(),
        });
    }

    /// The structure file that could not be read since the model was last replaced, if any.
    pub fn rejected_structure(&self) -> Option<RejectedStructure> {
        self.rejected_structure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The live values.
    pub fn states(&self) -> &StateStore {
        &self.states
    }

    /// The command `action` becomes for `control` ([`Controller::command`]), for dry runs and
    /// answers: tools never word a command themselves. Nothing is sent.
    pub fn command(&self, control: &Control, action: &Action) -> Result<Command, ControllerError> {
        self.controller.command(control, action)
    }

    /// Sends `action` to `control`. The remembered value of the control is dropped, so the
    /// next read asks the Miniserver (Loxone warns that a command answer's value is not
    /// reliably the new state). `caller` labels the audit log line (every write is logged).
    pub fn act(
        &self,
        control: &Control,
        action: &Action,
        caller: &str,
    ) -> Result<Outcome, ControllerError> {
        self.check_stop(control, caller)?;
        self.check_values(control, action)?;
        self.admit_command(&control.uuid, &control.name)?;
        let result = self.controller.act(control, action);
        self.finish(control, action, caller, result)
    }

    /// The stop's guarantee, asked before every command ([`House::act`],
    /// [`House::act_secured`], [`House::act_on_alert`]): refuses while the house is stopped
    /// ([`ControllerError::Stopped`]) and any command to the stop switch itself
    /// ([`ControllerError::StopSwitchReserved`]). Nothing is sent either way.
    fn check_stop(&self, control: &Control, caller: &str) -> Result<(), ControllerError> {
        if self.is_the_stop_switch(control) {
            log::warn!(
                "refused a command by {caller} to the stop switch {}",
                control.name
            );
            return Err(ControllerError::StopSwitchReserved(control.name.clone()));
        }
        self.refuse_while_stopped(&control.name, caller)
    }

    /// [`ControllerError::Stopped`] while the house is stopped (logged with what was refused).
    fn refuse_while_stopped(&self, target: &str, caller: &str) -> Result<(), ControllerError> {
        let status = self.stop_status();
        if status.stopped {
            log::warn!(
                "refused a command by {caller} to {target}: stopped by {}",
                status.stopped_by().join(" and ")
            );
            return Err(ControllerError::Stopped(Box::new(status)));
        }
        Ok(())
    }

    /// Like [`House::act`], for controls that may be secured (alarms, doors): a secured control
    /// gets the command with the visualisation password `typed` on this server's page by
    /// `typist`, else the configured one, else [`ControllerError::VisuPasswordMissing`]; an
    /// unsecured control gets a plain command (the password is not used). The password is
    /// never logged. Wrong passwords are counted and pause secured commands ([`super::pin`]:
    /// the typist's for a typed password, everybody's for the configured one): refused then
    /// with [`ControllerError::VisuPasswordBlocked`] before anything is sent; the wrong
    /// password that ends a run is [`ControllerError::VisuPasswordWrongPaused`].
    pub fn act_secured(
        &self,
        control: &Control,
        action: &Action,
        typed: Option<&Secret>,
        typist: &Typist,
        caller: &str,
    ) -> Result<Outcome, ControllerError> {
        if !control.is_secured {
            return self.act(control, action, caller);
        }
        self.check_stop(control, caller)?;
        let source = match typed {
            Some(_) => PinSource::Page,
            None => PinSource::Configured,
        };
        let _one_at_a_time = self.pins.sending();
        self.pin_admit(typist, source)?;
        self.check_values(control, action)?;
        self.admit_command(&control.uuid, &control.name)?;
        let result = match typed.or(self.visu_password.as_ref()) {
            Some(pw) => self.controller.act_secured(control, action, pw),
            None => Err(ControllerError::VisuPasswordMissing(control.name.clone())),
        };
        let result = match result {
            Err(ControllerError::VisuPasswordWrong) => {
                match self.pins.wrong(typist, source, Instant::now()) {
                    Some(run) => Err(ControllerError::VisuPasswordWrongPaused(run)),
                    None => Err(ControllerError::VisuPasswordWrong),
                }
            }
            Ok(v) => {
                self.pins.right(typist, source);
                Ok(v)
            }
            Err(e) => Err(e),
        };
        self.finish(control, action, &format!("{caller} (secured)"), result)
    }

    /// Whether a secured command of `typist` with a password from `source` may be tried now
    /// ([`super::pin::PinGuard::admit`]): tools ask before they open the password page, so a
    /// paused key is not even asked.
    pub fn pin_admit(&self, typist: &Typist, source: PinSource) -> Result<(), ControllerError> {
        self.pins
            .admit(typist, source, Instant::now())
            .map_err(|p| ControllerError::VisuPasswordBlocked {
                remaining_secs: p.remaining_secs,
                pause_secs: p.pause_secs,
                run: p.run,
                source,
            })
    }

    /// The ledgers of wrong visualisation passwords (dashboard, admin API).
    pub fn pins(&self) -> &PinGuard {
        &self.pins
    }

    /// Configures the stop switch (`[safety] stop_switch`: a name or UUID, see
    /// [`super::stop::resolve_stop_switch`]) and the admin page's stop ([`AdminStops`]).
    pub fn with_stop(mut self, switch: Option<String>, admin: AdminStops) -> Self {
        self.stop = StopGuard::new(switch, admin);
        self
    }

    /// The admin page's stop (set and lifted by the admin API only).
    pub fn admin_stop(&self) -> &AdminStops {
        &self.stop.admin
    }

    /// The configured stop switch (`[safety] stop_switch`), if any.
    pub fn stop_switch_setting(&self) -> Option<&str> {
        self.stop.setting()
    }

    /// The UUID of the control the stop switch names in the current model, or why it names
    /// none; `None` when no stop switch is configured.
    pub fn stop_switch(&self) -> Option<Result<String, String>> {
        self.stop.resolve(&self.home())
    }

    /// Whether `control` is the stop switch (commands to it are refused: lifting the stop is
    /// a person's act).
    pub fn is_the_stop_switch(&self, control: &Control) -> bool {
        matches!(self.stop_switch(), Some(Ok(u)) if u == control.uuid)
    }

    /// Whether the house is stopped, why and since when ([`super::stop`]), as a command is
    /// decided: the stop switch read through [`House::value`] (a pushed value of this session,
    /// a recent poll, else one HTTP read; unknown while the link is down) and the admin page's
    /// stop. [`House::act`] asks it before every command.
    pub fn stop_status(&self) -> StopStatus {
        self.stop.status(self, Look::Decide)
    }

    /// [`House::stop_status`] for showing it (`/health`, the dashboard, the admin page,
    /// `/metrics`): never asks the Miniserver (a switch value not heard yet shows as unknown)
    /// and changes nothing.
    pub fn stop_shown(&self) -> StopStatus {
        self.stop.status(self, Look::Show)
    }

    /// The Message Center's entries and the notifications as last read ([`Alerts`]).
    pub fn alerts(&self) -> AlertsSnapshot {
        self.alerts.snapshot()
    }

    /// Reads the Message Center's entries from the controller now, keeps them and publishes
    /// what changed for the active ones ([`AlertEvent`] on the bus). Errors: the structure
    /// file has no Message Center ([`ControllerError::Unsupported`]), or the controller's
    /// (noted in the snapshot's `last_error`; the entries read before stay).
    pub fn refresh_alerts(&self) -> Result<AlertsSnapshot, ControllerError> {
        let home = self.home();
        let Some(mc) = home.message_center.as_ref() else {
            return Err(ControllerError::Unsupported(
                "this Miniserver's structure file has no Message Center".into(),
            ));
        };
        match self.controller.alerts(mc) {
            Ok(entries) => {
                let events = self.alerts.replace(entries, SystemTime::now());
                // Before anyone is told: a reader woken by an event reads anew, never a
                // cached answer from before the list changed.
                self.bump();
                for e in events {
                    self.bus.publish(Event::Alert(Box::new(e)));
                }
                Ok(self.alerts.snapshot())
            }
            Err(e) => {
                // Said once per kind of failure: the watch asks again every few seconds.
                let message = e.to_string();
                if self.alerts.snapshot().last_error.as_deref() == Some(message.as_str()) {
                    log::debug!("Message Center {}: cannot read the entries: {e}", mc.name);
                } else {
                    log::warn!("Message Center {}: cannot read the entries: {e}", mc.name);
                }
                self.alerts.failed(&message);
                Err(e)
            }
        }
    }

    /// What `/metrics` shows of the house: active Message Center entries per severity (none
    /// listed when the structure file has no Message Center) and whether commands are stopped
    /// ([`House::stop_shown`]: no Miniserver round trip).
    pub fn metrics(&self) -> crate::metrics::HouseScrape {
        let active_alerts = if self.home().message_center.is_some() {
            self.alerts
                .snapshot()
                .active_counts()
                .iter()
                .map(|(s, n)| (s.as_str(), *n))
                .collect()
        } else {
            Vec::new()
        };
        crate::metrics::HouseScrape {
            active_alerts,
            stopped: self.stop_shown().stopped,
        }
    }

    /// Notes a notification the Miniserver pushed and, when it is new and `announce`,
    /// publishes it on the bus; see [`Alerts::notified`]. Returns whether it was published.
    pub fn notify(&self, notification: Notification, announce: bool) -> bool {
        if !self.alerts.notified(notification.clone(), announce) {
            return false;
        }
        log::info!(
            "Miniserver notification ({}): {}: {}",
            notification.level.as_str(),
            notification.title,
            notification.message
        );
        // What readers see changed (home://alerts lists the notifications): no cached answer
        // from before it. Bumped before it is told, so a reader woken by it reads anew.
        self.bump();
        self.bus
            .publish(Event::Alert(Box::new(AlertEvent::Notification(
                notification,
            ))));
        true
    }

    /// Marks the Message Center entry `id` read or confirms it ([`AlertOp`]) for `caller`
    /// (logged like every write), then reads the entries again and returns the entry as the
    /// Miniserver now lists it. Refused before anything is sent: while the house is stopped
    /// ([`ControllerError::Stopped`]), an id the Miniserver does not list (asked again before
    /// refusing when the list is older than [`ALERTS_FRESH`]: [`ControllerError::NoSuchAlert`]),
    /// a confirmation the entry does not
    /// offer ([`ControllerError::ActionNotOffered`]), the outbound command limits.
    pub fn act_on_alert(
        &self,
        id: &str,
        op: AlertOp,
        caller: &str,
    ) -> Result<Alert, ControllerError> {
        let home = self.home();
        let Some(mc) = home.message_center.as_ref() else {
            return Err(ControllerError::Unsupported(
                "this Miniserver's structure file has no Message Center".into(),
            ));
        };
        self.refuse_while_stopped(&mc.name, caller)?;
        let snapshot = self.alerts.snapshot();
        let entry = match snapshot.get(id) {
            Some(a) => a.clone(),
            // An id the list does not have: asked again only when the list is not fresh (a
            // caller guessing ids costs no read of the Miniserver each time).
            None if snapshot
                .fetched_at
                .and_then(|t| t.elapsed().ok())
                .is_none_or(|age| age > ALERTS_FRESH) =>
            {
                self.refresh_alerts()?
                    .get(id)
                    .cloned()
                    .ok_or_else(|| ControllerError::NoSuchAlert(id.to_string()))?
            }
            None => return Err(ControllerError::NoSuchAlert(id.to_string())),
        };
        if op == AlertOp::Confirm && !entry.offers(super::alerts::CONFIRM_ACTION) {
            return Err(ControllerError::ActionNotOffered {
                alert: entry.id.clone(),
                action: "confirm (action 1005)".into(),
                offered: entry
                    .actions
                    .iter()
                    .map(|a| format!("{} ({})", a.title, a.id))
                    .collect(),
            });
        }
        self.admit_command(&mc.uuid, &mc.name)?;
        let result = self.controller.alert_op(mc, &entry.id, op);
        match &result {
            Ok(()) => log::info!(
                "write by {caller}: Message Center entry {} ({}) {} -> ok",
                entry.title,
                entry.id,
                op.as_str()
            ),
            Err(e) => log::warn!(
                "write by {caller}: Message Center entry {} ({}) {} -> {e}",
                entry.title,
                entry.id,
                op.as_str()
            ),
        }
        result?;
        // The answer to the command carries no entry: read the list again (a failure here
        // leaves the entry as it was known, the command went through).
        Ok(match self.refresh_alerts() {
            Ok(snap) => snap.get(&entry.id).cloned().unwrap_or(entry),
            Err(_) => entry,
        })
    }

    /// Forgets the remembered primary values a command on `control` may change: its own, its
    /// sub-controls' and, for central blocks, those of the controls it lists in
    /// `details.controls` (a CentralAlarm disarms every alarm it lists).
    fn forget(&self, control: &Control) {
        fn own(c: &Control, out: &mut Vec<String>) {
            out.push(c.uuid.clone());
            for s in &c.sub_controls {
                own(s, out);
            }
        }
        let mut affected = Vec::new();
        own(control, &mut affected);
        let listed = control
            .details
            .get("controls")
            .and_then(serde_json::Value::as_array);
        if let Some(listed) = listed {
            let home = self.home();
            for entry in listed {
                let uuid = entry
                    .get("uuid")
                    .and_then(serde_json::Value::as_str)
                    .or_else(|| entry.as_str());
                if let Some(child) = uuid.and_then(|u| home.control(u)) {
                    own(child, &mut affected);
                }
            }
        }
        let now = SystemTime::now();
        let mut commanded = self.commanded.lock().unwrap_or_else(|e| e.into_inner());
        // Bounded: entries older than the max age no longer matter.
        commanded.retain(|_, at| now.duration_since(*at).unwrap_or_default() <= self.value_max_age);
        for uuid in affected {
            self.states.remove(&uuid);
            commanded.insert(uuid, now);
        }
        drop(commanded);
        self.bump();
    }

    /// Logs a write and forgets the remembered values it may change.
    fn finish(
        &self,
        control: &Control,
        action: &Action,
        caller: &str,
        result: Result<Option<Value>, ControllerError>,
    ) -> Result<Outcome, ControllerError> {
        match &result {
            Ok(v) => log::info!(
                "write by {caller}: {} ({}) {:?} -> ok {:?}",
                control.name,
                control.uuid,
                action,
                v
            ),
            Err(e) => log::warn!(
                "write by {caller}: {} ({}) {:?} -> {e}",
                control.name,
                control.uuid,
                action
            ),
        }
        self.forget(control);
        let value = result?;
        Ok(Outcome {
            value,
            at: SystemTime::now(),
        })
    }

    /// A text state of `control` as the Miniserver last pushed it (`lastBellEvents`,
    /// `address`), `None` when never pushed (an HTTP-only link sees primary values only).
    pub fn state_text(&self, control: &Control, state: &str) -> Option<String> {
        match self.states.get(control.state(state)?)?.value {
            Value::Text(t) => Some(t),
            Value::Number(n) => Some(n.to_string()),
        }
    }

    /// The rings of the intercom `control` with pictures, oldest first (its `lastBellEvents`,
    /// Miniserver local time `YYYYMMDDHHMMSS`), or `None` when the control is no camera with
    /// bell pictures or the state has not been pushed yet.
    pub fn bell_events(&self, control: &Control) -> Option<Vec<String>> {
        camera::camera_kind(control).filter(|k| k.has_bell_pictures())?;
        Some(camera::bell_events(
            &self.state_text(control, "lastBellEvents")?,
        ))
    }

    /// A picture of the camera or intercom `control`: `ask` the current one or a ring's,
    /// scaled so its long side is at most [`House::picture_max_side`] pixels. Refused before
    /// anything is sent
    /// ([`ControllerError::Unsupported`], `INVALID_PARAMETERS`) for a control that is no
    /// camera, a ring's picture of a kind that keeps none, and a ring that is not in the
    /// Miniserver's `lastBellEvents` (when the live link has pushed it; otherwise the
    /// Miniserver decides). Otherwise the controller fetches it
    /// ([`Controller::picture`]); its failures are [`ControllerError::Camera`] or the usual
    /// Miniserver errors. Nothing of the picture is kept.
    pub fn picture(
        &self,
        control: &Control,
        ask: PictureAsk,
    ) -> Result<CameraPicture, ControllerError> {
        let max_side = self.picture_max_side;
        let kind = camera::camera_kind(control).ok_or_else(|| {
            ControllerError::Unsupported(format!(
                "{} is not a camera or intercom (a {})",
                control.name, control.kind
            ))
        })?;
        if let PictureAsk::BellEvent(stamp) = &ask {
            if !kind.has_bell_pictures() {
                return Err(ControllerError::Unsupported(format!(
                    "{} ({}) keeps no pictures of rings; ask for its picture now",
                    control.name,
                    kind.describe()
                )));
            }
            if let Some(known) = self.bell_events(control) {
                if !known.contains(stamp) {
                    let listed: Vec<String> = known
                        .iter()
                        .rev()
                        .take(5)
                        .map(|s| camera::stamp_text(s))
                        .collect();
                    return Err(ControllerError::InvalidValue(format!(
                        "{} has no ring at {:?} (Miniserver time, YYYYMMDDHHMMSS); {}",
                        control.name,
                        stamp,
                        if listed.is_empty() {
                            "it lists no rings".to_string()
                        } else {
                            format!("its latest rings: {}", listed.join(", "))
                        }
                    )));
                }
            }
        }
        let address = if kind == CameraKind::IntercomV2 {
            let a = self
                .state_text(control, "address")
                .filter(|a| !a.trim().is_empty());
            if a.is_none() {
                return Err(ControllerError::Camera {
                    failure: CameraFailure::NoAddress,
                    message: format!(
                        "{} has not reported its address yet (the address state of the Intercom)",
                        control.name
                    ),
                });
            }
            a
        } else {
            None
        };
        let request = PictureRequest {
            kind,
            ask,
            address,
            max_side: max_side.max(1),
        };
        self.controller.picture(control, &request)
    }

    /// Whether `control` was commanded within the max age: until then its pushed value may
    /// predate the command's effect (an event in flight, or an initial table taken before
    /// the command and delivered after it), so [`House::value`] asks the Miniserver.
    fn commanded_recently(&self, control: &Control) -> bool {
        let commanded = self.commanded.lock().unwrap_or_else(|e| e.into_inner());
        commanded
            .get(&control.uuid)
            .is_some_and(|at| at.elapsed().unwrap_or_default() <= self.value_max_age)
    }

    /// The newest primary value of `control` the state store knows, without asking the
    /// Miniserver: its pushed primary state ([`Primary`]) or the value last read or polled
    /// under its own `uuidAction`, whichever changed last. `None` when neither is known.
    ///
    /// A value *pushed* under the `uuidAction` is a named state that shares the UUID (real
    /// structure files do this: an Alarm's or SmokeAlarm's `sensors` text, a Daytimer's
    /// `entriesAndDefaultValue`), never the primary value unless [`Primary`] names that state,
    /// so only a read or polled value counts as the control's own.
    pub fn known_value(&self, control: &Control) -> Option<StateValue> {
        let pushed = Primary::of(control).read(control, &self.states);
        let own = self
            .states
            .get(&control.uuid)
            .filter(|v| v.source != Source::Event);
        match (pushed, own) {
            (Some(p), Some(o)) => Some(if o.seq > p.seq { o } else { p }),
            (p, o) => p.or(o),
        }
    }

    /// The control's primary value, decided in one place. For `value_max_age` after a command
    /// to the control it is read from the Miniserver (read your own write: a pushed value may
    /// predate the command's effect). Otherwise it is the newest of its pushed primary state
    /// ([`Primary`], from the Miniserver's event tables) and the value last read or polled
    /// under its own `uuidAction`. While the WebSocket is up a value pushed in this session is
    /// current whatever its age (the Miniserver pushes every change; a value from before a
    /// reconnect is not, until the new initial tables replace it); a read or polled value is
    /// trusted for the max age, then read again from the controller (and remembered). While
    /// the link is [`LinkMode::Disconnected`], a remembered value is answered however old it
    /// is (callers show its age, [`StateValue::age_secs`]) instead of waiting for a timeout;
    /// without one the read is tried and fails with the controller's error
    /// (`CONNECTION_ERROR`).
    pub fn value(&self, control: &Control) -> Result<StateValue, ControllerError> {
        let (mode, session) = self.link.mode_since();
        // Read your own write: for `value_max_age` after a command the Miniserver is asked
        // (its answer is the state the command left), whatever was pushed meanwhile.
        if mode != LinkMode::Disconnected && self.commanded_recently(control) {
            return self.refresh(control, Source::Read);
        }
        if let Some(v) = self.known_value(control) {
            // While the WebSocket is up the Miniserver pushes every change of a state, so a
            // value pushed in this session is current however old (one pushed before an
            // outage is not: the new session's initial tables replace it, and until they
            // have, the Miniserver is asked); a read or polled one is trusted for
            // `value_max_age`; while disconnected, whatever is known is answered with its age.
            let current = match mode {
                LinkMode::Disconnected => true,
                LinkMode::WebSocket if v.source == Source::Event && v.updated >= session => true,
                _ => v.updated.elapsed().unwrap_or_default() <= self.value_max_age,
            };
            if current {
                return Ok(v);
            }
        }
        self.refresh(control, Source::Read)
    }
}

impl SwitchSource for House {
    fn model(&self) -> Arc<Home> {
        self.home()
    }

    fn link_now(&self) -> LinkSnapshot {
        self.link.snapshot()
    }

    fn switch_value(&self, control: &Control) -> Result<StateValue, String> {
        self.value(control).map_err(|e| e.to_string())
    }

    fn switch_known(&self, control: &Control) -> Option<StateValue> {
        self.known_value(control)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::home::model::{ControlKind, StateRef};

    struct Offline;

    impl Controller for Offline {
        fn command(&self, c: &Control, _: &Action) -> Result<Command, ControllerError> {
            Err(ControllerError::Unsupported(format!(
                "{} (offline)",
                c.name
            )))
        }
        fn act(&self, _: &Control, _: &Action) -> Result<Option<Value>, ControllerError> {
            Err(ControllerError::Connection("offline".into()))
        }
        fn read(&self, _: &Control) -> Result<Value, ControllerError> {
            Err(ControllerError::Connection("offline".into()))
        }
    }

    /// An Alarm whose `sensors` text state has the control's own UUID, as in real structure
    /// files: the pushed text is not the alarm's value, whatever order the events came in.
    #[test]
    fn a_state_pushed_under_the_uuid_action_is_not_the_primary_value() {
        let mut alarm = Control::new("alarm", "Alarm", ControlKind::Alarm);
        alarm
            .states
            .insert("armed".into(), StateRef::Uuid("st-armed".into()));
        alarm
            .states
            .insert("sensors".into(), StateRef::Uuid("alarm".into()));
        let house = House::new(Home::default(), Arc::new(Offline), Duration::from_secs(60));
        let t = SystemTime::now();
        house.record(
            "st-armed",
            Some("alarm"),
            Value::Number(1.0),
            t,
            Source::Event,
        );
        house.record(
            "alarm",
            Some("alarm"),
            Value::Text(String::new()),
            t,
            Source::Event,
        );
        let v = house
            .known_value(&alarm)
            .expect("the armed state was pushed");
        assert_eq!(v.value, Value::Number(1.0));
        // A value read over HTTP under the uuidAction is the control's own, newest wins.
        house.record("alarm", Some("alarm"), Value::Number(0.0), t, Source::Read);
        assert_eq!(house.known_value(&alarm).unwrap().value, Value::Number(0.0));
    }
}
