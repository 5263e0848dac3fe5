//! The simulator's Message Center (System Status) and notifications, and its test drive.
//!
//! **What a client sees** (research intercom-alerts §2 and §5, *inferred* where marked):
//! - for a structure file with a top-level `messageCenter` block, `jdev/sps/io/{mc}/
//!   getEntries/{n}` answers `LL.value` as a JSON **string** `{"isLimitedUser": false,
//!   "entries": [...], "activeEntryUuid", "controlUUID"}` with entries of the real shape
//!   (`entryUuid, eventId, sourceUuid, affectedUuids, severity, affectedName, title, roomUuid,
//!   installationPlace, isHistoric, setHistoricAt, confirmedAt, timestamps, readAt,
//!   isVisuLocked, actions, desc, helpLink`; times in Unix seconds);
//! - it starts with an active warning (severity 2) in a room that offers the confirm action
//!   `{"actionId": 1005, "title": "OK", "isSecured": false}`, and a historic restart entry;
//! - `readEntry/{entry}` sets `readAt`; `action/{entry}/1005` sets `confirmedAt` and makes the
//!   entry historic (*inferred*: a Miniserver keeps an entry active while its cause lasts); an
//!   unknown entry answers 404, an action the entry does not offer 400 (*inferred*; no capture);
//! - every change bumps the `changed` state (Unix seconds, strictly increasing), which the
//!   WebSocket sessions push as a value event;
//! - a notification is the text of `globalStates.notifications`, `{"uid", "ts", "type": 10,
//!   "title", "message", "data": {"lvl", "uuid"?}}`, pushed as a text event (a session that
//!   gets two within one tick sees the newer only).
//!
//! **Test drive** (no Miniserver has these; Basic or token auth like every other path), for
//! tests that run the simulator in another process (`serve --demo`, the Python and browser
//! end-to-end tests) and play what happens in the house; each answers an `LL` envelope:
//! - `GET /sim/drive/messagecenter/raise?title=..&severity=1-4&room=<name|uuid>&affected=..
//!   &confirm=0|1`: a new active entry (`value`: its `entryUuid`);
//! - `GET /sim/drive/messagecenter/clear/{entry}`: the entry turns historic;
//! - `GET /sim/drive/notify?title=..&message=..&lvl=1-3&uuid=..`: a notification (`value`:
//!   its `uid`);
//! - `GET /sim/drive/state/{control}/{state}/{value}`: sets a state as the Miniserver's own
//!   logic would (a Virtual Status fed by a wall button, a sensor); `value` a number or text;
//! - `GET /sim/drive/requests/{mark}`: what this Miniserver received after the first `mark`
//!   requests, as [`Simulator::requests_since`] gives it (`value`: a JSON text `{"count",
//!   "lines"}`; `count` is the next mark), so a test in another process can tell that nothing
//!   was sent.

use std::time::{SystemTime, UNIX_EPOCH};

use log::info;
use serde_json::{json, Value};

use super::answer::{Answer, Call, Ll};
use super::house::Val;
use super::http::percent_decode;
use super::Simulator;

/// The confirm action of an entry.
const CONFIRM: u64 = 1005;
/// Most entries the simulator keeps (raised entries beyond it drop the oldest historic one).
const MAX_ENTRIES: usize = 200;
/// Longest text a drive request may set.
const MAX_TEXT: usize = 500;

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64().floor())
        .unwrap_or(0.0)
}

/// The Message Center and the notifications state of one simulated Miniserver.
#[derive(Debug, Default)]
pub(crate) struct MessageCenter {
    /// `uuidAction` of the `messageCenter` block (lowercase); `None` without one.
    uuid: Option<String>,
    /// UUID of its `changed` state.
    changed_uuid: Option<String>,
    /// UUID of `globalStates.notifications`.
    notifications_uuid: Option<String>,
    entries: Vec<Value>,
    /// The `changed` state: Unix seconds of the last change, strictly increasing.
    changed: f64,
    /// The notifications state's text (empty before the first).
    notification: String,
    /// Ids handed out so far.
    next: u64,
    /// Rooms of the structure file: (uuid, name).
    rooms: Vec<(String, String)>,
}

