//! The stop: a person in the house can stop the assistant from where they are, and every
//! command is refused while it holds. Decided here, once; [`House::act`] (the last moment
//! before anything is sent) asks [`House::stop_status`] before every command.
//!
//! Two stops, either of which holds the house:
//! - **the stop switch** (`[safety] stop_switch`): a control of the house, named by name or
//!   UUID, that a person switches from any Loxone app or wall button: a Virtual Status (the
//!   structure file's `InfoOnlyDigital`, state `active`), a Virtual Input or a Switch
//!   ([`is_stop_switch`]). On (1) lets commands through; off (0) stops them; **anything else
//!   stops them too (fail closed)**: a value that is neither, the link to the Miniserver down, a
//!   value not yet received that cannot be read, a name that no longer names one control after
//!   the structure file changed;
//! - **the admin page's stop** ([`AdminStops`]), for houses without such a control: stored in
//!   the data directory (`stop.json`), so it survives a restart; a file that cannot be read
//!   holds the house stopped until an admin lifts the stop.
//!
//! Lifting either is a person's act: switching the control on in Loxone, or the admin page.
//! No tool can: commands to the stop switch itself are refused (`House::act`) and the admin
//! stop is lifted only through the admin API. Reads are never stopped.
//!
//! The state machine per stop: running -> stopped (switch off, unknown, or the admin's stop)
//! -> running (switch on and known, admin stop lifted); [`StopStatus::since`] says since when
//! the house is in its current state.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::link::{LinkMode, LinkSnapshot};
use super::model::{Control, ControlKind, Home};
use super::resolve::ResolveError;
use super::state::{StateValue, Value};

/// Name of the admin stop's file in the data directory.
pub const STOP_FILE: &str = "stop.json";

/// Largest admin stop file read (it holds a time and a key name).
const MAX_STOP_FILE: u64 = 16 * 1024;

/// Whether `c` can serve as the stop switch: a Virtual Status (`InfoOnlyDigital`, or the
/// `VirtualStatus` type some tools write), a Virtual Input or a Switch (`Switch`), each with
/// an `active` state.
pub fn is_stop_switch(c: &Control) -> bool {
    let kind = matches!(c.kind, ControlKind::InfoOnlyDigital | ControlKind::Switch)
        || matches!(&c.kind, ControlKind::Unknown(t) if t == "VirtualStatus");
    kind && c.states.contains_key("active")
}

/// Resolves the configured stop switch `query` (name, room-qualified name or UUID, see
/// [`Home::resolve_control`]) among the controls that can serve as one ([`is_stop_switch`]).
/// Errors list the candidates (ambiguous) or the nearest names (missing).
pub fn resolve_stop_switch<'a>(home: &'a Home, query: &str) -> Result<&'a Control, ResolveError> {
    home.resolve_control(query, None, &is_stop_switch)
}

/// What the stop switch says.
#[derive(Debug, Clone, PartialEq)]
pub enum SwitchReading {
    /// On (1): the assistant may act.
    On,
    /// Off (0): stopped.
    Off,
    /// Not known, with why: stopped (fail closed).
    Unknown(String),
}

impl SwitchReading {
    /// `on`, `off` or `unknown`.
    pub fn as_str(&self) -> &'static str {
        match self {
            SwitchReading::On => "on",
            SwitchReading::Off => "off",
            SwitchReading::Unknown(_) => "unknown",
        }
    }

    /// A value of the switch: exactly 1 is on, exactly 0 is off, anything else (another
    /// number, a text) is unknown.
    pub fn of(value: &Value) -> SwitchReading {
        match value {
            Value::Number(n) if *n == 1.0 => SwitchReading::On,
            Value::Number(n) if *n == 0.0 => SwitchReading::Off,
            Value::Number(n) => {
                SwitchReading::Unknown(format!("it reads {n}, neither on (1) nor off (0)"))
            }
            Value::Text(t) => SwitchReading::Unknown(format!(
                "it reads the text {:?}, neither on (1) nor off (0)",
                t.chars().take(40).collect::<String>()
            )),
        }
    }
}

