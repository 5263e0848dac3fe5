//! The HTTP edge at the application level (issue 14), tried from outside against the real
//! `serve` binary on loopback under the unit's `LimitNOFILE=1024`, at level staging with keys
//! (see [`crate::support::edge`]): JSON-RPC batches bounded in items and answer bytes, each
//! item rate-limited and authorized on its own; one client's `initialize` flood never evicts
//! another client's session; refused `control_device` calls leave no bus subscription
//! behind; RSS returns to its idle value after a burst of large answers. Every test checks
//! that `/health` and another client's keyed MCP calls are each answered within 2 s during
//! the attack, that RSS stays bounded, and that the server is alive afterwards.

use crate::support;
use support::edge::{self, answered};
use support::gate::key;
use support::mcp::McpHttp;
use support::net::{request, try_request};
use support::server::{Miniserver, Served};
use support::*;

use std::time::Instant;

use home_mcp::auth::Role;
use serde_json::{json, Value};

const ATTACKER: &str = "homekey_monitor_1_00000000000000000000000000000001";
const VICTIM: &str = "homekey_operator_2_00000000000000000000000000000002";

/// `serve` (see [`edge::start`]) with a monitor key (the attacker) and an operator key (the
/// other client) besides [`edge::KEY`], and `config` added.
fn two_keys(ms: &Miniserver, config: &str) -> Served {
    edge::start_with_keys(
        ms,
        config,
        &[key(ATTACKER, Role::Monitor), key(VICTIM, Role::Operator)],
    )
}

/// `/health` and `client`'s `list_rooms` each answered within 2 s, RSS bounded.
fn others_served(served: &Served, client: &mut McpHttp, when: &str) {
    answered(served, client, when);
}

/// POSTs a raw JSON-RPC body on `client`'s session.
fn post_raw(client: &McpHttp, body: &str) -> support::net::Reply {
    let headers = [
        "Content-Type: application/json".to_string(),
        "Accept: application/json".to_string(),
        format!("MCP-Protocol-Version: {}", client.version),
        format!("X-API-Key: {}", client.key.as_deref().unwrap_or("")),
        format!(
            "Mcp-Session-Id: {}",
            client.session.as_deref().unwrap_or("")
        ),
    ];
    request(client.addr, "POST", "/mcp", &headers, body)
}

fn batch(items: impl IntoIterator<Item = Value>) -> String {
    Value::Array(items.into_iter().collect()).to_string()
}

fn ping(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

/// The answers of a batch reply, checked to carry the ids `ids` in order.
fn answers(r: &support::net::Reply, ids: std::ops::Range<u64>) -> Vec<Value> {
    assert_eq!(r.status, 200, "{r:?}");
    let v = r.json();
    let list = v.as_array().expect("a batch answer").clone();
    let got: Vec<Value> = list.iter().map(|a| a["id"].clone()).collect();
    let want: Vec<Value> = ids.map(|i| json!(i)).collect();
    assert_eq!(got, want, "every item answered with its own id");
    list
}

#[test]
fn batches_are_bounded_and_each_item_is_counted_and_authorized() {
    let ms = Miniserver::demo();
    // The monitor key may make 40 requests a minute; the per-address limit is out of the way
    // (both clients are on 127.0.0.1), so the key's own bucket is what refuses.
    let served = two_keys(
        &ms,
        "[server]\nmax_batch_items = 20\nmax_batch_answer_bytes = 65536\n\
         [auth.rate_limits]\nmonitor = 40\nper_client = 1000000\n",
    );
    let mut other = McpHttp::connect(served.addr, Some(VICTIM));
    // 2 requests: initialize, notifications/initialized.
    let attacker = McpHttp::connect_with(served.addr, Some(ATTACKER), "2025-03-26", json!({}));

    // 21 items: refused whole before any item is looked at (request 3).
    let started = Instant::now();
    let r = post_raw(&attacker, &batch((1..=21).map(ping)));
    println!("21-item batch refused in {:?}", started.elapsed());
    assert_eq!(r.status, 400, "{r:?}");
    let e = r.json();
    assert_eq!(e["error"]["code"], -32600, "{e}");
    assert!(e["id"].is_null(), "{e}");
    let details = e["error"]["data"]["details"].as_str().unwrap_or("");
    assert!(
        details.contains("limit of 20 items") && details.contains("max_batch_items"),
        "the message names the limit: {details}"
    );
    others_served(&served, &mut other, "after the oversized batch");

    // Answer bytes: five tools/list answers do not fit in 64 KiB; the item that crosses the
    // limit and those after it get -32600 naming it (requests 4-8).
    let list = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
    let r = post_raw(&attacker, &batch((1..=5).map(list)));
    println!(
        "5 x tools/list under a 64 KiB budget: {} bytes",
        r.body.len()
    );
    let a = answers(&r, 1..6);
    assert!(r.body.len() <= 65536 + 5 * 512, "{} bytes", r.body.len());
    let over: Vec<&Value> = a.iter().filter(|x| x["error"]["code"] == -32600).collect();
    assert!(!over.is_empty(), "some answers are over the budget");
    assert!(
        over.iter().all(|x| x["error"]["data"]["details"]
            .as_str()
            .is_some_and(|d| d.contains("65536 bytes") && d.contains("max_batch_answer_bytes"))),
        "{over:?}"
    );

    // Authorized per item: the monitor key may ping but not switch; the refused item gets
    // its own -32003, the ping is answered (requests 9-10).
    let switch = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params":
        {"name": "control_device", "arguments": {"device": "Deckenlicht", "room": "Küche", "action": "on"}}});
    let r = post_raw(&attacker, &batch([ping(1), switch]));
    let a = answers(&r, 1..3);
    assert_eq!(a[0]["result"], json!({}), "{a:?}");
    assert_eq!(a[1]["error"]["code"], -32003, "{a:?}");
    assert_eq!(
        a[1]["error"]["message"], "INSUFFICIENT_PERMISSIONS",
        "{a:?}"
    );

    // Rate limit per item: 20 pings pass (requests 11-30); of the next 20, the HTTP request
    // and 9 more items fit in the 40 (31-40), the other 10 are refused each.
    let a = answers(&post_raw(&attacker, &batch((1..=20).map(ping))), 1..21);
    assert!(a.iter().all(|x| x["result"] == json!({})), "{a:?}");
    others_served(&served, &mut other, "during the batches");
    let a = answers(&post_raw(&attacker, &batch((1..=20).map(ping))), 1..21);
    let passed = a.iter().filter(|x| x["result"] == json!({})).count();
    let refused: Vec<&Value> = a.iter().filter(|x| x["error"]["code"] == -32029).collect();
    println!(
        "second 20-item batch: {passed} answered, {} refused",
        refused.len()
    );
    assert_eq!((passed, refused.len()), (10, 10), "{a:?}");
    assert!(
        a[..10].iter().all(|x| x["result"] == json!({})),
        "the first ten pass"
    );
    assert!(refused
        .iter()
        .all(|x| x["error"]["message"] == "RATE_LIMIT_EXCEEDED"
            && x["error"]["data"]["details"]
                .as_str()
                .is_some_and(|d| d.contains("rate limit of 40"))));
    // The key is spent: its next request is refused whole (429), the other key is not.
    let r = post_raw(&attacker, &batch([ping(1)]));
    assert_eq!(r.status, 429, "{r:?}");
    others_served(&served, &mut other, "after the attack");
}

