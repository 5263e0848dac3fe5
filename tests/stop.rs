//! The stop (issue 31): `[safety] stop_switch` names a control a person switches in Loxone;
//! while it reads off, or its value is unknown, every command is refused before anything is
//! sent (`ASSISTANT_STOPPED`, saying who lifts it where); the admin page's own stop does the
//! same and survives a restart; the switch resolves at start (refused with the candidates);
//! commands to the switch itself are refused. The oracle is the simulator: its state, driven
//! over its HTTP API, and the commands it received.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use home_mcp::app::App;
use home_mcp::home::resolve::ResolveError;
use home_mcp::home::stop::resolve_stop_switch;
use home_mcp::home::{
    Action, AdminStops, Command, Control, Controller, ControllerError, House, SwitchReading, Value,
};
use home_mcp::loxone::structure::parse_structure_bytes;
use serde_json::json;

use crate::support::drive::MiniserverApi;
use crate::support::house::{call, ok, sim, test_config, text, tool_error};
use crate::support::live::wait_websocket;
use crate::support::unreachable::demo_home;
use crate::support::wait::wait_for;
use crate::support::wire::commands_since;

/// The demo house's Virtual Status "KI-Assistent" (Zentral), the stop switch.
const SWITCH: &str = "1d5c3cf0-0230-6000-ffff504f94d0e5a1";
/// The demo house's Switch "Partymodus" (Wohnzimmer).
const PARTY: &str = "1d5c3a8f-0208-51f9-ffff504f94d0e5a1";

fn fixture(name: &str) -> home_mcp::home::Home {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    parse_structure_bytes(&std::fs::read(&path).unwrap()).unwrap()
}

#[test]
fn the_switch_resolves_by_name_or_uuid_and_refuses_missing_or_ambiguous_names() {
    let home = demo_home();
    assert_eq!(
        resolve_stop_switch(&home, "KI-Assistent").unwrap().uuid,
        SWITCH
    );
    assert_eq!(
        resolve_stop_switch(&home, "ki assistent").unwrap().uuid,
        SWITCH
    );
    assert_eq!(resolve_stop_switch(&home, SWITCH).unwrap().uuid, SWITCH);
    // A blind is no stop switch, whatever its name.
    assert!(matches!(
        resolve_stop_switch(&home, "Raffstore Süd"),
        Err(ResolveError::NotFound { .. })
    ));
    // A real file with eight Virtual States named "VOLNO": ambiguous, every candidate listed.
    let kotlin = fixture("Smarteon-loxone-client-kotlin-sample-app.json");
    match resolve_stop_switch(&kotlin, "VOLNO") {
        Err(ResolveError::Ambiguous { candidates, .. }) => {
            assert!(candidates.len() > 1, "{candidates:?}");
            assert!(candidates.iter().all(|c| c.kind == "InfoOnlyDigital"));
        }
        other => panic!("expected ambiguous, got {other:?}"),
    }
    let solar = fixture("SolarNetwork-solarnetwork-loxone-evident-test.json");
    assert_eq!(
        resolve_stop_switch(&solar, "comfort").unwrap().uuid,
        "0fe7ea95-03dd-5251-ffffac13ede363ee"
    );
}

#[test]
fn start_refuses_a_stop_switch_that_names_no_single_control() {
    let mut config = test_config();
    config.stop_switch = Some("KI Assistant Stop".into());
    let e = App::start(&config, true).err().expect("start refuses");
    let m = e.to_string();
    assert!(m.contains("safety.stop_switch"), "{m}");
    assert!(
        m.contains("KI-Assistent"),
        "the nearest name is suggested: {m}"
    );
}

/// The demo house with `[safety] stop_switch` = `switch`, its tools and the simulator's API.
fn demo_with_switch(switch: &str) -> (App, home_mcp::tools::HomeTools, MiniserverApi) {
    let mut config = test_config();
    config.stop_switch = Some(switch.into());
    let (app, tools) = crate::support::house::demo_with(&config);
    let ms = MiniserverApi::of(&app);
    (app, tools, ms)
}

