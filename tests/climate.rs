//! The climate tools end to end through the real Loxone client against the simulator: the demo
//! house (Gen 2 and Gen 1 room controllers, a ClimateController) and the real structure files
//! that have room controllers. Temperatures and modes, dry runs, per-controller results, and
//! every bad-input class.

mod common;
use common::*;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use home_mcp::app::App;
use home_mcp::config::{MiniserverConfig, Timeouts};
use home_mcp::home::House;
use home_mcp::loxone::client::Client;
use home_mcp::loxone::structure::parse_structure;
use home_mcp::mcp::Handler;
use home_mcp::sim::{SimConfig, SimServer, Simulator};
use home_mcp::tools::HomeTools;

/// UUID of the control of type `kind` in `room` (the first one).
fn control_in(app: &App, kind: &str, room: &str) -> String {
    let home = app.house.home();
    let room = home.resolve_room(room).unwrap().uuid.clone();
    home.controls
        .iter()
        .find(|c| c.kind.as_str() == kind && c.room.as_deref() == Some(room.as_str()))
        .unwrap_or_else(|| panic!("{kind} in {room}"))
        .uuid
        .clone()
}

fn state(app: &App, uuid: &str, name: &str) -> f64 {
    sim(app)
        .state(uuid, name)
        .unwrap_or_else(|| panic!("{uuid} {name}"))
}

fn assert_all_ok(data: &Value, expected: usize) {
    let list = data["controllers"].as_array().unwrap();
    assert_eq!(list.len(), expected, "{data}");
    assert_eq!(data["total"], expected);
    assert_eq!(data["succeeded"], expected, "{data}");
    assert_eq!(data["failed"], 0);
    for r in list {
        assert_eq!(r["ok"], true, "{r}");
        assert!(r.get("error").is_none(), "{r}");
        assert!(!r["commands"].as_array().unwrap().is_empty(), "{r}");
    }
}

#[test]
fn gen2_modes_override_and_return_to_auto() {
    let (app, tools) = demo();
    let wz = control_in(&app, "IRoomControllerV2", "Wohnzimmer");
    assert_eq!(state(&app, &wz, "activeMode"), 1.0); // comfort by schedule

    let data = ok(
        &tools,
        "set_room_mode",
        json!({"room": "wohnzimmer", "mode": "eco"}),
    );
    assert_all_ok(&data, 1);
    assert_eq!(data["room"], "Wohnzimmer");
    assert_eq!(data["mode"], "eco");
    assert_eq!(data["dry_run"], false);
    assert_eq!(
        data["controllers"][0]["commands"],
        json!([format!("{wz}/override/0")])
    );
    assert_eq!(state(&app, &wz, "activeMode"), 0.0);
    // eco = comfort 22 - absentMinOffset 3
    assert_eq!(state(&app, &wz, "tempTarget"), 19.0);

    ok(
        &tools,
        "set_room_mode",
        json!({"room": "Wohnzimmer", "mode": "off"}),
    );
    assert_eq!(state(&app, &wz, "activeMode"), 2.0);
    assert_eq!(state(&app, &wz, "tempTarget"), 6.0); // frost protection

    ok(
        &tools,
        "set_room_mode",
        json!({"room": "Wohnzimmer", "mode": "comfort"}),
    );
    assert_eq!(state(&app, &wz, "activeMode"), 1.0);
    assert_eq!(state(&app, &wz, "tempTarget"), 22.0);

    // Auto ends the override and lets the schedule decide again (eco here, to see it).
    ok(
        &tools,
        "set_room_mode",
        json!({"room": "Wohnzimmer", "mode": "eco"}),
    );
    let data = ok(
        &tools,
        "set_room_mode",
        json!({"room": "Wohnzimmer", "mode": "AUTO"}),
    );
    assert_eq!(data["mode"], "auto");
    assert_eq!(
        data["controllers"][0]["commands"],
        json!([
            format!("{wz}/stopOverride"),
            format!("{wz}/setOperatingMode/0")
        ])
    );
    assert_eq!(state(&app, &wz, "activeMode"), 1.0);
    assert_eq!(state(&app, &wz, "operatingMode"), 0.0);
    assert_eq!(sim(&app).state_text(&wz, "overrideEntries").unwrap(), "[]");

    ok(
        &tools,
        "set_room_mode",
        json!({"room": "Wohnzimmer", "mode": "heating"}),
    );
    assert_eq!(state(&app, &wz, "operatingMode"), 1.0);
    ok(
        &tools,
        "set_room_mode",
        json!({"room": "Wohnzimmer", "mode": "cooling"}),
    );
    assert_eq!(state(&app, &wz, "operatingMode"), 2.0);
}

