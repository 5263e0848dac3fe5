//! The blinds tools end to end through the real Loxone client against the simulator loaded with
//! the demo house: discovery, room / house-wide / unified commands (positions in percent closed,
//! 0 = fully open), dry runs, per-blind results, and every bad-input class.

use crate::support;
use support::*;

use serde_json::{json, Value};
use support::wire::sent_commands;

use home_mcp::app::App;
use home_mcp::mcp::Handler;

/// UUIDs of the demo's Jalousies (not the central block), optionally of one room; fails when
/// the house has not its seven, or the room none.
fn jalousies(app: &App, room: Option<&str>) -> Vec<String> {
    let home = app.house.home();
    let in_room = room.map(|r| home.resolve_room(r).unwrap().uuid.clone());
    let found: Vec<String> = home
        .controls
        .iter()
        .filter(|c| c.kind.as_str() == "Jalousie")
        .filter(|c| in_room.as_ref().is_none_or(|r| c.room.as_ref() == Some(r)))
        .map(|c| c.uuid.clone())
        .collect();
    match room {
        // The demo house (assets/demo-house.json) has seven Jalousie blocks.
        None => assert_eq!(found.len(), 7, "the demo house's blinds"),
        Some(r) => assert!(!found.is_empty(), "no blinds in {r}"),
    }
    found
}

fn central(app: &App) -> String {
    let home = app.house.home();
    home.controls
        .iter()
        .find(|c| c.kind.as_str() == "CentralJalousie")
        .expect("the demo has a CentralJalousie")
        .uuid
        .clone()
}

/// Where the simulator's blind is heading (0..1): `targetPosition`.
fn target(app: &App, uuid: &str) -> Option<f64> {
    sim(app).state(uuid, "targetPosition")
}

/// Where the simulator's blind is, in percent closed as the tools report it.
fn percent_closed(app: &App, uuid: &str) -> f64 {
    sim(app)
        .state(uuid, "position")
        .expect("a Jalousie has a position")
        * 100.0
}

/// Every result ok (a dry run: planned), in the batch runner's shape.
fn assert_all_ok(data: &Value, expected: usize) {
    let results = data["results"].as_array().unwrap();
    let dry = data["dry_run"] == true;
    let status = if dry { "planned" } else { "ok" };
    assert_eq!(results.len(), expected, "{data}");
    let summary = &data["summary"];
    assert_eq!(summary["total"], expected);
    assert_eq!(
        summary[if dry { "planned" } else { "succeeded" }],
        expected,
        "{data}"
    );
    assert_eq!(summary["failed"], 0);
    assert_eq!(summary["not_attempted"], 0);
    for r in results {
        assert_eq!(r["status"], status, "{r}");
        assert!(
            r["device"]["uuid"].is_string() && r["device"]["name"].is_string(),
            "{r}"
        );
        assert_eq!(r["device"]["type"], "Jalousie", "{r}");
        assert!(r.get("error").is_none(), "{r}");
    }
}

#[test]
fn discover_lists_every_blind_with_capabilities() {
    let (app, tools) = demo();
    let data = ok(&tools, "discover_rolladen_capabilities", json!({}));
    let blinds = data["blinds"].as_array().unwrap();
    let demo_blinds = jalousies(&app, None);
    assert_eq!(demo_blinds.len(), 7);
    for uuid in &demo_blinds {
        let b = blinds
            .iter()
            .find(|b| b["uuid"] == uuid.as_str())
            .unwrap_or_else(|| panic!("{uuid} missing from {data}"));
        assert_eq!(b["type"], "Jalousie");
        let p = b["position"].as_f64().expect("position read");
        assert!((p - percent_closed(&app, uuid)).abs() < 0.5, "{b}");
        assert!(b["room"].is_string());
        assert!(b["automatic_shading"].is_boolean());
        let actions: Vec<&str> = b["actions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        for a in ["up", "down", "stop", "shade", "position"] {
            assert!(actions.contains(&a), "{b}");
        }
        assert_eq!(actions.contains(&"slats"), b["slats"] == true, "{b}");
    }
    assert!(data["position_meaning"]
        .as_str()
        .unwrap()
        .contains("0 = fully open"));

    // Raffstore (venetian blinds, animation 0) has slats; Rollladen (shutters) do not.
    let raffstore = blinds.iter().find(|b| b["name"] == "Raffstore").unwrap();
    assert_eq!(raffstore["slats"], true);
    assert_eq!(raffstore["room"], "Büro");
    let terrace = blinds
        .iter()
        .find(|b| b["name"] == "Rollladen Terrassentür")
        .unwrap();
    assert_eq!(terrace["slats"], false);
    assert_eq!(terrace["automatic_shading"], false);
    assert_eq!(terrace["style"], "shutters");
    let kitchen = blinds
        .iter()
        .find(|b| b["name"] == "Rollladen Küche")
        .unwrap();
    assert_eq!(kitchen["automatic_shading"], true);

    let c = blinds
        .iter()
        .find(|b| b["uuid"] == central(&app).as_str())
        .unwrap();
    assert_eq!(c["type"], "CentralJalousie");
    assert!(c["position"].is_null());
    assert_eq!(c["controls"], 7);

    let living = ok(
        &tools,
        "discover_rolladen_capabilities",
        json!({"room": "wohnzimmer"}),
    );
    assert_eq!(living["total"], 2);
    for b in living["blinds"].as_array().unwrap() {
        assert_eq!(b["room"], "Wohnzimmer");
    }
    let one = ok(
        &tools,
        "discover_rolladen_capabilities",
        json!({"limit": 1}),
    );
    assert_eq!(one["blinds"].as_array().unwrap().len(), 1);
}