#[test]
fn while_the_switch_is_off_commands_are_refused_and_nothing_is_sent() {
    let (app, tools, ms) = demo_with_switch("KI-Assistent");
    wait_websocket(&app);
    assert!(!app.house.stop_status().stopped, "on at start: running");
    ms.drive(&format!("state/{SWITCH}/active/0"));
    wait_for("the house stopped", || {
        let s = app.house.stop_status();
        (s.stopped, s)
    });
    let mark = sim(&app).request_count();
    let e = refused_light(&tools);
    let m = e["message"].as_str().unwrap();
    assert!(m.contains("KI-Assistent") && m.contains("off"), "{m}");
    assert!(m.contains("Loxone app"), "says who lifts it where: {m}");
    assert_eq!(e["details"]["stopped_by"], json!(["stop_switch"]));
    assert_eq!(e["details"]["stop_switch"]["state"], "off");
    // Reads answer.
    let devices = ok(&tools, "list_devices", json!({"room": "Küche"}));
    assert!(devices.to_string().contains("Deckenlicht"));
    assert!(
        commands_since(sim(&app), mark).is_empty(),
        "nothing was sent: {:?}",
        commands_since(sim(&app), mark)
    );
    // Switched on at the house: commands flow again.
    ms.drive(&format!("state/{SWITCH}/active/1"));
    wait_for("the house running", || {
        let s = app.house.stop_status();
        (!s.stopped, s)
    });
    ok(
        &tools,
        "control_device",
        json!({"device": "Deckenlicht", "room": "Küche", "action": "on"}),
    );
    assert!(
        !commands_since(sim(&app), mark).is_empty(),
        "the command went out"
    );
}

#[test]
fn commands_to_the_stop_switch_itself_are_refused() {
    // A Switch as the stop switch: the assistant may not switch it, on or off.
    let (app, tools, ms) = demo_with_switch("Partymodus");
    ms.command(PARTY, "on");
    wait_for("running", || {
        let s = app.house.stop_status();
        (!s.stopped, s)
    });
    let mark = sim(&app).request_count();
    let e = tool_error(
        &tools,
        "control_device",
        json!({"device": PARTY, "action": "off"}),
    );
    assert_eq!(e["code"], "INSUFFICIENT_PERMISSIONS", "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("stop switch"),
        "{e}"
    );
    assert!(commands_since(sim(&app), mark).is_empty());
    assert_eq!(ms.state(PARTY, "active"), 1.0);
}

/// A controller that counts what it is asked, and reaches nothing.
#[derive(Default)]
struct Counting {
    acts: AtomicUsize,
}

impl Controller for Counting {
    fn command(&self, c: &Control, _: &Action) -> Result<Command, ControllerError> {
        Ok(Command {
            target: c.uuid.clone(),
            command: "on".into(),
        })
    }
    fn act(&self, _: &Control, _: &Action) -> Result<Option<Value>, ControllerError> {
        self.acts.fetch_add(1, Ordering::SeqCst);
        Err(ControllerError::Connection("unreachable".into()))
    }
    fn read(&self, _: &Control) -> Result<Value, ControllerError> {
        Err(ControllerError::Connection("unreachable".into()))
    }
}

