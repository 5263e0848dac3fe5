//! The house's own alerts: what the Miniserver's Message Center (Loxone's "System Status")
//! reports (an extension or Air device offline, a battery low, a restart, no internet), and the
//! notifications it pushes to open connections. Controller-independent: the Loxone adapter
//! (`loxone::message_center`) reads the entries and notifications into these types; tools,
//! resources, the dashboard and `/metrics` read them from the [`Alerts`] store of the house.
//!
//! Every change of what is active is published on the house's change bus as an
//! [`Event::Alert`](super::bus::Event::Alert) ([`AlertEvent`]): an entry raised, cleared
//! (turned historic or gone), updated (read, confirmed), or a notification. The store keeps the
//! newest entry list, when it was fetched and the last error, and the last
//! [`MAX_NOTIFICATIONS`] notifications.
//!
//! Severity words follow Loxone's knowledge base (Information, Warning, Important, Critical, in
//! that order, 1-4); notification levels follow the structure file docs (`lvl` 1 Info, 2 Error,
//! 3 SystemError).

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Mutex;
use std::time::SystemTime;

use super::model::Home;

/// The Message Center's action id of "confirm" (acknowledge) an entry, per the Message Center
/// plugin of LoxYourLife (research intercom-alerts §2).
pub const CONFIRM_ACTION: u32 = 1005;

/// Notifications kept for readers (the newest last); older ones are forgotten.
pub const MAX_NOTIFICATIONS: usize = 20;

/// Notification ids remembered to tell a repeated one (the initial event table after a
/// reconnect carries the last one again) from a new one.
const SEEN_NOTIFICATIONS: usize = 256;

/// How serious an entry is: the Message Center's `severity` 1-4 (Loxone knowledge base
/// "System Status": Information, Warning, Important, Critical).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Info,
    Warning,
    Important,
    Critical,
}

impl Severity {
    /// Every severity, mildest first.
    pub const ALL: [Severity; 4] = [
        Severity::Info,
        Severity::Warning,
        Severity::Important,
        Severity::Critical,
    ];

    /// The Message Center's number: 1 info, 2 warning, 3 important, 4 and above critical;
    /// 0 or less is read as info (the mildest, never hidden).
    pub fn from_level(n: i64) -> Severity {
        match n {
            i64::MIN..=1 => Severity::Info,
            2 => Severity::Warning,
            3 => Severity::Important,
            _ => Severity::Critical,
        }
    }

    /// `info`, `warning`, `important` or `critical`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Important => "important",
            Severity::Critical => "critical",
        }
    }

    /// Parses [`Severity::as_str`]'s words (case-insensitive).
    pub fn parse(s: &str) -> Option<Severity> {
        Severity::ALL
            .into_iter()
            .find(|v| v.as_str().eq_ignore_ascii_case(s.trim()))
    }

    /// The MCP logging level (RFC 5424 names) of a log message about it: info, warning,
    /// error (important), critical.
    pub fn log_level(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Important => "error",
            Severity::Critical => "critical",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Something the owner can do about an entry (`actions[]` of the entry): its id and title.
/// Only [`CONFIRM_ACTION`] is carried out by this server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertAction {
    pub id: u32,
    pub title: String,
}

/// One Message Center entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    /// `entryUuid`: the id commands name.
    pub id: String,
    /// `eventId`: Loxone's kind of event (503 restart, 1121 device offline, ...), if given.
    pub event_id: Option<i64>,
    pub severity: Severity,
    pub title: String,
    /// `desc` as plain text (the Miniserver sends HTML), bounded.
    pub description: String,
    /// `roomUuid`, if the entry names a room.
    pub room: Option<String>,
    /// `affectedName`: the device or extension concerned, if named.
    pub affected: Option<String>,
    /// `affectedUuids`: controls or devices concerned.
    pub affected_uuids: Vec<String>,
    /// `installationPlace`, if given.
    pub installation_place: Option<String>,
    /// The earliest of `timestamps`: since when it happens.
    pub since: Option<SystemTime>,
    /// The latest of `timestamps`: when it last happened.
    pub last: Option<SystemTime>,
    /// `isHistoric`: no longer active.
    pub historic: bool,
    /// `setHistoricAt`.
    pub historic_at: Option<SystemTime>,
    /// `readAt`: when someone marked it read.
    pub read_at: Option<SystemTime>,
    /// `confirmedAt`: when someone confirmed it.
    pub confirmed_at: Option<SystemTime>,
    /// `actions`: what the owner can do.
    pub actions: Vec<AlertAction>,
    /// `helpLink`, if given.
    pub help_link: Option<String>,
}

