//! MCP prompts on the demo house: the catalogue, each prompt's messages (real tool names,
//! embedded current data as resource contents), argument errors and argument completion.

use crate::support;

use home_mcp::mcp::{CompletionRef, Content, GetPromptResult, Handler, RequestContext, RpcError};
use serde_json::{json, Map, Value};

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

fn get(tools: &impl Handler, name: &str, a: Value) -> Result<GetPromptResult, RpcError> {
    tools.get_prompt(name, &args(a), &RequestContext::default())
}

/// All text of the prompt's text messages, and the URIs of its embedded resources.
fn parts(r: &GetPromptResult) -> (String, Vec<String>) {
    let mut text = String::new();
    let mut uris = Vec::new();
    for m in &r.messages {
        assert_eq!(m.role, "user");
        match &m.content {
            Content::Text { text: t } => text.push_str(t),
            Content::Resource { resource } => {
                assert_eq!(resource.mime_type.as_deref(), Some("application/json"));
                let _: Value = serde_json::from_str(resource.text.as_deref().unwrap()).unwrap();
                uris.push(resource.uri.clone());
            }
            other => panic!("unexpected content {other:?}"),
        }
    }
    (text, uris)
}

#[test]
fn catalogue_lists_four_prompts_with_arguments() {
    let (_app, tools) = support::demo();
    let list = tools.list_prompts();
    let names: Vec<&str> = list.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "house_status_report",
            "energy_saving_review",
            "good_night_routine",
            "troubleshoot_device"
        ]
    );
    for p in &list {
        assert!(!p.description.is_empty());
    }
    let t = list
        .iter()
        .find(|p| p.name == "troubleshoot_device")
        .unwrap();
    assert!(t.arguments.iter().any(|a| a.name == "device" && a.required));
    let json = serde_json::to_value(&list).unwrap();
    assert_eq!(json[0]["arguments"][0]["name"], "room");
    assert_eq!(json[0]["arguments"][0]["required"], false);
}

#[test]
fn status_report_embeds_the_summary_or_the_room_overview() {
    let (_app, tools) = support::demo();
    let r = get(&tools, "house_status_report", json!({})).unwrap();
    let (text, uris) = parts(&r);
    assert!(text.contains("get_lights_status"));
    assert_eq!(uris, ["home://summary"]);
    let r = get(&tools, "house_status_report", json!({"room": "kuche"})).unwrap();
    let (text, uris) = parts(&r);
    assert!(text.contains("Küche"));
    assert_eq!(uris, ["home://rooms/kuche/overview"]);
    // The message serialises as an MCP embedded resource.
    let m = serde_json::to_value(&r.messages[1]).unwrap();
    assert_eq!(m["content"]["type"], "resource");
    assert_eq!(
        m["content"]["resource"]["uri"],
        "home://rooms/kuche/overview"
    );
    let e = get(&tools, "house_status_report", json!({"room": "Dachboden"})).unwrap_err();
    assert_eq!(e.code, -32602);
    let e = get(&tools, "house_status_report", json!({"room": 5})).unwrap_err();
    assert_eq!(e.code, -32602);
}

#[test]
fn energy_review_and_good_night_preview_before_acting() {
    let (_app, tools) = support::demo();
    let (text, uris) = parts(&get(&tools, "energy_saving_review", json!({})).unwrap());
    assert!(text.contains("dry_run: true"));
    assert!(text.contains("set_room_temperature"));
    assert_eq!(uris, ["home://summary", "home://energy"]);

    let (text, uris) = parts(&get(&tools, "good_night_routine", json!({})).unwrap());
    assert!(text.contains(r#"control_all_lights with {"action": "off", "dry_run": true}"#));
    assert!(text.contains("control_all_rolladen"));
    assert!(text.contains("only after I say yes"));
    assert!(text.contains("Do not arm or disarm"));
    assert_eq!(uris, ["home://summary"]);
    let (text, _) = parts(
        &get(
            &tools,
            "good_night_routine",
            json!({"bedroom": "schlafzimmer", "arm_alarm": "yes"}),
        )
        .unwrap(),
    );
    assert!(text.contains("\"Schlafzimmer\""));
    assert!(text.contains("control_room_lights"));
    assert!(text.contains("arm_alarm"));
    assert_eq!(
        get(&tools, "good_night_routine", json!({"arm_alarm": "maybe"}))
            .unwrap_err()
            .code,
        -32602
    );
}

#[test]
fn troubleshoot_needs_a_device_that_exists() {
    let (app, tools) = support::demo();
    let home = app.house.home();
    let musik = home.controls.iter().find(|c| c.name == "Musik").unwrap();
    let r = get(&tools, "troubleshoot_device", json!({"device": "musik"})).unwrap();
    let (text, uris) = parts(&r);
    assert!(text.contains(&musik.uuid));
    assert!(text.contains("control_device"));
    assert_eq!(
        uris,
        [
            format!("home://devices/{}", musik.uuid),
            "home://system/status".to_string()
        ]
    );
    let e = get(&tools, "troubleshoot_device", json!({})).unwrap_err();
    assert_eq!(e.code, -32602);
    assert!(e.message.contains("device"));
    let e = get(&tools, "troubleshoot_device", json!({"device": "Musikk"})).unwrap_err();
    assert_eq!(e.code, -32602);
    assert!(e.details.unwrap().contains("Musik"));
    let e = get(&tools, "no_such_prompt", json!({})).unwrap_err();
    assert_eq!(e.code, -32602);
}

#[test]
fn prompt_arguments_complete() {
    let (app, tools) = support::demo();
    let home = app.house.home();
    let p = |n: &str| CompletionRef::Prompt(n.into());
    let c = tools
        .complete(&p("house_status_report"), "room", "kü", &Map::new())
        .unwrap();
    assert_eq!(c.values, ["Küche"]);
    let c = tools
        .complete(&p("good_night_routine"), "bedroom", "SCHL", &Map::new())
        .unwrap();
    assert_eq!(c.values, ["Schlafzimmer"]);
    let c = tools
        .complete(&p("troubleshoot_device"), "device", "mu", &Map::new())
        .unwrap();
    assert!(c.values.contains(&"Musik".to_string()));
    // The room already given narrows the devices.
    let all = tools
        .complete(&p("troubleshoot_device"), "device", "", &Map::new())
        .unwrap();
    let kitchen = tools
        .complete(
            &p("troubleshoot_device"),
            "device",
            "",
            &args(json!({"room": "Küche"})),
        )
        .unwrap();
    assert!(kitchen.values.len() < all.values.len() || all.has_more);
    // Exactly the names of the kitchen's devices, from the structure.
    let kuche = home.resolve_room("kuche").unwrap();
    let mut expected: Vec<String> = home
        .controls
        .iter()
        .filter(|c| c.room.as_deref() == Some(kuche.uuid.as_str()))
        .map(|c| c.name.clone())
        .collect();
    expected.sort();
    expected.dedup();
    let mut got = kitchen.values.clone();
    got.sort();
    assert_eq!(got, expected);
    assert!(tools
        .complete(&p("energy_saving_review"), "x", "", &Map::new())
        .unwrap()
        .values
        .is_empty());
    assert_eq!(
        tools
            .complete(&p("nope"), "room", "", &Map::new())
            .unwrap_err()
            .code,
        -32602
    );
}
