//! A tool's arguments: declared once as a Rust type with [`tool_args!`], whose field list gives
//! both the JSON Schema `tools/list` shows and the parser into the typed struct
//! ([`Args::take`]), so the two cannot disagree; and the small validator every call is checked
//! against first ([`validate`]), for messages that name the field. A field's schema comes from
//! its type ([`ArgType`]: `String`, `f64`, `bool`, integers, `Option`, `Vec`, the word enums of
//! [`words!`], nested argument structs, [`Limit`], [`DryRun`], [`Confirm`], [`Names`]) and what
//! the field adds: its description, its range (from the one table in [`crate::home::bounds`]),
//! its length, its default.
//!
//! Why not `schemars`, the schema derive of the Rust MCP ecosystem: its output would need a
//! transform pass to match what clients get today (it adds `$schema`, `title`, `format`,
//! `null` to every `Option`'s type and `minimum: 0` to unsigned integers, which `tools/list`,
//! at its size budget, cannot carry), it does not list serde aliases (the German action words
//! are the schema's `enum`), and ranges from our table would still be attributes written per
//! field. Its derive also brings `schemars_derive` and `serde_derive_internals` into the build.
//! The declaration part is about 300 lines with no dependency.
//!
//! ## The validator
//! A small validator for the part of JSON Schema our tools' input schemas use: every tool call
//! is checked against the tool's own `inputSchema` before its handler runs
//! ([`super::Tool::invoke`]), and a workflow's step arguments against the step tool's schema
//! when the workflow is created. (The `jsonschema` crate's default features pull `reqwest`,
//! whose blocking client runs a tokio runtime; without them it still brings `regex`,
//! `fancy-regex`, `url`/`idna`, `time` and reference resolution, for keywords our schemas do not
//! use. This is about 300 lines with no dependency beyond `serde_json`.)
//!
//! Supported keywords: `type` (a name or a list of names; `integer` accepts whole numbers),
//! `properties`, `required`, `additionalProperties` (`false` or a schema), `enum`, `const`,
//! `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `minLength`, `maxLength`,
//! `items`, `minItems`, `maxItems`, `oneOf`, `anyOf`, `allOf`. Annotations (`description`,
//! `default`, `title`, ...) and keywords we do not use (`pattern`, `format`, `$ref`) are ignored,
//! so a schema using them validates more loosely, never more strictly (a test checks that no
//! tool schema uses a keyword outside this list). Handlers still check what a schema cannot say
//! (a control's own range, a room that exists).
//!
//! ## Arguments a word does not use
//! Where a word argument (`action`, `mode`) decides which other arguments apply, the word
//! declares the fields it uses (`Set = "set" => ["number"]` in [`words!`]) and the argument
//! struct names the fields the word decides (`action: Verb { selects: &["value", "number"] }`
//! in [`tool_args!`]). A call that gives one of those fields with a word that does not use it
//! is refused (-32602, naming the field and the word): nothing a call says is silently
//! ignored or echoed back. One rule for every tool, decided here ([`Field::selects`]).
//!
//! Errors carry the path of the offending value (`action`, `devices[0]`, `room`) and name it
//! with what it allows, in the words of the tools' own checks (`value must be between 0 and
//! 100 (got 150)`), as spec §7.2 wants for -32602.

use serde_json::{json, Map, Value};

use super::ToolError;
use crate::home::bounds::Range;

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

/// A word argument that decides which of a tool's other arguments apply (see the module docs):
/// implemented by every [`words!`] enum.
pub trait Selects {
    /// The word as results name it (its first).
    fn word(&self) -> &'static str;
    /// The fields this word uses (declared after the word: `=> ["value"]`).
    fn uses(&self) -> &'static [&'static str];
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
    /// The fields this word decides, and how to read which it uses ([`Field::selects`]).
    selects: Option<(&'static [&'static str], WordUses<T>)>,
}