impl Alert {
    /// `{"id", "severity" (word), "title", "description", "room" (name, else the UUID; null),
    /// "affected" (name; null), "since", "last", "historic", "historic_at", "read",
    /// "read_at", "confirmed", "confirmed_at", "can_confirm", "actions": [{"id", "title"}],
    /// "event_id", "help_link"}`; times ISO 8601 UTC or null. What tools, resources, the
    /// dashboard and log messages show of an entry.
    pub fn to_json(&self, home: &Home) -> serde_json::Value {
        let t = |t: Option<SystemTime>| t.map(crate::time::iso8601);
        serde_json::json!({
            "id": self.id,
            "severity": self.severity.as_str(),
            "title": self.title,
            "description": self.description,
            "room": self.room.as_deref().map(|r| home.room(r).map_or(r, |room| room.name.as_str())),
            "affected": self.affected,
            "since": t(self.since),
            "last": t(self.last),
            "historic": self.historic,
            "historic_at": t(self.historic_at),
            "read": self.read_at.is_some(),
            "read_at": t(self.read_at),
            "confirmed": self.confirmed_at.is_some(),
            "confirmed_at": t(self.confirmed_at),
            "can_confirm": self.offers(CONFIRM_ACTION),
            "actions": self.actions.iter().map(|a| serde_json::json!({"id": a.id, "title": a.title})).collect::<Vec<_>>(),
            "event_id": self.event_id,
            "help_link": self.help_link,
        })
    }

    /// One line about the entry: `"critical: Extension offline (Keller) · Tree Extension,
    /// since 2026-11-27T10:15:00Z"` (the room and the affected device when given).
    pub fn line(&self, home: &Home) -> String {
        let mut out = format!("{}: {}", self.severity, self.title);
        if let Some(room) = self.room.as_deref().and_then(|r| home.room(r)) {
            out.push_str(&format!(" ({})", room.name));
        }
        if let Some(a) = self.affected.as_deref().filter(|a| *a != self.title) {
            out.push_str(&format!(" · {a}"));
        }
        if let Some(t) = self.since {
            out.push_str(&format!(", since {}", crate::time::iso8601(t)));
        }
        out
    }

    /// Whether the entry is still active (not historic).
    pub fn is_active(&self) -> bool {
        !self.historic
    }

    /// Whether the entry offers the action `id`.
    pub fn offers(&self, id: u32) -> bool {
        self.actions.iter().any(|a| a.id == id)
    }
}

/// What the house can do with an entry on the owner's behalf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlertOp {
    /// Mark it read (Message Center `readEntry/{entry}`).
    Read,
    /// Confirm it (the entry's action [`CONFIRM_ACTION`]); only when the entry offers it.
    Confirm,
}

impl AlertOp {
    /// `read` or `confirm`.
    pub fn as_str(self) -> &'static str {
        match self {
            AlertOp::Read => "read",
            AlertOp::Confirm => "confirm",
        }
    }
}

/// The level of a pushed notification (`data.lvl` per Loxone structure file docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotificationLevel {
    /// 1 (and anything unknown).
    Info,
    /// 2.
    Error,
    /// 3.
    SystemError,
}

impl NotificationLevel {
    /// `lvl` 2 error, 3 system error, anything else info.
    pub fn from_level(n: i64) -> NotificationLevel {
        match n {
            2 => NotificationLevel::Error,
            3 => NotificationLevel::SystemError,
            _ => NotificationLevel::Info,
        }
    }

