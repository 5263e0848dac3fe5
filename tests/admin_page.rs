//! The admin key page (`GET /admin/keys` and `/admin/assets/keys.js|keys.css`, served from
//! `src/http/assets.rs`) over real loopback HTTP: served without a key but with the strict
//! browser headers, even in staging and production; refused outside `[auth] admin_networks`;
//! 404/405 on the rest; and the HTML loads nothing but its own files (no inline code).
//! What the page does in a browser is tested by `tests/e2e/browser.sh`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use home_mcp::app::App;
use home_mcp::auth::gate::{Gate, GateConfig, SecurityLevel};
use home_mcp::auth::store::MemoryStore;
use home_mcp::config::Config;
use home_mcp::http::admin::AdminContext;
use home_mcp::http::assets;
use home_mcp::http::{HttpConfig, HttpServer};
use serde_json::json;

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// A server over `app`'s house behind a gate of `level` with no keys at all.
fn server(app: &App, level: SecurityLevel, admin_networks: &[&str], admin: bool) -> HttpServer {
    let gate = Arc::new(Gate::new(
        Arc::new(MemoryStore::new(Vec::new())),
        GateConfig {
            level,
            admin_networks: admin_networks.iter().map(|s| s.to_string()).collect(),
            ..GateConfig::default()
        },
        "127.0.0.1".parse().unwrap(),
        home_mcp::app::permission_of(Arc::new(home_mcp::tools::HomeTools::new(app.house.clone()))),
    ));
    let config = HttpConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        gate: Some(gate.clone()),
        admin: admin.then(|| {
            Arc::new(AdminContext::new(
                gate,
                app.house.clone(),
                app.audit.clone(),
            ))
        }),
        ..HttpConfig::default()
    };
    HttpServer::start(
        config,
        app.mcp.clone(),
        Arc::new(|| json!({"status": "ok"})),
    )
    .expect("server starts")
}

/// One request without a key; returns (status, lower-case head, body).
fn send(addr: SocketAddr, method: &str, path: &str, extra: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nContent-Length: 0\r\n{extra}\r\n",
        addr.port()
    );
    s.write_all(head.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a full response");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_ascii_lowercase(), body.to_string())
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
        .map(str::trim)
}

const FILES: [(&str, &str); 3] = [
    ("/admin/keys", "text/html; charset=utf-8"),
    ("/admin/assets/keys.js", "text/javascript; charset=utf-8"),
    ("/admin/assets/keys.css", "text/css; charset=utf-8"),
];

fn assert_served(addr: SocketAddr) {
    for (path, ct) in FILES {
        let (status, head, body) = send(addr, "GET", path, "");
        assert_eq!(status, 200, "{path}: {head}");
        assert_eq!(header(&head, "content-type"), Some(ct), "{path}");
        assert_eq!(
            header(&head, "content-security-policy"),
            Some(CSP.to_ascii_lowercase().as_str()),
            "{path}"
        );
        assert_eq!(header(&head, "x-content-type-options"), Some("nosniff"));
        assert_eq!(header(&head, "referrer-policy"), Some("no-referrer"));
        assert_eq!(header(&head, "x-frame-options"), Some("deny"));
        assert_eq!(header(&head, "cache-control"), Some("no-cache"));
        assert!(!body.is_empty(), "{path}");
        // Revalidation with the ETag.
        let tag = header(&head, "etag").expect("etag").to_string();
        let (status, head, body) = send(addr, "GET", path, &format!("If-None-Match: {tag}\r\n"));
        assert_eq!(status, 304, "{path}");
        assert!(body.is_empty());
        assert_eq!(header(&head, "x-content-type-options"), Some("nosniff"));
    }
}

#[test]
fn page_and_assets_without_a_key() {
    let app = App::start(&Config::default(), true).expect("demo starts");
    for level in [SecurityLevel::Staging, SecurityLevel::Production] {
        let s = server(&app, level, &[], true);
        assert_served(s.addr());
        // The API behind it still needs a key.
        let (status, _, _) = send(s.addr(), "GET", "/admin/api/keys", "");
        assert_eq!(status, 401, "{level:?}");
        // Only the exact paths are files.
        for path in [
            "/admin/assets/nope.js",
            "/admin/assets/",
            "/admin/keys/x",
            "/admin/assets/../keys",
        ] {
            let (status, _, _) = send(s.addr(), "GET", path, "");
            assert!(status == 401 || status == 404, "{path}: {status}");
        }
        let (status, head, _) = send(s.addr(), "POST", "/admin/keys", "");
        assert_eq!(status, 405);
        assert_eq!(header(&head, "allow"), Some("get, head"));
        assert_eq!(header(&head, "x-frame-options"), Some("deny"));
        s.shutdown();
        s.join();
    }
    // An unknown asset with an admin key gets 404 (not a file, not an API route).
    let s = server(&app, SecurityLevel::Development, &[], true);
    let (status, _, body) = send(s.addr(), "GET", "/admin/assets/nope.js", "");
    assert_eq!(status, 404, "{body}");
    s.shutdown();
    s.join();
    // Without the admin API, no page either.
    let s = server(&app, SecurityLevel::Staging, &[], false);
    let (status, _, _) = send(s.addr(), "GET", "/admin/keys", "");
    assert_eq!(status, 404);
    s.shutdown();
    s.join();
    app.shutdown();
}