/// How a field of type `T` names its word and the fields that word uses ([`Selects`]).
type WordUses<T> = fn(&T) -> (&'static str, &'static [&'static str]);

impl<T: ArgType> Field<T> {
    pub fn new(key: &'static str) -> Self {
        Field {
            key,
            schema: T::schema(),
            required: T::REQUIRED,
            default: None,
            selects: None,
        }
    }

    /// The word decides whether `fields` apply: a call giving one of them with a word that
    /// does not use it ([`Selects::uses`]) is refused, naming the field and the word.
    pub fn selects(mut self, fields: &'static [&'static str]) -> Self
    where
        T: Selects,
    {
        self.selects = Some((fields, |w: &T| (w.word(), w.uses())));
        self
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

    /// The field's value in `args`: an error names the field (or, for a word that decides
    /// other fields, the field it does not use).
    pub fn take(self, args: &Map<String, Value>) -> Result<T, ToolError> {
        match args.get(self.key) {
            Some(v) => {
                let value = T::from_json(v)
                    .map_err(|m| ToolError::InvalidParams(format!("{} {m}", self.key)))?;
                if let Some((fields, uses_of)) = self.selects {
                    let (word, uses) = uses_of(&value);
                    if let Some(unused) = fields
                        .iter()
                        .find(|f| args.contains_key(**f) && !uses.contains(f))
                    {
                        return Err(ToolError::InvalidParams(format!(
                            "{unused} does not go with {} {word} ({})",
                            self.key,
                            match uses.iter().filter(|u| fields.contains(u)).count() {
                                0 => format!("{word} takes none of {}", fields.join(", ")),
                                _ => format!(
                                    "{word} takes {}",
                                    uses.iter()
                                        .filter(|u| fields.contains(u))
                                        .copied()
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                ),
                            }
                        )));
                    }
                }
                Ok(value)
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
/// `min_items`, `max_items`, `default`, `otherwise`, `selects`). The order of the fields is the order of
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

        impl $crate::tools::schema::Args for $name {
            fn schema() -> serde_json::Value {
                let mut properties = serde_json::Map::new();
                let mut required = Vec::new();
                $(
                    $crate::tools::schema::Field::<$ty>::new(stringify!($field))
                        $($(.$opt($val))*)?
                        .describe(&mut properties, &mut required);
                )*
                $crate::tools::schema::closed(properties, required)
            }

            fn take(
                args: &serde_json::Map<String, serde_json::Value>,
            ) -> Result<Self, $crate::tools::ToolError> {
                Ok($name {
                    $(
                        $field: $crate::tools::schema::Field::<$ty>::new(stringify!($field))
                            $($(.$opt($val))*)?
                            .take(args)?,
                    )*
                })
            }
        }

        impl $crate::tools::schema::ArgType for $name {
            fn schema() -> serde_json::Value {
                <$name as $crate::tools::schema::Args>::schema()
            }

            fn from_json(v: &serde_json::Value) -> Result<Self, String> {
                match v.as_object() {
                    Some(args) => <$name as $crate::tools::schema::Args>::take(args)
                        .map_err(|e| e.to_string()),
                    None => Err("must be of type object".into()),
                }
            }
        }
    };
}
pub(crate) use tool_args;

/// Declares an enum of words (a tool's `action`, `mode`, `state`): each variant is one word or
/// several (`On = "on" | "ein" | "an"`, synonyms after the first), optionally followed by the
/// fields it uses (`=> ["value"]`, see [`Selects`]); the schema is a string of those words
/// (`enum`, in declaration order), the parser takes them exactly.
macro_rules! words {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$vmeta:meta])* $variant:ident = $word:literal $(| $alias:literal)*
                $(=> [$($uses:literal),* $(,)?])?
            ),* $(,)?
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

        impl $crate::tools::schema::Selects for $name {
            fn word(&self) -> &'static str {
                self.as_str()
            }

            fn uses(&self) -> &'static [&'static str] {
                match self {
                    $( $name::$variant => &[$($($uses),*)?], )*
                }
            }
        }

        impl $crate::tools::schema::ArgType for $name {
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
            super::args::short_number(n)
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
/// it counts only where the key's owner lets the model confirm
/// ([`super::Caller::confirm`]).
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

/// Why a value does not fit a schema: where (`path`, empty for the value itself) and what.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaError {
    /// Dotted path of the offending value: `action`, `devices[2]`, `target.room`.
    pub path: String,
    /// The sentence, naming the path and what it allows: `value must be between 0 and 100
    /// (got 150)`, `missing field `device``, `operations[0]: unknown field `colour`, expected
    /// one of ...`, `dry_run must be of type boolean (got string)`, `action must be one of on,
    /// off (got "blink")`.
    pub message: String,
}

