//! `cargo bench --bench gate`: the cost of the API key gate per request (issue 6), printed for
//! the closing notes. One request = `Gate::authenticate` (SHA-256 of the presented key, constant
//! time comparison against every stored key, expiry, IP whitelist, rate-limit buckets, usage
//! recording) + `Gate::authorize` (the tool's permission from the real tool registry of the
//! demo house, the key's scope check).
//!
//! Cases: 1 and 50 keys in memory; 50 keys in the TOML file store (one `stat` per request while
//! the file is unchanged); a scoped key (rooms and categories, resolved against the house).
//! Environment: `BENCH_N` requests per case (default 200000).

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use home_mcp::app::App;
use home_mcp::auth::gate::{Action, Credentials, Gate, GateConfig, RateLimits, SecurityLevel};
use home_mcp::auth::store::{FileStore, KeyStore, MemoryStore};
use home_mcp::auth::{ApiKey, Role, Usage};
use home_mcp::config::Config;
use home_mcp::tools::HomeTools;
use home_mcp::workflow::WorkflowStore;
use serde_json::json;

fn key(i: usize, role: Role) -> ApiKey {
    ApiKey {
        id: format!("homekey_{role}_{i}_{i:032x}"),
        name: format!("key {i}"),
        role,
        created_by: "bench".into(),
        created_at: "2026-01-01T00:00:00Z".into(),
        active: true,
        expires_at: Some("2099-01-01T00:00:00Z".into()),
        ip_whitelist: vec!["127.0.0.0/8".into(), "192.168.1.0/24".into()],
        allowed_devices: vec![],
        permissions: vec![],
        rooms: vec![],
        categories: vec![],
        model_confirms: false,
        open_doors: false,
        cameras: false,
        grant: None,
        profile: None,
        usage: Usage::default(),
    }
}

fn main() {
    let n: u32 = std::env::var("BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let app = App::start(&Config::default(), true).expect("demo starts");
    let tools = Arc::new(HomeTools::with_store(
        app.house.clone(),
        Arc::new(WorkflowStore::in_memory()),
    ));
    let config = GateConfig {
        level: SecurityLevel::Production,
        limits: RateLimits {
            admin: u32::MAX,
            operator: u32::MAX,
            monitor: u32::MAX,
            device: u32::MAX,
            custom: u32::MAX,
            per_client: u32::MAX,
        },
        ..GateConfig::default()
    };
    let gate = |store: Arc<dyn KeyStore>| {
        Gate::new(
            store,
            config.clone(),
            "127.0.0.1".parse().unwrap(),
            tools.clone(),
        )
    };
    let fifty: Vec<ApiKey> = (1..=50).map(|i| key(i, Role::Operator)).collect();
    let dir = std::env::temp_dir().join(format!("home-mcp-gate-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = FileStore::new(dir.join("keys.toml"));
    for k in &fifty {
        file.insert(k.clone()).unwrap();
    }
    let mut guest = key(51, Role::Operator);
    guest.rooms = vec!["Küche".into(), "Bad".into()];
    guest.categories = vec!["lighting".into(), "blinds".into()];
    let control = json!({"room": "Küche", "action": "on"});
    let control = control.as_object().unwrap();
    let cases: Vec<(&str, Gate, String)> = vec![
        (
            "1 key, memory store",
            gate(Arc::new(MemoryStore::new(vec![fifty[0].clone()]))),
            fifty[0].id.clone(),
        ),
        (
            "50 keys, memory store",
            gate(Arc::new(MemoryStore::new(fifty.clone()))),
            fifty[49].id.clone(),
        ),
        (
            "50 keys, TOML file store",
            gate(Arc::new(file)),
            fifty[49].id.clone(),
        ),
        (
            "scoped key (2 rooms, 2 categories)",
            gate(Arc::new(MemoryStore::new(vec![guest.clone()]))),
            guest.id.clone(),
        ),
    ];
    let ip: IpAddr = "192.168.1.20".parse().unwrap();
    println!("auth gate, {n} requests per case (authenticate + authorize control_room_lights):");
    for (label, gate, id) in &cases {
        let creds = Credentials {
            header_key: Some(id),
            ip: Some(ip),
            ..Credentials::default()
        };
        let started = Instant::now();
        for _ in 0..n {
            let p = gate.authenticate(&creds).expect("valid key");
            gate.authorize(
                &p,
                &Action::Tool {
                    name: "control_room_lights",
                    arguments: control,
                },
            )
            .expect("allowed");
        }
        let per = started.elapsed() / n;
        println!(
            "  {label:<36} {:>8.2} µs per request",
            per.as_secs_f64() * 1e6
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
