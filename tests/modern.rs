//! MCP 2026-07-28 next to the older revisions, from outside: the real `serve` over HTTP and
//! the real `stdio`, against the simulated Miniserver. Expected values come from the spec
//! (`docs/specification/2026-07-28/`) and from the simulator's HTTP API.

use serde_json::{json, Value};

use crate::support::mcp::{with_modern_meta, McpHttp, McpModern, McpStdio};
use crate::support::server::{Miniserver, Served};
use crate::support::sse;
use crate::support::wait::recv_matching;

/// Küche / Deckenlicht (Switch) in the demo house.
const KITCHEN_LIGHT: &str = "1d5c3a92-0209-520e-ffff504f94d0e5a1";

/// Every version the server serves, newest first (spec: `supportedVersions`).
const VERSIONS: [&str; 5] = [
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];

fn names(list: &Value, key: &str, field: &str) -> Vec<String> {
    list[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {list}"))
        .iter()
        .map(|t| t[field].as_str().unwrap().to_string())
        .collect()
}

fn assert_cacheable(result: &Value, what: &str) {
    assert_eq!(result["resultType"], "complete", "{what}: {result}");
    assert!(result["ttlMs"].as_u64().is_some(), "{what}: ttlMs {result}");
    assert!(
        matches!(result["cacheScope"].as_str(), Some("public" | "private")),
        "{what}: cacheScope {result}"
    );
}

/// Issue 28: `server/discover` and `subscriptions/listen` exist only in 2026-07-28. Inside a
/// session negotiated at 2025-06-18 (no `_meta`, the session's headers) they are unknown
/// methods (-32601, as a 2025-06-18 server answers), not held to the new era's headers
/// (-32020); the session goes on, and a 2026-07-28 discovery beside it still works.
#[test]
fn server_discover_inside_a_2025_06_18_session_is_method_not_found() {
    let ms = Miniserver::demo();
    let served = Served::start(&ms, "", &[]);
    let mut session = McpHttp::connect(served.addr, None);
    for method in ["server/discover", "subscriptions/listen"] {
        let r = session.rpc(method, json!({}));
        assert_eq!(
            r["error"]["code"], -32601,
            "{method} in a 2025-06-18 session: {r}"
        );
        assert!(r.get("result").is_none(), "{r}");
    }
    let listed = session.rpc("tools/list", json!({}));
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    let d = McpModern::new(served.addr).result("server/discover", json!({}));
    assert_eq!(d["supportedVersions"], json!(VERSIONS), "{d}");
}

#[test]
fn discover_then_sessionless_list_call_and_read() {
    let ms = Miniserver::demo();
    let served = Served::start(&ms, "", &[]);
    let mut c = McpModern::new(served.addr);

    let d = c.result("server/discover", json!({}));
    assert_eq!(d["supportedVersions"], json!(VERSIONS), "{d}");
    assert!(d["capabilities"]["tools"].is_object(), "{d}");
    assert!(d["capabilities"]["resources"].is_object(), "{d}");
    assert!(d["capabilities"]["prompts"].is_object(), "{d}");
    assert_eq!(
        d["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "home-mcp",
        "{d}"
    );
    assert!(d["instructions"].as_str().is_some_and(|i| !i.is_empty()));
    assert_cacheable(&d, "server/discover");

    // tools/list: complete, cacheable and in the same order every time.
    let tools = c.result("tools/list", json!({}));
    assert_cacheable(&tools, "tools/list");
    let first = names(&tools, "tools", "name");
    assert!(first.contains(&"list_rooms".to_string()), "{first:?}");
    let again = names(&c.result("tools/list", json!({})), "tools", "name");
    assert_eq!(first, again, "tools/list order is deterministic");

    // tools/call without a session: the kitchen light as the simulator has it.
    ms.api.command(KITCHEN_LIGHT, "on");
    assert_eq!(ms.api.state(KITCHEN_LIGHT, "active"), 1.0);
    let r = c.result(
        "tools/call",
        json!({"name": "get_lights_status", "arguments": {}}),
    );
    assert_eq!(r["resultType"], "complete", "{r}");
    assert_ne!(r["isError"], true, "{r}");
    assert!(
        r["structuredContent"].to_string().contains(KITCHEN_LIGHT),
        "the answer names the device: {r}"
    );
    assert!(r.get("ttlMs").is_none(), "tools/call is not cacheable: {r}");

    // resources: list and read, with private cache hints (the house's data).
    let list = c.result("resources/list", json!({}));
    assert_cacheable(&list, "resources/list");
    assert_eq!(list["cacheScope"], "private");
    assert!(names(&list, "resources", "uri").contains(&"home://lighting".to_string()));
    let read = c.result("resources/read", json!({"uri": "home://lighting"}));
    assert_cacheable(&read, "resources/read");
    assert_eq!(read["contents"][0]["uri"], "home://lighting", "{read}");
    let prompts = c.result("prompts/list", json!({}));
    assert_cacheable(&prompts, "prompts/list");
    let templates = c.result("resources/templates/list", json!({}));
    assert_cacheable(&templates, "resources/templates/list");

    // A missing resource is -32602 for 2026-07-28 (it was -32002).
    let r = c.post("resources/read", json!({"uri": "home://no-such-thing"}));
    assert_eq!(r.json()["error"]["code"], -32602, "{r:?}");
    assert_eq!(
        r.json()["error"]["data"]["uri"],
        "home://no-such-thing",
        "{r:?}"
    );
}

#[test]
fn version_errors_header_mismatch_and_removed_methods() {
    let ms = Miniserver::demo();
    let served = Served::start(&ms, "", &[]);
    let mut c = McpModern::new(served.addr);
    let discover = |version: &str, header: &str, id: u64| {
        let mut params = with_modern_meta(json!({}));
        params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(version);
        let mut headers = McpModern::headers("server/discover", &params);
        headers[2] = format!("MCP-Protocol-Version: {header}");
        (
            headers,
            json!({"jsonrpc": "2.0", "id": id, "method": "server/discover", "params": params}),
        )
    };

    // An unknown version: 400, UnsupportedProtocolVersionError with the supported list.
    let (h, body) = discover("1900-01-01", "1900-01-01", 41);
    let r = c.raw(&h, &body);
    assert_eq!(r.status, 400, "{r:?}");
    let v = r.json();
    assert_eq!(v["id"], 41, "{v}");
    assert_eq!(v["error"]["code"], -32022, "{v}");
    assert_eq!(v["error"]["data"]["supported"], json!(VERSIONS), "{v}");
    assert_eq!(v["error"]["data"]["requested"], "1900-01-01", "{v}");

    // Header and body disagree: HeaderMismatch.
    let (h, body) = discover("1900-01-01", "2026-07-28", 42);
    let r = c.raw(&h, &body);
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (400, json!(-32020)),
        "{r:?}"
    );
    assert_eq!(r.json()["id"], 42);

    // Mcp-Method and Mcp-Name are checked against the body; a base64 sentinel name decodes.
    let params = with_modern_meta(json!({"uri": "home://lighting"}));
    let body = json!({"jsonrpc": "2.0", "id": 43, "method": "resources/read", "params": params});
    let mut h = McpModern::headers("resources/read", &params);
    h[3] = "Mcp-Method: tools/list".into();
    let r = c.raw(&h, &body);
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (400, json!(-32020)),
        "{r:?}"
    );
    let mut h = McpModern::headers("resources/read", &params);
    h[4] = "Mcp-Name: home://blinds".into();
    let r = c.raw(&h, &body);
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (400, json!(-32020)),
        "{r:?}"
    );
    h[4] = "Mcp-Name: =?base64?aG9tZTovL2xpZ2h0aW5n?=".into(); // home://lighting
    let r = c.raw(&h, &body);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["result"]["contents"][0]["uri"], "home://lighting");
    h.truncate(4);
    let r = c.raw(&h, &body);
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (400, json!(-32020)),
        "no Mcp-Name: {r:?}"
    );

    // `_meta` without client capabilities: -32602, 400.
    let body = json!({"jsonrpc": "2.0", "id": 44, "method": "tools/list",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
    let r = c.raw(&McpModern::headers("tools/list", &json!({})), &body);
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (400, json!(-32602)),
        "{r:?}"
    );
    assert_eq!(r.json()["id"], 44);

    // A notification without a session is accepted (202) and dropped.
    let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "user"}});
    let r = c.raw(
        &McpModern::headers("notifications/cancelled", &json!({})),
        &note,
    );
    assert_eq!(r.status, 202, "{r:?}");

    // What 2026-07-28 removed, and unknown methods: 404 with -32601.
    for method in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "no/such",
    ] {
        let r = c.post(method, json!({}));
        assert_eq!(r.status, 404, "{method}: {r:?}");
        assert_eq!(r.json()["error"]["code"], -32601, "{method}: {r:?}");
    }
}

