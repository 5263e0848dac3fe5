//! Request ids in answers (issue 16, Errors), from outside: the real `serve` and `stdio`
//! binaries against the demo house's simulator. JSON-RPC 2.0 §5: a response carries the id of
//! the request it answers, `null` only when the id could not be read; ids are strings or
//! numbers and come back exactly as sent, whatever their size or precision. Every refusal of a
//! `POST` to `/mcp` or `/message` (HTTP 400, 401, 403, 404, 406, 415, 429) echoes the request's
//! id, and for a batch one error per request with its id; a body over the limit (413, never
//! read) and GET/DELETE keep `null`. Bodies are written by hand: the ids' text is what is
//! tested, and a `serde_json::Value` would round a large number.

use crate::support;
use support::gate::key;
use support::mcp::{McpHttp, McpStdio};
use support::net::{request, Reply};
use support::server::{Miniserver, Served};

use home_mcp::auth::Role;
use serde_json::Value;

const MONITOR: &str = "homekey_monitor_ids_1";

/// The ids a client may send, as JSON text: beyond 2^53 (no `f64` holds them), negative,
/// fractional (allowed, discouraged by the spec), strings.
const IDS: [&str; 7] = [
    "9007199254740993",
    "123456789012345678901234567890",
    "-9223372036854775809",
    "-17",
    "1.50",
    "\"req-7\"",
    "\"\"",
];

/// A request with the id `id` (JSON text) as the client writes it.
fn message(id: &str, method: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{}}}}"#)
}

/// `POST path` with a JSON body and `extra` header lines.
fn post(served: &Served, path: &str, extra: &[&str], body: &str) -> Reply {
    let mut headers = vec![
        "Content-Type: application/json".to_string(),
        "Accept: application/json, text/event-stream".to_string(),
    ];
    headers.extend(extra.iter().map(|h| h.to_string()));
    request(served.addr, "POST", path, &headers, body)
}

