//! The structure file reader: turns a Miniserver's `LoxAPP3.json` (fetched from
//! `/data/LoxAPP3.json`) into the typed [`Home`] model that the rest of the server works with.
//!
//! This is the one place where the structure file's JSON is seen; everything after it works on
//! [`Home`], [`Room`], [`Category`] and [`Control`]. It is called once at start-up and again
//! whenever `jdev/sps/LoxAPPversion3` reports a new structure.
//!
//! The reader is lenient where real files are quirky (per Loxone structure file docs and the
//! files in `tests/fixtures/`): numbers given as strings (`"defaultRating": "1"`,
//! `"miniserverType": "2"`), states that are arrays of UUIDs (IRoomController `temperatures`),
//! sub-control keys with suffixes (`<uuid>/masterValue`), missing optional fields, `null` where an
//! object is expected, and control types this server does not know (kept as
//! [`ControlKind::Unknown`] with their states). It is strict where a wrong shape would silently
//! lose the house: the document, `controls` and every control must be JSON objects, `rooms` and
//! `cats` must be objects when present. Errors name the JSON path (`controls.<uuid>.states`) and
//! what was expected. No input makes it panic.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

use crate::home::resolve::fold;
use crate::home::{Category, CategoryKind, Control, ControlKind, Home, MsInfo, Room, StateRef};

/// Path used in errors for the document itself.
const ROOT: &str = "(top level)";

/// Why a structure file could not be read.
#[derive(Debug, Clone, PartialEq)]
pub enum StructureError {
    /// The bytes are not UTF-8; `valid_up_to` is the offset of the first bad byte.
    NotUtf8 { valid_up_to: usize },
    /// Malformed or truncated JSON, at this 1-based line and column.
    Json {
        line: usize,
        column: usize,
        message: String,
    },
    /// A value has the wrong JSON type. `path` is dotted (`controls.<uuid>.states`), the
    /// document itself is `(top level)`.
    WrongType {
        path: String,
        expected: &'static str,
    },
    /// A required member is absent (or `null`).
    Missing { path: String },
}

impl fmt::Display for StructureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StructureError::NotUtf8 { valid_up_to } => write!(
                f,
                "structure file is not valid UTF-8 (first bad byte at offset {valid_up_to})"
            ),
            StructureError::Json {
                line,
                column,
                message,
            } => write!(
                f,
                "structure file is not valid JSON at line {line}, column {column}: {message}"
            ),
            StructureError::WrongType { path, expected } => {
                write!(f, "structure file: {path} must be {expected}")
            }
            StructureError::Missing { path } => {
                write!(f, "structure file: {path} is missing")
            }
        }
    }
}

impl std::error::Error for StructureError {}

/// Parses a structure file given as raw bytes (as fetched over HTTP): checks UTF-8, strips a
/// UTF-8 byte order mark, then behaves as [`parse_structure`].
///
/// Errors: [`StructureError::NotUtf8`], then anything [`parse_structure`] returns.
pub fn parse_structure_bytes(bytes: &[u8]) -> Result<Home, StructureError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).map_err(|e| StructureError::NotUtf8 {
        valid_up_to: e.valid_up_to(),
    })?;
    parse_structure(text)
}

