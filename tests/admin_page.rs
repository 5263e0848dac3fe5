//! The admin key page (`GET /admin/keys` and `/admin/assets/keys.js|keys.css`, served from
//! `src/http/assets.rs`) over real loopback HTTP: served without a key but with the strict
//! browser headers, even in staging and production; refused outside `[auth] admin_networks`;
//! 404/405 on the rest; and the HTML loads nothing but its own files (no inline code).
//! What the page does in a browser is tested by `tests/e2e/browser.sh`.

use std::net::SocketAddr;

use home_mcp::app::App;
use home_mcp::auth::gate::SecurityLevel;
use home_mcp::config::Config;
use home_mcp::http::assets;
use home_mcp::http::{HttpConfig, HttpServer};

use crate::support::app_server::{admin_context, demo_app, gate, serve};
use crate::support::keys_cli::generate;
use crate::support::net::{request, Reply};
use crate::support::server::TempDir;

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// A server over `app`'s house behind a gate of `level` with no keys at all, with the admin
/// API (and so the page) when `admin`.
fn server(app: &App, level: SecurityLevel, admin_networks: &[&str], admin: bool) -> HttpServer {
    let gate = gate(app, level, Vec::new(), admin_networks);
    serve(
        app,
        HttpConfig {
            gate: Some(gate.clone()),
            admin: admin.then(|| admin_context(app, &gate)),
            ..HttpConfig::default()
        },
    )
}

/// One request without a key, with the extra `headers`.
fn send(addr: SocketAddr, method: &str, path: &str, headers: &[&str]) -> Reply {
    request(addr, method, path, headers, "")
}

const FILES: [(&str, &str); 3] = [
    ("/admin/keys", "text/html; charset=utf-8"),
    ("/admin/assets/keys.js", "text/javascript; charset=utf-8"),
    ("/admin/assets/keys.css", "text/css; charset=utf-8"),
];

fn assert_served(addr: SocketAddr) {
    for (path, ct) in FILES {
        let r = send(addr, "GET", path, &[]);
        assert_eq!(r.status, 200, "{path}: {}", r.head);
        assert_eq!(r.header("content-type"), Some(ct), "{path}");
        assert_eq!(r.header("content-security-policy"), Some(CSP), "{path}");
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(r.header("referrer-policy"), Some("no-referrer"));
        assert_eq!(r.header("x-frame-options"), Some("DENY"));
        assert_eq!(r.header("cache-control"), Some("no-cache"));
        assert!(!r.body.is_empty(), "{path}");
        // Revalidation with the ETag.
        let tag = r.header("etag").expect("etag");
        let again = send(addr, "GET", path, &[&format!("If-None-Match: {tag}")]);
        assert_eq!(again.status, 304, "{path}");
        assert!(again.body.is_empty());
        assert_eq!(again.header("x-content-type-options"), Some("nosniff"));
    }
}

#[test]
fn page_and_assets_without_a_key() {
    let app = demo_app();
    for level in [SecurityLevel::Staging, SecurityLevel::Production] {
        let s = server(&app, level, &[], true);
        assert_served(s.addr());
        // The API behind it still needs a key.
        let r = send(s.addr(), "GET", "/admin/api/keys", &[]);
        assert_eq!(r.status, 401, "{level:?}: {}", r.body);
        // Only the exact paths are files: anything else under /admin is the admin API, and
        // in staging and production the gate asks for a key before any route is looked up
        // (src/http/mod.rs `authenticate`), so a caller without one learns nothing about
        // which paths exist: 401, never 404.
        for path in [
            "/admin/assets/nope.js",
            "/admin/assets/",
            "/admin/keys/x",
            "/admin/assets/../keys",
        ] {
            let r = send(s.addr(), "GET", path, &[]);
            assert_eq!(r.status, 401, "{level:?} {path}: {}", r.body);
            assert_eq!(r.json()["error"]["code"], "INVALID_API_KEY", "{path}");
        }
        let r = send(s.addr(), "POST", "/admin/keys", &[]);
        assert_eq!(r.status, 405);
        assert_eq!(r.header("allow"), Some("GET, HEAD"));
        assert_eq!(r.header("x-frame-options"), Some("DENY"));
        s.shutdown();
        s.join();
    }
    // In development on loopback (no key needed: anonymous with every permission), the same
    // paths reach the admin API, which has no such routes: 404.
    let s = server(&app, SecurityLevel::Development, &[], true);
    for path in ["/admin/assets/nope.js", "/admin/keys/x"] {
        let r = send(s.addr(), "GET", path, &[]);
        assert_eq!(r.status, 404, "{path}: {}", r.body);
    }
    s.shutdown();
    s.join();
    // Without the admin API, no page either.
    let s = server(&app, SecurityLevel::Staging, &[], false);
    let r = send(s.addr(), "GET", "/admin/keys", &[]);
    assert_eq!(r.status, 404);
    s.shutdown();
    s.join();
    app.shutdown();
}

#[test]
fn page_honours_admin_networks() {
    let app = demo_app();
    // Loopback is not in the list: the page and its files are refused like the API.
    let s = server(&app, SecurityLevel::Staging, &["10.0.0.0/8"], true);
    for (path, _) in FILES {
        let r = send(s.addr(), "GET", path, &[]);
        assert_eq!(r.status, 403, "{path}: {}", r.body);
        assert!(r.body.contains("admin_networks"), "{}", r.body);
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
    let dir = TempDir::new("admin-page");
    let path = dir.join("keys.toml");
    let id = generate(&path, "admin", &[])["id"]
        .as_str()
        .expect("the key")
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
    let app = demo_app();
    assert!(app.gate.store().list().unwrap().is_empty());
    app.shutdown();
}
