//! `GET /metrics` (issue 7): the Prometheus exposition of a real server over loopback HTTP with
//! the demo house: counters move with the requests, refusals are counted, the link gauge shows
//! the demo's mode, histograms are consistent, and access follows the gate (or `public`).
//!
//! The registry is process-wide, so tests that run in parallel share it: checks compare values
//! before and after (at least the expected rise).

use std::net::SocketAddr;
use std::sync::Arc;

use home_mcp::auth::gate::SecurityLevel;
use home_mcp::auth::Role;
use home_mcp::http::{HttpConfig, MetricsContext};
use home_mcp::metrics::check_exposition;
use serde_json::json;

use crate::support::app_server::{gate, AppServer};
use crate::support::gate::key;
use crate::support::gate::send_raw as send;
use crate::support::mcp::McpHttp;

const OPERATOR: &str = "homekey_operator_2_00112233445566778899aabbccddeeff";
const MONITOR: &str = "homekey_monitor_3_00112233445566778899aabbccddeeff";
const FENCED: &str = "homekey_monitor_9_00112233445566778899aabbccddeeff";

/// The demo house behind a gate of `level` (an operator, a monitor, and a monitor fenced to
/// 10.0.0.0/8) with `GET /metrics` (`public` or gated).
fn start(level: SecurityLevel, public: bool) -> AppServer {
    let mut fenced = key(FENCED, Role::Monitor);
    fenced.ip_whitelist = vec!["10.0.0.0/8".into()];
    let keys = vec![
        key(OPERATOR, Role::Operator),
        key(MONITOR, Role::Monitor),
        fenced,
    ];
    AppServer::start(|app| HttpConfig {
        gate: Some(gate(app, level, keys, &[])),
        metrics: Some(Arc::new(MetricsContext {
            house: Some(app.house.clone()),
            public,
        })),
        ..HttpConfig::default()
    })
}

/// No headers for [`send`].
const NONE: &[&str] = &[];

fn bearer(key: &str) -> String {
    format!("Authorization: Bearer {key}")
}

/// The exposition, read with `key` (asserting 200 and the content type).
fn scrape(addr: SocketAddr, key: Option<&str>) -> String {
    let headers: Vec<String> = key.map(bearer).into_iter().collect();
    let (status, head, body) = send(addr, "GET", "/metrics", &headers, "");
    assert_eq!(status, 200, "{head}{body}");
    assert!(
        head.contains("content-type: text/plain; version=0.0.4; charset=utf-8"),
        "{head}"
    );
    body
}

/// The value of the series `series` (name with labels, exactly as exposed); 0 when absent.
fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0.0, |v| v.parse().unwrap())
}

const LIST_OK: &str = "home_mcp_mcp_requests_total{transport=\"mcp_http\",method=\"tools/call\",tool=\"list_devices\",outcome=\"ok\"}";

#[test]
fn tool_calls_refusals_and_link_are_counted() {
    let f = start(SecurityLevel::Staging, false);
    let a = f.addr();

    // Staging: a key is needed; a monitor key may read.
    let (status, head, _) = send(a, "GET", "/metrics", NONE, "");
    assert_eq!(status, 401, "{head}");
    assert!(head.contains("www-authenticate: Bearer"), "{head}");
    let before = scrape(a, Some(MONITOR));
    let (status, _, _) = send(a, "POST", "/metrics", &[bearer(MONITOR)], "");
    assert_eq!(status, 405);

    // A tool call raises its counter and the tool's histogram.
    let mut operator = McpHttp::connect(a, Some(OPERATOR));
    let (status, body) = operator.try_call("list_devices", json!({}));
    assert_eq!(status, 200, "{body}");
    assert!(body.get("result").is_some(), "{body}");
    let after = scrape(a, Some(MONITOR));
    assert!(
        value(&after, LIST_OK) >= value(&before, LIST_OK) + 1.0,
        "{after}"
    );
    let hist = "home_mcp_tool_call_duration_seconds_count{tool=\"list_devices\"}";
    assert!(value(&after, hist) >= value(&before, hist) + 1.0);
    let init =
        "home_mcp_mcp_requests_total{transport=\"mcp_http\",method=\"initialize\",outcome=\"ok\"}";
    assert!(value(&after, init) >= 1.0, "{after}");
    assert!(value(&after, "home_mcp_mcp_sessions") >= 1.0);

    // Refusals: no key, a key without the permission, a whitelisted key from elsewhere.
    let reason = |r: &str| format!("home_mcp_auth_failures_total{{reason=\"{r}\"}}");
    // (a session belongs to the key that opened it: the monitor opens its own)
    let mut monitor = McpHttp::connect(a, Some(MONITOR));
    let (status, _) = monitor.try_call("control_device", json!({"device": "x", "action": "on"}));
    assert_eq!(status, 403);
    let (status, _, _) = send(a, "GET", "/tools", &[bearer(FENCED)], "");
    assert_eq!(status, 403);
    let (status, _, _) = send(a, "GET", "/tools", NONE, "");
    assert_eq!(status, 401);
    let mode_before = f.app.house.link().mode().as_str();
    let now = scrape(a, Some(MONITOR));
    let mode_after = f.app.house.link().mode().as_str();
    for r in [
        "insufficient_permissions",
        "ip_not_whitelisted",
        "invalid_api_key",
    ] {
        assert!(
            value(&now, &reason(r)) >= value(&after, &reason(r)) + 1.0,
            "{r}: {now}"
        );
    }
    let denied = "home_mcp_mcp_requests_total{transport=\"mcp_http\",method=\"tools/call\",tool=\"control_device\",outcome=\"denied\"}";
    assert!(value(&now, denied) >= 1.0, "{now}");
    let http_denied = "home_mcp_http_requests_total{transport=\"rest\",outcome=\"denied\"}";
    assert!(value(&now, http_denied) >= 2.0, "{now}");

    // The link gauge shows the demo's mode, and only that one (the link may change modes
    // while the scrape runs: either the mode before or the one after is right).
    let on: Vec<&str> = ["websocket", "polling", "disconnected"]
        .into_iter()
        .filter(|m| {
            value(
                &now,
                &format!("home_mcp_miniserver_link_state{{mode=\"{m}\"}}"),
            ) == 1.0
        })
        .collect();
    assert_eq!(on.len(), 1, "exactly one mode: {now}");
    assert!(
        on[0] == mode_before || on[0] == mode_after,
        "{on:?} vs {mode_before}/{mode_after}: {now}"
    );
    assert!(now.contains("# TYPE home_mcp_miniserver_events_received_total counter"));

    // The whole exposition: HELP/TYPE per family, valid names, no duplicates, cumulative
    // buckets ending in +Inf == _count.
    let samples = check_exposition(&now).unwrap_or_else(|e| panic!("{e}\n{now}"));
    assert!(samples > 30);
    assert!(now.contains("home_mcp_process_resident_memory_bytes "));
    assert!(now.contains("home_mcp_build_info{version=\""));
}