#[test]
fn gen1_controller_takes_automatic_modes_only() {
    let (app, tools) = demo();
    let buero = control_in(&app, "IRoomController", "Büro");
    let data = ok(
        &tools,
        "set_room_mode",
        json!({"room": "buro", "mode": "heating"}),
    );
    assert_all_ok(&data, 1);
    assert_eq!(
        data["controllers"][0]["commands"],
        json!([format!("{buero}/mode/3")])
    );
    assert_eq!(state(&app, &buero, "mode"), 3.0);
    ok(
        &tools,
        "set_room_mode",
        json!({"room": "Büro", "mode": "cooling"}),
    );
    assert_eq!(state(&app, &buero, "mode"), 4.0);
    ok(
        &tools,
        "set_room_mode",
        json!({"room": "Büro", "mode": "auto"}),
    );
    assert_eq!(state(&app, &buero, "mode"), 0.0);

    // Overrides are Gen 2 only: a clear error, nothing sent, also in a dry run.
    for dry_run in [false, true] {
        let e = tool_error(
            &tools,
            "set_room_mode",
            json!({"room": "Büro", "mode": "comfort", "dry_run": dry_run}),
        );
        assert_eq!(e["code"], "INVALID_PARAMETERS");
        let m = e["message"].as_str().unwrap();
        assert!(
            m.contains("IRoomController") && m.contains("auto, heating, cooling"),
            "{m}"
        );
    }
    assert_eq!(state(&app, &buero, "mode"), 0.0);

    // Its temperature: the comfort heating temperature (index 1), the active one here.
    let data = ok(
        &tools,
        "set_room_temperature",
        json!({"room": "Büro", "temperature": 20.5}),
    );
    assert_all_ok(&data, 1);
    assert_eq!(
        data["controllers"][0]["commands"],
        json!([format!("{buero}/settemp/1/20.5")])
    );
    assert_eq!(state(&app, &buero, "temperatures[1]"), 20.5);
    assert_eq!(state(&app, &buero, "tempTarget"), 20.5);
}

#[test]
fn climate_controller_modes() {
    let (app, tools) = demo();
    let cc = control_in(&app, "ClimateController", "Keller");
    let data = ok(
        &tools,
        "set_room_mode",
        json!({"room": "Keller", "mode": "off"}),
    );
    assert_all_ok(&data, 1);
    assert_eq!(data["controllers"][0]["type"], "ClimateController");
    assert_eq!(state(&app, &cc, "autoMode"), -1.0);
    ok(
        &tools,
        "set_room_mode",
        json!({"room": "Keller", "mode": "cooling"}),
    );
    assert_eq!(state(&app, &cc, "autoMode"), 2.0);
    ok(
        &tools,
        "set_room_mode",
        json!({"room": "Keller", "mode": "auto"}),
    );
    assert_eq!(state(&app, &cc, "autoMode"), 0.0);
    let e = tool_error(
        &tools,
        "set_room_mode",
        json!({"room": "Keller", "mode": "eco"}),
    );
    assert_eq!(e["code"], "INVALID_PARAMETERS");
    assert_eq!(state(&app, &cc, "autoMode"), 0.0);
    // It has no temperature of its own.
    let e = tool_error(
        &tools,
        "set_room_temperature",
        json!({"room": "Keller", "temperature": 20}),
    );
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
}