#[test]
fn older_sessions_work_as_before_next_to_modern_requests() {
    let ms = Miniserver::demo();
    let served = Served::start(&ms, "", &[]);
    let mut modern = McpModern::new(served.addr);
    let mut legacy = McpHttp::connect(served.addr, None);
    assert!(legacy.session.is_some());
    let tools = legacy.rpc("tools/list", json!({}));
    let result = &tools["result"];
    assert!(result.get("resultType").is_none(), "{result}");
    assert!(result.get("ttlMs").is_none(), "{result}");
    let legacy_names = names(result, "tools", "name");
    let modern_names = names(&modern.result("tools/list", json!({})), "tools", "name");
    assert_eq!(legacy_names, modern_names);
    // initialize asking for 2026-07-28 negotiates the newest handshake version instead.
    let r = crate::support::net::request(
        served.addr,
        "POST",
        "/mcp",
        &["Content-Type: application/json", "Accept: application/json"],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2026-07-28", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}})
        .to_string(),
    );
    assert_eq!(r.json()["result"]["protocolVersion"], "2025-11-25", "{r:?}");
    // The older session still answers after modern traffic.
    let r = legacy.rpc("ping", json!({}));
    assert_eq!(r["result"], json!({}), "{r}");
}

/// POSTs the 2026-07-28 request `method` with `params` as JSON-RPC `id` to `/mcp` with its
/// headers ([`McpModern::headers`], accepting SSE); the answer, its head read and its body open.
fn post_modern(addr: std::net::SocketAddr, id: Value, method: &str, params: &Value) -> sse::Http {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let headers = McpModern::headers(method, params);
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|h| h.split_once(": ").unwrap())
        .collect();
    sse::send(addr, "POST", "/mcp", &headers, body.to_string().as_bytes())
}

