//! Memory per request is bounded by what the request may contain (issue 28): bodies that are
//! small in bytes but huge as JSON trees (nested objects, a sea of one-element arrays, a
//! 900 kB answer in `inputResponses`), sent four at once by a monitor key to the real `serve`
//! binary, get clear errors, while the server's peak RSS (`VmHWM`, measured: the machine
//! runs no systemd scope for tests) stays under the edge's bound of 64 MB, the server answers
//! throughout, and its RSS returns within 2 MB of idle. Before the bound, one such body took
//! the server from 12 MB to 146-264 MB.

use crate::support;

use std::net::SocketAddr;

use serde_json::{json, Value};

use support::edge::{self, RSS_BOUND_KB};
use support::gate::key;
use support::mcp::{with_modern_meta, McpHttp, McpModern};
use support::net::request;
use support::server::Miniserver;
use support::wait::{wait_until, PATIENCE};

/// The attacker's key: a monitor (read-only) key is enough.
const MONITOR: &str = "homekey_monitor_8_00000000000000000000000000000008";

/// `{"a":{"a":...}}` nested `levels` deep.
fn nested_objects(levels: usize) -> String {
    format!("{}{{}}{}", r#"{"a":"#.repeat(levels), "}".repeat(levels))
}

/// `[[0],[0],...]` with `n` one-element arrays.
fn one_element_arrays(n: usize) -> String {
    format!("[{}[0]]", "[0],".repeat(n - 1))
}

/// A `tools/call list_devices` of `session` (JSON-RPC 2025-06-18) whose `arguments` are
/// `arguments` (JSON text), with the session's headers and the monitor key.
fn session_call(addr: SocketAddr, session: &str, arguments: &str) -> (u16, Value) {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"list_devices","arguments":{arguments}}}}}"#
    );
    let headers = [
        "Content-Type: application/json".to_string(),
        "Accept: application/json".to_string(),
        "MCP-Protocol-Version: 2025-06-18".to_string(),
        format!("X-API-Key: {MONITOR}"),
        format!("Mcp-Session-Id: {session}"),
    ];
    let r = request(addr, "POST", "/mcp", &headers, &body);
    (r.status, r.json())
}

/// A 2026-07-28 `tools/call list_devices` whose `inputResponses` holds a 900 kB answer.
fn huge_input_responses(addr: SocketAddr) -> (u16, Value) {
    let params = with_modern_meta(json!({
        "name": "list_devices",
        "arguments": {},
        "inputResponses": {"confirm": {"action": "accept", "content": {"note": "x".repeat(900 * 1024)}}},
    }));
    let mut headers = McpModern::headers("tools/call", &params);
    headers.push(format!("X-API-Key: {MONITOR}"));
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params});
    let r = request(addr, "POST", "/mcp", &headers, &body.to_string());
    (r.status, r.json())
}

