//! The general batch tools end to end against the simulator: `control_multiple_devices` (one
//! failing operation does not hide the others; malformed operations reject the call before
//! anything moves; dry runs send nothing) and `control_room_devices` (families and Loxone types,
//! both `device_type` and `device_types`), on the demo house and a real structure file.

use crate::support;
use support::*;

use serde_json::{json, Value};

use home_mcp::mcp::Handler;

fn statuses(data: &Value) -> Vec<String> {
    data["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn multiple_devices_one_failure_does_not_hide_the_others() {
    let (app, tools) = demo();
    let s = sim(&app);
    let kitchen = uuid_of(&app, "Deckenlicht", "Küche");
    let bedroom = uuid_of(&app, "Rollladen Schlafzimmer", "Schlafzimmer");
    let mirror = uuid_of(&app, "Spiegelleuchte", "Bad");
    let data = ok(
        &tools,
        "control_multiple_devices",
        json!({"operations": [
            {"device": "Deckenlicht", "room": "Küche", "action": "off"},
            {"device": "Kronleuchter", "action": "on"},
            {"device": "Rollladen Schlafzimmer", "action": "down", "value": 40},
            {"device": "Spiegelleuchte", "action": "up"},
            {"device": "Alarmanlage Garage", "action": "off"},
            {"device": "Deckenlicht", "action": "on"},
            {"device": "spiegelleuchte", "action": "dim", "value": 20}
        ]}),
    );
    assert_eq!(data["scope"], "batch");
    assert_eq!(
        statuses(&data),
        ["ok", "error", "ok", "error", "error", "error", "ok"]
    );
    let r = data["results"].as_array().unwrap();
    // Each item: the device record, the action, the commands, and the error's code.
    assert_eq!(r[0]["device"]["uuid"], kitchen.as_str());
    assert_eq!(r[0]["action"], "off");
    assert_eq!(r[0]["commands"], json!([format!("{kitchen}/off")]));
    assert_eq!(r[1]["error"]["code"], "DEVICE_NOT_FOUND");
    assert_eq!(r[1]["device"]["query"], "Kronleuchter");
    assert_eq!(r[1]["commands"], json!([]));
    assert_eq!(
        r[2]["commands"],
        json!([format!("{bedroom}/manualPosition/40")])
    );
    assert_eq!(r[3]["error"]["code"], "INVALID_PARAMETERS");
    assert!(r[3]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("does not support up"));
    assert_eq!(r[4]["error"]["code"], "INSUFFICIENT_PERMISSIONS");
    assert_eq!(r[5]["error"]["code"], "INVALID_PARAMETERS");
    assert!(r[5]["error"]["message"].as_str().unwrap().contains("Küche"));
    let summary = &data["summary"];
    assert_eq!(summary["total"], 7);
    assert_eq!(summary["succeeded"], 3);
    assert_eq!(summary["failed"], 4);
    assert_eq!(summary["not_attempted"], 0);
    // What succeeded really happened.
    assert_eq!(s.state(&kitchen, "active"), Some(0.0));
    assert_eq!(s.state(&bedroom, "targetPosition"), Some(0.4));
    assert_eq!(s.state(&mirror, "position"), Some(20.0));
}

#[test]
fn multiple_devices_dry_run_and_bad_input() {
    let (app, tools) = demo();
    let s = sim(&app);
    let kitchen = uuid_of(&app, "Deckenlicht", "Küche");
    let before = s.state(&kitchen, "active");
    let data = ok(
        &tools,
        "control_multiple_devices",
        json!({"operations": [
            {"device": "Deckenlicht Küche", "action": "off"},
            {"device": "Deckenlicht Küche", "action": "on"}
        ], "dry_run": true}),
    );
    assert_eq!(data["dry_run"], true);
    assert_eq!(statuses(&data), ["planned", "planned"]);
    assert_eq!(
        data["results"][1]["commands"],
        json!([format!("{kitchen}/on")])
    );
    assert_eq!(data["summary"]["planned"], 2);
    assert_eq!(
        s.state(&kitchen, "active"),
        before,
        "a dry run sends nothing"
    );

    // Malformed operations reject the whole call, naming the operation and field; nothing moves.
    let off = json!({"device": "Deckenlicht Küche", "action": "off"});
    for (ops, needle) in [
        (json!([]), "1 to 50"),
        (
            json!([off, {"device": "Bad", "action": "explode"}]),
            "operations[1]",
        ),
        (
            json!([off, {"device": "Spiegelleuchte", "action": "dim", "value": 150}]),
            "value must be between 0 and 100",
        ),
        (json!([{"action": "off"}]), "`device`"),
        (
            json!([{"device": "x", "action": "off", "colour": "red"}]),
            "`colour`",
        ),
        (json!("Deckenlicht"), "must be of type"),
    ] {
        let m = invalid_params(
            &tools,
            "control_multiple_devices",
            json!({ "operations": ops }),
        );
        assert!(m.contains(needle), "{needle}: {m}");
    }
    let too_many: Vec<Value> = (0..51).map(|_| off.clone()).collect();
    let m = invalid_params(
        &tools,
        "control_multiple_devices",
        json!({ "operations": too_many }),
    );
    assert!(m.contains("got 51"), "{m}");
    let m = invalid_params(&tools, "control_multiple_devices", json!({}));
    assert!(m.contains("`operations`"), "{m}");
    assert_eq!(s.state(&kitchen, "active"), before, "nothing was sent");
}

#[test]
fn room_devices_by_family_and_type() {
    let (app, tools) = demo();
    let s = sim(&app);
    let ceiling = uuid_of(&app, "Deckenlicht", "Küche");
    let under = uuid_of(&app, "Unterbauleuchten", "Küche");
    let coffee = uuid_of(&app, "Steckdose Kaffeemaschine", "Küche");
    let radio = uuid_of(&app, "Küchenradio", "Küche");
    s.state(&coffee, "active");
    // Families: the lights (not the socket) and the radio.
    let data = ok(
        &tools,
        "control_room_devices",
        json!({"room": "kuche", "action": "off", "device_types": ["lighting", "audio"]}),
    );
    assert_eq!(data["target"], "Küche");
    assert_eq!(data["action"], "off");
    let names: Vec<&str> = data["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["device"]["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"Deckenlicht") && names.contains(&"Unterbauleuchten"));
    assert!(names.contains(&"Küchenradio"));
    assert!(!names.contains(&"Steckdose Kaffeemaschine"), "{names:?}");
    assert!(statuses(&data).iter().all(|s| s == "ok"), "{data}");
    assert_eq!(s.state(&ceiling, "active"), Some(0.0));
    assert_eq!(s.state(&under, "position"), Some(0.0));
    assert_eq!(s.state(&radio, "playState"), Some(1.0));

    // A Loxone type, as device_type: every Switch of the room, the socket included.
    let data = ok(
        &tools,
        "control_room_devices",
        json!({"room": "Küche", "action": "on", "device_type": "switch"}),
    );
    assert_eq!(data["summary"]["succeeded"], 2);
    assert_eq!(s.state(&coffee, "active"), Some(1.0));
    assert_eq!(s.state(&ceiling, "active"), Some(1.0));

    // Blinds by family with a position; a dry run lists the commands.
    let data = ok(
        &tools,
        "control_room_devices",
        json!({"room": "Wohnzimmer", "action": "down", "value": 30, "device_type": "rolladen", "dry_run": true}),
    );
    assert_eq!(statuses(&data), ["planned", "planned"]);
    assert!(data["results"][0]["commands"][0]
        .as_str()
        .unwrap()
        .ends_with("/manualPosition/30"));

    // Mixed kinds: what a device cannot do is its own error, the rest is done.
    let data = ok(
        &tools,
        "control_room_devices",
        json!({"room": "Wohnzimmer", "action": "up", "device_types": ["blinds", "Dimmer"]}),
    );
    assert_eq!(data["summary"]["succeeded"], 2, "{data}");
    assert_eq!(data["summary"]["failed"], 1, "{data}");
    // Alarms are refused per device.
    let data = ok(
        &tools,
        "control_room_devices",
        json!({"room": "Garage", "action": "off", "device_types": ["alarm", "lighting"]}),
    );
    let alarm = data["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["device"]["type"] == "Alarm")
        .unwrap();
    assert_eq!(alarm["error"]["code"], "INSUFFICIENT_PERMISSIONS");
    assert_eq!(data["summary"]["succeeded"], 1);
}

#[test]
fn room_devices_bad_input() {
    let (_app, tools) = demo();
    let m = invalid_params(
        &tools,
        "control_room_devices",
        json!({"room": "Küche", "action": "off"}),
    );
    assert!(
        m.contains("device_type") && m.contains("device_types"),
        "{m}"
    );
    let m = invalid_params(
        &tools,
        "control_room_devices",
        json!({"room": "Küche", "action": "off", "device_types": ["lighting", "Toaster"]}),
    );
    assert!(
        m.contains("device_types[1]") && m.contains("Toaster"),
        "{m}"
    );
    let m = invalid_params(
        &tools,
        "control_room_devices",
        json!({"room": "Küche", "action": "explode", "device_type": "lighting"}),
    );
    assert!(m.contains("explode"), "{m}");
    let m = invalid_params(
        &tools,
        "control_room_devices",
        json!({"room": "Küche", "action": "dim", "value": 101, "device_type": "lighting"}),
    );
    assert!(m.contains("value must be between 0 and 100"), "{m}");
    let m = invalid_params(
        &tools,
        "control_room_devices",
        json!({"action": "off", "device_type": "lighting"}),
    );
    assert!(m.contains("`room`"), "{m}");
    let m = invalid_params(
        &tools,
        "control_room_devices",
        json!({"room": "Küche", "action": "off", "device_type": ["lighting"]}),
    );
    assert!(m.contains("must be of type"), "{m}");
    let e = tool_error(
        &tools,
        "control_room_devices",
        json!({"room": "Ballsaal", "action": "off", "device_type": "lighting"}),
    );
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
    // The central blinds block is not part of a room batch: Zentral has no blinds.
    let e = tool_error(
        &tools,
        "control_room_devices",
        json!({"room": "Zentral", "action": "down", "device_type": "blinds"}),
    );
    assert_eq!(e["code"], "DEVICE_NOT_FOUND");
}

#[test]
fn batch_tools_are_declared() {
    let (_app, tools) = demo();
    let list = tools.list_tools();
    for name in ["control_multiple_devices", "control_room_devices"] {
        let t = list.iter().find(|t| t.name == name).expect(name);
        assert!(t.description.contains("permission: control"), "{name}");
        assert!(!t.annotations.read_only_hint);
        assert_eq!(t.input_schema["additionalProperties"], false);
        let data = &t.output_schema.as_ref().unwrap()["properties"]["data"];
        assert!(data["properties"]["results"].is_object(), "{name}");
        assert_eq!(
            data["properties"]["results"]["items"]["properties"]["status"]["enum"],
            json!(["ok", "error", "not_attempted", "planned"])
        );
    }
    let multi = list
        .iter()
        .find(|t| t.name == "control_multiple_devices")
        .unwrap();
    let ops = &multi.input_schema["properties"]["operations"];
    assert_eq!(ops["maxItems"], 50);
    assert_eq!(ops["minItems"], 1);
    assert!(ops["items"]["properties"]["action"]["enum"].is_array());
    let room = list
        .iter()
        .find(|t| t.name == "control_room_devices")
        .unwrap();
    assert!(room.input_schema["properties"]["device_type"].is_object());
    assert!(room.input_schema["properties"]["device_types"].is_object());
}

#[test]
fn uk_demo_room_devices_and_category_scope() {
    let f = support::fixture_house("TheJack75-Loxone.NET-uk-demo-miniserver.json");
    let (tools, sim) = (&f.tools, &f.sim);
    // Gen 2 lighting: a room's LightControllerV2 through control_room_devices.
    let data = ok(
        tools,
        "control_room_devices",
        json!({"room": "Living Room", "action": "off", "device_type": "lighting"}),
    );
    let r = &data["results"][0];
    assert_eq!(r["device"]["type"], "LightControllerV2");
    assert_eq!(r["status"], "ok", "{r}");
    let lc = r["device"]["uuid"].as_str().unwrap();
    assert_eq!(sim.state_text(lc, "activeMoods").as_deref(), Some("[778]"));
    // The smart socket (a Switch in "Controls") is no light.
    assert_eq!(data["summary"]["total"], 1);
    // Category scope: the user's "Lighting" category = the eleven V2 controllers.
    let data = ok(
        tools,
        "control_lights_unified",
        json!({"scope": "category", "target": "Lighting", "action": "off", "dry_run": true}),
    );
    assert_eq!(data["summary"]["planned"], 11, "{data}");
    // Blinds of the "Shading" category: every Jalousie, no central block.
    let data = ok(
        tools,
        "control_rolladen_unified",
        json!({"scope": "category", "target": "shading", "action": "down", "dry_run": true}),
    );
    assert_eq!(data["summary"]["planned"], 12, "{data}");
    assert!(data["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["device"]["type"] == "Jalousie"));
    let data = ok(
        tools,
        "control_multiple_devices",
        json!({"operations": [
            {"device": "Lighting Controller", "room": "Kitchen", "action": "off"},
            {"device": "Lighting Controller", "action": "off"}
        ]}),
    );
    assert_eq!(statuses(&data), ["ok", "error"]);
    assert_eq!(data["results"][1]["error"]["code"], "INVALID_PARAMETERS");
}