    /// `info`, `error` or `system_error`.
    pub fn as_str(self) -> &'static str {
        match self {
            NotificationLevel::Info => "info",
            NotificationLevel::Error => "error",
            NotificationLevel::SystemError => "system_error",
        }
    }

    /// The MCP logging level of a log message about it: info, error, critical.
    pub fn log_level(self) -> &'static str {
        match self {
            NotificationLevel::Info => "info",
            NotificationLevel::Error => "error",
            NotificationLevel::SystemError => "critical",
        }
    }
}

impl Notification {
    /// `{"uid", "at", "title", "message", "level", "control": {"uuid", "name"} | null}`.
    pub fn to_json(&self, home: &Home) -> serde_json::Value {
        serde_json::json!({
            "uid": self.uid,
            "at": self.at.map(crate::time::iso8601),
            "title": self.title,
            "message": self.message,
            "level": self.level.as_str(),
            "control": self.control.as_deref().map(|u| serde_json::json!({
                "uuid": u,
                "name": home.control(u).map(|c| c.name.as_str()),
            })),
        })
    }
}

impl AlertEvent {
    /// `alert_raised`, `alert_cleared`, `alert_updated` or `notification`.
    pub fn kind(&self) -> &'static str {
        match self {
            AlertEvent::Raised(_) => "alert_raised",
            AlertEvent::Cleared(_) => "alert_cleared",
            AlertEvent::Updated(_) => "alert_updated",
            AlertEvent::Notification(_) => "notification",
        }
    }

    /// The MCP logging level of a log message about it (the entry's severity, the
    /// notification's level; a cleared entry is `info`).
    pub fn log_level(&self) -> &'static str {
        match self {
            AlertEvent::Raised(a) | AlertEvent::Updated(a) => a.severity.log_level(),
            AlertEvent::Cleared(_) => "info",
            AlertEvent::Notification(n) => n.level.log_level(),
        }
    }

    /// `{"event": kind, "alert": {...}}` or `{"event": "notification", "notification":
    /// {...}}` ([`Alert::to_json`], [`Notification::to_json`]).
    pub fn to_json(&self, home: &Home) -> serde_json::Value {
        match self {
            AlertEvent::Raised(a) | AlertEvent::Cleared(a) | AlertEvent::Updated(a) => {
                serde_json::json!({"event": self.kind(), "alert": a.to_json(home)})
            }
            AlertEvent::Notification(n) => {
                serde_json::json!({"event": self.kind(), "notification": n.to_json(home)})
            }
        }
    }

    /// One line for a log message: `"Message Center: critical: Extension offline (Keller),
    /// since ... (raised)"` ([`Alert::line`]), `"Miniserver notification: Title: message"`.
    pub fn describe(&self, home: &Home) -> String {
        let entry = |a: &Alert, what: &str| format!("Message Center: {} ({what})", a.line(home));
        match self {
            AlertEvent::Raised(a) => entry(a, "raised"),
            AlertEvent::Cleared(a) => entry(a, "cleared"),
            AlertEvent::Updated(a) => entry(
                a,
                if a.confirmed_at.is_some() {
                    "confirmed"
                } else if a.read_at.is_some() {
                    "read"
                } else {
                    "updated"
                },
            ),
            AlertEvent::Notification(n) => {
                format!("Miniserver notification: {}: {}", n.title, n.message)
            }
        }
    }
}

/// A notification the Miniserver pushed (`globalStates.notifications`, type 10).
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// `uid`: tells one notification from another.
    pub uid: String,
    /// `ts`: when it was sent, if given.
    pub at: Option<SystemTime>,
    pub title: String,
    pub message: String,
    pub level: NotificationLevel,
    /// `data.uuid`: the control it is about, if given.
    pub control: Option<String>,
}

/// What the bus carries about alerts ([`super::bus::Event::Alert`]).
#[derive(Debug, Clone, PartialEq)]
pub enum AlertEvent {
    /// An entry became active (new, or historic before).
    Raised(Alert),
    /// An active entry turned historic or disappeared (the entry as last seen, `historic`
    /// set).
    Cleared(Alert),
    /// An active entry changed otherwise (read, confirmed, occurred again).
    Updated(Alert),
    /// The Miniserver pushed a notification.
    Notification(Notification),
}

