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
use support::{wait_until, PATIENCE};

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

/// The limiter's window in seconds (`window_secs` of `GET /admin/rate-limits`, checked by
/// [`each_role_and_anonymous_clients_have_their_own_budget`]).
const WINDOW_SECS: u64 = 60;

/// What an answer's `X-RateLimit-*` headers announce about the bucket that applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Budget {
    limit: u64,
    remaining: u64,
    /// When the bucket's window ends, Unix seconds.
    reset: u64,
}

impl Budget {
    /// Whether `later`, a later answer from the same bucket, is from the same window. The
    /// limiter's own word, not the test's clock: within a window the announced end moves only
    /// by the rounding to whole seconds; a new window (fixed, starting at its first request)
    /// ends at least a whole window after this one.
    fn same_window(&self, later: &Budget) -> bool {
        later.reset < self.reset + WINDOW_SECS / 2
    }
}

/// The budget an answer announces; fails without its headers.
fn budget(r: &Reply) -> Budget {
    let get = |n: &str| {
        r.header(n)
            .unwrap_or_else(|| panic!("{n} missing: {r:?}"))
            .parse::<u64>()
            .unwrap()
    };
    let b = Budget {
        limit: get("X-RateLimit-Limit"),
        remaining: get("X-RateLimit-Remaining"),
        reset: get("X-RateLimit-Reset"),
    };
    assert!(b.reset > 1_700_000_000, "{r:?}");
    b
}

/// Checks that `later` counted exactly one request since `earlier` in `earlier`'s bucket:
/// one fewer left in the same window, or, in a new window the limiter announced, the first
/// request of it (the one `later` answers: nobody else's counted there either).
fn one_more(earlier: &Budget, later: &Budget, what: &str) {
    // Before a new window starts, how many requests counted in the old one is timing, not a
    // verdict; what counts in the new one is not.
    let want = if earlier.same_window(later) {
        earlier.remaining.checked_sub(1)
    } else {
        later.limit.checked_sub(1)
    };
    assert_eq!(
        (later.limit, Some(later.remaining)),
        (earlier.limit, want),
        "{what}: {earlier:?} then {later:?}"
    );
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
    let mut first = Vec::new();
    for (k, limit) in roles {
        let r = list_tools(&served, Some(k));
        assert_eq!(r.status, 200, "{k}: {r:?}");
        let b = budget(&r);
        assert_eq!(
            (b.limit, b.remaining),
            (limit, limit - 1),
            "{k}: the role's bucket"
        );
        first.push(b);
    }
    let anonymous = budget(&list_tools(&served, None));
    assert_eq!(
        (anonymous.limit, anonymous.remaining),
        (100, 99),
        "without a key: the address's bucket"
    );

    // The case: an operator key past 100 requests (same address as the anonymous
    // client) is not throttled, and the anonymous budget is untouched by it. Each answer
    // counts exactly one request in the operator's bucket, in the window it announces (a busy
    // machine may take longer than the one-minute window for these).
    let mut last = first[1];
    let mut windows = 1;
    for i in 0..110 {
        let r = list_tools(&served, Some(OPERATOR));
        assert_eq!(r.status, 200, "operator request {i}: {r:?}");
        let b = budget(&r);
        one_more(&last, &b, &format!("operator request {i}"));
        windows += usize::from(!last.same_window(&b));
        last = b;
    }
    if windows == 1 {
        assert_eq!(last.remaining, 500 - 1 - 110, "all 111 in one window");
    }
    println!("111 operator requests in {windows} window(s), {last:?} at the end");
    one_more(
        &anonymous,
        &budget(&list_tools(&served, None)),
        "anonymous: only its own requests",
    );
    // The other keys' buckets did not move either.
    one_more(
        &first[2],
        &budget(&list_tools(&served, Some(MONITOR))),
        "monitor",
    );

    // Every request of a JSON-RPC batch counts against the key (MCP 2025-03-26 has batches):
    // measured between two answers of one window (again if a window ended in between).
    let mcp = McpHttp::connect_with(served.addr, Some(ADMIN), "2025-03-26", json!({}));
    let batch: Vec<_> = (0..5)
        .map(|i| json!({"jsonrpc": "2.0", "id": 100 + i, "method": "ping"}))
        .collect();
    let counted = wait_until("a batch measured within one window", PATIENCE, || {
        let before = budget(&list_tools(&served, Some(ADMIN)));
        let r = mcp.post(&json!(batch));
        assert_eq!(r.status, 200, "{r:?}");
        let after = budget(&list_tools(&served, Some(ADMIN)));
        if before.same_window(&after) {
            Ok(before.remaining - after.remaining)
        } else {
            Err((before, after))
        }
    });
    assert_eq!(counted, 6, "five batch items and the request after them");

    // The window this test reads the answers by is the limiter's own.
    let admin = [format!("X-API-Key: {ADMIN}")];
    let r = request(served.addr, "GET", "/admin/rate-limits", &admin, "");
    assert_eq!(r.json()["window_secs"], json!(WINDOW_SECS as f64), "{r:?}");
}

