//! Argument parsing at the edge: a tool's arguments are deserialised into its own typed struct
//! (unknown fields rejected), and ranges are checked here, each error naming the field.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{Caller, ToolError};
use crate::home::resolve::fold;
use crate::home::{Control, ControlKind, Home};

/// Deserialises `args` into `T`. Errors read like "missing field `device`",
/// "unknown field `colour`, expected one of ...", "invalid type: string \"x\", expected f64".
pub fn parse<T: DeserializeOwned>(args: &Map<String, Value>) -> Result<T, ToolError> {
    T::deserialize(Value::Object(args.clone())).map_err(|e| ToolError::InvalidParams(e.to_string()))
}

/// Checks that `value` of `field` lies in `min..=max` (and is a finite number).
pub fn in_range(field: &str, value: f64, min: f64, max: f64) -> Result<f64, ToolError> {
    if value.is_finite() && (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(ToolError::InvalidParams(format!(
            "{field} must be between {min} and {max} (got {})",
            short_number(value)
        )))
    }
}

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

/// Schema fragment for a listing's `name` filter ([`NameFilter`]).
pub fn name_filter_schema() -> Value {
    serde_json::json!({"type": "string", "description": "Part of the name"})
}

/// Maps a string argument to one of `allowed` (case and surrounding blanks ignored); the
/// error names the field and what it allows.
pub fn one_of<'a>(field: &str, got: &str, allowed: &[&'a str]) -> Result<&'a str, ToolError> {
    let g = got.trim().to_lowercase();
    allowed.iter().find(|a| **a == g).copied().ok_or_else(|| {
        ToolError::InvalidParams(format!(
            "{field} must be one of {} (got {got:?})",
            allowed.join(", ")
        ))
    })
}

/// Default and maximum of every list's `limit`.
pub const DEFAULT_LIMIT: usize = 50;
pub const MAX_LIMIT: usize = 500;

/// Checks a list `limit` (1..=MAX_LIMIT), defaulting to [`DEFAULT_LIMIT`].
pub fn limit(value: Option<i64>) -> Result<usize, ToolError> {
    match value {
        None => Ok(DEFAULT_LIMIT),
        Some(n) if n >= 1 && n as usize <= MAX_LIMIT => Ok(n as usize),
        Some(n) => Err(ToolError::InvalidParams(format!(
            "limit must be between 1 and {MAX_LIMIT} (got {n})"
        ))),
    }
}

/// The input schema of a tool: an object of `properties`, the `required` ones named, and no
/// other field (every tool refuses arguments it does not know).
pub fn closed(properties: Value, required: &[&str]) -> Value {
    let mut schema = serde_json::json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false
    });
    if !required.is_empty() {
        schema["required"] = serde_json::json!(required);
    }
    schema
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

/// Schema fragment for a `room` argument: a room name (accents optional) or UUID.
pub fn room_schema() -> Value {
    serde_json::json!({"type": "string"})
}

/// The whole input schema of the list tools that take only an optional `room` and `limit`.
pub fn room_limit_schema() -> Value {
    closed(
        serde_json::json!({"room": room_schema(), "limit": limit_schema()}),
        &[],
    )
}

/// Schema fragment for `limit`.
pub fn limit_schema() -> Value {
    serde_json::json!({
        "type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT
    })
}

/// Schema fragment for `dry_run`.
pub fn dry_run_schema() -> Value {
    serde_json::json!({
        "type": "boolean",
        "description": "Send nothing; show the commands"
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct A {
        #[allow(dead_code)]
        device: String,
    }

    fn err(r: Result<A, ToolError>) -> String {
        match r {
            Err(ToolError::InvalidParams(m)) => m,
            other => panic!("expected InvalidParams, got {other:?}"),
        }
    }

    #[test]
    fn errors_name_the_field() {
        let m = Map::new();
        assert!(err(parse::<A>(&m)).contains("`device`"));
        let mut m = Map::new();
        m.insert("device".into(), Value::from(3));
        assert!(err(parse::<A>(&m)).contains("invalid type"));
        let mut m = Map::new();
        m.insert("device".into(), Value::from("x"));
        m.insert("colour".into(), Value::from("red"));
        assert!(err(parse::<A>(&m)).contains("`colour`"));
    }

    #[test]
    fn ranges_and_limits() {
        assert!(in_range("value", 100.0, 0.0, 100.0).is_ok());
        assert!(
            matches!(in_range("value", 150.0, 0.0, 100.0), Err(ToolError::InvalidParams(m)) if m.contains("value must be between 0 and 100 (got 150)"))
        );
        assert!(in_range("value", f64::NAN, 0.0, 100.0).is_err());
        assert_eq!(limit(None).unwrap(), DEFAULT_LIMIT);
        assert!(limit(Some(0)).is_err());
        assert!(limit(Some(501)).is_err());
    }
}
