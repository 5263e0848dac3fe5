//! The structure file reader against the real `LoxAPP3.json` files in `tests/fixtures/` (counts
//! from `tests/fixtures/SOURCES.md`), hand-written documents for each quirk, and broken input;
//! and the real server started on a simulated Miniserver serving a file with oddities.

use std::collections::BTreeMap;
use std::path::PathBuf;

use home_mcp::home::{Control, ControlKind, Home, StateRef, StructureProblem, StructureWarning};
use home_mcp::loxone::structure::{parse_structure, parse_structure_bytes, StructureError};
use serde_json::{json, Value};

use crate::support::mcp::McpHttp;
use crate::support::net::request_json;
use crate::support::server::{Miniserver, Served};

fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn fixture_bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixture_path(name)).unwrap_or_else(|e| panic!("reading {name}: {e}"))
}

fn fixture(name: &str) -> Home {
    parse_structure_bytes(&fixture_bytes(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

const UK: &str = "TheJack75-Loxone.NET-uk-demo-miniserver.json";
const KOTLIN: &str = "Smarteon-loxone-client-kotlin-sample-app.json";
const SOLAR: &str = "SolarNetwork-solarnetwork-loxone-evident-test.json";
const SHOWROOM: &str = "Smarteon-loxone-java-showroom.json";

/// Counts and per-type counts, as documented in `tests/fixtures/SOURCES.md`.
struct Expected {
    file: &'static str,
    rooms: usize,
    cats: usize,
    controls: usize,
    sub_controls: usize,
    control_types: &'static [(&'static str, usize)],
    sub_control_types: &'static [(&'static str, usize)],
}

const EXPECTED: [Expected; 4] = [
    Expected {
        file: UK,
        rooms: 19,
        cats: 32,
        controls: 72,
        sub_controls: 61,
        control_types: &[
            ("Jalousie", 12),
            ("LightControllerV2", 11),
            ("IRoomControllerV2", 9),
            ("Switch", 6),
            ("AudioZoneV2", 4),
            ("CentralJalousie", 4),
            ("PresenceDetector", 4),
            ("AlarmClock", 3),
            ("SmokeAlarm", 2),
            ("Webpage", 2),
            ("AalEmergency", 1),
            ("AalSmartAlarm", 1),
            ("Alarm", 1),
            ("CarCharger", 1),
            ("CentralAudioZone", 1),
            ("CentralLightController", 1),
            ("ClimateController", 1),
            ("EnergyManager", 1),
            ("Fronius", 1),
            ("Intercom", 1),
            ("LoadManager", 1),
            ("NfcCodeTouch", 1),
            ("PulseAt", 1),
            ("Remote", 1),
            ("WindowMonitor", 1),
        ],
        sub_control_types: &[
            ("ColorPickerV2", 22),
            ("Dimmer", 10),
            ("Switch", 10),
            ("IRCV2Daytimer", 9),
            ("Tracker", 9),
            ("Pushbutton", 1),
        ],
    },
    Expected {
        file: KOTLIN,
        rooms: 44,
        cats: 51,
        controls: 135,
        sub_controls: 1,
        control_types: &[
            ("TextState", 33),
            ("InfoOnlyDigital", 18),
            ("InfoOnlyText", 18),
            ("Switch", 14),
            ("Radio", 11),
            ("Pushbutton", 9),
            ("TextInput", 7),
            ("Slider", 6),
            ("Tracker", 5),
            ("InfoOnlyAnalog", 4),
            ("Daytimer", 2),
            ("SystemScheme", 2),
            ("ValueSelector", 2),
            ("AlarmClock", 1),
            ("CentralJalousie", 1),
            ("CentralLightController", 1),
            ("Intercom", 1),
        ],
        sub_control_types: &[("Pushbutton", 1)],
    },
    Expected {
        file: SOLAR,
        rooms: 7,
        cats: 9,
        controls: 38,
        sub_controls: 6,
        control_types: &[
            ("InfoOnlyAnalog", 13),
            ("InfoOnlyDigital", 5),
            ("Pushbutton", 5),
            ("Slider", 4),
            ("CentralJalousie", 3),
            ("IRoomController", 3),
            ("Jalousie", 3),
            ("CentralLightController", 1),
            ("UpDownDigital", 1),
        ],
        sub_control_types: &[("IRCDaytimer", 6)],
    },
    Expected {
        file: SHOWROOM,
        rooms: 3,
        cats: 3,
        controls: 6,
        sub_controls: 6,
        control_types: &[
            ("Alarm", 1),
            ("CentralLightController", 1),
            ("IRoomController", 1),
            ("LightController", 1),
            ("Pushbutton", 1),
            ("SmokeAlarm", 1),
        ],
        sub_control_types: &[
            ("IRCDaytimer", 2),
            ("Tracker", 2),
            ("Colorpicker", 1),
            ("Dimmer", 1),
        ],
    },
];

