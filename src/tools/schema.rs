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
//! Errors carry the path of the offending value (`action`, `devices[0]`, `room`) and name it
//! with what it allows, in the words of the tools' own checks (`value must be between 0 and
//! 100 (got 150)`), as spec §7.2 wants for -32602.

use serde_json::{Map, Value};

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
