//! The at-a-glance reads against the simulator: `get_home_summary` (compact, honest about what
//! is not known yet, filled from the state store when it is) and `get_sensors_status` (kinds,
//! filters, limits) on the demo house and a real structure file.

use crate::support;
use support::*;

use serde_json::json;

use home_mcp::home::Value as Reading;
use support::live::state_uuid;

#[test]
fn demo_summary_is_compact_and_says_what_is_on() {
    // Polling only: without the WebSocket link no named state (a target temperature) arrives
    // on its own, so "unknown" and the values set below hold whatever the timing.
    // Values read from the simulator during the call (see the temperature below).
    let (app, tools) = support::between::demo_reading_at_call();
    // The simulator's room temperature (21.8 °C at the start) drifts toward the target
    // (22 °C): the tool shows it as read between these two readings.
    let irc = uuid_of(&app, "Raumregelung", "Wohnzimmer");
    let before = sim(&app).state(&irc, "tempActual").unwrap();
    let data = ok(&tools, "get_home_summary", json!({}));
    let after = sim(&app).state(&irc, "tempActual").unwrap();
    let size = data.to_string().len();
    assert!(size < 3000, "{size} bytes: {data}");
    assert_eq!(data["room"], json!(null));
    let lights: Vec<&str> = data["lights_on"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(lights.contains(&"Deckenlicht (Küche)"), "{lights:?}");
    assert!(
        lights.contains(&"Lichtsteuerung (Wohnzimmer)"),
        "{lights:?}"
    );
    assert!(!lights.iter().any(|l| l.contains("Kaffeemaschine")));
    assert!(
        !lights.iter().any(|l| l.contains("Schlafzimmer")),
        "V2 in mood off"
    );
    let south = data["blinds_not_open"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "Raffstore Süd (Wohnzimmer)")
        .unwrap();
    assert_eq!(south["position"], 40.0);
    assert!(!data["blinds_not_open"]
        .as_array()
        .unwrap()
        .iter()
        .any(|b| b["name"] == "Rollladen Terrassentür (Wohnzimmer)"));
    assert_eq!(data["audio_playing"], json!(["Musik (Wohnzimmer)"]));
    assert_eq!(data["presence"], json!(["Wohnzimmer"]));
    let living = data["climate"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["room"] == "Wohnzimmer")
        .unwrap();
    let t = living["temperature"].as_f64().unwrap();
    assert!((21.8..=22.0).contains(&t), "{living}");
    support::between::assert_between(living, t, before, after);
    assert_eq!(
        living["target"],
        json!(null),
        "not known over HTTP: null, not guessed"
    );
    let alarms = data["alarm"].as_array().unwrap();
    assert_eq!(alarms.len(), 2);
    assert!(alarms.iter().all(|a| a["armed"].is_boolean()));
    assert_eq!(data["openings"]["open_count"], 1);
    assert!(data["openings"]["note"].is_string());

    // After switching everything off, no light is on.
    ok(
        &tools,
        "control_all_lights",
        json!({"confirm": true, "action": "off"}),
    );
    let data = ok(&tools, "get_home_summary", json!({}));
    assert_eq!(data["lights_on"], json!([]));

    // Named states from the live updates fill in targets and window names.
    let house = &app.house;
    house.states().set(
        &state_uuid(
            &app,
            &uuid_of(&app, "Raumregelung", "Wohnzimmer"),
            "tempTarget",
        ),
        Reading::Number(22.0),
    );
    house.states().set(
        &state_uuid(
            &app,
            &uuid_named(&app, "Fenster- und Türüberwachung"),
            "windowStates",
        ),
        Reading::Text("1,4,1,1,2,1,1,1,1".into()),
    );
    let data = ok(&tools, "get_home_summary", json!({}));
    let living = data["climate"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["room"] == "Wohnzimmer")
        .unwrap();
    assert_eq!(living["target"], 22.0);
    let open = data["openings"]["open"].as_array().unwrap();
    assert_eq!(open.len(), 2, "{open:?}");
    assert!(open.iter().any(|o| o.as_str().unwrap().contains("tilted")));
}

#[test]
fn room_summary_and_bad_input() {
    let (_app, tools) = demo();
    let data = ok(&tools, "get_home_summary", json!({"room": "kuche"}));
    assert_eq!(data["room"], "Küche");
    assert_eq!(
        data["lights_on"],
        json!(["Deckenlicht", "Unterbauleuchten"])
    );
    assert_eq!(data["blinds_not_open"][0]["name"], "Rollladen Küche");
    let climate = data["climate"].as_array().unwrap();
    assert_eq!(climate.len(), 1);
    assert_eq!(climate[0]["room"], "Küche");
    assert_eq!(data["audio_playing"], json!([]));
    // The alarm systems are house-wide: still shown.
    assert_eq!(data["alarm"].as_array().unwrap().len(), 2);

    let e = tool_error(&tools, "get_home_summary", json!({"room": "Ballsaal"}));
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    let m = invalid_params(&tools, "get_home_summary", json!({"room": 3}));
    assert!(m.contains("must be of type"), "{m}");
    let m = invalid_params(&tools, "get_home_summary", json!({"verbose": true}));
    assert!(m.contains("`verbose`"), "{m}");
}

#[test]
fn miniserver_down_summary_answers_from_the_structure() {
    let tools = support::unreachable::unreachable_demo();
    let data = ok(&tools, "get_home_summary", json!({}));
    assert!(data["warning"].as_str().unwrap().contains("unavailable"));
    assert_eq!(data["lights_on"], json!([]));
    assert!(data["climate"][0]["temperature"].is_null());
    assert!(data["alarm"][0]["armed"].is_null());
    let data = ok(&tools, "get_sensors_status", json!({"type": "temperature"}));
    assert!(data["warning"].is_string());
    assert!(data["sensors"][0]["value"].is_null());
}

#[test]
fn sensors_by_kind_with_filters() {
    let (_app, tools) = demo();
    let data = ok(&tools, "get_sensors_status", json!({}));
    let all = data["sensors"].as_array().unwrap();
    assert_eq!(data["total"], all.len());
    let kind = |n: &str| {
        all.iter()
            .find(|s| s["name"] == n)
            .unwrap_or_else(|| panic!("{n}"))["sensor_type"]
            .clone()
    };
    assert_eq!(kind("Außentemperatur"), "temperature");
    assert_eq!(kind("Luftfeuchtigkeit"), "humidity");
    assert_eq!(kind("Helligkeit"), "brightness");
    assert_eq!(kind("Haustür"), "door_window");
    assert_eq!(kind("Fenster- und Türüberwachung"), "door_window");
    assert_eq!(kind("Wallbox"), "meter");
    assert_eq!(kind("Wassermelder"), "other");

    let data = ok(&tools, "get_sensors_status", json!({"type": "temperature"}));
    let temps = data["sensors"].as_array().unwrap();
    assert_eq!(temps.len(), 5, "{data}");
    assert!(temps
        .iter()
        .all(|s| s["unit"] == "°C" && s["value"].is_number()));
    let data = ok(&tools, "get_sensors_status", json!({"type": "motion"}));
    assert_eq!(data["total"], 2);
    assert!(data["sensors"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["value"] == true));
    let data = ok(&tools, "get_sensors_status", json!({"type": "door_window"}));
    let monitor = data["sensors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["type"] == "WindowMonitor")
        .unwrap();
    assert_eq!(monitor["value"], 1);
    assert_eq!(monitor["windows"], 9);
    let data = ok(&tools, "get_sensors_status", json!({"type": "brightness"}));
    assert_eq!(data["sensors"][0]["unit"], "lx");
    let data = ok(&tools, "get_sensors_status", json!({"type": "meter"}));
    assert_eq!(data["total"], 3);
    assert!(data["sensors"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["unit"] == "kW"));
    let data = ok(
        &tools,
        "get_sensors_status",
        json!({"room": "Keller", "type": "humidity"}),
    );
    assert_eq!(data["total"], 1);
    assert_eq!(data["sensors"][0]["name"], "Luftfeuchtigkeit Keller");
    let data = ok(&tools, "get_sensors_status", json!({"name": "TEMPERATUR"}));
    assert!(data["total"].as_u64().unwrap() >= 3);
    let data = ok(&tools, "get_sensors_status", json!({"limit": 3}));
    assert_eq!(data["sensors"].as_array().unwrap().len(), 3);
    assert_eq!(data["total"], all.len());

    let m = invalid_params(&tools, "get_sensors_status", json!({"type": "smell"}));
    assert!(m.contains("type must be one of temperature"), "{m}");
    let m = invalid_params(&tools, "get_sensors_status", json!({"limit": 0}));
    assert!(m.contains("limit"), "{m}");
    let m = invalid_params(&tools, "get_sensors_status", json!({"kind": "motion"}));
    assert!(m.contains("`kind`"), "{m}");
    let e = tool_error(&tools, "get_sensors_status", json!({"room": "Ballsaal"}));
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
}

#[test]
fn solarnetwork_fixture_sensors_and_summary() {
    let f = support::fixture_house("SolarNetwork-solarnetwork-loxone-evident-test.json");
    let tools = &f.tools;
    let data = ok(tools, "get_sensors_status", json!({"type": "temperature"}));
    let names: Vec<&str> = data["sensors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    for n in ["temperature", "feltTemperature", "OutsideTemp"] {
        assert!(names.contains(&n), "{n} in {names:?}");
    }
    let data = ok(tools, "get_sensors_status", json!({"type": "humidity"}));
    assert_eq!(data["sensors"][0]["name"], "relativeHumidity");
    let data = ok(tools, "get_sensors_status", json!({"type": "brightness"}));
    assert_eq!(data["total"], 2, "{data}");

    let data = ok(tools, "get_home_summary", json!({}));
    assert!(data.to_string().len() < 3000, "{data}");
    assert!(data.get("warning").is_none(), "{data}");
    let rooms: Vec<&str> = data["climate"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["room"].as_str().unwrap())
        .collect();
    for r in ["Bedroom", "Humboldt North", "Humboldt South"] {
        assert!(rooms.contains(&r), "{r} in {rooms:?}");
    }
    // Lights and blinds status on the same file: its Jalousies, no central blocks.
    let data = ok(tools, "get_blinds_status", json!({}));
    assert_eq!(data["total"], 3);
    // "Shading" is a family word (blinds) before it is this house's category (see
    // home::words): every Jalousie, the two window motors filed under "Window" too.
    let data = ok(
        tools,
        "control_rolladen_unified",
        json!({"scope": "category", "target": "Shading", "action": "down", "dry_run": true}),
    );
    assert_eq!(data["summary"]["planned"], 3, "the blinds family: {data}");
    // The owner's "Shading" category by its UUID: only the Jalousie filed there.
    let file: serde_json::Value = serde_json::from_str(&support::house::fixture_text(
        "SolarNetwork-solarnetwork-loxone-evident-test.json",
    ))
    .unwrap();
    let shading = file["cats"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, c)| c["name"] == "Shading")
        .map(|(uuid, _)| uuid.clone())
        .expect("the fixture has a Shading category");
    let data = ok(
        tools,
        "control_rolladen_unified",
        json!({"scope": "category", "target": shading, "action": "down", "dry_run": true}),
    );
    assert_eq!(
        data["summary"]["planned"], 1,
        "only the Shading category: {data}"
    );
}