#[test]
fn subscriptions_listen_receives_an_update_after_a_change_at_the_simulator() {
    let ms = Miniserver::demo();
    ms.api.command(KITCHEN_LIGHT, "off");
    let served = Served::start(&ms, "", &[]);
    let params = with_modern_meta(json!({"notifications": {
        "resourceSubscriptions": ["home://lighting", "home://no-such-thing"],
        "resourcesListChanged": true,
        "toolsListChanged": true,
    }}));
    let stream = post_modern(
        served.addr,
        json!("listen-1"),
        "subscriptions/listen",
        &params,
    );
    assert_eq!(stream.status, 200);
    let events = stream.events();
    let first = recv_matching(&events, "the acknowledgement", |e| e.data.is_some());
    let ack = first.json();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-1",
        "{ack}"
    );
    // What the server honours: the existing URI, list changes; its tools never change.
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourceSubscriptions": ["home://lighting"], "resourcesListChanged": true}),
        "{ack}"
    );

    // A wall button switches the kitchen light on.
    ms.api.command(KITCHEN_LIGHT, "on");
    assert_eq!(ms.api.state(KITCHEN_LIGHT, "active"), 1.0);
    let update = recv_matching(
        &events,
        "notifications/resources/updated for home://lighting",
        |e| {
            e.error.is_none()
                && e.data.is_some()
                && e.json()["method"] == "notifications/resources/updated"
        },
    );
    let update = update.json();
    assert_eq!(update["params"]["uri"], "home://lighting", "{update}");
    assert_eq!(
        update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-1",
        "{update}"
    );
    // Reading it again shows the light on, as the simulator has it.
    let mut c = McpModern::new(served.addr);
    let read = c.result("resources/read", json!({"uri": "home://lighting"}));
    let text = read["contents"][0]["text"].as_str().unwrap();
    assert!(text.contains(KITCHEN_LIGHT), "{text}");
}

#[test]
fn stdio_answers_the_discover_probe_and_serves_both_eras() {
    let mut stdio = McpStdio::spawn(&["--demo"], &[]);
    let d = stdio.rpc("server/discover", with_modern_meta(json!({})));
    assert_eq!(d["result"]["supportedVersions"], json!(VERSIONS), "{d}");
    assert_eq!(d["result"]["resultType"], "complete", "{d}");
    let tools = stdio.rpc("tools/list", with_modern_meta(json!({})));
    assert_eq!(tools["result"]["resultType"], "complete", "{tools}");
    assert!(tools["result"]["ttlMs"].as_u64().is_some(), "{tools}");
    let mut bad = with_modern_meta(json!({}));
    bad["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let r = stdio.rpc("tools/list", bad);
    assert_eq!(r["error"]["code"], -32022, "{r}");
    assert_eq!(r["error"]["data"]["supported"], json!(VERSIONS), "{r}");
    // A dual-era client that falls back: initialize still works on the same process.
    let init = stdio.rpc(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}}),
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    let legacy = stdio.rpc("tools/list", json!({}));
    assert!(legacy["result"].get("resultType").is_none(), "{legacy}");
}

