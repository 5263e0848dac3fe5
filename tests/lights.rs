//! The lighting tools end to end through the real Loxone client against the simulator loaded
//! with the demo house: Switch, TimedSwitch, Dimmer, EIBDimmer, Gen 1 LightController and Gen 2
//! LightControllerV2 change state; dry runs change nothing; bad inputs give the right errors;
//! one failing light does not hide the others.

use crate::support;
use support::*;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use home_mcp::app::App;
use home_mcp::home::{Action, Control, Controller, ControllerError, House};
use home_mcp::mcp::Handler;
use home_mcp::tools::HomeTools;

/// The result item of the device named `name` in a batch result's `results`.
fn record<'a>(data: &'a Value, name: &str) -> &'a Value {
    data["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["device"]["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in {data}"))
}

fn names(data: &Value) -> Vec<String> {
    data["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["device"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// Every item has the device record, status and commands, and every one is ok (in a dry
/// run: planned).
fn all_ok(data: &Value) {
    let results = data["results"].as_array().unwrap();
    let dry = data["dry_run"] == true;
    assert!(!results.is_empty(), "{data}");
    for d in results {
        for f in ["uuid", "name", "room", "type", "category"] {
            assert!(d["device"].get(f).is_some(), "{f} missing in {d}");
        }
        assert_eq!(d["status"], if dry { "planned" } else { "ok" }, "{d}");
        assert!(!d["commands"].as_array().unwrap().is_empty(), "{d}");
        assert!(d.get("error").is_none(), "{d}");
    }
    let summary = &data["summary"];
    assert_eq!(summary["total"], results.len());
    assert_eq!(
        summary[if dry { "planned" } else { "succeeded" }],
        results.len()
    );
    assert_eq!(summary["failed"], 0);
    assert_eq!(summary["not_attempted"], 0);
}

#[test]
fn room_lights_switch_switches_and_dimmers() {
    let (app, tools) = demo();
    let s = sim(&app);
    let ceiling = uuid_of(&app, "Deckenlicht", "Küche");
    let under = uuid_of(&app, "Unterbauleuchten", "Küche");
    let coffee = uuid_of(&app, "Steckdose Kaffeemaschine", "Küche");
    let coffee_before = s.state(&coffee, "active");

    let data = ok(
        &tools,
        "control_room_lights",
        json!({"room": "kuche", "action": "off"}),
    );
    all_ok(&data);
    assert_eq!(data["target"], "Küche");
    assert_eq!(data["scope"], "room");
    assert_eq!(data["dry_run"], false);
    assert_eq!(s.state(&ceiling, "active"), Some(0.0));
    assert_eq!(s.state(&under, "position"), Some(0.0));
    let d = &record(&data, "Deckenlicht")["device"];
    assert_eq!(d["uuid"], ceiling.as_str());
    assert_eq!(d["room"], "Küche");
    assert_eq!(d["type"], "Switch");
    assert_eq!(d["loxone_category"], "Beleuchtung");
    // The coffee machine's socket is a Switch, but not a light.
    assert!(!names(&data).contains(&"Steckdose Kaffeemaschine".to_string()));

    let data = ok(
        &tools,
        "control_room_lights",
        json!({"room": "Küche", "action": "on", "brightness": 40}),
    );
    all_ok(&data);
    assert_eq!(s.state(&ceiling, "active"), Some(1.0));
    assert_eq!(s.state(&under, "position"), Some(40.0));
    assert!(record(&data, "Deckenlicht")["note"]
        .as_str()
        .unwrap()
        .contains("cannot be dimmed"));
    assert_eq!(
        record(&data, "Unterbauleuchten")["device"]["type"],
        "EIBDimmer"
    );
    assert_eq!(s.state(&coffee, "active"), coffee_before);
}

#[test]
fn light_controller_v2_rooms_work() {
    let (app, tools) = demo();
    let s = sim(&app);
    let lc = uuid_of(&app, "Lichtsteuerung", "Wohnzimmer");
    let master = format!("{lc}/masterValue");
    let dimmer = uuid_of(&app, "Deckenlicht", "Wohnzimmer");

    let data = ok(
        &tools,
        "control_room_lights",
        json!({"room": "Wohnzimmer", "action": "off"}),
    );
    all_ok(&data);
    let d = record(&data, "Lichtsteuerung");
    assert_eq!(d["device"]["type"], "LightControllerV2");
    assert_eq!(d["commands"][0], format!("{lc}/changeTo/778"));
    assert_eq!(s.state_text(&lc, "activeMoods").as_deref(), Some("[778]"));
    assert_eq!(s.state(&dimmer, "position"), Some(0.0));
    // Sub-controls (circuits, colour picker) follow their controller; Partymodus is no light.
    let listed = names(&data);
    assert!(!listed.contains(&"LED-Streifen".to_string()), "{listed:?}");
    assert!(!listed.contains(&"Partymodus".to_string()), "{listed:?}");

    ok(
        &tools,
        "control_room_lights",
        json!({"room": "Wohnzimmer", "action": "on"}),
    );
    assert_eq!(s.state_text(&lc, "activeMoods").as_deref(), Some("[777]"));
    assert!(s.state(&dimmer, "position").unwrap() > 0.0);

    ok(
        &tools,
        "control_room_lights",
        json!({"room": "Wohnzimmer", "action": "on", "brightness": 60}),
    );
    assert_eq!(s.state(&master, "position"), Some(60.0));
    assert_eq!(s.state(&dimmer, "position"), Some(60.0));

    // The bedroom has only a LightControllerV2: lights are found there too.
    let bed = uuid_of(&app, "Lichtsteuerung", "Schlafzimmer");
    let data = ok(&tools, "room_all_on", json!({"room_id": "Schlafzimmer"}));
    all_ok(&data);
    assert_eq!(names(&data), vec!["Lichtsteuerung"]);
    assert_eq!(s.state_text(&bed, "activeMoods").as_deref(), Some("[777]"));
    ok(
        &tools,
        "control_room_lights",
        json!({"room": "Schlafzimmer", "action": "off"}),
    );
    assert_eq!(s.state(&bed, "activeMoodsNum"), Some(778.0));
}

#[test]
fn light_controller_v1_scenes() {
    let (app, tools) = demo();
    let s = sim(&app);
    let lc = uuid_of(&app, "Lichtszenen", "Esszimmer");
    let data = ok(&tools, "room_all_on", json!({"room_id": "Esszimmer"}));
    all_ok(&data);
    assert_eq!(
        record(&data, "Lichtszenen")["device"]["type"],
        "LightController"
    );
    assert_eq!(s.state(&lc, "activeScene"), Some(9.0));
    ok(
        &tools,
        "control_lights_unified",
        json!({"scope": "room", "room": "Esszimmer", "action": "off"}),
    );
    assert_eq!(s.state(&lc, "activeScene"), Some(0.0));
    // A brightness switches a Gen 1 controller on (it has no master brightness).
    let data = ok(
        &tools,
        "control_lights_unified",
        json!({"scope": "room", "room": "Esszimmer", "action": "brightness", "value": 50}),
    );
    all_ok(&data);
    assert_eq!(s.state(&lc, "activeScene"), Some(9.0));
}

/// The values a dry run must leave alone.
fn snapshot(app: &App) -> Vec<(String, Option<f64>, Option<String>)> {
    let s = sim(app);
    [
        ("Deckenlicht", "Küche", "active"),
        ("Unterbauleuchten", "Küche", "position"),
        ("Deckenlicht", "Wohnzimmer", "position"),
        ("Lichtszenen", "Esszimmer", "activeScene"),
        ("Spiegelleuchte", "Bad", "position"),
        ("Gartenbeleuchtung", "Außenbereich", "active"),
        ("Flurlicht", "Flur", "deactivationDelay"),
    ]
    .iter()
    .map(|(n, r, st)| {
        let u = uuid_of(app, n, r);
        (u.clone(), s.state(&u, st), None)
    })
    .chain(["Wohnzimmer", "Schlafzimmer"].iter().map(|r| {
        let u = uuid_of(app, "Lichtsteuerung", r);
        (u.clone(), None, s.state_text(&u, "activeMoods"))
    }))
    .collect()
}

#[test]
fn all_lights_dry_run_then_for_real() {
    let (app, tools) = demo();
    let s = sim(&app);
    let before = snapshot(&app);
    let data = ok(
        &tools,
        "control_all_lights",
        json!({"action": "on", "dry_run": true}),
    );
    assert_eq!(data["dry_run"], true);
    assert_eq!(data["scope"], "system");
    all_ok(&data);
    assert_eq!(snapshot(&app), before, "a dry run changes nothing");
    let listed = names(&data);
    for n in [
        "Lichtszenen",
        "Spiegelleuchte",
        "Flurlicht",
        "Gartenbeleuchtung",
        "Ceiling Light",
    ] {
        assert!(listed.contains(&n.to_string()), "{n} in {listed:?}");
    }
    // Both V2 controllers, no central block, no socket.
    let types: Vec<&str> = data["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["device"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types.iter().filter(|t| **t == "LightControllerV2").count(),
        2
    );
    assert!(!types.contains(&"CentralLightController"));
    assert!(!listed.contains(&"Steckdose Kaffeemaschine".to_string()));
    let lc = uuid_of(&app, "Lichtsteuerung", "Schlafzimmer");
    let bed = data["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["device"]["uuid"] == lc.as_str())
        .unwrap();
    assert_eq!(bed["commands"], json!([format!("{lc}/changeTo/777")]));
    assert_eq!(bed["device"]["room"], "Schlafzimmer");

    let data = ok(
        &tools,
        "control_all_lights",
        json!({"confirm": true, "action": "off"}),
    );
    all_ok(&data);
    assert_eq!(data["summary"]["total"], listed.len());
    assert_eq!(
        s.state(&uuid_of(&app, "Spiegelleuchte", "Bad"), "position"),
        Some(0.0)
    );
    assert_eq!(
        s.state(
            &uuid_of(&app, "Gartenbeleuchtung", "Außenbereich"),
            "active"
        ),
        Some(0.0)
    );
    assert_eq!(
        s.state(&uuid_of(&app, "Flurlicht", "Flur"), "deactivationDelay"),
        Some(0.0)
    );
    assert_eq!(s.state_text(&lc, "activeMoods").as_deref(), Some("[778]"));
    assert_eq!(
        s.state(&uuid_of(&app, "Lichtszenen", "Esszimmer"), "activeScene"),
        Some(0.0)
    );

    ok(
        &tools,
        "control_all_lights",
        json!({"confirm": true, "action": "on"}),
    );
    assert_eq!(s.state_text(&lc, "activeMoods").as_deref(), Some("[777]"));
    assert_eq!(
        s.state(&uuid_of(&app, "Deckenlicht", "Küche"), "active"),
        Some(1.0)
    );
}

#[test]
fn unified_scopes_and_actions() {
    let (app, tools) = demo();
    let s = sim(&app);
    let mirror = uuid_of(&app, "Spiegelleuchte", "Bad");
    let kitchen = uuid_of(&app, "Deckenlicht", "Küche");

    let data = ok(
        &tools,
        "control_lights_unified",
        json!({"scope": "device", "target": ["Deckenlicht Küche", "Spiegelleuchte"], "action": "brightness", "value": 50}),
    );
    all_ok(&data);
    assert_eq!(data["scope"], "device");
    assert_eq!(data["value"], 50.0);
    assert_eq!(s.state(&mirror, "position"), Some(50.0));
    assert_eq!(s.state(&kitchen, "active"), Some(1.0));

    ok(
        &tools,
        "control_lights_unified",
        json!({"scope": "device", "target": mirror.clone(), "action": "dim"}),
    );
    assert_eq!(s.state(&mirror, "position"), Some(30.0));
    ok(
        &tools,
        "control_lights_unified",
        json!({"scope": "room", "target": "Bad", "action": "bright"}),
    );
    assert_eq!(s.state(&mirror, "position"), Some(100.0));

    // A V2 circuit named directly is dimmed on its own.
    let spots = uuid_of(&app, "Deckenspots", "Wohnzimmer");
    ok(
        &tools,
        "control_lights_unified",
        json!({"scope": "device", "target": ["Deckenspots"], "room": "Wohnzimmer", "action": "on", "value": 25}),
    );
    assert_eq!(s.state(&spots, "position"), Some(25.0));

    // Dry run in a room: lists, sends nothing.
    let before = snapshot(&app);
    let data = ok(
        &tools,
        "control_lights_unified",
        json!({"scope": "room", "room": "Küche", "action": "off", "dry_run": true}),
    );
    assert_eq!(snapshot(&app), before);
    assert_eq!(
        record(&data, "Deckenlicht")["commands"],
        json!([format!("{kitchen}/off")])
    );

    let data = ok(
        &tools,
        "control_lights_unified",
        json!({"confirm": true, "scope": "system", "action": "off"}),
    );
    all_ok(&data);
    assert_eq!(s.state(&mirror, "position"), Some(0.0));
    assert_eq!(s.state(&kitchen, "active"), Some(0.0));
}

#[test]
fn set_dimmer_levels() {
    let (app, tools) = demo();
    let s = sim(&app);
    let mirror = uuid_of(&app, "Spiegelleuchte", "Bad");
    let data = ok(
        &tools,
        "set_dimmer",
        json!({"device_id": "spiegelleuchte", "level": 70}),
    );
    all_ok(&data);
    assert_eq!(data["results"][0]["device"]["uuid"], mirror.as_str());
    assert_eq!(s.state(&mirror, "position"), Some(70.0));
    ok(
        &tools,
        "set_dimmer",
        json!({"device_id": mirror, "level": 0}),
    );
    assert_eq!(s.state(&mirror, "position"), Some(0.0));

    let lc = uuid_of(&app, "Lichtsteuerung", "Schlafzimmer");
    ok(
        &tools,
        "set_dimmer",
        json!({"device_id": "Lichtsteuerung", "room": "Schlafzimmer", "level": 45}),
    );
    assert_eq!(s.state_text(&lc, "activeMoods").as_deref(), Some("[777]"));
    assert_eq!(
        s.state(&format!("{lc}/masterValue"), "position"),
        Some(45.0)
    );
    ok(
        &tools,
        "set_dimmer",
        json!({"device_id": "Lichtsteuerung Schlafzimmer", "level": 0}),
    );
    assert_eq!(s.state_text(&lc, "activeMoods").as_deref(), Some("[778]"));

    let under = uuid_of(&app, "Unterbauleuchten", "Küche");
    ok(
        &tools,
        "set_dimmer",
        json!({"device_id": "Unterbauleuchten", "level": 15.5}),
    );
    assert_eq!(s.state(&under, "position"), Some(15.5));
}

#[test]
fn bad_inputs() {
    let (app, tools) = demo();
    let s = sim(&app);
    let m = invalid_params(
        &tools,
        "control_room_lights",
        json!({"room": "Küche", "action": "on", "brightness": 150}),
    );
    assert!(m.contains("brightness must be between 0 and 100"), "{m}");
    let m = invalid_params(
        &tools,
        "control_room_lights",
        json!({"room": "Küche", "action": "off", "brightness": 20}),
    );
    assert!(m.contains("brightness"), "{m}");
    let m = invalid_params(&tools, "control_room_lights", json!({"action": "on"}));
    assert!(m.contains("`room`"), "{m}");
    let m = invalid_params(
        &tools,
        "control_room_lights",
        json!({"room": "Küche", "action": "explode"}),
    );
    assert!(m.contains("action must be one of on, off"), "{m}");
    let m = invalid_params(
        &tools,
        "control_all_lights",
        json!({"confirm": true, "action": "off", "colour": "red"}),
    );
    assert!(m.contains("`colour`"), "{m}");
    let m = invalid_params(
        &tools,
        "control_lights_unified",
        json!({"scope": "street", "action": "off"}),
    );
    assert!(
        m.contains("scope must be one of device, devices, room, category, system"),
        "{m}"
    );
    let m = invalid_params(
        &tools,
        "control_lights_unified",
        json!({"scope": "room", "action": "off"}),
    );
    assert!(m.contains("target") && m.contains("required"), "{m}");
    let m = invalid_params(
        &tools,
        "control_lights_unified",
        json!({"scope": "device", "action": "off"}),
    );
    assert!(m.contains("target") && m.contains("required"), "{m}");
    let m = invalid_params(
        &tools,
        "control_lights_unified",
        json!({"scope": "device", "target": [], "action": "off"}),
    );
    assert!(m.contains("target must have at least 1 entries"), "{m}");
    let m = invalid_params(
        &tools,
        "control_lights_unified",
        json!({"scope": "device", "target": 7, "action": "off"}),
    );
    assert!(m.contains("target must be"), "{m}");
    let m = invalid_params(
        &tools,
        "control_lights_unified",
        json!({"confirm": true, "scope": "system", "target": "Küche", "action": "off"}),
    );
    assert!(m.contains("scope system"), "{m}");
    let m = invalid_params(
        &tools,
        "control_lights_unified",
        json!({"scope": "room", "target": ["Küche", "Bad"], "action": "off"}),
    );
    assert!(m.contains("one room"), "{m}");
    let m = invalid_params(
        &tools,
        "control_lights_unified",
        json!({"scope": "room", "target": "Küche", "room": "Bad", "action": "off"}),
    );
    assert!(m.contains("not both"), "{m}");
    let m = invalid_params(
        &tools,
        "control_lights_unified",
        json!({"scope": "category", "target": "Gartenzwerge", "action": "off"}),
    );
    assert!(
        m.contains("no category") && m.contains("Beleuchtung"),
        "{m}"
    );
    let m = invalid_params(
        &tools,
        "control_lights_unified",
        json!({"confirm": true, "scope": "system", "action": "brightness"}),
    );
    assert!(m.contains("value"), "{m}");
    let m = invalid_params(
        &tools,
        "control_lights_unified",
        json!({"confirm": true, "scope": "system", "action": "dim", "value": -1}),
    );
    assert!(m.contains("value must be between 0 and 100"), "{m}");
    let m = invalid_params(&tools, "set_dimmer", json!({"device_id": "Spiegelleuchte"}));
    assert!(m.contains("`level`"), "{m}");
    let m = invalid_params(
        &tools,
        "set_dimmer",
        json!({"device_id": "Spiegelleuchte", "level": 101}),
    );
    assert!(m.contains("level must be between 0 and 100"), "{m}");
    let m = invalid_params(&tools, "room_all_on", json!({"room": "Bad"}));
    assert!(m.contains("room"), "{m}");

    // Unknown room, unknown and ambiguous devices: tool errors, nothing switched.
    let kitchen = uuid_of(&app, "Deckenlicht", "Küche");
    let before = s.state(&kitchen, "active");
    let e = tool_error(
        &tools,
        "control_room_lights",
        json!({"room": "Ballsaal", "action": "off"}),
    );
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    let e = tool_error(&tools, "room_all_on", json!({"room_id": "Ballsaal"}));
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    let e = tool_error(
        &tools,
        "control_lights_unified",
        json!({"scope": "device", "target": ["Deckenlicht Küche", "Lichtsteuerung"], "action": "off"}),
    );
    assert_eq!(e["code"], "INVALID_PARAMETERS");
    assert_eq!(e["details"]["reason"], "ambiguous");
    assert_eq!(s.state(&kitchen, "active"), before, "nothing is sent");
    let e = tool_error(
        &tools,
        "set_dimmer",
        json!({"device_id": "Lichtsteuerung", "level": 50}),
    );
    assert_eq!(e["details"]["reason"], "ambiguous");
    let candidates = e["details"]["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 2);
    let e = tool_error(
        &tools,
        "set_dimmer",
        json!({"device_id": "Kronleuchter", "level": 50}),
    );
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    // A switch cannot be dimmed; a blind is not a light.
    let e = tool_error(
        &tools,
        "set_dimmer",
        json!({"device_id": "Deckenlicht Küche", "level": 50}),
    );
    assert_eq!(e["code"], "INVALID_PARAMETERS");
    assert!(e["message"].as_str().unwrap().contains("cannot be dimmed"));
    let e = tool_error(
        &tools,
        "set_dimmer",
        json!({"device_id": "Rollladen Schlafzimmer", "level": 50}),
    );
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    // A room without lights.
    let e = tool_error(
        &tools,
        "control_room_lights",
        json!({"room": "Zentral", "action": "off"}),
    );
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    assert!(e["message"].as_str().unwrap().contains("no lights"), "{e}");
}

#[test]
fn schemas_and_annotations() {
    let (_app, tools) = demo();
    let list = tools.list_tools();
    for name in [
        "control_room_lights",
        "control_all_lights",
        "control_lights_unified",
        "room_all_on",
        "set_dimmer",
    ] {
        let t = list
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} listed"));
        assert_eq!(t.input_schema["additionalProperties"], false, "{name}");
        assert!(t.input_schema["required"].is_array(), "{name}");
        assert!(t.description.contains("permission: control"), "{name}");
        assert!(
            t.description.contains("0-100")
                || name == "control_all_lights"
                || name == "room_all_on"
        );
        assert!(!t.annotations.read_only_hint, "{name}");
        assert!(!t.annotations.destructive_hint, "{name}");
        assert!(t.annotations.idempotent_hint, "{name}");
        let out = t.output_schema.as_ref().unwrap();
        assert!(out["properties"]["data"]["properties"]["results"].is_object());
        assert!(out["properties"]["data"]["properties"]["summary"].is_object());
    }
    let unified = list
        .iter()
        .find(|t| t.name == "control_lights_unified")
        .unwrap();
    assert_eq!(
        unified.input_schema["properties"]["scope"]["enum"],
        json!(["device", "devices", "room", "category", "system", "all", "house"])
    );
    assert_eq!(unified.input_schema["properties"]["value"]["maximum"], 100);
}

/// A controller that fails for one control and records the others.
struct Flaky {
    fail: String,
    /// When set, every control fails.
    all: bool,
    done: Mutex<Vec<String>>,
    /// Every control an action was attempted on.
    tried: Mutex<Vec<String>>,
}

impl Controller for Flaky {
    /// The Loxone client's own wording of the command (what dry runs and answers show).
    fn command(
        &self,
        c: &home_mcp::home::Control,
        a: &home_mcp::home::Action,
    ) -> Result<home_mcp::home::Command, home_mcp::home::ControllerError> {
        home_mcp::loxone::commands::house_command(c, a)
    }
    fn act(
        &self,
        control: &Control,
        _: &Action,
    ) -> Result<Option<home_mcp::home::Value>, ControllerError> {
        self.tried.lock().unwrap().push(control.uuid.clone());
        if self.all {
            return Err(ControllerError::Connection("connection refused".into()));
        }
        if control.uuid == self.fail {
            // One actuator fails on its own (e.g. a relay extension reports an error).
            return Err(ControllerError::Rejected {
                code: 500,
                message: "relay extension fault".into(),
            });
        }
        self.done.lock().unwrap().push(control.uuid.clone());
        Ok(None)
    }
    fn read(&self, _: &Control) -> Result<home_mcp::home::Value, ControllerError> {
        Err(ControllerError::Connection("connection refused".into()))
    }
}

#[test]
fn one_failing_light_does_not_hide_the_others() {
    let home = support::unreachable::demo_home();
    let ceiling = home
        .resolve_control("Deckenlicht Küche", None, &|_| true)
        .unwrap()
        .uuid
        .clone();
    let flaky = Arc::new(Flaky {
        fail: ceiling.clone(),
        all: false,
        done: Mutex::new(Vec::new()),
        tried: Mutex::new(Vec::new()),
    });
    let house = Arc::new(House::new(
        home.clone(),
        flaky.clone(),
        Duration::from_secs(5),
    ));
    let tools = HomeTools::new(house);
    let data = ok(
        &tools,
        "control_room_lights",
        json!({"room": "Küche", "action": "off"}),
    );
    assert_eq!(data["summary"]["failed"], 1);
    assert_eq!(data["summary"]["succeeded"], 1);
    let bad = record(&data, "Deckenlicht");
    assert_eq!(bad["status"], "error");
    assert_eq!(bad["error"]["code"], "CONNECTION_ERROR");
    assert!(bad["error"]["message"]
        .as_str()
        .unwrap()
        .contains("relay extension fault"));
    assert_eq!(record(&data, "Unterbauleuchten")["status"], "ok");
    assert_eq!(flaky.done.lock().unwrap().len(), 1);

    // When every light fails the call fails, with the controller's error code.
    let down = Arc::new(Flaky {
        fail: String::new(),
        all: true,
        done: Mutex::new(Vec::new()),
        tried: Mutex::new(Vec::new()),
    });
    let tools = HomeTools::new(Arc::new(House::new(
        home,
        down.clone(),
        Duration::from_secs(5),
    )));
    let e = tool_error(
        &tools,
        "control_all_lights",
        json!({"confirm": true, "action": "off"}),
    );
    assert_eq!(e["code"], "CONNECTION_ERROR");
    // Out of reach: asked once, not once per light (one timeout, not N).
    assert_eq!(down.tried.lock().unwrap().len(), 1);
    // A dry run needs no Miniserver.
    let data = ok(
        &tools,
        "control_all_lights",
        json!({"action": "off", "dry_run": true}),
    );
    all_ok(&data);
}

#[test]
fn category_scope_and_status() {
    let (app, tools) = demo();
    let s = sim(&app);
    let coffee = uuid_of(&app, "Steckdose Kaffeemaschine", "Küche");
    let coffee_before = s.state(&coffee, "active");
    // The Loxone category "Beleuchtung" (folded), in a dry run: the planned commands.
    let data = ok(
        &tools,
        "control_lights_unified",
        json!({"scope": "category", "target": "BELEUCHTUNG", "action": "off", "dry_run": true}),
    );
    assert_eq!(data["scope"], "category");
    assert_eq!(data["target"], "Beleuchtung");
    all_ok(&data);
    assert!(!names(&data).contains(&"Beleuchtung Zentral".to_string()));
    // The family name: every light of the house.
    let data = ok(
        &tools,
        "control_lights_unified",
        json!({"scope": "category", "target": "lighting", "action": "off"}),
    );
    all_ok(&data);
    assert_eq!(data["target"], "lighting");
    assert_eq!(
        s.state(&uuid_of(&app, "Flurlicht", "Flur"), "deactivationDelay"),
        Some(0.0)
    );
    assert_eq!(
        s.state(&coffee, "active"),
        coffee_before,
        "the socket is no light"
    );
    // A category without lights.
    let e = tool_error(
        &tools,
        "control_lights_unified",
        json!({"scope": "category", "target": "Klima", "action": "off"}),
    );
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");

    // Status: everything is off now.
    let data = ok(&tools, "get_lights_status", json!({}));
    assert_eq!(data["on"], 0, "{data}");
    let total = data["total"].as_u64().unwrap();
    assert!(total >= 12, "{data}");
    ok(
        &tools,
        "control_room_lights",
        json!({"room": "Bad", "action": "on", "brightness": 35}),
    );
    let data = ok(&tools, "get_lights_status", json!({"state": "on"}));
    assert_eq!(data["on"], 1);
    let mirror = &data["lights"][0];
    assert_eq!(mirror["name"], "Spiegelleuchte");
    assert_eq!(mirror["on"], true);
    assert_eq!(mirror["level"], 35.0);
    assert_eq!(mirror["dimmable"], true);
    let data = ok(&tools, "get_lights_status", json!({"type": "dimmer"}));
    assert!(data["lights"]
        .as_array()
        .unwrap()
        .iter()
        .all(|l| l["type"] == "Dimmer"));
    let data = ok(
        &tools,
        "get_lights_status",
        json!({"room": "Wohnzimmer", "name": "licht"}),
    );
    assert_eq!(data["total"], 2, "{data}");
    let data = ok(&tools, "get_lights_status", json!({"limit": 2}));
    assert_eq!(data["lights"].as_array().unwrap().len(), 2);
    assert_eq!(data["total"], total);
    let m = invalid_params(&tools, "get_lights_status", json!({"state": "dim"}));
    assert!(m.contains("state must be one of on, off"), "{m}");
    let m = invalid_params(&tools, "get_lights_status", json!({"type": "Jalousie"}));
    assert!(m.contains("types present") && m.contains("Dimmer"), "{m}");
    let m = invalid_params(&tools, "get_lights_status", json!({"limit": 501}));
    assert!(m.contains("limit"), "{m}");
    let e = tool_error(&tools, "get_lights_status", json!({"room": "Ballsaal"}));
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
}

/// A controller that carries out the first `ok` commands, then is out of reach.
struct GoesDown {
    ok: usize,
    tried: Mutex<usize>,
}

impl Controller for GoesDown {
    /// The Loxone client's own wording of the command (what dry runs and answers show).
    fn command(
        &self,
        c: &home_mcp::home::Control,
        a: &home_mcp::home::Action,
    ) -> Result<home_mcp::home::Command, home_mcp::home::ControllerError> {
        home_mcp::loxone::commands::house_command(c, a)
    }
    fn act(
        &self,
        _: &Control,
        _: &Action,
    ) -> Result<Option<home_mcp::home::Value>, ControllerError> {
        let mut n = self.tried.lock().unwrap();
        *n += 1;
        if *n > self.ok {
            return Err(ControllerError::Connection("timed out".into()));
        }
        Ok(None)
    }
    fn read(&self, _: &Control) -> Result<home_mcp::home::Value, ControllerError> {
        Err(ControllerError::Connection("timed out".into()))
    }
}

#[test]
fn out_of_reach_midway_marks_the_rest_not_attempted() {
    let home = support::unreachable::demo_home();
    let down = Arc::new(GoesDown {
        ok: 2,
        tried: Mutex::new(0),
    });
    let tools = HomeTools::new(Arc::new(House::new(
        home,
        down.clone(),
        Duration::from_secs(5),
    )));
    let data = ok(
        &tools,
        "control_all_lights",
        json!({"confirm": true, "action": "off"}),
    );
    let results = data["results"].as_array().unwrap();
    let summary = &data["summary"];
    assert_eq!(summary["succeeded"], 2, "{data}");
    assert_eq!(summary["failed"], 1, "{data}");
    assert_eq!(summary["not_attempted"], results.len() - 3, "{data}");
    assert_eq!(results[2]["status"], "error");
    assert_eq!(results[2]["error"]["code"], "CONNECTION_ERROR");
    for r in &results[3..] {
        assert_eq!(r["status"], "not_attempted", "{r}");
        assert_eq!(r["error"]["code"], "CONNECTION_ERROR", "{r}");
        assert!(r["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("not sent"));
    }
    // Asked once after it went down, not once per light.
    assert_eq!(*down.tried.lock().unwrap(), 3);
}
