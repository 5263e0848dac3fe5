//! Confirmation of house-wide and security actions (`confirm`, elicitation, dry-run answer),
//! and the progress and log notifications tools send during a call, observed through a fake
//! [`Peer`] in the request's context.

use crate::support;
use support::*;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};

use home_mcp::app::App;
use home_mcp::config::Config;
use home_mcp::home::Secret;
use home_mcp::mcp::person::Confirmations;
use home_mcp::mcp::{Handler, LogLevel, Peer, PeerHandle, RequestContext, RpcError};
use home_mcp::sim::DEMO_VISU_PASSWORD;
use home_mcp::tools::HomeTools;

const ALARM: &str = "1d5c3c5b-0225-5e8d-ffff504f94d0e5a1";

/// How the fake client answers `elicitation/create`.
#[derive(Clone, Copy)]
enum Answer {
    Accept,
    AcceptNo,
    Decline,
    Cancel,
    Fail,
}

/// A client: records notifications and elicitation requests, answers as told.
struct FakePeer {
    answer: Answer,
    notes: Mutex<Vec<(String, Value)>>,
    asked: Mutex<Vec<Value>>,
}

impl Peer for FakePeer {
    fn notify(&self, method: &str, params: Value) {
        self.notes.lock().unwrap().push((method.into(), params));
    }

    fn request(&self, method: &str, params: Value, _: Duration) -> Result<Value, RpcError> {
        assert_eq!(method, "elicitation/create");
        self.asked.lock().unwrap().push(params);
        match self.answer {
            Answer::Accept => Ok(json!({"action": "accept", "content": {"confirm": true}})),
            Answer::AcceptNo => Ok(json!({"action": "accept", "content": {"confirm": false}})),
            Answer::Decline => Ok(json!({"action": "decline"})),
            Answer::Cancel => Ok(json!({"action": "cancel"})),
            Answer::Fail => Err(RpcError::internal("no answer")),
        }
    }
}

impl FakePeer {
    fn new(answer: Answer) -> Arc<Self> {
        Arc::new(FakePeer {
            answer,
            notes: Mutex::new(Vec::new()),
            asked: Mutex::new(Vec::new()),
        })
    }

    fn notes(&self, method: &str) -> Vec<Value> {
        self.notes
            .lock()
            .unwrap()
            .iter()
            .filter(|(m, _)| m == method)
            .map(|(_, p)| p.clone())
            .collect()
    }

    fn asked(&self) -> Vec<Value> {
        self.asked.lock().unwrap().clone()
    }
}

/// A request context with `peer`; `elicit`: the client declared elicitation.
fn ctx(peer: &Arc<FakePeer>, elicit: bool) -> RequestContext {
    RequestContext {
        protocol_version: "2025-06-18".into(),
        transport: "test",
        peer: Some(PeerHandle(peer.clone())),
        client_capabilities: if elicit {
            json!({"elicitation": {}})
        } else {
            json!({})
        },
        ..RequestContext::default()
    }
    // The person behind the request, whom the MCP core asks (as it does for every
    // `tools/call`): the confirmation rounds live in the MCP layer, not in the tools.
    .with_person(&Arc::new(Confirmations::new(Duration::from_secs(120))))
}

/// Calls a tool in `ctx` that must succeed; returns `data`.
fn ok_in(tools: &HomeTools, ctx: &RequestContext, name: &str, args: Value) -> Value {
    let Value::Object(map) = args else {
        panic!("args must be an object")
    };
    let r = tools.call_tool(name, map, ctx).expect("no JSON-RPC error");
    let t = text(&r);
    assert!(!r.is_error, "{name} failed: {t}");
    assert_eq!(r.structured_content.as_ref(), Some(&t));
    t["data"].clone()
}

/// Calls a tool in `ctx` that must fail with a tool error; returns `error`.
fn error_in(tools: &HomeTools, ctx: &RequestContext, name: &str, args: Value) -> Value {
    let Value::Object(map) = args else {
        panic!("args must be an object")
    };
    let r = tools.call_tool(name, map, ctx).expect("no JSON-RPC error");
    let t = text(&r);
    assert!(r.is_error, "{name} should fail: {t}");
    t["error"].clone()
}

fn demo_with_pin() -> (App, HomeTools) {
    let config = Config {
        visu_password: Some(Secret::new(DEMO_VISU_PASSWORD)),
        ..test_config()
    };
    let app = App::start(&config, true).expect("demo starts");
    let tools = HomeTools::new(app.house.clone());
    (app, tools)
}

fn kitchen_light(app: &App) -> String {
    let home = app.house.home();
    home.resolve_control("Deckenlicht", Some("Küche"), &|_| true)
        .unwrap()
        .uuid
        .clone()
}