/// A copy of the Message Center as the house last read it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AlertsSnapshot {
    /// Every entry: active ones first (most severe, then newest first), then historic ones
    /// (newest first).
    pub entries: Vec<Alert>,
    /// When the entries were last read successfully (`None`: never).
    pub fetched_at: Option<SystemTime>,
    /// The last read that failed, if it failed after the last success.
    pub last_error: Option<String>,
    /// The last [`MAX_NOTIFICATIONS`] notifications, oldest first.
    pub notifications: Vec<Notification>,
}

impl AlertsSnapshot {
    /// The active entries, most severe first.
    pub fn active(&self) -> impl Iterator<Item = &Alert> {
        self.entries.iter().filter(|a| a.is_active())
    }

    /// Active entries per severity, mildest first (every severity, zeros included).
    pub fn active_counts(&self) -> [(Severity, usize); 4] {
        Severity::ALL.map(|s| (s, self.active().filter(|a| a.severity == s).count()))
    }

    /// The entry with id `id` (compared without regard to case).
    pub fn get(&self, id: &str) -> Option<&Alert> {
        self.entries
            .iter()
            .find(|a| a.id.eq_ignore_ascii_case(id.trim()))
    }
}

#[derive(Debug, Default)]
struct Inner {
    snapshot: AlertsSnapshot,
    /// Notification uids seen, oldest first (bounded by [`SEEN_NOTIFICATIONS`]).
    seen: VecDeque<String>,
}

/// The house's alerts. Writers: the adapter ([`Alerts::replace`], [`Alerts::failed`],
/// [`Alerts::notified`]); readers take an [`AlertsSnapshot`]. The house publishes what the
/// writers return.
#[derive(Debug, Default)]
pub struct Alerts {
    inner: Mutex<Inner>,
}

/// Orders entries as [`AlertsSnapshot::entries`] promises.
fn sort_entries(entries: &mut [Alert]) {
    entries.sort_by(|a, b| {
        b.is_active()
            .cmp(&a.is_active())
            .then(b.severity.cmp(&a.severity))
            .then(b.last.cmp(&a.last))
            .then(a.id.cmp(&b.id))
    });
}

impl Alerts {
    /// A copy of what is known now.
    pub fn snapshot(&self) -> AlertsSnapshot {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .snapshot
            .clone()
    }

    /// Replaces the entries with a list read at `at`; returns what changed for the active
    /// ones (raised, cleared, updated), in that order. Clears the last error.
    pub fn replace(&self, mut entries: Vec<Alert>, at: SystemTime) -> Vec<AlertEvent> {
        sort_entries(&mut entries);
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let old: HashMap<&str, &Alert> = inner
            .snapshot
            .entries
            .iter()
            .map(|a| (a.id.as_str(), a))
            .collect();
        let mut raised = Vec::new();
        let mut cleared = Vec::new();
        let mut updated = Vec::new();
        for a in &entries {
            match old.get(a.id.as_str()) {
                None | Some(Alert { historic: true, .. }) if a.is_active() => {
                    raised.push(AlertEvent::Raised(a.clone()))
                }
                Some(o) if o.is_active() && a.historic => {
                    cleared.push(AlertEvent::Cleared(a.clone()))
                }
                Some(o) if o.is_active() && a.is_active() && *o != a => {
                    updated.push(AlertEvent::Updated(a.clone()))
                }
                _ => {}
            }
        }
        for o in inner.snapshot.entries.iter().filter(|o| o.is_active()) {
            if !entries.iter().any(|a| a.id == o.id) {
                let mut gone = o.clone();
                gone.historic = true;
                cleared.push(AlertEvent::Cleared(gone));
            }
        }
        inner.snapshot.entries = entries;
        inner.snapshot.fetched_at = Some(at);
        inner.snapshot.last_error = None;
        raised.extend(cleared);
        raised.extend(updated);
        raised
    }

    /// A read of the entries failed with `error`; the entries read before stay.
    pub fn failed(&self, error: &str) {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .snapshot
            .last_error = Some(error.to_string());
    }

