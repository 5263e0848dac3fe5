//! Every tool's `structuredContent` matches the `outputSchema` it declares in `tools/list`,
//! and its example arguments match its `inputSchema`: MCP clients (the Python SDK among them)
//! validate results against the output schema and reject a tool whose result does not fit.
//! Each tool is called on the demo house with typical arguments (and with `dry_run` where the
//! tool has it, too).

use crate::support;

use std::collections::BTreeSet;

use home_mcp::mcp::Handler;
use home_mcp::tools::schema::validate;
use serde_json::{json, Value};
use support::{call, demo, text};

/// Typical calls per tool: enough to cover every tool of the catalogue.
fn calls() -> Vec<(&'static str, Value)> {
    vec![
        ("list_rooms", json!({})),
        ("list_devices", json!({"room": "Küche"})),
        ("list_devices", json!({"category": "lighting", "limit": 3})),
        (
            "control_device",
            json!({"device": "Deckenlicht", "room": "Küche", "action": "on"}),
        ),
        (
            "control_device",
            json!({"device": "Lichtsteuerung Wohnzimmer", "action": "mood", "scene": 2}),
        ),
        ("get_temperature_sensors", json!({})),
        (
            "set_room_temperature",
            json!({"room": "Wohnzimmer", "temperature": 21.5}),
        ),
        (
            "set_room_mode",
            json!({"room": "Wohnzimmer", "mode": "eco"}),
        ),
        (
            "set_room_mode",
            json!({"room": "Büro", "mode": "auto", "dry_run": true}),
        ),
        ("set_room_mode", json!({"room": "Büro", "mode": "eco"})),
        (
            "set_room_mode",
            json!({"room": "Keller", "mode": "heating"}),
        ),
        (
            "set_room_temperature",
            json!({"room": "Büro", "temperature": 20, "dry_run": true}),
        ),
        ("get_zone_temperature", json!({"zone_id": "Wohnzimmer"})),
        ("get_climate_status", json!({})),
        (
            "control_room_lights",
            json!({"room": "Küche", "action": "on"}),
        ),
        (
            "control_all_lights",
            json!({"action": "off", "dry_run": true}),
        ),
        (
            "control_lights_unified",
            json!({"scope": "category", "target": "Beleuchtung", "action": "off", "dry_run": true}),
        ),
        ("room_all_on", json!({"room_id": "Schlafzimmer"})),
        (
            "set_dimmer",
            json!({"device_id": "Deckenlicht Wohnzimmer", "level": 40}),
        ),
        ("get_lights_status", json!({"state": "on"})),
        ("discover_rolladen_capabilities", json!({})),
        (
            "control_room_rolladen",
            json!({"room": "Wohnzimmer", "action": "down", "dry_run": true}),
        ),
        ("control_all_rolladen", json!({"action": "stop"})),
        (
            "control_rolladen_unified",
            json!({"scope": "system", "action": "up", "dry_run": true}),
        ),
        ("get_blinds_status", json!({})),
        ("arm_alarm", json!({"confirm": true})),
        ("get_security_status", json!({})),
        ("list_doorbell_events", json!({})),
        ("get_camera_image", json!({"device": "Haustür"})),
        (
            "get_camera_image",
            json!({"device": "Haustür", "bell_event": "20261127101500"}),
        ),
        ("acknowledge_alarm", json!({"confirm": true})),
        ("disarm_alarm", json!({})),
        (
            "control_audio_zone",
            json!({"zone": "Küche", "action": "play"}),
        ),
        ("set_audio_volume", json!({"zone": "Küche", "volume": 30})),
        ("get_audio_status", json!({})),
        (
            "create_workflow",
            json!({"name": "Abend", "steps": [
                {"tool": "control_room_lights", "arguments": {"room": "Küche", "action": "off"}},
                {"tool": "get_home_summary", "arguments": {}, "parallel_group": 1}
            ]}),
        ),
        ("list_workflows", json!({})),
        ("get_workflow", json!({"name": "Abend"})),
        ("execute_workflow", json!({"name": "Abend"})),
        (
            "execute_workflow",
            json!({"name": "Abend", "dry_run": true}),
        ),
        ("delete_workflow", json!({"name": "Abend"})),
        ("execute_workflow_demo", json!({"dry_run": true})),
        (
            "control_multiple_devices",
            json!({"operations": [
                {"device": "Deckenlicht Küche", "action": "aus"},
                {"device": "Whirlpool", "action": "on"}
            ]}),
        ),
        (
            "control_room_devices",
            json!({"room": "Wohnzimmer", "action": "off", "device_types": ["lighting"], "dry_run": true}),
        ),
        ("get_home_summary", json!({})),
        ("get_home_summary", json!({"room": "Küche"})),
        ("get_sensors_status", json!({"type": "temperature"})),
        (
            "get_history",
            json!({"device": "Stromzähler", "state": "total", "period": "last 7 days", "resolution": "day"}),
        ),
        (
            "get_history",
            json!({"device": "Raumtemperatur Wohnzimmer"}),
        ),
        (
            "get_energy",
            json!({"period": "last month", "compare_with": "this month", "breakdown": "week"}),
        ),
        ("list_alerts", json!({})),
        ("list_alerts", json!({"historic": true, "limit": 5})),
        // The demo Miniserver's seeded warning (its first entry): read, then confirmed.
        (
            "confirm_alert",
            json!({"alert": "4d430000-0000-4000-ffff000000000001", "action": "read"}),
        ),
        (
            "confirm_alert",
            json!({"alert": "4d430000-0000-4000-ffff000000000001"}),
        ),
    ]
}

