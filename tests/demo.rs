//! `serve --demo` opens every page (issue 22): it prints, once, the URLs of MCP, the dashboard
//! and the admin page and an admin key of its in-memory store; following what it prints, the
//! dashboard's API answers without a key at the development level on loopback and the admin
//! API lists the keys with the printed key. At staging and production the dashboard and the
//! admin page still refuse a missing or wrong key. (The browser test, tests/e2e/browser.sh,
//! opens the same pages in chromium.)

use crate::support::demo::{split_url, Demo};
use crate::support::net::{free_port, request};

/// `home-mcp serve --demo` on a free loopback port with `env`.
fn start(env: &[(&str, &str)]) -> Demo {
    let listen = format!("127.0.0.1:{}", free_port());
    Demo::start_args(&["serve", "--demo", "--listen", &listen], env)
}

fn get(url: &str, key: Option<&str>) -> (u16, String) {
    let (addr, path) = split_url(url);
    let headers: Vec<String> = key.map(|k| format!("X-API-Key: {k}")).into_iter().collect();
    let r = request(addr, "GET", &path, &headers, "");
    (r.status, r.body)
}

/// The dashboard's data API, next to the printed dashboard URL.
fn dashboard_data(dashboard: &str) -> String {
    format!("{}api/data", dashboard)
}

/// The admin API of the printed admin page (`.../admin/keys` -> `.../admin/api/keys`).
fn admin_keys_api(admin_page: &str) -> String {
    admin_page.replace("/admin/keys", "/admin/api/keys")
}

#[test]
fn the_demo_prints_its_pages_and_a_key_that_opens_them() {
    let demo = start(&[]);
    let mcp = demo.printed("MCP");
    let dashboard = demo.printed("dashboard");
    let admin = demo.printed("admin page");
    let key = demo.printed("admin key");
    assert!(mcp.ends_with("/mcp"), "{mcp}");
    assert!(dashboard.ends_with("/dashboard/"), "{dashboard}");
    assert!(admin.ends_with("/admin/keys"), "{admin}");
    assert!(key.starts_with("homekey_admin_"), "{key}");

    // The pages themselves.
    assert_eq!(get(&dashboard, None).0, 200);
    assert_eq!(get(&admin, None).0, 200);
    // Development level on loopback: the dashboard needs no key, and says so.
    let (status, body) = get(&dashboard.replace("/dashboard/", "/dashboard/access"), None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body).unwrap()["key_needed"],
        false
    );
    let (status, body) = get(&dashboard_data(&dashboard), None);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Küche"), "the demo house: {body}");
    // The printed key lists the keys (itself among them, masked).
    let (status, body) = get(&admin_keys_api(&admin), Some(&key));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("demo admin"), "{body}");
    assert!(
        !body.contains(&key),
        "the key list shows keys masked: {body}"
    );
    // Printed once: nothing after the block mentions it again.
    let again = demo.stdout.try_iter().any(|l| l.contains("admin key"));
    assert!(!again, "the admin key is printed once");
}

#[test]
fn at_staging_and_production_the_pages_still_refuse_a_missing_or_wrong_key() {
    for level in ["staging", "production"] {
        let demo = start(&[("SECURITY_LEVEL", level)]);
        let dashboard = demo.printed("dashboard");
        let admin = demo.printed("admin page");
        let key = demo.printed("admin key");
        let wrong = "homekey_admin_9_00000000000000000000000000000000";
        let (_, access) = get(&dashboard.replace("/dashboard/", "/dashboard/access"), None);
        assert!(access.contains("\"key_needed\":true"), "{level}: {access}");
        for url in [dashboard_data(&dashboard), admin_keys_api(&admin)] {
            assert_eq!(get(&url, None).0, 401, "{level} {url} without a key");
            assert_eq!(
                get(&url, Some(wrong)).0,
                401,
                "{level} {url} with a wrong key"
            );
            let (status, body) = get(&url, Some(&key));
            assert_eq!(status, 200, "{level} {url} with the printed key: {body}");
        }
    }
}