impl MessageCenter {
    /// The Message Center of a structure document, seeded with an active warning in the
    /// first room named like a hall ("Flur", "Hall"), else the first room, and a historic
    /// restart entry.
    pub(crate) fn new(doc: &Value) -> MessageCenter {
        let lower = |v: &Value| v.as_str().map(str::to_lowercase);
        let block = doc
            .get("messageCenter")
            .and_then(Value::as_object)
            .and_then(|m| m.iter().find_map(|(k, v)| v.as_object().map(|o| (k, o))));
        let mut rooms: Vec<(String, String)> = doc
            .get("rooms")
            .and_then(Value::as_object)
            .map(|r| {
                r.iter()
                    .map(|(k, v)| {
                        let uuid = v.get("uuid").and_then(Value::as_str).unwrap_or(k);
                        let name = v.get("name").and_then(Value::as_str).unwrap_or("");
                        (uuid.to_string(), name.to_string())
                    })
                    .collect()
            })
            .unwrap_or_default();
        rooms.sort();
        let mut mc = MessageCenter {
            uuid: block.map(|(k, o)| {
                o.get("uuidAction")
                    .and_then(lower)
                    .unwrap_or_else(|| k.to_lowercase())
            }),
            changed_uuid: block
                .and_then(|(_, o)| o.get("states").and_then(|s| s.get("changed")))
                .and_then(lower),
            notifications_uuid: doc
                .get("globalStates")
                .and_then(|g| g.get("notifications"))
                .and_then(lower),
            changed: unix_now(),
            rooms,
            ..MessageCenter::default()
        };
        if mc.uuid.is_some() {
            let hall = mc
                .rooms
                .iter()
                .find(|(_, n)| {
                    let n = n.to_lowercase();
                    n.contains("flur") || n.contains("hall")
                })
                .or(mc.rooms.first())
                .map(|(u, _)| u.clone());
            let now = mc.changed;
            mc.add(json!({
                "eventId": 1104, "severity": 2, "title": "Batterie schwach",
                "affectedName": "Rauchmelder Flur", "roomUuid": hall,
                "installationPlace": "Decke", "isHistoric": false, "setHistoricAt": null,
                "confirmedAt": null, "timestamps": [now - 3600.0], "readAt": null,
                "actions": [{"actionId": CONFIRM, "title": "OK", "isSecured": false}],
                "desc": "<p>Die Batterie des Rauchmelders ist schwach.<br>Bitte tauschen.</p>",
            }));
            mc.add(json!({
                "eventId": 503, "severity": 1, "title": "Miniserver neu gestartet",
                "affectedName": "Miniserver", "roomUuid": null, "isHistoric": true,
                "setHistoricAt": now - 86000.0, "confirmedAt": null,
                "timestamps": [now - 86400.0], "readAt": now - 86000.0, "actions": [],
                "desc": "Der Miniserver wurde neu gestartet.",
            }));
        }
        mc
    }

    /// Adds an entry (the members the caller gives, plus the fixed ones); returns its id.
    fn add(&mut self, mut entry: Value) -> String {
        self.next += 1;
        let id = format!(
            "4d430000-{:04x}-4000-ffff{:012x}",
            self.next >> 16,
            self.next
        );
        if let Some(o) = entry.as_object_mut() {
            o.insert("entryUuid".into(), json!(id));
            o.insert("sourceUuid".into(), json!(self.uuid));
            o.entry("affectedUuids").or_insert(json!([]));
            o.insert("isVisuLocked".into(), json!(false));
            o.entry("helpLink").or_insert(Value::Null);
        }
        if self.entries.len() >= MAX_ENTRIES {
            match self.entries.iter().position(|e| e["isHistoric"] == true) {
                Some(i) => {
                    self.entries.remove(i);
                }
                None => {
                    self.entries.remove(0);
                }
            }
        }
        self.entries.push(entry);
        self.bump();
        id
    }

    fn bump(&mut self) {
        self.changed = unix_now().max(self.changed + 1.0);
    }

    fn find(&mut self, id: &str) -> Option<&mut Value> {
        self.entries.iter_mut().find(|e| {
            e["entryUuid"]
                .as_str()
                .is_some_and(|u| u.eq_ignore_ascii_case(id))
        })
    }

    /// The `getEntries` text.
    fn entries_text(&self) -> String {
        let active = self
            .entries
            .iter()
            .find(|e| e["isHistoric"] == false)
            .and_then(|e| e["entryUuid"].as_str());
        json!({
            "isLimitedUser": false,
            "entries": self.entries,
            "activeEntryUuid": active,
            "controlUUID": self.uuid,
        })
        .to_string()
    }

    /// A room's UUID by UUID or name (case-insensitive).
    fn room(&self, q: &str) -> Option<String> {
        self.rooms
            .iter()
            .find(|(u, n)| u.eq_ignore_ascii_case(q) || n.eq_ignore_ascii_case(q))
            .map(|(u, _)| u.clone())
    }
}

