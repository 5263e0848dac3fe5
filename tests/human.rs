//! A human, not the model, confirms what can hurt (issue 20), from outside: the real
//! `home-mcp serve` against a simulated Miniserver, MCP clients over Streamable HTTP that
//! answer the server's `elicitation/create` (accept, decline, cancel, never) or cannot be
//! asked at all. The oracle is what the simulator received: "nothing was sent" is asserted on
//! its request lines; who confirmed is read back from the audit log over the admin API.

use serde_json::{json, Value};

use home_mcp::auth::{ApiKey, Role};
use home_mcp::sim::DEMO_VISU_PASSWORD;

use crate::support::gate::key;
use crate::support::mcp::{McpHttp, McpModern};
use crate::support::net::request;
use crate::support::server::{Miniserver, Served};
use crate::support::sse::{send, Http, BOTH};
use crate::support::wire::sent_commands;
use crate::support::{wait_until, PATIENCE};

const GATE: &str = "1d5c3bf3-021f-5bb5-ffff504f94d0e5a1";
const DRIVEWAY: &str = "1d5c3c20-0222-5cf0-ffff504f94d0e5a1";
const ALARM: &str = "1d5c3c5b-0225-5e8d-ffff504f94d0e5a1";

/// A key of the security role set (read, control, security) named `name`; `doors`: its owner
/// lets it open gates and doors; `model`: lets the model confirm.
fn operator(id: &str, doors: bool, model: bool) -> ApiKey {
    ApiKey {
        permissions: vec!["read".into(), "control".into(), "security".into()],
        open_doors: doors,
        profile: None,
        model_confirms: model,
        ..key(id, Role::Custom)
    }
}

const PLAIN: &str = "homekey_custom_1_aa";
const DOORS: &str = "homekey_custom_2_bb";
const MODEL: &str = "homekey_custom_3_cc";
const ADMIN: &str = "homekey_admin_4_dd";
const BOTH_ALLOWED: &str = "homekey_custom_5_ee";

/// The demo Miniserver and the server with the four keys; confirmations live
/// `lifetime_secs` (and the server waits that long for an answer).
fn serve(lifetime_secs: u64) -> (Miniserver, Served) {
    serve_with(lifetime_secs, "")
}

/// [`serve`] with more configuration (`[risk]`).
fn serve_with(lifetime_secs: u64, extra: &str) -> (Miniserver, Served) {
    let ms = Miniserver::demo();
    let keys = serde_json::to_string(&[
        operator(PLAIN, false, false),
        operator(DOORS, true, false),
        operator(MODEL, false, true),
        key(ADMIN, Role::Admin),
        operator(BOTH_ALLOWED, true, true),
    ])
    .unwrap();
    let served = Served::start(
        &ms,
        &format!(
            "[server]\nconfirmation_lifetime_secs = {lifetime_secs}\n[auth]\nsecurity_level = \"staging\"\n{extra}"
        ),
        &[
            ("HOME_KEY_BACKEND", "env"),
            ("HOME_API_KEYS", &keys),
            ("HOME_VISU_PASS", DEMO_VISU_PASSWORD),
        ],
    );
    (ms, served)
}

/// How the client answers the server's questions.
#[derive(Clone, Copy, Debug)]
enum Reply {
    Accept,
    /// Accepts the form but answers "no".
    AcceptNo,
    Decline,
    Cancel,
    /// Never answers (the server gives up after the confirmation's lifetime).
    Never,
}

impl Reply {
    fn result(self) -> Option<Value> {
        match self {
            Reply::Accept => Some(json!({"action": "accept", "content": {"confirm": true}})),
            Reply::AcceptNo => Some(json!({"action": "accept", "content": {"confirm": false}})),
            Reply::Decline => Some(json!({"action": "decline"})),
            Reply::Cancel => Some(json!({"action": "cancel"})),
            Reply::Never => None,
        }
    }
}

/// A session of `key`, declaring elicitation when `elicit`.
fn client(served: &Served, key: &str, elicit: bool) -> McpHttp {
    let caps = if elicit {
        json!({"elicitation": {"form": {}}})
    } else {
        json!({})
    };
    McpHttp::connect_with(served.addr, Some(key), "2025-11-25", caps)
}

/// What one tool call came to: the JSON-RPC answer and the questions the server asked.
struct Called {
    answer: Value,
    asked: Vec<Value>,
}

impl Called {
    /// The result envelope: `structuredContent`, or the text content's JSON (tool errors).
    fn envelope(&self) -> Value {
        envelope_of(&self.answer)
    }
}

fn envelope_of(answer: &Value) -> Value {
    let r = &answer["result"];
    if r["structuredContent"].is_object() {
        return r["structuredContent"].clone();
    }
    r["content"][0]["text"]
        .as_str()
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or(Value::Null)
}

/// Sends `tools/call` (`id`) streaming, and answers each `elicitation/create` with `reply`
/// as its own POST, until the call's answer arrives.
fn call(c: &McpHttp, id: u64, tool: &str, args: Value, reply: Reply) -> Called {
    let mut s = open_call(c, id, tool, args);
    let mut asked = Vec::new();
    let answer = read_answer(&mut s, id, |q| {
        asked.push(q.clone());
        if let Some(result) = reply.result() {
            answer_question(c, &q["id"], result);
        }
    });
    Called { answer, asked }
}

fn open_call(c: &McpHttp, id: u64, tool: &str, args: Value) -> Http {
    let session = c.session.clone().expect("a session");
    let key = c.key.clone().expect("a key");
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": {"name": tool, "arguments": args}});
    send(
        c.addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", BOTH),
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", &c.version),
            ("X-API-Key", &key),
        ],
        body.to_string().as_bytes(),
    )
}

/// Reads the answer with `id` from a JSON or SSE reply, handing every server request on the
/// way to `on_question`.
fn read_answer(s: &mut Http, id: u64, mut on_question: impl FnMut(&Value)) -> Value {
    assert_eq!(s.status, 200);
    if s.header("content-type")
        .is_some_and(|t| t.starts_with("application/json"))
    {
        while s.fill() {}
        return serde_json::from_str(&s.text).expect("a JSON answer");
    }
    loop {
        let e = s
            .next_data()
            .unwrap_or_else(|| panic!("the stream ended without the answer to {id}"));
        let v = e.json();
        if v["method"] == "elicitation/create" {
            on_question(&v);
        } else if v["id"] == id && v.get("method").is_none() {
            return v;
        }
    }
}

/// POSTs the client's answer to the server's request `rid`.
fn answer_question(c: &McpHttp, rid: &Value, result: Value) {
    let r = c.post(&json!({"jsonrpc": "2.0", "id": rid, "result": result}));
    assert_eq!(r.status, 202, "the answer is taken: {r:?}");
}

/// The commands the simulator received for `uuid` (`["open"]`).
fn sent(ms: &Miniserver, uuid: &str) -> Vec<String> {
    sent_commands(&ms.sim, uuid)
}