fn all_sub_controls(list: &[Control]) -> Vec<&Control> {
    let mut out = Vec::new();
    for c in list {
        for s in &c.sub_controls {
            out.push(s);
            out.extend(all_sub_controls(std::slice::from_ref(s)));
        }
    }
    out
}

fn type_counts<'a>(list: impl IntoIterator<Item = &'a Control>) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for c in list {
        *counts.entry(c.kind.as_str().to_string()).or_insert(0) += 1;
    }
    counts
}

fn as_map(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn every_fixture_parses() {
    let mut names: Vec<String> = std::fs::read_dir(fixture_path(""))
        .expect("fixtures dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    assert_eq!(names.len(), EXPECTED.len(), "fixtures: {names:?}");
    for name in &names {
        let home = fixture(name);
        assert!(!home.controls.is_empty(), "{name} has no controls");
        assert!(!home.last_modified.is_empty(), "{name} lastModified");
        assert!(
            EXPECTED.iter().any(|e| e.file == name),
            "{name} not in EXPECTED"
        );
    }
}

#[test]
fn fixture_counts_match_sources_md() {
    for e in &EXPECTED {
        let home = fixture(e.file);
        let subs = all_sub_controls(&home.controls);
        assert_eq!(home.rooms.len(), e.rooms, "{} rooms", e.file);
        assert_eq!(home.categories.len(), e.cats, "{} cats", e.file);
        assert_eq!(home.controls.len(), e.controls, "{} controls", e.file);
        assert_eq!(subs.len(), e.sub_controls, "{} subControls", e.file);
        assert_eq!(
            home.count_all_controls(),
            e.controls + e.sub_controls,
            "{}",
            e.file
        );
        assert_eq!(
            type_counts(&home.controls),
            as_map(e.control_types),
            "{} controls per type",
            e.file
        );
        assert_eq!(
            type_counts(subs),
            as_map(e.sub_control_types),
            "{} sub-controls per type",
            e.file
        );
    }
}

#[test]
fn fixtures_are_sorted_as_documented() {
    for e in &EXPECTED {
        let home = fixture(e.file);
        let fold = home_mcp::home::resolve::fold;
        let room_keys: Vec<_> = home
            .rooms
            .iter()
            .map(|r| (fold(&r.name), &r.name, &r.uuid))
            .collect();
        assert!(room_keys.is_sorted(), "{} rooms", e.file);
        let cat_keys: Vec<_> = home
            .categories
            .iter()
            .map(|c| (fold(&c.name), &c.name, &c.uuid))
            .collect();
        assert!(cat_keys.is_sorted(), "{} cats", e.file);
        let control_keys: Vec<_> = home
            .controls
            .iter()
            .map(|c| {
                let room = home.room_name(c);
                (room.is_none(), room.map(fold), fold(&c.name))
            })
            .collect();
        assert!(control_keys.is_sorted(), "{} controls", e.file);
        for c in &home.controls {
            let uuids: Vec<_> = c.sub_controls.iter().map(|s| &s.uuid).collect();
            assert!(uuids.is_sorted(), "{} sub-controls of {}", e.file, c.uuid);
        }
    }
}

#[test]
fn uk_demo_ms_info_and_string_numbers() {
    let home = fixture(UK);
    assert_eq!(home.last_modified, "2022-02-25 11:51:06");
    let ms = &home.ms_info;
    // "miniserverType": "2" and "tempUnit": "0" are strings in this file.
    assert_eq!(ms.miniserver_type, Some(2));
    assert_eq!(ms.temp_unit, Some(0));
    assert_eq!(ms.remote_url, "ukdemominiserver.loxone.co.uk");
    assert_eq!(ms.ms_name, "Demo Miniserver UK");
    assert_eq!(ms.current_user.as_deref(), Some("web"));
    assert!(!ms.serial_nr.is_empty());
    assert!(!ms.language_code.is_empty());
    // "defaultRating": "10" on the Intercom.
    let intercom = home
        .control("184100ee-016e-db5a-fffff618466b9d15")
        .expect("intercom");
    assert_eq!(intercom.kind, ControlKind::Intercom);
    assert_eq!(intercom.default_rating, 10);
    assert!(home.global_states.contains_key("operatingMode"));
    assert!(!home.operating_modes.is_empty());
}

#[test]
fn uk_demo_suffixed_sub_controls_keep_their_suffix_and_parent_room() {
    let home = fixture(UK);
    let parent = home
        .control("184100e7-017f-d0b6-fffff618466b9d15")
        .expect("kitchen lighting controller");
    assert_eq!(parent.kind, ControlKind::LightControllerV2);
    assert_eq!(home.room_name(parent), Some("Kitchen"));
    let master = home
        .control("184100e7-017f-d0b6-fffff618466b9d15/masterValue")
        .expect("masterValue sub-control");
    assert_eq!(master.name, "Master Brightness");
    assert_eq!(master.kind, ControlKind::Dimmer);
    // Sub-controls without their own room take the parent's.
    assert_eq!(master.room, parent.room);
    let ceiling = home
        .control("184100e7-017f-d0b6-fffff618466b9d15/AI2")
        .expect("AI2 sub-control");
    assert_eq!(ceiling.name, "Ceiling");
    assert_eq!(ceiling.kind, ControlKind::ColorPickerV2);
    assert!(parent.sub_controls.iter().any(|s| s.uuid == master.uuid));
}

#[test]
fn showroom_temperatures_state_is_an_array() {
    let home = fixture(SHOWROOM);
    let irc = home
        .control("0f8b7707-00dc-1049-ffff373f9870b52a")
        .expect("IRoomController");
    assert_eq!(irc.kind, ControlKind::IRoomController);
    match irc.states.get("temperatures") {
        Some(StateRef::Uuids(list)) => {
            assert_eq!(list.len(), 7);
            assert_eq!(list[0], "0f8b7707-00dc-1028-ffff747a5b105600");
        }
        other => panic!("temperatures: {other:?}"),
    }
    // `state()` only answers single-UUID states.
    assert_eq!(irc.state("temperatures"), None);
    assert!(irc.state("tempActual").is_some());
    assert_eq!(home.ms_info.miniserver_type, Some(1));
    assert_eq!(home.ms_info.current_user.as_deref(), Some("showroom"));
}

#[test]
fn unknown_types_are_kept_with_their_states() {
    let home = fixture(UK);
    let clocks: Vec<_> = home
        .controls
        .iter()
        .filter(|c| c.kind == ControlKind::Unknown("AlarmClock".into()))
        .collect();
    assert_eq!(clocks.len(), 3);
    assert!(clocks.iter().all(|c| !c.states.is_empty()));

    let home = parse_structure(
        r#"{"controls": {"aaa": {"name": "Steam", "type": "SaunaVapor", "uuidAction": "aaa",
            "states": {"temp": "s-1", "level": "s-2"}, "details": {"x": 1}}}}"#,
    )
    .unwrap();
    let c = &home.controls[0];
    assert_eq!(c.kind, ControlKind::Unknown("SaunaVapor".into()));
    assert_eq!(c.kind.as_str(), "SaunaVapor");
    assert_eq!(c.state("temp"), Some("s-1"));
    assert_eq!(c.state("level"), Some("s-2"));
    assert_eq!(c.details.get("x"), Some(&serde_json::json!(1)));
}

