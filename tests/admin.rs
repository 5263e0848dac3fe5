//! The admin REST API (`src/http/admin.rs`) and the audit log (`src/audit.rs`) over real
//! loopback HTTP against the demo house: key CRUD and its effect on the gate at once, role
//! refusals, bad bodies, status, rate limits, and what the audit log records (and never does).

use std::net::SocketAddr;
use std::sync::Arc;

use home_mcp::audit::Query;
use home_mcp::auth::gate::SecurityLevel;
use home_mcp::auth::{ApiKey, Role};
use home_mcp::http::HttpConfig;
use serde_json::{json, Value};

use crate::support::app_server::{admin_context, demo_app, gate, send_json, AppServer};
use crate::support::gate::key;
use crate::support::keys_cli::{generate, keys};
use crate::support::mcp::McpHttp;
use crate::support::server::TempDir;

const ADMIN: &str = "homekey_admin_1_00112233445566778899aabbccddeeff";
const ADMIN2: &str = "homekey_admin_6_ffeeddccbbaa99887766554433221100";
const OPERATOR: &str = "homekey_operator_2_00112233445566778899aabbccddeeff";
const MONITOR: &str = "homekey_monitor_3_00112233445566778899aabbccddeeff";

fn named_key(id: &str, role: Role, name: &str) -> ApiKey {
    ApiKey {
        name: name.into(),
        ..key(id, role)
    }
}

type Fixture = AppServer;

fn start() -> Fixture {
    start_with(Vec::new())
}

/// The demo house behind a staging gate with four keys (two admins, operator, monitor) and
/// `extra`, the audit log and the admin API.
fn start_with(extra: Vec<ApiKey>) -> Fixture {
    let mut keys = vec![
        named_key(ADMIN, Role::Admin, "root"),
        named_key(ADMIN2, Role::Admin, "second admin"),
        named_key(OPERATOR, Role::Operator, "kitchen tablet"),
        named_key(MONITOR, Role::Monitor, "dashboard"),
    ];
    keys.extend(extra);
    AppServer::start(|app| {
        let gate = gate(app, SecurityLevel::Staging, keys, &[]);
        HttpConfig {
            gate: Some(gate.clone()),
            audit: app.audit.clone(),
            admin: Some(admin_context(app, &gate)),
            ..HttpConfig::default()
        }
    })
}

/// One JSON request with `key` in `X-API-Key`; returns (status, lower-case head, JSON body
/// or `null`).
fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: &str,
) -> (u16, String, Value) {
    let r = send_json(addr, method, path, key, body);
    (
        r.status,
        r.head,
        serde_json::from_str(&r.body).unwrap_or(Value::Null),
    )
}

/// `initialize` on `/mcp` with `key`; the session id, or the status when refused.
fn mcp_session(addr: SocketAddr, key: &str) -> Result<String, u16> {
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let r = send_json(addr, "POST", "/mcp", Some(key), init);
    if r.status != 200 {
        return Err(r.status);
    }
    Ok(r.header("mcp-session-id").expect("session id").to_string())
}

/// A `tools/call` on `/mcp` in a fresh session; returns (status, the JSON-RPC answer or
/// the refusal's body).
fn mcp_call(addr: SocketAddr, key: &str, tool: &str, arguments: Value) -> (u16, Value) {
    McpHttp::connect(addr, Some(key)).try_call(tool, arguments)
}

fn audit(f: &Fixture, q: Query) -> Vec<home_mcp::audit::Entry> {
    f.app.audit.as_ref().expect("audit on").query(&q).unwrap()
}