#[test]
fn with_the_link_down_the_switch_is_unknown_and_the_house_is_stopped() {
    // A house whose Miniserver was never reached: fail closed, and the controller is not even
    // asked (not CONNECTION_ERROR after a try).
    let counting = Arc::new(Counting::default());
    let house = House::new(demo_home(), counting.clone(), Duration::from_secs(5))
        .with_stop(Some("KI-Assistent".into()), AdminStops::in_memory());
    let status = house.stop_status();
    assert!(status.stopped);
    let sw = status.switch.as_ref().unwrap();
    assert!(
        matches!(&sw.reading, SwitchReading::Unknown(m) if m.contains("link")),
        "{sw:?}"
    );
    let home = house.home();
    let light = home.control(PARTY).unwrap();
    let e = house.act(light, &Action::On, "test").unwrap_err();
    assert_eq!(e.code(), "ASSISTANT_STOPPED");
    assert!(e.to_string().contains("unknown"), "{e}");
    assert_eq!(counting.acts.load(Ordering::SeqCst), 0, "nothing was tried");
    // Without a stop switch the same house tries (and fails to connect).
    let plain = House::new(demo_home(), counting.clone(), Duration::from_secs(5));
    assert_eq!(
        plain.act(light, &Action::On, "test").unwrap_err().code(),
        "CONNECTION_ERROR"
    );
    assert_eq!(counting.acts.load(Ordering::SeqCst), 1);
}

#[test]
fn the_link_lost_later_stops_the_house_until_it_is_back() {
    let (mut app, tools, _ms) = demo_with_switch("KI-Assistent");
    wait_websocket(&app);
    wait_for("running", || {
        let s = app.house.stop_status();
        (!s.stopped, s)
    });
    // No polling fallback, and the Miniserver's WebSocket drops and refuses us: the link is
    // down and stays down.
    if let Some(p) = app.poller.take() {
        p.stop();
    }
    sim(&app).set_ws_refuse(true);
    sim(&app).ws_drop_connections();
    wait_for("the link down", || {
        let mode = app.house.link().mode();
        (mode == home_mcp::home::LinkMode::Disconnected, mode)
    });
    let mark = sim(&app).request_count();
    let e = refused_light(&tools);
    assert_eq!(e["details"]["stop_switch"]["state"], "unknown");
    assert!(commands_since(sim(&app), mark).is_empty());
    sim(&app).set_ws_refuse(false);
    wait_for("running again once the link is back", || {
        let s = app.house.stop_status();
        (!s.stopped, s)
    });
}