/// `home-mcp stdio` against the simulated Miniserver `ms` (user and password `demo`), with its
/// data in a fresh directory named after `tag` plus the `extra` environment; the directory
/// lives as long as the returned guard (bind it before the server so it outlives it).
fn stdio_against(
    ms: &Miniserver,
    tag: &str,
    extra: &[(&str, &str)],
) -> (crate::support::server::TempDir, McpStdio) {
    let data = crate::support::server::TempDir::new(tag);
    let host = ms.api.addr.to_string();
    let data_dir = data.0.display().to_string();
    let mut env = vec![
        ("HOME_HOST", host.as_str()),
        ("HOME_USER", "demo"),
        ("HOME_PASS", "demo"),
        ("HOME_DATA_DIR", data_dir.as_str()),
    ];
    env.extend_from_slice(extra);
    (data, McpStdio::spawn(&[], &env))
}

#[test]
fn stdio_subscriptions_listen_receives_an_update_after_a_change_at_the_simulator() {
    let ms = Miniserver::demo();
    ms.api.command(KITCHEN_LIGHT, "off");
    let (_data, mut stdio) = stdio_against(&ms, "stdio-listen", &[]);
    // Wait until the server answers before subscribing.
    let d = stdio.rpc("server/discover", with_modern_meta(json!({})));
    assert_eq!(d["result"]["resultType"], "complete", "{d}");
    stdio.send(
        &json!({"jsonrpc": "2.0", "id": 77, "method": "subscriptions/listen",
        "params": with_modern_meta(json!({"notifications": {
            "resourceSubscriptions": ["home://lighting"]}}))}),
    );
    let ack = stdio.next_matching("the acknowledgement", |v| {
        v["method"] == "notifications/subscriptions/acknowledged"
    });
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 77,
        "{ack}"
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourceSubscriptions": ["home://lighting"]}),
        "{ack}"
    );
    ms.api.command(KITCHEN_LIGHT, "on");
    assert_eq!(ms.api.state(KITCHEN_LIGHT, "active"), 1.0);
    let update = stdio.next_matching("notifications/resources/updated", |v| {
        v["method"] == "notifications/resources/updated"
    });
    assert_eq!(update["params"]["uri"], "home://lighting", "{update}");
    assert_eq!(
        update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        77
    );
}

/// A 2026-07-28 `tools/call` of the fake handler's `name` with `meta_extra` merged into the
/// request's `_meta`, sent over an SSE-accepting POST; the stream's JSON messages in order.
fn modern_stream_call(addr: std::net::SocketAddr, name: &str, meta_extra: Value) -> Vec<Value> {
    let mut params = with_modern_meta(json!({"name": name, "arguments": {}}));
    for (k, v) in meta_extra.as_object().unwrap() {
        params["_meta"][k] = v.clone();
    }
    let mut s = post_modern(addr, json!(9), "tools/call", &params);
    assert_eq!(s.status, 200);
    s.messages_until_response()
}