/// The REST quick-start `POST /tools/call` with `arguments` (JSON text).
fn rest_call(addr: SocketAddr, arguments: &str) -> (u16, Value) {
    let body = format!(r#"{{"tool":"list_devices","arguments":{arguments}}}"#);
    let headers = [
        "Content-Type: application/json".to_string(),
        format!("X-API-Key: {MONITOR}"),
    ];
    let r = request(addr, "POST", "/tools/call", &headers, &body);
    (r.status, r.json())
}

#[test]
fn json_that_expands_in_memory_is_refused_before_it_is_parsed() {
    let ms = Miniserver::demo();
    let served = edge::start_with_keys(
        &ms,
        "[auth.rate_limits]\nmonitor = 100000\n",
        &[key(MONITOR, home_mcp::auth::Role::Monitor)],
    );
    served.wait_link("websocket");
    let (pid, addr) = (served.pid(), served.addr);
    let mut other = edge::client(&served);
    let attacker = McpHttp::connect(addr, Some(MONITOR));
    let session = attacker.session.clone().expect("a session");
    // Each bomb within the 1 MiB body limit.
    let deep = nested_objects(45_000);
    let arrays = one_element_arrays(170_000);
    assert!(deep.len() < 1 << 20 && arrays.len() < 1 << 20);
    // Warm up once per kind of request, then let RSS settle at idle.
    assert_eq!(session_call(addr, &session, "{}").0, 200);
    assert_eq!(rest_call(addr, "{}").0, 200);
    edge::answered(&served, &mut other, "before the bodies");
    let idle = wait_until("RSS settles at idle", PATIENCE, || {
        let (a, b) = (edge::rss_kb(pid), edge::rss_kb(pid));
        if a.abs_diff(b) <= 64 {
            Ok(b)
        } else {
            Err((a, b))
        }
    });
    let bombs: Vec<std::thread::JoinHandle<Vec<(String, u16, Value)>>> = (0..4)
        .map(|kind| {
            let (deep, arrays, session) = (deep.clone(), arrays.clone(), session.clone());
            std::thread::spawn(move || {
                (0..5)
                    .map(|_| {
                        let (what, (status, v)) = match kind {
                            0 => ("nested objects", session_call(addr, &session, &deep)),
                            1 => ("one-element arrays", session_call(addr, &session, &arrays)),
                            2 => ("huge inputResponses", huge_input_responses(addr)),
                            _ => ("REST one-element arrays", rest_call(addr, &arrays)),
                        };
                        (what.to_string(), status, v)
                    })
                    .collect()
            })
        })
        .collect();
    edge::answered(&served, &mut other, "while the bodies come");
    for bomb in bombs {
        for (what, status, v) in bomb.join().expect("a sending thread") {
            let (want_status, code, says) = match what.as_str() {
                "nested objects" => (400, json!(-32600), "nests deeper than 32 levels"),
                "one-element arrays" => (400, json!(-32600), "more than 16384 values"),
                "huge inputResponses" => (200, json!(-32602), "larger than 16384 bytes"),
                _ => (413, json!("PAYLOAD_TOO_LARGE"), "more than 16384 values"),
            };
            assert_eq!(status, want_status, "{what}: {v}");
            assert_eq!(v["error"]["code"], code, "{what}: {v}");
            assert!(v.to_string().contains(says), "{what}: {v}");
        }
    }
    let peak = edge::status_kb(pid, "VmHWM");
    println!("20 bodies, four at once: RSS idle {idle} kB, peak {peak} kB");
    assert!(peak < RSS_BOUND_KB, "peak RSS {peak} kB");
    edge::answered(&served, &mut other, "after the bodies");
    let back = wait_until("RSS back within 2 MB of idle", PATIENCE, || {
        let now = edge::rss_kb(pid);
        if now <= idle + 2048 {
            Ok(now)
        } else {
            Err(now)
        }
    });
    println!(
        "RSS {back} kB ({:+} kB from idle)",
        back as i64 - idle as i64
    );
}

/// Issue 28: `inputResponses` nested deeper than the parser allows, in a 2026-07-28 request
/// with the right headers and `_meta`, get the nesting error (-32600, naming the depth), not
/// "unsupported protocol version" (-32022): the version was never the problem. The same body
/// nested within the bound is read as an answer (-32602 for an answer to nothing asked).
#[test]
fn nested_input_responses_get_the_nesting_error() {
    let ms = Miniserver::demo();
    let served = edge::start_with_keys(
        &ms,
        "[auth.rate_limits]\nmonitor = 100000\n",
        &[key(MONITOR, home_mcp::auth::Role::Monitor)],
    );
    let addr = served.addr;
    let send = |levels: usize| {
        let mut params = with_modern_meta(json!({"name": "list_devices", "arguments": {}}));
        // Built as text: serde_json itself refuses to build more than 128 levels.
        let headers = {
            let mut h = McpModern::headers("tools/call", &params);
            h.push(format!("X-API-Key: {MONITOR}"));
            h
        };
        params["inputResponses"] = json!("HOLE");
        let body = json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": params})
            .to_string()
            .replace(
                r#""HOLE""#,
                &format!(r#"{{"confirm":{}}}"#, nested_objects(levels)),
            );
        let r = request(addr, "POST", "/mcp", &headers, &body);
        (r.status, r.json())
    };
    for levels in [40, 1000, 45_000] {
        let (status, v) = send(levels);
        assert_eq!(status, 400, "{levels} levels: {v}");
        assert_eq!(v["error"]["code"], -32600, "{levels} levels: {v}");
        assert!(
            v.to_string().contains("nests deeper than 32 levels"),
            "{levels} levels: {v}"
        );
        assert_eq!(v["id"], 11, "the refusal names the request: {v}");
    }
    let (status, v) = send(3);
    assert_eq!(status, 200, "{v}");
    assert_ne!(v["error"]["code"], -32022, "{v}");
    assert_ne!(v["error"]["code"], -32600, "{v}");
}