fn all_status(data: &Value, status: &str) -> bool {
    let r = data["results"].as_array().unwrap();
    !r.is_empty() && r.iter().all(|r| r["status"] == status)
}

#[test]
fn without_elicitation_house_wide_lights_answer_the_dry_run() {
    let (app, tools) = demo();
    let light = kitchen_light(&app);
    ok(
        &tools,
        "control_all_lights",
        json!({"action": "on", "confirm": true}),
    );
    assert_eq!(sim(&app).state(&light, "active"), Some(1.0));

    // A key whose owner lets the model confirm, without confirm: true: the dry run.
    let peer = FakePeer::new(Answer::Accept);
    for data in [
        ok(&tools, "control_all_lights", json!({"action": "off"})),
        ok(
            &tools,
            "control_lights_unified",
            json!({"scope": "system", "action": "off"}),
        ),
        ok(
            &tools,
            "control_lights_unified",
            json!({"scope": "system", "action": "off", "confirm": false}),
        ),
    ] {
        assert_eq!(data["dry_run"], true, "{data}");
        assert_eq!(data["confirmation_required"], true);
        assert!(data.get("cancelled").is_none());
        let m = data["confirmation"].as_str().unwrap();
        assert!(m.contains("Switch off") && m.contains("lights in"), "{m}");
        assert!(
            !m.contains("confirm: true"),
            "results never tell the model: {m}"
        );
        assert!(all_status(&data, "planned"), "{data}");
        assert!(data["summary"]["planned"].as_u64().unwrap() > 3);
    }
    // A client without elicitation, whose key does not let the model confirm: refused,
    // confirm: true or not, saying what needs a person and what the owner can change.
    for args in [
        json!({"action": "off"}),
        json!({"action": "off", "confirm": true}),
    ] {
        let e = error_in(&tools, &ctx(&peer, false), "control_all_lights", args);
        assert_eq!(e["code"], "HUMAN_CONFIRMATION_REQUIRED", "{e}");
        let m = e["message"].as_str().unwrap();
        assert!(m.starts_with("nothing was sent"), "{m}");
        assert!(
            m.contains("elicitation") && m.contains("--model-confirms yes"),
            "{m}"
        );
        assert!(!m.contains("confirm: true"), "{m}");
    }
    assert!(
        peer.asked().is_empty(),
        "no elicitation without the capability"
    );
    assert_eq!(
        sim(&app).state(&light, "active"),
        Some(1.0),
        "nothing was sent"
    );

    // Room scope needs no confirmation.
    let data = ok(
        &tools,
        "control_lights_unified",
        json!({"scope": "room", "target": "Küche", "action": "off"}),
    );
    assert_eq!(data["dry_run"], false);
    assert!(data.get("confirmation_required").is_none());
    assert_eq!(sim(&app).state(&light, "active"), Some(0.0));
}

#[test]
fn accepted_elicitation_acts() {
    let (app, tools) = demo();
    let light = kitchen_light(&app);
    ok(
        &tools,
        "control_all_lights",
        json!({"action": "on", "confirm": true}),
    );
    let peer = FakePeer::new(Answer::Accept);
    let data = ok_in(
        &tools,
        &ctx(&peer, true),
        "control_all_lights",
        json!({"action": "off"}),
    );
    assert_eq!(data["dry_run"], false);
    assert!(data.get("confirmation_required").is_none());
    assert!(all_status(&data, "ok"), "{data}");
    assert_eq!(sim(&app).state(&light, "active"), Some(0.0));
    let asked = peer.asked();
    assert_eq!(asked.len(), 1);
    let m = asked[0]["message"].as_str().unwrap();
    let n = data["summary"]["total"].as_u64().unwrap();
    assert!(m.starts_with(&format!("Switch off {n} lights in ")), "{m}");
    assert!(m.contains("Küche"), "{m}");
    assert_eq!(
        asked[0]["requestedSchema"]["properties"]["confirm"]["type"],
        "boolean"
    );
    assert_eq!(asked[0]["requestedSchema"]["required"], json!(["confirm"]));

    assert_eq!(data["confirmed_by"], "user (elicitation)");

    // confirm: true from the model does not count where the user can be asked: declined,
    // nothing is sent.
    let peer = FakePeer::new(Answer::Decline);
    let data = ok_in(
        &tools,
        &ctx(&peer, true),
        "control_all_lights",
        json!({"action": "on", "confirm": true}),
    );
    assert_eq!(data["cancelled"], true);
    assert_eq!(peer.asked().len(), 1);
    assert_eq!(sim(&app).state(&light, "active"), Some(0.0));
}

