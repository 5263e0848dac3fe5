//! Families from the Loxone category (issue 13): a generic block (Switch, TimedSwitch,
//! Pushbutton, TextState, ValueSelector, ...) is filed by the `type` of its Loxone category;
//! a specific block keeps its type's family. Read as a client reads it (`list_devices` over MCP
//! from the real `serve` binary on a simulator serving the file), checked against the
//! structure file itself with the rule written out below, and through a key's category scope.

use serde_json::{json, Value};

use home_mcp::sim::{SimConfig, DEMO_STRUCTURE};

use crate::support::fixture_app::FIXTURES;
use crate::support::gate::key;
use crate::support::house::fixture_text;
use crate::support::mcp::McpHttp;
use crate::support::server::{Miniserver, Served};
use crate::support::wire::commands_since;

/// The blocks that can switch or show anything, per the rule: their family comes from
/// their category.
const GENERIC: &[&str] = &[
    "Switch",
    "TimedSwitch",
    "Pushbutton",
    "TextState",
    "ValueSelector",
    "Slider",
    "Radio",
    "TextInput",
    "UpDownDigital",
    "LeftRightDigital",
    "UpDownAnalog",
    "LeftRightAnalog",
];

/// Specific blocks of the fixtures and their family, whatever their category.
const SPECIFIC: &[(&str, &str)] = &[
    ("LightControllerV2", "lighting"),
    ("LightController", "lighting"),
    ("CentralLightController", "lighting"),
    ("Dimmer", "lighting"),
    ("Jalousie", "blinds"),
    ("CentralJalousie", "blinds"),
    ("IRoomController", "climate"),
    ("IRoomControllerV2", "climate"),
    ("AudioZoneV2", "audio"),
    ("Alarm", "security"),
    ("SmokeAlarm", "security"),
    ("Gate", "access"),
    ("Intercom", "access"),
    ("InfoOnlyAnalog", "sensors"),
    ("InfoOnlyDigital", "sensors"),
    ("PresenceDetector", "sensors"),
];

/// The family of a generic block in a category of Loxone `type` `cat_type` (per the structure
/// file docs: lights, shading, indoortemperature, multimedia, undefined).
fn by_category(cat_type: Option<&str>) -> &'static str {
    match cat_type {
        Some("lights") => "lighting",
        Some("shading") => "blinds",
        Some("indoortemperature") => "climate",
        Some("multimedia") => "audio",
        _ => "other",
    }
}

/// `(uuid, name, type, family by the rule)` of each top-level control the rule decides.
fn expected(structure: &str) -> Vec<(String, String, String, &'static str)> {
    let doc: Value = serde_json::from_str(structure).unwrap();
    let mut out = Vec::new();
    for (uuid, c) in doc["controls"].as_object().unwrap() {
        let kind = c["type"].as_str().unwrap();
        let cat_type = c["cat"]
            .as_str()
            .and_then(|cat| doc["cats"][cat]["type"].as_str());
        let family = if GENERIC.contains(&kind) {
            by_category(cat_type)
        } else if let Some((_, f)) = SPECIFIC.iter().find(|(t, _)| *t == kind) {
            f
        } else {
            continue;
        };
        out.push((
            uuid.clone(),
            c["name"].as_str().unwrap().to_string(),
            kind.to_string(),
            family,
        ));
    }
    out
}