/// The audit rows of `operation`, newest first.
fn audit(served: &Served, operation: &str) -> Vec<Value> {
    let r = request(
        served.addr,
        "GET",
        &format!("/admin/api/audit?operation={operation}"),
        &[format!("X-API-Key: {ADMIN}")],
        "",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    v["entries"].as_array().unwrap().clone()
}

/// The non-null `confirmed_by` fields of audit `rows` (see [`audit`]), in order.
fn confirmed_by(rows: &[Value]) -> Vec<&Value> {
    rows.iter()
        .map(|e| &e["confirmed_by"])
        .filter(|c| !c.is_null())
        .collect()
}

/// Whether any light-switching `off` command (`/jdev/sps/io/<uuid>/off`) reached the
/// simulated Miniserver, read from its request log.
fn lights_switched_off(ms: &Miniserver) -> bool {
    ms.sim
        .requests()
        .iter()
        .any(|l| l.contains("/jdev/sps/io/") && l.contains("/off"))
}

/// Asserts that `answer` is the JSON-RPC error -32602 whose `details` say the confirmation
/// (or its `requestState`) expired.
fn assert_expired(answer: &Value) {
    let a = answer;
    assert_eq!(a["error"]["code"], -32602, "{a}");
    assert!(
        a["error"]["data"]["details"]
            .as_str()
            .is_some_and(|d| d.contains("expired")),
        "{a}"
    );
}

fn open_gate() -> Value {
    json!({"device": GATE, "action": "on"})
}

#[test]
fn a_gate_opens_only_after_the_user_accepts() {
    let (ms, served) = serve(120);

    // A key whose owner does not allow opening: refused, nobody asked, nothing sent.
    let plain = client(&served, PLAIN, true);
    let r = call(&plain, 1, "control_device", open_gate(), Reply::Accept);
    assert_eq!(r.answer["result"]["isError"], true, "{}", r.answer);
    assert_eq!(r.envelope()["error"]["code"], "INSUFFICIENT_PERMISSIONS");
    assert!(r.envelope()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("--open-doors yes"));
    assert!(r.asked.is_empty());

    // Allowed for the key: a person is asked, naming the gate, its room and the action.
    let doors = client(&served, DOORS, true);
    for (id, reply) in [
        (2, Reply::Decline),
        (3, Reply::Cancel),
        (4, Reply::AcceptNo),
    ] {
        let r = call(
            &doors,
            id,
            "control_device",
            json!({"device": GATE, "action": "on", "confirm": true}),
            reply,
        );
        assert_eq!(r.asked.len(), 1, "{reply:?}: confirm: true does not count");
        assert_eq!(
            r.envelope()["data"]["cancelled"],
            true,
            "{reply:?}: {}",
            r.answer
        );
        assert!(sent(&ms, GATE).is_empty(), "{reply:?}: nothing was sent");
    }
    let r = call(&doors, 5, "control_device", open_gate(), Reply::Accept);
    assert_ne!(r.answer["result"]["isError"], true, "{}", r.answer);
    let q = &r.asked[0]["params"];
    let message = q["message"].as_str().unwrap();
    assert_eq!(message, "Open Garagentor (Garage)?");
    assert_eq!(
        q["requestedSchema"]["properties"]["confirm"]["type"],
        "boolean"
    );
    assert_eq!(r.envelope()["data"]["confirmed_by"], "user (elicitation)");
    assert_eq!(sent(&ms, GATE), ["open"], "sent once, after the answer");

    // Closing needs nobody.
    let r = call(
        &doors,
        6,
        "control_device",
        json!({"device": GATE, "action": "off"}),
        Reply::Decline,
    );
    assert!(r.asked.is_empty());
    assert_eq!(sent(&ms, GATE), ["open", "close"]);

    // The audit log says who confirmed the opening, and nobody for the closing.
    let rows = audit(&served, "control_device");
    let confirmed = confirmed_by(&rows);
    assert_eq!(confirmed, [&json!("user (elicitation)")], "{rows:?}");
}

#[test]
fn dry_run_says_what_would_be_sent_and_sends_nothing() {
    let (ms, served) = serve(120);
    let doors = client(&served, DOORS, true);
    let r = call(
        &doors,
        1,
        "control_device",
        json!({"device": GATE, "action": "on", "dry_run": true}),
        Reply::Accept,
    );
    let data = &r.envelope()["data"].clone();
    assert_eq!(data["dry_run"], true, "{}", r.answer);
    assert_eq!(data["command"], "open");
    assert_eq!(data["confirmation_required"], true);
    assert!(r.asked.is_empty());
    assert!(sent(&ms, GATE).is_empty());
}

#[test]
fn a_client_that_cannot_ask_is_refused_and_nothing_is_sent() {
    let (ms, served) = serve(120);
    let c = client(&served, DOORS, false);
    for (id, tool, args) in [
        (1, "control_device", open_gate()),
        (
            2,
            "control_device",
            json!({"device": GATE, "action": "on", "confirm": true}),
        ),
        (3, "disarm_alarm", json!({"alarm": ALARM, "confirm": true})),
        (4, "arm_alarm", json!({"alarm": ALARM, "confirm": true})),
        (
            5,
            "control_all_lights",
            json!({"action": "off", "confirm": true}),
        ),
    ] {
        let r = call(&c, id, tool, args, Reply::Accept);
        assert_eq!(r.answer["result"]["isError"], true, "{tool}: {}", r.answer);
        let e = &r.envelope()["error"];
        assert_eq!(e["code"], "HUMAN_CONFIRMATION_REQUIRED", "{tool}: {e}");
        let m = e["message"].as_str().unwrap();
        assert!(m.contains("elicitation"), "{m}");
        assert!(
            !m.contains("confirm: true"),
            "results never tell the model: {m}"
        );
    }
    assert!(sent(&ms, GATE).is_empty());
    assert!(sent(&ms, ALARM).is_empty());
    assert!(!lights_switched_off(&ms), "no light was switched");
}

#[test]
fn the_alarm_arms_and_disarms_only_after_the_user_accepts() {
    let (ms, served) = serve(120);
    let c = client(&served, PLAIN, true);
    // confirm: true alone: asked anyway; declined, nothing is sent.
    let r = call(
        &c,
        1,
        "arm_alarm",
        json!({"alarm": ALARM, "delayed": false, "confirm": true}),
        Reply::Decline,
    );
    assert_eq!(r.asked.len(), 1);
    assert!(sent(&ms, ALARM).is_empty(), "{}", r.answer);

    let r = call(
        &c,
        2,
        "arm_alarm",
        json!({"alarm": ALARM, "delayed": false}),
        Reply::Accept,
    );
    assert_ne!(r.answer["result"]["isError"], true, "{}", r.answer);
    let m = r.asked[0]["params"]["message"].as_str().unwrap();
    assert!(
        m.starts_with("Arm at once the alarm Alarmanlage (Zentral)"),
        "{m}"
    );
    assert_eq!(sent(&ms, ALARM).len(), 1, "armed once");

    let r = call(
        &c,
        3,
        "disarm_alarm",
        json!({"alarm": ALARM}),
        Reply::Cancel,
    );
    assert_eq!(r.envelope()["data"]["cancelled"], true);
    assert_eq!(sent(&ms, ALARM).len(), 1, "not disarmed");
    let r = call(
        &c,
        4,
        "disarm_alarm",
        json!({"alarm": ALARM}),
        Reply::Accept,
    );
    assert!(r.asked[0]["params"]["message"]
        .as_str()
        .unwrap()
        .contains("which is armed now"));
    assert_eq!(sent(&ms, ALARM).len(), 2, "disarmed after the answer");
    let rows = audit(&served, "disarm_alarm");
    assert_eq!(rows[0]["confirmed_by"], "user (elicitation)", "{rows:?}");
    assert!(rows[1]["confirmed_by"].is_null());
}

#[test]
fn an_unanswered_question_expires_and_a_late_or_replayed_answer_sends_nothing() {
    let (ms, served) = serve(2);
    let c = client(&served, DOORS, true);
    // Never answered: after the confirmation's lifetime the call ends, nothing sent.
    let r = call(&c, 1, "control_device", open_gate(), Reply::Never);
    assert_eq!(r.asked.len(), 1);
    assert_eq!(r.envelope()["data"]["cancelled"], true, "{}", r.answer);
    // The answer arrives late: taken by nobody.
    let late = &r.asked[0]["id"];
    let resp = c.post(&json!({"jsonrpc": "2.0", "id": late,
                              "result": {"action": "accept", "content": {"confirm": true}}}));
    assert_eq!(resp.status, 202);
    assert!(sent(&ms, GATE).is_empty());

    // An accepted answer of one call replayed for another control: the new question is
    // still open; declined, nothing is sent to the driveway gate.
    let r = call(&c, 2, "control_device", open_gate(), Reply::Accept);
    assert_eq!(sent(&ms, GATE), ["open"], "{}", r.answer);
    let old = r.asked[0]["id"].clone();
    let mut s = open_call(
        &c,
        3,
        "control_device",
        json!({"device": DRIVEWAY, "action": "on"}),
    );
    let answer = read_answer(&mut s, 3, |q| {
        answer_question(
            &c,
            &old,
            json!({"action": "accept", "content": {"confirm": true}}),
        );
        answer_question(&c, &q["id"], json!({"action": "decline"}));
    });
    assert_eq!(
        answer["result"]["structuredContent"]["data"]["cancelled"], true,
        "{answer}"
    );
    assert!(sent(&ms, DRIVEWAY).is_empty());

    // Another caller's answer is not taken for this caller's question.
    let other = client(&served, PLAIN, true);
    let mut s = open_call(
        &c,
        4,
        "control_device",
        json!({"device": DRIVEWAY, "action": "on"}),
    );
    let answer = read_answer(&mut s, 4, |q| {
        answer_question(
            &other,
            &q["id"],
            json!({"action": "accept", "content": {"confirm": true}}),
        );
        answer_question(&c, &q["id"], json!({"action": "decline"}));
    });
    assert_eq!(
        answer["result"]["structuredContent"]["data"]["cancelled"], true,
        "{answer}"
    );
    assert!(sent(&ms, DRIVEWAY).is_empty());
}

#[test]
fn a_key_can_let_the_model_confirm_house_wide_and_alarm_but_never_doors() {
    let (ms, served) = serve(120);
    let c = client(&served, MODEL, false);
    // Without confirm: the dry run, nothing sent, no instruction to the model.
    let r = call(&c, 1, "arm_alarm", json!({"alarm": ALARM}), Reply::Accept);
    let data = &r.envelope()["data"].clone();
    assert_eq!(data["confirmation_required"], true, "{}", r.answer);
    assert!(!data["confirmation"]
        .as_str()
        .unwrap()
        .contains("confirm: true"));
    assert!(sent(&ms, ALARM).is_empty());
    // With it: sent, recorded as the model's confirmation.
    let r = call(
        &c,
        2,
        "arm_alarm",
        json!({"alarm": ALARM, "confirm": true}),
        Reply::Accept,
    );
    assert_eq!(r.envelope()["data"]["confirmed_by"], "model (key allows)");
    assert_eq!(sent(&ms, ALARM).len(), 1);
    let rows = audit(&served, "arm_alarm");
    assert_eq!(rows[0]["confirmed_by"], "model (key allows)", "{rows:?}");

    // House-wide too.
    let r = call(
        &c,
        3,
        "control_all_lights",
        json!({"action": "off", "confirm": true}),
        Reply::Accept,
    );
    assert_eq!(
        r.envelope()["data"]["confirmed_by"],
        "model (key allows)",
        "{}",
        r.answer
    );

    // Gates and doors: never the model, even where the key may open them.
    let c = client(&served, BOTH_ALLOWED, false);
    let r = call(
        &c,
        4,
        "control_device",
        json!({"device": GATE, "action": "on", "confirm": true}),
        Reply::Accept,
    );
    assert_eq!(
        r.envelope()["error"]["code"],
        "HUMAN_CONFIRMATION_REQUIRED",
        "{}",
        r.answer
    );
    assert!(sent(&ms, GATE).is_empty());
}

#[test]
fn a_control_the_owner_puts_in_a_class_asks_too() {
    const KITCHEN: &str = "1d5c3a92-0209-520e-ffff504f94d0e5a1";
    let (ms, served) = serve_with(120, &format!("[risk]\nhouse_wide = [\"{KITCHEN}\"]\n"));
    let c = client(&served, PLAIN, true);
    let on = json!({"device": KITCHEN, "action": "on"});
    let r = call(&c, 1, "control_device", on.clone(), Reply::Decline);
    assert_eq!(r.asked.len(), 1, "{}", r.answer);
    assert_eq!(r.asked[0]["params"]["message"], "Deckenlicht (Küche): on?");
    assert!(sent(&ms, KITCHEN).is_empty());
    let r = call(&c, 2, "control_device", on, Reply::Accept);
    assert_eq!(
        r.envelope()["data"]["confirmed_by"],
        "user (elicitation)",
        "{}",
        r.answer
    );
    assert_eq!(sent(&ms, KITCHEN), ["on"]);
    // Another light is not in the class: nobody is asked.
    let r = call(
        &c,
        3,
        "control_device",
        json!({"device": "Flurlicht", "action": "on"}),
        Reply::Decline,
    );
    assert!(r.asked.is_empty(), "{}", r.answer);
}

#[test]
fn a_workflow_the_model_confirmed_does_not_open_a_gate() {
    let (ms, served) = serve(120);
    let c = client(&served, BOTH_ALLOWED, false);
    let r = call(
        &c,
        1,
        "create_workflow",
        json!({"name": "Heimkommen", "steps": [
            {"tool": "arm_alarm", "arguments": {"alarm": ALARM, "delayed": false}},
            {"tool": "control_device", "arguments": {"device": GATE, "action": "on"}}
        ]}),
        Reply::Accept,
    );
    assert_ne!(r.answer["result"]["isError"], true, "{}", r.answer);
    let r = call(
        &c,
        2,
        "execute_workflow",
        json!({"name": "Heimkommen", "confirm": true}),
        Reply::Accept,
    );
    let data = r.envelope()["data"].clone();
    assert_eq!(data["confirmed_by"], "model (key allows)", "{}", r.answer);
    assert_eq!(data["steps"][0]["status"], "success", "{data}");
    assert_eq!(data["steps"][1]["status"], "error", "{data}");
    assert_eq!(sent(&ms, ALARM).len(), 1, "the alarm step ran");
    assert!(sent(&ms, GATE).is_empty(), "the gate needs a person");
}

#[test]
fn a_gate_step_of_a_confirmed_workflow_gets_its_own_question() {
    let (ms, served) = serve(120);
    let c = client(&served, DOORS, true);
    call(
        &c,
        1,
        "create_workflow",
        json!({"name": "Ankommen", "steps": [
            {"tool": "arm_alarm", "arguments": {"alarm": ALARM, "delayed": false}},
            {"tool": "control_device", "arguments": {"device": GATE, "action": "on"}}
        ]}),
        Reply::Accept,
    );
    // The user says yes to the workflow, then no to the gate.
    let mut s = open_call(&c, 2, "execute_workflow", json!({"name": "Ankommen"}));
    let mut asked = Vec::new();
    let answer = read_answer(&mut s, 2, |q| {
        asked.push(q["params"]["message"].as_str().unwrap_or("").to_string());
        let reply = if asked.len() == 1 {
            json!({"action": "accept", "content": {"confirm": true}})
        } else {
            json!({"action": "decline"})
        };
        answer_question(&c, &q["id"], reply);
    });
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked[0].starts_with("Run the workflow"), "{asked:?}");
    assert_eq!(asked[1], "Open Garagentor (Garage)?");
    let data = envelope_of(&answer)["data"].clone();
    assert_eq!(data["steps"][0]["status"], "success", "{data}");
    assert_eq!(sent(&ms, ALARM).len(), 1);
    assert!(sent(&ms, GATE).is_empty(), "declined: {data}");
}