#[test]
fn admin_creates_updates_and_deletes_keys_with_immediate_effect() {
    let f = start();
    let a = f.addr();
    let (s, _, body) = send(a, "GET", "/admin/api/keys", Some(ADMIN), "");
    assert_eq!(s, 200, "{body}");
    let keys = body["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 4);
    let text = body.to_string();
    assert!(
        !text.contains("00112233445566778899aabbccddeeff"),
        "no secrets: {text}"
    );
    assert!(keys
        .iter()
        .all(|k| k["id"].as_str().unwrap().ends_with("****")));
    assert!(keys[0].get("usage").is_some() && keys[0].get("ip_whitelist").is_some());

    let (s, _, body) = send(
        a,
        "POST",
        "/admin/api/keys",
        Some(ADMIN),
        r#"{"role":"operator","name":"new tablet","expires_days":30,"ip_whitelist":["127.0.0.0/8"]}"#,
    );
    assert_eq!(s, 201, "{body}");
    let new_key = body["key"].as_str().unwrap().to_string();
    assert!(new_key.starts_with("homekey_operator_7_"), "{new_key}");
    assert_eq!(body["record"]["created_by"], "root");
    assert_eq!(body["record"]["name"], "new tablet");
    assert!(body["record"]["expires_at"].is_string());
    assert!(body["record"]["id"].as_str().unwrap().ends_with("****"));
    // Works at once.
    assert!(mcp_session(a, &new_key).is_ok());

    // Update by the masked id as `keys list` prints it, percent-encoded.
    let masked = body["record"]["id"].as_str().unwrap().replace('*', "%2A");
    let path = format!("/admin/api/keys/{masked}");
    let (s, _, body) = send(
        a,
        "PUT",
        &path,
        Some(ADMIN),
        r#"{"name":"renamed","rooms":["Küche"]}"#,
    );
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["record"]["name"], "renamed");
    assert_eq!(body["record"]["rooms"], json!(["Küche"]));
    // Who may confirm and open (issue 20): off unless the owner sets it.
    assert_eq!(body["record"]["model_confirms"], false);
    assert_eq!(body["record"]["open_doors"], false);
    let (s, _, body) = send(a, "PUT", &path, Some(ADMIN), r#"{"open_doors":true}"#);
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["record"]["open_doors"], true);
    assert_eq!(body["record"]["model_confirms"], false);
    // Deactivated: refused at once.
    let (s, _, body) = send(a, "PUT", &path, Some(ADMIN), r#"{"active":false}"#);
    assert_eq!(s, 200, "{body}");
    assert_eq!(mcp_session(a, &new_key), Err(401));
    let (s, _, _) = send(
        a,
        "PUT",
        &path,
        Some(ADMIN),
        r#"{"active":true,"expires_days":0}"#,
    );
    assert_eq!(s, 200);
    assert!(mcp_session(a, &new_key).is_ok());
    // Deleted: refused at once; a second delete is 404.
    let (s, _, body) = send(
        a,
        "DELETE",
        &format!("/admin/api/keys/{new_key}"),
        Some(ADMIN),
        "",
    );
    assert_eq!(s, 200, "{body}");
    assert_eq!(mcp_session(a, &new_key), Err(401));
    let (s, _, body) = send(
        a,
        "DELETE",
        &format!("/admin/api/keys/{new_key}"),
        Some(ADMIN),
        "",
    );
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (404, Some("NOT_FOUND"))
    );

    // Each key operation is in the audit log, with the admin's name and no secret.
    let ops = audit(
        &f,
        Query {
            key: Some("root".into()),
            ..Query::default()
        },
    );
    let names: Vec<&str> = ops.iter().map(|e| e.operation.as_str()).collect();
    assert!(
        names.contains(&"key.create") && names.contains(&"key.update"),
        "{names:?}"
    );
    assert_eq!(
        names.iter().filter(|n| **n == "key.delete").count(),
        1,
        "{names:?}"
    );
    let create = ops.iter().find(|e| e.operation == "key.create").unwrap();
    assert_eq!(create.transport, "admin");
    assert!(
        create.target.starts_with("new tablet (homekey_operator_7_"),
        "{create:?}"
    );
    assert!(
        !format!("{ops:?}").contains(&new_key[20..]),
        "no secret in the log"
    );
}