/// `uuid -> category` as `list_devices` answers it.
fn listed(mcp: &mut McpHttp) -> std::collections::BTreeMap<String, String> {
    let data = mcp.ok("list_devices", json!({"limit": 500}));
    let devices = data["devices"].as_array().expect("devices");
    assert_eq!(
        devices.len() as u64,
        data["total"].as_u64().unwrap(),
        "one page"
    );
    devices
        .iter()
        .map(|d| {
            (
                d["uuid"].as_str().unwrap().to_string(),
                d["category"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn every_fixture_files_each_control_by_its_loxone_category() {
    let mut files: Vec<(String, String)> = FIXTURES
        .iter()
        .map(|f| (f.to_string(), fixture_text(f)))
        .collect();
    files.push(("demo house".into(), DEMO_STRUCTURE.to_string()));
    let mut generic_switches_not_lights = 0;
    let mut generic_checked = 0;
    for (file, text) in &files {
        let ms = Miniserver::start(text, None, SimConfig::default());
        let served = Served::start(&ms, "", &[]);
        let mut mcp = McpHttp::connect(served.addr, None);
        let listed = listed(&mut mcp);
        let want = expected(text);
        assert!(!want.is_empty(), "{file}: the rule decides some controls");
        for (uuid, name, kind, family) in &want {
            let got = listed
                .get(uuid)
                .unwrap_or_else(|| panic!("{file}: {name} ({kind}) not listed"));
            assert_eq!(got, family, "{file}: {name} ({kind})");
            if GENERIC.contains(&kind.as_str()) {
                generic_checked += 1;
                if kind == "Switch" && *family != "lighting" {
                    generic_switches_not_lights += 1;
                }
            }
        }
    }
    assert!(generic_checked > 100, "{generic_checked} generic blocks");
    // The count: 22 switches of the fixtures and the demo house that are not in a
    // lighting category (storm protection, "House in Deep Sleep", a coffee machine's socket).
    assert_eq!(generic_switches_not_lights, 22);
}

/// UK demo Miniserver: "Storm Protection", a Switch in the category Shading (type `shading`).
const STORM_PROTECTION: &str = "184100fe-034b-eda4-fffff618466b9d15";
/// UK demo Miniserver: the Kitchen's LightControllerV2 (category Lighting, type `lights`).
const KITCHEN_LIGHTS: &str = "184100e7-017f-d0b6-fffff618466b9d15";
/// UK demo Miniserver: "Smart Socket", a Switch in Controls (type `undefined`).
const SMART_SOCKET: &str = "184100e7-0035-cfcb-fffff618466b9d15";

#[test]
fn a_key_for_lighting_cannot_work_the_storm_protection() {
    let ms = Miniserver::start(
        &fixture_text("TheJack75-Loxone.NET-uk-demo-miniserver.json"),
        None,
        SimConfig::default(),
    );
    let secret = format!("homekey_operator_3_{}", "cd".repeat(16));
    let mut k = key(&secret, home_mcp::auth::Role::Operator);
    k.categories = vec!["lighting".into()];
    let served = Served::start_with_key(&ms, &k);
    let mut mcp = McpHttp::connect(served.addr, Some(&secret));
    // It works its lights (so the refusals below are not a key refused everything).
    let mark = ms.sim.request_count();
    mcp.ok(
        "control_device",
        json!({"device": KITCHEN_LIGHTS, "action": "off"}),
    );
    let own = commands_since(&ms.sim, mark);
    assert!(
        !own.is_empty() && own.iter().all(|l| l.contains(KITCHEN_LIGHTS)),
        "{own:?}"
    );
    for target in [STORM_PROTECTION, SMART_SOCKET] {
        let mark = ms.sim.request_count();
        let r = mcp.call("control_device", json!({"device": target, "action": "on"}));
        assert_eq!(
            commands_since(&ms.sim, mark),
            Vec::<String>::new(),
            "{target} commanded by a lighting key: {r}"
        );
        assert_eq!(r["isError"], true, "refused: {r}");
    }
    // And "all lights off" leaves them alone.
    let mark = ms.sim.request_count();
    mcp.ok(
        "control_lights_unified",
        json!({"scope": "category", "target": "lighting", "action": "off"}),
    );
    let sent = commands_since(&ms.sim, mark);
    assert!(!sent.is_empty(), "the lights were switched");
    assert!(
        sent.iter()
            .all(|l| !l.contains(STORM_PROTECTION) && !l.contains(SMART_SOCKET)),
        "{sent:?}"
    );
}