#[test]
fn an_initialize_flood_does_not_evict_another_clients_session() {
    let ms = Miniserver::demo();
    // A store of 100 sessions: 1,000 calls are 10x the store, as 10,000 are the default 1,000.
    let served = two_keys(
        &ms,
        "[server]\nmax_sessions = 100\n\
         [auth.rate_limits]\nmonitor = 1000000\nper_client = 1000000\n",
    );
    let mut other = McpHttp::connect(served.addr, Some(VICTIM));
    let started = Instant::now();
    let mut last = None;
    for i in 0..1000 {
        let c = McpHttp::connect(served.addr, Some(ATTACKER));
        last = c.session.clone();
        if i % 250 == 125 {
            others_served(&served, &mut other, &format!("after {i} initialize calls"));
        }
    }
    println!("1,000 initialize calls in {:?}", started.elapsed());
    // The other client's session still works (no 404, no re-initialize).
    others_served(&served, &mut other, "after the flood");
    // The flooding client's newest session works too; it holds at most its cap.
    let mut newest = McpHttp::connect(served.addr, Some(ATTACKER));
    newest.session = last;
    newest.ok("list_rooms", json!({}));
    let metrics = request(
        served.addr,
        "GET",
        "/metrics",
        &[format!("X-API-Key: {VICTIM}")],
        "",
    );
    let sessions = metrics
        .body
        .lines()
        .find_map(|l| l.strip_prefix("home_mcp_mcp_sessions "))
        .and_then(|n| n.trim().parse::<f64>().ok())
        .expect("home_mcp_mcp_sessions in /metrics");
    println!("sessions held after the flood: {sessions}");
    assert!(
        sessions <= 32.0 + 1.0,
        "the client's cap of 32 plus the other's one: {sessions}"
    );
    assert!(
        try_request::<&str>(served.addr, "GET", "/health", &[], "").is_ok(),
        "alive"
    );
}

/// `bus_subscribers` from `/dashboard/api/metrics`.
fn bus_subscribers(served: &Served) -> u64 {
    let r = request(
        served.addr,
        "GET",
        "/dashboard/api/metrics",
        &[format!("X-API-Key: {}", edge::KEY)],
        "",
    );
    assert_eq!(r.status, 200, "{r:?}");
    let v = r.json();
    let v = if v.get("data").is_some() {
        v["data"].clone()
    } else {
        v
    };
    v["bus_subscribers"]
        .as_u64()
        .unwrap_or_else(|| panic!("bus_subscribers in {v}"))
}

