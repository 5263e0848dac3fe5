//! A part of the house: the rooms and categories an API key is limited to (issue 6, "a guest
//! key: lights and blinds in two rooms, nothing else").
//!
//! A [`Scope`] names rooms (by name or UUID) and categories: words that [`Home::word`] reads as
//! every tool, resource and completion reads them (a device family such as `lighting` or
//! `blinds` first, then a Loxone category by name or UUID, then a control type). Names are
//! compared folded (case and accents ignored, see [`fold`]). An empty list does not restrict: a scope with only
//! rooms covers every category in them, one with only categories covers the whole house.
//!
//! A control is in the scope when its room (a sub-control's own, else its parent's) is one of
//! the rooms and one of the categories names it ([`Word::contains`]). A control without a
//! room is outside any scope that names rooms.
//!
//! ## Who may touch a control: [`Access::permits`]
//! An [`Access`] is what one API key may see and operate: its [`Scope`] and, for a `device` key,
//! its allow-list (issue 15). [`Access::permits`] is the one decision "may this caller touch
//! this control"; tools call it at the last moment before a command goes to the Miniserver
//! (`tools::Caller::act`) and when they list or read controls for the caller.
//!
//! A device key's allow-list holds control names or UUIDs as the admin gave them; each entry
//! must resolve ([`Home::resolve_control`]) to exactly one control when the key is created or
//! updated ([`resolve_devices`]; the admin API and `keys --structure` then store the control's
//! UUID, which survives a rename), and is resolved again against the structure file the server
//! has now (so when the Miniserver's configuration changes, entries are re-resolved). An entry
//! that no longer resolves to exactly one control (renamed, deleted, or a second control of the
//! same name appeared) grants nothing: it is refused, logged, and shown on the key. An entry
//! grants its control and that control's sub-controls; never its parent, never a room.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, Mutex};

use super::model::{Control, Family, Home};
use super::resolve::{fold, Candidate, ResolveError};
use super::words::Word;

/// Rooms and categories a caller may see and operate; see the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    /// Room names or UUIDs; empty: every room.
    pub rooms: Vec<String>,
    /// Words [`Home::word`] reads: family names (`lighting`, `blinds`, `climate`, `audio`,
    /// `security`, `access`, `sensors`, `energy`, `other`, and their synonyms of
    /// [`Family::parse`]), Loxone category names/UUIDs or control types; empty: every
    /// category.
    pub categories: Vec<String>,
}

impl Scope {
    /// A scope of `rooms` and `categories`; `None` when both are empty (no restriction).
    pub fn of(rooms: &[String], categories: &[String]) -> Option<Scope> {
        (!rooms.is_empty() || !categories.is_empty()).then(|| Scope {
            rooms: rooms.to_vec(),
            categories: categories.to_vec(),
        })
    }

    /// Whether the scope names rooms (house-wide operations are then outside it).
    pub fn limits_rooms(&self) -> bool {
        !self.rooms.is_empty()
    }

    /// Whether the scope names categories.
    pub fn limits_categories(&self) -> bool {
        !self.categories.is_empty()
    }

    /// Whether the room with UUID `room` (`None`: no room) is in the scope.
    pub fn allows_room(&self, home: &Home, room: Option<&str>) -> bool {
        if self.rooms.is_empty() {
            return true;
        }
        let Some(uuid) = room else { return false };
        let name = home.room(uuid).map(|r| fold(&r.name));
        self.rooms.iter().any(|entry| {
            let entry = entry.trim();
            entry.eq_ignore_ascii_case(uuid) || name.as_deref() == Some(fold(entry).as_str())
        })
    }

    /// Whether the scope covers the whole family `family` (one of its categories is a family
    /// word naming it, or it names no categories). Room- and house-wide operations on a family
    /// need this. A family word is that family in every house ([`Home::word`] reads family
    /// words first), so this needs no house.
    pub fn allows_family(&self, family: Family) -> bool {
        self.categories.is_empty()
            || self
                .categories
                .iter()
                .any(|c| Family::parse(c) == Some(family))
    }

    /// Whether the word `name` (a tool's `category` argument: a family, a Loxone category or a
    /// control type, read by [`Home::word`]) names what one of the scope's categories names
    /// (always, when it names none; never, when `name` names nothing).
    pub fn allows_category_name(&self, home: &Home, name: &str) -> bool {
        if self.categories.is_empty() {
            return true;
        }
        let Ok(word) = home.word(name) else {
            return false;
        };
        self.words(home).any(|w| w == word)
    }

