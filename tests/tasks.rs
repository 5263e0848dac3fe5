//! Long-running work over MCP 2026-07-28, from outside: the real `serve` over HTTP against the
//! simulated Miniserver. House-wide blind commands and workflow runs report
//! `notifications/progress` on the stream of their own request, and run as tasks of the
//! `io.modelcontextprotocol/tasks` extension for clients that declare it (spec:
//! `modelcontextprotocol/ext-tasks`, `specification/draft/tasks.md`). What the house did is
//! read from the simulator's HTTP API; which blinds the house has, from the structure file
//! the simulator serves (`assets/demo-house.json`).

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::mcp::{with_modern_meta, McpModern};
use crate::support::server::{Miniserver, Served};
use crate::support::sse;
use crate::support::wait::recv_matching;
use crate::support::{wait_until, PATIENCE};

const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The Jalousie blocks of the demo house (not the central block), from its structure file.
fn jalousies() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/demo-house.json");
    let house: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let found = crate::support::house::uuids_of_type(&house, "Jalousie");
    assert_eq!(found.len(), 7, "the demo house has seven Jalousie blocks");
    found
}

/// The serve binary against `ms` with one operator key whose owner lets the model confirm
/// house-wide actions (`confirm: true`); the key's secret.
fn served_for_model(ms: &Miniserver) -> (Served, String) {
    let secret = format!("homekey_operator_5_{}", "ef".repeat(16));
    let mut k = crate::support::gate::key(&secret, home_mcp::auth::Role::Operator);
    k.model_confirms = true;
    let served = Served::start_with_keys(ms, &[k], "[auth]\nsecurity_level = \"staging\"\n");
    (served, secret)
}

/// `_meta` client capabilities declaring the tasks extension (and elicitation).
fn with_tasks(mut params: Value) -> Value {
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"extensions": {EXTENSION: {}}});
    params
}

/// The standard headers of a request, with `Mcp-Name` for the task methods too, and
/// `Authorization` when `key` is given.
fn headers(method: &str, params: &Value, key: Option<&str>) -> Vec<String> {
    let mut h = McpModern::headers(method, params);
    if let Some(id) = params["taskId"].as_str() {
        h.push(format!("Mcp-Name: {id}"));
    }
    if let Some(k) = key {
        h.push(format!("Authorization: Bearer {k}"));
    }
    h
}

/// One 2026-07-28 request answered in JSON; the whole response object.
fn rpc(served: &Served, key: Option<&str>, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut h = headers(method, &params, key);
    h[1] = "Accept: application/json".into();
    let r = crate::support::net::request(served.addr, "POST", "/mcp", &h, &body.to_string());
    r.json()
}

/// A `tools/call` of `name` with `arguments` and a progress token, over an SSE-accepting POST;
/// the stream's JSON messages in order, the response last.
fn stream_call(served: &Served, key: &str, name: &str, arguments: Value) -> Vec<Value> {
    let mut params = with_modern_meta(json!({"name": name, "arguments": arguments}));
    params["_meta"]["progressToken"] = json!("long-1");
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params});
    let h = headers("tools/call", &params, Some(key));
    let h: Vec<(&str, &str)> = h.iter().map(|h| h.split_once(": ").unwrap()).collect();
    let mut s = sse::send(served.addr, "POST", "/mcp", &h, body.to_string().as_bytes());
    assert_eq!(s.status, 200);
    s.messages_until_response()
}

/// The progress notifications of `seen`: all for the request's token, progress growing.
fn progress_of(seen: &[Value]) -> Vec<Value> {
    let progress: Vec<Value> = seen
        .iter()
        .filter(|v| v["method"] == "notifications/progress")
        .map(|v| v["params"].clone())
        .collect();
    let mut last = -1.0;
    for p in &progress {
        assert_eq!(p["progressToken"], "long-1", "{p}");
        let now = p["progress"].as_f64().unwrap();
        assert!(now > last, "progress must grow: {progress:#?}");
        last = now;
    }
    progress
}

/// Polls `tasks/get` (as `key`) until the task is terminal; fails with the last state after
/// `within`.
fn until_terminal(served: &Served, key: Option<&str>, task: &str, within: Duration) -> Value {
    wait_until("the task ends", within, || {
        let r = rpc(
            served,
            key,
            "tasks/get",
            with_tasks(with_modern_meta(json!({"taskId": task}))),
        );
        let status = r["result"]["status"].as_str().unwrap_or("").to_string();
        if matches!(status.as_str(), "completed" | "failed" | "cancelled") {
            return Ok(r["result"].clone());
        }
        assert!(
            status == "working" || status == "input_required",
            "tasks/get: {r}"
        );
        Err(r)
    })
}