#[test]
fn results_match_the_declared_output_schemas() {
    // The validator bites: a wrong type inside an envelope is caught.
    let envelope = json!({"type": "object", "properties": {"data": {"type": "object",
        "properties": {"total": {"type": "integer"}}, "required": ["total"]}}});
    assert!(validate(&envelope, &json!({"data": {"total": "3"}})).is_err());
    assert!(validate(&envelope, &json!({"data": {}})).is_err());
    assert!(validate(&envelope, &json!({"data": {"total": 3}})).is_ok());

    // The secured alarms take the visualisation password configured on the server.
    let config = home_mcp::config::Config {
        visu_password: Some(home_mcp::home::Secret::new(
            home_mcp::sim::DEMO_VISU_PASSWORD,
        )),
        ..support::test_config()
    };
    let (_app, tools) = support::demo_with(&config);
    let listed = tools.list_tools();
    let mut covered = BTreeSet::new();
    for (name, args) in calls() {
        let desc = listed
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} is not listed"));
        if let Err(e) = validate(&desc.input_schema, &args) {
            panic!("{name}: example arguments {args} do not fit the input schema: {e}");
        }
        let r = call(&tools, name, args.clone())
            .unwrap_or_else(|e| panic!("{name} {args}: JSON-RPC error {e:?}"));
        let t = text(&r);
        assert!(!r.is_error, "{name} {args}: {t}");
        let structured = r.structured_content.as_ref().expect("structuredContent");
        let schema = desc.output_schema.as_ref().expect("outputSchema");
        if let Err(e) = validate(schema, structured) {
            panic!("{name} {args}: result does not fit the output schema: {e}\n{structured}");
        }
        covered.insert(name);
    }
    let all: BTreeSet<&str> = listed.iter().map(|t| t.name.as_str()).collect();
    let missing: Vec<_> = all.difference(&covered).collect();
    assert!(
        missing.is_empty(),
        "tools without a schema check: {missing:?}"
    );
}

#[test]
fn catalogue_has_the_spec_names_and_every_declaration() {
    let (_app, tools) = demo();
    let listed = tools.list_tools();
    let names: BTreeSet<&str> = listed.iter().map(|t| t.name.as_str()).collect();
    // Spec §1 catalogue (17) and the names its examples use.
    for name in [
        "control_device",
        "control_multiple_devices",
        "control_lights_unified",
        "control_room_lights",
        "control_all_lights",
        "control_rolladen_unified",
        "discover_rolladen_capabilities",
        "control_room_rolladen",
        "control_all_rolladen",
        "set_room_temperature",
        "set_room_mode",
        "control_audio_zone",
        "set_audio_volume",
        "arm_alarm",
        "disarm_alarm",
        "create_workflow",
        "execute_workflow_demo",
        "list_rooms",
        "list_devices",
        "room_all_on",
        "set_dimmer",
        "get_zone_temperature",
        "get_temperature_sensors",
        "control_room_devices",
        "get_home_summary",
    ] {
        assert!(names.contains(name), "{name} missing");
    }
    for t in &listed {
        let input = &t.input_schema;
        assert_eq!(input["type"], "object", "{}", t.name);
        assert_eq!(input["additionalProperties"], false, "{}", t.name);
        assert!(t.output_schema.is_some(), "{}", t.name);
        assert!(t.description.contains("(permission: "), "{}", t.name);
        let a = &t.annotations;
        assert!(
            !(a.read_only_hint && a.destructive_hint),
            "{}: read-only and destructive",
            t.name
        );
    }
    let security: Vec<&str> = listed
        .iter()
        .filter(|t| t.description.contains("(permission: security)"))
        .map(|t| t.name.as_str())
        .collect();
    for name in ["arm_alarm", "disarm_alarm"] {
        assert!(
            security.contains(&name),
            "{name} needs security: {security:?}"
        );
    }
    let disarm = listed.iter().find(|t| t.name == "disarm_alarm").unwrap();
    assert!(disarm.annotations.destructive_hint);
}