/// A MCP 2026-07-28 `tools/call` of `key` (no session) whose `_meta` declares `caps`, with the
/// retry's `requestState` and `inputResponses` when given: the JSON-RPC answer.
fn modern_call(
    served: &Served,
    key: &str,
    caps: Value,
    tool: &str,
    args: Value,
    retry: Option<(&Value, Value)>,
) -> Value {
    let mut params = json!({"name": tool, "arguments": args, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "home-mcp tests", "version": "1"},
    }});
    if let Some((state, responses)) = retry {
        params["requestState"] = state.clone();
        params["inputResponses"] = responses;
    }
    let mut headers = McpModern::headers("tools/call", &params);
    headers.push(format!("X-API-Key: {key}"));
    let r = McpModern::new(served.addr).raw(
        &headers,
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    r.json()
}

/// The answers of a retry: the confirmation question answered with `reply`.
fn responses(reply: Reply) -> Value {
    json!({ "confirm": reply.result().expect("an answer") })
}

/// Asserts that `answer` is an `input_required` result asking one confirmation question
/// (form mode, a boolean `confirm`) with the message `message`; its `requestState`.
fn asked_to_confirm(answer: &Value, message: &str) -> Value {
    let r = &answer["result"];
    assert_eq!(r["resultType"], "input_required", "{answer}");
    let q = &r["inputRequests"]["confirm"];
    assert_eq!(q["method"], "elicitation/create", "{answer}");
    assert_eq!(q["params"]["mode"], "form", "{answer}");
    assert_eq!(q["params"]["message"], message, "{answer}");
    assert_eq!(
        q["params"]["requestedSchema"]["properties"]["confirm"]["type"], "boolean",
        "{answer}"
    );
    assert!(r["requestState"].is_string(), "{answer}");
    r["requestState"].clone()
}

const ELICIT: fn() -> Value = || json!({"elicitation": {}});

#[test]
fn a_2026_client_opens_a_gate_only_after_an_input_required_answer() {
    let (ms, served) = serve(120);
    let ask = |args: Value| modern_call(&served, DOORS, ELICIT(), "control_device", args, None);

    // The first call asks (confirm: true from the model does not count); nothing is sent.
    let args = json!({"device": GATE, "action": "on", "confirm": true});
    let state = asked_to_confirm(&ask(args.clone()), "Open Garagentor (Garage)?");
    assert!(sent(&ms, GATE).is_empty());

    // Declined, cancelled, "no": the same call comes back cancelled, nothing sent.
    for reply in [Reply::Decline, Reply::Cancel, Reply::AcceptNo] {
        let state = asked_to_confirm(&ask(args.clone()), "Open Garagentor (Garage)?");
        let a = modern_call(
            &served,
            DOORS,
            ELICIT(),
            "control_device",
            args.clone(),
            Some((&state, responses(reply))),
        );
        assert_eq!(a["result"]["resultType"], "complete", "{reply:?}: {a}");
        assert_eq!(envelope_of(&a)["data"]["cancelled"], true, "{reply:?}: {a}");
        assert!(sent(&ms, GATE).is_empty(), "{reply:?}: nothing was sent");
    }

    // The accepted answer cannot be moved: an altered state, another caller (who may open
    // doors too), other values, another control. Each is refused before the tool runs.
    let mut tampered = state.as_str().unwrap().to_string();
    tampered.push('A');
    let driveway = json!({"device": DRIVEWAY, "action": "on", "confirm": true});
    for (what, key, args, state) in [
        ("tampered", DOORS, args.clone(), json!(tampered)),
        ("another caller", BOTH_ALLOWED, args.clone(), state.clone()),
        (
            "other values",
            DOORS,
            json!({"device": GATE, "action": "on"}),
            state.clone(),
        ),
        ("another control", DOORS, driveway, state.clone()),
    ] {
        let a = modern_call(
            &served,
            key,
            ELICIT(),
            "control_device",
            args,
            Some((&state, responses(Reply::Accept))),
        );
        assert_eq!(a["error"]["code"], -32602, "{what}: {a}");
        assert_eq!(a["id"], 7, "{what}: {a}");
    }
    assert!(sent(&ms, GATE).is_empty());
    assert!(sent(&ms, DRIVEWAY).is_empty());

    // An answer without the state is no confirmation: the question is asked again (and the
    // new question replaces every older one of the same command).
    let a = modern_call(
        &served,
        DOORS,
        ELICIT(),
        "control_device",
        args.clone(),
        Some((&Value::Null, responses(Reply::Accept))),
    );
    let state = asked_to_confirm(&a, "Open Garagentor (Garage)?");
    assert!(sent(&ms, GATE).is_empty());

    // Accepted with its own state: sent once.
    let accepted = Some((&state, responses(Reply::Accept)));
    let a = modern_call(
        &served,
        DOORS,
        ELICIT(),
        "control_device",
        args.clone(),
        accepted.clone(),
    );
    assert_eq!(a["result"]["resultType"], "complete", "{a}");
    assert_ne!(a["result"]["isError"], true, "{a}");
    assert_eq!(
        envelope_of(&a)["data"]["confirmed_by"],
        "user (elicitation)"
    );
    assert_eq!(sent(&ms, GATE), ["open"], "sent once, after the answer");

    // The same retry again: the confirmation was used; nothing more is sent.
    let a = modern_call(&served, DOORS, ELICIT(), "control_device", args, accepted);
    assert_eq!(envelope_of(&a)["data"]["cancelled"], true, "{a}");
    assert_eq!(sent(&ms, GATE), ["open"]);

    let rows = audit(&served, "control_device");
    let outcomes: Vec<&str> = rows.iter().filter_map(|e| e["result"].as_str()).collect();
    assert!(outcomes.contains(&"INPUT_REQUIRED"), "{rows:?}");
    let confirmed = confirmed_by(&rows);
    assert_eq!(confirmed, [&json!("user (elicitation)")], "{rows:?}");
}