#[test]
fn house_wide_blinds_report_progress_on_their_own_stream() {
    let ms = Miniserver::demo();
    let (served, key) = served_for_model(&ms);
    let blinds = jalousies();
    let seen = stream_call(
        &served,
        &key,
        "control_all_rolladen",
        json!({"action": "down", "confirm": true}),
    );
    let answer = seen.last().unwrap();
    assert_eq!(answer["id"], 9, "{answer}");
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    let progress = progress_of(&seen);
    // One notification per blind commanded, then one per blind the house confirmed.
    assert!(
        progress.len() >= blinds.len(),
        "a progress notification per blind: {progress:#?}"
    );
    assert_eq!(
        progress[blinds.len() - 1]["progress"],
        json!(7.0),
        "{progress:#?}"
    );
    for uuid in &blinds {
        assert_eq!(ms.api.state(uuid, "targetPosition"), 1.0, "{uuid}");
    }
    // Then the wait for the house: a notification each time more blinds are confirmed,
    // the last one counting what the result reports verified.
    let verified = answer["result"]["structuredContent"]
        .to_string()
        .matches("\"verified\":true")
        .count();
    assert!(verified > 0, "the simulator confirms blinds: {answer}");
    let last = progress.last().unwrap();
    assert_eq!(
        last["message"],
        format!("{verified} of {} blinds confirmed", blinds.len()),
        "{progress:#?}"
    );
    assert_eq!(last["progress"], json!((blinds.len() + verified) as f64));
    assert_eq!(last["total"], json!((2 * blinds.len()) as f64));
}

#[test]
fn a_workflow_reports_each_step_on_its_own_stream() {
    let ms = Miniserver::demo();
    let (served, key) = served_for_model(&ms);
    let seen = stream_call(
        &served,
        &key,
        "execute_workflow_demo",
        json!({"dry_run": true}),
    );
    let answer = seen.last().unwrap();
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    let steps = answer["result"]["structuredContent"]["data"]["steps"]
        .as_array()
        .or_else(|| answer["result"]["structuredContent"]["data"]["results"].as_array())
        .unwrap_or_else(|| panic!("the run lists its steps: {answer}"))
        .len();
    assert!(steps > 1, "{answer}");
    let progress = progress_of(&seen);
    assert_eq!(progress.len(), steps, "{progress:#?}");
    assert_eq!(progress.last().unwrap()["total"], json!(steps as f64));
    assert!(progress[0]["message"]
        .as_str()
        .unwrap()
        .starts_with("step 0"));
}