#[test]
fn dry_runs_send_nothing() {
    let (app, tools) = demo();
    let wz = control_in(&app, "IRoomControllerV2", "Wohnzimmer");
    let data = ok(
        &tools,
        "set_room_temperature",
        json!({"room": "Wohnzimmer", "temperature": 23.25, "dry_run": true}),
    );
    assert_eq!(data["dry_run"], true);
    assert_eq!(data["temperature"], 23.25);
    assert_all_ok(&data, 1);
    assert_eq!(
        data["controllers"][0]["commands"],
        json!([format!("{wz}/setComfortTemperature/23.25")])
    );
    assert_eq!(state(&app, &wz, "comfortTemperature"), 22.0);

    let data = ok(
        &tools,
        "set_room_mode",
        json!({"room": "Wohnzimmer", "mode": "off", "dry_run": true}),
    );
    assert_eq!(
        data["controllers"][0]["commands"],
        json!([format!("{wz}/override/2")])
    );
    assert_eq!(state(&app, &wz, "activeMode"), 1.0);

    // And for real.
    let data = ok(
        &tools,
        "set_room_temperature",
        json!({"room": "Wohnzimmer", "temperature": 23.25}),
    );
    assert_all_ok(&data, 1);
    assert_eq!(state(&app, &wz, "comfortTemperature"), 23.25);
    assert_eq!(state(&app, &wz, "tempTarget"), 23.25);
}

#[test]
fn setters_reject_bad_arguments() {
    let (app, tools) = demo();
    for (args, field) in [
        (
            json!({"room": "Wohnzimmer", "mode": "party"}),
            "mode must be one of auto, heating, cooling, comfort, eco, off",
        ),
        (json!({"room": "Wohnzimmer"}), "`mode`"),
        (json!({"mode": "eco"}), "`room`"),
        (json!({"room": "Wohnzimmer", "mode": 1}), "invalid type"),
        (
            json!({"room": "Wohnzimmer", "mode": "eco", "dry_run": "yes"}),
            "invalid type",
        ),
        (
            json!({"room": "Wohnzimmer", "mode": "eco", "until": 5}),
            "`until`",
        ),
    ] {
        let m = invalid_params(&tools, "set_room_mode", args.clone());
        assert!(m.contains(field), "{args}: {m}");
        assert!(m.starts_with("set_room_mode"), "{m}");
    }
    for (args, field) in [
        (
            json!({"room": "Wohnzimmer", "temperature": 4.9}),
            "temperature must be between 5 and 35",
        ),
        (
            json!({"room": "Wohnzimmer", "temperature": "warm"}),
            "invalid type",
        ),
        (
            json!({"room": "Wohnzimmer", "temperature": 21, "mode": "eco"}),
            "`mode`",
        ),
    ] {
        let m = invalid_params(&tools, "set_room_temperature", args.clone());
        assert!(m.contains(field), "{args}: {m}");
    }
    // Unknown rooms and rooms without climate controls.
    let e = tool_error(
        &tools,
        "set_room_mode",
        json!({"room": "Sauna", "mode": "eco"}),
    );
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    let e = tool_error(
        &tools,
        "set_room_mode",
        json!({"room": "Garage", "mode": "eco"}),
    );
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    assert!(e["message"].as_str().unwrap().contains("Garage"), "{e}");
    // Nothing changed anywhere.
    let wz = control_in(&app, "IRoomControllerV2", "Wohnzimmer");
    assert_eq!(state(&app, &wz, "activeMode"), 1.0);
    assert_eq!(state(&app, &wz, "comfortTemperature"), 22.0);
}