/// Whether `r`, a later answer from the bucket that refused with `refused`, still refuses:
/// 429 with nothing left in the same window; or, once the limiter announces a new window, the
/// first request of it (nobody else's counted there).
fn still_refused(refused: &Budget, r: &Reply, what: &str) {
    let b = budget(r);
    if refused.same_window(&b) {
        assert_eq!(
            (r.status, b.remaining),
            (429, 0),
            "{what}: {refused:?}, then {r:?}"
        );
    } else {
        assert_eq!(
            (r.status, b.remaining),
            (200, b.limit - 1),
            "{what}: a new window: {r:?}"
        );
    }
}

#[test]
fn a_used_up_budget_refuses_only_its_own_requests() {
    let ms = Miniserver::demo();
    let served = start(
        &ms,
        "admin = 6\noperator = 5\nmonitor = 4\ndevice = 3\nper_client = 2",
    );
    // The anonymous budget of this address first: used up, the keys still pass. Each bucket
    // is used up within one window (the limiter announces which): `limit` requests pass, each
    // counted once, and the next is refused.
    let mut refusals = Vec::new();
    for (k, limit) in [
        (None, 2),
        (Some(DEVICE), 3),
        (Some(MONITOR), 4),
        (Some(OPERATOR), 5),
        (Some(ADMIN), 6),
    ] {
        let mut last: Option<Budget> = None;
        let mut sent = 0;
        let (r, b) = loop {
            sent += 1;
            assert!(sent <= 10 * limit, "{k:?}: no window held {limit} requests");
            let r = list_tools(&served, k);
            let b = budget(&r);
            assert_eq!(b.limit, limit, "{k:?}: {r:?}");
            if r.status == 429 {
                break (r, b);
            }
            assert_eq!(r.status, 200, "{k:?} request {sent}: {r:?}");
            match &last {
                // The bucket's first request: nothing counted before it.
                None => assert_eq!(b.remaining, limit - 1, "{k:?}: {r:?}"),
                Some(l) => one_more(l, &b, &format!("{k:?} request {sent}")),
            }
            last = Some(b);
        };
        let last = last.expect("at least one request passed");
        assert!(
            last.remaining == 0 && last.same_window(&b) && b.remaining == 0,
            "{k:?}: refused only once {limit} passed in the window: {last:?}, then {r:?}"
        );
        let retry: u64 = r
            .header("Retry-After")
            .expect("Retry-After")
            .parse()
            .unwrap();
        assert!((1..=60).contains(&retry), "{retry}");
        assert!(r.body.contains("RATE_LIMIT_EXCEEDED"), "{}", r.body);
        refusals.push(b);
    }
    // Each used-up bucket still refuses; nothing else was charged for them.
    still_refused(&refusals[0], &list_tools(&served, None), "anonymous");
    still_refused(&refusals[4], &list_tools(&served, Some(ADMIN)), "admin");
}