#[test]
fn declined_or_cancelled_elicitation_does_nothing() {
    let (app, tools) = demo();
    let light = kitchen_light(&app);
    ok(
        &tools,
        "control_all_lights",
        json!({"action": "on", "confirm": true}),
    );
    for answer in [Answer::Decline, Answer::Cancel, Answer::AcceptNo] {
        let peer = FakePeer::new(answer);
        let data = ok_in(
            &tools,
            &ctx(&peer, true),
            "control_all_lights",
            json!({"action": "off"}),
        );
        assert_eq!(data["cancelled"], true, "{data}");
        assert_eq!(data["dry_run"], true);
        assert!(data.get("confirmation_required").is_none());
        assert!(data["confirmation"]
            .as_str()
            .unwrap()
            .starts_with("Nothing was done"));
        assert!(all_status(&data, "planned"));
        assert_eq!(peer.asked().len(), 1);
        assert_eq!(sim(&app).state(&light, "active"), Some(1.0));
    }
    // A client that does not answer: nothing is done, with the reason.
    let peer = FakePeer::new(Answer::Fail);
    let data = ok_in(
        &tools,
        &ctx(&peer, true),
        "control_all_lights",
        json!({"action": "off"}),
    );
    assert_eq!(data["cancelled"], true, "{data}");
    assert!(data["confirmation"]
        .as_str()
        .unwrap()
        .contains("did not arrive"));
    assert_eq!(sim(&app).state(&light, "active"), Some(1.0));
}

#[test]
fn house_wide_blinds_ask_too() {
    let (_app, tools) = demo();
    for (name, args) in [
        ("control_all_rolladen", json!({"action": "down"})),
        (
            "control_rolladen_unified",
            json!({"scope": "system", "action": "down"}),
        ),
        (
            "control_rolladen_unified",
            json!({"scope": "all", "action": "down"}),
        ),
    ] {
        let data = ok(&tools, name, args);
        assert_eq!(data["confirmation_required"], true, "{name}");
        assert!(all_status(&data, "planned"));
        let m = data["confirmation"].as_str().unwrap();
        assert!(m.contains("Close") && m.contains("blinds"), "{m}");
    }
    let peer = FakePeer::new(Answer::Accept);
    let data = ok_in(
        &tools,
        &ctx(&peer, true),
        "control_all_rolladen",
        json!({"action": "up"}),
    );
    assert!(all_status(&data, "ok"), "{data}");
    assert!(peer.asked()[0]["message"]
        .as_str()
        .unwrap()
        .starts_with("Open "));
}

#[test]
fn disarm_asks_before_it_disarms() {
    let (app, tools) = demo_with_pin();
    ok(
        &tools,
        "arm_alarm",
        json!({"alarm": ALARM, "delayed": false, "confirm": true}),
    );
    assert_eq!(sim(&app).state(ALARM, "armed"), Some(1.0));

    let data = ok(&tools, "disarm_alarm", json!({"alarm": ALARM}));
    assert_eq!(data["dry_run"], true);
    assert_eq!(data["confirmation_required"], true);
    assert_eq!(data["action"], "disarm");
    assert_eq!(data["alarm"]["uuid"], ALARM);
    assert_eq!(data["armed"], true);
    assert!(data["confirmation"]
        .as_str()
        .unwrap()
        .contains("Disarm the alarm"));
    assert_eq!(sim(&app).state(ALARM, "armed"), Some(1.0));

    let peer = FakePeer::new(Answer::Decline);
    let data = ok_in(
        &tools,
        &ctx(&peer, true),
        "disarm_alarm",
        json!({"alarm": ALARM}),
    );
    assert_eq!(data["cancelled"], true);
    assert_eq!(sim(&app).state(ALARM, "armed"), Some(1.0));
    let m = peer.asked()[0]["message"].as_str().unwrap().to_string();
    assert!(m.contains("which is armed now"), "{m}");

    let peer = FakePeer::new(Answer::Accept);
    let data = ok_in(
        &tools,
        &ctx(&peer, true),
        "disarm_alarm",
        json!({"alarm": ALARM}),
    );
    assert!(data.get("dry_run").is_none());
    assert_eq!(sim(&app).state(ALARM, "armed"), Some(0.0));

    assert_eq!(data["confirmed_by"], "user (elicitation)");

    // arm_alarm asks too, naming the alarm and how it arms.
    let peer = FakePeer::new(Answer::Accept);
    ok_in(
        &tools,
        &ctx(&peer, true),
        "arm_alarm",
        json!({"alarm": ALARM, "delayed": false}),
    );
    let m = peer.asked()[0]["message"].as_str().unwrap().to_string();
    assert!(m.starts_with("Arm at once the alarm"), "{m}");
    assert_eq!(sim(&app).state(ALARM, "armed"), Some(1.0));
}