    /// Whether `control` is in the scope (see the module docs).
    pub fn contains(&self, home: &Home, control: &Control) -> bool {
        self.allows_room(home, room_of(home, control)) && self.allows_category(home, control)
    }

    /// The scope's categories as [`Home::word`] reads them; an entry that names nothing in
    /// this house grants nothing.
    fn words<'h>(&'h self, home: &'h Home) -> impl Iterator<Item = Word<'h>> + 'h {
        self.categories.iter().filter_map(|e| home.word(e).ok())
    }

    fn allows_category(&self, home: &Home, control: &Control) -> bool {
        self.categories.is_empty() || self.words(home).any(|w| w.contains(home, control))
    }
}

/// What one caller may see and operate: the key's rooms and categories and, for a `device`
/// key, the controls of its allow-list (see the module docs). `Access::default()` is the whole
/// house.
#[derive(Debug, Default)]
pub struct Access {
    /// Rooms and categories (`None`: every room and category).
    pub scope: Option<Scope>,
    /// A device key's allow-list entries (control names or UUIDs); `None`: not limited to
    /// devices (any other role). `Some(vec![])` grants nothing.
    pub devices: Option<Vec<String>>,
    /// The allow-list resolved against one structure file.
    resolved: Mutex<Option<Resolved>>,
}

/// A device allow-list resolved against one structure file: the address of its [`Home`], its
/// `lastModified`, and the granted control UUIDs (lowercase).
type Resolved = (usize, String, Arc<BTreeSet<String>>);

impl Clone for Access {
    fn clone(&self) -> Self {
        Access::new(self.scope.clone(), self.devices.clone())
    }
}

impl PartialEq for Access {
    fn eq(&self, other: &Self) -> bool {
        self.scope == other.scope && self.devices == other.devices
    }
}

impl Eq for Access {}

/// Why [`Access::permits`] said no; `Display` is the message for the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    /// The control (`"name (room)"`) is outside the key's rooms and categories.
    OutOfScope(String),
    /// The control (`"name (room)"`) is not on the device key's allow-list.
    NotAllowedDevice(String),
}

impl fmt::Display for Denied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Denied::OutOfScope(what) => write!(
                f,
                "{what} is outside the rooms and categories of this API key"
            ),
            Denied::NotAllowedDevice(what) => {
                write!(f, "{what} is not one of the devices of this API key")
            }
        }
    }
}

impl Access {
    /// An access of `scope` and device allow-list `devices` (see the fields).
    pub fn new(scope: Option<Scope>, devices: Option<Vec<String>>) -> Access {
        Access {
            scope,
            devices,
            resolved: Mutex::new(None),
        }
    }

    /// Whether this access limits anything (a scope or a device allow-list).
    pub fn is_limited(&self) -> bool {
        self.scope.is_some() || self.devices.is_some()
    }

    /// Whether this is a device key's access (limited to the controls of its allow-list).
    pub fn limits_devices(&self) -> bool {
        self.devices.is_some()
    }

    /// **The** decision: may this caller see and operate `control` (a control or
    /// sub-control of `home`)? `Err` says why not, naming the control and its room. Nothing
    /// else decides it: every command, batch item, workflow step, REST call and filtered read
    /// asks here.
    pub fn permits(&self, home: &Home, control: &Control) -> Result<(), Denied> {
        let what = || {
            let room = room_of(home, control)
                .and_then(|r| home.room(r))
                .map_or("no room".to_string(), |r| r.name.clone());
            format!("{} ({room})", control.name)
        };
        if let Some(scope) = &self.scope {
            if !scope.contains(home, control) {
                return Err(Denied::OutOfScope(what()));
            }
        }
        if self.devices.is_some()
            && !self
                .granted(home)
                .contains(&control.uuid.to_ascii_lowercase())
        {
            return Err(Denied::NotAllowedDevice(what()));
        }
        Ok(())
    }

