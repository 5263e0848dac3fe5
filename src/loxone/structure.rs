//! The structure file reader: turns a Miniserver's `LoxAPP3.json` (fetched from
//! `/data/LoxAPP3.json`) into the typed [`Home`] model that the rest of the server works with.
//!
//! This is the one place where the structure file's JSON is seen; everything after it works on
//! [`Home`], [`Room`], [`Category`] and [`Control`]. It is called once at start-up and again
//! whenever `jdev/sps/LoxAPPversion3` reports a new structure.
//!
//! Files from the field are read as far as they can be (per Loxone structure file docs and the
//! files in `tests/fixtures/`):
//!
//! - quirks of real files are read without a word: numbers given as strings
//!   (`"defaultRating": "1"`, `"miniserverType": "2"`), states that are arrays of UUIDs
//!   (IRoomController `temperatures`), sub-control keys with suffixes (`<uuid>/masterValue`),
//!   missing optional fields, `null` where an object is expected, control types this server
//!   does not know (kept as [`ControlKind::Unknown`] with their states).
//! - one odd place never costs the whole file. An entry of a map with the wrong JSON type (a
//!   control or sub-control that is a string or number, a room or category that is no object,
//!   a state that is neither a UUID string nor an array of them, a global state that is an
//!   object) is left out; a section of the wrong type (`rooms`, `cats`, `msInfo`,
//!   `globalStates`, `operatingModes`, a control's `states`, `details` or `subControls` given
//!   as a string, number or array, `[]` included: PHP's `json_encode` writes an empty map that
//!   way, none of the real files in `tests/fixtures` has it) is read as empty; a control's `name` or `type`, or
//!   `lastModified`, that is an array or object is read as empty text; a control whose
//!   `uuidAction` an earlier one has (the simulator does the same) is left out with its
//!   sub-controls, the first in the file is kept. Each becomes one
//!   [`StructureWarning`] naming its path (`controls.<key>.states.active`) in
//!   [`Home::warnings`], at most one per path; [`log_warnings`] logs them.
//! - bytes that are not UTF-8 are repaired when they can be: [`parse_structure_bytes`]
//!   replaces each invalid sequence with U+FFFD (as `String::from_utf8_lossy` does) and reads
//!   on when the result is still JSON, i.e. when every bad byte was inside a string (a name
//!   written in Latin-1, a truncated multi-byte character); each key or text that got a U+FFFD
//!   is one [`StructureProblem::InvalidUtf8`] warning. Bytes that are not UTF-8 outside a
//!   string (a UTF-16 or binary file, garbage between the tokens) are beyond repair:
//!   [`StructureError::NotUtf8`].
//!
//! Only these stop the reading ([`StructureError`]): bytes beyond repair, text that is not
//! JSON, a document that is not a JSON object, and a missing `controls` (or one that is not
//! a map: a string or number cannot be told from a house without controls, and serving an
//! empty house would look like a working server that lost every device). No input makes it
//! panic.

use std::collections::{BTreeMap, HashSet};
use std::fmt;

use serde_json::{Map, Value};

use crate::home::resolve::fold;
use crate::home::{
    Category, CategoryKind, Control, ControlKind, Home, MessageCenter, MsInfo, Room, StateRef,
    StructureProblem, StructureWarning,
};

/// Path used in errors for the document itself.
const ROOT: &str = "(top level)";

/// What a map entry or section should have been.
const OBJECT: &str = "a JSON object";
/// What a state should have been.
const STATE: &str = "a UUID string or an array of UUID strings";
/// What a name, type or text should have been.
const TEXT: &str = "a string";

/// At most this many warnings of one structure file are logged one by one by
/// [`log_warnings`]; the rest are counted in one line (a file odd in thousands of places must
/// not flood the journal of a Pi).
pub const LOGGED_WARNINGS: usize = 100;

/// Why a structure file could not be read at all.
#[derive(Debug, Clone, PartialEq)]
pub enum StructureError {
    /// The bytes are not UTF-8 and replacing the bad sequences does not leave JSON (see the
    /// module docs); `valid_up_to` is the offset of the first bad byte.
    NotUtf8 { valid_up_to: usize },
    /// Malformed or truncated JSON, at this 1-based line and column.
    Json {
        line: usize,
        column: usize,
        message: String,
    },
    /// The document itself (`(top level)`) is not a JSON object, or `controls` is neither a
    /// map nor `[]`. `path` is dotted like a [`StructureWarning`]'s.
    WrongType {
        path: String,
        expected: &'static str,
    },
    /// A required member (`controls`) is absent or `null`.
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

/// Parses a structure file given as raw bytes (as fetched over HTTP): strips a UTF-8 byte order
/// mark, repairs bytes that are not UTF-8 where it can (module docs: each invalid sequence
/// replaced with U+FFFD, one [`StructureProblem::InvalidUtf8`] warning per key or text that
/// got one), then behaves as [`parse_structure`].
///
/// Errors: [`StructureError::NotUtf8`] when the bytes are not UTF-8 and the repaired text is
/// not JSON, then anything [`parse_structure`] returns.
pub fn parse_structure_bytes(bytes: &[u8]) -> Result<Home, StructureError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let valid_up_to = match std::str::from_utf8(bytes) {
        Ok(text) => return parse_structure(text),
        Err(e) => e.valid_up_to(),
    };
    let text = String::from_utf8_lossy(bytes);
    // U+FFFD outside a string is a JSON syntax error: the bad bytes were not in a text.
    let doc: Value =
        serde_json::from_str(&text).map_err(|_| StructureError::NotUtf8 { valid_up_to })?;
    let mut reader = Reader::default();
    reader.replaced(&doc, &mut String::new());
    reader.home(&doc)
}