#[test]
fn a_newer_question_for_the_same_command_replaces_the_older() {
    let (ms, served) = serve(120);
    let args = json!({"device": GATE, "action": "on"});
    let ask = || {
        modern_call(
            &served,
            DOORS,
            ELICIT(),
            "control_device",
            args.clone(),
            None,
        )
    };
    let older = asked_to_confirm(&ask(), "Open Garagentor (Garage)?");
    let newer = asked_to_confirm(&ask(), "Open Garagentor (Garage)?");
    // Another command of the same key stays answerable beside it.
    let driveway = json!({"device": DRIVEWAY, "action": "on"});
    let beside = asked_to_confirm(
        &modern_call(
            &served,
            DOORS,
            ELICIT(),
            "control_device",
            driveway.clone(),
            None,
        ),
        "Open Einfahrtstor (Außenbereich)?",
    );
    let answer = |args: &Value, state: &Value| {
        modern_call(
            &served,
            DOORS,
            ELICIT(),
            "control_device",
            args.clone(),
            Some((state, responses(Reply::Accept))),
        )
    };
    // The older question was replaced: its yes sends nothing.
    let a = answer(&args, &older);
    assert_eq!(envelope_of(&a)["data"]["cancelled"], true, "{a}");
    assert!(
        sent(&ms, GATE).is_empty(),
        "the replaced question sent nothing"
    );
    // The newer one opens the gate once.
    let a = answer(&args, &newer);
    assert_eq!(
        envelope_of(&a)["data"]["confirmed_by"],
        "user (elicitation)",
        "{a}"
    );
    assert_eq!(sent(&ms, GATE), ["open"]);
    let a = answer(&driveway, &beside);
    assert_eq!(
        envelope_of(&a)["data"]["confirmed_by"],
        "user (elicitation)",
        "{a}"
    );
    assert_eq!(sent(&ms, DRIVEWAY), ["open"]);
}