impl std::fmt::Display for SchemaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Checks `value` against `schema`; the first problem found, with its path.
pub fn validate(schema: &Value, value: &Value) -> Result<(), SchemaError> {
    check(schema, value, "")
}

/// [`validate`] for a value that sits at `path` inside something larger (a workflow step's
/// `arguments`): paths and messages start there (`arguments.level must be ...`).
pub fn validate_at(schema: &Value, value: &Value, path: &str) -> Result<(), SchemaError> {
    check(schema, value, path)
}

fn err(path: &str, message: String) -> Result<(), SchemaError> {
    Err(SchemaError {
        path: path.to_string(),
        message,
    })
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn has_type(v: &Value, ty: &str) -> bool {
    match ty {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "number" => v.is_number(),
        "integer" => v
            .as_f64()
            .is_some_and(|f| f.fract() == 0.0 && f.is_finite()),
        "string" => v.is_string(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        _ => true,
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 40 {
        format!("{}...", s.chars().take(40).collect::<String>())
    } else {
        s
    }
}

/// How a message names the value at `path`: the path itself, or "the arguments" for the
/// whole object.
fn name(path: &str) -> &str {
    if path.is_empty() {
        "the arguments"
    } else {
        path
    }
}

/// "between 1 and 50", "at least 1", "at most 50": a range with one or both ends.
fn range_words(min: Option<f64>, max: Option<f64>) -> String {
    match (min, max) {
        (Some(lo), Some(hi)) => format!("between {lo} and {hi}"),
        (Some(lo), None) => format!("at least {lo}"),
        (None, Some(hi)) => format!("at most {hi}"),
        (None, None) => "anything".into(),
    }
}

/// A number as messages show it: as it is, or in exponent form beyond 15 digits.
fn number_words(n: f64) -> String {
    if n.abs() < 1e15 {
        n.to_string()
    } else {
        format!("{n:e}")
    }
}

fn check(schema: &Value, value: &Value, path: &str) -> Result<(), SchemaError> {
    let Some(s) = schema.as_object() else {
        // `true`/`{}`-like schemas accept everything; `false` nothing.
        return if schema == &Value::Bool(false) {
            err(path, format!("{} is not allowed here", name(path)))
        } else {
            Ok(())
        };
    };

    if let Some(t) = s.get("type") {
        let types: Vec<&str> = match t {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !types.is_empty() && !types.iter().any(|t| has_type(value, t)) {
            // The value itself is not quoted: it may be a secret in the wrong shape (a PIN
            // sent as an object).
            return err(
                path,
                format!(
                    "{} must be of type {} (got {})",
                    name(path),
                    types.join(" or "),
                    type_name(value)
                ),
            );
        }
    }
    if let Some(c) = s.get("const") {
        if !same(c, value) {
            return err(
                path,
                format!("{} must be {} (got {})", name(path), short(c), short(value)),
            );
        }
    }
    if let Some(Value::Array(options)) = s.get("enum") {
        if !options.iter().any(|o| same(o, value)) {
            let names: Vec<String> = options
                .iter()
                .map(|o| {
                    o.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| o.to_string())
                })
                .collect();
            return err(
                path,
                format!(
                    "{} must be one of {} (got {})",
                    name(path),
                    names.join(", "),
                    short(value)
                ),
            );
        }
    }
    if let Some(n) = value.as_f64() {
        let bound = |k: &str| s.get(k).and_then(Value::as_f64);
        let (min, max) = (bound("minimum"), bound("maximum"));
        if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
            return err(
                path,
                format!(
                    "{} must be {} (got {})",
                    name(path),
                    range_words(min, max),
                    number_words(n)
                ),
            );
        }
        if let Some(min) = bound("exclusiveMinimum").filter(|m| n <= *m) {
            return err(
                path,
                format!(
                    "{} must be greater than {min} (got {})",
                    name(path),
                    number_words(n)
                ),
            );
        }
        if let Some(max) = bound("exclusiveMaximum").filter(|m| n >= *m) {
            return err(
                path,
                format!(
                    "{} must be less than {max} (got {})",
                    name(path),
                    number_words(n)
                ),
            );
        }
    }
    if let Some(text) = value.as_str() {
        let len = text.chars().count() as u64;
        let min = s.get("minLength").and_then(Value::as_u64);
        let max = s.get("maxLength").and_then(Value::as_u64);
        if min.is_some_and(|m| len < m) || max.is_some_and(|m| len > m) {
            let range = match (min, max) {
                (Some(lo), Some(hi)) => format!("{lo}-{hi} characters long"),
                (Some(lo), None) => format!("at least {lo} characters long"),
                (_, hi) => format!("at most {} characters long", hi.unwrap_or(0)),
            };
            return err(path, format!("{} must be {range} (got {len})", name(path)));
        }
    }
    if let Some(items) = value.as_array() {
        let n = items.len() as u64;
        let min = s.get("minItems").and_then(Value::as_u64);
        let max = s.get("maxItems").and_then(Value::as_u64);
        if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
            let range = match (min, max) {
                (Some(lo), Some(hi)) => format!("{lo} to {hi} entries"),
                (Some(lo), None) => format!("at least {lo} entries"),
                (_, hi) => format!("at most {} entries", hi.unwrap_or(0)),
            };
            return err(path, format!("{} must have {range} (got {n})", name(path)));
        }
        if let Some(item_schema) = s.get("items") {
            for (i, item) in items.iter().enumerate() {
                check(item_schema, item, &format!("{path}[{i}]"))?;
            }
        }
    }
    if let Some(obj) = value.as_object() {
        check_object(s, obj, path)?;
    }
    if let Some(Value::Array(all)) = s.get("allOf") {
        for sub in all {
            check(sub, value, path)?;
        }
    }
    if let Some(Value::Array(any)) = s.get("anyOf") {
        if !any.iter().any(|sub| check(sub, value, path).is_ok()) {
            return Err(none_fits(any, value, path));
        }
    }
    if let Some(Value::Array(one)) = s.get("oneOf") {
        let matching = one
            .iter()
            .filter(|sub| check(sub, value, path).is_ok())
            .count();
        match matching {
            1 => {}
            0 => return Err(none_fits(one, value, path)),
            _ => {
                return err(
                    path,
                    format!("{} matches more than one of the allowed forms", name(path)),
                )
            }
        }
    }
    Ok(())
}

/// Why `value` fits none of the `branches` of an `anyOf`/`oneOf`: the problem inside the first
/// branch whose `type` admits the value (`target[0] must be of type string`), else one type
/// error naming every branch's type (`target must be of type string or array (got integer)`).
fn none_fits(branches: &[Value], value: &Value, path: &str) -> SchemaError {
    let typed = |b: &Value| match b.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(|t| t.as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    };
    let admitting = branches
        .iter()
        .find(|b| typed(b).is_empty() || typed(b).iter().any(|t| has_type(value, t)));
    if let Some(Err(e)) = admitting.map(|b| check(b, value, path)) {
        return e;
    }
    let types: Vec<String> = branches.iter().flat_map(typed).collect();
    SchemaError {
        path: path.to_string(),
        message: if types.is_empty() {
            format!("{} matches none of the allowed forms", name(path))
        } else {
            format!(
                "{} must be of type {} (got {})",
                name(path),
                types.join(" or "),
                type_name(value)
            )
        },
    }
}

/// `what` about the object at `path`: as it is at the top, `operations[0]: {what}` inside.
fn within(path: &str, what: String) -> String {
    if path.is_empty() {
        what
    } else {
        format!("{path}: {what}")
    }
}

fn check_object(
    s: &Map<String, Value>,
    obj: &Map<String, Value>,
    path: &str,
) -> Result<(), SchemaError> {
    let props = s.get("properties").and_then(Value::as_object);
    if let Some(Value::Array(required)) = s.get("required") {
        for r in required.iter().filter_map(Value::as_str) {
            if !obj.contains_key(r) {
                return err(&join(path, r), within(path, format!("missing field `{r}`")));
            }
        }
    }
    for (key, v) in obj {
        match props.and_then(|p| p.get(key)) {
            Some(prop) => check(prop, v, &join(path, key))?,
            None => match s.get("additionalProperties") {
                Some(Value::Bool(false)) => {
                    let known: Vec<&str> = props
                        .map(|p| p.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    return err(
                        &join(path, key),
                        within(
                            path,
                            if known.is_empty() {
                                format!("unknown field `{key}`; this takes no arguments")
                            } else {
                                format!(
                                    "unknown field `{key}`, expected one of {}",
                                    known.join(", ")
                                )
                            },
                        ),
                    );
                }
                Some(extra @ Value::Object(_)) => check(extra, v, &join(path, key))?,
                _ => {}
            },
        }
    }
    Ok(())
}

/// JSON equality where numbers compare by value (`1` equals `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_number() && b.is_number() => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "room": {"type": "string", "minLength": 1},
                "action": {"type": "string", "enum": ["on", "off"]},
                "value": {"type": "number", "minimum": 0, "maximum": 100},
                "count": {"type": "integer"},
                "devices": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "room_or_null": {"type": ["string", "null"]},
                "target": {"oneOf": [{"type": "string"}, {"type": "integer", "minimum": 1}]},
                "nested": {"type": "object", "properties": {"x": {"type": "boolean"}}, "required": ["x"], "additionalProperties": false},
                "labels": {"type": "object", "additionalProperties": {"type": "integer"}}
            },
            "required": ["room", "action"],
            "additionalProperties": false
        })
    }

    fn fails(v: Value) -> String {
        validate(&schema(), &v).unwrap_err().to_string()
    }

    #[test]
    fn accepts_valid_values() {
        let ok = json!({"room": "Küche", "action": "on", "value": 50, "count": 3.0,
            "devices": ["a"], "room_or_null": null, "target": 2,
            "nested": {"x": true}, "labels": {"a": 1}});
        assert_eq!(validate(&schema(), &ok), Ok(()));
        assert_eq!(validate(&json!({}), &json!(5)), Ok(()));
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(fails(json!({"action": "on"})), "missing field `room`");
        assert_eq!(
            validate(&schema(), &json!({"action": "on"}))
                .unwrap_err()
                .path,
            "room"
        );
        assert!(fails(json!({"room": "x", "action": "blink"}))
            .starts_with("action must be one of on, off (got \"blink\")"));
        assert_eq!(
            fails(json!({"room": "x", "action": "on", "value": 150})),
            "value must be between 0 and 100 (got 150)"
        );
        assert!(
            fails(json!({"room": "x", "action": "on", "value": -1e308})).ends_with("(got -1e308)")
        );
        assert_eq!(
            fails(json!({"room": 3, "action": "on"})),
            "room must be of type string (got integer)"
        );
        assert!(fails(json!({"room": "", "action": "on"})).contains("at least 1 characters"));
        assert!(fails(json!({"room": "x", "action": "on", "count": 1.5}))
            .starts_with("count must be of type integer"));
        assert!(fails(json!({"room": "x", "action": "on", "devices": []}))
            .starts_with("devices must have at least 1"));
        assert!(
            fails(json!({"room": "x", "action": "on", "devices": ["a", 2]}))
                .starts_with("devices[1] must be of type string")
        );
        assert!(fails(json!({"room": "x", "action": "on", "colour": "red"}))
            .starts_with("unknown field `colour`, expected one of"));
        assert_eq!(
            fails(json!({"room": "x", "action": "on", "nested": {}})),
            "nested: missing field `x`"
        );
        assert!(fails(json!({"room": "x", "action": "on", "target": 0})).contains("target"));
        assert!(
            fails(json!({"room": "x", "action": "on", "labels": {"a": "b"}}))
                .contains("labels.a must be of type integer")
        );
        assert!(
            fails(json!({"room": "x", "action": "on", "room_or_null": 1}))
                .contains("string or null")
        );
    }

    #[test]
    fn one_of_rejects_several_matches() {
        let s = json!({"oneOf": [{"type": "number"}, {"type": "integer"}]});
        assert!(validate(&s, &json!(1))
            .unwrap_err()
            .message
            .contains("more than one"));
        assert_eq!(validate(&s, &json!(1.5)), Ok(()));
        let s = json!({"anyOf": [{"type": "number"}, {"type": "integer"}]});
        assert_eq!(validate(&s, &json!(1)), Ok(()));
        assert!(validate(&s, &json!("x")).is_err());
    }

    #[test]
    fn any_of_names_the_problem_of_the_branch_of_the_value_type() {
        let s = json!({"anyOf": [
            {"type": "string", "minLength": 1},
            {"type": "array", "items": {"type": "string"}, "minItems": 1}
        ]});
        assert_eq!(validate(&s, &json!("Küche")), Ok(()));
        assert_eq!(validate(&s, &json!(["a", "b"])), Ok(()));
        let at = |v: Value| validate_at(&s, &v, "target").unwrap_err().message;
        assert_eq!(
            at(json!(["a", 5])),
            "target[1] must be of type string (got integer)"
        );
        assert_eq!(at(json!([])), "target must have at least 1 entries (got 0)");
        assert_eq!(
            at(json!(5)),
            "target must be of type string or array (got integer)"
        );
        assert!(at(json!("")).contains("at least 1 characters"));
    }

    /// Every keyword of every tool's input schema, and where it sits (for the message).
    fn keywords(schema: &Value, at: &str, out: &mut Vec<(String, String)>) {
        let Some(s) = schema.as_object() else { return };
        for (k, v) in s {
            out.push((k.clone(), at.to_string()));
            match k.as_str() {
                "properties" => {
                    for (name, sub) in v.as_object().into_iter().flatten() {
                        keywords(sub, &format!("{at}.{name}"), out);
                    }
                }
                "items" | "additionalProperties" => keywords(v, &format!("{at}[]"), out),
                "oneOf" | "anyOf" | "allOf" => {
                    for sub in v.as_array().into_iter().flatten() {
                        keywords(sub, at, out);
                    }
                }
                _ => {}
            }
        }
    }

    #[test]
    fn tool_schemas_use_only_keywords_this_validator_checks() {
        const CHECKED: &[&str] = &[
            "type",
            "properties",
            "required",
            "additionalProperties",
            "enum",
            "const",
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "minLength",
            "maxLength",
            "items",
            "minItems",
            "maxItems",
            "oneOf",
            "anyOf",
            "allOf",
        ];
        const ANNOTATIONS: &[&str] = &["description", "default", "title", "examples"];
        let mut found = Vec::new();
        for tool in super::super::catalogue() {
            keywords(&tool.input_schema, tool.name, &mut found);
        }
        assert!(
            found.len() > 100,
            "the walk found the schemas: {}",
            found.len()
        );
        let unchecked: Vec<_> = found
            .iter()
            .filter(|(k, _)| !CHECKED.contains(&k.as_str()) && !ANNOTATIONS.contains(&k.as_str()))
            .collect();
        assert!(unchecked.is_empty(), "keywords not checked: {unchecked:?}");
    }

    #[test]
    fn every_catalogue_schema_accepts_its_required_fields_only_with_values() {
        // A tool without arguments takes `{}`; unknown fields are rejected everywhere.
        for tool in super::super::catalogue() {
            let schema = &tool.input_schema;
            let e = validate(schema, &json!({"surely_unknown_field": 1}));
            assert!(e.is_err(), "{} accepts unknown fields", tool.name);
        }
    }
}

#[cfg(test)]
mod declared {
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
