//! A part of the house: the rooms and categories an API key is limited to (issue 6, "a guest
//! key: lights and blinds in two rooms, nothing else").
//!
//! A [`Scope`] names rooms (by name or UUID) and categories (a device family such as
//! `lighting` or `blinds`, or a Loxone category by name or UUID). Names are compared folded
//! (case and accents ignored, see [`fold`]). An empty list does not restrict: a scope with only
//! rooms covers every category in them, one with only categories covers the whole house.
//!
//! A control is in the scope when its room (a sub-control's own, else its parent's) is one of
//! the rooms and its family or Loxone category is one of the categories. A control without a
//! room is outside any scope that names rooms.

use super::model::{Control, Family, Home};
use super::resolve::fold;

/// Rooms and categories a caller may see and operate; see the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    /// Room names or UUIDs; empty: every room.
    pub rooms: Vec<String>,
    /// Family names (`lighting`, `blinds`, `climate`, `audio`, `security`, `access`,
    /// `sensors`, `energy`, `other`, and their synonyms of [`Family::parse`]) or Loxone
    /// category names/UUIDs; empty: every category.
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

    /// Whether the scope covers the whole family `family` (its name is listed, or no
    /// categories are). Room- and house-wide operations on a family need this.
    pub fn allows_family(&self, family: Family) -> bool {
        self.categories.is_empty()
            || self
                .categories
                .iter()
                .any(|c| Family::parse(c) == Some(family))
    }

    /// Whether the Loxone category or family named `name` (as a tool's `category` argument
    /// gives it) is one of the scope's categories (always, when it names none).
    pub fn allows_category_name(&self, name: &str) -> bool {
        if self.categories.is_empty() {
            return true;
        }
        if let Some(f) = Family::parse(name) {
            return self.allows_family(f);
        }
        let name = fold(name.trim());
        self.categories.iter().any(|c| fold(c.trim()) == name)
    }

    /// Whether `control` is in the scope (see the module docs).
    pub fn contains(&self, home: &Home, control: &Control) -> bool {
        self.allows_room(home, room_of(home, control)) && self.allows_category(home, control)
    }

    fn allows_category(&self, home: &Home, control: &Control) -> bool {
        if self.allows_family(home.family(control)) {
            return true;
        }
        let Some(cat) = control.category.as_deref() else {
            return false;
        };
        let name = home.category(cat).map(|c| fold(&c.name));
        self.categories.iter().any(|entry| {
            let entry = entry.trim();
            entry.eq_ignore_ascii_case(cat) || name.as_deref() == Some(fold(entry).as_str())
        })
    }
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
}