#[test]
fn room_down_moves_that_rooms_blinds_only() {
    let (app, tools) = demo();
    let living = jalousies(&app, Some("Wohnzimmer"));
    assert_eq!(living.len(), 2);
    let kitchen = jalousies(&app, Some("Küche"));
    let kitchen_before = target(&app, &kitchen[0]);

    let data = ok(
        &tools,
        "control_room_rolladen",
        json!({"room": "wohnzimmer", "action": "down"}),
    );
    assert_eq!(data["target"], "Wohnzimmer");
    assert_eq!(data["scope"], "room");
    assert_eq!(data["dry_run"], false);
    assert_all_ok(&data, 2);
    for r in data["results"].as_array().unwrap() {
        assert_eq!(r["device"]["room"], "Wohnzimmer");
        assert_eq!(r["commands"].as_array().unwrap().len(), 1);
        assert!(
            r["commands"][0].as_str().unwrap().ends_with("/FullDown"),
            "{r}"
        );
    }
    for uuid in &living {
        assert_eq!(target(&app, uuid), Some(1.0), "{uuid} heads to closed");
        // Moving (or already there): never away from closed.
        let down = sim(&app).state(uuid, "down");
        let pos = sim(&app).state(uuid, "position").unwrap();
        assert!(
            down == Some(1.0) || pos == 1.0,
            "{uuid}: down={down:?} pos={pos}"
        );
    }
    assert_eq!(
        target(&app, &kitchen[0]),
        kitchen_before,
        "other rooms untouched"
    );

    // Up, then stop: the target becomes where the blind stands.
    ok(
        &tools,
        "control_room_rolladen",
        json!({"room": "Wohnzimmer", "action": "up"}),
    );
    assert_eq!(target(&app, &living[0]), Some(0.0));
    ok(
        &tools,
        "control_room_rolladen",
        json!({"room": "Wohnzimmer", "action": "stop"}),
    );
    let pos = sim(&app).state(&living[0], "position").unwrap();
    assert_eq!(target(&app, &living[0]), Some(pos));
    assert_eq!(sim(&app).state(&living[0], "up"), Some(0.0));

    // Shade goes to the shading position (the simulator's default is fully closed).
    let shade = ok(
        &tools,
        "control_room_rolladen",
        json!({"room": "Küche", "action": "shade"}),
    );
    assert_all_ok(&shade, 1);
    assert!(target(&app, &kitchen[0]).unwrap() > 0.0);
}