#[test]
fn progress_and_logs_travel_on_the_stream_of_their_request() {
    let server = sse::start();
    let addr = server.addr();
    let seen = modern_stream_call(
        addr,
        "progress",
        json!({"progressToken": "tok", "io.modelcontextprotocol/logLevel": "debug"}),
    );
    let methods: Vec<&str> = seen.iter().filter_map(|v| v["method"].as_str()).collect();
    assert_eq!(
        methods
            .iter()
            .filter(|m| **m == "notifications/progress")
            .count(),
        3,
        "{seen:#?}"
    );
    assert_eq!(
        methods
            .iter()
            .filter(|m| **m == "notifications/message")
            .count(),
        1,
        "{seen:#?}"
    );
    let answer = seen.last().unwrap();
    assert_eq!(answer["id"], 9, "{answer}");
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "done", "{answer}");

    // Without a logLevel the request gets no log messages (the spec's MUST NOT).
    let seen = modern_stream_call(addr, "progress", json!({"progressToken": "tok"}));
    assert!(
        seen.iter().all(|v| v["method"] != "notifications/message"),
        "{seen:#?}"
    );
    assert_eq!(seen.last().unwrap()["result"]["content"][0]["text"], "done");

    // No server-to-client requests in this era, even for a client that declares elicitation.
    let seen = modern_stream_call(
        addr,
        "ask",
        json!({"progressToken": "t2",
               "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}),
    );
    assert!(
        seen.iter()
            .all(|v| v.get("method").is_none() || v.get("id").is_none()),
        "a request was sent to the client: {seen:#?}"
    );
    assert_eq!(
        seen.last().unwrap()["result"]["content"][0]["text"],
        "cannot elicit"
    );
}

#[test]
fn a_listen_stream_gets_list_changes_it_asked_for_and_a_graceful_end() {
    let server = sse::start();
    let addr = server.addr();
    let params = with_modern_meta(json!({"notifications": {"resourcesListChanged": true}}));
    let events = post_modern(addr, json!(5), "subscriptions/listen", &params).events();
    let ack = recv_matching(&events, "the acknowledgement", |e| e.data.is_some()).json();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    // Resource updates were not asked for: a listen stream gets only list changes.
    server.mcp.notify_resource_updated("test://watched");
    server.mcp.notify_list_changed();
    let next = recv_matching(&events, "the list change", |e| e.data.is_some()).json();
    assert_eq!(
        next["method"], "notifications/resources/list_changed",
        "{next}"
    );
    assert_eq!(
        next["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 5,
        "{next}"
    );
    // The server stops: the listen request gets its completion result, tagged.
    server.stop();
    let end = recv_matching(&events, "the graceful end", |e| e.data.is_some()).json();
    assert_eq!(end["id"], 5, "{end}");
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    assert_eq!(
        end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 5,
        "{end}"
    );
}

#[test]
fn stdio_asks_for_a_confirmation_with_an_input_required_result() {
    const ALARM: &str = "1d5c3c5b-0225-5e8d-ffff504f94d0e5a1";
    let ms = Miniserver::demo();
    let (_data, mut stdio) = stdio_against(
        &ms,
        "stdio-mrtr",
        &[("HOME_VISU_PASS", home_mcp::sim::DEMO_VISU_PASSWORD)],
    );
    let mut params = with_modern_meta(json!({"name": "arm_alarm",
        "arguments": {"alarm": ALARM, "delayed": false}}));
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {}});
    let asked = stdio.rpc("tools/call", params.clone());
    let r = &asked["result"];
    assert_eq!(r["resultType"], "input_required", "{asked}");
    let q = &r["inputRequests"]["confirm"];
    assert_eq!(q["method"], "elicitation/create", "{asked}");
    assert!(
        q["params"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Alarmanlage")),
        "{asked}"
    );
    assert!(
        crate::support::wire::sent_commands(&ms.sim, ALARM).is_empty(),
        "asking sends nothing"
    );
    params["requestState"] = r["requestState"].clone();
    params["inputResponses"] =
        json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    let done = stdio.rpc("tools/call", params);
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["data"]["confirmed_by"], "user (elicitation)",
        "{done}"
    );
    assert_eq!(
        crate::support::wire::sent_commands(&ms.sim, ALARM).len(),
        1,
        "armed once, after the answer"
    );
}

/// A 2026-07-28 client that declares elicitation but not its URL mode cannot be offered the
/// visualisation password page (the password must never go through a form): a secured alarm
/// without a configured password is a tool error that says how the owner configures it, and
/// nothing reaches the simulator. (With URL mode declared the page is offered:
/// `human::a_2026_client_types_the_password_on_the_page_and_its_retry_arms_the_alarm`.)
#[test]
fn a_modern_client_without_url_mode_gets_no_password_page_and_nothing_is_sent() {
    const ALARM: &str = "1d5c3c5b-0225-5e8d-ffff504f94d0e5a1";
    let ms = Miniserver::demo();
    let served = Served::start(&ms, "", &[]);
    let c = McpModern::new(served.addr);
    let mut params = with_modern_meta(json!({"name": "arm_alarm",
        "arguments": {"alarm": ALARM, "delayed": false}}));
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {"form": {}}});
    let r = c.raw(
        &McpModern::headers("tools/call", &params),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let answer = r.json();
    let result = &answer["result"];
    assert_eq!(result["resultType"], "complete", "{answer}");
    assert_eq!(result["isError"], true, "{answer}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("HOME_VISU_PASS") && text.contains("URL-mode elicitation"),
        "{answer}"
    );
    assert!(
        crate::support::wire::sent_commands(&ms.sim, ALARM).is_empty(),
        "nothing sent to the alarm"
    );
    assert_eq!(ms.api.state(ALARM, "armed"), 0.0, "not armed");
}