/// The stop switch as last seen.
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchStatus {
    /// The configured name or UUID (`[safety] stop_switch`).
    pub configured: String,
    /// The control it names now (`None` when it names none or several).
    pub uuid: Option<String>,
    pub name: Option<String>,
    /// The control's room name.
    pub room: Option<String>,
    pub reading: SwitchReading,
    /// Since when it reads so (on, off or unknown).
    pub since: SystemTime,
}

/// The admin page's stop while it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct AdminStop {
    pub since: SystemTime,
    /// Who stopped: the admin key's name (or why the house is held, for a stop file that
    /// cannot be read).
    pub by: String,
}

/// Whether the house is stopped, why and since when. Built by `House::stop_status`.
#[derive(Debug, Clone, PartialEq)]
pub struct StopStatus {
    pub stopped: bool,
    /// Since when the house is stopped (the earliest stop that holds) or, while running,
    /// since when the stop switch reads on (`None`: no stop switch, and no stop since start).
    pub since: Option<SystemTime>,
    /// The stop switch, if one is configured.
    pub switch: Option<SwitchStatus>,
    /// The admin page's stop, while it holds.
    pub admin: Option<AdminStop>,
}

impl StopStatus {
    /// What stops the house: `stop_switch` (off or unknown) and/or `admin`.
    pub fn stopped_by(&self) -> Vec<&'static str> {
        let mut by = Vec::new();
        if self
            .switch
            .as_ref()
            .is_some_and(|s| s.reading != SwitchReading::On)
        {
            by.push("stop_switch");
        }
        if self.admin.is_some() {
            by.push("admin");
        }
        by
    }

    /// Who can lift the stop and where, in words.
    pub fn how_to_lift(&self) -> String {
        let mut ways = Vec::new();
        if let Some(s) = &self.switch {
            let name = s.name.as_deref().unwrap_or(&s.configured);
            match &s.reading {
                SwitchReading::On => {}
                SwitchReading::Off => ways.push(format!(
                    "a person switches \"{name}\" on again in the Loxone app, at its wall \
                     button or in Loxone Config"
                )),
                SwitchReading::Unknown(_) => ways.push(format!(
                    "commands flow again once the Miniserver reports \"{name}\" on (check the \
                     link to the Miniserver; a person switches it on in the Loxone app)"
                )),
            }
        }
        if self.admin.is_some() {
            ways.push("an admin lifts the admin stop on the admin page (/admin/)".to_string());
        }
        ways.join("; ")
    }

    /// The whole refusal: what stops the house, since when, that nothing was sent, and who
    /// can lift it where.
    pub fn explain(&self) -> String {
        let mut why = Vec::new();
        if let Some(s) = &self.switch {
            let name = s.name.as_deref().unwrap_or(&s.configured);
            let since = crate::time::iso8601(s.since);
            match &s.reading {
                SwitchReading::On => {}
                SwitchReading::Off => {
                    why.push(format!("the stop switch \"{name}\" is off since {since}"))
                }
                SwitchReading::Unknown(m) => why.push(format!(
                    "the state of the stop switch \"{name}\" is unknown since {since} ({m}), \
                     which counts as stop"
                )),
            }
        }
        if let Some(a) = &self.admin {
            why.push(format!(
                "the admin page's stop holds since {} ({})",
                crate::time::iso8601(a.since),
                a.by
            ));
        }
        format!(
            "the assistant is stopped: {}; nothing was sent. Reads keep working. {}",
            why.join(" and "),
            self.how_to_lift()
        )
    }

    /// `{"stopped", "since", "stopped_by": [...], "lift", "stop_switch": {"configured",
    /// "uuid", "name", "room", "state" (on/off/unknown), "reason", "since"} | null, "admin":
    /// {"since", "by"} | null}`, times ISO 8601 UTC: what `/health`, the dashboard and the
    /// `ASSISTANT_STOPPED` error show.
    pub fn to_json(&self) -> serde_json::Value {
        use crate::time::iso8601;
        serde_json::json!({
            "stopped": self.stopped,
            "since": self.since.map(iso8601),
            "stopped_by": self.stopped_by(),
            "lift": if self.stopped { Some(self.how_to_lift()) } else { None },
            "stop_switch": self.switch.as_ref().map(|s| serde_json::json!({
                "configured": s.configured,
                "uuid": s.uuid,
                "name": s.name,
                "room": s.room,
                "state": s.reading.as_str(),
                "reason": match &s.reading {
                    SwitchReading::Unknown(m) => Some(m.as_str()),
                    _ => None,
                },
                "since": iso8601(s.since),
            })),
            "admin": self.admin.as_ref().map(|a| serde_json::json!({
                "since": iso8601(a.since),
                "by": a.by,
            })),
        })
    }
}