#[test]
fn a_2026_client_is_asked_for_the_alarm_and_house_wide_and_refused_without_elicitation() {
    let (ms, served) = serve(120);
    // Without elicitation in `_meta`: today's refusal, no question, nothing sent.
    for (tool, args) in [
        ("disarm_alarm", json!({"alarm": ALARM, "confirm": true})),
        ("control_device", open_gate()),
    ] {
        let a = modern_call(&served, DOORS, json!({}), tool, args, None);
        assert_eq!(a["result"]["resultType"], "complete", "{tool}: {a}");
        assert_eq!(a["result"]["isError"], true, "{tool}: {a}");
        assert_eq!(
            envelope_of(&a)["error"]["code"],
            "HUMAN_CONFIRMATION_REQUIRED",
            "{tool}: {a}"
        );
    }
    assert!(sent(&ms, ALARM).is_empty());
    assert!(sent(&ms, GATE).is_empty());

    // Arm, then disarm, each after the user's answer; the question names the alarm, its room
    // and the action in plain words.
    let arm = json!({"alarm": ALARM, "delayed": false});
    let a = modern_call(&served, PLAIN, ELICIT(), "arm_alarm", arm.clone(), None);
    let state = a["result"]["requestState"].clone();
    let m = a["result"]["inputRequests"]["confirm"]["params"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        m.starts_with("Arm at once the alarm Alarmanlage (Zentral)"),
        "{a}"
    );
    let a = modern_call(
        &served,
        PLAIN,
        ELICIT(),
        "arm_alarm",
        arm,
        Some((&state, responses(Reply::Accept))),
    );
    assert_ne!(a["result"]["isError"], true, "{a}");
    assert_eq!(sent(&ms, ALARM).len(), 1, "armed once: {a}");

    let disarm = json!({"alarm": ALARM});
    let a = modern_call(
        &served,
        PLAIN,
        ELICIT(),
        "disarm_alarm",
        disarm.clone(),
        None,
    );
    let state = a["result"]["requestState"].clone();
    assert!(a["result"]["inputRequests"]["confirm"]["params"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("which is armed now"));
    assert_eq!(sent(&ms, ALARM).len(), 1, "asking sends nothing");
    let a = modern_call(
        &served,
        PLAIN,
        ELICIT(),
        "disarm_alarm",
        disarm,
        Some((&state, responses(Reply::Accept))),
    );
    assert_eq!(
        envelope_of(&a)["data"]["confirmed_by"],
        "user (elicitation)"
    );
    assert_eq!(sent(&ms, ALARM).len(), 2, "disarmed after the answer");

    // A house-wide action asks too; declined, no light is switched.
    let off = json!({"action": "off", "confirm": true});
    let a = modern_call(
        &served,
        PLAIN,
        ELICIT(),
        "control_all_lights",
        off.clone(),
        None,
    );
    assert_eq!(a["result"]["resultType"], "input_required", "{a}");
    let state = a["result"]["requestState"].clone();
    let a = modern_call(
        &served,
        PLAIN,
        ELICIT(),
        "control_all_lights",
        off,
        Some((&state, responses(Reply::Decline))),
    );
    assert_eq!(envelope_of(&a)["data"]["cancelled"], true, "{a}");
    assert!(!lights_switched_off(&ms), "no light was switched");
}

#[test]
fn a_2026_answer_after_the_confirmation_lifetime_sends_nothing() {
    let (ms, served) = serve(1);
    let args = open_gate();
    let a = modern_call(
        &served,
        DOORS,
        ELICIT(),
        "control_device",
        args.clone(),
        None,
    );
    let state = asked_to_confirm(&a, "Open Garagentor (Garage)?");
    // Past the lifetime (1 s) whatever the machine's load: the clock is the condition.
    let until = std::time::Instant::now() + std::time::Duration::from_millis(1100);
    while std::time::Instant::now() < until {
        std::thread::sleep(until - std::time::Instant::now());
    }
    let a = modern_call(
        &served,
        DOORS,
        ELICIT(),
        "control_device",
        args,
        Some((&state, responses(Reply::Accept))),
    );
    assert_expired(&a);
    assert!(sent(&ms, GATE).is_empty());
}

#[test]
fn a_2026_workflow_is_confirmed_once_and_its_gate_step_is_not_opened_mid_run() {
    let (ms, served) = serve(120);
    let steps = json!({"name": "Ankommen", "steps": [
        {"tool": "arm_alarm", "arguments": {"alarm": ALARM, "delayed": false}},
        {"tool": "control_device", "arguments": {"device": GATE, "action": "on"}}
    ]});
    let (run, a) = create_then_run_workflow(&served, DOORS, ELICIT(), steps);
    let state = a["result"]["requestState"].clone();
    let m = a["result"]["inputRequests"]["confirm"]["params"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(m.starts_with("Run the workflow"), "{a}");
    assert!(sent(&ms, ALARM).is_empty(), "asking runs no step");
    let a = modern_call(
        &served,
        DOORS,
        ELICIT(),
        "execute_workflow",
        run,
        Some((&state, responses(Reply::Accept))),
    );
    assert_eq!(a["result"]["resultType"], "complete", "{a}");
    let data = envelope_of(&a)["data"].clone();
    assert_eq!(data["steps"][0]["status"], "success", "{data}");
    assert_eq!(sent(&ms, ALARM).len(), 1, "the alarm step ran once");
    // The gate needs an answer of its own, which a retry cannot give mid-run: not opened.
    assert_ne!(data["steps"][1]["status"], "success", "{data}");
    assert!(
        data["steps"][1]
            .to_string()
            .contains("HUMAN_CONFIRMATION_REQUIRED"),
        "{data}"
    );
    assert!(sent(&ms, GATE).is_empty(), "{data}");
}

/// Creates the workflow `workflow` (`create_workflow`'s arguments: `name`, `steps`) as `key` with
/// the client capabilities `caps`, asserting it was created, then calls `execute_workflow` on it
/// once without an answer. The `execute_workflow` arguments (for the retry) and that first
/// answer (the confirmation's `input_required` result).
fn create_then_run_workflow(
    served: &Served,
    key: &str,
    caps: Value,
    workflow: Value,
) -> (Value, Value) {
    let run = json!({"name": workflow["name"]});
    let created = modern_call(served, key, caps.clone(), "create_workflow", workflow, None);
    assert_ne!(created["result"]["isError"], true, "{created}");
    let first = modern_call(served, key, caps, "execute_workflow", run.clone(), None);
    (run, first)
}

// --- The visualisation password on this server's page (URL-mode elicitation) ---

/// A password only the page ever sees (distinctive: it must turn up nowhere else).
const PAGE_PASSWORD: &str = "pw-page-58213";

/// The demo Miniserver whose visualisation password is [`PAGE_PASSWORD`], and the server
/// without a configured one: a person types it on the page.
fn serve_unconfigured(lifetime_secs: u64) -> (Miniserver, Served) {
    let ms = Miniserver::serve(
        home_mcp::sim::Simulator::new(
            home_mcp::sim::DEMO_STRUCTURE,
            Some(home_mcp::sim::DEMO_VALUES),
            home_mcp::sim::SimConfig {
                visu_password: PAGE_PASSWORD.into(),
                ..Default::default()
            },
        )
        .expect("simulator"),
    );
    let keys = serde_json::to_string(&[
        ApiKey {
            name: "guesser".into(),
            ..operator(PLAIN, false, false)
        },
        ApiKey {
            name: "owner phone".into(),
            ..operator(DOORS, false, false)
        },
        key(ADMIN, Role::Admin),
    ])
    .unwrap();
    // Room for a hundred page calls a minute per key (two MCP requests each), and for as
    // many tries at the alarm (the outbound command limit would pause them too).
    let served = Served::start(
        &ms,
        &format!(
            "[server]\nconfirmation_lifetime_secs = {lifetime_secs}\n[auth]\nsecurity_level = \"staging\"\n[auth.rate_limits]\ncustom = 2000\nadmin = 2000\n[miniserver]\nmax_commands_per_control = 1000\n"
        ),
        &[("HOME_KEY_BACKEND", "env"), ("HOME_API_KEYS", &keys)],
    );
    (ms, served)
}

/// A session of [`PLAIN`] declaring form and URL-mode elicitation.
fn url_client(served: &Served) -> McpHttp {
    url_client_of(served, PLAIN)
}

/// A session of `key` declaring form and URL-mode elicitation.
fn url_client_of(served: &Served, key: &str) -> McpHttp {
    McpHttp::connect_with(
        served.addr,
        Some(key),
        "2025-11-25",
        json!({"elicitation": {"form": {}, "url": {}}}),
    )
}

/// What a person does on the page.
#[derive(Clone, Copy, Debug)]
enum OnPage<'a> {
    Type(&'a str),
    Decline,
    /// Does not open it.
    Nothing,
}

/// A tool call whose URL-mode question the client accepts (`open`) or declines, the person
/// then acting on the page (`on_page`); every message the client saw is kept.
struct PageCall {
    answer: Value,
    asked: Vec<Value>,
    seen: Vec<String>,
    /// The page's path and form token (when it was opened).
    page: Option<(String, String)>,
}

impl PageCall {
    fn envelope(&self) -> Value {
        envelope_of(&self.answer)
    }
}

fn path_of(url: &str, served: &Served) -> String {
    let origin = format!("http://{}", served.addr);
    url.strip_prefix(&origin)
        .unwrap_or_else(|| panic!("{url} is not on {origin}"))
        .to_string()
}

/// The form token in the page's HTML.
fn token_in(html: &str) -> String {
    let at = html.find("name=\"token\" value=\"").expect("a form token") + 20;
    html[at..].split('"').next().unwrap().to_string()
}

fn post_form(served: &Served, path: &str, body: &str) -> crate::support::net::Reply {
    request(
        served.addr,
        "POST",
        path,
        &["Content-Type: application/x-www-form-urlencoded"],
        body,
    )
}

fn page_call(
    served: &Served,
    c: &McpHttp,
    id: u64,
    tool: &str,
    args: Value,
    open: bool,
    on_page: OnPage,
) -> PageCall {
    let mut s = open_call(c, id, tool, args);
    assert_eq!(s.status, 200);
    let (mut asked, mut seen, mut page) = (Vec::new(), Vec::new(), None);
    let answer = loop {
        let e = s
            .next_data()
            .unwrap_or_else(|| panic!("the stream ended without the answer to {id}"));
        seen.push(e.data.clone().unwrap_or_default());
        let v = e.json();
        if v["method"] == "elicitation/create" {
            asked.push(v.clone());
            if !open {
                answer_question(c, &v["id"], json!({"action": "decline"}));
                continue;
            }
            answer_question(c, &v["id"], json!({"action": "accept"}));
            let path = path_of(v["params"]["url"].as_str().unwrap(), served);
            if matches!(on_page, OnPage::Nothing) {
                continue;
            }
            let got = request(served.addr, "GET", &path, &[] as &[&str], "");
            assert_eq!(got.status, 200, "{}", got.body);
            let token = token_in(&got.body);
            let body = match on_page {
                OnPage::Type(pw) => format!("token={token}&password={pw}&answer=confirm"),
                _ => format!("token={token}&password=&answer=decline"),
            };
            let r = post_form(served, &path, &body);
            assert_eq!(r.status, 200, "{}", r.body);
            page = Some((path, token));
        } else if v["id"] == id && v.get("method").is_none() {
            break v;
        }
    };
    PageCall {
        answer,
        asked,
        seen,
        page,
    }
}

#[test]
fn the_visualisation_password_is_typed_on_the_page_never_through_the_model() {
    let (ms, served) = serve_unconfigured(120);
    let c = url_client(&served);
    let r = page_call(
        &served,
        &c,
        1,
        "arm_alarm",
        json!({"alarm": ALARM, "delayed": false}),
        true,
        OnPage::Type(PAGE_PASSWORD),
    );
    assert_ne!(r.answer["result"]["isError"], true, "{}", r.answer);
    // One question, URL mode, naming the alarm, its room and the action; no form question.
    assert_eq!(r.asked.len(), 1, "{:?}", r.asked);
    let q = &r.asked[0]["params"];
    assert_eq!(q["mode"], "url");
    let eid = q["elicitationId"].as_str().unwrap();
    assert!(
        q["url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/confirm/{eid}")),
        "{q}"
    );
    assert!(
        q["message"]
            .as_str()
            .unwrap()
            .starts_with("Arm at once the alarm Alarmanlage (Zentral)"),
        "{q}"
    );
    // The page's work is announced as complete.
    let complete: Vec<Value> = r
        .seen
        .iter()
        .map(|t| serde_json::from_str::<Value>(t).unwrap())
        .filter(|v| v["method"] == "notifications/elicitation/complete")
        .collect();
    assert_eq!(complete.len(), 1, "{:?}", r.seen);
    assert_eq!(complete[0]["params"]["elicitationId"], eid);
    // The secured command reached the Miniserver with the right hash (the simulator checks
    // it with its own implementation and arms only then).
    let data = &r.envelope()["data"];
    assert_eq!(data["confirmed_by"], "user (password page)", "{data}");
    let lines = ms.commands_to(ALARM);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("/jdev/sps/ios/"), "{lines:?}");
    assert_eq!(ms.sim.state(ALARM, "armed"), Some(1.0));

    // One use: the page is gone.
    let (path, token) = r.page.clone().unwrap();
    let again = post_form(
        &served,
        &path,
        &format!("token={token}&password={PAGE_PASSWORD}"),
    );
    assert_eq!(again.status, 404, "{}", again.body);
    assert_eq!(
        request(served.addr, "GET", &path, &[] as &[&str], "").status,
        404
    );

    // The password is in no MCP message, no log line, no audit row.
    for m in &r.seen {
        assert!(!m.contains(PAGE_PASSWORD), "in an MCP message: {m}");
    }
    assert!(!r.answer.to_string().contains(PAGE_PASSWORD));
    let rows = audit(&served, "arm_alarm");
    assert_eq!(rows[0]["confirmed_by"], "user (password page)", "{rows:?}");
    assert!(!Value::Array(rows).to_string().contains(PAGE_PASSWORD));
    let log = served.log();
    assert!(log.iter().any(|l| l.contains("password page")), "{log:?}");
    for l in &log {
        assert!(!l.contains(PAGE_PASSWORD), "in the log: {l}");
    }
}

#[test]
fn a_declined_or_unopened_page_or_one_the_client_refuses_sends_nothing() {
    let (ms, served) = serve_unconfigured(2);
    let c = url_client(&served);
    let arm = json!({"alarm": ALARM, "delayed": false});
    for (id, open, on_page, reason) in [
        (1, false, OnPage::Nothing, "declined"),
        (2, true, OnPage::Decline, "declined on the page"),
        (3, true, OnPage::Nothing, "in time"),
    ] {
        let r = page_call(&served, &c, id, "arm_alarm", arm.clone(), open, on_page);
        let data = &r.envelope()["data"];
        assert_eq!(data["cancelled"], true, "{on_page:?}: {}", r.answer);
        assert!(
            data["confirmation"].as_str().unwrap().contains(reason),
            "{data}"
        );
        assert!(ms.commands_to(ALARM).is_empty(), "{on_page:?}");
        if let Some((path, token)) = r.page {
            // Answered or expired: the page takes nothing more.
            let late = post_form(
                &served,
                &path,
                &format!("token={token}&password={PAGE_PASSWORD}"),
            );
            assert!(matches!(late.status, 404 | 410), "{}", late.body);
        }
    }
    assert_eq!(ms.sim.state(ALARM, "armed"), Some(0.0));
}