#[test]
fn admin_refuses_bad_input_self_lockout_and_other_roles() {
    let f = start();
    let a = f.addr();
    let post = |body: &str| send(a, "POST", "/admin/api/keys", Some(ADMIN), body);
    for bad in [
        r#"{"role":"superuser"}"#,
        r#"{"role":"operator","ip_whitelist":["10.0.0.0/33"]}"#,
        r#"{"role":"operator","ip_whitelist":["not-an-ip"]}"#,
        r#"{"role":"device"}"#,
        r#"{"role":"custom"}"#,
        r#"{"role":"operator","permissions":["read"]}"#,
        r#"{"role":"operator","colour":"blue"}"#,
        r#"{"role":"operator","expires_days":-1}"#,
        r#"{"role":"operator","expires_days":99999}"#,
        r#"{"name":"no role"}"#,
        r#"["role"]"#,
        "role=operator",
        "",
    ] {
        let (s, _, body) = post(bad);
        assert_eq!(s, 400, "{bad}: {body}");
        assert_eq!(body["error"]["code"], "INVALID_PARAMETERS", "{bad}");
        assert!(body["error"]["message"].is_string());
    }
    let put = |id: &str, body: &str| {
        send(
            a,
            "PUT",
            &format!("/admin/api/keys/{id}"),
            Some(ADMIN),
            body,
        )
    };
    let (s, _, body) = put(OPERATOR, r#"{"nickname":"x"}"#);
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (400, Some("INVALID_PARAMETERS"))
    );
    let (s, _, _) = put(OPERATOR, r#"{"permissions":["read"]}"#);
    assert_eq!(s, 400, "permissions only on custom keys");
    let (s, _, body) = put("homekey_operator_99_deadbeef", r#"{"name":"x"}"#);
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (404, Some("NOT_FOUND"))
    );
    assert!(body["error"]["details"]["key_id"]
        .as_str()
        .unwrap()
        .ends_with("****"));
    let (s, _, _) = send(a, "GET", "/admin/api/keys/x", Some(ADMIN), "");
    assert_eq!(s, 405);
    let (s, head, _) = send(a, "PATCH", "/admin/api/keys", Some(ADMIN), "");
    assert_eq!(s, 405);
    assert!(head.contains("allow: GET, POST"), "{head}");
    let (s, _, _) = send(a, "GET", "/admin/nothing", Some(ADMIN), "");
    assert_eq!(s, 404);

    // Self-lockout.
    let (s, _, body) = send(
        a,
        "DELETE",
        &format!("/admin/api/keys/{ADMIN}"),
        Some(ADMIN),
        "",
    );
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (409, Some("CONFLICT")),
        "{body}"
    );
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("lock yourself out"));
    let (s, _, _) = put(ADMIN, r#"{"active":false}"#);
    assert_eq!(s, 409);
    assert!(mcp_session(a, ADMIN).is_ok(), "still usable");
    // Another admin may.
    let (s, _, _) = send(
        a,
        "PUT",
        &format!("/admin/api/keys/{ADMIN}"),
        Some(ADMIN2),
        r#"{"name":"root2"}"#,
    );
    assert_eq!(s, 200);

    // Roles: 403 for operator and monitor, 401 without a key, on every endpoint.
    for (method, path) in [
        ("GET", "/admin/api/keys"),
        ("POST", "/admin/api/keys"),
        ("PUT", "/admin/api/keys/x"),
        ("DELETE", "/admin/api/keys/x"),
        ("GET", "/admin/status"),
        ("GET", "/admin/rate-limits"),
        ("GET", "/admin/api/audit"),
    ] {
        for k in [OPERATOR, MONITOR] {
            let (s, _, body) = send(a, method, path, Some(k), r#"{"role":"admin"}"#);
            assert_eq!(s, 403, "{method} {path}");
            assert_eq!(body["error"]["code"], "INSUFFICIENT_PERMISSIONS");
        }
        let (s, _, body) = send(a, method, path, None, "");
        assert_eq!(s, 401, "{method} {path}");
        assert_eq!(body["error"]["code"], "INVALID_API_KEY");
    }
    let (_, _, body) = send(a, "GET", "/admin/api/keys", Some(ADMIN), "");
    assert_eq!(
        body["keys"].as_array().unwrap().len(),
        4,
        "nothing created by refusals"
    );
}

#[test]
fn ambiguous_masked_ids_are_409() {
    let f = start_with(vec![
        named_key(
            "homekey_operator_8_aaaa1111111111111111111111111111",
            Role::Operator,
            "twin a",
        ),
        named_key(
            "homekey_operator_8_aaaa2222222222222222222222222222",
            Role::Operator,
            "twin b",
        ),
    ]);
    let a = f.addr();
    let (s, _, body) = send(
        a,
        "PUT",
        "/admin/api/keys/homekey_operator_8_aaaa****",
        Some(ADMIN),
        r#"{"name":"x"}"#,
    );
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (409, Some("CONFLICT")),
        "{body}"
    );
    let (s, _, _) = send(
        a,
        "DELETE",
        "/admin/api/keys/homekey_operator_8_aaaa1****",
        Some(ADMIN),
        "",
    );
    assert_eq!(s, 200, "a longer prefix is unique");
    // A role prefix is no reference (no guessing): 404.
    let (s, _, _) = send(
        a,
        "DELETE",
        "/admin/api/keys/homekey_operator_",
        Some(ADMIN),
        "",
    );
    assert_eq!(s, 404);
}