#[test]
fn large_batches_ask_small_ones_do_not() {
    let (app, tools) = demo();
    let light = kitchen_light(&app);
    let ops: Vec<Value> = (0..11)
        .map(|i| json!({"device": light, "action": if i % 2 == 0 { "on" } else { "off" }}))
        .collect();
    let data = ok(
        &tools,
        "control_multiple_devices",
        json!({"operations": ops}),
    );
    assert_eq!(data["confirmation_required"], true);
    assert!(data["confirmation"]
        .as_str()
        .unwrap()
        .contains("11 operations"));
    assert!(all_status(&data, "planned"));
    let data = ok(
        &tools,
        "control_multiple_devices",
        json!({"operations": ops, "confirm": true}),
    );
    assert!(all_status(&data, "ok"), "{data}");
    assert_eq!(sim(&app).state(&light, "active"), Some(1.0));
    let data = ok(
        &tools,
        "control_multiple_devices",
        json!({"operations": ops[..10].to_vec()}),
    );
    assert!(data.get("confirmation_required").is_none());
    assert_eq!(data["dry_run"], false);
}

#[test]
fn progress_and_log_messages_for_every_write() {
    let (_app, tools) = demo();
    let peer = FakePeer::new(Answer::Accept);
    let mut c = ctx(&peer, false);
    c.progress_token = Some(json!("p1"));
    c.log_level = Some(LogLevel::Info);
    let data = ok_in(
        &tools,
        &c,
        "control_room_lights",
        json!({"room": "Küche", "action": "off"}),
    );
    let n = data["summary"]["total"].as_u64().unwrap();
    let all = peer.notes("notifications/progress");
    // One per command sent, then the wait for the house: one each time more devices are
    // confirmed, counting on from the commands ("2 of 3 lights confirmed").
    assert!(all.len() as u64 >= n, "{all:?}");
    let (progress, waiting) = all.split_at(n as usize);
    for (i, p) in progress.iter().enumerate() {
        assert_eq!(p["progressToken"], "p1");
        assert_eq!(p["progress"], json!((i + 1) as f64));
        assert_eq!(p["total"], json!(n as f64));
    }
    let mut last = n as f64;
    for p in waiting {
        assert_eq!(p["progressToken"], "p1");
        let now = p["progress"].as_f64().unwrap();
        assert!(now > last, "progress grows: {all:?}");
        last = now;
        assert!(
            p["message"].as_str().unwrap().ends_with("confirmed"),
            "{all:?}"
        );
    }
    let messages: Vec<&str> = progress
        .iter()
        .map(|p| p["message"].as_str().unwrap())
        .collect();
    assert!(messages.contains(&"Küche: Deckenlicht off"), "{messages:?}");
    let logs = peer.notes("notifications/message");
    let writes = data["summary"]["succeeded"].as_u64().unwrap()
        + data["summary"]["failed"].as_u64().unwrap();
    assert!(writes > 0);
    assert!(logs.len() as u64 >= writes, "{logs:?}");
    let l = logs
        .iter()
        .find(|l| l["data"]["device"] == "Deckenlicht")
        .unwrap();
    assert_eq!(l["level"], "info");
    assert_eq!(l["logger"], "home-mcp");
    assert_eq!(l["data"]["event"], "write");
    assert_eq!(l["data"]["room"], "Küche");
    assert_eq!(l["data"]["outcome"], "ok");
    assert_eq!(l["data"]["action"], "off");

    // A dry run sends nothing: no progress, no write log.
    let peer = FakePeer::new(Answer::Accept);
    let mut c = ctx(&peer, false);
    c.progress_token = Some(json!(7));
    c.log_level = Some(LogLevel::Debug);
    ok_in(
        &tools,
        &c,
        "control_room_lights",
        json!({"room": "Küche", "action": "on", "dry_run": true}),
    );
    assert!(peer.notes("notifications/progress").is_empty());
    assert!(peer.notes("notifications/message").is_empty());

    // Log level above info: no write messages; no token: no progress.
    let peer = FakePeer::new(Answer::Accept);
    let mut c = ctx(&peer, false);
    c.log_level = Some(LogLevel::Warning);
    ok_in(
        &tools,
        &c,
        "control_room_lights",
        json!({"room": "Küche", "action": "on"}),
    );
    assert!(peer.notes("notifications/progress").is_empty());
    assert!(peer.notes("notifications/message").is_empty());
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[test]
fn workflows_with_security_steps_ask_and_report_progress_per_step() {
    let (app, tools) = demo_with_pin();
    ok(
        &tools,
        "arm_alarm",
        json!({"alarm": ALARM, "delayed": false, "confirm": true}),
    );
    ok(
        &tools,
        "create_workflow",
        json!({"name": "Heimkommen", "steps": [
            {"tool": "disarm_alarm", "arguments": {"alarm": ALARM}},
            {"tool": "control_room_lights", "arguments": {"room": "Küche", "action": "on"}}
        ]}),
    );
    ok(
        &tools,
        "create_workflow",
        json!({"name": "Lesen", "steps": [{"tool": "list_rooms"}, {"tool": "get_home_summary"}]}),
    );

    let data = ok(&tools, "execute_workflow", json!({"name": "Heimkommen"}));
    assert_eq!(data["dry_run"], true);
    assert_eq!(data["confirmation_required"], true);
    let m = data["confirmation"].as_str().unwrap();
    assert!(
        m.contains("Heimkommen") && m.contains("disarm_alarm"),
        "{m}"
    );
    assert_eq!(data["steps"][0]["status"], "planned");
    assert_eq!(sim(&app).state(ALARM, "armed"), Some(1.0));

    let peer = FakePeer::new(Answer::Decline);
    let data = ok_in(
        &tools,
        &ctx(&peer, true),
        "execute_workflow",
        json!({"name": "Heimkommen"}),
    );
    assert_eq!(data["cancelled"], true);
    assert_eq!(sim(&app).state(ALARM, "armed"), Some(1.0));

    let peer = FakePeer::new(Answer::Accept);
    let mut c = ctx(&peer, true);
    c.progress_token = Some(json!("wf"));
    let data = ok_in(
        &tools,
        &c,
        "execute_workflow",
        json!({"name": "Heimkommen"}),
    );
    assert_eq!(data["dry_run"], false);
    assert_eq!(data["succeeded"], 2, "{data}");
    assert_eq!(sim(&app).state(ALARM, "armed"), Some(0.0));
    assert_eq!(peer.asked().len(), 1, "the steps do not ask again");
    let progress = peer.notes("notifications/progress");
    assert_eq!(
        progress.len(),
        2,
        "one per step, none from the steps' own batches"
    );
    assert_eq!(progress[1]["progress"], json!(2.0));
    assert_eq!(progress[1]["total"], json!(2.0));
    assert_eq!(progress[0]["message"], "step 0 disarm_alarm: success");

    // A read-only workflow needs no confirmation.
    let peer = FakePeer::new(Answer::Decline);
    let r = tools
        .call_tool(
            "execute_workflow",
            args(json!({"name": "Lesen"})),
            &ctx(&peer, true),
        )
        .unwrap();
    assert!(!r.is_error);
    assert!(peer.asked().is_empty());
    let t = text(&r);
    assert_eq!(t["data"]["succeeded"], 2);

    // The demo workflow reports progress per step.
    let peer = FakePeer::new(Answer::Accept);
    let mut c = ctx(&peer, false);
    c.progress_token = Some(json!(1));
    let data = ok_in(&tools, &c, "execute_workflow_demo", json!({}));
    let total = data["total"].as_u64().unwrap();
    assert_eq!(peer.notes("notifications/progress").len() as u64, total);
}

#[test]
fn confirm_is_declared_where_it_matters() {
    let (_app, tools) = demo();
    let list = tools.list_tools();
    for name in [
        "arm_alarm",
        "disarm_alarm",
        "acknowledge_alarm",
        "control_device",
        "control_all_lights",
        "control_all_rolladen",
        "control_lights_unified",
        "control_rolladen_unified",
        "control_room_devices",
        "control_multiple_devices",
        "execute_workflow",
    ] {
        let t = list.iter().find(|t| t.name == name).unwrap();
        assert_eq!(
            t.input_schema["properties"]["confirm"]["type"], "boolean",
            "{name}"
        );
        assert!(t.description.contains("confirm"), "{name}");
        assert!(!t.description.contains("confirm: true"), "{name}");
        let data = &t.output_schema.as_ref().unwrap()["properties"]["data"];
        assert_eq!(
            data["properties"]["confirmation_required"]["type"], "boolean",
            "{name}"
        );
        assert_eq!(data["properties"]["cancelled"]["type"], "boolean", "{name}");
    }
    for name in ["control_room_lights", "set_room_temperature"] {
        let t = list.iter().find(|t| t.name == name).unwrap();
        assert!(
            t.input_schema["properties"].get("confirm").is_none(),
            "{name}"
        );
    }
}