#[test]
fn house_wide_blinds_run_as_a_task_for_a_client_that_declares_the_extension() {
    let ms = Miniserver::demo();
    let (served, key) = served_for_model(&ms);
    let key = Some(key.as_str());
    let blinds = jalousies();
    let d = rpc(&served, key, "server/discover", with_modern_meta(json!({})));
    assert_eq!(
        d["result"]["capabilities"]["extensions"][EXTENSION],
        json!({}),
        "{d}"
    );

    // Declaring the extension: a task handle at once, the house moves, the result inlined.
    let params = with_tasks(with_modern_meta(json!({"name": "control_all_rolladen",
        "arguments": {"action": "down", "confirm": true}})));
    let created = rpc(&served, key, "tools/call", params);
    let created = &created["result"];
    assert_eq!(created["resultType"], "task", "{created}");
    assert!(created.get("content").is_none(), "{created}");
    for field in ["createdAt", "lastUpdatedAt"] {
        assert!(
            created[field].as_str().is_some_and(|t| t.len() >= 20),
            "{created}"
        );
    }
    assert!(
        created["ttlMs"].as_u64().is_some_and(|t| t > 0),
        "{created}"
    );
    let task = created["taskId"].as_str().unwrap().to_string();
    let done = until_terminal(&served, key, &task, Duration::from_secs(30));
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_ne!(done["result"]["isError"], true, "{done}");
    assert!(
        done["result"]["structuredContent"]
            .to_string()
            .contains(&blinds[0]),
        "{done}"
    );
    for uuid in &blinds {
        assert_eq!(ms.api.state(uuid, "targetPosition"), 1.0, "{uuid}");
    }
    // Cancelling a finished task: the same empty acknowledgement, the result stays.
    let ack = rpc(
        &served,
        key,
        "tasks/cancel",
        with_tasks(with_modern_meta(json!({"taskId": task}))),
    );
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    assert!(ack["result"].get("status").is_none(), "{ack}");

    // Without the extension: the same tool answers inline, and the task methods are -32021.
    let params = with_modern_meta(json!({"name": "control_all_rolladen",
        "arguments": {"action": "up", "confirm": true}}));
    let inline = rpc(&served, key, "tools/call", params);
    assert_eq!(inline["result"]["resultType"], "complete", "{inline}");
    assert!(inline["result"].get("taskId").is_none(), "{inline}");
    for uuid in &blinds {
        assert_eq!(ms.api.state(uuid, "targetPosition"), 0.0, "{uuid}");
    }
    let refused = rpc(
        &served,
        key,
        "tasks/get",
        with_modern_meta(json!({"taskId": task})),
    );
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"][EXTENSION],
        json!({}),
        "{refused}"
    );
    // The 2025-11-25 task methods do not exist.
    for gone in ["tasks/result", "tasks/list"] {
        let r = rpc(
            &served,
            key,
            gone,
            with_tasks(with_modern_meta(json!({"taskId": task}))),
        );
        assert_eq!(r["error"]["code"], -32601, "{gone}: {r}");
    }
    let unknown = rpc(
        &served,
        key,
        "tasks/get",
        with_tasks(with_modern_meta(json!({"taskId": "0123456789abcdef"}))),
    );
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

#[test]
fn a_task_belongs_to_the_key_that_created_it() {
    use crate::support::gate::key;
    use home_mcp::auth::Role;
    let ms = Miniserver::demo();
    let owner = key(
        &format!("homekey_operator_3_{}", "ab".repeat(16)),
        Role::Operator,
    );
    let other = key(
        &format!("homekey_operator_4_{}", "cd".repeat(16)),
        Role::Operator,
    );
    let served = Served::start_with_keys(
        &ms,
        &[owner.clone(), other.clone()],
        "[auth]\nsecurity_level = \"staging\"\n",
    );
    let params = with_tasks(with_modern_meta(json!({"name": "execute_workflow_demo",
        "arguments": {"dry_run": true}})));
    let created = rpc(&served, Some(&owner.id), "tools/call", params);
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().unwrap().to_string();
    // Another key: no such task, for reading, answering or cancelling.
    for (method, extra) in [
        ("tasks/get", json!({})),
        ("tasks/cancel", json!({})),
        ("tasks/update", json!({"inputResponses": {}})),
    ] {
        let mut p = json!({"taskId": task});
        for (k, v) in extra.as_object().unwrap() {
            p[k] = v.clone();
        }
        let r = rpc(
            &served,
            Some(&other.id),
            method,
            with_tasks(with_modern_meta(p)),
        );
        assert_eq!(r["error"]["code"], -32602, "{method} by another key: {r}");
    }
    let done = until_terminal(&served, Some(&owner.id), &task, Duration::from_secs(30));
    assert_eq!(done["status"], "completed", "{done}");
    assert_ne!(done["result"]["isError"], true, "{done}");
}