/// Parses the text of a structure file (`LoxAPP3.json`) into a [`Home`], sorted as documented
/// on [`Home`]: rooms and categories by name then UUID, top-level controls by room name (controls
/// without a known room last), then name, then UUID; sub-controls by UUID. Names are compared
/// folded ([`fold`]) first, so "Küche" sorts with "Kuche", then byte-wise.
///
/// Sub-controls without their own `room`/`cat` take their parent's, as the Loxone app shows them.
///
/// Errors: [`StructureError::Json`] for malformed or truncated JSON;
/// [`StructureError::WrongType`] when the document, `controls`, a control, `rooms`, `cats`,
/// `msInfo`, `states`, `details` or `subControls` has the wrong shape;
/// [`StructureError::Missing`] when `controls` is absent.
pub fn parse_structure(json: &str) -> Result<Home, StructureError> {
    let json = json.strip_prefix('\u{feff}').unwrap_or(json);
    let doc: Value = serde_json::from_str(json).map_err(json_error)?;
    let doc = doc.as_object().ok_or(StructureError::WrongType {
        path: ROOT.to_string(),
        expected: "a JSON object",
    })?;

    let mut rooms = Vec::new();
    if let Some(map) = opt_object(doc, "rooms", "rooms")? {
        for (key, v) in map {
            let path = format!("rooms.{key}");
            let obj = object(v, &path)?;
            rooms.push(Room {
                uuid: uuid_of(obj, "uuid", key),
                name: text(obj, "name"),
                is_favorite: boolean(obj, "isFavorite"),
                default_rating: integer(obj, "defaultRating").unwrap_or(0),
            });
        }
    }
    rooms.sort_by_cached_key(|r| (fold(&r.name), r.name.clone(), r.uuid.clone()));

    let mut categories = Vec::new();
    if let Some(map) = opt_object(doc, "cats", "cats")? {
        for (key, v) in map {
            let path = format!("cats.{key}");
            let obj = object(v, &path)?;
            categories.push(Category {
                uuid: uuid_of(obj, "uuid", key),
                name: text(obj, "name"),
                kind: CategoryKind::from_type(&text(obj, "type")),
                is_favorite: boolean(obj, "isFavorite"),
                default_rating: integer(obj, "defaultRating").unwrap_or(0),
            });
        }
    }
    categories.sort_by_cached_key(|c| (fold(&c.name), c.name.clone(), c.uuid.clone()));

    let controls_map = match doc.get("controls") {
        None | Some(Value::Null) => {
            return Err(StructureError::Missing {
                path: "controls".to_string(),
            })
        }
        Some(v) => object(v, "controls")?,
    };
    let mut controls = Vec::with_capacity(controls_map.len());
    for (key, v) in controls_map {
        controls.push(control(key, v, &format!("controls.{key}"), None, None)?);
    }
    let room_names: BTreeMap<&str, &str> = rooms
        .iter()
        .map(|r| (r.uuid.as_str(), r.name.as_str()))
        .collect();
    controls.sort_by_cached_key(|c| {
        let room = c.room.as_deref().and_then(|r| room_names.get(r).copied());
        (
            room.is_none(),
            room.map(fold),
            room.map(str::to_string),
            fold(&c.name),
            c.name.clone(),
            c.uuid.clone(),
        )
    });

    Ok(Home {
        last_modified: text(doc, "lastModified"),
        ms_info: ms_info(doc)?,
        rooms,
        categories,
        controls,
        global_states: string_map(opt_object(doc, "globalStates", "globalStates")?),
        operating_modes: string_map(opt_object(doc, "operatingModes", "operatingModes")?),
    })
}

/// Converts one control (or sub-control) object; `key` is its key in the parent map.
fn control(
    key: &str,
    v: &Value,
    path: &str,
    parent_room: Option<&str>,
    parent_cat: Option<&str>,
) -> Result<Control, StructureError> {
    let obj = object(v, path)?;
    let kind = ControlKind::from_type(&strict_text(obj, "type", path)?);
    let room = opt_text(obj, "room").or_else(|| parent_room.map(str::to_string));
    let category = opt_text(obj, "cat").or_else(|| parent_cat.map(str::to_string));

    let mut states = BTreeMap::new();
    let states_path = format!("{path}.states");
    if let Some(map) = opt_object(obj, "states", &states_path)? {
        for (name, s) in map {
            let state_path = format!("{states_path}.{name}");
            match s {
                Value::Null => {}
                Value::String(u) => {
                    states.insert(name.clone(), StateRef::Uuid(u.clone()));
                }
                Value::Array(items) => {
                    let mut uuids = Vec::with_capacity(items.len());
                    for (i, item) in items.iter().enumerate() {
                        match item {
                            Value::String(u) => uuids.push(u.clone()),
                            _ => {
                                return Err(StructureError::WrongType {
                                    path: format!("{state_path}[{i}]"),
                                    expected: "a UUID string",
                                })
                            }
                        }
                    }
                    states.insert(name.clone(), StateRef::Uuids(uuids));
                }
                _ => {
                    return Err(StructureError::WrongType {
                        path: state_path,
                        expected: "a UUID string or an array of UUID strings",
                    })
                }
            }
        }
    }

    let details = opt_object(obj, "details", &format!("{path}.details"))?
        .cloned()
        .unwrap_or_default();

    let mut sub_controls = Vec::new();
    let subs_path = format!("{path}.subControls");
    if let Some(map) = opt_object(obj, "subControls", &subs_path)? {
        for (sub_key, sv) in map {
            sub_controls.push(control(
                sub_key,
                sv,
                &format!("{subs_path}.{sub_key}"),
                room.as_deref(),
                category.as_deref(),
            )?);
        }
    }
    sub_controls.sort_by(|a, b| a.uuid.cmp(&b.uuid));

    Ok(Control {
        uuid: uuid_of(obj, "uuidAction", key),
        name: strict_text(obj, "name", path)?,
        kind,
        room,
        category,
        is_secured: boolean(obj, "isSecured"),
        is_favorite: boolean(obj, "isFavorite"),
        default_rating: integer(obj, "defaultRating").unwrap_or(0),
        restrictions: integer(obj, "restrictions").unwrap_or(0),
        states,
        details,
        sub_controls,
    })
}