#[test]
fn lenient_shapes_of_hand_written_document() {
    let doc = r#"{
        "lastModified": "2024-01-02 03:04:05",
        "msInfo": {"msName": "Test", "miniserverType": "3", "tempUnit": "1",
                   "currentUser": {"name": "anna"}, "serialNr": 504},
        "rooms": {"r1": {"uuid": "r1", "name": "Küche", "defaultRating": "2", "isFavorite": "1"},
                  "r2": {"name": "Bad"}},
        "cats": {"c1": {"uuid": "c1", "name": "Licht", "type": "lights"}, "c2": {"name": "X", "type": "weird"}},
        "globalStates": {"sunrise": "g-1", "n": null},
        "operatingModes": {"0": "Feiertag"},
        "controls": {
            "u1": {"name": "Decke", "type": "LightControllerV2", "uuidAction": "u1", "room": "r1",
                   "cat": "c1", "defaultRating": "3", "isSecured": 1, "restrictions": "2",
                   "states": {"activeMoods": "s1", "gone": null},
                   "subControls": {"u1/masterValue": {"name": "Master", "type": "Dimmer"},
                                   "u1/AI1": {"name": "Spot", "type": "Switch", "uuidAction": "u1/AI1", "room": "r2"}}},
            "u2": {"name": "Nothing", "type": "Switch", "room": null, "cat": null, "states": null,
                   "details": null, "subControls": null, "isFavorite": true},
            "u3": {"type": "InfoOnlyAnalog", "uuidAction": "u3", "room": "r2"}
        }
    }"#;
    let home = parse_structure(doc).unwrap();
    assert_eq!(home.last_modified, "2024-01-02 03:04:05");
    assert_eq!(home.ms_info.miniserver_type, Some(3));
    assert_eq!(home.ms_info.temp_unit, Some(1));
    assert_eq!(home.ms_info.current_user.as_deref(), Some("anna"));
    assert_eq!(home.ms_info.serial_nr, "504");
    // Rooms sorted by name; uuid falls back to the map key.
    let rooms: Vec<_> = home
        .rooms
        .iter()
        .map(|r| (r.uuid.as_str(), r.name.as_str()))
        .collect();
    assert_eq!(rooms, [("r2", "Bad"), ("r1", "Küche")]);
    assert_eq!(home.rooms[1].default_rating, 2);
    assert!(home.rooms[1].is_favorite);
    assert_eq!(home.categories[0].kind.as_str(), "lights");
    assert_eq!(home.categories[1].kind.as_str(), "weird");
    assert_eq!(home.global_states.len(), 1);
    assert_eq!(
        home.operating_modes.get("0").map(String::as_str),
        Some("Feiertag")
    );

    // Controls: room "Bad" first, then "Küche", then the one without a room.
    let order: Vec<_> = home.controls.iter().map(|c| c.uuid.as_str()).collect();
    assert_eq!(order, ["u3", "u1", "u2"]);
    let u1 = home.control("u1").unwrap();
    assert_eq!(u1.default_rating, 3);
    assert_eq!(u1.restrictions, 2);
    assert!(u1.is_secured);
    assert_eq!(u1.category.as_deref(), Some("c1"));
    assert_eq!(u1.states.len(), 1, "null states are skipped");
    // Sub-control without uuidAction uses its map key; sorted by uuid; own room wins.
    let subs: Vec<_> = u1.sub_controls.iter().map(|s| s.uuid.as_str()).collect();
    assert_eq!(subs, ["u1/AI1", "u1/masterValue"]);
    assert_eq!(
        home.control("u1/masterValue").unwrap().room.as_deref(),
        Some("r1")
    );
    assert_eq!(home.control("u1/AI1").unwrap().room.as_deref(), Some("r2"));
    let u2 = home.control("u2").unwrap();
    assert!(u2.room.is_none() && u2.states.is_empty() && u2.details.is_empty());
    assert!(u2.is_favorite);
    assert_eq!(home.control("u3").unwrap().name, "");
}