#[test]
fn zone_temperature_by_room_controller_or_sensor() {
    let (app, tools) = demo();
    let wz = control_in(&app, "IRoomControllerV2", "Wohnzimmer");
    let data = ok(
        &tools,
        "get_zone_temperature",
        json!({"zone_id": "wohnzimmer"}),
    );
    assert_eq!(data["zone"], "Wohnzimmer");
    assert_eq!(data["room"], "Wohnzimmer");
    assert_eq!(data["temperature"], state(&app, &wz, "tempActual"));
    assert_eq!(data["unit"], "°C");
    assert_eq!(data["source"], wz.as_str()); // the controller before the sensor
    assert!(data["readings"].as_array().unwrap().len() >= 2, "{data}");

    // A room with only a sensor; a sensor and a controller by UUID.
    let sensor = control_in(&app, "InfoOnlyAnalog", "Esszimmer");
    let data = ok(
        &tools,
        "get_zone_temperature",
        json!({"zone_id": "Esszimmer"}),
    );
    assert_eq!(data["source"], sensor.as_str());
    assert_eq!(data["temperature"], state(&app, &sensor, "value"));
    let data = ok(&tools, "get_zone_temperature", json!({"zone_id": sensor}));
    assert_eq!(data["zone"], "Raumtemperatur");
    assert_eq!(data["room"], "Esszimmer");
    let buero = control_in(&app, "IRoomController", "Büro");
    let data = ok(&tools, "get_zone_temperature", json!({"zone_id": buero}));
    assert_eq!(data["temperature"], 20.4);

    // A light is not a zone; unknown names get suggestions; arguments are checked.
    let e = tool_error(
        &tools,
        "get_zone_temperature",
        json!({"zone_id": "Deckenlicht Küche"}),
    );
    assert_eq!(e["code"], "INVALID_PARAMETERS");
    assert!(e["message"].as_str().unwrap().contains("not a room"), "{e}");
    let e = tool_error(&tools, "get_zone_temperature", json!({"zone_id": "Sauna"}));
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    let e = tool_error(&tools, "get_zone_temperature", json!({"zone_id": "Garage"}));
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    assert!(invalid_params(&tools, "get_zone_temperature", json!({})).contains("`zone_id`"));
    assert!(
        invalid_params(&tools, "get_zone_temperature", json!({"zone_id": " "})).contains("zone_id")
    );
    assert!(
        invalid_params(&tools, "get_zone_temperature", json!({"zone_id": 7}))
            .contains("invalid type")
    );
}

#[test]
fn climate_status_lists_controllers_and_the_central_mode() {
    let (app, tools) = demo();
    let data = ok(&tools, "get_climate_status", json!({}));
    let rcs = data["room_controllers"].as_array().unwrap();
    assert_eq!(rcs.len(), 6, "{data}");
    assert_eq!(data["total"], 6);
    let buero = control_in(&app, "IRoomController", "Büro");
    let b = rcs.iter().find(|r| r["uuid"] == buero.as_str()).unwrap();
    assert_eq!(b["temperature"], 20.4);
    assert_eq!(b["room"], "Büro");
    let sum: f64 = rcs.iter().map(|r| r["temperature"].as_f64().unwrap()).sum();
    assert_eq!(
        data["average_temperature"].as_f64().unwrap(),
        (sum / 6.0 * 10.0).round() / 10.0
    );
    let cc = &data["climate_controllers"][0];
    assert_eq!(cc["current_mode"], "heating");
    assert_eq!(cc["current_mode_id"], 1);
    assert!(data.get("warning").is_none());

    let one = ok(&tools, "get_climate_status", json!({"room": "Kuche"}));
    assert_eq!(one["room_controllers"].as_array().unwrap().len(), 1);
    assert_eq!(one["room_controllers"][0]["room"], "Küche");
    assert_eq!(one["climate_controllers"], json!([]));
    let limited = ok(&tools, "get_climate_status", json!({"limit": 2}));
    assert_eq!(limited["room_controllers"].as_array().unwrap().len(), 2);
    assert_eq!(limited["total"], 6);

    assert!(invalid_params(&tools, "get_climate_status", json!({"limit": 0})).contains("limit"));
    assert!(invalid_params(&tools, "get_climate_status", json!({"floor": 1})).contains("`floor`"));
    let e = tool_error(&tools, "get_climate_status", json!({"room": "Sauna"}));
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
}