#[test]
fn refused_control_calls_leave_no_bus_subscription() {
    let ms = Miniserver::demo();
    // One command per control and 10 s: the calls after the first are refused by the
    // outbound limit after subscribing for verification.
    let served = edge::start(
        &ms,
        "[miniserver]\nmax_commands_per_control = 1\n\
         [auth.rate_limits]\noperator = 1000000\nper_client = 1000000\n",
    );
    served.wait_link("websocket");
    let mut client = edge::client(&served);
    let mut other = edge::client(&served);
    let args = json!({"device": "Deckenlicht", "room": "Küche", "action": "on"});
    client.ok("control_device", args.clone());
    // The first call's subscription ends with the call.
    let idle = wait_until("the bus settles", PATIENCE, || {
        let a = bus_subscribers(&served);
        let b = bus_subscribers(&served);
        if a == b {
            Ok(a)
        } else {
            Err((a, b))
        }
    });
    let started = Instant::now();
    // The outbound limit runs in fixed 10 s windows: on a busy machine the loop can outlast one,
    // and the first call of each new window passes (and subscribes, and ends). Those are counted;
    // every other call must be refused.
    let mut passed = 0u64;
    for i in 0..1000 {
        let (status, v) = client.try_call("control_device", args.clone());
        assert_eq!(status, 200, "call {i}: {v}");
        if v["result"]["isError"] == false {
            passed += 1;
            let windows = started.elapsed().as_secs() / 10 + 1;
            assert!(
                passed <= windows,
                "call {i}: {passed} calls passed in {windows} windows of the outbound limit: {v}"
            );
            continue;
        }
        assert!(
            v.to_string().contains("RATE_LIMIT_EXCEEDED"),
            "call {i} refused by the outbound limit: {v}"
        );
        if i % 250 == 125 {
            others_served(&served, &mut other, &format!("after {i} refused calls"));
        }
    }
    println!(
        "1,000 control_device calls ({passed} passed in a new window) in {:?}",
        started.elapsed()
    );
    let after = bus_subscribers(&served);
    println!("bus subscribers: {idle} before, {after} after");
    assert_eq!(after, idle, "no subscription outlives its call");
    others_served(&served, &mut other, "after the calls");
}

/// A `kB` field (`VmRSS`, `VmHWM`) of `/proc/<pid>/status`, in kB.
fn status_kb(pid: u32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in {text}"))
}

#[test]
fn rss_returns_to_idle_after_a_burst_of_large_answers() {
    let ms = Miniserver::demo();
    let served = edge::start(
        &ms,
        "[auth.rate_limits]\noperator = 1000000\nper_client = 1000000\n",
    );
    served.wait_link("websocket");
    let pid = served.pid();
    let addr = served.addr;
    let list_devices = json!({"limit": 500});
    // Warm up once per kind of request (lazy tables, the tool cache's entries), then idle.
    let mut other = edge::client(&served);
    other.rpc("tools/list", json!({}));
    other.ok("list_devices", list_devices.clone());
    others_served(&served, &mut other, "before the burst");
    let idle = wait_until("RSS settles at idle", PATIENCE, || {
        let a = status_kb(pid, "VmRSS");
        let b = status_kb(pid, "VmRSS");
        // Two readings alike within 64 kB: nothing is still being freed or allocated.
        if a.abs_diff(b) <= 64 {
            Ok(b)
        } else {
            Err((a, b))
        }
    });
    let started = Instant::now();
    let bytes = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let bytes = bytes.clone();
            let args = list_devices.clone();
            std::thread::spawn(move || {
                let mut c = McpHttp::connect(addr, Some(edge::KEY));
                for i in 0..50 {
                    let v = if i % 2 == 0 {
                        c.rpc("tools/list", json!({}))
                    } else {
                        c.rpc(
                            "tools/call",
                            json!({"name": "list_devices", "arguments": args}),
                        )
                    };
                    assert!(v.get("result").is_some(), "{v}");
                    bytes.fetch_add(v.to_string().len(), std::sync::atomic::Ordering::Relaxed);
                }
            })
        })
        .collect();
    others_served(&served, &mut other, "during the burst");
    for t in threads {
        t.join().expect("a burst thread");
    }
    let peak = status_kb(pid, "VmHWM");
    let right_after = status_kb(pid, "VmRSS");
    println!(
        "200 answers ({} MB) in {:?}; RSS idle {idle} kB, right after {right_after} kB, peak {peak} kB",
        bytes.load(std::sync::atomic::Ordering::Relaxed) / 1_000_000,
        started.elapsed()
    );
    let waited = Instant::now();
    let back = wait_until("RSS back within 2 MB of idle", PATIENCE, || {
        let now = status_kb(pid, "VmRSS");
        if now <= idle + 2048 {
            Ok(now)
        } else {
            Err(now)
        }
    });
    println!(
        "RSS {back} kB ({:+} kB from idle) after {:?}",
        back as i64 - idle as i64,
        waited.elapsed()
    );
    others_served(&served, &mut other, "after the burst");
}