#[test]
fn the_page_takes_only_its_own_form_within_bounds() {
    let (ms, served) = serve_unconfigured(120);
    let c = url_client(&served);
    let mut s = open_call(
        &c,
        1,
        "arm_alarm",
        json!({"alarm": ALARM, "delayed": false}),
    );
    let answer = read_answer(&mut s, 1, |q| {
        answer_question(&c, &q["id"], json!({"action": "accept"}));
        let path = path_of(q["params"]["url"].as_str().unwrap(), &served);
        let got = request(served.addr, "GET", &path, &[] as &[&str], "");
        // The admin page's security headers, and never cached.
        assert_eq!(got.header("cache-control"), Some("no-store"));
        assert_eq!(got.header("x-frame-options"), Some("DENY"));
        // Same-origin, not no-referrer: browsers send `Origin: null` with the form otherwise.
        assert_eq!(got.header("referrer-policy"), Some("same-origin"));
        assert!(got
            .header("content-security-policy")
            .unwrap()
            .contains("frame-ancestors 'none'"));
        assert!(got
            .body
            .contains("Arm at once the alarm Alarmanlage (Zentral)"));
        let token = token_in(&got.body);
        // A forged token, no password, an oversized one, a foreign site, not a form, a
        // guessed id: refused, and the page stays open.
        let forged = post_form(
            &served,
            &path,
            &format!("token=00{}&password=x", &token[2..]),
        );
        assert_eq!(forged.status, 403, "{}", forged.body);
        let empty = post_form(&served, &path, &format!("token={token}&password="));
        assert_eq!(empty.status, 400, "{}", empty.body);
        let long = "x".repeat(300);
        let too_long = post_form(&served, &path, &format!("token={token}&password={long}"));
        assert_eq!(too_long.status, 400, "{}", too_long.body);
        let huge = post_form(&served, &path, &"a".repeat(5000));
        assert_eq!(huge.status, 413, "{}", huge.body);
        let foreign = request(
            served.addr,
            "POST",
            &path,
            &[
                "Content-Type: application/x-www-form-urlencoded",
                "Origin: http://evil.example",
            ],
            &format!("token={token}&password=x"),
        );
        assert_eq!(foreign.status, 403, "{}", foreign.body);
        let json_body = request(
            served.addr,
            "POST",
            &path,
            &["Content-Type: application/json"],
            "{}",
        );
        assert_eq!(json_body.status, 400, "{}", json_body.body);
        let guessed = request(
            served.addr,
            "GET",
            "/confirm/0123456789abcdef0123456789abcdef",
            &[] as &[&str],
            "",
        );
        assert_eq!(guessed.status, 404);
        let ok = post_form(
            &served,
            &path,
            &format!("token={token}&password={PAGE_PASSWORD}"),
        );
        assert_eq!(ok.status, 200, "{}", ok.body);
    });
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(ms.commands_to(ALARM).len(), 1);
}

#[test]
fn wrong_passwords_on_the_page_are_refused_then_paused() {
    let (ms, served) = serve_unconfigured(120);
    let c = url_client(&served);
    let arm = json!({"alarm": ALARM, "delayed": false});
    for id in 1..=home_mcp::home::pin::RUN as u64 {
        let r = page_call(
            &served,
            &c,
            id,
            "arm_alarm",
            arm.clone(),
            true,
            OnPage::Type("0000"),
        );
        let e = &r.envelope()["error"];
        assert_eq!(e["code"], "INVALID_PARAMETERS", "{}", r.answer);
        assert!(e["message"].as_str().unwrap().contains("wrong"), "{e}");
    }
    // Now even the right password is not tried: nothing reaches the Miniserver.
    let secured = || crate::support::wire::secured_requests(&ms.sim);
    let before = secured();
    let r = page_call(
        &served,
        &c,
        9,
        "arm_alarm",
        arm,
        true,
        OnPage::Type(PAGE_PASSWORD),
    );
    assert_eq!(
        r.envelope()["error"]["code"],
        "RATE_LIMIT_EXCEEDED",
        "{}",
        r.answer
    );
    assert_eq!(secured(), before, "nothing sent");
    assert_eq!(ms.sim.state(ALARM, "armed"), Some(0.0));
}

/// GET `path` with the admin key; the JSON answer.
fn admin_get(served: &Served, path: &str) -> Value {
    let r = request(
        served.addr,
        "GET",
        path,
        &[format!("X-API-Key: {ADMIN}")],
        "",
    );
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    serde_json::from_str(&r.body).unwrap()
}

#[test]
fn one_keys_wrong_passwords_pause_only_that_key_and_the_owner_sees_which() {
    let (ms, served) = serve_unconfigured(120);
    let (guesser, owner) = (url_client(&served), url_client_of(&served, DOORS));
    let arm = json!({"alarm": ALARM, "delayed": false});
    let runs = home_mcp::home::pin::RUN as u64;
    for id in 1..=runs {
        let r = page_call(
            &served,
            &guesser,
            id,
            "arm_alarm",
            arm.clone(),
            true,
            OnPage::Type("0000"),
        );
        let e = &r.envelope()["error"];
        assert_eq!(e["code"], "INVALID_PARAMETERS", "{}", r.answer);
        if id < runs {
            assert!(e["details"].get("pause_secs").is_none(), "{e}");
        } else {
            // The wrong password that ends the run says so, and for how long.
            assert_eq!(e["details"]["pause_secs"], 60, "{e}");
            assert_eq!(e["details"]["retry_after_secs"], 60, "{e}");
            assert_eq!(e["details"]["run"], 1, "{e}");
            assert!(e["message"].as_str().unwrap().contains("pause"), "{e}");
        }
    }
    // The guessing key, even with the right password: refused before any page opens.
    let secured = || crate::support::wire::secured_requests(&ms.sim);
    let before = secured();
    let r = page_call(
        &served,
        &guesser,
        9,
        "arm_alarm",
        arm.clone(),
        true,
        OnPage::Type(PAGE_PASSWORD),
    );
    let e = &r.envelope()["error"];
    assert_eq!(e["code"], "RATE_LIMIT_EXCEEDED", "{}", r.answer);
    assert!(
        e["details"]["retry_after_secs"]
            .as_u64()
            .is_some_and(|s| s > 0 && s <= 60),
        "{e}"
    );
    assert!(r.asked.is_empty(), "no page was offered: {:?}", r.asked);
    assert_eq!(secured(), before, "nothing sent");
    assert_eq!(ms.sim.state(ALARM, "armed"), Some(0.0));

    // Another key with the right password: armed at once.
    let r = page_call(
        &served,
        &owner,
        1,
        "arm_alarm",
        arm,
        true,
        OnPage::Type(PAGE_PASSWORD),
    );
    assert_eq!(
        r.envelope()["data"]["confirmed_by"],
        "user (password page)",
        "{}",
        r.answer
    );
    assert_eq!(ms.sim.state(ALARM, "armed"), Some(1.0));

    // The owner sees which key: the audit log, the dashboard, the admin API; /metrics counts.
    let rows = wait_until("the run in the audit log", PATIENCE, || {
        let rows = audit(&served, "visu_password.pause");
        if rows.is_empty() {
            Err(rows)
        } else {
            Ok(rows)
        }
    });
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["key_name"], "guesser", "{rows:?}");
    assert_eq!(rows[0]["result"], "RATE_LIMIT_EXCEEDED", "{rows:?}");
    assert!(
        rows[0]["target"].as_str().unwrap().contains("run 1"),
        "{rows:?}"
    );
    let dash = admin_get(&served, "/dashboard/api/data");
    let typists = dash["passwords"]["typists"].as_array().unwrap();
    assert_eq!(typists.len(), 1, "only the guessing key: {dash}");
    assert!(
        typists[0]["key"].as_str().unwrap().starts_with("guesser"),
        "{dash}"
    );
    assert!(typists[0]["paused_secs"].as_u64().is_some(), "{dash}");
    assert_eq!(dash["passwords"]["runs"][0]["pause_secs"], 60, "{dash}");
    let listed = admin_get(&served, "/admin/api/visu-password");
    assert_eq!(listed["typists"], dash["passwords"]["typists"]);
    let metrics = request(
        served.addr,
        "GET",
        "/metrics",
        &[format!("X-API-Key: {ADMIN}")],
        "",
    );
    assert_eq!(metrics.status, 200);
    for line in [
        "home_mcp_visu_password_wrong_total{source=\"page\"} 3",
        "home_mcp_visu_password_pauses_total{scope=\"key\"} 1",
        "home_mcp_visu_password_refused_total 1",
    ] {
        assert!(
            metrics.body.lines().any(|l| l == line),
            "{line}:\n{}",
            metrics.body
        );
    }
}

