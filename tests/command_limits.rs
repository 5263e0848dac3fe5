//! The outbound command limit toward the Miniserver (`[miniserver] max_commands_per_control`,
//! `max_commands`; `home::CommandLimits`): with the shipped defaults, a seventh command to one
//! control within 10 s is refused with `RATE_LIMIT_EXCEEDED` and never reaches the
//! (simulated) Miniserver, other controls still work, the house-wide limit holds across
//! controls, and commands flow again once the window has passed.

use crate::support;
use support::*;

use std::time::Duration;

use serde_json::json;

use home_mcp::app::App;
use home_mcp::config::Config;
use home_mcp::tools::HomeTools;
use support::wire::sent_commands;

const KITCHEN: &str = "1d5c3a92-0209-520e-ffff504f94d0e5a1"; // Deckenlicht (Küche), Switch

fn start(config: &Config) -> (App, HomeTools) {
    support::house::demo_with(config)
}

fn switch(tools: &HomeTools, action: &str) -> serde_json::Value {
    let r = call(
        tools,
        "control_device",
        json!({"device": KITCHEN, "action": action}),
    )
    .expect("no JSON-RPC error");
    text(&r)
}

#[test]
fn a_control_gets_at_most_six_commands_per_ten_seconds() {
    let (app, tools) = start(&Config::default());
    for i in 0..6 {
        let action = if i % 2 == 0 { "on" } else { "off" };
        let t = switch(&tools, action);
        assert!(t["error"].is_null(), "command {i}: {t}");
    }
    assert_eq!(
        sim(&app).state(KITCHEN, "active"),
        Some(0.0),
        "six went through"
    );
    let e = tool_error(
        &tools,
        "control_device",
        json!({"device": KITCHEN, "action": "on"}),
    );
    assert_eq!(e["code"], "RATE_LIMIT_EXCEEDED", "{e}");
    let m = e["message"].as_str().unwrap();
    assert!(
        m.contains("at most 6 commands per 10 s") && m.contains("Deckenlicht"),
        "{m}"
    );
    assert_eq!(
        sim(&app).state(KITCHEN, "active"),
        Some(0.0),
        "the refused command never reached the Miniserver"
    );
    // Another control is not affected.
    let t = ok(
        &tools,
        "control_device",
        json!({"device": "Stehlampe", "action": "on"}),
    );
    assert!(t.is_object(), "{t}");
}

#[test]
fn the_miniserver_gets_at_most_max_commands_in_all() {
    let mut config = Config::default();
    config.command_limits.total = 3;
    let (_app, tools) = start(&config);
    let home = tools.ctx().house.home();
    let lights: Vec<String> = home
        .controls
        .iter()
        .filter(|c| matches!(c.kind.as_str(), "Switch" | "Dimmer"))
        .map(|c| c.uuid.clone())
        .take(4)
        .collect();
    assert_eq!(lights.len(), 4, "the demo house has lights");
    for uuid in &lights[..3] {
        ok(
            &tools,
            "control_device",
            json!({"device": uuid, "action": "on"}),
        );
    }
    let e = tool_error(
        &tools,
        "control_device",
        json!({"device": lights[3], "action": "on"}),
    );
    assert_eq!(e["code"], "RATE_LIMIT_EXCEEDED", "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("to the Miniserver"),
        "{e}"
    );
}

#[test]
fn commands_flow_again_after_the_window() {
    // Within the window (an hour: certainly not over during the test) the second is refused.
    let mut config = Config::default();
    config.command_limits.per_control = 1;
    config.command_limits.window = Duration::from_secs(3600);
    let (app, tools) = start(&config);
    assert!(switch(&tools, "on")["error"].is_null());
    let e = tool_error(
        &tools,
        "control_device",
        json!({"device": KITCHEN, "action": "off"}),
    );
    assert_eq!(e["code"], "RATE_LIMIT_EXCEEDED");
    assert_eq!(sent_commands(sim(&app), KITCHEN), ["on"]);

    // With a short window, a refused command goes through once the window has passed: try
    // until it does (the refused tries never reach the Miniserver).
    config.command_limits.window = Duration::from_millis(200);
    let (app, tools) = start(&config);
    assert!(switch(&tools, "on")["error"].is_null());
    wait_until("a command after the window", PATIENCE, || {
        let t = switch(&tools, "off");
        match t["error"]["code"].as_str() {
            None => Ok(()),
            Some("RATE_LIMIT_EXCEEDED") => Err(t),
            Some(_) => panic!("{t}"),
        }
    });
    assert_eq!(sim(&app).state(KITCHEN, "active"), Some(0.0));
    assert_eq!(sent_commands(sim(&app), KITCHEN), ["on", "off"]);
}

#[test]
fn a_batch_reports_the_limit_per_device_and_sends_nothing_more() {
    let mut config = Config::default();
    config.command_limits.total = 2;
    let (_app, tools) = start(&config);
    let data = ok(
        &tools,
        "control_all_lights",
        json!({"action": "off", "confirm": true}),
    );
    let results = data["results"].as_array().expect("results");
    let count = |status: &str| results.iter().filter(|r| r["status"] == status).count();
    assert!(results.len() > 4, "{data}");
    assert_eq!(count("ok"), 2, "{data}");
    assert_eq!(count("error"), 1, "the first refusal is reported: {data}");
    let refused = results.iter().find(|r| r["status"] == "error").unwrap();
    assert_eq!(refused["error"]["code"], "RATE_LIMIT_EXCEEDED", "{data}");
    assert_eq!(
        count("not_attempted"),
        results.len() - 3,
        "nothing more is asked of the Miniserver: {data}"
    );
}
