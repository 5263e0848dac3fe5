//! `/health` without a key says status only (issue 15), from outside: the real `serve` binary
//! at level staging answers a request without a key with `{"status"}` and nothing about the
//! house (no serial, no Miniserver name or versions), and so does a device key; a key with `read` gets the details and
//! its rate-limit headers; a wrong key gets the gate's 401. A development server on loopback,
//! where requests without a key pass with every permission anyway, shows the details to all.

use crate::support;
use support::gate::key;
use support::net::{request, Reply};
use support::server::{Miniserver, Served};

use home_mcp::auth::Role;
use serde_json::Value;

const MONITOR: &str = "homekey_monitor_health_1";
const DEVICE: &str = "homekey_device_health_1";

/// The demo house's serial number, from its structure file (`msInfo.serialNr`).
fn demo_serial() -> String {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo-house.json"),
    )
    .expect("the demo house");
    let v: Value = serde_json::from_str(&text).expect("JSON");
    v["msInfo"]["serialNr"]
        .as_str()
        .expect("a serial")
        .to_string()
}

fn health(served: &Served, key: Option<&str>) -> Reply {
    let headers: Vec<String> = key.map(|k| format!("X-API-Key: {k}")).into_iter().collect();
    request(served.addr, "GET", "/health", &headers, "")
}

#[test]
fn health_without_a_key_says_status_only() {
    let ms = Miniserver::demo();
    let mut device = key(DEVICE, Role::Device);
    device.allowed_devices = vec!["Deckenlicht (Küche)".into()];
    let served = Served::start_with_keys(
        &ms,
        &[key(MONITOR, Role::Monitor), device],
        "[auth]\nsecurity_level = \"staging\"\n",
    );
    let serial = demo_serial();

    let r = health(&served, None);
    assert_eq!(r.status, 200, "{r:?}");
    let v = r.json();
    let keys: Vec<&String> = v.as_object().expect("an object").keys().collect();
    assert_eq!(keys, ["status"], "status only: {v}");
    assert!(
        matches!(v["status"].as_str(), Some("ok" | "degraded")),
        "{v}"
    );
    assert!(!r.body.contains(&serial), "no serial: {}", r.body);
    assert!(
        r.header("X-RateLimit-Limit").is_none(),
        "not counted: {r:?}"
    );

    let r = health(&served, Some(MONITOR));
    assert_eq!(r.status, 200, "{r:?}");
    let v = r.json();
    assert_eq!(v["miniserver"]["serial"], serial.as_str(), "{v}");
    assert!(
        v["version"].is_string() && v["structure"].is_object(),
        "{v}"
    );
    assert_eq!(
        r.header("X-RateLimit-Limit"),
        Some("200"),
        "the key's budget: {r:?}"
    );

    // A device key may not see the house's details, but a health check still gets its status.
    let r = health(&served, Some(DEVICE));
    assert_eq!(r.status, 200, "{r:?}");
    let v = r.json();
    let keys: Vec<&String> = v.as_object().expect("an object").keys().collect();
    assert_eq!(keys, ["status"], "status only for a device key: {v}");
    assert!(!r.body.contains(&serial), "no serial: {}", r.body);

    let r = health(&served, Some("homekey_monitor_wrong"));
    assert_eq!(r.status, 401, "{r:?}");
    assert!(!r.body.contains(&serial), "{}", r.body);
}

#[test]
fn a_development_server_on_loopback_shows_the_details_to_all() {
    let ms = Miniserver::demo();
    let served = Served::start(&ms, "", &[]);
    let v = health(&served, None).json();
    assert_eq!(v["miniserver"]["serial"], demo_serial().as_str(), "{v}");
}