#[test]
fn a_confirmation_is_asked_before_the_task_and_a_listen_stream_follows_the_task() {
    let ms = Miniserver::demo();
    let served = Served::start(&ms, "", &[]);
    let blinds = jalousies();
    let before: Vec<f64> = blinds
        .iter()
        .map(|u| ms.api.state(u, "targetPosition"))
        .collect();
    // No `confirm`, a client that can ask its user: the question comes back at once as a
    // multi round-trip request (input_required), before any task exists.
    let mut params = with_tasks(with_modern_meta(json!({"name": "control_all_rolladen",
        "arguments": {"action": "down"}})));
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"]["elicitation"] = json!({});
    let asked = rpc(&served, None, "tools/call", params.clone());
    let asked = &asked["result"];
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    assert!(asked.get("taskId").is_none(), "{asked}");
    let requests = asked["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{asked}");
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create", "{asked}");
    assert!(
        request["params"]["message"]
            .as_str()
            .unwrap()
            .contains("blinds"),
        "{asked}"
    );
    // Nothing moved while the question is open.
    for (uuid, was) in blinds.iter().zip(&before) {
        assert_eq!(ms.api.state(uuid, "targetPosition"), *was, "{uuid}");
    }

    // The user confirms: the retry becomes the task.
    params["inputResponses"] = json!({key: {"action": "accept", "content": {"confirm": true}}});
    params["requestState"] = asked["requestState"].clone();
    let created = rpc(&served, None, "tools/call", params);
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    assert!(created["result"].get("requestState").is_none(), "{created}");
    let task = created["result"]["taskId"].as_str().unwrap().to_string();

    // A listen stream for the task (and for an id that is not the caller's): the task's
    // state now, then each change, until it is completed.
    let params = with_tasks(with_modern_meta(json!({"notifications": {
        "taskIds": [task, "not-a-task-of-mine"]}})));
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": "subscriptions/listen",
        "params": params})
    .to_string();
    let h = headers("subscriptions/listen", &params, None);
    let h: Vec<(&str, &str)> = h.iter().map(|h| h.split_once(": ").unwrap()).collect();
    let events = sse::send(served.addr, "POST", "/mcp", &h, body.as_bytes()).events();
    let ack = recv_matching(&events, "the acknowledgement", |e| e.data.is_some()).json();
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([task]),
        "only the caller's live task is followed: {ack}"
    );
    let note = recv_matching(&events, "notifications/tasks completed", |e| {
        e.data
            .as_deref()
            .is_some_and(|d| d.contains("\"status\":\"completed\""))
    })
    .json();
    assert_eq!(note["method"], "notifications/tasks", "{note}");
    assert_eq!(note["params"]["taskId"], task.as_str(), "{note}");
    assert_ne!(note["params"]["result"]["isError"], true, "{note}");
    assert_eq!(
        note["params"]["result"]["structuredContent"]["data"]["confirmed_by"], "user (elicitation)",
        "{note}"
    );
    assert_eq!(
        note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 5,
        "{note}"
    );
    for uuid in &blinds {
        assert_eq!(ms.api.state(uuid, "targetPosition"), 1.0, "{uuid}");
    }
}

#[test]
fn cancelling_a_waiting_workflow_frees_its_task_slot_at_once() {
    /// Küche / Deckenlicht (Switch) in the demo house.
    const KITCHEN_LIGHT: &str = "1d5c3a92-0209-520e-ffff504f94d0e5a1";
    let ms = Miniserver::demo();
    let served = Served::start(&ms, "", &[]);
    ms.api.command(KITCHEN_LIGHT, "off");
    assert_eq!(ms.api.state(KITCHEN_LIGHT, "active"), 0.0);
    // The kitchen light on, then off again after an hour.
    let created = rpc(
        &served,
        None,
        "tools/call",
        with_modern_meta(json!({"name": "create_workflow", "arguments": {
        "name": "Warten",
        "steps": [
            {"tool": "control_room_lights", "arguments": {"room": "Küche", "action": "on"}},
            {"tool": "control_room_lights", "arguments": {"room": "Küche", "action": "off"},
             "delay_seconds": 3600}
        ]}})),
    );
    assert_ne!(created["result"]["isError"], true, "{created}");
    let run = || {
        rpc(
            &served,
            None,
            "tools/call",
            with_tasks(with_modern_meta(
                json!({"name": "execute_workflow", "arguments": {"name": "Warten"}}),
            )),
        )
    };
    // Runs start until this caller's share of running tasks (4 of the server's 8) refuses one.
    let mut tasks = Vec::new();
    let refusal = loop {
        let r = run();
        match r["result"]["taskId"].as_str() {
            Some(t) => tasks.push(t.to_string()),
            None => break r,
        }
        assert!(
            tasks.len() <= 4,
            "more than 4 tasks of one caller run at once"
        );
    };
    assert_eq!(tasks.len(), 4, "{refusal}");
    assert_eq!(refusal["error"]["message"], "Too many tasks", "{refusal}");
    assert!(
        refusal["error"]["data"]["details"]
            .as_str()
            .is_some_and(|d| d.contains("per caller")),
        "{refusal}"
    );
    assert_eq!(
        ms.api.state(KITCHEN_LIGHT, "active"),
        1.0,
        "the first steps ran"
    );
    for t in &tasks {
        let p = with_tasks(with_modern_meta(json!({"taskId": t})));
        let ack = rpc(&served, None, "tasks/cancel", p.clone());
        assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
        let state = rpc(&served, None, "tasks/get", p);
        assert_eq!(state["result"]["status"], "cancelled", "{state}");
    }
    // The waits end with the cancellation: a new run gets a slot again.
    let task = wait_until("a slot freed by the cancelled runs", PATIENCE, || {
        let r = run();
        match r["result"]["taskId"].as_str() {
            Some(t) => Ok(t.to_string()),
            None => {
                assert_eq!(r["error"]["message"], "Too many tasks", "{r}");
                Err(r)
            }
        }
    });
    let p = with_tasks(with_modern_meta(json!({"taskId": task})));
    rpc(&served, None, "tasks/cancel", p);
    // The off step of the cancelled runs never ran.
    assert_eq!(ms.api.state(KITCHEN_LIGHT, "active"), 1.0);
}

