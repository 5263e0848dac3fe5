//! The Miniserver's Message Center (System Status) and its pushed notifications, read into the
//! home model's alerts ([`crate::home::alerts`]). Per research intercom-alerts §2 (Loxone
//! structure file docs, and the clients LoxBuddy, LoxYourLife's message-center plugin and
//! PyLoxone's pull request #515, which use these commands against real Miniservers):
//!
//! - entries: `jdev/sps/io/{mc}/getEntries/2`, whose `LL.value` is a JSON **string**
//!   `{"entries": [...], ...}` (an object is accepted too); [`parse_entries`] reads it
//!   defensively: at most [`MAX_ENTRIES_BYTES`] of answer and [`MAX_ENTRIES`] entries (more is
//!   an error, never a panic or unbounded memory), texts cut to a bound, entries without an
//!   `entryUuid` skipped, times in Unix seconds;
//! - mark read: `jdev/sps/io/{mc}/readEntry/{entryUuid}`; confirm: `jdev/sps/io/{mc}/action/
//!   {entryUuid}/1005`, sent only for an entry that offers action 1005 (the house checks);
//! - the structure file's `messageCenter.<uuid>.states.changed` changes whenever the entries
//!   do: [`Watch`] reads them again then (and at start, after a structure reload, and every
//!   [`REFETCH_WITHOUT_EVENTS`] while no WebSocket pushes that state);
//! - notifications: text events on `globalStates.notifications`, `{"uid", "ts", "type": 10,
//!   "title", "message", "data": {"lvl", "uuid"?}}` ([`parse_notification`]; other types, such
//!   as LoxBuddy's type 11 summaries, are left out).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value as Json;

use super::answer::plain_text;
use super::client::Client;
use crate::home::{
    Alert, AlertAction, AlertOp, ControllerError, Event, House, LinkMode, MessageCenter,
    Notification, NotificationLevel, Severity, Value,
};

/// Largest `getEntries` answer read (a real list is a few KB per entry).
pub const MAX_ENTRIES_BYTES: u64 = 1024 * 1024;
/// Most entries accepted in one list; a longer list is an error.
pub const MAX_ENTRIES: usize = 500;
/// Longest title, affected name or place kept, in characters.
const MAX_TITLE_CHARS: usize = 200;
/// Longest description kept (as plain text), in characters.
const MAX_DESC_CHARS: usize = 2000;
/// Most actions and affected UUIDs kept per entry.
const MAX_LIST: usize = 16;
/// Longest entry id accepted (Loxone UUIDs are 35 characters).
const MAX_ID_CHARS: usize = 64;
/// Largest notification text read.
const MAX_NOTIFICATION_BYTES: usize = 16 * 1024;

/// How often the entries are read while the `changed` state is not pushed (no WebSocket).
pub const REFETCH_WITHOUT_EVENTS: Duration = Duration::from_secs(30);
/// A failed read is tried again after this long.
pub const RETRY_AFTER: Duration = Duration::from_secs(10);
/// A notification arriving this soon after the WebSocket session began, as the first value of
/// the notifications state since start, is the Miniserver's last one from the initial event
/// table, not news.
const INITIAL_TABLE_WINDOW: Duration = Duration::from_secs(3);

