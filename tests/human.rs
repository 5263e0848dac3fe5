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

const GATE: &str = "1d5c3bf3-021f-5bb5-ffff504f94d0e5a1";
const DRIVEWAY: &str = "1d5c3c20-0222-5cf0-ffff504f94d0e5a1";
const ALARM: &str = "1d5c3c5b-0225-5e8d-ffff504f94d0e5a1";

/// A key of the security role set (read, control, security) named `name`; `doors`: its owner
/// lets it open gates and doors; `model`: lets the model confirm.
fn operator(id: &str, doors: bool, model: bool) -> ApiKey {
    ApiKey {
        permissions: vec!["read".into(), "control".into(), "security".into()],
        open_doors: doors,
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
    let confirmed: Vec<&Value> = rows
        .iter()
        .map(|e| &e["confirmed_by"])
        .filter(|c| !c.is_null())
        .collect();
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
    let lights_sent = ms
        .sim
        .requests()
        .iter()
        .any(|l| l.contains("/jdev/sps/io/") && l.contains("/off"));
    assert!(!lights_sent, "no light was switched");
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

    // An answer without the state is no confirmation: the question is asked again.
    let a = modern_call(
        &served,
        DOORS,
        ELICIT(),
        "control_device",
        args.clone(),
        Some((&Value::Null, responses(Reply::Accept))),
    );
    asked_to_confirm(&a, "Open Garagentor (Garage)?");
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
    let confirmed: Vec<&Value> = rows
        .iter()
        .map(|e| &e["confirmed_by"])
        .filter(|c| !c.is_null())
        .collect();
    assert_eq!(confirmed, [&json!("user (elicitation)")], "{rows:?}");
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
    let lights_sent = ms
        .sim
        .requests()
        .iter()
        .any(|l| l.contains("/jdev/sps/io/") && l.contains("/off"));
    assert!(!lights_sent, "no light was switched");
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
    assert_eq!(a["error"]["code"], -32602, "{a}");
    assert!(
        a["error"]["data"]["details"]
            .as_str()
            .is_some_and(|d| d.contains("expired")),
        "{a}"
    );
    assert!(sent(&ms, GATE).is_empty());
}

#[test]
fn a_2026_workflow_is_confirmed_once_and_its_gate_step_is_not_opened_mid_run() {
    let (ms, served) = serve(120);
    let steps = json!({"name": "Ankommen", "steps": [
        {"tool": "arm_alarm", "arguments": {"alarm": ALARM, "delayed": false}},
        {"tool": "control_device", "arguments": {"device": GATE, "action": "on"}}
    ]});
    let created = modern_call(&served, DOORS, ELICIT(), "create_workflow", steps, None);
    assert_ne!(created["result"]["isError"], true, "{created}");
    let run = json!({"name": "Ankommen"});
    let a = modern_call(
        &served,
        DOORS,
        ELICIT(),
        "execute_workflow",
        run.clone(),
        None,
    );
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