#[test]
fn one_key_with_every_task_slot_busy_and_a_flood_leaves_another_key_its_share() {
    use crate::support::gate::key;
    use home_mcp::auth::Role;
    let ms = Miniserver::demo();
    let busy = key(
        &format!("homekey_operator_6_{}", "a1".repeat(16)),
        Role::Operator,
    );
    let other = key(
        &format!("homekey_operator_7_{}", "b2".repeat(16)),
        Role::Operator,
    );
    let served = Served::start_with_keys(
        &ms,
        &[busy.clone(), other.clone()],
        "[auth]\nsecurity_level = \"staging\"\n",
    );
    let (busy, other) = (Some(busy.id.as_str()), Some(other.id.as_str()));
    let call = |key, name: &str, arguments: Value| {
        rpc(
            &served,
            key,
            "tools/call",
            with_tasks(with_modern_meta(
                json!({"name": name, "arguments": arguments}),
            )),
        )
    };
    let quick = |key| call(key, "execute_workflow_demo", json!({"dry_run": true}));
    // The other key's finished task, before the flood.
    let before = quick(other);
    let before = before["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {before}"))
        .to_string();
    let done = until_terminal(&served, other, &before, Duration::from_secs(30));
    assert_eq!(done["status"], "completed", "{done}");

    // One key: a workflow that waits an hour, run until its share of task threads is busy.
    let created = rpc(
        &served,
        busy,
        "tools/call",
        with_modern_meta(json!({"name": "create_workflow", "arguments": {
        "name": "Lange",
        "steps": [
            {"tool": "control_room_lights", "arguments": {"room": "Küche", "action": "on"}},
            {"tool": "control_room_lights", "arguments": {"room": "Küche", "action": "off"},
             "delay_seconds": 3600}
        ]}})),
    );
    assert_ne!(created["result"]["isError"], true, "{created}");
    let long = |key| call(key, "execute_workflow", json!({"name": "Lange"}));
    let mut running = Vec::new();
    let refusal = loop {
        let r = long(busy);
        match r["result"]["taskId"].as_str() {
            Some(t) => running.push(t.to_string()),
            None => break r,
        }
        assert!(
            running.len() <= 8,
            "one key ran more than the server's 8 tasks"
        );
    };
    assert!(!running.is_empty(), "{refusal}");
    assert_eq!(refusal["error"]["message"], "Too many tasks", "{refusal}");
    // ...and a flood of its tasks, long and quick: every one refused, nothing kept for them.
    for i in 0..40 {
        let r = if i % 2 == 0 { long(busy) } else { quick(busy) };
        assert_eq!(r["error"]["message"], "Too many tasks", "flood {i}: {r}");
    }

    // The other key: its finished result is still there, and a new task runs and is read.
    let still = rpc(
        &served,
        other,
        "tasks/get",
        with_tasks(with_modern_meta(json!({"taskId": before}))),
    );
    assert_eq!(still["result"]["status"], "completed", "{still}");
    assert_ne!(still["result"]["result"]["isError"], true, "{still}");
    let mine = quick(other);
    assert_eq!(mine["result"]["resultType"], "task", "{mine}");
    let task = mine["result"]["taskId"].as_str().unwrap().to_string();
    let done = until_terminal(&served, other, &task, Duration::from_secs(30));
    assert_eq!(done["status"], "completed", "{done}");
    assert_ne!(done["result"]["isError"], true, "{done}");
    assert!(
        done["result"]["structuredContent"].is_object(),
        "the finished result: {done}"
    );
    for t in &running {
        rpc(
            &served,
            busy,
            "tasks/cancel",
            with_tasks(with_modern_meta(json!({"taskId": t}))),
        );
    }
}
