//! Budgets per role (issue 15, spec §8), from outside: the real `serve` binary with a key of
//! each role. A keyed request counts against its key's role bucket only (admin 1000, operator
//! 500, monitor 200, device 100 per minute by default), whatever address it comes from; a
//! request without a key counts against its address's bucket (100 by default); each request of
//! a JSON-RPC batch counts; `X-RateLimit-Limit/Remaining/Reset` show the bucket that applied.
//! Bounded: at most a few hundred requests on loopback, small limits where a budget is used up.

use crate::support;
use support::gate::key;
use support::mcp::McpHttp;
use support::net::{request, Reply};
use support::server::{Miniserver, Served};

use home_mcp::auth::Role;
use serde_json::json;

const ADMIN: &str = "homekey_admin_budget_1";
const OPERATOR: &str = "homekey_operator_budget_2";
const MONITOR: &str = "homekey_monitor_budget_3";
const DEVICE: &str = "homekey_device_budget_4";

/// A development server (anonymous requests pass, presented keys are checked) with one key of
/// each role and `limits` (an `[auth.rate_limits]` body, or empty for the defaults).
fn start(ms: &Miniserver, limits: &str) -> Served {
    let mut device = key(DEVICE, Role::Device);
    device.allowed_devices = vec!["Deckenlicht".into()];
    let keys = [
        key(ADMIN, Role::Admin),
        key(OPERATOR, Role::Operator),
        key(MONITOR, Role::Monitor),
        device,
    ];
    Served::start_with_keys(
        ms,
        &keys,
        &format!("[auth]\nsecurity_level = \"development\"\n\n[auth.rate_limits]\n{limits}\n"),
    )
}

/// `GET /tools` (needs `read`, which every role has) with `key`, or without a key.
fn list_tools(served: &Served, key: Option<&str>) -> Reply {
    let headers: Vec<String> = key.map(|k| format!("X-API-Key: {k}")).into_iter().collect();
    request(served.addr, "GET", "/tools", &headers, "")
}

/// `(X-RateLimit-Limit, X-RateLimit-Remaining)` of an answer; fails without them.
fn budget(r: &Reply) -> (u64, u64) {
    let get = |n: &str| {
        r.header(n)
            .unwrap_or_else(|| panic!("{n} missing: {r:?}"))
            .parse::<u64>()
            .unwrap()
    };
    assert!(get("X-RateLimit-Reset") > 1_700_000_000, "{r:?}");
    (get("X-RateLimit-Limit"), get("X-RateLimit-Remaining"))
}

#[test]
fn each_role_and_anonymous_clients_have_their_own_budget() {
    let ms = Miniserver::demo();
    let served = start(&ms, "");
    let roles = [
        (ADMIN, 1000),
        (OPERATOR, 500),
        (MONITOR, 200),
        (DEVICE, 100),
    ];
    for (k, limit) in roles {
        let r = list_tools(&served, Some(k));
        assert_eq!(r.status, 200, "{k}: {r:?}");
        assert_eq!(budget(&r), (limit, limit - 1), "{k}: the role's bucket");
    }
    let r = list_tools(&served, None);
    assert_eq!(budget(&r), (100, 99), "without a key: the address's bucket");

    // The case: an operator key past 100 requests in a minute (same address as the
    // anonymous client) is not throttled, and the anonymous budget is untouched by it.
    let mut last = None;
    for _ in 0..110 {
        let r = list_tools(&served, Some(OPERATOR));
        assert_eq!(r.status, 200, "{r:?}");
        last = Some(budget(&r));
    }
    assert_eq!(last, Some((500, 500 - 1 - 110)));
    let r = list_tools(&served, None);
    assert_eq!(
        budget(&r),
        (100, 98),
        "anonymous: only its own two requests"
    );
    // The other keys' buckets did not move either.
    let r = list_tools(&served, Some(MONITOR));
    assert_eq!(budget(&r), (200, 198));

    // Every request of a JSON-RPC batch counts against the key (MCP 2025-03-26 has batches).
    let mcp = McpHttp::connect_with(served.addr, Some(ADMIN), "2025-03-26", json!({}));
    let before = budget(&list_tools(&served, Some(ADMIN))).1;
    let batch: Vec<_> = (0..5)
        .map(|i| json!({"jsonrpc": "2.0", "id": 100 + i, "method": "ping"}))
        .collect();
    let r = mcp.post(&json!(batch));
    assert_eq!(r.status, 200, "{r:?}");
    let after = budget(&list_tools(&served, Some(ADMIN))).1;
    assert_eq!(
        before - after,
        6,
        "five batch items and the request after them"
    );
}

#[test]
fn a_used_up_budget_refuses_only_its_own_requests() {
    let ms = Miniserver::demo();
    let served = start(
        &ms,
        "admin = 6\noperator = 5\nmonitor = 4\ndevice = 3\nper_client = 2",
    );
    // The anonymous budget of this address first: used up, the keys still pass.
    for (k, limit) in [
        (None, 2),
        (Some(DEVICE), 3),
        (Some(MONITOR), 4),
        (Some(OPERATOR), 5),
        (Some(ADMIN), 6),
    ] {
        for i in 0..limit {
            let r = list_tools(&served, k);
            assert_eq!(r.status, 200, "{k:?} request {i}: {r:?}");
            assert_eq!(budget(&r), (limit, limit - 1 - i), "{k:?} request {i}");
        }
        let r = list_tools(&served, k);
        assert_eq!(r.status, 429, "{k:?} beyond {limit}: {r:?}");
        assert_eq!(budget(&r), (limit, 0), "{k:?}: the refusing bucket");
        let retry: u64 = r
            .header("Retry-After")
            .expect("Retry-After")
            .parse()
            .unwrap();
        assert!((1..=60).contains(&retry), "{retry}");
        assert!(r.body.contains("RATE_LIMIT_EXCEEDED"), "{}", r.body);
    }
    // Each used-up bucket still refuses; nothing else was charged for them.
    assert_eq!(list_tools(&served, None).status, 429);
    assert_eq!(list_tools(&served, Some(ADMIN)).status, 429);
}
