//! The first tools, end to end through the real Loxone client against the simulator loaded with
//! the demo house: results, state changes in the simulator, and every bad-input class.

use crate::support;
use support::*;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use home_mcp::app::{App, StartError};
use home_mcp::config::{Config, MiniserverConfig};
use home_mcp::home::House;
use home_mcp::loxone::client::{Client, LoxoneError};
use home_mcp::mcp::Handler;
use home_mcp::tools::HomeTools;

use support::server::Miniserver;
use support::unreachable::{demo_home, quick_timeouts, unreachable_demo, unreachable_miniserver};
use support::wire::sent_commands;

/// The demo house (assets/demo-house.json): 14 rooms, 71 top-level controls, 7 of them
/// Jalousies.
const DEMO_ROOMS: usize = 14;
const DEMO_CONTROLS: u64 = 71;
const DEMO_JALOUSIES: usize = 7;

#[test]
fn list_rooms_has_spec_fields() {
    let (_app, tools) = demo();
    let data = ok(&tools, "list_rooms", json!({}));
    let rooms = data["rooms"].as_array().unwrap();
    assert_eq!(rooms.len(), DEMO_ROOMS);
    assert_eq!(data["total"], rooms.len());
    let kitchen = rooms.iter().find(|r| r["name"] == "Küche").expect("Küche");
    assert!(kitchen["uuid"].as_str().unwrap().len() > 20);
    // Deckenlicht, Unterbauleuchten, Steckdose Kaffeemaschine, Rollladen Küche, Raumregelung,
    // Küchenradio.
    assert_eq!(kitchen["device_count"], 6);
    let by_cat = kitchen["devices_by_category"].as_object().unwrap();
    assert!(by_cat.contains_key("lighting"));
    let sum: u64 = by_cat.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(sum, kitchen["device_count"].as_u64().unwrap());

    let filtered = ok(&tools, "list_rooms", json!({"name": "kuche"}));
    assert_eq!(filtered["rooms"][0]["name"], "Küche");
    let limited = ok(&tools, "list_rooms", json!({"limit": 2}));
    assert_eq!(limited["rooms"].as_array().unwrap().len(), 2);
    assert_eq!(limited["total"], DEMO_ROOMS);
}