impl fmt::Display for StopStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.explain())
    }
}

/// Why the admin stop could not be stored.
#[derive(Debug)]
pub struct StopFileError(pub String);

impl fmt::Display for StopFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StopFileError {}

/// The admin page's stop, kept in a file (`<data_dir>/stop.json`: `{"since": <Unix s>, "by":
/// "<key name>"}` while it holds; no file while it does not) or in memory only (`--demo`).
#[derive(Debug, Default)]
pub struct AdminStops {
    path: Option<PathBuf>,
    state: Mutex<Option<AdminStop>>,
}

impl AdminStops {
    /// A stop kept in memory only (lost on restart).
    pub fn in_memory() -> AdminStops {
        AdminStops::default()
    }

    /// The stop kept in `path`, as that file says now. A file that cannot be read or parsed
    /// holds the house stopped (fail closed; logged) until an admin lifts the stop, which
    /// rewrites it.
    pub fn open(path: &Path) -> AdminStops {
        let state = match read_stop_file(path) {
            Ok(s) => s,
            Err(e) => {
                log::error!(
                    "the admin stop file {} cannot be read ({e}); the assistant stays stopped \
                     until an admin lifts the stop on the admin page",
                    path.display()
                );
                Some(AdminStop {
                    since: SystemTime::now(),
                    by: format!("the stop file {} cannot be read: {e}", path.display()),
                })
            }
        };
        if let Some(s) = &state {
            log::warn!(
                "the assistant is stopped on the admin page since {} ({})",
                crate::time::iso8601(s.since),
                s.by
            );
        }
        AdminStops {
            path: Some(path.to_path_buf()),
            state: Mutex::new(state),
        }
    }

    /// The stop while it holds.
    pub fn current(&self) -> Option<AdminStop> {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Stops the house (`by`: the admin key's name). The stop holds at once, whether or not
    /// the file could be written (the error says it will not survive a restart). Stopping a
    /// stopped house keeps the first stop's time.
    pub fn stop(&self, by: &str) -> Result<AdminStop, StopFileError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let stop = match &*state {
            Some(s) => s.clone(),
            None => AdminStop {
                since: SystemTime::now(),
                by: by.to_string(),
            },
        };
        *state = Some(stop.clone());
        drop(state);
        log::warn!("the assistant was stopped on the admin page by {by}");
        if let Some(path) = &self.path {
            write_stop_file(path, &stop)?;
        }
        Ok(stop)
    }

    /// Lifts the stop (`by`: the admin key's name). The file is removed first: when that
    /// fails, the stop holds (the error says why).
    pub fn lift(&self, by: &str) -> Result<(), StopFileError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(path) = &self.path {
            match std::fs::remove_file(path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(StopFileError(format!(
                        "cannot remove {}: {e}; the stop holds",
                        path.display()
                    )))
                }
            }
        }
        if state.take().is_some() {
            log::warn!("the admin stop was lifted on the admin page by {by}");
        }
        Ok(())
    }
}

fn read_stop_file(path: &Path) -> Result<Option<AdminStop>, String> {
    use std::io::Read;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let mut text = String::new();
    file.take(MAX_STOP_FILE)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let since = v
        .get("since")
        .and_then(serde_json::Value::as_u64)
        .ok_or("no \"since\" (Unix seconds)")?;
    let by = v
        .get("by")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("an admin")
        .chars()
        .take(200)
        .collect();
    Ok(Some(AdminStop {
        since: SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(since),
        by,
    }))
}