#[test]
fn histogram_buckets_are_cumulative() {
    let f = start(SecurityLevel::Staging, false);
    let a = f.addr();
    for _ in 0..3 {
        let (s, _, _) = send(a, "GET", "/health", NONE, "");
        assert_eq!(s, 200);
    }
    let text = scrape(a, Some(MONITOR));
    let prefix = "home_mcp_http_request_duration_seconds_bucket{transport=\"health\",le=\"";
    let buckets: Vec<(String, f64)> = text
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .map(|rest| {
            let (le, v) = rest.split_once("\"} ").unwrap();
            (le.to_string(), v.parse().unwrap())
        })
        .collect();
    assert_eq!(buckets.len(), 14, "{text}");
    assert_eq!(buckets.last().unwrap().0, "+Inf");
    assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "{buckets:?}");
    let count = value(
        &text,
        "home_mcp_http_request_duration_seconds_count{transport=\"health\"}",
    );
    assert_eq!(buckets.last().unwrap().1, count);
    assert!(count >= 3.0);
}

#[test]
fn public_and_development_access() {
    // `[metrics] public = true`: no key needed even in staging.
    let f = start(SecurityLevel::Staging, true);
    let text = scrape(f.addr(), None);
    check_exposition(&text).unwrap();
    // Development on loopback: the gate's anonymous rule.
    let d = start(SecurityLevel::Development, false);
    scrape(d.addr(), None);
    // Without a metrics context there is no route.
    let plain = AppServer::start(|_| HttpConfig::default());
    let (status, _, _) = send(plain.addr(), "GET", "/metrics", NONE, "");
    assert_eq!(status, 404);
}

/// The house's alerts and its stop in the exposition (issue 31): active Message Center
/// entries per severity, as the simulator lists them, and the stop gauge following the admin
/// stop.
#[test]
fn active_alerts_by_severity_and_the_stop_are_exposed() {
    use crate::support::drive::MiniserverApi;
    use crate::support::wait::{wait_until, PATIENCE};

    let f = start(SecurityLevel::Staging, false);
    let a = f.addr();
    let ms = MiniserverApi::of(&f.app);
    // The oracle: the simulator's own list of active entries, by severity.
    let active_at_sim = |severity: u64| {
        ms.message_center_entries("1d5c3cf2-0230-600e-ffff504f94d0e5a1")
            .iter()
            .filter(|e| e["isHistoric"] == false && e["severity"] == severity)
            .count() as f64
    };
    ms.drive("messagecenter/raise?title=Extension%20offline&severity=4");
    let series = |s: &str| format!("home_mcp_alerts_active{{severity=\"{s}\"}}");
    let text = wait_until("the raised entry counted", PATIENCE, || {
        let t = scrape(a, Some(MONITOR));
        if value(&t, &series("critical")) == active_at_sim(4) {
            Ok(t)
        } else {
            Err(t)
        }
    });
    assert_eq!(value(&text, &series("critical")), 1.0, "{text}");
    assert_eq!(value(&text, &series("warning")), active_at_sim(2), "{text}");
    assert!(
        text.contains(&series("info")),
        "every severity listed: {text}"
    );
    assert_eq!(value(&text, "home_mcp_assistant_stopped"), 0.0);
    f.app.house.admin_stop().stop("test").unwrap();
    assert_eq!(
        value(&scrape(a, Some(MONITOR)), "home_mcp_assistant_stopped"),
        1.0
    );
}