/// Parses the text of a structure file (`LoxAPP3.json`) into a [`Home`], sorted as documented
/// on [`Home`]: rooms and categories by name then UUID, top-level controls by room name (controls
/// without a known room last), then name, then UUID; sub-controls by UUID. Names are compared
/// folded ([`fold`]) first, so "Küche" sorts with "Kuche", then byte-wise. What was skipped or
/// read as empty is in [`Home::warnings`] (module docs).
///
/// Sub-controls without their own `room`/`cat` take their parent's, as the Loxone app shows them.
///
/// Errors: [`StructureError::Json`] for malformed or truncated JSON;
/// [`StructureError::WrongType`] when the document is not an object or `controls` is neither an
/// object nor `[]`; [`StructureError::Missing`] when `controls` is absent or `null`.
pub fn parse_structure(json: &str) -> Result<Home, StructureError> {
    let json = json.strip_prefix('\u{feff}').unwrap_or(json);
    let doc: Value = serde_json::from_str(json).map_err(json_error)?;
    Reader::default().home(&doc)
}

/// Logs each of `home`'s warnings as one `warn` line naming its path (at most
/// [`LOGGED_WARNINGS`], then one line with how many more there are).
pub fn log_warnings(home: &Home) {
    for w in home.warnings.iter().take(LOGGED_WARNINGS) {
        log::warn!("structure file {w}");
    }
    if home.warnings.len() > LOGGED_WARNINGS {
        log::warn!(
            "structure file: {} more places skipped or read as empty (not logged)",
            home.warnings.len() - LOGGED_WARNINGS
        );
    }
}

/// Collects the warnings while a document is read.
#[derive(Default)]
struct Reader {
    warnings: Vec<StructureWarning>,
    /// Paths already warned about (one warning per path).
    warned: HashSet<String>,
    /// The `uuidAction`s of the controls read so far, lowercased.
    uuids: HashSet<String>,
}

impl Reader {
    fn warn(&mut self, path: String, problem: StructureProblem) {
        if self.warned.insert(path.clone()) {
            self.warnings.push(StructureWarning { path, problem });
        }
    }

