//! Which resources a state change affects, for `notifications/resources/updated`.
//!
//! The streams side calls [`AffectedIndex::uris`] (or the one-shot [`affected_uris`]) for each
//! [`crate::home::Change`] of the bus and notifies the sessions subscribed to any of the
//! returned URIs. The URIs are *canonical* ([`super::canonical_uri`]): subscribe-time URIs
//! should be canonicalised the same way before they are compared.
//!
//! A change of control X (its primary value or any named state; a sub-control counts for its
//! parent too) affects:
//! `home://devices/{X}` (and the parent's), `home://devices/all`, `home://devices/category/{family}`,
//! `home://devices/category/{loxone category}`, `home://devices/type/{type}`; for its room
//! `home://rooms/{room}/devices`, `home://devices/{room}` and, for families the summary
//! shows, `home://rooms/{room}/overview`; the family resource (`home://lighting`,
//! `home://blinds`, `home://climate` + `home://climate/{room}`, `home://audio`,
//! `home://security`, `home://energy`); for sensors `home://sensors` and the sensor kind's
//! resource; `home://doorbells` for intercoms and cameras; `home://weather` for weather sources; `home://summary` when the summary shows
//! the family. An alarm affects every room overview (room summaries show alarms); a window
//! monitor the overviews of the rooms of its windows.
//!
//! Not affected by state changes: `home://rooms`, `home://system/*` (their contents are the
//! model, link counters and catalogue) and `home://workflows`.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use super::{detail, room_key};
use crate::home::{Control, ControlKind, Family, Home, StateRef};
use crate::tools::summary::sensor_type;

/// A lookup from state and control UUIDs to the URIs their changes affect, built once per
/// structure (rebuild it on `Event::StructureChanged`).
#[derive(Debug, Default)]
pub struct AffectedIndex {
    /// State or control UUID -> index into `uris`.
    by_uuid: HashMap<String, usize>,
    /// Per control (top-level and sub-controls): its affected URIs, sorted.
    uris: Vec<Vec<String>>,
}

impl AffectedIndex {
    /// Indexes every control, sub-control and state of `home`.
    pub fn new(home: &Home) -> Self {
        let mut index = AffectedIndex::default();
        for c in &home.controls {
            index.add(home, c, None);
        }
        index
    }

    fn add(&mut self, home: &Home, c: &Control, parent: Option<&Control>) {
        let slot = self.uris.len();
        let mut set = control_uris(home, c);
        if let Some(p) = parent {
            set.extend(control_uris(home, p));
        }
        self.uris.push(set.into_iter().collect());
        self.by_uuid.entry(c.uuid.clone()).or_insert(slot);
        for r in c.states.values() {
            let uuids: Vec<&String> = match r {
                StateRef::Uuid(u) => vec![u],
                StateRef::Uuids(us) => us.iter().collect(),
            };
            for u in uuids {
                self.by_uuid.entry(u.clone()).or_insert(slot);
            }
        }
        for s in &c.sub_controls {
            self.add(home, s, Some(parent.unwrap_or(c)));
        }
    }

    /// The URIs a change of state `change_uuid` (of control `control_uuid`, when known)
    /// affects; empty when neither is part of the house (e.g. a global state).
    pub fn uris(&self, change_uuid: &str, control_uuid: Option<&str>) -> Vec<String> {
        control_uuid
            .and_then(|c| self.by_uuid.get(c))
            .or_else(|| self.by_uuid.get(change_uuid))
            .map(|i| self.uris[*i].clone())
            .unwrap_or_default()
    }
}

/// One-shot form of [`AffectedIndex::uris`] (indexes the house on every call: prefer the
/// index for a stream of changes).
pub fn affected_uris(home: &Home, change_uuid: &str, control_uuid: Option<&str>) -> Vec<String> {
    AffectedIndex::new(home).uris(change_uuid, control_uuid)
}

/// Whether the home summary (and so a room overview) shows this control.
fn in_summary(home: &Home, c: &Control) -> bool {
    matches!(
        home.family(c),
        Family::Lighting | Family::Blinds | Family::Climate | Family::Audio | Family::Security
    ) || matches!(
        sensor_type(c),
        Some("motion" | "door_window" | "temperature")
    )
}

/// The URIs a change of `c` itself affects.
fn control_uris(home: &Home, c: &Control) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut add = |s: String| {
        out.insert(s);
    };
    add(format!("home://devices/{}", c.uuid));
    add("home://devices/all".into());
    let family = home.family(c);
    add(format!("home://devices/category/{}", family.as_str()));
    if let Some(cat) = c.category.as_deref().and_then(|u| home.category(u)) {
        add(format!(
            "home://devices/category/{}",
            home.category_key(cat)
        ));
    }
    add(format!("home://devices/type/{}", c.kind.as_str()));
    let summary = in_summary(home, c);
    if summary {
        add("home://summary".into());
    }
    let room = c.room.as_deref().and_then(|r| home.room(r));
    if let Some(r) = room {
        let key = room_key(home, r);
        add(format!("home://rooms/{key}/devices"));
        add(format!("home://devices/{key}"));
        if summary {
            add(format!("home://rooms/{key}/overview"));
        }
        if family == Family::Climate {
            add(format!("home://climate/{key}"));
        }
    }
    match family {
        Family::Lighting => add("home://lighting".into()),
        Family::Blinds => add("home://blinds".into()),
        Family::Climate => add("home://climate".into()),
        Family::Audio => add("home://audio".into()),
        Family::Security => add("home://security".into()),
        Family::Energy => add("home://energy".into()),
        _ => {}
    }
    if crate::home::camera::camera_kind(c).is_some() {
        add("home://doorbells".into());
    }
    if let Some(kind) = sensor_type(c) {
        add("home://sensors".into());
        match kind {
            "door_window" => add("home://sensors/door-window".into()),
            "temperature" | "motion" | "humidity" | "brightness" => {
                add(format!("home://sensors/{kind}"))
            }
            _ => {}
        }
    }
    if detail::is_weather(home, c) {
        add("home://weather".into());
    }
    if c.kind == ControlKind::Alarm {
        for r in &home.rooms {
            add(format!("home://rooms/{}/overview", room_key(home, r)));
        }
    }
    if c.kind == ControlKind::WindowMonitor {
        let rooms = c
            .details
            .get("windows")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|w| w.get("room").and_then(Value::as_str))
            .filter_map(|u| home.room(u));
        for r in rooms {
            add(format!("home://rooms/{}/overview", room_key(home, r)));
        }
    }
    out
}