/// Asserts `r` is a JSON-RPC error answer with HTTP `status` that carries exactly the ids
/// `ids` (JSON text, in order): one error object for one id, an array of errors for several.
fn assert_refused_with(r: &Reply, status: u16, ids: &[&str], what: &str) {
    assert_eq!(r.status, status, "{what}: {r:?}");
    let answers: Vec<Value> = match r.json() {
        Value::Array(items) if ids.len() > 1 => items,
        single @ Value::Object(_) if ids.len() == 1 => vec![single],
        other => panic!("{what}: {} answers expected: {other}", ids.len()),
    };
    assert_eq!(answers.len(), ids.len(), "{what}: {}", r.body);
    for a in &answers {
        assert!(a["error"]["code"].is_i64(), "{what}: an error: {a}");
        assert_eq!(a["jsonrpc"], "2.0", "{what}: {a}");
    }
    let mut rest = r.body.as_str();
    for id in ids {
        let needle = format!(r#""id":{id},"#);
        let at = rest
            .find(&needle)
            .unwrap_or_else(|| panic!("{what}: id {id} exactly as sent, in order: {}", r.body));
        rest = &rest[at + needle.len()..];
    }
}

/// A development server (anonymous requests pass, presented keys are checked) with a monitor
/// key allowed `monitor_budget` requests a minute, and bodies of at most 4 KiB.
fn start(ms: &Miniserver, monitor_budget: u32) -> Served {
    Served::start_with_keys(
        ms,
        &[key(MONITOR, Role::Monitor)],
        &format!(
            "[server]\nmax_body_bytes = 4096\n\n[auth]\nsecurity_level = \"development\"\n\n\
             [auth.rate_limits]\nmonitor = {monitor_budget}\n"
        ),
    )
}

#[test]
fn refusals_of_the_transport_echo_the_request_id() {
    let ms = Miniserver::demo();
    let served = start(&ms, 200);
    let big = IDS[1];
    let ping = message(big, "ping");
    let session = McpHttp::connect(served.addr, None)
        .session
        .expect("a session");
    let sid = format!("Mcp-Session-Id: {session}");

    let r = post(
        &served,
        "/mcp",
        &["MCP-Protocol-Version: 1999-01-01"],
        &ping,
    );
    assert_refused_with(&r, 400, &[big], "an unsupported MCP-Protocol-Version");
    let r = post(&served, "/mcp", &[], &ping);
    assert_refused_with(&r, 400, &[big], "no Mcp-Session-Id");
    let r = post(&served, "/mcp", &["Mcp-Session-Id: nosuchsession"], &ping);
    assert_refused_with(&r, 404, &[big], "an unknown session");
    let r = request(
        served.addr,
        "POST",
        "/mcp",
        &["Content-Type: application/json", "Accept: text/html"],
        &ping,
    );
    assert_refused_with(&r, 406, &[big], "Accept without JSON or SSE");
    let r = request(
        served.addr,
        "POST",
        "/mcp",
        &["Content-Type: text/plain", "Accept: application/json"],
        &ping,
    );
    assert_refused_with(&r, 415, &[big], "Content-Type not JSON");
    let r = post(
        &served,
        "/mcp",
        &["Origin: http://evil.example.com", &sid],
        &ping,
    );
    assert_refused_with(&r, 403, &[big], "a foreign Origin (refused by the router)");

    // A batch on a 2025-06-18 session: one error per request, each with its id; the
    // notification in it has no answer.
    let batch = format!(
        r#"[{},{{"jsonrpc":"2.0","method":"notifications/initialized"}},{},{}]"#,
        message(IDS[0], "ping"),
        message(IDS[5], "tools/list"),
        message(IDS[4], "ping")
    );
    let r = post(&served, "/mcp", &[&sid], &batch);
    assert_refused_with(&r, 400, &[IDS[0], IDS[5], IDS[4]], "a batch on 2025-06-18");
    assert!(r.body.contains("batches are not supported"), "{}", r.body);
    // The same batch refused before the session check: the ids all the same.
    let r = post(&served, "/mcp", &["Mcp-Session-Id: nosuchsession"], &batch);
    assert_refused_with(
        &r,
        404,
        &[IDS[0], IDS[5], IDS[4]],
        "a batch, unknown session",
    );

    // The legacy transport's POST /message.
    let r = post(
        &served,
        "/message?sessionId=0123456789abcdef0123456789abcdef",
        &[],
        &ping,
    );
    assert_refused_with(&r, 404, &[big], "/message to an unknown session");
    let r = post(&served, "/message?sessionId=nope", &[], &ping);
    assert_refused_with(&r, 400, &[big], "/message with a malformed session id");

    // Where no id can be read, `null`: not JSON, a notification, a body over the limit
    // (413, not read).
    for (body, status, what) in [
        ("{nope".to_string(), 400, "not JSON"),
        (
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
            400,
            "a notification",
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":{big},"method":"ping","params":{{"pad":"{}"}}}}"#,
                "x".repeat(5000)
            ),
            413,
            "a body over max_body_bytes",
        ),
    ] {
        let r = post(&served, "/mcp", &[], &body);
        assert_eq!(r.status, status, "{what}: {r:?}");
        assert_eq!(r.json()["id"], Value::Null, "{what}: {}", r.body);
    }
}