/// Writes the stop atomically (a temporary file renamed over it; mode 0600 on Unix).
fn write_stop_file(path: &Path, stop: &AdminStop) -> Result<(), StopFileError> {
    use std::io::Write;
    let fail = |e: std::io::Error| {
        StopFileError(format!(
            "cannot write {}: {e}; the stop holds until restart only",
            path.display()
        ))
    };
    let since = stop
        .since
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let text = serde_json::json!({"since": since, "by": stop.by}).to_string();
    let tmp = path.with_extension("json.tmp");
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut f = options.open(&tmp).map_err(fail)?;
    f.write_all(text.as_bytes()).map_err(fail)?;
    f.sync_all().map_err(fail)?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(fail)
}

/// The stop switch resolved against one model: its `uuidAction`, or why it names none.
type Resolved = (Arc<Home>, Result<String, String>);

/// The house's stop: the configured switch, the admin stop, and what was last seen (for
/// "since when").
#[derive(Debug, Default)]
pub(super) struct StopGuard {
    /// `[safety] stop_switch` as configured.
    switch: Option<String>,
    /// The switch resolved against a model (resolved again when the model is replaced).
    resolved: Mutex<Option<Resolved>>,
    pub(super) admin: AdminStops,
    /// The switch's last reading kind (`on`, `off`, `unknown`) and since when it holds.
    seen: Mutex<Option<(&'static str, SystemTime)>>,
}

impl StopGuard {
    pub(super) fn new(switch: Option<String>, admin: AdminStops) -> StopGuard {
        StopGuard {
            switch: switch.filter(|s| !s.trim().is_empty()),
            admin,
            ..StopGuard::default()
        }
    }
}

/// What the stop needs of the house to tell the switch's reading (the house implements it):
/// the model, the link, and the switch's value by the house's one rule for a control's value.
pub trait SwitchSource {
    /// The current model.
    fn model(&self) -> Arc<Home>;
    /// The link to the Miniserver now.
    fn link_now(&self) -> LinkSnapshot;
    /// The control's primary value (the house's `value`, which may ask the Miniserver), or
    /// why it cannot be had.
    fn switch_value(&self, control: &Control) -> Result<StateValue, String>;
    /// The control's primary value as last heard, without asking anyone (`None`: not yet).
    fn switch_known(&self, control: &Control) -> Option<StateValue>;
}

/// How a status is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Look {
    /// To decide a command: the switch's value is read if need be, and a change of its
    /// reading is remembered (with since when).
    Decide,
    /// To show it (`/health`, the dashboard, the admin page, `/metrics`): nothing is asked of
    /// the Miniserver, nothing is remembered; a value not heard yet shows as unknown.
    Show,
}

impl StopGuard {
    /// The configured stop switch (`[safety] stop_switch`), if any.
    pub(super) fn setting(&self) -> Option<&str> {
        self.switch.as_deref()
    }

    /// The UUID of the control the stop switch names in `home`, or why it names none;
    /// `None` when no stop switch is configured. Resolved once per model.
    pub(super) fn resolve(&self, home: &Arc<Home>) -> Option<Result<String, String>> {
        let query = self.switch.as_deref()?;
        let mut resolved = self.resolved.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((model, r)) = &*resolved {
            if Arc::ptr_eq(model, home) {
                return Some(r.clone());
            }
        }
        let r = resolve_stop_switch(home, query)
            .map(|c| c.uuid.clone())
            .map_err(|e| e.to_string());
        if let Err(e) = &r {
            log::error!(
                "[safety] stop_switch {query:?} names no single control that can serve as a \
                 stop switch (a Virtual Status, Virtual Input or Switch): {e}; the assistant \
                 stays stopped"
            );
        }
        *resolved = Some((home.clone(), r.clone()));
        Some(r)
    }