#[test]
fn status_and_rate_limits() {
    let f = start();
    let a = f.addr();
    let (s, _, body) = send(a, "GET", "/admin/status", Some(ADMIN), "");
    assert_eq!(s, 200, "{body}");
    let lox = &body["services"]["loxone"];
    assert!(
        ["websocket", "polling", "disconnected"].contains(&lox["mode"].as_str().unwrap()),
        "{lox}"
    );
    assert!(lox["connected"].is_boolean());
    assert!(lox["reconnects"].is_u64() && lox["events_received"].is_u64());
    assert!(lox.get("last_error").is_some());
    assert_eq!(body["security_level"], "staging");
    assert_eq!(body["keys"]["total"], 4);
    assert_eq!(body["keys"]["by_role"]["admin"], 2);
    assert!(body["structure"]["rooms"].as_u64().unwrap() > 0);
    assert!(body["mcp"]["sessions"].is_u64());
    assert_eq!(body["audit"]["enabled"], true);
    assert!(body["version"].is_string() && body["uptime_secs"].is_u64());

    send(a, "GET", "/tools", Some(MONITOR), "");
    let (s, _, body) = send(a, "GET", "/admin/rate-limits", Some(ADMIN), "");
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["limits"]["per_role"]["operator"], 500);
    assert_eq!(body["limits"]["per_client"], 100);
    assert_eq!(body["window_secs"], 60.0);
    let buckets = body["buckets"].as_array().unwrap();
    let monitor = buckets
        .iter()
        .find(|b| b["bucket"] == "key:homekey_monitor_3_0011****")
        .unwrap_or_else(|| panic!("monitor bucket in {buckets:?}"));
    assert_eq!(
        (monitor["count"].as_u64(), monitor["limit"].as_u64()),
        (Some(1), Some(200))
    );
    assert!(!body
        .to_string()
        .contains("00112233445566778899aabbccddeeff"));
}

#[test]
fn audit_records_calls_failures_refusals_and_never_pins() {
    let f = start();
    let a = f.addr();
    let (s, body) = mcp_call(
        a,
        OPERATOR,
        "control_device",
        json!({"device": "Deckenlicht Küche", "action": "on"}),
    );
    assert_eq!(s, 200, "{body}");
    let (_, body) = mcp_call(
        a,
        OPERATOR,
        "control_device",
        json!({"device": "Nirgendwo", "action": "on"}),
    );
    assert_eq!(body["result"]["isError"], true, "{body}");
    let (s, _) = mcp_call(
        a,
        OPERATOR,
        "disarm_alarm",
        json!({"code": "987123", "confirm": true}),
    );
    assert_eq!(s, 403);
    let (_, _) = mcp_call(
        a,
        ADMIN,
        "disarm_alarm",
        json!({"code": "987123", "confirm": true}),
    );
    // Reads are not audited.
    let (s, _) = mcp_call(a, OPERATOR, "list_rooms", json!({}));
    assert_eq!(s, 200);
    // REST too.
    let (s, _, _) = send(
        a,
        "POST",
        "/api/devices/Deckenlicht%20K%C3%BCche/off",
        Some(OPERATOR),
        "",
    );
    assert_eq!(s, 200);

    let (s, _, body) = send(
        a,
        "GET",
        "/admin/api/audit?key_name=kitchen%20tablet&operation=control_device&limit=10",
        Some(ADMIN),
        "",
    );
    assert_eq!(s, 200, "{body}");
    let entries = body["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 3, "{entries:?}");
    let rest = &entries[0];
    assert_eq!(
        (rest["transport"].as_str(), rest["result"].as_str()),
        (Some("rest"), Some("ok"))
    );
    let failed = &entries[1];
    assert_eq!(failed["result"], "DEVICE_NOT_FOUND");
    assert_eq!(failed["target"], "Nirgendwo");
    let ok = &entries[2];
    assert_eq!(ok["key_name"], "kitchen tablet");
    assert_eq!(ok["key_id"], "homekey_operator_2_0011****");
    assert_eq!(ok["ip"], "127.0.0.1");
    assert_eq!(ok["transport"], "http");
    assert_eq!(ok["target"], "Deckenlicht Küche");
    assert_eq!(ok["result"], "ok");
    assert!(ok["latency_ms"].is_u64() && ok["time"].as_str().unwrap().ends_with('Z'));

    let all = audit(&f, Query::default());
    assert!(
        all.iter().all(|e| e.operation != "list_rooms"),
        "reads not audited"
    );
    let denied = audit(
        &f,
        Query {
            result: Some("INSUFFICIENT_PERMISSIONS".into()),
            ..Query::default()
        },
    );
    assert_eq!(denied.len(), 1, "{denied:?}");
    assert_eq!(
        (denied[0].operation.as_str(), denied[0].key_name.as_str()),
        ("disarm_alarm", "kitchen tablet")
    );
    let disarms = audit(
        &f,
        Query {
            operation: Some("disarm_alarm".into()),
            ..Query::default()
        },
    );
    assert_eq!(disarms.len(), 2, "{disarms:?}");
    assert!(
        !format!("{all:?}").contains("987123"),
        "the PIN is never stored"
    );

    for bad in [
        "?limit=0",
        "?limit=abc",
        "?since=yesterday",
        "?colour=red",
        "?limit=1001",
    ] {
        let (s, _, body) = send(a, "GET", &format!("/admin/api/audit{bad}"), Some(ADMIN), "");
        assert_eq!(
            (s, body["error"]["code"].as_str()),
            (400, Some("INVALID_PARAMETERS")),
            "{bad}"
        );
    }
    let (s, _, body) = send(
        a,
        "GET",
        "/admin/api/audit?since=2999-01-01T00:00:00Z",
        Some(ADMIN),
        "",
    );
    assert_eq!(s, 200);
    assert_eq!(body["entries"], json!([]));
    // `key` is the gate's credential in a URL (outside production), never a filter.
    let (s, _, body) = send(
        a,
        "GET",
        &format!("/admin/api/audit?key={ADMIN}&since=2999-01-01T00:00:00Z"),
        None,
        "",
    );
    assert_eq!((s, &body["entries"]), (200, &json!([])), "{body}");
}

#[test]
fn the_pin_never_reaches_audit_db_on_disk() {
    let tmp = TempDir::new("admin-audit");
    let dir = &tmp.0;
    let path = dir.join("audit.db");
    let log = home_mcp::audit::AuditLog::open(&path, 90).unwrap();
    let app = demo_app();
    let tools = home_mcp::tools::HomeTools::new(app.house.clone()).with_audit(log.clone());
    let server = home_mcp::mcp::McpServer::new(Arc::new(tools), Default::default());
    let input = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"disarm_alarm","arguments":{"code":"555777","pin":"555777","password":"555777","confirm":true}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"control_device","arguments":{"device":"Deckenlicht Küche","action":"on"}}}"#,
        "\n",
    );
    let mut out = Vec::new();
    home_mcp::stdio::serve(&server, std::io::Cursor::new(input), &mut out).unwrap();
    let entries = log.query(&Query::default()).unwrap();
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert!(entries
        .iter()
        .all(|e| e.key_name == "stdio (local)" && e.transport == "stdio"));
    assert_eq!(entries[0].operation, "control_device");
    assert_eq!(entries[0].result, "ok");
    drop(server);
    log.close();
    drop(log);
    // Every byte of the database files: the PIN is nowhere.
    for p in &files_beside_audit_db(dir) {
        let bytes = std::fs::read(p).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("555777"),
            "{}",
            p.display()
        );
    }
}

