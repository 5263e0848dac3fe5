//! What a tool reaches ([`Reach`]), declared with the tool, and whether a call by a key limited
//! to rooms or categories (issue 6) stays inside the key's part of the house. The auth gate asks
//! before the call runs (through [`crate::home::ToolFacts::check_scope`], which the catalogue
//! answers with [`Reach::check`]); workflows ask whether a step acts on the whole house
//! ([`Reach::house_wide`]).
//!
//! Two layers keep a scoped key inside its part of the house:
//! 1. **Every command** is checked at the last moment ([`super::Caller::act`]): a control
//!    outside the scope is refused with `INSUFFICIENT_PERMISSIONS`, whatever tool, batch or
//!    workflow step sends it. This is the guarantee.
//! 2. **Before the call**, [`Reach::check`] refuses what would read or reach outside the scope,
//!    and fails closed: a tool that declares no reach ([`Reach::Refused`], the default;
//!    workflows among them) is refused.

use serde_json::{Map, Value};

use crate::home::model::{Control, Family, Home, TypeFamily};
use crate::home::Scope;
use crate::home::Word;

/// What a call of a tool reaches, as far as its arguments tell; see [`Reach::check`] for what
/// each asks of a key limited to rooms or categories.
#[derive(Clone, Copy)]
pub enum Reach {
    /// Named controls (`control_device`, the alarm tools, audio zones): each is checked when
    /// its command is sent; the room argument `room` (picking among equal names), if given,
    /// must be one of the key's rooms.
    Controls { room: &'static str },
    /// The controls of `family` in the room the argument `room` names (room-wide commands and
    /// reads with a room filter): a key limited to rooms must name one of its rooms, a key
    /// limited to categories must cover `family`.
    Room { room: &'static str, family: Family },
    /// The controls of a room of the families or Loxone types the arguments `device_type` and
    /// `device_types` name (`control_room_devices`): the room as for [`Reach::Room`]; a key
    /// limited to categories must name the kinds, and cover each kind's family (a generic
    /// type such as Switch has none of its own: each control's category decides when sent).
    RoomKinds { room: &'static str },
    /// Every control of `family` in the house: refused to keys limited to rooms.
    House(Family),
    /// By the `scope` argument of the unified tools: `device` as [`Reach::Controls`], `room`
    /// as [`Reach::Room`] with the room in `target`, `category` and `system` as
    /// [`Reach::House`].
    Unified(Family),
    /// A listing by room (argument `room`) and category (argument `category`, a family or a
    /// Loxone category): a key limited to rooms must name one of its rooms, a key limited to
    /// categories one of its categories.
    Listing,
    /// Every family of a room (argument `room`), or of the house: refused to keys limited to
    /// categories; a key limited to rooms must name one of its rooms.
    AllFamilies { room: &'static str },
    /// The controls `resolve` finds for the argument `arg` (a climate zone: a room or a room
    /// controller), exactly as the tool finds them: each must be inside the key's scope.
    Resolved {
        arg: &'static str,
        resolve: for<'h> fn(&'h Home, &str) -> Result<Vec<&'h Control>, String>,
    },
    /// Lists only what the key may see (`list_rooms`: the key's rooms): always allowed.
    Filtered,
    /// Not available to keys limited to rooms or categories (workflows, which run other tools).
    Refused,
}

impl Reach {
    /// `Ok` when a call with `args` stays inside `scope` as far as the arguments tell (see the
    /// variants); `Err` with the reason otherwise. Reads only the arguments the reach names
    /// (an argument of the wrong type counts as absent; the call itself refuses it).
    pub fn check(
        &self,
        home: &Home,
        args: &Map<String, Value>,
        scope: &Scope,
    ) -> Result<(), String> {
        let arg = |k: &str| args.get(k).and_then(Value::as_str);
        let room = |key: &str, required: bool| -> Result<(), String> {
            match arg(key) {
                Some(q) => {
                    let r = home
                        .resolve_room(q)
                        .map_err(|e| format!("room {q:?}: {e}"))?;
                    if scope.allows_room(home, Some(&r.uuid)) {
                        Ok(())
                    } else {
                        Err(format!("room {} is outside this key's rooms", r.name))
                    }
                }
                None if required && scope.limits_rooms() => Err(format!(
                    "this key is limited to rooms ({}): name one in `{key}`",
                    scope.rooms.join(", ")
                )),
                None => Ok(()),
            }
        };
        let family = |f: Family| {
            if scope.allows_family(f) {
                Ok(())
            } else {
                Err(format!("{} is outside this key's categories", f.as_str()))
            }
        };
        let house_wide = |f: Family| {
            if scope.limits_rooms() {
                Err("house-wide operations are outside a key limited to rooms; name a room".into())
            } else {
                family(f)
            }
        };
        match *self {
            Reach::Controls { room: key } => room(key, false),
            Reach::Room {
                room: key,
                family: f,
            } => room(key, true).and(family(f)),
            Reach::RoomKinds { room: key } => {
                room(key, true)?;
                if !scope.limits_categories() {
                    return Ok(());
                }
                let mut kinds: Vec<&str> = arg("device_type").into_iter().collect();
                if let Some(Value::Array(list)) = args.get("device_types") {
                    kinds.extend(list.iter().filter_map(Value::as_str));
                }
                if kinds.is_empty() {
                    return Err(
                        "this key is limited to categories: name them in device_type(s)".into(),
                    );
                }
                // A generic type (Switch, Pushbutton, ...) has no family of its own: each
                // control's category decides, and the scope check at actuation refuses those
                // outside the key.
                kinds.into_iter().try_for_each(|k| match home.word(k) {
                    Ok(Word::Family(f)) => family(f),
                    Ok(Word::Type(t)) => match t.type_family() {
                        TypeFamily::Fixed(f) => family(f),
                        TypeFamily::ByCategory => Ok(()),
                    },
                    Ok(Word::Category(_)) if scope.allows_category_name(home, k) => Ok(()),
                    Ok(Word::Category(c)) => {
                        Err(format!("{} is outside this key's categories", c.name))
                    }
                    Err(e) => Err(e.to_string()),
                })
            }
            Reach::House(f) => house_wide(f),
            Reach::Unified(f) => match arg("scope").unwrap_or("") {
                "device" => Ok(()),
                "room" => {
                    let target = arg("target").ok_or("scope room needs a target room")?;
                    let r = home
                        .resolve_room(target)
                        .map_err(|e| format!("room {target:?}: {e}"))?;
                    if !scope.allows_room(home, Some(&r.uuid)) {
                        return Err(format!("room {} is outside this key's rooms", r.name));
                    }
                    family(f)
                }
                _ => house_wide(f),
            },
            Reach::Listing => {
                room("room", true)?;
                match arg("category") {
                    Some(c) if scope.allows_category_name(home, c) => Ok(()),
                    Some(c) => Err(format!("category {c:?} is outside this key's categories")),
                    None if scope.limits_categories() => Err(format!(
                        "this key is limited to categories ({}): name one in `category`",
                        scope.categories.join(", ")
                    )),
                    None => Ok(()),
                }
            }
            Reach::AllFamilies { room: key } => {
                if scope.limits_categories() {
                    return Err(
                        "the summary covers every category; this key is limited to some".into(),
                    );
                }
                room(key, true)
            }
            Reach::Resolved { arg: key, resolve } => {
                let q = arg(key).ok_or_else(|| format!("{key} is required"))?;
                let controls = resolve(home, q)?;
                match controls.iter().find(|c| !scope.contains(home, c)) {
                    None => Ok(()),
                    Some(c) => Err(format!(
                        "{} is outside this key's rooms and categories",
                        c.name
                    )),
                }
            }
            Reach::Filtered => Ok(()),
            Reach::Refused => Err("not available to keys limited to rooms or categories".into()),
        }
    }

    /// Whether a call with `args` acts on the whole house (a workflow with such a step is
    /// confirmed before it runs): [`Reach::House`], and [`Reach::Unified`] with scope
    /// `system` (or a synonym).
    pub fn house_wide(&self, args: &Map<String, Value>) -> bool {
        match self {
            Reach::House(_) => true,
            Reach::Unified(_) => args
                .get("scope")
                .and_then(Value::as_str)
                .and_then(super::batch::Scope::from_word)
                .is_some_and(|s| s == super::batch::Scope::System),
            _ => false,
        }
    }
}