#[test]
fn temperature_sensors_filter_and_limit() {
    let (_app, tools) = demo();
    let all = ok(&tools, "get_temperature_sensors", json!({}));
    // 6 room controllers and 5 °C sensors (humidity and brightness are not temperatures).
    assert_eq!(all["total"], 11, "{all}");
    assert!(all["sensors"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["name"] != "Luftfeuchtigkeit"));
    let limited = ok(&tools, "get_temperature_sensors", json!({"limit": 3}));
    assert_eq!(limited["sensors"].as_array().unwrap().len(), 3);
    assert!(
        invalid_params(&tools, "get_temperature_sensors", json!({"limit": 501})).contains("limit")
    );
}

#[test]
fn climate_tools_are_declared() {
    let (_app, tools) = demo();
    let list = tools.list_tools();
    for (name, read_only, permission) in [
        ("get_temperature_sensors", true, "read"),
        ("get_zone_temperature", true, "read"),
        ("get_climate_status", true, "read"),
        ("set_room_temperature", false, "control"),
        ("set_room_mode", false, "control"),
    ] {
        let t = list.iter().find(|t| t.name == name).expect(name);
        assert_eq!(t.annotations.read_only_hint, read_only, "{name}");
        assert!(t.annotations.idempotent_hint, "{name}");
        assert!(!t.annotations.destructive_hint, "{name}");
        assert!(
            t.description.contains(&format!("permission: {permission}")),
            "{name}"
        );
        assert!(
            t.description.contains("°C") || name == "set_room_mode",
            "{name}"
        );
        assert_eq!(t.input_schema["additionalProperties"], false, "{name}");
        assert!(t.output_schema.is_some(), "{name}");
        if !read_only {
            assert_eq!(t.input_schema["properties"]["dry_run"]["type"], "boolean");
        }
    }
    let mode = list.iter().find(|t| t.name == "set_room_mode").unwrap();
    assert_eq!(
        mode.input_schema["properties"]["mode"]["enum"],
        json!(["auto", "heating", "cooling", "comfort", "eco", "off"])
    );
    let temp = list
        .iter()
        .find(|t| t.name == "set_room_temperature")
        .unwrap();
    assert_eq!(
        temp.input_schema["properties"]["temperature"]["minimum"],
        5.0
    );
    assert_eq!(
        temp.input_schema["properties"]["temperature"]["maximum"],
        35.0
    );
}

fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let p = l.local_addr().unwrap().port();
    drop(l);
    p
}

fn timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_millis(500),
        request: Duration::from_secs(2),
        value_max_age: Duration::from_secs(5),
    }
}

#[test]
fn miniserver_down_is_a_connection_error() {
    let ms = MiniserverConfig {
        base_url: format!("http://127.0.0.1:{}", closed_port()),
        user: "demo".into(),
        password: "demo".into(),
    };
    let home = parse_structure(include_str!("../assets/demo-house.json")).unwrap();
    let house = Arc::new(House::new(
        home,
        Arc::new(Client::new(&ms, &timeouts())),
        Duration::from_secs(5),
    ));
    let tools = HomeTools::new(house);
    let e = tool_error(
        &tools,
        "set_room_mode",
        json!({"room": "Wohnzimmer", "mode": "eco"}),
    );
    assert_eq!(e["code"], "CONNECTION_ERROR");
    let e = tool_error(
        &tools,
        "set_room_temperature",
        json!({"room": "Büro", "temperature": 21}),
    );
    assert_eq!(e["code"], "CONNECTION_ERROR");
    // A dry run needs no Miniserver.
    let data = ok(
        &tools,
        "set_room_mode",
        json!({"room": "Wohnzimmer", "mode": "eco", "dry_run": true}),
    );
    assert_all_ok(&data, 1);
    // Reads answer from the structure and say why values are missing.
    let data = ok(&tools, "get_climate_status", json!({}));
    assert!(data["warning"].as_str().unwrap().contains("unavailable"));
    assert!(data["room_controllers"][0]["temperature"].is_null());
    assert!(data["average_temperature"].is_null());
    let data = ok(
        &tools,
        "get_zone_temperature",
        json!({"zone_id": "Wohnzimmer"}),
    );
    assert!(data["temperature"].is_null());
    assert!(data["warning"].as_str().unwrap().contains("unavailable"));
}