#[test]
fn position_40_sets_target_0_4() {
    let (app, tools) = demo();
    let bedroom = jalousies(&app, Some("Schlafzimmer"));
    let data = ok(
        &tools,
        "control_room_rolladen",
        json!({"room": "Schlafzimmer", "action": "position", "position": 40}),
    );
    assert_all_ok(&data, 1);
    assert_eq!(data["value"], 40.0);
    assert!(data["results"][0]["commands"][0]
        .as_str()
        .unwrap()
        .ends_with("/manualPosition/40"));
    assert_eq!(target(&app, &bedroom[0]), Some(0.4));

    // The unified tool, by device names.
    let kids = jalousies(&app, Some("Kinderzimmer"));
    let data = ok(
        &tools,
        "control_rolladen_unified",
        json!({"scope": "devices", "target": ["Rollladen Kinderzimmer", "Rollladen Schlafzimmer"], "action": "position", "value": 75}),
    );
    assert_all_ok(&data, 2);
    assert_eq!(target(&app, &kids[0]), Some(0.75));
    assert_eq!(target(&app, &bedroom[0]), Some(0.75));

    // Unified by room, and slats on the Raffstore.
    let office = jalousies(&app, Some("Büro"));
    let data = ok(
        &tools,
        "control_rolladen_unified",
        json!({"scope": "room", "target": "buro", "action": "slats", "value": 30}),
    );
    assert_all_ok(&data, 1);
    assert_eq!(data["target"], "Büro");
    assert_eq!(
        sim(&app).state(&office[0], "targetPositionLamelle"),
        Some(0.3)
    );
    // Shutters have no slats: reported for that blind, nothing sent.
    let data = ok(
        &tools,
        "control_rolladen_unified",
        json!({"scope": "devices", "target": ["Raffstore", "Rollladen Küche"], "action": "slats", "value": 50}),
    );
    assert_eq!(data["summary"]["succeeded"], 1);
    assert_eq!(data["summary"]["failed"], 1);
    let bad = data["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["status"] == "error")
        .unwrap();
    assert_eq!(bad["device"]["name"], "Rollladen Küche");
    assert_eq!(bad["error"]["code"], "INVALID_PARAMETERS");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no slats"),
        "{bad}"
    );
    assert_eq!(bad["commands"], json!([]), "nothing sent to it");
}

#[test]
fn all_acts_on_each_jalousie_not_the_central_block() {
    let (app, tools) = demo();
    let all = jalousies(&app, None);
    let data = ok(
        &tools,
        "control_all_rolladen",
        json!({"confirm": true, "action": "down"}),
    );
    assert_eq!(data["scope"], "system");
    assert_all_ok(&data, all.len());
    let central = central(&app);
    for r in data["results"].as_array().unwrap() {
        assert_ne!(
            r["device"]["uuid"],
            central.as_str(),
            "central block not commanded"
        );
    }
    for uuid in &all {
        assert_eq!(target(&app, uuid), Some(1.0), "{uuid}");
    }
    let data = ok(
        &tools,
        "control_rolladen_unified",
        json!({"scope": "all", "action": "up", "confirm": true}),
    );
    assert_all_ok(&data, all.len());
    for uuid in &all {
        assert_eq!(target(&app, uuid), Some(0.0), "{uuid}");
    }
}

#[test]
fn dry_run_changes_nothing() {
    let (app, tools) = demo();
    let all = jalousies(&app, None);
    let snapshot = |app: &App| -> Vec<(Option<f64>, Option<f64>)> {
        all.iter()
            .map(|u| (target(app, u), sim(app).state(u, "down")))
            .collect()
    };
    let before = snapshot(&app);
    let data = ok(
        &tools,
        "control_all_rolladen",
        json!({"action": "position", "position": 60, "dry_run": true}),
    );
    assert_eq!(data["dry_run"], true);
    assert_all_ok(&data, all.len());
    for r in data["results"].as_array().unwrap() {
        assert!(
            r["commands"][0]
                .as_str()
                .unwrap()
                .ends_with("/manualPosition/60"),
            "{r}"
        );
        let p = r["current"]["position"].as_f64().unwrap();
        let uuid = r["device"]["uuid"].as_str().unwrap();
        assert!((p - percent_closed(&app, uuid)).abs() < 0.5, "{r}");
    }
    let data = ok(
        &tools,
        "control_rolladen_unified",
        json!({"scope": "room", "target": "Wohnzimmer", "action": "down", "dry_run": true}),
    );
    assert_all_ok(&data, 2);
    ok(
        &tools,
        "control_room_rolladen",
        json!({"room": "Küche", "action": "down", "dry_run": true}),
    );
    // The tools answer after any command they send: nothing is on its way now.
    assert_eq!(snapshot(&app), before, "a dry run changes nothing");
    for uuid in &all {
        assert_eq!(
            sent_commands(sim(&app), uuid),
            Vec::<String>::new(),
            "a dry run sends nothing to {uuid}"
        );
    }
}