    /// Whether the house is stopped, why and since when (see the module docs), reading the
    /// switch through `house`; while the link is down its value is unknown whatever was last
    /// heard.
    pub(super) fn status(&self, house: &dyn SwitchSource, look: Look) -> StopStatus {
        let switch = self.switch.as_ref().map(|configured| {
            let home = house.model();
            let resolved = self
                .resolve(&home)
                .unwrap_or_else(|| Err("no stop switch is configured".into()));
            let (uuid, name, room, reading, fact) = match resolved {
                Ok(uuid) => match home.control(&uuid) {
                    Some(c) => {
                        let (reading, fact) = switch_reading(house, c, look);
                        let room = home.room_name(c).map(str::to_string);
                        (Some(uuid), Some(c.name.clone()), room, reading, fact)
                    }
                    None => (
                        None,
                        None,
                        None,
                        SwitchReading::Unknown("the control is gone".into()),
                        None,
                    ),
                },
                Err(e) => (
                    None,
                    None,
                    None,
                    SwitchReading::Unknown(format!("the name resolves to no single control: {e}")),
                    None,
                ),
            };
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            let since = match &*seen {
                Some((kind, since)) if *kind == reading.as_str() => *since,
                _ if look == Look::Show => fact.unwrap_or_else(SystemTime::now),
                _ => {
                    let since = fact.unwrap_or_else(SystemTime::now);
                    if seen.is_some() || reading != SwitchReading::On {
                        log::warn!(
                            "stop switch {configured:?}: {}{}",
                            reading.as_str(),
                            match &reading {
                                SwitchReading::Unknown(m) => format!(" ({m})"),
                                _ => String::new(),
                            }
                        );
                    }
                    *seen = Some((reading.as_str(), since));
                    since
                }
            };
            SwitchStatus {
                configured: configured.clone(),
                uuid,
                name,
                room,
                reading,
                since,
            }
        });
        let admin = self.admin.current();
        let switch_stops = switch.as_ref().filter(|s| s.reading != SwitchReading::On);
        let stopped = switch_stops.is_some() || admin.is_some();
        let since = if stopped {
            [
                switch_stops.map(|s| s.since),
                admin.as_ref().map(|a| a.since),
            ]
            .into_iter()
            .flatten()
            .min()
        } else {
            switch.as_ref().map(|s| s.since)
        };
        StopStatus {
            stopped,
            since,
            switch,
            admin,
        }
    }
}

/// The stop switch's reading and, when known, the time of the fact behind it.
fn switch_reading(
    house: &dyn SwitchSource,
    c: &Control,
    look: Look,
) -> (SwitchReading, Option<SystemTime>) {
    let link = house.link_now();
    if link.mode == LinkMode::Disconnected {
        return (
            SwitchReading::Unknown("the link to the Miniserver is down".into()),
            Some(link.since),
        );
    }
    let value = match look {
        Look::Decide => house
            .switch_value(c)
            .map_err(|e| format!("cannot read it: {e}")),
        Look::Show => house
            .switch_known(c)
            .ok_or_else(|| "not received yet".to_string()),
    };
    match value {
        Ok(v) => (SwitchReading::of(&v.value), Some(v.updated)),
        Err(e) => (SwitchReading::Unknown(e), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switch_values_fail_closed() {
        assert_eq!(SwitchReading::of(&Value::Number(1.0)), SwitchReading::On);
        assert_eq!(SwitchReading::of(&Value::Number(0.0)), SwitchReading::Off);
        assert!(matches!(
            SwitchReading::of(&Value::Number(0.5)),
            SwitchReading::Unknown(_)
        ));
        assert!(matches!(
            SwitchReading::of(&Value::Text("1".into())),
            SwitchReading::Unknown(_)
        ));
    }

    fn temp_dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "home-mcp-stop-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn the_admin_stop_survives_a_restart_and_lifts() {
        let dir = temp_dir("restart");
        let path = dir.join(STOP_FILE);
        let stops = AdminStops::open(&path);
        assert_eq!(stops.current(), None);
        let first = stops.stop("owner key").unwrap();
        stops.stop("second").unwrap();
        assert_eq!(
            stops.current().unwrap().by,
            "owner key",
            "the first stop's time stays"
        );
        let again = AdminStops::open(&path);
        let held = again.current().expect("held after restart");
        assert_eq!(held.by, "owner key");
        assert_eq!(
            held.since
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_secs(),
            first
                .since
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_secs()
        );
        again.lift("owner key").unwrap();
        assert_eq!(again.current(), None);
        assert_eq!(AdminStops::open(&path).current(), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_unreadable_stop_file_holds_the_house() {
        let dir = temp_dir("corrupt");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(STOP_FILE);
        std::fs::write(&path, b"{not json").unwrap();
        let stops = AdminStops::open(&path);
        assert!(stops.current().unwrap().by.contains("cannot be read"));
        stops.lift("admin").unwrap();
        assert_eq!(AdminStops::open(&path).current(), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