    /// The control UUIDs (lowercase) the device allow-list grants in `home`: each entry's
    /// control and its sub-controls; entries that do not resolve to exactly one control grant
    /// nothing (logged when first met for a structure file). Cached per structure file.
    fn granted(&self, home: &Home) -> Arc<BTreeSet<String>> {
        let at = home as *const Home as usize;
        let mut cache = self.resolved.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((a, modified, set)) = cache.as_ref() {
            if *a == at && *modified == home.last_modified {
                return set.clone();
            }
        }
        let mut set = BTreeSet::new();
        for grant in resolve_devices(home, self.devices.as_deref().unwrap_or_default()) {
            match grant.resolved {
                Ok(c) => {
                    fn grant(set: &mut BTreeSet<String>, c: &Control) {
                        set.insert(c.uuid.to_ascii_lowercase());
                        c.sub_controls.iter().for_each(|s| grant(set, s));
                    }
                    if let Some(c) = home.control(&c.uuid) {
                        grant(&mut set, c);
                    }
                }
                Err(e) => log_unresolved(&grant.entry, home, &e, None),
            }
        }
        let set = Arc::new(set);
        *cache = Some((at, home.last_modified.clone(), set.clone()));
        set
    }
}

/// Logs (a warning, once per entry and structure file) that a device allow-list entry grants
/// nothing because it does not name exactly one control of `home`; `key` names the key when
/// the caller knows it. The server checks every device key at start and whenever the structure
/// file changes (`app`), and [`Access::permits`] logs entries it meets that no check did.
pub fn log_unresolved(entry: &str, home: &Home, e: &ResolveError, key: Option<&str>) {
    static LOGGED: Mutex<BTreeSet<(String, String)>> = Mutex::new(BTreeSet::new());
    let mut logged = LOGGED.lock().unwrap_or_else(|e| e.into_inner());
    if logged.len() >= 1024 {
        logged.clear(); // bounded; at worst a line is logged again
    }
    if logged.insert((entry.to_string(), home.last_modified.clone())) {
        let key = key.map(|k| format!("{k}: ")).unwrap_or_default();
        log::warn!(
            "{key}device key allow-list entry {entry:?} grants nothing in the structure file of \
             {}: {e}; update the key (admin page or `home-mcp keys update`)",
            home.last_modified
        );
    }
}

/// One entry of a device allow-list and what it resolves to in a structure file.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceGrant {
    /// The entry as stored on the key (a control name, `"name (room)"`, or a UUID).
    pub entry: String,
    /// The one control it names (UUID, name, room, type), or why it names none or several.
    pub resolved: Result<Candidate, ResolveError>,
}

impl DeviceGrant {
    /// The record shown on a key: `{entry, uuid, name, room, type}`, or `{entry, error,
    /// candidates|suggestions}` for an entry that grants nothing.
    pub fn to_json(&self) -> serde_json::Value {
        match &self.resolved {
            Ok(c) => serde_json::json!({
                "entry": self.entry, "uuid": c.uuid, "name": c.name, "room": c.room, "type": c.kind,
            }),
            Err(e) => {
                let mut v = serde_json::json!({"entry": self.entry, "error": e.to_string()});
                match e {
                    ResolveError::Ambiguous { candidates, .. } => {
                        v["candidates"] = serde_json::json!(candidates)
                    }
                    ResolveError::NotFound { suggestions, .. } => {
                        v["suggestions"] = serde_json::json!(suggestions)
                    }
                }
                v
            }
        }
    }
}

/// Resolves each allow-list entry to the one control it names in `home`
/// ([`Home::resolve_control`]: UUID, then exact name, then `"name (room)"` and the other
/// room-qualified forms). Used when a key is created or updated (an entry that does not
/// resolve is refused with its candidates and their rooms) and by [`Access::permits`].
pub fn resolve_devices(home: &Home, entries: &[String]) -> Vec<DeviceGrant> {
    entries
        .iter()
        .map(|entry| DeviceGrant {
            entry: entry.clone(),
            resolved: home
                .resolve_control(entry, None, &|_| true)
                .map(|c| Candidate {
                    uuid: c.uuid.clone(),
                    name: c.name.clone(),
                    room: room_of(home, c)
                        .and_then(|r| home.room(r))
                        .map(|r| r.name.clone()),
                    kind: c.kind.as_str().to_string(),
                }),
        })
        .collect()
}