#[test]
fn bad_inputs() {
    let (_app, tools) = demo();
    // out of range
    let m = invalid_params(
        &tools,
        "control_room_rolladen",
        json!({"room": "Küche", "action": "position", "position": 150}),
    );
    assert!(m.contains("position must be between 0 and 100"), "{m}");
    let m = invalid_params(
        &tools,
        "control_rolladen_unified",
        json!({"scope": "all", "action": "position", "value": -1}),
    );
    assert!(m.contains("value must be between 0 and 100"), "{m}");
    // position missing for action position, given for another action
    let m = invalid_params(
        &tools,
        "control_all_rolladen",
        json!({"confirm": true, "action": "position"}),
    );
    assert!(m.contains("position") && m.contains("required"), "{m}");
    let m = invalid_params(
        &tools,
        "control_all_rolladen",
        json!({"confirm": true, "action": "up", "position": 10}),
    );
    assert!(m.contains("position does not go with action up"), "{m}");
    // unknown action; slats is not a room action
    let m = invalid_params(
        &tools,
        "control_room_rolladen",
        json!({"room": "Küche", "action": "explode"}),
    );
    assert!(m.contains("explode"), "{m}");
    let m = invalid_params(
        &tools,
        "control_room_rolladen",
        json!({"room": "Küche", "action": "slats", "position": 20}),
    );
    assert!(m.contains("slats"), "{m}");
    // missing room / action / scope
    let m = invalid_params(&tools, "control_room_rolladen", json!({"action": "up"}));
    assert!(m.contains("`room`"), "{m}");
    let m = invalid_params(&tools, "control_all_rolladen", json!({"confirm": true}));
    assert!(m.contains("`action`"), "{m}");
    let m = invalid_params(&tools, "control_rolladen_unified", json!({"action": "up"}));
    assert!(m.contains("`scope`"), "{m}");
    // unknown field
    let m = invalid_params(
        &tools,
        "control_all_rolladen",
        json!({"confirm": true, "action": "up", "speed": 2}),
    );
    assert!(m.contains("`speed`"), "{m}");
    // targets per scope
    let m = invalid_params(
        &tools,
        "control_rolladen_unified",
        json!({"scope": "room", "action": "up"}),
    );
    assert!(m.contains("target") && m.contains("required"), "{m}");
    let m = invalid_params(
        &tools,
        "control_rolladen_unified",
        json!({"scope": "all", "target": "Küche", "action": "up"}),
    );
    assert!(m.contains("do not go with scope system"), "{m}");
    let m = invalid_params(
        &tools,
        "control_rolladen_unified",
        json!({"scope": "devices", "target": [1, 2], "action": "up"}),
    );
    assert!(m.contains("target[0] must be of type string"), "{m}");
    let m = invalid_params(
        &tools,
        "control_rolladen_unified",
        json!({"scope": "everywhere", "action": "up"}),
    );
    assert!(m.contains("everywhere"), "{m}");

    // unknown room: not found with suggestions
    let e = tool_error(
        &tools,
        "control_room_rolladen",
        json!({"room": "Ballsaal", "action": "down"}),
    );
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    assert!(e["message"].as_str().unwrap().contains("Ballsaal"), "{e}");
    // a room without blinds
    let e = tool_error(
        &tools,
        "control_room_rolladen",
        json!({"room": "Zentral", "action": "down"}),
    );
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    assert!(e["message"].as_str().unwrap().contains("no blinds"), "{e}");
    // unknown device in a list: nothing is moved
    let e = tool_error(
        &tools,
        "control_rolladen_unified",
        json!({"scope": "devices", "target": ["Raffstore", "Wintergarten"], "action": "down"}),
    );
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
}

#[test]
fn tools_are_declared_with_permissions_and_annotations() {
    let (_app, tools) = demo();
    let list = tools.list_tools();
    for (name, read_only, permission) in [
        ("discover_rolladen_capabilities", true, "read"),
        ("control_room_rolladen", false, "control"),
        ("control_all_rolladen", false, "control"),
        ("control_rolladen_unified", false, "control"),
    ] {
        let t = list.iter().find(|t| t.name == name).expect(name);
        assert_eq!(t.annotations.read_only_hint, read_only, "{name}");
        assert!(t.annotations.idempotent_hint, "{name}");
        assert!(!t.annotations.destructive_hint, "{name}");
        assert!(
            t.description.contains(&format!("permission: {permission}")),
            "{name}"
        );
        assert_eq!(t.input_schema["additionalProperties"], false, "{name}");
        assert!(t.output_schema.is_some(), "{name}");
        if !read_only {
            assert!(t.description.contains("0 = fully open"), "{name}");
        }
    }
}

#[test]
fn miniserver_down_is_one_connection_error() {
    let tools = support::unreachable::unreachable_demo();
    let e = tool_error(
        &tools,
        "control_all_rolladen",
        json!({"confirm": true, "action": "down"}),
    );
    assert_eq!(e["code"], "CONNECTION_ERROR");
    // Discovery still answers from the structure, and says why positions are missing.
    let data = ok(&tools, "discover_rolladen_capabilities", json!({}));
    assert!(data["warning"].as_str().unwrap().contains("unavailable"));
    assert!(data["blinds"][0]["position"].is_null());
}

