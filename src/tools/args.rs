//! A tool's arguments, declared once as a Rust type with [`tool_args!`]: the field list gives
//! both the JSON Schema `tools/list` shows (which every call is checked against first, by
//! [`super::schema`], for its field-named messages) and the parser into the typed struct
//! ([`Args::take`]), so the two cannot disagree. A field's schema comes from its type
//! ([`ArgType`]: `String`, `f64`, `bool`, integers, `Option`, `Vec`, the word enums of
//! [`words!`], nested argument structs) and what the field adds: its description, its range
//! (from the one table in [`crate::home::bounds`]), its length, its default.
//!
//! Why not `schemars`, the schema derive of the Rust MCP ecosystem: its output would need a
//! transform pass to match what clients get today (it adds `$schema`, `title`, `format`,
//! `null` to every `Option`'s type and `minimum: 0` to unsigned integers, which `tools/list`,
//! at its size budget, cannot carry), it does not list serde aliases (the German action words
//! are the schema's `enum`), and ranges from our table would still be attributes written per
//! field. Its derive also brings `schemars_derive` and `serde_derive_internals` into the build.
//! This is about 300 lines with no dependency.
//!
//! The listing helpers every read tool shares live here too (room filter, name filter,
//! control type filter, the `data` schema of a listing).

use serde_json::{json, Map, Value};

use super::{Caller, ToolError};
use crate::home::bounds::Range;
use crate::home::resolve::fold;
use crate::home::{Control, ControlKind, Home};

/// A tool's arguments as one type (declared with [`tool_args!`]).
pub trait Args: Sized {
    /// The input schema: an object of the fields, the required ones named, no other field.
    fn schema() -> Value;
    /// The typed arguments of `args`, which fit [`Args::schema`] (every call is checked against
    /// it first, [`super::Tool::invoke`]); an error names the field.
    fn take(args: &Map<String, Value>) -> Result<Self, ToolError>;
}

/// What a field of a type contributes: its schema and how a JSON value becomes one.
pub trait ArgType: Sized {
    /// Whether a call must give the field (not so for an `Option` or a type with a value of
    /// its own when absent).
    const REQUIRED: bool = true;
    /// The JSON Schema of a value of this type.
    fn schema() -> Value;
    /// The value of `v`; `Err` says what is wrong ("must be of type string").
    fn from_json(v: &Value) -> Result<Self, String>;
    /// The value of an absent field (`Option`: `None`); `None` when it must be given.
    fn absent() -> Option<Self> {
        None
    }
}

/// A number as a schema shows it: whole numbers without a fraction (`5`, not `5.0`).
pub fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        json!(v as i64)
    } else {
        json!(v)
    }
}

/// One field of a [`tool_args!`] struct: its name in the arguments, its schema (the type's,
/// with what the declaration adds) and its value when absent.
pub struct Field<T> {
    key: &'static str,
    schema: Value,
    required: bool,
    default: Option<T>,
}

impl<T: ArgType> Field<T> {
    pub fn new(key: &'static str) -> Self {
        Field {
            key,
            schema: T::schema(),
            required: T::REQUIRED,
            default: None,
        }
    }

    /// Its name in the arguments, when it is not the Rust field's (`type`).
    pub fn key(mut self, key: &'static str) -> Self {
        self.key = key;
        self
    }

    /// `description`.
    pub fn about(mut self, text: &'static str) -> Self {
        self.schema["description"] = json!(text);
        self
    }

    /// `minimum` and `maximum`, from the range table ([`crate::home::bounds`]).
    pub fn range(mut self, range: Range) -> Self {
        self.schema["minimum"] = number(range.min);
        self.schema["maximum"] = number(range.max);
        self
    }

    /// `minimum` only.
    pub fn min(mut self, min: f64) -> Self {
        self.schema["minimum"] = number(min);
        self
    }

    /// `minLength`.
    pub fn min_chars(mut self, n: usize) -> Self {
        self.schema["minLength"] = json!(n);
        self
    }

    /// `maxLength`.
    pub fn max_chars(mut self, n: usize) -> Self {
        self.schema["maxLength"] = json!(n);
        self
    }

    /// `minItems`.
    pub fn min_items(mut self, n: usize) -> Self {
        self.schema["minItems"] = json!(n);
        self
    }