/// Text cut to `max` characters (at a character boundary).
fn bounded(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

/// Member `key` as a bounded text; `None` when absent, empty, or not text or a number.
fn text(obj: &serde_json::Map<String, Json>, key: &str, max: usize) -> Option<String> {
    match obj.get(key)? {
        Json::String(s) if !s.trim().is_empty() => Some(bounded(s.trim(), max)),
        Json::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Member `key` as an integer (a number or a numeric text).
fn integer(obj: &serde_json::Map<String, Json>, key: &str) -> Option<i64> {
    match obj.get(key)? {
        Json::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Json::String(s) => s.trim().parse().ok(),
        Json::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

/// A Message Center time: Unix seconds (a number or numeric text; the clients of research
/// intercom-alerts §2 read them so). Defensive where real firmware may differ: a value before
/// the Loxone epoch read as Unix seconds (no Miniserver entry is that old) is taken as Loxone
/// seconds ([`crate::home::time::from_loxone_secs`]), and one beyond the year 5000 as Unix
/// milliseconds. 0, negatives and non-numbers are no time.
fn unix_time(v: Option<&Json>) -> Option<SystemTime> {
    let n = match v? {
        Json::Number(n) => n.as_f64()?,
        Json::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    if !n.is_finite() || n <= 0.0 {
        return None;
    }
    let since_epoch = if n > 1e11 {
        Duration::from_millis(n.min(1e15) as u64)
    } else if n < crate::home::time::LOXONE_EPOCH_UNIX as f64 {
        let t = crate::home::time::from_loxone_secs(n as i64)?;
        return SystemTime::try_from(t).ok();
    } else {
        Duration::from_secs_f64(n)
    };
    Some(SystemTime::UNIX_EPOCH + since_epoch)
}

/// Whether `id` can be an entry id: 1-64 characters of letters, digits, `-` and `_` (a
/// stranger's text never reaches a URL otherwise; it is also encoded as a path segment).
fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.chars().count() <= MAX_ID_CHARS
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// One entry, or `None` when it has no usable `entryUuid`.
fn entry(v: &Json) -> Option<Alert> {
    let o = v.as_object()?;
    let id = text(o, "entryUuid", MAX_ID_CHARS + 1).filter(|i| valid_id(i))?;
    let mut times: Vec<SystemTime> = o
        .get("timestamps")
        .and_then(Json::as_array)
        .map(|a| a.iter().filter_map(|t| unix_time(Some(t))).collect())
        .unwrap_or_default();
    times.sort();
    let actions = o
        .get("actions")
        .and_then(Json::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|a| {
                    let a = a.as_object()?;
                    let id = u32::try_from(integer(a, "actionId")?).ok()?;
                    Some(AlertAction {
                        id,
                        title: text(a, "title", MAX_TITLE_CHARS).unwrap_or_default(),
                    })
                })
                .take(MAX_LIST)
                .collect()
        })
        .unwrap_or_default();
    let affected_uuids = o
        .get("affectedUuids")
        .and_then(Json::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Json::as_str)
                .filter(|u| valid_id(u))
                .map(str::to_string)
                .take(MAX_LIST)
                .collect()
        })
        .unwrap_or_default();
    let historic = match o.get("isHistoric") {
        Some(Json::Bool(b)) => *b,
        _ => integer(o, "isHistoric").is_some_and(|n| n != 0),
    };
    Some(Alert {
        event_id: integer(o, "eventId"),
        severity: Severity::from_level(integer(o, "severity").unwrap_or(1)),
        title: text(o, "title", MAX_TITLE_CHARS).unwrap_or_else(|| id.clone()),
        description: o
            .get("desc")
            .and_then(Json::as_str)
            .map(|d| plain_text(d, MAX_DESC_CHARS))
            .unwrap_or_default(),
        room: text(o, "roomUuid", MAX_ID_CHARS + 1).filter(|r| valid_id(r)),
        affected: text(o, "affectedName", MAX_TITLE_CHARS),
        affected_uuids,
        installation_place: text(o, "installationPlace", MAX_TITLE_CHARS),
        since: times.first().copied(),
        last: times.last().copied(),
        historic,
        historic_at: unix_time(o.get("setHistoricAt")),
        read_at: unix_time(o.get("readAt")),
        confirmed_at: unix_time(o.get("confirmedAt")),
        actions,
        help_link: text(o, "helpLink", 500),
        id,
    })
}

/// Reads the `LL.value` of `getEntries/2`: a JSON text (or object) `{"entries": [...]}`.
/// Errors (in words): not JSON, no `entries` list, larger than [`MAX_ENTRIES_BYTES`], more
/// than [`MAX_ENTRIES`] entries. Entries without a usable `entryUuid` are skipped.
pub fn parse_entries(value: &Json) -> Result<Vec<Alert>, String> {
    let parsed;
    let doc = match value {
        Json::String(s) => {
            if s.len() as u64 > MAX_ENTRIES_BYTES {
                return Err(format!(
                    "the entry list is larger than {MAX_ENTRIES_BYTES} bytes"
                ));
            }
            parsed = serde_json::from_str::<Json>(s)
                .map_err(|e| format!("the entry list is not JSON: {e}"))?;
            &parsed
        }
        other => other,
    };
    let list = doc
        .get("entries")
        .and_then(Json::as_array)
        .ok_or("the answer has no \"entries\" list")?;
    if list.len() > MAX_ENTRIES {
        return Err(format!(
            "the entry list has {} entries, more than the {MAX_ENTRIES} read",
            list.len()
        ));
    }
    let mut seen = std::collections::HashSet::new();
    Ok(list
        .iter()
        .filter_map(entry)
        .filter(|a| seen.insert(a.id.to_ascii_lowercase()))
        .collect())
}

/// Reads a `globalStates.notifications` text event: `{"uid", "ts", "type": 10, "title",
/// "message", "data": {"lvl", "uuid"?}}`. `None` for anything else (another type, no `uid`,
/// not JSON, larger than 16 KB, an empty text).
pub fn parse_notification(text: &str) -> Option<Notification> {
    if text.len() > MAX_NOTIFICATION_BYTES {
        return None;
    }
    let v: Json = serde_json::from_str(text).ok()?;
    let o = v.as_object()?;
    if integer(o, "type") != Some(10) {
        return None;
    }
    let uid = self::text(o, "uid", MAX_TITLE_CHARS)?;
    let data = o.get("data").and_then(Json::as_object);
    Some(Notification {
        uid,
        at: unix_time(o.get("ts")),
        title: self::text(o, "title", MAX_TITLE_CHARS).unwrap_or_default(),
        message: self::text(o, "message", MAX_DESC_CHARS).unwrap_or_default(),
        level: NotificationLevel::from_level(data.and_then(|d| integer(d, "lvl")).unwrap_or(1)),
        control: data
            .and_then(|d| self::text(d, "uuid", MAX_ID_CHARS + 1))
            .filter(|u| valid_id(u)),
    })
}

/// The Message Center over the Loxone client: the house's [`Controller`] calls these.
impl Client {
    /// `jdev/sps/io/{mc}/getEntries/2`, read through [`parse_entries`].
    pub fn message_center_entries(
        &self,
        mc: &MessageCenter,
    ) -> Result<Vec<Alert>, ControllerError> {
        let answer = self.command_bounded(
            &mc.uuid,
            &["getEntries".to_string(), "2".to_string()],
            MAX_ENTRIES_BYTES + 4096,
        )?;
        parse_entries(&answer.value).map_err(|m| ControllerError::Rejected {
            code: 0,
            message: format!("Message Center {}: {m}", mc.name),
        })
    }

    /// `readEntry/{entry}` or `action/{entry}/1005`.
    pub fn message_center_op(
        &self,
        mc: &MessageCenter,
        entry: &str,
        op: AlertOp,
    ) -> Result<(), ControllerError> {
        let segments: Vec<String> = match op {
            AlertOp::Read => vec!["readEntry".into(), entry.into()],
            AlertOp::Confirm => vec![
                "action".into(),
                entry.into(),
                crate::home::alerts::CONFIRM_ACTION.to_string(),
            ],
        };
        self.command(&mc.uuid, &segments)?;
        Ok(())
    }
}

/// The thread that keeps the house's alerts current: reads the entries at start, whenever
/// the Message Center's `changed` state changes, after a structure reload or a lagged bus, and
/// every [`REFETCH_WITHOUT_EVENTS`] while the link is not the WebSocket; turns text events of
/// `globalStates.notifications` into notifications ([`House::notify`]). Stops when dropped.
pub struct Watch {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Watch {
    /// Starts the thread (`home-alerts`). Errors only when the OS cannot start a thread.
    pub fn start(house: Arc<House>) -> std::io::Result<Watch> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let sub = house.bus().subscribe(1024);
        let handle = std::thread::Builder::new()
            .name("home-alerts".into())
            .spawn(move || watch(&house, &sub, &flag))?;
        Ok(Watch {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops the thread and waits for it (at most one read under way).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn watch(house: &House, sub: &crate::home::Subscription, stop: &AtomicBool) {
    let mut due = Some(Instant::now());
    let mut last_read = Instant::now();
    let mut first_notification = true;
    while !stop.load(Ordering::Relaxed) {
        let home = house.home();
        if let Some(at) = due {
            if Instant::now() >= at {
                due = None;
                last_read = Instant::now();
                if home.message_center.is_some() && house.refresh_alerts().is_err() {
                    due = Some(Instant::now() + RETRY_AFTER);
                }
            }
        }
        if sub.take_lagged() || sub.is_closed() {
            due = Some(Instant::now());
        }
        if house.link().mode() != LinkMode::WebSocket
            && last_read.elapsed() >= REFETCH_WITHOUT_EVENTS
            && due.is_none()
        {
            due = Some(Instant::now());
        }
        let Some(event) = sub.recv_timeout(Duration::from_millis(250)) else {
            continue;
        };
        match event {
            Event::Change(c) => {
                let changed = home
                    .message_center
                    .as_ref()
                    .and_then(|mc| mc.changed.as_deref());
                if changed == Some(c.uuid.as_str()) {
                    due = Some(Instant::now());
                } else if home.global_states.get("notifications") == Some(&c.uuid) {
                    let parsed = match &c.value {
                        Value::Text(t) => parse_notification(t),
                        Value::Number(_) => None,
                    };
                    if let Some(n) = parsed {
                        let (mode, since) = house.link().mode_since();
                        let in_initial_table = mode == LinkMode::WebSocket
                            && c.at.duration_since(since).unwrap_or_default()
                                < INITIAL_TABLE_WINDOW;
                        house.notify(n, !(first_notification && in_initial_table));
                    }
                    // Whatever the first value was (often an empty text), what follows is news.
                    first_notification = false;
                }
            }
            Event::StructureChanged { .. } => due = Some(Instant::now()),
            Event::Alert(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The shape of a real entry (LoxBuddy's fixture, seemingly from a Dutch Miniserver;
    /// research intercom-alerts §2), with our own ids.
    fn real_entry(id: &str, historic: bool) -> Json {
        json!({
            "entryUuid": id, "eventId": 1121, "sourceUuid": "x",
            "affectedUuids": ["13c2b3c4-02ef-1234-ffff403fb0c34b9e"],
            "severity": 3, "affectedName": "Tree Extension", "title": "Tree Extension offline",
            "roomUuid": "1d5c3a0e-0200-4e72-ffff504f94d0e5a1", "installationPlace": "Schrank",
            "isHistoric": historic, "setHistoricAt": if historic { json!(1764230000) } else { json!(null) },
            "confirmedAt": null, "timestamps": [1764226800, 1764220000], "readAt": 0,
            "isVisuLocked": false,
            "actions": [{"actionId": 1005, "title": "OK", "isSecured": false}],
            "desc": "<p>The extension&nbsp;is <b>offline</b>.<br>Check the cable.</p>",
            "helpLink": null
        })
    }

    #[test]
    fn entries_come_as_a_json_string() {
        let text = json!({"isLimitedUser": false, "entries": [real_entry("e-1", false),
            real_entry("e-2", true), {"title": "no id"}], "activeEntryUuid": "e-1"})
        .to_string();
        let list = parse_entries(&Json::String(text)).unwrap();
        assert_eq!(list.len(), 2, "the entry without an id is skipped");
        let a = &list[0];
        assert_eq!(a.severity, Severity::Important);
        assert_eq!(a.description, "The extension is offline . Check the cable.");
        assert_eq!(a.affected.as_deref(), Some("Tree Extension"));
        assert!(a.offers(1005) && a.is_active() && a.read_at.is_none());
        assert_eq!(
            a.since,
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1764220000))
        );
        assert!(list[1].historic && list[1].historic_at.is_some());
    }

    #[test]
    fn bad_lists_are_errors_not_panics() {
        for bad in [
            Json::String("{not json".into()),
            Json::String("[]".into()),
            Json::String("{\"entries\": 5}".into()),
            Json::Null,
            Json::String("x".repeat(MAX_ENTRIES_BYTES as usize + 1)),
            json!({"entries": vec![real_entry("a", false); MAX_ENTRIES + 1]}),
        ] {
            assert!(
                parse_entries(&bad).is_err(),
                "{}",
                &bad.to_string()[..40.min(bad.to_string().len())]
            );
        }
        // Strange members are read leniently, bounded, never trusted into a URL.
        let odd = json!({"entries": [
            {"entryUuid": "../../x", "title": "path"},
            {"entryUuid": "ok", "title": "t".repeat(10_000), "severity": "4",
             "timestamps": ["1764226800", -5, "x", 1764226800123u64], "actions": [{"actionId": -1}, {"actionId": "1005"}],
             "readAt": 533458800,
             "isHistoric": 1}
        ]});
        let list = parse_entries(&odd).unwrap();
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].title.chars().count(), MAX_TITLE_CHARS);
        assert_eq!(list[0].severity, Severity::Critical);
        assert!(list[0].historic && list[0].offers(1005));
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1764226800);
        assert_eq!(list[0].since, Some(t), "text seconds; bad times skipped");
        assert_eq!(
            list[0].last,
            Some(t + Duration::from_millis(123)),
            "milliseconds read as such"
        );
        assert_eq!(list[0].read_at, Some(t), "Loxone seconds read as such");
    }

    #[test]
    fn notifications_of_type_10_only() {
        let n = parse_notification(
            &json!({"uid": "n1", "ts": 1764226800, "type": 10, "title": "Waschmaschine",
                     "message": "fertig", "data": {"lvl": 2, "uuid": "1d5c3a8f-0208-51f9-ffff504f94d0e5a1"}})
            .to_string(),
        )
        .unwrap();
        assert_eq!(n.level, NotificationLevel::Error);
        assert_eq!(n.title, "Waschmaschine");
        assert!(n.control.is_some());
        assert!(
            parse_notification(&json!({"uid": "s", "type": 11, "uids": []}).to_string()).is_none()
        );
        assert!(parse_notification("").is_none());
        assert!(parse_notification("[]").is_none());
        assert!(parse_notification(&json!({"type": 10}).to_string()).is_none());
    }

    #[test]
    fn html_becomes_bounded_text() {
        assert_eq!(plain_text("a<br/>b &amp; c", 100), "a b & c");
        assert_eq!(plain_text(&"<b>x</b>".repeat(10_000), 10).len(), 10);
        assert_eq!(plain_text("1 < 2", 10), "1");
    }
}