fn ms_info(doc: &Map<String, Value>) -> Result<MsInfo, StructureError> {
    let Some(m) = opt_object(doc, "msInfo", "msInfo")? else {
        return Ok(MsInfo::default());
    };
    let current_user = match m.get("currentUser") {
        Some(Value::Object(u)) => opt_text(u, "name"),
        _ => None,
    };
    Ok(MsInfo {
        serial_nr: text(m, "serialNr"),
        ms_name: text(m, "msName"),
        project_name: text(m, "projectName"),
        local_url: text(m, "localUrl"),
        remote_url: text(m, "remoteUrl"),
        location: text(m, "location"),
        language_code: text(m, "languageCode"),
        miniserver_type: integer(m, "miniserverType"),
        temp_unit: integer(m, "tempUnit"),
        current_user,
    })
}

/// Maps serde_json's error to [`StructureError::Json`], without repeating the position.
fn json_error(e: serde_json::Error) -> StructureError {
    let (line, column) = (e.line(), e.column());
    let full = e.to_string();
    let suffix = format!(" at line {line} column {column}");
    let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
    StructureError::Json {
        line,
        column,
        message,
    }
}

/// `v` as an object, or `WrongType` at `path`.
fn object<'a>(v: &'a Value, path: &str) -> Result<&'a Map<String, Value>, StructureError> {
    v.as_object().ok_or_else(|| StructureError::WrongType {
        path: path.to_string(),
        expected: "a JSON object",
    })
}

/// Member `key` as an object; absent or `null` is `None`, any other type is `WrongType`.
fn opt_object<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<&'a Map<String, Value>>, StructureError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => object(v, path).map(Some),
    }
}

/// Member `key` as text: strings as they are, numbers and booleans written out; otherwise `None`.
fn opt_text(obj: &Map<String, Value>, key: &str) -> Option<String> {
    match obj.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Like [`opt_text`], empty when absent or of another type.
fn text(obj: &Map<String, Value>, key: &str) -> String {
    opt_text(obj, key).unwrap_or_default()
}

/// A control's `name` or `type`: empty when absent or `null`, `WrongType` when an object or array.
fn strict_text(obj: &Map<String, Value>, key: &str, path: &str) -> Result<String, StructureError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::Array(_)) | Some(Value::Object(_)) => Err(StructureError::WrongType {
            path: format!("{path}.{key}"),
            expected: "a string",
        }),
        Some(_) => Ok(opt_text(obj, key).unwrap_or_default()),
    }
}

/// The object's own UUID member, falling back to its key in the parent map.
fn uuid_of(obj: &Map<String, Value>, key: &str, map_key: &str) -> String {
    match opt_text(obj, key) {
        Some(u) if !u.is_empty() => u,
        _ => map_key.to_string(),
    }
}

/// Member `key` as an integer: JSON integers, integral floats, booleans and numeric strings
/// (`"2"`, `" 1 "`, `"1.0"`). `None` when absent or not a number.
fn integer(obj: &Map<String, Value>, key: &str) -> Option<i64> {
    fn from_f64(f: f64) -> Option<i64> {
        (f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e15).then_some(f as i64)
    }
    match obj.get(key)? {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().and_then(from_f64)),
        Value::String(s) => {
            let s = s.trim();
            s.parse::<i64>()
                .ok()
                .or_else(|| s.parse::<f64>().ok().and_then(from_f64))
        }
        Value::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

/// Member `key` as a flag: `true`, non-zero numbers, `"true"`/`"1"`; false otherwise.
fn boolean(obj: &Map<String, Value>, key: &str) -> bool {
    match obj.get(key) {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) if s.trim().eq_ignore_ascii_case("true") => true,
        _ => integer(obj, key).is_some_and(|n| n != 0),
    }
}

/// A name -> text map (`globalStates`, `operatingModes`); entries that are not text are skipped.
fn string_map(map: Option<&Map<String, Value>>) -> BTreeMap<String, String> {
    let Some(map) = map else {
        return BTreeMap::new();
    };
    map.keys()
        .filter_map(|k| Some((k.clone(), opt_text(map, k)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_error_message_does_not_repeat_the_position() {
        let err = parse_structure("{\"controls\": {").unwrap_err();
        let StructureError::Json {
            line,
            column,
            message,
        } = &err
        else {
            panic!("expected Json error, got {err:?}");
        };
        assert_eq!((*line, *column), (1, 14));
        assert!(!message.contains("line"), "{message}");
        assert!(err.to_string().contains("line 1, column 14"));
    }

    #[test]
    fn integers_are_lenient() {
        let obj: Map<String, Value> = serde_json::from_str(
            r#"{"a": "2", "b": 3, "c": 1.0, "d": " 4 ", "e": "x", "f": true, "g": 1.5}"#,
        )
        .unwrap();
        assert_eq!(integer(&obj, "a"), Some(2));
        assert_eq!(integer(&obj, "b"), Some(3));
        assert_eq!(integer(&obj, "c"), Some(1));
        assert_eq!(integer(&obj, "d"), Some(4));
        assert_eq!(integer(&obj, "e"), None);
        assert_eq!(integer(&obj, "f"), Some(1));
        assert_eq!(integer(&obj, "g"), None);
        assert_eq!(integer(&obj, "missing"), None);
    }
}