/// `key=value&...` of a query, decoded (`+` is a space).
fn query_value(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == key)
            .then(|| percent_decode(&v.replace('+', " ")))
            .flatten()
            .map(|v| v.chars().take(MAX_TEXT).collect())
    })
}

impl Simulator {
    /// The Message Center's states for the WebSocket tables: `changed` (a number) and
    /// `globalStates.notifications` (a text).
    pub(crate) fn message_center_states(&self) -> Vec<(String, Val)> {
        let mc = self
            .message_center
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        if let Some(u) = &mc.changed_uuid {
            out.push((u.clone(), Val::Num(mc.changed)));
        }
        if let Some(u) = &mc.notifications_uuid {
            out.push((u.clone(), Val::Text(mc.notification.clone())));
        }
        out
    }
}

/// The Message Center `call.args[0]` names (case-insensitive), locked; `None` (answer 404)
/// when it names another or the structure file has none.
fn named<'a>(
    sim: &'a Simulator,
    call: &Call<'_>,
) -> Option<std::sync::MutexGuard<'a, MessageCenter>> {
    let mc = sim.message_center.lock().unwrap_or_else(|e| e.into_inner());
    let uuid = mc.uuid.as_deref()?;
    call.args.first()?.eq_ignore_ascii_case(uuid).then_some(mc)
}

/// `sps/io/{mc}/getEntries/{n}`: the entry list as a JSON string.
pub(crate) fn get_entries(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    match named(sim, call) {
        Some(mc) => Answer::Ll(Ll::ok(mc.entries_text())),
        None => Answer::Error(404, "Not Found"),
    }
}

/// `sps/io/{mc}/readEntry/{entry}`: sets `readAt`; 404 for an unknown entry.
pub(crate) fn read_entry(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    let Some(mut mc) = named(sim, call) else {
        return Answer::Error(404, "Not Found");
    };
    let id = call.args.get(1).cloned().unwrap_or_default();
    let now = unix_now();
    let Some(e) = mc.find(&id) else {
        return Answer::Error(404, "Not Found");
    };
    e["readAt"] = json!(now);
    mc.bump();
    drop(mc);
    info!("sim: Message Center entry {id} read");
    sim.ws.notify();
    Answer::Ll(Ll::ok("1"))
}

/// `sps/io/{mc}/action/{entry}/{actionId}`: an action the entry offers (1005 confirms it and
/// makes it historic); 404 for an unknown entry, 400 for an action it does not offer.
pub(crate) fn entry_action(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    let Some(mut mc) = named(sim, call) else {
        return Answer::Error(404, "Not Found");
    };
    let id = call.args.get(1).cloned().unwrap_or_default();
    let action: Option<u64> = call.args.get(2).and_then(|a| a.parse().ok());
    let now = unix_now();
    let Some(e) = mc.find(&id) else {
        return Answer::Error(404, "Not Found");
    };
    let offered = e["actions"]
        .as_array()
        .is_some_and(|list| list.iter().any(|a| a["actionId"].as_u64() == action));
    if !offered {
        return Answer::Error(400, "Bad Request");
    }
    if action == Some(CONFIRM) {
        e["confirmedAt"] = json!(now);
        e["isHistoric"] = json!(true);
        e["setHistoricAt"] = json!(now);
    }
    mc.bump();
    drop(mc);
    info!("sim: Message Center entry {id}: action {action:?}");
    sim.ws.notify();
    Answer::Ll(Ll::ok("1"))
}

/// Test drive `sim/drive/messagecenter/raise?title=..&severity=1-4&room=..&affected=..&
/// confirm=0|1&desc=..`: a new active entry; its id.
pub(crate) fn drive_raise(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    let query = call.query.clone();
    let mut mc = sim.message_center.lock().unwrap_or_else(|e| e.into_inner());
    if mc.uuid.is_none() {
        return Answer::Error(404, "Not Found");
    }
    let severity: u64 = query_value(&query, "severity")
        .and_then(|s| s.parse().ok())
        .unwrap_or(2)
        .clamp(1, 4);
    let room = query_value(&query, "room").and_then(|r| mc.room(&r));
    let confirm = query_value(&query, "confirm").as_deref() != Some("0");
    let now = unix_now();
    let id = mc.add(json!({
        "eventId": 1121, "severity": severity,
        "title": query_value(&query, "title").unwrap_or_else(|| "Gerät offline".into()),
        "affectedName": query_value(&query, "affected"), "roomUuid": room,
        "isHistoric": false, "setHistoricAt": null, "confirmedAt": null,
        "timestamps": [now], "readAt": null,
        "actions": if confirm {
            json!([{"actionId": CONFIRM, "title": "OK", "isSecured": false}])
        } else {
            json!([])
        },
        "desc": query_value(&query, "desc").unwrap_or_default(),
    }));
    drop(mc);
    info!("sim: Message Center entry {id} raised");
    sim.ws.notify();
    Answer::Ll(Ll::ok(id))
}