    /// The whole document; the warnings end up in [`Home::warnings`].
    fn home(mut self, doc: &Value) -> Result<Home, StructureError> {
        let doc = doc.as_object().ok_or(StructureError::WrongType {
            path: ROOT.to_string(),
            expected: OBJECT,
        })?;
        let empty = Map::new();
        let controls_map = match doc.get("controls") {
            None | Some(Value::Null) => {
                return Err(StructureError::Missing {
                    path: "controls".to_string(),
                })
            }
            Some(Value::Object(map)) => map,
            Some(Value::Array(a)) if a.is_empty() => &empty,
            Some(_) => {
                return Err(StructureError::WrongType {
                    path: "controls".to_string(),
                    expected: OBJECT,
                })
            }
        };

        let last_modified = self.text(doc, "lastModified", "lastModified");
        let ms_info = self.ms_info(doc);
        let global_states = self.string_map(doc, "globalStates");
        let operating_modes = self.string_map(doc, "operatingModes");
        let message_center = self.message_center(doc);

        let mut rooms = Vec::new();
        if let Some(map) = self.section(doc, "rooms", "rooms") {
            for (key, v) in map {
                let Some(obj) = self.entry(v, format!("rooms.{key}")) else {
                    continue;
                };
                rooms.push(Room {
                    uuid: uuid_of(obj, "uuid", key),
                    name: plain_text(obj, "name"),
                    is_favorite: boolean(obj, "isFavorite"),
                    default_rating: integer(obj, "defaultRating").unwrap_or(0),
                });
            }
        }
        rooms.sort_by_cached_key(|r| (fold(&r.name), r.name.clone(), r.uuid.clone()));

        let mut categories = Vec::new();
        if let Some(map) = self.section(doc, "cats", "cats") {
            for (key, v) in map {
                let Some(obj) = self.entry(v, format!("cats.{key}")) else {
                    continue;
                };
                categories.push(Category {
                    uuid: uuid_of(obj, "uuid", key),
                    name: plain_text(obj, "name"),
                    kind: CategoryKind::from_type(&plain_text(obj, "type")),
                    is_favorite: boolean(obj, "isFavorite"),
                    default_rating: integer(obj, "defaultRating").unwrap_or(0),
                });
            }
        }
        categories.sort_by_cached_key(|c| (fold(&c.name), c.name.clone(), c.uuid.clone()));

        let mut controls = Vec::with_capacity(controls_map.len());
        for (key, v) in controls_map {
            if let Some(c) = self.control(key, v, &format!("controls.{key}"), None, None) {
                controls.push(c);
            }
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
            last_modified,
            ms_info,
            rooms,
            categories,
            controls,
            global_states,
            operating_modes,
            message_center,
            warnings: self.warnings,
        })
    }

    /// One control (or sub-control); `key` is its key in the parent map, `path` its path.
    /// `None` (with a warning) when it is not an object.
    fn control(
        &mut self,
        key: &str,
        v: &Value,
        path: &str,
        parent_room: Option<&str>,
        parent_cat: Option<&str>,
    ) -> Option<Control> {
        let obj = self.entry(v, path.to_string())?;
        let uuid = uuid_of(obj, "uuidAction", key);
        if !self.uuids.insert(uuid.to_lowercase()) {
            self.warn(path.to_string(), StructureProblem::DuplicateUuid { uuid });
            return None;
        }
        let kind = ControlKind::from_type(&self.text(obj, "type", &format!("{path}.type")));
        let name = self.text(obj, "name", &format!("{path}.name"));
        let room = opt_text(obj, "room").or_else(|| parent_room.map(str::to_string));
        let category = opt_text(obj, "cat").or_else(|| parent_cat.map(str::to_string));

        let mut states = BTreeMap::new();
        let states_path = format!("{path}.states");
        if let Some(map) = self.section(obj, "states", &states_path) {
            for (state, s) in map {
                let found = match s {
                    Value::Null => continue,
                    Value::String(u) => {
                        states.insert(state.clone(), StateRef::Uuid(u.clone()));
                        continue;
                    }
                    Value::Array(items) => {
                        let uuids: Option<Vec<String>> = items
                            .iter()
                            .map(|i| i.as_str().map(str::to_string))
                            .collect();
                        match uuids {
                            Some(uuids) => {
                                states.insert(state.clone(), StateRef::Uuids(uuids));
                                continue;
                            }
                            // Leaving one item out would shift the others' positions, which
                            // mean something (the `temperatures` of an IRoomController).
                            None => "an array with items that are not strings",
                        }
                    }
                    other => json_type(other),
                };
                self.warn(
                    format!("{states_path}.{state}"),
                    StructureProblem::Skipped {
                        expected: STATE,
                        found,
                    },
                );
            }
        }

        let details = self
            .section(obj, "details", &format!("{path}.details"))
            .cloned()
            .unwrap_or_default();

        let mut sub_controls = Vec::new();
        let subs_path = format!("{path}.subControls");
        if let Some(map) = self.section(obj, "subControls", &subs_path) {
            for (sub_key, sv) in map {
                let sub = self.control(
                    sub_key,
                    sv,
                    &format!("{subs_path}.{sub_key}"),
                    room.as_deref(),
                    category.as_deref(),
                );
                sub_controls.extend(sub);
            }
        }
        sub_controls.sort_by(|a, b| a.uuid.cmp(&b.uuid));

        let statistic = statistic_of(obj);
        Some(Control {
            statistic,
            uuid,
            name,
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

    fn ms_info(&mut self, doc: &Map<String, Value>) -> MsInfo {
        let Some(m) = self.section(doc, "msInfo", "msInfo") else {
            return MsInfo::default();
        };
        let current_user = match m.get("currentUser") {
            Some(Value::Object(u)) => opt_text(u, "name"),
            _ => None,
        };
        MsInfo {
            serial_nr: plain_text(m, "serialNr"),
            ms_name: plain_text(m, "msName"),
            project_name: plain_text(m, "projectName"),
            local_url: plain_text(m, "localUrl"),
            remote_url: plain_text(m, "remoteUrl"),
            location: plain_text(m, "location"),
            language_code: plain_text(m, "languageCode"),
            miniserver_type: integer(m, "miniserverType"),
            temp_unit: integer(m, "tempUnit"),
            current_user,
        }
    }

    /// The top-level `messageCenter` block (`{"<uuid>": {"name", "uuidAction", "states":
    /// {"changed"}}}`, per Loxone structure file docs): its first entry that is an object
    /// (a Miniserver has one Message Center); `None` when the file has none. Entries of the
    /// wrong type are skipped with a warning, like the other maps.
    fn message_center(&mut self, doc: &Map<String, Value>) -> Option<MessageCenter> {
        let map = self.section(doc, "messageCenter", "messageCenter")?;
        for (key, v) in map {
            let Some(obj) = self.entry(v, format!("messageCenter.{key}")) else {
                continue;
            };
            let changed = obj
                .get("states")
                .and_then(Value::as_object)
                .and_then(|states| opt_text(states, "changed"))
                .filter(|u| !u.is_empty());
            return Some(MessageCenter {
                uuid: uuid_of(obj, "uuidAction", key),
                name: plain_text(obj, "name"),
                changed,
            });
        }
        None
    }

    /// A name -> text map (`globalStates`, `operatingModes`); `null` entries are left out
    /// silently, arrays and objects with a warning.
    fn string_map(&mut self, doc: &Map<String, Value>, key: &str) -> BTreeMap<String, String> {
        let Some(map) = self.section(doc, key, key) else {
            return BTreeMap::new();
        };
        let mut out = BTreeMap::new();
        for (name, v) in map {
            match opt_text(map, name) {
                Some(t) => {
                    out.insert(name.clone(), t);
                }
                None if v.is_null() => {}
                None => self.warn(
                    format!("{key}.{name}"),
                    StructureProblem::Skipped {
                        expected: TEXT,
                        found: json_type(v),
                    },
                ),
            }
        }
        out
    }

    /// Member `key` of `obj` as a map: absent and `null` are `None` without a word; any other
    /// non-object (`[]` included) is `None` with a [`StructureProblem::ReadAsEmpty`] warning
    /// at `path`.
    fn section<'a>(
        &mut self,
        obj: &'a Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Option<&'a Map<String, Value>> {
        match obj.get(key)? {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                self.warn(
                    path.to_string(),
                    StructureProblem::ReadAsEmpty {
                        expected: OBJECT,
                        found: json_type(other),
                    },
                );
                None
            }
        }
    }

    /// A map entry as an object, or `None` with a [`StructureProblem::Skipped`] warning.
    fn entry<'a>(&mut self, v: &'a Value, path: String) -> Option<&'a Map<String, Value>> {
        match v {
            Value::Object(map) => Some(map),
            other => {
                self.warn(
                    path,
                    StructureProblem::Skipped {
                        expected: OBJECT,
                        found: json_type(other),
                    },
                );
                None
            }
        }
    }

    /// Member `key` as text ([`opt_text`]); empty when absent or `null`, empty with a
    /// [`StructureProblem::ReadAsEmpty`] warning at `path` when an array or object.
    fn text(&mut self, obj: &Map<String, Value>, key: &str, path: &str) -> String {
        match obj.get(key) {
            Some(v @ (Value::Array(_) | Value::Object(_))) => {
                self.warn(
                    path.to_string(),
                    StructureProblem::ReadAsEmpty {
                        expected: TEXT,
                        found: json_type(v),
                    },
                );
                String::new()
            }
            _ => plain_text(obj, key),
        }
    }

    /// One [`StructureProblem::InvalidUtf8`] warning for each key and text under `v` (at
    /// `path`) that holds U+FFFD: after a lossy repair, the places the bad bytes were.
    fn replaced(&mut self, v: &Value, path: &mut String) {
        const MARK: char = char::REPLACEMENT_CHARACTER;
        match v {
            Value::String(s) if s.contains(MARK) => {
                self.warn(path.clone(), StructureProblem::InvalidUtf8);
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    self.replaced(item, path);
                    path.truncate(len);
                }
            }
            Value::Object(map) => {
                for (k, item) in map {
                    let len = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(k);
                    if k.contains(MARK) {
                        self.warn(path.clone(), StructureProblem::InvalidUtf8);
                    }
                    self.replaced(item, path);
                    path.truncate(len);
                }
            }
            _ => {}
        }
    }
}