#[test]
fn null_top_level_sections_are_absent() {
    let home = parse_structure(
        r#"{"controls": {}, "rooms": null, "cats": null, "msInfo": null,
            "globalStates": null, "operatingModes": null, "lastModified": null}"#,
    )
    .unwrap();
    assert!(home.rooms.is_empty() && home.categories.is_empty());
    assert_eq!(home.ms_info, Default::default());
    assert!(home.global_states.is_empty() && home.last_modified.is_empty());
    assert!(home.warnings.is_empty(), "{:?}", home.warnings);
    // A control that is `null` is left out, with a warning naming it.
    let home = parse_structure(r#"{"controls": {"a": null, "b": {"name": "B"}}}"#).unwrap();
    assert_eq!(warning_paths(&home), ["controls.a"]);
    assert_eq!(home.controls.len(), 1);
    assert_eq!(home.control("b").unwrap().name, "B");
}

fn warning_paths(home: &Home) -> Vec<&str> {
    home.warnings.iter().map(|w| w.path.as_str()).collect()
}

#[test]
fn deeply_nested_sub_controls_parse() {
    let depth = 60;
    let mut doc = String::from(r#"{"controls": "#);
    for i in 0..depth {
        doc.push_str(&format!(
            r#"{{"c{i}": {{"name": "n{i}", "type": "Switch", "subControls": "#
        ));
    }
    doc.push_str("{}");
    doc.push_str(&"}}".repeat(depth));
    doc.push('}');
    let home = parse_structure(&doc).unwrap();
    assert_eq!(home.count_all_controls(), depth);
    assert_eq!(home.control("c59").unwrap().name, "n59");
}

#[test]
fn byte_order_mark_is_stripped() {
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend_from_slice(&fixture_bytes(SHOWROOM));
    assert_eq!(parse_structure_bytes(&bytes).unwrap().controls.len(), 6);
    let text = format!("\u{feff}{}", r#"{"controls": {}}"#);
    assert!(parse_structure(&text).unwrap().controls.is_empty());
}

fn wrong_type(result: Result<Home, StructureError>) -> (String, &'static str, String) {
    match result {
        Err(e @ StructureError::WrongType { .. }) => {
            let msg = e.to_string();
            let StructureError::WrongType { path, expected } = e else {
                unreachable!()
            };
            (path, expected, msg)
        }
        other => panic!("expected WrongType, got {other:?}"),
    }
}

#[test]
fn truncated_fixture_is_a_json_error() {
    let bytes = fixture_bytes(UK);
    let half = &bytes[..bytes.len() / 2];
    match parse_structure_bytes(half) {
        Err(StructureError::Json { line, column, .. }) => {
            assert!(line > 1 && column > 0, "line {line} column {column}");
        }
        other => panic!("expected Json error, got {other:?}"),
    }
}

#[test]
fn malformed_json_names_line_and_column() {
    let err = parse_structure("{\n  \"controls\": {,}\n}").unwrap_err();
    match &err {
        StructureError::Json { line, column, .. } => assert_eq!((*line, *column), (2, 16)),
        other => panic!("expected Json error, got {other:?}"),
    }
    assert!(err.to_string().contains("line 2, column 16"), "{err}");
    assert!(matches!(
        parse_structure(""),
        Err(StructureError::Json { .. })
    ));
}

#[test]
fn top_level_array_is_rejected() {
    let (path, expected, msg) = wrong_type(parse_structure(r#"[{"controls": {}}]"#));
    assert_eq!(path, "(top level)");
    assert_eq!(expected, "a JSON object");
    assert!(
        msg.contains("(top level)") && msg.contains("object"),
        "{msg}"
    );
}

#[test]
fn missing_controls_is_rejected() {
    for doc in [r#"{"rooms": {}}"#, r#"{"controls": null}"#] {
        let err = parse_structure(doc).unwrap_err();
        assert_eq!(
            err,
            StructureError::Missing {
                path: "controls".into()
            }
        );
        assert!(err.to_string().contains("controls"), "{err}");
    }
}

#[test]
fn controls_that_is_a_string_is_rejected() {
    let (path, expected, msg) = wrong_type(parse_structure(r#"{"controls": "none"}"#));
    assert_eq!((path.as_str(), expected), ("controls", "a JSON object"));
    assert!(msg.contains("controls must be a JSON object"), "{msg}");
}

#[test]
fn control_that_is_a_number_is_skipped() {
    let home = parse_structure(
        r#"{"controls": {"1841-ab": {"name": "ok", "type": "Switch"}, "1841-cd": 7}}"#,
    )
    .unwrap();
    assert_eq!(
        home.warnings,
        [StructureWarning {
            path: "controls.1841-cd".into(),
            problem: StructureProblem::Skipped {
                expected: "a JSON object",
                found: "a number"
            },
        }]
    );
    assert!(home.warnings[0].to_string().contains("controls.1841-cd"));
    let kept: Vec<_> = home.controls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(kept, ["ok"]);
}

#[test]
fn nested_shapes_name_their_path() {
    // Each odd place is skipped or read as empty, with one warning naming its path; the
    // control itself stays.
    let cases = [
        (
            r#"{"controls": {"a": {"type": "Switch", "states": "x"}}}"#,
            "controls.a.states",
        ),
        (
            r#"{"controls": {"a": {"type": "Switch", "states": {"active": 5}}}}"#,
            "controls.a.states.active",
        ),
        (
            r#"{"controls": {"a": {"type": "Switch", "states": {"t": ["u", 1]}}}}"#,
            "controls.a.states.t",
        ),
        (
            r#"{"controls": {"a": {"type": "X", "subControls": {"a/AI1": 3}}}}"#,
            "controls.a.subControls.a/AI1",
        ),
        (
            r#"{"controls": {"a": {"type": "X", "subControls": [3]}}}"#,
            "controls.a.subControls",
        ),
        (
            r#"{"controls": {"a": {"type": "X", "details": "d"}}}"#,
            "controls.a.details",
        ),
        (
            r#"{"controls": {"a": {"type": {"x": 1}}}}"#,
            "controls.a.type",
        ),
        (r#"{"controls": {"a": {}}, "rooms": [1]}"#, "rooms"),
        (r#"{"controls": {"a": {}}, "rooms": {"r": 1}}"#, "rooms.r"),
        (r#"{"controls": {"a": {}}, "cats": "c"}"#, "cats"),
        (r#"{"controls": {"a": {}}, "msInfo": 1}"#, "msInfo"),
    ];
    for (doc, want) in cases {
        let home = parse_structure(doc).unwrap_or_else(|e| panic!("{doc}: {e}"));
        assert_eq!(warning_paths(&home), [want], "{doc}");
        assert!(home.warnings[0].to_string().starts_with(want), "{doc}");
        assert!(home.control("a").is_some(), "{doc}");
    }
    // An empty array (PHP's empty map) is read as empty, with a warning at each place.
    let home = parse_structure(
        r#"{"controls": {"a": {"type": "X", "subControls": [], "states": [], "details": []}},
            "rooms": [], "cats": [], "msInfo": [], "globalStates": [], "operatingModes": []}"#,
    )
    .unwrap();
    let mut paths = warning_paths(&home);
    paths.sort();
    assert_eq!(
        paths,
        [
            "cats",
            "controls.a.details",
            "controls.a.states",
            "controls.a.subControls",
            "globalStates",
            "msInfo",
            "operatingModes",
            "rooms"
        ],
        "{:?}",
        home.warnings
    );
    assert_eq!(home.controls.len(), 1);
}

#[test]
fn invalid_utf8_in_a_name_is_replaced() {
    let home = parse_structure_bytes(b"{\"controls\": {\"a\": {\"name\": \"K\xFCche\"}}}").unwrap();
    assert_eq!(home.control("a").unwrap().name, "K\u{FFFD}che");
    assert_eq!(
        home.warnings,
        [StructureWarning {
            path: "controls.a.name".into(),
            problem: StructureProblem::InvalidUtf8,
        }]
    );
    // Outside a string it is beyond repair.
    let err = parse_structure_bytes(b"{\"controls\": {}\xFC}").unwrap_err();
    assert_eq!(err, StructureError::NotUtf8 { valid_up_to: 15 });
    assert!(err.to_string().contains("UTF-8"), "{err}");
}

#[test]
fn damaged_input_never_panics() {
    let bytes = fixture_bytes(SHOWROOM);
    // Every cut point (step 97) and a deterministic set of single-byte corruptions.
    for cut in (0..bytes.len()).step_by(97) {
        assert!(
            parse_structure_bytes(&bytes[..cut]).is_err(),
            "cut at {cut}"
        );
    }
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let replacements = b"{}[]\",:0n \xFF";
    for _ in 0..300 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut damaged = bytes.clone();
        let at = (seed % damaged.len() as u64) as usize;
        damaged[at] = replacements[(seed >> 32) as usize % replacements.len()];
        let _ = parse_structure_bytes(&damaged);
    }
    // Deep nesting stops at serde_json's recursion limit instead of overflowing the stack.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(matches!(
        parse_structure(&deep),
        Err(StructureError::Json { .. })
    ));
}

#[test]
fn the_server_starts_on_an_odd_file_and_lists_the_good_controls() {
    // The showroom fixture's controls (UUID, name, room), as the file has them.
    const ALARM: &str = "0f86a2fe-0378-3e15-ffff373f9870b52a";
    const ALL_OFF: &str = "0f86a20d-02ad-17f0-ffff373f9870b52a";
    const IRC: &str = "0f8b7707-00dc-1049-ffff373f9870b52a";
    let kept = [
        (
            "0f86a20d-0301-1814-ffff373f9870b52a",
            "Centrála požáru a úniku vody",
            "Centrál",
        ),
        (
            "10a73e3b-01d5-1a35-ffff373f9870b52a",
            "Centrál osvětlení",
            "Centrál",
        ),
        (ALL_OFF, "Vše vyp.", "Centrál"),
        (
            "0f86a20d-009d-178c-ffff373f9870b52a",
            "Ovládání osvětlení",
            "Obývací pokoj",
        ),
        (
            IRC,
            "Inteligentní regulace pokojové teploty",
            "Obývací pokoj",
        ),
    ];
    let mut doc: Value = serde_json::from_slice(&fixture_bytes(SHOWROOM)).unwrap();
    // 14 characters: the simulator serves it as it is.
    doc["msInfo"]["serialNr"] = json!("504F9410B84A00");
    // Five warnings: PHP's empty map and a section of the wrong type read as empty, a
    // control and a state skipped, and a duplicate uuidAction under a later key (the
    // simulator and the server keep the first).
    doc["cats"] = json!([]);
    doc["globalStates"] = json!("none");
    doc["controls"][ALARM] = json!("Alarm");
    doc["controls"][IRC]["states"]["tempTarget"] = json!(5);
    let mut copy = doc["controls"][ALL_OFF].clone();
    copy["name"] = json!("Kopie");
    doc["controls"]["zz-copy"] = copy;
    let warned = [
        "cats".to_string(),
        "globalStates".to_string(),
        format!("controls.{ALARM}"),
        format!("controls.{IRC}.states.tempTarget"),
        "controls.zz-copy".to_string(),
    ];

    let ms = Miniserver::start(&doc.to_string(), None, Default::default());
    let served = Served::start(&ms, "", &[]);
    let (status, _, health) = request_json(served.addr, "GET", "/health", &[], "");
    assert_eq!(status, 200, "{health}");
    assert_eq!(health["structure"]["warnings"], 5, "{health}");
    assert_eq!(health["structure"]["rejected"], Value::Null, "{health}");
    assert_eq!(
        health["structure"]["last_modified"], doc["lastModified"],
        "{health}"
    );
    assert_eq!(health["miniserver"]["serial"], "504F9410B84A00", "{health}");
    // The start-up log: one line per warning naming its path, and the count.
    let log = served.log();
    for path in &warned {
        let lines = log
            .iter()
            .filter(|l| l.contains(&format!("structure file {path}:")));
        assert_eq!(lines.count(), 1, "{path}: {log:#?}");
    }
    assert!(
        log.iter()
            .any(|l| l.contains("structure file ") && l.ends_with(", 5 warnings")),
        "{log:#?}"
    );

    let mut mcp = McpHttp::connect(served.addr, None);
    let data = mcp.ok("list_devices", json!({}));
    assert_eq!(data["total"], kept.len(), "{data}");
    let listed: Vec<(&str, &str, &str)> = data["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .map(|d| {
            (
                d["uuid"].as_str().unwrap_or(""),
                d["name"].as_str().unwrap_or(""),
                d["room"].as_str().unwrap_or(""),
            )
        })
        .collect();
    for want in kept {
        assert!(listed.contains(&want), "{want:?} not in {listed:?}");
    }
    assert!(!listed.iter().any(|d| d.1 == "Kopie"), "{listed:?}");
}