/// Test drive `sim/drive/messagecenter/clear/{entry}`: the entry turns historic (its cause
/// is gone).
pub(crate) fn drive_clear(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    let id = call.args.first().cloned().unwrap_or_default();
    let mut mc = sim.message_center.lock().unwrap_or_else(|e| e.into_inner());
    let now = unix_now();
    let Some(e) = mc.find(&id) else {
        return Answer::Error(404, "Not Found");
    };
    e["isHistoric"] = json!(true);
    e["setHistoricAt"] = json!(now);
    mc.bump();
    drop(mc);
    info!("sim: Message Center entry {id} cleared");
    sim.ws.notify();
    Answer::Ll(Ll::ok(id))
}

/// Test drive `sim/drive/notify?title=..&message=..&lvl=1-3&uuid=..`: a notification pushed
/// as the text of `globalStates.notifications`; its uid.
pub(crate) fn drive_notify(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    let query = call.query.clone();
    let mut mc = sim.message_center.lock().unwrap_or_else(|e| e.into_inner());
    mc.next += 1;
    let uid = format!("sim-notification-{}", mc.next);
    let lvl: u64 = query_value(&query, "lvl")
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let mut data = json!({"lvl": lvl});
    if let Some(u) = query_value(&query, "uuid") {
        data["uuid"] = json!(u);
    }
    mc.notification = json!({
        "uid": uid, "ts": unix_now(), "type": 10,
        "title": query_value(&query, "title").unwrap_or_default(),
        "message": query_value(&query, "message").unwrap_or_default(),
        "data": data,
    })
    .to_string();
    drop(mc);
    info!("sim: notification {uid}");
    sim.ws.notify();
    Answer::Ll(Ll::ok(uid))
}

/// Test drive `sim/drive/state/{control}/{state}/{value}`: sets a state of a control as the
/// Miniserver's own logic would (a Virtual Status fed by a wall button, a sensor); a number,
/// else a text. 404 for a state the control does not have.
pub(crate) fn drive_state(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    let (Some(idx), [state, value]) = (call.target, call.args.as_slice()) else {
        return Answer::Error(404, "Not Found");
    };
    let mut house = sim.house.lock().unwrap_or_else(|e| e.into_inner());
    let Some(c) = house.ctls.get_mut(idx) else {
        return Answer::Error(404, "Not Found");
    };
    if !c.states.contains_key(state.as_str()) {
        return Answer::Error(404, "Not Found");
    }
    match value.parse::<f64>() {
        Ok(n) if n.is_finite() => c.set(state, n),
        _ => c.set_text(state, value.chars().take(MAX_TEXT).collect::<String>()),
    }
    info!("sim: {} {state} set to {value} (drive)", c.name);
    drop(house);
    sim.ws.notify();
    Answer::Ll(Ll::ok(value.clone()))
}