/// The room UUID of `control`: its own, else (for a sub-control) its parent's.
pub fn room_of<'a>(home: &'a Home, control: &'a Control) -> Option<&'a str> {
    if let Some(r) = control.room.as_deref() {
        return Some(r);
    }
    fn parent<'a>(list: &'a [Control], uuid: &str) -> Option<&'a Control> {
        for c in list {
            if c.sub_controls.iter().any(|s| s.uuid == uuid) {
                return Some(c);
            }
            if let Some(p) = parent(&c.sub_controls, uuid) {
                return Some(p);
            }
        }
        None
    }
    let mut current = control;
    while let Some(p) = parent(&home.controls, &current.uuid) {
        if let Some(r) = p.room.as_deref() {
            return Some(r);
        }
        current = p;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::home::model::{Category, CategoryKind, ControlKind, Room};

    fn room(uuid: &str, name: &str) -> Room {
        Room {
            uuid: uuid.into(),
            name: name.into(),
            is_favorite: false,
            default_rating: 0,
        }
    }

    fn home() -> Home {
        let mut h = Home {
            rooms: vec![room("r-kitchen", "Küche"), room("r-bath", "Bad")],
            categories: vec![
                Category {
                    uuid: "c-lights".into(),
                    name: "Beleuchtung".into(),
                    kind: CategoryKind::Lights,
                    is_favorite: false,
                    default_rating: 0,
                },
                Category {
                    uuid: "c-outside".into(),
                    name: "Außen".into(),
                    kind: CategoryKind::Undefined,
                    is_favorite: false,
                    default_rating: 0,
                },
            ],
            ..Home::default()
        };
        let mut light = Control::new("light", "Deckenlicht", ControlKind::from_type("Switch"));
        light.room = Some("r-kitchen".into());
        light.category = Some("c-lights".into());
        let mut blind = Control::new("blind", "Rollo", ControlKind::from_type("Jalousie"));
        blind.room = Some("r-bath".into());
        let mut ctl = Control::new(
            "lc",
            "Lichtsteuerung",
            ControlKind::from_type("LightControllerV2"),
        );
        ctl.room = Some("r-kitchen".into());
        ctl.sub_controls = vec![Control::new(
            "lc/sub",
            "Spot",
            ControlKind::from_type("Dimmer"),
        )];
        let mut pump = Control::new("pump", "Pumpe", ControlKind::from_type("Switch"));
        pump.category = Some("c-outside".into());
        h.controls = vec![light, blind, ctl, pump];
        h
    }

    #[test]
    fn rooms_categories_and_sub_controls() {
        let h = home();
        let c = |uuid: &str| h.control(uuid).unwrap().clone();
        assert!(Scope::of(&[], &[]).is_none());
        let kitchen = Scope::of(&["kuche".into()], &[]).unwrap();
        assert!(kitchen.contains(&h, &c("light")));
        assert!(
            kitchen.contains(&h, &c("lc/sub")),
            "a sub-control is in its parent's room"
        );
        assert!(!kitchen.contains(&h, &c("blind")));
        assert!(
            !kitchen.contains(&h, &c("pump")),
            "no room: outside a room scope"
        );

        let guest = Scope::of(&["r-bath".into(), "Küche".into()], &["Lighting".into()]).unwrap();
        assert!(guest.contains(&h, &c("light")));
        assert!(
            !guest.contains(&h, &c("blind")),
            "blinds not in the categories"
        );
        let lighting = Scope::of(&[], &["Lighting".into()]).unwrap();
        assert!(lighting.contains(&h, &c("light")));
        assert!(
            !lighting.contains(&h, &c("pump")),
            "a switch in an `undefined` category is not lighting"
        );
        assert!(guest.allows_family(Family::Lighting));
        assert!(!guest.allows_family(Family::Blinds));

        let outside = Scope::of(&[], &["AUSSEN".into()]).unwrap();
        assert!(
            outside.contains(&h, &c("pump")),
            "a Loxone category by folded name"
        );
        assert!(!outside.contains(&h, &c("light")));
        assert!(!outside.allows_family(Family::Lighting));
        assert!(outside.allows_room(&h, None), "no room limit");
    }

    fn devices(entries: &[&str]) -> Access {
        Access::new(None, Some(entries.iter().map(|e| e.to_string()).collect()))
    }

    /// The fixture with a second "Deckenlicht", in the bathroom.
    fn two_ceiling_lights() -> Home {
        let mut h = home();
        let mut bath = Control::new("light2", "Deckenlicht", ControlKind::from_type("Dimmer"));
        bath.room = Some("r-bath".into());
        h.controls.push(bath);
        h
    }

    #[test]
    fn permits_only_what_the_allow_list_resolves_to() {
        let h = home();
        let c = |uuid: &str| h.control(uuid).unwrap().clone();
        let all = Access::default();
        assert!(!all.is_limited());
        for u in ["light", "blind", "lc", "lc/sub", "pump"] {
            assert_eq!(all.permits(&h, &c(u)), Ok(()), "{u}");
        }
        let light = devices(&["deckenlicht"]);
        assert_eq!(light.permits(&h, &c("light")), Ok(()));
        assert_eq!(
            light.permits(&h, &c("blind")),
            Err(Denied::NotAllowedDevice("Rollo (Bad)".into()))
        );
        assert!(light.permits(&h, &c("lc")).is_err());
        assert_eq!(
            light.permits(&h, &c("blind")).unwrap_err().to_string(),
            "Rollo (Bad) is not one of the devices of this API key"
        );
        // A control grants its sub-controls, a sub-control never its parent.
        let parent = devices(&["Lichtsteuerung"]);
        assert!(parent.permits(&h, &c("lc")).is_ok());
        assert!(parent.permits(&h, &c("lc/sub")).is_ok());
        let sub = devices(&["Spot"]);
        assert!(sub.permits(&h, &c("lc/sub")).is_ok());
        assert!(sub.permits(&h, &c("lc")).is_err());
        // A room's name is not a control: nothing in the room is granted by it.
        let room = devices(&["Küche"]);
        assert!(room.permits(&h, &c("light")).is_err());
        assert!(room.permits(&h, &c("lc")).is_err());
        // An empty list grants nothing.
        assert!(devices(&[]).permits(&h, &c("light")).is_err());
    }

    #[test]
    fn an_ambiguous_entry_grants_nothing_until_it_names_its_room() {
        let h = two_ceiling_lights();
        let c = |uuid: &str| h.control(uuid).unwrap().clone();
        let both = devices(&["Deckenlicht"]);
        assert!(both.permits(&h, &c("light")).is_err());
        assert!(both.permits(&h, &c("light2")).is_err());
        let grants = resolve_devices(&h, &["Deckenlicht".into()]);
        let Err(ResolveError::Ambiguous { candidates, .. }) = &grants[0].resolved else {
            panic!("{grants:?}")
        };
        let mut rooms: Vec<_> = candidates.iter().filter_map(|c| c.room.clone()).collect();
        rooms.sort();
        assert_eq!(rooms, ["Bad", "Küche"]);
        let json = grants[0].to_json();
        assert_eq!(
            json["candidates"].as_array().map(Vec::len),
            Some(2),
            "{json}"
        );

        let bath = devices(&["Deckenlicht (Bad)"]);
        assert!(bath.permits(&h, &c("light2")).is_ok());
        assert!(bath.permits(&h, &c("light")).is_err());
        let by_uuid = devices(&["LIGHT"]);
        assert!(
            by_uuid.permits(&h, &c("light")).is_ok(),
            "UUIDs case-insensitive"
        );
        assert!(by_uuid.permits(&h, &c("light2")).is_err());
    }

    #[test]
    fn entries_are_resolved_again_for_a_new_structure() {
        let h = home();
        let by_name = devices(&["Deckenlicht"]);
        let by_uuid = devices(&["light"]);
        assert!(by_name.permits(&h, h.control("light").unwrap()).is_ok());
        // The same accesses (cached for the first file) against a file where it is renamed.
        let mut renamed = home();
        renamed.last_modified = "2030-01-01 00:00:00".into();
        renamed.controls[0].name = "Hängelampe".into();
        let light = renamed.control("light").unwrap();
        assert!(
            by_name.permits(&renamed, light).is_err(),
            "the name is gone"
        );
        assert!(by_uuid.permits(&renamed, light).is_ok(), "the UUID stays");
        // And a second control of that name makes the name ambiguous.
        let two = two_ceiling_lights();
        assert!(by_name
            .permits(&two, two.control("light").unwrap())
            .is_err());
    }

    #[test]
    fn scope_and_devices_both_hold() {
        let h = home();
        let c = |uuid: &str| h.control(uuid).unwrap().clone();
        let scope = Scope::of(&["Bad".into()], &[]);
        let a = Access::new(scope, Some(vec!["Deckenlicht".into(), "Rollo".into()]));
        assert!(a.permits(&h, &c("blind")).is_ok());
        assert_eq!(
            a.permits(&h, &c("light")),
            Err(Denied::OutOfScope("Deckenlicht (Küche)".into()))
        );
        // Equal when scope and entries are, whatever was cached.
        assert_eq!(a.clone(), a);
    }
}