    /// `maxItems`.
    pub fn max_items(mut self, n: usize) -> Self {
        self.schema["maxItems"] = json!(n);
        self
    }

    /// Optional, `value` when absent, shown as the schema's `default`.
    pub fn default(mut self, value: T) -> Self
    where
        T: Clone + Into<Value>,
    {
        let shown: Value = value.clone().into();
        self.schema["default"] = shown
            .as_f64()
            .filter(|_| shown.is_f64())
            .map_or(shown, number);
        self.otherwise(value)
    }

    /// Optional, `value` when absent (not shown in the schema).
    pub fn otherwise(mut self, value: T) -> Self {
        self.required = false;
        self.default = Some(value);
        self
    }

    /// Adds the field to a schema's `properties` (and `required`).
    pub fn describe(self, properties: &mut Map<String, Value>, required: &mut Vec<&'static str>) {
        if self.required {
            required.push(self.key);
        }
        properties.insert(self.key.into(), self.schema);
    }

    /// The field's value in `args`: an error names the field.
    pub fn take(self, args: &Map<String, Value>) -> Result<T, ToolError> {
        match args.get(self.key) {
            Some(v) => {
                T::from_json(v).map_err(|m| ToolError::InvalidParams(format!("{} {m}", self.key)))
            }
            None => self
                .default
                .or_else(T::absent)
                .ok_or_else(|| ToolError::InvalidParams(format!("missing field `{}`", self.key))),
        }
    }
}

/// The input schema of an object of `properties`, the `required` ones named, and no other
/// field (every tool refuses arguments it does not know).
pub fn closed(properties: Map<String, Value>, required: Vec<&'static str>) -> Value {
    let mut schema = json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false
    });
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// Declares a tool's arguments: a struct whose fields are both its JSON Schema ([`Args`]) and
/// its parser. Each field is `name: Type`, optionally followed by `{option: value, ...}` with
/// the options of [`Field`] (`key`, `about`, `range`, `min`, `min_chars`, `max_chars`,
/// `min_items`, `max_items`, `default`, `otherwise`). The order of the fields is the order of
/// `required`.
macro_rules! tool_args {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $field:ident : $ty:ty $({ $($opt:ident : $val:expr),* $(,)? })?
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $crate::tools::args::Args for $name {
            fn schema() -> serde_json::Value {
                let mut properties = serde_json::Map::new();
                let mut required = Vec::new();
                $(
                    $crate::tools::args::Field::<$ty>::new(stringify!($field))
                        $($(.$opt($val))*)?
                        .describe(&mut properties, &mut required);
                )*
                $crate::tools::args::closed(properties, required)
            }

            fn take(
                args: &serde_json::Map<String, serde_json::Value>,
            ) -> Result<Self, $crate::tools::ToolError> {
                Ok($name {
                    $(
                        $field: $crate::tools::args::Field::<$ty>::new(stringify!($field))
                            $($(.$opt($val))*)?
                            .take(args)?,
                    )*
                })
            }
        }

        impl $crate::tools::args::ArgType for $name {
            fn schema() -> serde_json::Value {
                <$name as $crate::tools::args::Args>::schema()
            }

            fn from_json(v: &serde_json::Value) -> Result<Self, String> {
                match v.as_object() {
                    Some(args) => <$name as $crate::tools::args::Args>::take(args)
                        .map_err(|e| e.to_string()),
                    None => Err("must be of type object".into()),
                }
            }
        }
    };
}
pub(crate) use tool_args;

/// Declares an enum of words (a tool's `action`, `mode`, `state`): each variant is one word or
/// several (`On = "on" | "ein" | "an"`, synonyms after the first); the schema is a string of
/// those words (`enum`, in declaration order), the parser takes them exactly.
macro_rules! words {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $word:literal $(| $alias:literal)* ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )*
        }

        #[allow(dead_code)]
        impl $name {
            /// Every word, synonyms included, in declaration order (the schema's `enum`).
            pub const WORDS: &'static [&'static str] = &[$($word, $($alias,)*)*];

            /// The word of this value (its first).
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $word, )*
                }
            }

            /// The value `word` names, as written.
            pub fn from_word(word: &str) -> Option<Self> {
                match word {
                    $( $word $(| $alias)* => Some($name::$variant), )*
                    _ => None,
                }
            }
        }

        impl $crate::tools::args::ArgType for $name {
            fn schema() -> serde_json::Value {
                serde_json::json!({"type": "string", "enum": $name::WORDS})
            }

            fn from_json(v: &serde_json::Value) -> Result<Self, String> {
                v.as_str().and_then($name::from_word).ok_or_else(|| {
                    format!("must be one of {}", $name::WORDS.join(", "))
                })
            }
        }
    };
}
pub(crate) use words;