#[test]
fn list_devices_filters_and_reads_state() {
    let (app, tools) = demo();
    let all = ok(&tools, "list_devices", json!({"limit": 500}));
    assert_eq!(all["total"], DEMO_CONTROLS);
    let lights = ok(
        &tools,
        "list_devices",
        json!({"room": "kuche", "category": "lighting"}),
    );
    let devs = lights["devices"].as_array().unwrap();
    // A Switch is a generic block: its Loxone category decides its family. The ceiling light's
    // is Beleuchtung (type `lights`), the coffee machine's socket's is Energie (`undefined`),
    // so the socket is no light.
    let mut names: Vec<&str> = devs.iter().map(|d| d["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["Deckenlicht", "Unterbauleuchten"]);
    for d in devs {
        assert_eq!(d["room"], "Küche");
        assert_eq!(d["category"], "lighting");
    }
    let ceiling = devs.iter().find(|d| d["name"] == "Deckenlicht").unwrap();
    assert!(ceiling["state"]["on"].is_boolean());

    let blinds = ok(&tools, "list_devices", json!({"type": "jalousie"}));
    let blinds = blinds["devices"].as_array().unwrap();
    assert_eq!(blinds.len(), DEMO_JALOUSIES, "{blinds:?}");
    for d in blinds {
        assert_eq!(d["type"], "Jalousie");
        // Positions in percent closed: the simulator's 0..1 times 100.
        let uuid = d["uuid"].as_str().unwrap();
        let expected = sim(&app).state(uuid, "position").unwrap() * 100.0;
        let p = d["state"]["position"].as_f64().unwrap();
        assert!((p - expected).abs() < 0.5, "{d}: simulator says {expected}");
    }
    let one = ok(&tools, "list_devices", json!({"limit": 1}));
    assert_eq!(one["devices"].as_array().unwrap().len(), 1);
}

#[test]
fn list_devices_bad_filters() {
    let (_app, tools) = demo();
    let m = invalid_params(&tools, "list_devices", json!({"category": "spaceships"}));
    assert!(m.contains("category"), "{m}");
    let m = invalid_params(&tools, "list_devices", json!({"type": "FluxCapacitor"}));
    assert!(m.contains("type"), "{m}");
    let m = invalid_params(&tools, "list_devices", json!({"limit": 0}));
    assert!(m.contains("limit"), "{m}");
    let m = invalid_params(&tools, "list_devices", json!({"colour": "red"}));
    assert!(m.contains("colour"), "{m}");
    let e = tool_error(&tools, "list_devices", json!({"room": "Ballsaal"}));
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
}

#[test]
fn control_device_switches_a_light_in_the_simulator() {
    let (app, tools) = demo();
    let uuid = uuid_of(&app, "Deckenlicht", "Küche");
    ok(
        &tools,
        "control_device",
        json!({"device": "Deckenlicht Küche", "action": "off"}),
    );
    assert_eq!(sim(&app).state(&uuid, "active"), Some(0.0));
    // The light's state as list_devices reports it.
    let listed_on = || {
        let listed = ok(
            &tools,
            "list_devices",
            json!({"room": "Küche", "category": "lighting"}),
        );
        listed["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["uuid"] == uuid.as_str())
            .unwrap_or_else(|| panic!("{uuid} not listed: {listed}"))["state"]["on"]
            .clone()
    };
    assert_eq!(listed_on(), false);

    let data = ok(
        &tools,
        "control_device",
        json!({"device": "deckenlicht", "room": "KÜCHE", "action": "on"}),
    );
    assert_eq!(data["device"]["uuid"], uuid.as_str());
    assert_eq!(sim(&app).state(&uuid, "active"), Some(1.0));
    assert_eq!(
        listed_on(),
        true,
        "list_devices after the command sees the new state"
    );
}

#[test]
fn control_device_dims_and_moves_blinds() {
    let (app, tools) = demo();
    let dimmer = uuid_of(&app, "Deckenlicht", "Wohnzimmer");
    ok(
        &tools,
        "control_device",
        json!({"device": dimmer, "action": "dim", "value": 40}),
    );
    assert_eq!(sim(&app).state(&dimmer, "position"), Some(40.0));
    ok(
        &tools,
        "control_device",
        json!({"device": "Deckenlicht", "room": "Wohnzimmer", "action": "off"}),
    );
    assert_eq!(sim(&app).state(&dimmer, "position"), Some(0.0));

    let lc = uuid_of(&app, "Lichtsteuerung", "Wohnzimmer");
    ok(
        &tools,
        "control_device",
        json!({"device": "Lichtsteuerung Wohnzimmer", "action": "off"}),
    );
    let listed = ok(
        &tools,
        "list_devices",
        json!({"room": "Wohnzimmer", "type": "LightControllerV2"}),
    );
    let d = &listed["devices"][0];
    assert_eq!(d["uuid"], lc.as_str());
    assert_eq!(d["state"]["on"], false);

    let blind = uuid_of(&app, "Rollladen", "Schlafzimmer");
    ok(
        &tools,
        "control_device",
        json!({"device": "Rollladen Schlafzimmer", "action": "down"}),
    );
    // The command reached the Miniserver, and the blind heads for fully closed (1.0).
    assert_eq!(
        sent_commands(sim(&app), &blind).len(),
        1,
        "{:?}",
        sim(&app).requests()
    );
    assert_eq!(sim(&app).state(&blind, "targetPosition"), Some(1.0));
}

#[test]
fn control_device_bad_inputs() {
    let (app, tools) = demo();
    // value out of range
    let m = invalid_params(
        &tools,
        "control_device",
        json!({"device": "Deckenlicht Küche", "action": "dim", "value": 150}),
    );
    assert!(m.contains("value must be between 0 and 100"), "{m}");
    // unknown action
    let m = invalid_params(
        &tools,
        "control_device",
        json!({"device": "Deckenlicht Küche", "action": "explode"}),
    );
    assert!(m.contains("explode"), "{m}");
    // missing device
    let m = invalid_params(&tools, "control_device", json!({"action": "on"}));
    assert!(m.contains("`device`"), "{m}");
    // wrong type for value
    let m = invalid_params(
        &tools,
        "control_device",
        json!({"device": "x", "action": "on", "value": "much"}),
    );
    assert!(m.contains("must be of type"), "{m}");

    // unknown device
    let e = tool_error(
        &tools,
        "control_device",
        json!({"device": "Whirlpool", "action": "on"}),
    );
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    assert!(e["message"].as_str().unwrap().contains("Whirlpool"));

    // ambiguous name: the candidates with their rooms, no guess
    let before = sim(&app).state(&uuid_of(&app, "Deckenlicht", "Küche"), "active");
    let e = tool_error(
        &tools,
        "control_device",
        json!({"device": "Deckenlicht", "action": "on"}),
    );
    assert_eq!(e["code"], "INVALID_PARAMETERS");
    assert_eq!(e["details"]["reason"], "ambiguous");
    let rooms: Vec<&str> = e["details"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["room"].as_str().unwrap())
        .collect();
    assert!(
        rooms.contains(&"Küche") && rooms.contains(&"Wohnzimmer"),
        "{rooms:?}"
    );
    assert!(e["message"].as_str().unwrap().contains("Wohnzimmer"));
    assert_eq!(
        sim(&app).state(&uuid_of(&app, "Deckenlicht", "Küche"), "active"),
        before,
        "nothing was switched"
    );

    // unsupported action for the type
    let e = tool_error(
        &tools,
        "control_device",
        json!({"device": "Deckenlicht Küche", "action": "up"}),
    );
    assert_eq!(e["code"], "INVALID_PARAMETERS");
    // sensors cannot be controlled
    let sensor = app
        .house
        .home()
        .controls
        .iter()
        .find(|c| c.kind == home_mcp::home::ControlKind::InfoOnlyAnalog)
        .unwrap()
        .uuid
        .clone();
    let e = tool_error(
        &tools,
        "control_device",
        json!({"device": sensor, "action": "on"}),
    );
    assert_eq!(e["code"], "INVALID_PARAMETERS");
}

#[test]
fn control_device_refuses_alarms_and_opening_gates() {
    let (app, tools) = demo();
    let home = app.house.home();
    let alarm = home
        .controls
        .iter()
        .find(|c| c.kind == home_mcp::home::ControlKind::Alarm)
        .unwrap();
    let armed = sim(&app).state(&alarm.uuid, "armed");
    let e = tool_error(
        &tools,
        "control_device",
        json!({"device": alarm.uuid, "action": "off"}),
    );
    assert_eq!(e["code"], "INSUFFICIENT_PERMISSIONS");
    assert_eq!(sim(&app).state(&alarm.uuid, "armed"), armed);

    let gate = home
        .controls
        .iter()
        .find(|c| c.kind == home_mcp::home::ControlKind::Gate && !c.is_secured)
        .unwrap();
    let e = tool_error(
        &tools,
        "control_device",
        json!({"device": gate.uuid, "action": "up"}),
    );
    assert_eq!(e["code"], "INSUFFICIENT_PERMISSIONS");
    ok(
        &tools,
        "control_device",
        json!({"device": gate.uuid, "action": "down"}),
    );
}

#[test]
fn temperatures_read_and_set() {
    let (app, tools) = demo();
    let data = ok(&tools, "get_temperature_sensors", json!({}));
    let sensors = data["sensors"].as_array().unwrap();
    // Five InfoOnlyAnalog in °C and six room controllers in the demo house.
    assert_eq!(sensors.len(), 11, "{sensors:?}");
    for s in sensors {
        assert_eq!(s["unit"], "°C");
        let t = s["temperature"].as_f64().unwrap();
        assert!((-30.0..60.0).contains(&t), "{s}");
    }
    let kitchen = ok(&tools, "get_temperature_sensors", json!({"room": "Küche"}));
    let kitchen = kitchen["sensors"].as_array().unwrap();
    // The kitchen's only temperature is its room controller's.
    assert_eq!(kitchen.len(), 1, "{kitchen:?}");
    assert_eq!(kitchen[0]["room"], "Küche");
    assert_eq!(kitchen[0]["name"], "Raumregelung");

    let irc = uuid_of(&app, "Raumregelung", "Wohnzimmer");
    let data = ok(
        &tools,
        "set_room_temperature",
        json!({"room": "wohnzimmer", "temperature": 21.5}),
    );
    assert_eq!(data["scope"], "room");
    assert_eq!(data["target"], "Wohnzimmer");
    assert_eq!(data["action"], "temperature");
    assert_eq!(data["value"], 21.5);
    assert_eq!(data["dry_run"], false);
    assert_eq!(data["results"][0]["device"]["uuid"], irc.as_str());
    assert_eq!(data["results"][0]["status"], "ok");
    assert_eq!(
        data["results"][0]["commands"],
        json!([format!("{irc}/setComfortTemperature/21.5")])
    );
    assert_eq!(
        data["summary"],
        json!({"total": 1, "succeeded": 1, "failed": 0, "not_attempted": 0, "planned": 0, "confirmed": null})
    );
    // A target temperature does not show in the primary value: not verifiable, not waited for.
    assert_eq!(data["results"][0]["verified"], Value::Null);
    assert_eq!(sim(&app).state(&irc, "comfortTemperature"), Some(21.5));

    let m = invalid_params(
        &tools,
        "set_room_temperature",
        json!({"room": "Wohnzimmer", "temperature": 50}),
    );
    assert!(m.contains("temperature must be between 5 and 35"), "{m}");
    let m = invalid_params(
        &tools,
        "set_room_temperature",
        json!({"room": "Wohnzimmer"}),
    );
    assert!(m.contains("`temperature`"), "{m}");
    let e = tool_error(
        &tools,
        "set_room_temperature",
        json!({"room": "Garage", "temperature": 20}),
    );
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    assert!(e["message"].as_str().unwrap().contains("Garage"), "{e}");
}

#[test]
fn unknown_tool_is_invalid_params() {
    let (_app, tools) = demo();
    let m = invalid_params(&tools, "make_coffee", json!({}));
    assert!(m.contains("make_coffee"), "{m}");
}

#[test]
fn every_tool_is_fully_declared() {
    let (_app, tools) = demo();
    for t in tools.list_tools() {
        assert!(!t.description.is_empty(), "{}", t.name);
        assert_eq!(t.input_schema["type"], "object", "{}", t.name);
        let out = t.output_schema.as_ref().expect("output schema");
        assert_eq!(out["type"], "object");
        assert!(t.description.contains("permission:"), "{}", t.name);
    }
}

#[test]
fn miniserver_down_gives_connection_error() {
    let tools = unreachable_demo();
    let e = tool_error(
        &tools,
        "control_device",
        json!({"device": "Deckenlicht Küche", "action": "on"}),
    );
    assert_eq!(e["code"], "CONNECTION_ERROR");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("cannot reach the Miniserver"),
        "{e}"
    );
    // Lists still answer from the cached structure, and say why values are missing.
    let data = ok(&tools, "list_devices", json!({"room": "Küche"}));
    assert!(data["warning"].as_str().unwrap().contains("unavailable"));
    assert!(!data["devices"].as_array().unwrap().is_empty());

    // Starting against a dead Miniserver fails with a clear error.
    let ms = unreachable_miniserver();
    let cfg = Config::load(None, &|k| match k {
        "HOME_HOST" => Some(ms.base_url.clone()),
        "HOME_USER" | "HOME_PASS" => Some("demo".into()),
        _ => None,
    })
    .unwrap();
    match App::start(&cfg, false) {
        Err(StartError::Miniserver(LoxoneError::Connection(_))) => {}
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("start should fail"),
    }
}

#[test]
fn wrong_password_is_reported_and_not_retried() {
    let (app, _tools) = demo();
    let base = app.simulator.as_ref().unwrap().1.base_url();
    let ms = MiniserverConfig {
        base_url: base,
        user: "demo".into(),
        password: "wrong".into(),
    };
    let client = Client::new(&ms, &quick_timeouts());
    assert_eq!(
        client.structure_file().unwrap_err(),
        LoxoneError::Unauthorized
    );
    let house = Arc::new(House::new(
        demo_home(),
        Arc::new(client),
        Duration::from_secs(5),
    ));
    let tools = HomeTools::new(house);
    let e = tool_error(
        &tools,
        "control_device",
        json!({"device": "Deckenlicht Küche", "action": "on"}),
    );
    assert_eq!(e["code"], "CONNECTION_ERROR");
    assert!(
        e["message"].as_str().unwrap().contains("credentials"),
        "{e}"
    );
    // The client did not send the wrong password again (no lock-out walked into):
    // the simulator still accepts the right one from this IP.
    let good = Client::new(
        &MiniserverConfig {
            password: "demo".into(),
            ..ms.clone()
        },
        &quick_timeouts(),
    );
    assert!(good.structure_version().is_ok());
}

#[test]
fn locked_out_client_waits() {
    // A simulator with no server threads of its own polling it: nothing but this test logs
    // in, so nothing resets its failure count between the wrong logins and the check.
    let miniserver = Miniserver::demo();
    let base = miniserver.server.base_url();
    // Trip the simulator's lock-out with raw wrong logins from this IP.
    for i in 0..10 {
        let ms = MiniserverConfig {
            base_url: base.clone(),
            user: "demo".into(),
            password: format!("wrong{i}"),
        };
        let _ = Client::new(&ms, &quick_timeouts()).structure_file();
    }
    let ms = MiniserverConfig {
        base_url: base,
        user: "demo".into(),
        password: "demo".into(),
    };
    let client = Client::new(&ms, &quick_timeouts());
    match client.structure_file() {
        Err(LoxoneError::LockedOut { remaining_secs }) => assert!(remaining_secs > 0),
        other => panic!("expected a lock-out, got {:?}", other.map(|b| b.len())),
    }
    // Known lock-out: refused locally without a request.
    let asked = miniserver.sim.request_count();
    assert!(matches!(
        client.structure_version(),
        Err(LoxoneError::LockedOut { .. })
    ));
    assert_eq!(
        miniserver.sim.request_count(),
        asked,
        "the known lock-out was not asked again"
    );
}