/// A simulator serving a real structure file (no initial values: states start at 0), and the
/// tools on the real client talking to it.
fn fixture(file: &str) -> (Arc<Simulator>, SimServer, HomeTools) {
    let path = format!("{}/tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
    let json = std::fs::read_to_string(path).unwrap();
    let sim = Arc::new(Simulator::new(&json, None, SimConfig::default()).unwrap());
    let server = SimServer::start(sim.clone(), "127.0.0.1:0").unwrap();
    let ms = MiniserverConfig {
        base_url: server.base_url(),
        user: "demo".into(),
        password: "demo".into(),
    };
    let house = Arc::new(House::new(
        parse_structure(&json).unwrap(),
        Arc::new(Client::new(&ms, &timeouts())),
        Duration::from_secs(5),
    ));
    (sim, server, HomeTools::new(house))
}

#[test]
fn gen2_fixture_temperature_and_modes() {
    let (sim, _server, tools) = fixture("TheJack75-Loxone.NET-uk-demo-miniserver.json");
    let data = ok(
        &tools,
        "set_room_temperature",
        json!({"room": "living room", "temperature": 21.5}),
    );
    assert_all_ok(&data, 1);
    let lr = data["controllers"][0]["uuid"].as_str().unwrap().to_string();
    assert_eq!(data["controllers"][0]["type"], "IRoomControllerV2");
    assert_eq!(sim.state(&lr, "comfortTemperature"), Some(21.5));

    ok(
        &tools,
        "set_room_mode",
        json!({"room": "Living Room", "mode": "comfort"}),
    );
    assert_eq!(sim.state(&lr, "activeMode"), Some(1.0));
    assert_eq!(sim.state(&lr, "tempTarget"), Some(21.5));
    ok(
        &tools,
        "set_room_mode",
        json!({"room": "Living Room", "mode": "heating"}),
    );
    assert_eq!(sim.state(&lr, "operatingMode"), Some(1.0));
    assert_eq!(
        sim.state_text(&lr, "overrideEntries").as_deref(),
        Some("[]")
    );

    // The house-wide ClimateController sits in room "Central".
    let data = ok(
        &tools,
        "set_room_mode",
        json!({"room": "Central", "mode": "heating"}),
    );
    assert_all_ok(&data, 1);
    let cc = data["controllers"][0]["uuid"].as_str().unwrap().to_string();
    assert_eq!(sim.state(&cc, "autoMode"), Some(1.0));

    let status = ok(&tools, "get_climate_status", json!({"limit": 500}));
    assert_eq!(status["total"], 9);
    assert_eq!(
        status["climate_controllers"][0]["current_mode"],
        "no requirement"
    );
    let zone = ok(
        &tools,
        "get_zone_temperature",
        json!({"zone_id": "Kitchen"}),
    );
    assert_eq!(zone["temperature"], 0.0); // no values file: the simulator starts at 0
}

#[test]
fn gen1_fixture_temperature_and_modes() {
    let (sim, _server, tools) = fixture("Smarteon-loxone-java-showroom.json");
    // Czech room name, found without its accents.
    let data = ok(
        &tools,
        "set_room_temperature",
        json!({"room": "obyvaci pokoj", "temperature": 22}),
    );
    assert_all_ok(&data, 1);
    assert_eq!(data["controllers"][0]["type"], "IRoomController");
    let irc = data["controllers"][0]["uuid"].as_str().unwrap().to_string();
    assert_eq!(sim.state(&irc, "temperatures[1]"), Some(22.0));
    ok(
        &tools,
        "set_room_mode",
        json!({"room": "obyvaci pokoj", "mode": "cooling"}),
    );
    assert_eq!(sim.state(&irc, "mode"), Some(4.0));
    let e = tool_error(
        &tools,
        "set_room_mode",
        json!({"room": "obyvaci pokoj", "mode": "eco"}),
    );
    assert_eq!(e["code"], "INVALID_PARAMETERS");
    assert_eq!(sim.state(&irc, "mode"), Some(4.0));
}