impl ArgType for String {
    fn schema() -> Value {
        json!({"type": "string"})
    }
    fn from_json(v: &Value) -> Result<Self, String> {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| "must be of type string".into())
    }
}

impl ArgType for bool {
    fn schema() -> Value {
        json!({"type": "boolean"})
    }
    fn from_json(v: &Value) -> Result<Self, String> {
        v.as_bool().ok_or_else(|| "must be of type boolean".into())
    }
}

impl ArgType for f64 {
    fn schema() -> Value {
        json!({"type": "number"})
    }
    fn from_json(v: &Value) -> Result<Self, String> {
        v.as_f64()
            .filter(|n| n.is_finite())
            .ok_or_else(|| "must be of type number".into())
    }
}

/// A whole number within `lo..=hi` (a JSON integer, or a number such as `2.0`, which JSON
/// Schema's `integer` admits too).
fn whole(v: &Value, lo: f64, hi: f64) -> Result<f64, String> {
    match v.as_f64() {
        Some(n) if n.fract() == 0.0 && n >= lo && n <= hi => Ok(n),
        Some(n) if n.fract() == 0.0 => Err(format!(
            "must be between {lo} and {hi} (got {})",
            short_number(n)
        )),
        _ => Err("must be of type integer".into()),
    }
}

impl ArgType for i64 {
    fn schema() -> Value {
        json!({"type": "integer"})
    }
    fn from_json(v: &Value) -> Result<Self, String> {
        match v.as_i64() {
            Some(n) => Ok(n),
            None => whole(v, -9e15, 9e15).map(|n| n as i64),
        }
    }
}

impl ArgType for u32 {
    fn schema() -> Value {
        json!({"type": "integer"})
    }
    fn from_json(v: &Value) -> Result<Self, String> {
        whole(v, 0.0, f64::from(u32::MAX)).map(|n| n as u32)
    }
}

impl ArgType for Map<String, Value> {
    fn schema() -> Value {
        json!({"type": "object"})
    }
    fn from_json(v: &Value) -> Result<Self, String> {
        v.as_object()
            .cloned()
            .ok_or_else(|| "must be of type object".into())
    }
}

impl<T: ArgType> ArgType for Option<T> {
    const REQUIRED: bool = false;
    fn schema() -> Value {
        T::schema()
    }
    fn from_json(v: &Value) -> Result<Self, String> {
        T::from_json(v).map(Some)
    }
    fn absent() -> Option<Self> {
        Some(None)
    }
}

impl<T: ArgType> ArgType for Vec<T> {
    fn schema() -> Value {
        json!({"type": "array", "items": T::schema()})
    }
    fn from_json(v: &Value) -> Result<Self, String> {
        let items = v.as_array().ok_or("must be of type array")?;
        items
            .iter()
            .enumerate()
            .map(|(i, item)| T::from_json(item).map_err(|m| format!("[{i}] {m}")))
            .collect()
    }
}

/// An argument struct nested in another (the operations of `control_multiple_devices`),
/// without the descriptions of its fields (the tool refers to the other tool's).
pub struct Brief<T>(pub T);

impl<T: ArgType> ArgType for Brief<T> {
    fn schema() -> Value {
        let mut s = T::schema();
        if let Some(props) = s["properties"].as_object_mut() {
            for p in props.values_mut().filter_map(Value::as_object_mut) {
                p.remove("description");
            }
        }
        s
    }
    fn from_json(v: &Value) -> Result<Self, String> {
        T::from_json(v).map(Brief)
    }
}

/// The description of a listing's `name` filter ([`NameFilter`]).
pub const NAME: &str = "Part of the name";