/// Issue 28, the house-wide ledger of the page: after one key's run of wrong passwords, a
/// second key's first wrong password ends its own run at once (one guess per pause, not three,
/// however many keys guess). (A key that types nothing wrong is not stopped by the house-wide
/// pause: `one_keys_wrong_passwords_pause_only_that_key_and_the_owner_sees_which` arms during
/// it.) The dashboard shows the house-wide run and `/metrics` counts it.
#[test]
fn during_the_house_wide_pause_another_keys_first_wrong_password_ends_its_run() {
    let (ms, served) = serve_unconfigured(120);
    let (first, second) = (url_client(&served), url_client_of(&served, DOORS));
    let arm = json!({"alarm": ALARM, "delayed": false});
    let wrong = |c: &McpHttp, id: u64| {
        let r = page_call(
            &served,
            c,
            id,
            "arm_alarm",
            arm.clone(),
            true,
            OnPage::Type("0000"),
        );
        let e = r.envelope()["error"].clone();
        assert_eq!(e["code"], "INVALID_PARAMETERS", "{}", r.answer);
        e
    };
    let runs = home_mcp::home::pin::RUN as u64;
    for id in 1..=runs {
        wrong(&first, id);
    }
    let dash = admin_get(&served, "/dashboard/api/data");
    assert_eq!(dash["passwords"]["house"]["runs"], 1, "{dash}");
    assert!(
        dash["passwords"]["house"]["paused_secs"].as_u64().is_some(),
        "{dash}"
    );
    // The second key: its first wrong password ends its run.
    let e = wrong(&second, 1);
    assert_eq!(e["details"]["pause_secs"], 60, "{e}");
    assert_eq!(e["details"]["run"], 1, "{e}");
    let dash = admin_get(&served, "/dashboard/api/data");
    let typists = dash["passwords"]["typists"].as_array().unwrap();
    assert_eq!(typists.len(), 2, "{dash}");
    assert!(
        typists.iter().all(|t| t["paused_secs"].as_u64().is_some()),
        "{dash}"
    );
    assert_eq!(
        dash["passwords"]["runs"].as_array().unwrap().len(),
        2,
        "{dash}"
    );
    assert_eq!(ms.sim.state(ALARM, "armed"), Some(0.0));
    let metrics = request(
        served.addr,
        "GET",
        "/metrics",
        &[format!("X-API-Key: {ADMIN}")],
        "",
    );
    for line in [
        "home_mcp_visu_password_wrong_total{source=\"page\"} 4",
        "home_mcp_visu_password_pauses_total{scope=\"key\"} 2",
        "home_mcp_visu_password_pauses_total{scope=\"house\"} 1",
    ] {
        assert!(
            metrics.body.lines().any(|l| l == line),
            "{line}:\n{}",
            metrics.body
        );
    }
}

#[test]
fn a_hundred_wrong_passwords_from_one_key_take_more_than_an_hour_of_pauses() {
    let (ms, served) = serve_unconfigured(120);
    let c = url_client(&served);
    let arm = json!({"alarm": ALARM, "delayed": false});
    let (mut typed, mut paused_secs, mut last_pause, mut runs) = (0, 0u64, 0u64, 0);
    let mut id = 0;
    while typed < 100 {
        id += 1;
        let r = page_call(
            &served,
            &c,
            id,
            "arm_alarm",
            arm.clone(),
            true,
            OnPage::Type("0000"),
        );
        let e = r.envelope()["error"].clone();
        match e["code"].as_str() {
            Some("INVALID_PARAMETERS") => {
                typed += 1;
                let Some(pause) = e["details"]["pause_secs"].as_u64() else {
                    continue;
                };
                // A run ended: the pause the server announces grows (or stays at its
                // longest); the owner lifts it so the test does not wait it out (its run
                // count stays).
                assert!(
                    pause >= last_pause,
                    "pauses only grow: {last_pause} then {pause}"
                );
                last_pause = pause;
                paused_secs += pause;
                runs += 1;
                let listed = admin_get(&served, "/admin/api/visu-password");
                let key_id = listed["typists"][0]["key_id"].as_str().unwrap().to_string();
                let lifted = request(
                    served.addr,
                    "POST",
                    "/admin/api/visu-password/lift",
                    &[
                        format!("X-API-Key: {ADMIN}"),
                        "Content-Type: application/json".into(),
                    ],
                    &json!({"key_id": key_id}).to_string(),
                );
                assert_eq!(lifted.status, 200, "{}", lifted.body);
            }
            _ => panic!("wrong password {typed}: {}", r.answer),
        }
    }
    assert!(
        paused_secs > 3600,
        "100 wrong passwords cost {paused_secs} s of pauses in {runs} runs"
    );
    println!("100 wrong passwords: {runs} runs, {paused_secs} s of pauses announced (longest {last_pause} s)");
    assert_eq!(ms.sim.state(ALARM, "armed"), Some(0.0));
}

#[test]
fn a_client_without_url_mode_is_told_how_the_owner_configures_the_password() {
    let (ms, served) = serve_unconfigured(120);
    let c = client(&served, PLAIN, true);
    let r = call(
        &c,
        1,
        "disarm_alarm",
        json!({"alarm": ALARM}),
        Reply::Accept,
    );
    assert!(r.asked.is_empty(), "nobody is asked: {:?}", r.asked);
    let e = &r.envelope()["error"];
    assert_eq!(e["code"], "INVALID_PARAMETERS", "{}", r.answer);
    let m = e["message"].as_str().unwrap();
    assert!(
        m.contains("HOME_VISU_PASS") && m.contains("visu_password"),
        "{m}"
    );
    assert!(!m.contains("code") && !m.contains("confirm: true"), "{m}");
    assert!(ms.commands_to(ALARM).is_empty());
    // And the tools take no password argument.
    let list = c.post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let tools = crate::support::mcp::answer_of(&list, 2);
    let tools = tools["result"]["tools"].as_array().unwrap().clone();
    let secured: Vec<&Value> = tools
        .iter()
        .filter(|t| {
            ["arm_alarm", "disarm_alarm", "acknowledge_alarm"]
                .contains(&t["name"].as_str().unwrap())
        })
        .collect();
    assert_eq!(secured.len(), 3);
    for t in tools {
        let props = t["inputSchema"]["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        for p in ["code", "pin", "password"] {
            assert!(!props.contains_key(p), "{}: {p}", t["name"]);
        }
        let d = t["description"].as_str().unwrap_or_default();
        assert!(
            !d.contains("confirm: true") && !d.contains("password"),
            "{d}"
        );
    }
}

// --- The password page for MCP 2026-07-28 clients (URL mode inside `inputRequests`) ---

/// What a 2026-07-28 client declares: form and URL-mode elicitation.
const URL_CAPS: fn() -> Value = || json!({"elicitation": {"form": {}, "url": {}}});

/// The key of the page's request in `inputRequests` / `inputResponses`.
const PAGE_KEY: &str = "visu_password_page";

/// The page a 2026-07-28 answer offers.
struct Offered {
    state: Value,
    url: String,
    message: String,
}

/// Asserts that `answer` is an `input_required` result offering the password page (one
/// URL-mode `elicitation/create` whose URL is this server's `/confirm/{elicitationId}`, no
/// form question); what it offers.
fn offered_page(answer: &Value, served: &Served) -> Offered {
    let r = &answer["result"];
    assert_eq!(r["resultType"], "input_required", "{answer}");
    let requests = r["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(requests.len(), 1, "one question: {answer}");
    let q = &requests[PAGE_KEY];
    assert_eq!(q["method"], "elicitation/create", "{answer}");
    let p = &q["params"];
    assert_eq!(p["mode"], "url", "{answer}");
    assert!(p.get("requestedSchema").is_none(), "no form: {answer}");
    let url = p["url"].as_str().expect("a url").to_string();
    let eid = p["elicitationId"].as_str().expect("an elicitationId");
    assert_eq!(path_of(&url, served), format!("/confirm/{eid}"), "{answer}");
    assert!(r["requestState"].is_string(), "{answer}");
    Offered {
        state: r["requestState"].clone(),
        url,
        message: p["message"].as_str().unwrap_or_default().to_string(),
    }
}

/// The person on the page: opens it and sends `body` made from its form token.
fn on_page(served: &Served, url: &str, body: impl Fn(&str) -> String) {
    let path = path_of(url, served);
    let got = request(served.addr, "GET", &path, &[] as &[&str], "");
    assert_eq!(got.status, 200, "{}", got.body);
    let r = post_form(served, &path, &body(&token_in(&got.body)));
    assert_eq!(r.status, 200, "{}", r.body);
}

/// The answers of a retry: the page's URL-mode request answered with `action`.
fn page_response(action: &str) -> Value {
    json!({ PAGE_KEY: {"action": action} })
}

#[test]
fn a_2026_client_types_the_password_on_the_page_and_its_retry_arms_the_alarm() {
    let (ms, served) = serve_unconfigured(120);
    let arm = json!({"alarm": ALARM, "delayed": false});
    let call = |retry: Option<(&Value, Value)>| {
        modern_call(&served, PLAIN, URL_CAPS(), "arm_alarm", arm.clone(), retry)
    };
    let mut answers = Vec::new();

    // The first call offers the page, naming the alarm, its room and the action; nothing sent.
    let first = call(None);
    let page = offered_page(&first, &served);
    answers.push(first);
    assert!(
        page.message
            .starts_with("Arm at once the alarm Alarmanlage (Zentral)"),
        "{}",
        page.message
    );
    assert!(ms.commands_to(ALARM).is_empty());

    // The client retries at once (the user agreed to open the page but has not typed yet):
    // the same page is offered again, nothing sent.
    let early = call(Some((&page.state, page_response("accept"))));
    let again = offered_page(&early, &served);
    answers.push(early);
    assert_eq!(again.url, page.url, "the same page");
    assert!(again.message.contains("still waiting"), "{}", again.message);
    assert!(ms.commands_to(ALARM).is_empty());
    assert_eq!(ms.api.state(ALARM, "armed"), 0.0);

    // The person types the password on the page; the retry sends the secured command.
    on_page(&served, &page.url, |token| {
        format!("token={token}&password={PAGE_PASSWORD}&answer=confirm")
    });
    let done = call(Some((&again.state, page_response("accept"))));
    let result = &done["result"];
    assert_eq!(result["resultType"], "complete", "{done}");
    assert_ne!(result["isError"], true, "{done}");
    let data = &result["structuredContent"]["data"];
    assert_eq!(data["confirmed_by"], "user (password page)", "{done}");
    answers.push(done.clone());
    // The simulator checks the hash with its own implementation and arms only then.
    let lines = ms.commands_to(ALARM);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("/jdev/sps/ios/"), "{lines:?}");
    assert_eq!(ms.api.state(ALARM, "armed"), 1.0);

    // One use: the same retry again sends nothing, and the page is gone.
    let replay = call(Some((&again.state, page_response("accept"))));
    let data = &replay["result"]["structuredContent"]["data"];
    assert_eq!(data["cancelled"], true, "{replay}");
    assert!(
        data["confirmation"]
            .as_str()
            .is_some_and(|m| m.contains("unknown or was already used")),
        "{replay}"
    );
    answers.push(replay);
    assert_eq!(ms.commands_to(ALARM).len(), 1, "nothing more sent");
    let path = path_of(&page.url, &served);
    assert_eq!(
        request(served.addr, "GET", &path, &[] as &[&str], "").status,
        404
    );

    // The password is in no MCP message, no audit row, no log line.
    for a in &answers {
        assert!(
            !a.to_string().contains(PAGE_PASSWORD),
            "in an MCP message: {a}"
        );
    }
    let rows = audit(&served, "arm_alarm");
    assert!(
        rows.iter()
            .any(|r| r["confirmed_by"] == "user (password page)" && r["result"] == "ok"),
        "{rows:?}"
    );
    assert!(!Value::Array(rows).to_string().contains(PAGE_PASSWORD));
    for l in &served.log() {
        assert!(!l.contains(PAGE_PASSWORD), "in the log: {l}");
    }
}