/// Test drive `sim/drive/requests/{mark}`: the request lines received after the first `mark`
/// (at most `REQUEST_LOG_LEN` kept) and the count to use as the next mark. The drive request
/// itself is among them (the last line).
pub(crate) fn drive_requests(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    let Some(mark) = call.args.first().and_then(|m| m.parse::<usize>().ok()) else {
        return Answer::Error(400, "Bad Request");
    };
    let lines = sim.requests_since(mark);
    let text = json!({"count": sim.request_count(), "lines": lines}).to_string();
    Answer::Ll(Ll::ok(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    const AUTH: &str = "Basic ZGVtbzpkZW1v"; // demo:demo

    fn get(sim: &Simulator, url: &str) -> Value {
        let r = sim.handle("GET", url, Some(AUTH), IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(r.status, 200, "{url}: {}", r.body);
        serde_json::from_str::<Value>(&r.body).unwrap()["LL"].clone()
    }

    fn entries(sim: &Simulator, mc: &str) -> Vec<Value> {
        let ll = get(sim, &format!("/jdev/sps/io/{mc}/getEntries/2"));
        let text = ll["value"].as_str().expect("a JSON string");
        let doc: Value = serde_json::from_str(text).unwrap();
        doc["entries"].as_array().unwrap().clone()
    }

    fn demo_mc(sim: &Simulator) -> String {
        let doc: Value = serde_json::from_str(&sim.structure_text()).unwrap();
        let (uuid, _) = doc["messageCenter"]
            .as_object()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        uuid.clone()
    }

    #[test]
    fn entries_are_read_confirmed_raised_and_cleared() {
        let sim = Simulator::demo();
        let mc = demo_mc(&sim);
        let list = entries(&sim, &mc);
        assert_eq!(list.len(), 2);
        let active = list.iter().find(|e| e["isHistoric"] == false).unwrap();
        assert!(active["roomUuid"].is_string());
        let id = active["entryUuid"].as_str().unwrap().to_string();
        let before = sim.state_of_mc_changed();
        get(&sim, &format!("/jdev/sps/io/{mc}/readEntry/{id}"));
        assert!(sim.state_of_mc_changed() > before);
        get(&sim, &format!("/jdev/sps/io/{mc}/action/{id}/1005"));
        let now = entries(&sim, &mc);
        let e = now.iter().find(|e| e["entryUuid"] == id.as_str()).unwrap();
        assert!(e["readAt"].is_number() && e["confirmedAt"].is_number());
        assert_eq!(e["isHistoric"], true);

        let peer = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let bad = |url: &str| sim.handle("GET", url, Some(AUTH), peer).status;
        assert_eq!(bad(&format!("/jdev/sps/io/{mc}/readEntry/nope")), 404);
        let historic = list.iter().find(|e| e["isHistoric"] == true).unwrap();
        let hid = historic["entryUuid"].as_str().unwrap();
        assert_eq!(
            bad(&format!("/jdev/sps/io/{mc}/action/{hid}/1005")),
            400,
            "not offered"
        );

        let raised = get(
            &sim,
            "/sim/drive/messagecenter/raise?title=Extension+offline&severity=4&room=K%C3%BCche",
        );
        let rid = raised["value"].as_str().unwrap().to_string();
        let e = entries(&sim, &mc)
            .into_iter()
            .find(|e| e["entryUuid"] == rid.as_str())
            .unwrap();
        assert_eq!(
            (e["title"].as_str(), e["severity"].as_u64()),
            (Some("Extension offline"), Some(4))
        );
        assert!(e["roomUuid"].is_string(), "room by name");
        get(&sim, &format!("/sim/drive/messagecenter/clear/{rid}"));
        let e = entries(&sim, &mc)
            .into_iter()
            .find(|e| e["entryUuid"] == rid.as_str())
            .unwrap();
        assert_eq!(e["isHistoric"], true);
    }

    #[test]
    fn notifications_and_states_are_driven() {
        let sim = Simulator::demo();
        let uid = get(
            &sim,
            "/sim/drive/notify?title=Post&message=Briefkasten+offen&lvl=2",
        );
        let states = sim.message_center_states();
        let text = states
            .iter()
            .find_map(|(_, v)| match v {
                Val::Text(t) => Some(t.clone()),
                _ => None,
            })
            .unwrap();
        let n: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(n["uid"], uid["value"]);
        assert_eq!(
            (n["type"].as_u64(), n["data"]["lvl"].as_u64()),
            (Some(10), Some(2))
        );
        assert_eq!(n["message"], "Briefkasten offen");
        let mark = sim.request_count();
        get(&sim, "/sim/drive/state/KI-Assistent/active/0");
        let log = get(&sim, &format!("/sim/drive/requests/{mark}"));
        let log: Value = serde_json::from_str(log["value"].as_str().unwrap()).unwrap();
        let lines: Vec<&str> = log["lines"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            lines[0].ends_with("/sim/drive/state/KI-Assistent/active/0"),
            "{lines:?}"
        );
        assert_eq!(log["count"].as_u64(), Some(mark as u64 + 2));
        assert_eq!(sim.state("KI-Assistent", "active"), Some(0.0));
        let peer = IpAddr::V4(Ipv4Addr::LOCALHOST);
        assert_eq!(
            sim.handle(
                "GET",
                "/sim/drive/state/KI-Assistent/nope/1",
                Some(AUTH),
                peer
            )
            .status,
            404
        );
        assert_eq!(
            sim.handle("GET", "/sim/drive/notify", None, peer).status,
            401,
            "behind auth"
        );
    }

    impl Simulator {
        fn state_of_mc_changed(&self) -> f64 {
            self.message_center.lock().unwrap().changed
        }
    }
}