/// Default and maximum of every list's `limit`.
pub const DEFAULT_LIMIT: usize = 50;
pub const MAX_LIMIT: usize = 500;

tool_args! {
    /// The arguments of the listings that take only a room filter and a limit.
    pub struct RoomListing {
        room: Option<String>,
        limit: Limit,
    }
}

/// A listing's `limit`: at most this many entries, 1 to [`MAX_LIMIT`], [`DEFAULT_LIMIT`] when
/// absent.
#[derive(Debug, Clone, Copy)]
pub struct Limit(pub usize);

impl ArgType for Limit {
    const REQUIRED: bool = false;
    fn schema() -> Value {
        json!({"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT})
    }
    fn from_json(v: &Value) -> Result<Self, String> {
        whole(v, 1.0, MAX_LIMIT as f64).map(|n| Limit(n as usize))
    }
    fn absent() -> Option<Self> {
        Some(Limit(DEFAULT_LIMIT))
    }
}

/// `dry_run`: send nothing, answer what would be sent; `false` when absent.
#[derive(Debug, Clone, Copy)]
pub struct DryRun(pub bool);

impl ArgType for DryRun {
    const REQUIRED: bool = false;
    fn schema() -> Value {
        json!({"type": "boolean", "description": "Send nothing; show the commands"})
    }
    fn from_json(v: &Value) -> Result<Self, String> {
        bool::from_json(v).map(DryRun)
    }
    fn absent() -> Option<Self> {
        Some(DryRun(false))
    }
}

/// `confirm`: what happens without it (the tools' descriptions say what needs confirmation);
/// it counts only where the key's owner lets the model confirm ([`Caller::confirm`]).
#[derive(Debug, Clone, Copy)]
pub struct Confirm(pub Option<bool>);

impl ArgType for Confirm {
    const REQUIRED: bool = false;
    fn schema() -> Value {
        json!({"type": "boolean", "description": "Counts only where the key's owner allows it; else the user is asked"})
    }
    fn from_json(v: &Value) -> Result<Self, String> {
        bool::from_json(v).map(|b| Confirm(Some(b)))
    }
    fn absent() -> Option<Self> {
        Some(Confirm(None))
    }
}

/// One name or a list of names (`target` of the unified tools): a non-empty string or a
/// non-empty list of them, as `anyOf` branches of one type each (portable to schema dialects
/// whose `type` is a single name).
#[derive(Debug, Clone)]
pub struct Names(pub Vec<String>);

impl ArgType for Names {
    fn schema() -> Value {
        json!({
            "anyOf": [
                {"type": "string", "minLength": 1},
                {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1}
            ]
        })
    }
    fn from_json(v: &Value) -> Result<Self, String> {
        match v {
            Value::String(s) => Ok(Names(vec![s.clone()])),
            _ => Vec::<String>::from_json(v).map(Names),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    tool_args! {
        struct A {
            device: String,
            level: Option<f64> { range: crate::home::bounds::PERCENT, about: "%" },
            kelvin: f64 { range: crate::home::bounds::KELVIN, default: 2700.0 },
            kind: Option<String> { key: "type" },
            limit: Limit,
        }
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn the_schema_comes_from_the_fields() {
        assert_eq!(
            <A as Args>::schema(),
            json!({
                "type": "object",
                "properties": {
                    "device": {"type": "string"},
                    "level": {"type": "number", "minimum": 0, "maximum": 100, "description": "%"},
                    "kelvin": {"type": "number", "minimum": 2700, "maximum": 6500, "default": 2700},
                    "type": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50}
                },
                "required": ["device"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn fields_take_their_values_and_defaults() {
        let a = A::take(&args(
            json!({"device": "x", "type": "Dimmer", "limit": 2.0}),
        ))
        .unwrap();
        assert_eq!(
            (
                a.device.as_str(),
                a.level,
                a.kelvin,
                a.kind.as_deref(),
                a.limit.0
            ),
            ("x", None, 2700.0, Some("Dimmer"), 2)
        );
        let e = A::take(&args(json!({"level": 5}))).err().unwrap();
        assert_eq!(e.to_string(), "missing field `device`");
        let e = A::take(&args(json!({"device": 3}))).err().unwrap();
        assert_eq!(e.to_string(), "device must be of type string");
    }
}