#[test]
fn cli_key_changes_are_audited_next_to_the_store() {
    let tmp = TempDir::new("admin-cli-audit");
    let dir = &tmp.0;
    let store = dir.join("keys.toml");
    let keys = |args: &[&str]| {
        let o = keys(&store, args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let id = generate(&store, "operator", &["--name", "cli tablet"])["id"]
        .as_str()
        .expect("the secret in id")
        .to_string();
    keys(&["update", &id, "--name", "renamed"]);
    keys(&["revoke", &id]);
    keys(&["list"]);
    let log = home_mcp::audit::AuditLog::open(&dir.join("audit.db"), 90).unwrap();
    let entries = log.query(&Query::default()).unwrap();
    let ops: Vec<&str> = entries.iter().map(|e| e.operation.as_str()).collect();
    assert_eq!(
        ops,
        ["key.revoke", "key.update", "key.create"],
        "{entries:?}"
    );
    assert!(entries
        .iter()
        .all(|e| e.transport == "cli" && e.result == "ok"));
    assert!(entries[2]
        .target
        .starts_with("cli tablet (homekey_operator_1_"));
    drop(log);
    let audit_files = files_beside_audit_db(dir).into_iter().filter(|p| {
        p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("audit.db")
    });
    for p in audit_files {
        let bytes = std::fs::read(&p).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(&id[22..]),
            "no secret in {}",
            p.display()
        );
    }
}

/// Every file in `dir`; fails when the audit database `audit.db` is not among them.
fn files_beside_audit_db(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|f| f.unwrap().path())
        .collect();
    assert!(
        files.iter().any(|p| p.ends_with("audit.db")),
        "audit.db in {}: {files:?}",
        dir.display()
    );
    files
}