#[test]
fn a_2026_password_page_serves_only_its_own_request_and_a_no_sends_nothing() {
    let (ms, served) = serve_unconfigured(120);
    let arm = json!({"alarm": ALARM, "delayed": false});
    let first = modern_call(&served, PLAIN, URL_CAPS(), "arm_alarm", arm.clone(), None);
    let page = offered_page(&first, &served);
    on_page(&served, &page.url, |token| {
        format!("token={token}&password={PAGE_PASSWORD}&answer=confirm")
    });
    let accept = || page_response("accept");

    // Another caller, another command (other arguments, another tool), a tampered state:
    // refused before the tool runs, nothing sent.
    let mut tampered = page.state.as_str().unwrap().to_string();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    let tampered = Value::String(tampered);
    let attempts = [
        (
            ADMIN,
            "arm_alarm",
            arm.clone(),
            &page.state,
            "another caller",
        ),
        (
            PLAIN,
            "arm_alarm",
            json!({"alarm": ALARM, "delayed": true}),
            &page.state,
            "another request",
        ),
        (
            PLAIN,
            "disarm_alarm",
            json!({"alarm": ALARM}),
            &page.state,
            "another request",
        ),
        (PLAIN, "arm_alarm", arm.clone(), &tampered, "integrity"),
    ];
    for (key, tool, args, state, why) in attempts {
        let a = modern_call(
            &served,
            key,
            URL_CAPS(),
            tool,
            args,
            Some((state, accept())),
        );
        assert_eq!(a["error"]["code"], -32602, "{why}: {a}");
        assert!(
            a["error"]["data"]["details"]
                .as_str()
                .is_some_and(|d| d.contains(why)),
            "{why}: {a}"
        );
        assert!(!a.to_string().contains(PAGE_PASSWORD));
    }
    assert!(ms.commands_to(ALARM).is_empty(), "nothing sent");
    assert_eq!(ms.api.state(ALARM, "armed"), 0.0);

    // The client's "decline" or "cancel" withdraws the page: nothing sent, the page is gone.
    for action in ["decline", "cancel"] {
        let a = modern_call(&served, PLAIN, URL_CAPS(), "arm_alarm", arm.clone(), None);
        let p = offered_page(&a, &served);
        let a = modern_call(
            &served,
            PLAIN,
            URL_CAPS(),
            "arm_alarm",
            arm.clone(),
            Some((&p.state, page_response(action))),
        );
        let data = &a["result"]["structuredContent"]["data"];
        assert_eq!(data["cancelled"], true, "{action}: {a}");
        let path = path_of(&p.url, &served);
        assert_eq!(
            request(served.addr, "GET", &path, &[] as &[&str], "").status,
            404,
            "{action}"
        );
    }
    // "Do not do it" on the page, then the client accepts: nothing sent.
    let a = modern_call(&served, PLAIN, URL_CAPS(), "arm_alarm", arm.clone(), None);
    let p = offered_page(&a, &served);
    on_page(&served, &p.url, |token| {
        format!("token={token}&password=&answer=decline")
    });
    let a = modern_call(
        &served,
        PLAIN,
        URL_CAPS(),
        "arm_alarm",
        arm.clone(),
        Some((&p.state, accept())),
    );
    let data = &a["result"]["structuredContent"]["data"];
    assert_eq!(data["cancelled"], true, "{a}");
    assert!(
        data["confirmation"]
            .as_str()
            .is_some_and(|m| m.contains("declined on the page")),
        "{a}"
    );
    assert!(ms.commands_to(ALARM).is_empty(), "nothing sent");

    // The later pages for the same command replaced the first one: its retry sends nothing,
    // though the password was typed there.
    let a = modern_call(
        &served,
        PLAIN,
        URL_CAPS(),
        "arm_alarm",
        arm.clone(),
        Some((&page.state, accept())),
    );
    assert_eq!(
        a["result"]["structuredContent"]["data"]["cancelled"], true,
        "{a}"
    );
    assert!(ms.commands_to(ALARM).is_empty(), "nothing sent");
    // A page of its own, typed, then its retry: armed.
    let a = modern_call(&served, PLAIN, URL_CAPS(), "arm_alarm", arm.clone(), None);
    let p = offered_page(&a, &served);
    on_page(&served, &p.url, |token| {
        format!("token={token}&password={PAGE_PASSWORD}&answer=confirm")
    });
    let a = modern_call(
        &served,
        PLAIN,
        URL_CAPS(),
        "arm_alarm",
        arm,
        Some((&p.state, accept())),
    );
    assert_eq!(
        a["result"]["structuredContent"]["data"]["confirmed_by"], "user (password page)",
        "{a}"
    );
    assert_eq!(ms.commands_to(ALARM).len(), 1);
    assert_eq!(ms.api.state(ALARM, "armed"), 1.0);
}

#[test]
fn a_2026_password_page_expires_and_a_late_retry_or_password_sends_nothing() {
    let (ms, served) = serve_unconfigured(1);
    let arm = json!({"alarm": ALARM, "delayed": false});
    let a = modern_call(&served, PLAIN, URL_CAPS(), "arm_alarm", arm.clone(), None);
    let page = offered_page(&a, &served);
    let path = path_of(&page.url, &served);
    let got = request(served.addr, "GET", &path, &[] as &[&str], "");
    let token = token_in(&got.body);
    // Past the lifetime (1 s) whatever the machine's load: the clock is the condition.
    let until = std::time::Instant::now() + std::time::Duration::from_millis(1100);
    while std::time::Instant::now() < until {
        std::thread::sleep(until - std::time::Instant::now());
    }
    let late = post_form(
        &served,
        &path,
        &format!("token={token}&password={PAGE_PASSWORD}&answer=confirm"),
    );
    assert!(matches!(late.status, 404 | 410), "{}", late.body);
    let a = modern_call(
        &served,
        PLAIN,
        URL_CAPS(),
        "arm_alarm",
        arm,
        Some((&page.state, page_response("accept"))),
    );
    assert_expired(&a);
    assert!(ms.commands_to(ALARM).is_empty(), "nothing sent");
    assert_eq!(ms.api.state(ALARM, "armed"), 0.0);
}

#[test]
fn a_2026_workflow_step_that_needs_the_password_page_sends_nothing_mid_run() {
    let (ms, served) = serve_unconfigured(120);
    let steps = json!({"name": "Gehen", "steps": [
        {"tool": "arm_alarm", "arguments": {"alarm": ALARM, "delayed": false}}
    ]});
    let (run, a) = create_then_run_workflow(&served, PLAIN, URL_CAPS(), steps);
    let state = a["result"]["requestState"].clone();
    assert!(state.is_string(), "the run is confirmed first: {a}");
    let a = modern_call(
        &served,
        PLAIN,
        URL_CAPS(),
        "execute_workflow",
        run,
        Some((&state, responses(Reply::Accept))),
    );
    // A retry would run the earlier steps again: no page is offered mid-run, nothing sent.
    assert_eq!(a["result"]["resultType"], "complete", "{a}");
    let step = envelope_of(&a)["data"]["steps"][0].clone();
    assert_ne!(step["status"], "success", "{a}");
    let step = step.to_string();
    assert!(
        step.contains("HUMAN_CONFIRMATION_REQUIRED")
            && step.contains("in the middle of a workflow"),
        "{step}"
    );
    assert!(ms.commands_to(ALARM).is_empty(), "nothing sent");
    assert_eq!(ms.api.state(ALARM, "armed"), 0.0);
}