/// The JSON type of `v`, as a warning names it.
/// A control's `statistic` (V1) and `statisticV2` (per Loxone structure file docs,
/// statistics.md A1, A2), read leniently: ids and modes as numbers or numeric strings, an
/// output or data point without what identifies it (a V2 point without `output`) left out, a
/// V1 `statistic` without outputs or with frequency 0 (none) read as absent.
fn statistic_of(obj: &Map<String, Value>) -> crate::home::statistic::Statistic {
    use crate::home::statistic::{
        Statistic, StatisticGroup, StatisticOutput, StatisticPoint, StatisticV1,
    };
    let v1 = match obj.get("statistic") {
        Some(Value::Object(s)) => {
            let outputs: Vec<StatisticOutput> = match s.get("outputs") {
                Some(Value::Array(list)) => list
                    .iter()
                    .filter_map(Value::as_object)
                    .enumerate()
                    .map(|(i, o)| StatisticOutput {
                        id: integer(o, "id").unwrap_or(i as i64),
                        name: plain_text(o, "name"),
                        format: opt_text(o, "format"),
                        visu_type: integer(o, "visuType").unwrap_or(0),
                    })
                    .collect(),
                _ => Vec::new(),
            };
            let frequency = integer(s, "frequency").unwrap_or(0);
            (!outputs.is_empty() && frequency != 0).then_some(StatisticV1 { frequency, outputs })
        }
        _ => None,
    };
    let v2 = match obj.get("statisticV2").and_then(|s| s.get("groups")) {
        Some(Value::Array(groups)) => groups
            .iter()
            .filter_map(Value::as_object)
            .filter_map(|g| {
                let points: Vec<StatisticPoint> = match g.get("dataPoints") {
                    Some(Value::Array(list)) => list
                        .iter()
                        .filter_map(Value::as_object)
                        .filter_map(|p| {
                            Some(StatisticPoint {
                                title: plain_text(p, "title"),
                                format: opt_text(p, "format"),
                                output: opt_text(p, "output").filter(|o| !o.is_empty())?,
                            })
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                let mode = integer(g, "mode").unwrap_or(0);
                (!points.is_empty() && mode != 0).then_some(StatisticGroup {
                    id: integer(g, "id")?,
                    mode,
                    accumulated: boolean(g, "accumulated"),
                    points,
                })
            })
            .collect(),
        _ => Vec::new(),
    };
    Statistic { v1, v2 }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(a) if a.is_empty() => "an empty array",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
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
fn plain_text(obj: &Map<String, Value>, key: &str) -> String {
    opt_text(obj, key).unwrap_or_default()
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A real structure file (`tests/fixtures/SOURCES.md`): 3 rooms, 3 categories, 6 controls.
    const SHOWROOM: &str = include_str!("../../tests/fixtures/Smarteon-loxone-java-showroom.json");
    const ALARM: &str = "0f86a2fe-0378-3e15-ffff373f9870b52a";
    const SMOKE: &str = "0f86a20d-0301-1814-ffff373f9870b52a";
    const CENTRAL_LIGHTS: &str = "10a73e3b-01d5-1a35-ffff373f9870b52a";
    const ALL_OFF: &str = "0f86a20d-02ad-17f0-ffff373f9870b52a";
    const LIGHTS: &str = "0f86a20d-009d-178c-ffff373f9870b52a";
    const IRC: &str = "0f8b7707-00dc-1049-ffff373f9870b52a";
    const LIVING_ROOM: &str = "0f869a64-025f-0c2c-ffffd4c75dbaf53c";
    const ALARM_CATEGORY: &str = "0f869a64-0221-0b28-ffffd4c75dbaf53c";

    /// The fixture's controls: UUID, name, type and room name, as the file has them.
    const CONTROLS: [(&str, &str, &str, &str); 6] = [
        (ALARM, "Alarm", "Alarm", "Centrál"),
        (
            SMOKE,
            "Centrála požáru a úniku vody",
            "SmokeAlarm",
            "Centrál",
        ),
        (
            CENTRAL_LIGHTS,
            "Centrál osvětlení",
            "CentralLightController",
            "Centrál",
        ),
        (ALL_OFF, "Vše vyp.", "Pushbutton", "Centrál"),
        (
            LIGHTS,
            "Ovládání osvětlení",
            "LightController",
            "Obývací pokoj",
        ),
        (
            IRC,
            "Inteligentní regulace pokojové teploty",
            "IRoomController",
            "Obývací pokoj",
        ),
    ];

    fn showroom() -> Value {
        serde_json::from_str(SHOWROOM).unwrap()
    }

    fn parse(doc: &Value) -> Home {
        parse_structure(&doc.to_string()).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The control `uuid` of `doc`, for the test to spoil it.
    fn control_of<'a>(doc: &'a mut Value, uuid: &str) -> &'a mut Value {
        &mut doc["controls"][uuid]
    }

    /// Every fixture control but `except` is there with its name and type; its room is named
    /// as in the fixture unless `rooms_read` is false (then it still has its room UUID).
    fn assert_controls_kept(home: &Home, except: &[&str], rooms_read: bool) {
        let want: Vec<_> = CONTROLS.iter().filter(|c| !except.contains(&c.0)).collect();
        assert_eq!(home.controls.len(), want.len(), "{:?}", home.controls);
        for (uuid, name, kind, room) in want {
            let c = home
                .control(uuid)
                .unwrap_or_else(|| panic!("{name} is gone"));
            assert_eq!((c.name.as_str(), c.kind.as_str()), (*name, *kind));
            assert!(c.room.is_some(), "{name} keeps its room UUID");
            let shown = if rooms_read { Some(*room) } else { None };
            assert_eq!(home.room_name(c), shown, "{name}");
        }
    }

    fn paths(home: &Home) -> Vec<&str> {
        home.warnings.iter().map(|w| w.path.as_str()).collect()
    }

    fn warning(path: impl Into<String>, problem: StructureProblem) -> StructureWarning {
        StructureWarning {
            path: path.into(),
            problem,
        }
    }

    fn read_as_empty(found: &'static str) -> StructureProblem {
        StructureProblem::ReadAsEmpty {
            expected: "a JSON object",
            found,
        }
    }

    fn skipped(expected: &'static str, found: &'static str) -> StructureProblem {
        StructureProblem::Skipped { expected, found }
    }

    #[test]
    fn the_fixture_reads_without_warnings() {
        let home = parse(&showroom());
        assert!(home.warnings.is_empty(), "{:?}", home.warnings);
        assert_controls_kept(&home, &[], true);
        assert_eq!((home.rooms.len(), home.categories.len()), (3, 3));
        assert_eq!(home.global_states.len(), 10);
        assert_eq!(home.operating_modes.len(), 16);
        assert_eq!(home.ms_info.ms_name, "ShowRoom");
    }

    #[test]
    fn empty_arrays_for_top_level_maps_read_as_empty_with_one_warning() {
        // PHP's json_encode writes an empty map as `[]`.
        for section in ["rooms", "cats", "globalStates", "operatingModes", "msInfo"] {
            let mut doc = showroom();
            doc[section] = json!([]);
            let home = parse(&doc);
            assert_eq!(
                home.warnings,
                vec![StructureWarning {
                    path: section.to_string(),
                    problem: StructureProblem::ReadAsEmpty {
                        expected: OBJECT,
                        found: "an empty array"
                    },
                }],
                "{section}"
            );
            assert_controls_kept(&home, &[], section != "rooms");
            let counts = (
                home.rooms.len(),
                home.categories.len(),
                home.global_states.len(),
                home.operating_modes.len(),
            );
            let want = match section {
                "rooms" => (0, 3, 10, 16),
                "cats" => (3, 0, 10, 16),
                "globalStates" => (3, 3, 0, 16),
                "operatingModes" => (3, 3, 10, 0),
                _ => (3, 3, 10, 16),
            };
            assert_eq!(counts, want, "{section}");
            let ms_name = if section == "msInfo" { "" } else { "ShowRoom" };
            assert_eq!(home.ms_info.ms_name, ms_name, "{section}");
        }
    }

    #[test]
    fn empty_arrays_for_control_maps_read_as_empty_with_one_warning_each() {
        let mut doc = showroom();
        control_of(&mut doc, IRC)["states"] = json!([]);
        control_of(&mut doc, ALARM)["details"] = json!([]);
        control_of(&mut doc, LIGHTS)["subControls"] = json!([]);
        let home = parse(&doc);
        let mut paths: Vec<&str> = home.warnings.iter().map(|w| w.path.as_str()).collect();
        paths.sort();
        let mut want = vec![
            format!("controls.{IRC}.states"),
            format!("controls.{ALARM}.details"),
            format!("controls.{LIGHTS}.subControls"),
        ];
        want.sort();
        assert_eq!(paths, want);
        assert!(home.warnings.iter().all(|w| w.problem
            == StructureProblem::ReadAsEmpty {
                expected: OBJECT,
                found: "an empty array"
            }));
        assert_controls_kept(&home, &[], true);
        assert!(home.control(IRC).unwrap().states.is_empty());
        assert!(home.control(ALARM).unwrap().details.is_empty());
        assert!(home.control(LIGHTS).unwrap().sub_controls.is_empty());
        // The fixture's values where nothing was changed: the smoke alarm's 10 states and
        // 2 details, the alarm's one sub-control.
        let smoke = home.control(SMOKE).unwrap();
        assert_eq!((smoke.states.len(), smoke.details.len()), (10, 2));
        assert_eq!(home.control(ALARM).unwrap().sub_controls.len(), 1);
    }

    #[test]
    fn top_level_sections_of_the_wrong_type_read_as_empty_with_one_warning() {
        let cases = [
            ("rooms", json!("Centrál"), "a string"),
            ("cats", json!(5), "a number"),
            ("globalStates", json!(["operatingMode"]), "an array"),
            ("operatingModes", json!(true), "a boolean"),
            ("msInfo", json!("ShowRoom"), "a string"),
        ];
        for (section, odd, found) in cases {
            let mut doc = showroom();
            doc[section] = odd;
            let home = parse(&doc);
            assert_eq!(
                home.warnings,
                [warning(section, read_as_empty(found))],
                "{section}"
            );
            assert_controls_kept(&home, &[], section != "rooms");
            let empty = match section {
                "rooms" => home.rooms.is_empty(),
                "cats" => home.categories.is_empty(),
                "globalStates" => home.global_states.is_empty(),
                "operatingModes" => home.operating_modes.is_empty(),
                _ => home.ms_info == MsInfo::default(),
            };
            assert!(empty, "{section} read as empty");
        }
    }

    #[test]
    fn control_maps_of_the_wrong_type_read_as_empty_with_one_warning_each() {
        let mut doc = showroom();
        control_of(&mut doc, IRC)["states"] = json!("tempActual");
        control_of(&mut doc, ALARM)["details"] = json!(7);
        control_of(&mut doc, LIGHTS)["subControls"] = json!([format!("{LIGHTS}/AI1")]);
        let home = parse(&doc);
        assert_eq!(
            home.warnings,
            // In the file's (sorted) key order.
            [
                warning(
                    format!("controls.{LIGHTS}.subControls"),
                    read_as_empty("an array")
                ),
                warning(
                    format!("controls.{ALARM}.details"),
                    read_as_empty("a number")
                ),
                warning(format!("controls.{IRC}.states"), read_as_empty("a string")),
            ]
        );
        assert_controls_kept(&home, &[], true);
        let irc = home.control(IRC).unwrap();
        assert!(irc.states.is_empty());
        // Its details and its 2 sub-controls are still read.
        assert_eq!(irc.sub_controls.len(), 2);
        assert_eq!(irc.details.get("format"), Some(&json!("%.1f°")));
        assert!(home.control(ALARM).unwrap().details.is_empty());
        assert!(home.control(LIGHTS).unwrap().sub_controls.is_empty());
    }

    #[test]
    fn controls_that_are_not_objects_are_skipped() {
        let mut doc = showroom();
        *control_of(&mut doc, ALARM) = json!("Alarm");
        *control_of(&mut doc, ALL_OFF) = json!(7);
        *control_of(&mut doc, SMOKE) = Value::Null;
        let home = parse(&doc);
        // In the file's (sorted) key order.
        assert_eq!(
            home.warnings,
            [
                warning(
                    format!("controls.{ALL_OFF}"),
                    skipped("a JSON object", "a number")
                ),
                warning(
                    format!("controls.{SMOKE}"),
                    skipped("a JSON object", "null")
                ),
                warning(
                    format!("controls.{ALARM}"),
                    skipped("a JSON object", "a string")
                ),
            ]
        );
        assert_controls_kept(&home, &[ALARM, ALL_OFF, SMOKE], true);
    }

    #[test]
    fn sub_controls_that_are_not_objects_are_skipped() {
        let mut doc = showroom();
        let ai1 = format!("{LIGHTS}/AI1");
        control_of(&mut doc, LIGHTS)["subControls"][&ai1] = json!(["Dimmer"]);
        let home = parse(&doc);
        assert_eq!(
            home.warnings,
            [warning(
                format!("controls.{LIGHTS}.subControls.{ai1}"),
                skipped("a JSON object", "an array")
            )]
        );
        assert_controls_kept(&home, &[], true);
        let subs = &home.control(LIGHTS).unwrap().sub_controls;
        assert_eq!(subs.len(), 1);
        assert_eq!(subs[0].uuid, format!("{LIGHTS}/AI2"));
        assert!(home.control(&ai1).is_none());
    }

    #[test]
    fn states_of_the_wrong_type_are_skipped() {
        let mut doc = showroom();
        control_of(&mut doc, ALL_OFF)["states"]["active"] = json!(5);
        control_of(&mut doc, IRC)["states"]["tempTarget"] = json!({"uuid": "x"});
        // One bad item spoils the whole array: the others' positions mean something.
        control_of(&mut doc, IRC)["states"]["temperatures"][1] = json!(1);
        let home = parse(&doc);
        assert_eq!(
            home.warnings,
            [
                warning(
                    format!("controls.{ALL_OFF}.states.active"),
                    skipped(STATE, "a number")
                ),
                warning(
                    format!("controls.{IRC}.states.tempTarget"),
                    skipped(STATE, "an object")
                ),
                warning(
                    format!("controls.{IRC}.states.temperatures"),
                    skipped(STATE, "an array with items that are not strings")
                ),
            ]
        );
        assert_controls_kept(&home, &[], true);
        assert!(home.control(ALL_OFF).unwrap().states.is_empty());
        let irc = home.control(IRC).unwrap();
        // 17 states in the fixture, 2 skipped; the others keep their UUIDs.
        assert_eq!(irc.states.len(), 15);
        assert_eq!(
            irc.state("tempActual"),
            Some("0f8b7707-00dc-1020-ffff747a5b105600")
        );
    }

    #[test]
    fn rooms_categories_and_global_states_of_the_wrong_type_are_skipped() {
        let mut doc = showroom();
        doc["rooms"][LIVING_ROOM] = json!(1);
        doc["cats"][ALARM_CATEGORY] = json!("Alarm");
        doc["globalStates"]["sunrise"] = json!({"uuid": "x"});
        let home = parse(&doc);
        assert_eq!(
            home.warnings,
            [
                warning("globalStates.sunrise", skipped("a string", "an object")),
                warning(
                    format!("rooms.{LIVING_ROOM}"),
                    skipped("a JSON object", "a number")
                ),
                warning(
                    format!("cats.{ALARM_CATEGORY}"),
                    skipped("a JSON object", "a string")
                ),
            ]
        );
        let rooms: Vec<_> = home.rooms.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(rooms, ["Centrál", "Ložnice"]);
        let cats: Vec<_> = home.categories.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(cats, ["Osvětlení", "Teplota"]);
        assert_eq!(home.global_states.len(), 9);
        assert!(!home.global_states.contains_key("sunrise"));
        // The living room's controls stay, without a room name to show.
        assert_eq!(home.controls.len(), 6);
        let lights = home.control(LIGHTS).unwrap();
        assert_eq!(lights.room.as_deref(), Some(LIVING_ROOM));
        assert_eq!(home.room_name(lights), None);
        assert_eq!(
            home.room_name(home.control(ALARM).unwrap()),
            Some("Centrál")
        );
    }

    #[test]
    fn a_duplicate_uuid_action_is_skipped_and_the_first_kept() {
        let mut doc = showroom();
        // A copy of the lights under a later key, its uuidAction in capitals.
        let mut copy = control_of(&mut doc, LIGHTS).clone();
        copy["name"] = json!("Copy");
        copy["uuidAction"] = json!(LIGHTS.to_uppercase());
        doc["controls"]["zz-copy"] = copy;
        // A sub-control of the room controller (a later key) claiming the alarm's UUID.
        control_of(&mut doc, IRC)["subControls"]["x"] =
            json!({"name": "Echo", "type": "Switch", "uuidAction": ALARM});
        let home = parse(&doc);
        assert_eq!(
            home.warnings,
            [
                warning(
                    format!("controls.{IRC}.subControls.x"),
                    StructureProblem::DuplicateUuid {
                        uuid: ALARM.to_string()
                    }
                ),
                warning(
                    "controls.zz-copy",
                    StructureProblem::DuplicateUuid {
                        uuid: LIGHTS.to_uppercase()
                    }
                ),
            ]
        );
        assert_controls_kept(&home, &[], true);
        assert_eq!(home.control(IRC).unwrap().sub_controls.len(), 2);
        // The copy's sub-controls were not read (or they would be warned about above): the
        // fixture's 6 controls and 6 sub-controls.
        assert_eq!(home.count_all_controls(), 6 + 6);
        assert!(home.warnings[1]
            .to_string()
            .ends_with("used by an earlier control; skipped"));
    }

    #[test]
    fn names_types_and_last_modified_of_the_wrong_type_read_as_empty() {
        let mut doc = showroom();
        control_of(&mut doc, ALARM)["name"] = json!({"cs": "Alarm"});
        control_of(&mut doc, ALARM)["type"] = json!(["Alarm"]);
        doc["lastModified"] = json!(["2019-02-13 10:04:08"]);
        let home = parse(&doc);
        let text = |found| StructureProblem::ReadAsEmpty {
            expected: "a string",
            found,
        };
        assert_eq!(
            home.warnings,
            [
                warning("lastModified", text("an array")),
                warning(format!("controls.{ALARM}.type"), text("an array")),
                warning(format!("controls.{ALARM}.name"), text("an object")),
            ]
        );
        // The alarm stays, nameless and of no known type, with its 10 states.
        let alarm = home.control(ALARM).unwrap();
        assert_eq!((alarm.name.as_str(), alarm.kind.as_str()), ("", ""));
        assert_eq!(alarm.states.len(), 10);
        assert_eq!(home.controls.len(), 6);
        for (uuid, name, kind, _) in &CONTROLS[1..] {
            let c = home.control(uuid).unwrap();
            assert_eq!((c.name.as_str(), c.kind.as_str()), (*name, *kind));
        }
        assert_eq!(home.last_modified, "");
    }

    #[test]
    fn a_missing_controls_still_stops_the_reading() {
        let mut doc = showroom();
        doc.as_object_mut().unwrap().remove("controls");
        let missing = StructureError::Missing {
            path: "controls".into(),
        };
        assert_eq!(parse_structure(&doc.to_string()).unwrap_err(), missing);
        doc["controls"] = Value::Null;
        assert_eq!(parse_structure(&doc.to_string()).unwrap_err(), missing);
        doc["controls"] = json!("none");
        assert_eq!(
            parse_structure(&doc.to_string()).unwrap_err(),
            StructureError::WrongType {
                path: "controls".into(),
                expected: "a JSON object",
            }
        );
        // `[]` is PHP's empty map: a house without controls.
        doc["controls"] = json!([]);
        let home = parse(&doc);
        assert!(home.controls.is_empty() && home.warnings.is_empty());
        assert_eq!(home.rooms.len(), 3);
    }

    #[test]
    fn text_that_is_not_json_stops_the_reading() {
        let cut = &SHOWROOM.as_bytes()[..SHOWROOM.len() / 2];
        assert!(matches!(
            parse_structure_bytes(cut),
            Err(StructureError::Json { .. })
        ));
        assert!(matches!(
            parse_structure_bytes(b"<html>Not Found</html>"),
            Err(StructureError::Json {
                line: 1,
                column: 1,
                ..
            })
        ));
        assert_eq!(
            parse_structure("[]").unwrap_err(),
            StructureError::WrongType {
                path: "(top level)".into(),
                expected: "a JSON object",
            }
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_inside_a_text_are_replaced_with_a_warning() {
        // "Obývací pokoj" as Latin-1 writes it: ý and í one byte each.
        let bytes: Vec<u8> = SHOWROOM
            .replace("Obývací pokoj", "Ob\u{1}vac\u{2} pokoj")
            .into_bytes()
            .into_iter()
            .map(|b| match b {
                1 => 0xFD,
                2 => 0xED,
                b => b,
            })
            .collect();
        assert!(std::str::from_utf8(&bytes).is_err());
        let home = parse_structure_bytes(&bytes).unwrap();
        assert_eq!(
            home.warnings,
            [warning(
                format!("rooms.{LIVING_ROOM}.name"),
                StructureProblem::InvalidUtf8
            )]
        );
        let living = home.rooms.iter().find(|r| r.uuid == LIVING_ROOM).unwrap();
        assert_eq!(living.name, "Ob\u{FFFD}vac\u{FFFD} pokoj");
        // Everything else as in the fixture.
        assert_eq!(home.controls.len(), 6);
        for (uuid, name, _, _) in CONTROLS {
            assert_eq!(home.control(uuid).unwrap().name, name);
        }

        // A bad byte in a key: the path names the key as repaired.
        let bytes =
            b"{\"controls\": {\"a\": {\"name\": \"x\", \"states\": {\"K\xFCche\": \"s1\"}}}}";
        let home = parse_structure_bytes(bytes).unwrap();
        assert_eq!(paths(&home), ["controls.a.states.K\u{FFFD}che"]);
        assert_eq!(home.control("a").unwrap().state("K\u{FFFD}che"), Some("s1"));
    }

    #[test]
    fn bytes_that_are_not_utf8_outside_a_text_stop_the_reading() {
        // Between two tokens: replacing it cannot leave JSON.
        let mut bytes = br#"{"controls": {}"#.to_vec();
        bytes.push(0xFF);
        bytes.push(b'}');
        assert_eq!(
            parse_structure_bytes(&bytes).unwrap_err(),
            StructureError::NotUtf8 { valid_up_to: 15 }
        );
        // A UTF-16 file (with its byte order mark) is not text to this reader.
        let utf16: Vec<u8> = std::iter::once(0xFEFF_u16)
            .chain(r#"{"controls": {}}"#.encode_utf16())
            .flat_map(u16::to_le_bytes)
            .collect();
        assert_eq!(
            parse_structure_bytes(&utf16).unwrap_err(),
            StructureError::NotUtf8 { valid_up_to: 0 }
        );
    }

    #[test]
    fn one_warning_per_path() {
        // A text where `states` should be, holding a bad byte: two problems, one path.
        let bytes = b"{\"controls\": {\"a\": {\"name\": \"x\", \"states\": \"K\xFCche\"}}}";
        let home = parse_structure_bytes(bytes).unwrap();
        assert_eq!(paths(&home), ["controls.a.states"]);
        assert_eq!(home.warnings[0].problem, StructureProblem::InvalidUtf8);
        assert!(home.control("a").unwrap().states.is_empty());
    }

    #[test]
    fn warnings_read_as_sentences() {
        let w = warning("controls.a.states.active", skipped(STATE, "a number"));
        assert_eq!(
            w.to_string(),
            "controls.a.states.active: expected a UUID string or an array of UUID strings, \
             found a number; skipped"
        );
        let w = warning("rooms", read_as_empty("a string"));
        assert_eq!(
            w.to_string(),
            "rooms: expected a JSON object, found a string; read as empty"
        );
        let w = warning("rooms.r.name", StructureProblem::InvalidUtf8);
        assert_eq!(
            w.to_string(),
            "rooms.r.name: bytes that are not UTF-8 replaced with U+FFFD"
        );
    }

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