#[test]
fn refusals_of_the_gate_echo_the_request_id() {
    let ms = Miniserver::demo();
    let budget = 4;
    let served = start(&ms, budget);
    let big = IDS[1];
    let call = |id: &str, tool: &str, arguments: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}"#
        )
    };
    let rooms = |id: &str| call(id, "list_rooms", "{}");

    let r = post(
        &served,
        "/mcp",
        &["X-API-Key: homekey_monitor_nosuchkey_9"],
        &rooms(big),
    );
    assert_refused_with(&r, 401, &[big], "an unknown key");
    assert!(r.body.contains("INVALID_API_KEY"), "{}", r.body);

    // The monitor key: a session (requests 1 and 2), a switch it may not make (3: 403), a
    // request without session (4: 400), then its budget is used up: 429, for a single
    // request and per request of a batch, on /mcp and /message.
    let monitor = McpHttp::connect(served.addr, Some(MONITOR));
    let key = format!("X-API-Key: {MONITOR}");
    let sid = format!("Mcp-Session-Id: {}", monitor.session.as_deref().unwrap());
    let mark = ms.sim.request_count();
    let switch = call(
        big,
        "control_device",
        r#"{"device":"Deckenlicht","room":"Küche","action":"on"}"#,
    );
    let r = post(&served, "/mcp", &[&key, &sid], &switch);
    assert_refused_with(&r, 403, &[big], "a switch with a monitor key");
    assert!(r.body.contains("INSUFFICIENT_PERMISSIONS"), "{}", r.body);
    assert!(
        support::wire::commands_since(&ms.sim, mark).is_empty(),
        "nothing was switched"
    );
    let r = post(&served, "/mcp", &[&key], &rooms(IDS[0]));
    assert_refused_with(&r, 400, &[IDS[0]], "the last request within the budget");

    let r = post(&served, "/mcp", &[&key, &sid], &rooms(big));
    assert_refused_with(&r, 429, &[big], "beyond the budget");
    assert!(r.body.contains("RATE_LIMIT_EXCEEDED"), "{}", r.body);
    assert!(r.header("Retry-After").is_some(), "{r:?}");
    let batch = format!("[{},{}]", rooms(IDS[2]), rooms(IDS[6]));
    let r = post(&served, "/mcp", &[&key, &sid], &batch);
    assert_refused_with(&r, 429, &[IDS[2], IDS[6]], "a batch beyond the budget");
    let r = post(
        &served,
        "/message?sessionId=0123456789abcdef0123456789abcdef",
        &[&key],
        &rooms(IDS[3]),
    );
    assert_refused_with(&r, 429, &[IDS[3]], "/message beyond the budget");
}

#[test]
fn ids_come_back_exactly_as_sent_over_http() {
    let ms = Miniserver::demo();
    let served = Served::start(&ms, "", &[]);
    let session = McpHttp::connect(served.addr, None)
        .session
        .expect("a session");
    let sid = format!("Mcp-Session-Id: {session}");
    for id in IDS {
        let r = post(&served, "/mcp", &[&sid], &message(id, "ping"));
        assert_eq!(r.status, 200, "{id}: {r:?}");
        assert!(
            r.body.contains(&format!(r#""id":{id},"result":{{}}"#)),
            "ping {id}: {}",
            r.body
        );
        let r = post(&served, "/mcp", &[&sid], &message(id, "no/such/method"));
        assert_eq!(r.status, 200, "{id}: {r:?}");
        assert!(
            r.body
                .contains(&format!(r#""id":{id},"error":{{"code":-32601"#)),
            "an unknown method {id}: {}",
            r.body
        );
    }
}

#[test]
fn ids_come_back_exactly_as_sent_over_stdio() {
    let mut stdio = McpStdio::start(&["--demo"], &[]);
    for id in IDS {
        let answer = stdio.exchange_raw(&message(id, "ping"));
        assert!(
            answer.contains(&format!(r#""id":{id},"result":{{}}"#)),
            "ping {id}: {answer}"
        );
        let answer = stdio.exchange_raw(&message(id, "no/such/method"));
        assert!(
            answer.contains(&format!(r#""id":{id},"error":{{"code":-32601"#)),
            "an unknown method {id}: {answer}"
        );
        let answer =
            stdio.exchange_raw(&format!(r#"{{"jsonrpc":"1.0","id":{id},"method":"ping"}}"#));
        assert!(
            answer.contains(&format!(r#""id":{id},"error":{{"code":-32600"#)),
            "an invalid request {id}: {answer}"
        );
    }
    // A batch on 2025-06-18: one error per request with its id.
    let answer = stdio.exchange_raw(&format!(
        "[{},{}]",
        message(IDS[1], "ping"),
        message(IDS[5], "ping")
    ));
    let expected = format!(
        r#"[{{"jsonrpc":"2.0","id":{},"error":{{"code":-32600"#,
        IDS[1]
    );
    assert!(answer.starts_with(&expected), "{answer}");
    assert!(
        answer.contains(&format!(r#""id":{},"error":{{"code":-32600"#, IDS[5])),
        "{answer}"
    );
}