    /// Notes a notification; `true` when it is new (its uid not seen before), `false` for one
    /// already seen. `announce: false` remembers it without counting it as new (the first
    /// value of the notifications state after start is the Miniserver's last one, old news).
    pub fn notified(&self, n: Notification, announce: bool) -> bool {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.seen.iter().any(|u| *u == n.uid) {
            return false;
        }
        if inner.seen.len() >= SEEN_NOTIFICATIONS {
            inner.seen.pop_front();
        }
        inner.seen.push_back(n.uid.clone());
        if !announce {
            return false;
        }
        let list = &mut inner.snapshot.notifications;
        if list.len() >= MAX_NOTIFICATIONS {
            list.remove(0);
        }
        list.push(n);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn alert(id: &str, severity: Severity, historic: bool) -> Alert {
        Alert {
            id: id.into(),
            event_id: None,
            severity,
            title: id.into(),
            description: String::new(),
            room: None,
            affected: None,
            affected_uuids: Vec::new(),
            installation_place: None,
            since: None,
            last: None,
            historic,
            historic_at: None,
            read_at: None,
            confirmed_at: None,
            actions: Vec::new(),
            help_link: None,
        }
    }

    #[test]
    fn severities_from_numbers_and_words() {
        assert_eq!(Severity::from_level(0), Severity::Info);
        assert_eq!(Severity::from_level(2), Severity::Warning);
        assert_eq!(Severity::from_level(3), Severity::Important);
        assert_eq!(Severity::from_level(9), Severity::Critical);
        assert_eq!(Severity::parse("Critical"), Some(Severity::Critical));
        assert_eq!(Severity::Important.log_level(), "error");
        assert_eq!(NotificationLevel::from_level(3).log_level(), "critical");
    }

    #[test]
    fn replacing_tells_raised_cleared_and_updated() {
        let store = Alerts::default();
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let first = store.replace(
            vec![
                alert("a", Severity::Warning, false),
                alert("b", Severity::Critical, false),
                alert("h", Severity::Info, true),
            ],
            t,
        );
        assert_eq!(first.len(), 2, "{first:?}");
        let snap = store.snapshot();
        assert_eq!(snap.entries[0].id, "b", "most severe active first");
        assert_eq!(snap.entries[2].id, "h", "historic last");
        assert_eq!(snap.active_counts()[1], (Severity::Warning, 1));

        let mut read = alert("b", Severity::Critical, false);
        read.read_at = Some(t);
        let next = store.replace(
            vec![
                alert("a", Severity::Warning, true),
                read.clone(),
                alert("h", Severity::Info, true),
            ],
            t,
        );
        assert_eq!(
            next,
            vec![
                AlertEvent::Cleared(alert("a", Severity::Warning, true)),
                AlertEvent::Updated(read)
            ]
        );
        let gone = store.replace(Vec::new(), t);
        assert!(matches!(&gone[..], [AlertEvent::Cleared(a)] if a.id == "b" && a.historic));
        assert!(store.replace(Vec::new(), t).is_empty());
    }

    #[test]
    fn notifications_are_told_once_and_bounded() {
        let store = Alerts::default();
        let n = |uid: &str| Notification {
            uid: uid.into(),
            at: None,
            title: "t".into(),
            message: "m".into(),
            level: NotificationLevel::Info,
            control: None,
        };
        assert!(
            !store.notified(n("old"), false),
            "the first value is old news"
        );
        assert!(!store.notified(n("old"), true));
        assert!(store.notified(n("new"), true));
        assert!(!store.notified(n("new"), true));
        for i in 0..(MAX_NOTIFICATIONS + 5) {
            assert!(store.notified(n(&format!("n{i}")), true));
        }
        assert_eq!(store.snapshot().notifications.len(), MAX_NOTIFICATIONS);
        for i in 0..(SEEN_NOTIFICATIONS * 2) {
            store.notified(n(&format!("m{i}")), true);
        }
        assert!(store.inner.lock().unwrap().seen.len() <= SEEN_NOTIFICATIONS);
    }
}
