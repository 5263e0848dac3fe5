//! The listing helpers every read tool shares: the room filter, the name filter, the control
//! type filter, the refusal of a control of the wrong kind and the `data` schema of a listing.
//! (A tool's arguments themselves are declared and parsed in [`super::schema`].)

use serde_json::{Map, Value};

use super::{Caller, ToolError};
use crate::home::resolve::fold;
use crate::home::{Control, ControlKind, Home};

/// A number as error messages show it: as it is, or in exponent form when it would take more
/// than 15 digits (`-1e308`, not 309 digits).
pub fn short_number(v: f64) -> String {
    if v.is_finite() && v.abs() < 1e15 {
        v.to_string()
    } else {
        format!("{v:e}")
    }
}

/// The UUID of the room an optional `room` argument names (name or UUID, accents optional);
/// `None` when the argument is absent. An unknown or ambiguous room is the resolver's error
/// (a `DEVICE_NOT_FOUND` or `INVALID_PARAMETERS` tool result with suggestions/candidates).
pub fn room_uuid(home: &Home, room: Option<&str>) -> Result<Option<String>, ToolError> {
    match room {
        Some(r) => Ok(Some(home.resolve_room(r)?.uuid.clone())),
        None => Ok(None),
    }
}

/// Whether `c` belongs in a listing for `caller` limited to `room` (a room UUID from
/// [`room_uuid`]; `None`: every room): it is in that room, and the caller's key may see it
/// ([`Caller::permits`]).
pub fn listed(home: &Home, caller: &Caller, room: Option<&String>, c: &Control) -> bool {
    room.is_none_or(|r| c.room.as_ref() == Some(r)) && caller.permits(home, c).is_ok()
}

/// The controls `member` takes, in the room an optional `room` argument names ([`room_uuid`]),
/// that `caller` may see ([`listed`]), in the house's order.
pub fn listing<'h>(
    home: &'h Home,
    caller: &Caller,
    room: Option<&str>,
    member: impl Fn(&Control) -> bool,
) -> Result<Vec<&'h Control>, ToolError> {
    let room = room_uuid(home, room)?;
    Ok(home
        .controls
        .iter()
        .filter(|c| member(c) && listed(home, caller, room.as_ref(), c))
        .collect())
}

/// The description of a listing's `name` filter ([`NameFilter`]).
pub const NAME: &str = "Part of the name";

/// A `name` argument of a listing: part of the name, compared folded ([`fold`]: accents,
/// case, separators); absent, it matches every name.
pub struct NameFilter(Option<String>);

impl NameFilter {
    /// The filter of an optional `name` argument.
    pub fn new(name: Option<&str>) -> Self {
        Self(name.map(fold))
    }

    /// Whether `name` contains the asked part (always, without one).
    pub fn matches(&self, name: &str) -> bool {
        self.0
            .as_ref()
            .is_none_or(|n| fold(name).contains(n.as_str()))
    }
}

/// The `data` schema of a listing tool: the list under `key` (each entry as `item` says,
/// e.g. [`item_schema`]), its `total` and the other `counts`, all integers, always present.
pub fn listing_schema(key: &str, item: Value, counts: &[&str]) -> Value {
    let mut properties = Map::new();
    properties.insert(
        key.into(),
        serde_json::json!({"type": "array", "items": item}),
    );
    let mut required = vec![key];
    for count in std::iter::once(&"total").chain(counts) {
        properties.insert((*count).into(), serde_json::json!({"type": "integer"}));
        required.push(count);
    }
    serde_json::json!({
        "type": "object",
        "properties": properties,
        "required": required
    })
}

/// The schema of an entry of a listing: an object with the `required` fields.
pub fn item_schema(required: &[&str]) -> Value {
    serde_json::json!({"type": "object", "required": required})
}

/// When `query` names a control that is not what the tool takes (`expected`, e.g. "an audio
/// zone (AudioZone, AudioZoneV2, CentralAudioZone)"): the refusal saying what it is instead.
/// `None` when it names no control.
pub fn wrong_kind(home: &Home, query: &str, expected: &str) -> Option<ToolError> {
    let c = home.resolve_control(query, None, &|_| true).ok()?;
    Some(ToolError::Refused {
        code: "INVALID_PARAMETERS",
        message: format!(
            "{} ({}) is of type {}, not {expected}",
            c.name,
            home.room_name(c).unwrap_or("no room"),
            c.kind
        ),
    })
}

/// A Loxone control type filter (`Dimmer`, `jalousie`: case- and accent-folded) among the
/// types of the controls `member` accepts; `None` when absent. An unknown type names the
/// types present.
pub fn control_type(
    home: &Home,
    t: Option<&str>,
    member: &dyn Fn(&Control) -> bool,
) -> Result<Option<ControlKind>, ToolError> {
    let Some(t) = t else { return Ok(None) };
    let mut known: Vec<&str> = home
        .controls
        .iter()
        .filter(|c| member(c))
        .map(|c| c.kind.as_str())
        .collect();
    known.sort_unstable();
    known.dedup();
    let folded = fold(t);
    match known.iter().find(|k| fold(k) == folded) {
        Some(k) => Ok(Some(ControlKind::from_type(k))),
        None => Err(ToolError::InvalidParams(format!(
            "type {t:?} does not occur here; types present: {}",
            known.join(", ")
        ))),
    }
}