#[test]
fn category_scope_by_loxone_name_or_family() {
    let (app, tools) = demo();
    let all = jalousies(&app, None);
    // The user's Loxone category, accents and case folded.
    let data = ok(
        &tools,
        "control_rolladen_unified",
        json!({"scope": "category", "target": "beschattung", "action": "down", "dry_run": true}),
    );
    assert_eq!(data["scope"], "category");
    assert_eq!(data["target"], "Beschattung");
    assert_all_ok(&data, all.len());
    // The family name works as well, and moves every Jalousie (never the central block).
    let data = ok(
        &tools,
        "control_rolladen_unified",
        json!({"scope": "category", "target": "blinds", "action": "down"}),
    );
    assert_eq!(data["target"], "blinds");
    assert_all_ok(&data, all.len());
    for uuid in &all {
        assert_eq!(target(&app, uuid), Some(1.0), "{uuid}");
    }
    // A single name as a string target (scope device).
    let kids = jalousies(&app, Some("Kinderzimmer"));
    let data = ok(
        &tools,
        "control_rolladen_unified",
        json!({"scope": "device", "target": "Rollladen Kinderzimmer", "action": "up"}),
    );
    assert_all_ok(&data, 1);
    assert_eq!(target(&app, &kids[0]), Some(0.0));

    // A category without blinds; a category that does not exist; two targets for one category.
    let e = tool_error(
        &tools,
        "control_rolladen_unified",
        json!({"scope": "category", "target": "Klima", "action": "up"}),
    );
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    assert!(e["message"].as_str().unwrap().contains("Klima"), "{e}");
    let m = invalid_params(
        &tools,
        "control_rolladen_unified",
        json!({"scope": "category", "target": "Wintergarten", "action": "up"}),
    );
    assert!(
        m.contains("no category") && m.contains("Beschattung"),
        "{m}"
    );
    let m = invalid_params(
        &tools,
        "control_rolladen_unified",
        json!({"scope": "category", "target": ["blinds", "Beschattung"], "action": "up"}),
    );
    assert!(m.contains("one"), "{m}");
    let m = invalid_params(
        &tools,
        "control_rolladen_unified",
        json!({"scope": "category", "action": "up"}),
    );
    assert!(m.contains("target") && m.contains("required"), "{m}");
}

#[test]
fn blinds_status_with_filters() {
    let (app, tools) = demo();
    let data = ok(&tools, "get_blinds_status", json!({}));
    let blinds = data["blinds"].as_array().unwrap();
    assert_eq!(blinds.len(), jalousies(&app, None).len());
    assert_eq!(data["total"], blinds.len());
    let south = blinds
        .iter()
        .find(|b| b["name"] == "Raffstore Süd")
        .unwrap();
    assert_eq!(south["position"], 40.0);
    assert_eq!(south["state"], "partly_closed");
    assert_eq!(south["room"], "Wohnzimmer");
    let kitchen = blinds
        .iter()
        .find(|b| b["name"] == "Rollladen Küche")
        .unwrap();
    assert_eq!(kitchen["state"], "closed");
    let not_open = blinds.iter().filter(|b| b["state"] != "open").count();
    assert_eq!(data["not_open"], not_open);

    let data = ok(&tools, "get_blinds_status", json!({"state": "not_open"}));
    assert_eq!(data["total"], not_open);
    assert!(data["blinds"]
        .as_array()
        .unwrap()
        .iter()
        .all(|b| b["state"] != "open"));
    let data = ok(&tools, "get_blinds_status", json!({"room": "wohnzimmer"}));
    assert_eq!(data["total"], 2);
    let data = ok(&tools, "get_blinds_status", json!({"name": "raffstore"}));
    assert_eq!(data["total"], 2);
    let data = ok(&tools, "get_blinds_status", json!({"limit": 1}));
    assert_eq!(data["blinds"].as_array().unwrap().len(), 1);
    assert_eq!(data["total"], jalousies(&app, None).len());

    let m = invalid_params(&tools, "get_blinds_status", json!({"state": "ajar"}));
    assert!(m.contains("state must be one of"), "{m}");
    let m = invalid_params(&tools, "get_blinds_status", json!({"limit": 0}));
    assert!(m.contains("limit"), "{m}");
    let m = invalid_params(&tools, "get_blinds_status", json!({"colour": "red"}));
    assert!(m.contains("`colour`"), "{m}");
    let e = tool_error(&tools, "get_blinds_status", json!({"room": "Ballsaal"}));
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
}