#[test]
fn page_honours_admin_networks() {
    let app = App::start(&Config::default(), true).expect("demo starts");
    // Loopback is not in the list: the page and its files are refused like the API.
    let s = server(&app, SecurityLevel::Staging, &["10.0.0.0/8"], true);
    for (path, _) in FILES {
        let (status, _, body) = send(s.addr(), "GET", path, "");
        assert_eq!(status, 403, "{path}: {body}");
        assert!(body.contains("admin_networks"), "{body}");
    }
    s.shutdown();
    s.join();
    // Listed: served.
    let s = server(&app, SecurityLevel::Production, &["127.0.0.0/8"], true);
    assert_served(s.addr());
    s.shutdown();
    s.join();
    app.shutdown();
}

#[test]
fn html_loads_only_its_own_files() {
    let html = assets::find(assets::ADMIN, "/admin/keys").unwrap().body;
    let lower = html.to_ascii_lowercase();
    assert!(!lower.contains("http:") && !lower.contains("https:") && !lower.contains("//cdn"));
    assert!(!lower.contains("style="), "no inline style attributes");
    assert!(!lower.contains("<style"), "no style elements");
    for tag in lower
        .split('<')
        .skip(1)
        .map(|t| t.split('>').next().unwrap())
    {
        for word in tag.split_whitespace().skip(1) {
            assert!(
                !(word.starts_with("on") && word.contains('=')),
                "inline event handler in <{tag}>"
            );
        }
    }
    // Every <script> has a src under /admin/assets/ and no body.
    let mut scripts = 0;
    for part in lower.split("<script").skip(1) {
        let tag = part.split('>').next().unwrap();
        assert!(tag.contains("src=\"/admin/assets/"), "<script{tag}>");
        assert!(
            part[tag.len() + 1..].starts_with("</script>"),
            "inline script"
        );
        scripts += 1;
    }
    assert_eq!(scripts, 1);
    for attr in ["src=\"", "href=\""] {
        for part in lower.split(attr).skip(1) {
            assert!(
                part.starts_with("/admin/assets/") || part.starts_with("data:"),
                "{attr}{part:.40}"
            );
        }
    }
    // The stable ids the browser tests use.
    for id in [
        "key-form",
        "api-key",
        "keys",
        "create-form",
        "new-role",
        "new-name",
        "new-expires",
        "new-ips",
        "new-devices",
        "new-permissions",
        "new-rooms",
        "new-categories",
        "new-secret",
        "error",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "#{id}");
    }
    // Data is put into the page as text only.
    let js = assets::find(assets::ADMIN, "/admin/assets/keys.js")
        .unwrap()
        .body;
    for sink in [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
    ] {
        assert!(!js.contains(sink), "keys.js uses {sink}");
    }
}

/// `serve --demo --key-store PATH` (what `tests/e2e/browser.sh` runs) uses that store; plain
/// `--demo` keeps an empty in-memory one.
#[test]
fn demo_uses_a_named_key_store() {
    let dir = std::env::temp_dir().join(format!("home-mcp-admin-page-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("keys.toml");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_home-mcp"))
        .args([
            "keys",
            "generate",
            "--role",
            "admin",
            "--json",
            "--key-store",
        ])
        .arg(&path)
        .output()
        .expect("keys generate runs");
    assert!(out.status.success(), "{out:?}");
    let id = serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let config = Config {
        key_store: Some(path),
        ..Config::default()
    };
    let app = App::start(&config, true).expect("demo starts");
    let keys = app.gate.store().list().unwrap();
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].id, id);
    app.shutdown();
    let app = App::start(&Config::default(), true).expect("demo starts");
    assert!(app.gate.store().list().unwrap().is_empty());
    app.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}