#[test]
fn the_admin_stop_holds_across_a_restart_until_lifted() {
    let dir = std::env::temp_dir().join(format!("home-mcp-stop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut config = test_config();
    // `--demo --key-store PATH`: the admin stop is kept beside the key store.
    config.key_store = Some(dir.join("keys.toml"));
    let (app, tools) = crate::support::house::demo_with(&config);
    assert!(!app.house.stop_status().stopped);
    app.house.admin_stop().stop("owner").unwrap();
    let mark = sim(&app).request_count();
    let e = tool_error(
        &tools,
        "control_device",
        json!({"device": "Deckenlicht", "room": "Küche", "action": "on"}),
    );
    assert_eq!(e["code"], "ASSISTANT_STOPPED");
    assert!(e["message"].as_str().unwrap().contains("admin page"), "{e}");
    assert!(commands_since(sim(&app), mark).is_empty());
    drop(tools);
    app.shutdown();

    let (app, tools) = crate::support::house::demo_with(&config);
    let s = app.house.stop_status();
    assert!(
        s.stopped && s.admin.as_ref().unwrap().by == "owner",
        "{s:?}"
    );
    app.house.admin_stop().lift("owner").unwrap();
    let r = call(
        &tools,
        "control_device",
        json!({"device": "Deckenlicht", "room": "Küche", "action": "on"}),
    )
    .unwrap();
    assert!(!r.is_error, "{}", text(&r));
    drop(tools);
    app.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_admin_api_stops_and_lifts_for_admins_only_and_audits_it() {
    use home_mcp::auth::gate::SecurityLevel;
    use home_mcp::auth::{ApiKey, Role};
    use home_mcp::http::HttpConfig;

    use crate::support::app_server::{admin_context, gate, send_json, AppServer};
    use crate::support::gate::key;
    use crate::support::mcp::McpHttp;

    const ADMIN: &str = "homekey_admin_1_00112233445566778899aabbccddeeff";
    const OPERATOR: &str = "homekey_operator_2_00112233445566778899aabbccddeeff";
    let keys = vec![
        ApiKey {
            name: "owner".into(),
            ..key(ADMIN, Role::Admin)
        },
        key(OPERATOR, Role::Operator),
    ];
    let f = AppServer::start(|app| {
        let gate = gate(app, SecurityLevel::Staging, keys, &[]);
        HttpConfig {
            gate: Some(gate.clone()),
            audit: app.audit.clone(),
            admin: Some(admin_context(app, &gate)),
            ..HttpConfig::default()
        }
    });
    let a = f.addr();
    let post = |k: &str, body: &str| {
        let r = send_json(a, "POST", "/admin/api/stop", Some(k), body);
        (
            r.status,
            serde_json::from_str::<serde_json::Value>(&r.body).unwrap_or_default(),
        )
    };
    // Not an admin: refused; a bad body: 400.
    assert_eq!(post(OPERATOR, r#"{"stopped": true}"#).0, 403);
    assert_eq!(post(ADMIN, r#"{"stop": true}"#).0, 400);
    assert_eq!(post(ADMIN, r#"{"stopped": "yes"}"#).0, 400);
    assert!(!f.app.house.stop_status().stopped);

    let (s, body) = post(ADMIN, r#"{"stopped": true}"#);
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["stop"]["stopped"], true);
    assert_eq!(body["stop"]["admin"]["by"], "owner");
    assert_eq!(body["stop"]["stopped_by"], json!(["admin"]));
    let r = send_json(a, "GET", "/admin/status", Some(ADMIN), "");
    let status: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(status["stop"]["stopped"], true, "{status}");

    // An operator's command over MCP is refused; nothing reaches the house.
    let mark = sim(&f.app).request_count();
    let mut mcp = McpHttp::connect(a, Some(OPERATOR));
    let result = mcp.call(
        "control_device",
        json!({"device": "Deckenlicht", "room": "Küche", "action": "on"}),
    );
    assert_eq!(result["isError"], true, "{result}");
    let envelope: serde_json::Value =
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(envelope["error"]["code"], "ASSISTANT_STOPPED", "{envelope}");
    assert!(commands_since(sim(&f.app), mark).is_empty());
    // Reads answer.
    mcp.ok("list_devices", json!({"room": "Küche"}));

    let (s, body) = post(ADMIN, r#"{"stopped": false}"#);
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["stop"]["stopped"], false);
    mcp.ok(
        "control_device",
        json!({"device": "Deckenlicht", "room": "Küche", "action": "on"}),
    );
    let audit = f.app.audit.as_ref().unwrap();
    audit.flush();
    let ops: Vec<String> = audit
        .query(&home_mcp::audit::Query::default())
        .unwrap()
        .into_iter()
        .map(|e| format!("{} {} {}", e.operation, e.key_name, e.result))
        .collect();
    assert!(ops.iter().any(|o| o == "stop.set owner ok"), "{ops:?}");
    assert!(ops.iter().any(|o| o == "stop.lift owner ok"), "{ops:?}");
}

#[test]
fn health_details_show_the_stop_and_since_when() {
    use crate::support::server::{Miniserver, Served};
    use crate::support::wait::{wait_until, PATIENCE};

    let ms = Miniserver::demo();
    let served = Served::start(&ms, "[safety]\nstop_switch = \"KI-Assistent\"\n", &[]);
    let stop = || -> Result<serde_json::Value, String> {
        let r = served.health()?;
        let v: serde_json::Value = serde_json::from_str(&r.body).map_err(|e| e.to_string())?;
        Ok(v["stop"].clone())
    };
    let running = wait_until("the switch read on in /health", PATIENCE, || match stop() {
        Ok(s) if s["stop_switch"]["state"] == "on" => Ok(s),
        other => Err(format!("{other:?}")),
    });
    assert_eq!(running["stopped"], false, "{running}");
    assert_eq!(running["stop_switch"]["name"], "KI-Assistent");
    ms.api.drive(&format!("state/{SWITCH}/active/0"));
    let stopped = wait_until("/health shows the stop", PATIENCE, || match stop() {
        Ok(s) if s["stopped"] == true => Ok(s),
        other => Err(format!("{other:?}")),
    });
    assert_eq!(stopped["stopped_by"], json!(["stop_switch"]), "{stopped}");
    assert_eq!(stopped["stop_switch"]["state"], "off");
    assert!(
        stopped["since"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{stopped}"
    );
    assert!(
        stopped["lift"].as_str().unwrap().contains("Loxone app"),
        "{stopped}"
    );
}

#[test]
fn while_stopped_every_tool_that_writes_is_refused_over_mcp_audited_and_nothing_is_sent() {
    use home_mcp::auth::gate::SecurityLevel;
    use home_mcp::auth::{ApiKey, Role};
    use home_mcp::http::HttpConfig;

    use crate::support::app_server::{gate, AppServer};
    use crate::support::gate::key;
    use crate::support::mcp::McpHttp;

    const ADMIN: &str = "homekey_admin_1_00112233445566778899aabbccddeeff";
    let keys = vec![ApiKey {
        name: "assistant".into(),
        ..key(ADMIN, Role::Admin)
    }];
    let f = AppServer::start(|app| HttpConfig {
        gate: Some(gate(app, SecurityLevel::Staging, keys, &[])),
        audit: app.audit.clone(),
        ..HttpConfig::default()
    });
    let mut mcp = McpHttp::connect(f.addr(), Some(ADMIN));
    let listed = mcp.rpc("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap().clone();
    // The actuating tools, from the catalogue's own declarations (readOnlyHint false).
    let acting: Vec<String> = tools
        .iter()
        .filter(|t| t["annotations"]["readOnlyHint"] == false)
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        acting.len() > 20,
        "the catalogue's writing tools: {acting:?}"
    );
    f.app.house.admin_stop().stop("owner").unwrap();
    let mark = sim(&f.app).request_count();
    for name in &acting {
        // No arguments at all: the stop comes before the arguments are read.
        let r = mcp.call(name, json!({}));
        assert_eq!(r["isError"], true, "{name}: {r}");
        let envelope: serde_json::Value =
            serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(
            envelope["error"]["code"], "ASSISTANT_STOPPED",
            "{name}: {envelope}"
        );
    }
    assert!(
        commands_since(sim(&f.app), mark).is_empty(),
        "{:?}",
        commands_since(sim(&f.app), mark)
    );
    // Reads answer.
    for name in [
        "get_home_summary",
        "list_devices",
        "list_alerts",
        "get_lights_status",
    ] {
        let r = mcp.call(name, json!({}));
        assert_ne!(r["isError"], true, "{name} answers while stopped: {r}");
    }
    // Each refusal is in the audit log, with who called.
    let audit = f.app.audit.as_ref().unwrap();
    audit.flush();
    let refused: std::collections::BTreeSet<String> = audit
        .query(&home_mcp::audit::Query::default())
        .unwrap()
        .into_iter()
        .filter(|e| e.result == "ASSISTANT_STOPPED" && e.key_name == "assistant")
        .map(|e| e.operation)
        .collect();
    let want: std::collections::BTreeSet<String> = acting.iter().cloned().collect();
    assert_eq!(refused, want, "every refusal audited");
}

/// `control_device` on the kitchen's ceiling light, which must be refused with
/// `ASSISTANT_STOPPED`; the spec's error object.
fn refused_light(tools: &home_mcp::tools::HomeTools) -> serde_json::Value {
    let e = tool_error(
        tools,
        "control_device",
        json!({"device": "Deckenlicht", "room": "Küche", "action": "on"}),
    );
    assert_eq!(e["code"], "ASSISTANT_STOPPED", "{e}");
    e
}
