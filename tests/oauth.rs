//! OAuth 2.1 sign-in (issue 15, `src/auth/oauth.rs`, `src/http/oauth.rs`) from outside: the
//! real `home-mcp serve` at security level staging with a key store file, a hand-made client
//! (tests/support/oauth.rs) that registers, sends the browser through the consent page and
//! trades codes and refresh tokens, and MCP calls with the tokens it gets. Expected values come
//! from the RFCs (PKCE vector of RFC 7636 Appendix B, error codes of RFC 6749/7591) and from
//! what reaches the simulated Miniserver.

use serde_json::{json, Value};

use crate::support::keys_cli::generate;
use crate::support::mcp::McpHttp;
use crate::support::net::{request, request_json};
use crate::support::oauth::{
    authorize_get, authorize_query, exchange, query_of, refresh, register, register_raw, sign_in,
    submit_consent, token, CHALLENGE, REDIRECT, VERIFIER,
};
use crate::support::server::{Miniserver, Served, TempDir};
use crate::support::{wait_until, PATIENCE};

const KITCHEN_LIGHT: &str = "1d5c3a92-0209-520e-ffff504f94d0e5a1"; // Deckenlicht (Küche)
const LIVING_LIGHT: &str = "1d5c3a2e-0202-4f52-ffff504f94d0e5a1"; // Deckenlicht (Wohnzimmer)
const INTERCOM: &str = "1d5c3ca0-022a-60b0-ffff504f94d0e5a1"; // Haustür (Außenbereich)

/// The server with an admin key ("owner") and a static operator key in a key store file.
struct Fixture {
    served: Served,
    ms: Miniserver,
    admin: String,
    operator: String,
    _dir: TempDir,
}

impl Fixture {
    fn start(oauth: &str) -> Fixture {
        let ms = Miniserver::demo();
        let dir = TempDir::new("oauth");
        let store = dir.join("keys.toml");
        let admin = generate(&store, "admin", &["--name", "owner"])["id"]
            .as_str()
            .unwrap()
            .to_string();
        let operator = generate(&store, "operator", &["--name", "static operator"])["id"]
            .as_str()
            .unwrap()
            .to_string();
        let config = format!("[auth]\nsecurity_level = \"staging\"\n[oauth]\n{oauth}\n");
        let store = store.display().to_string();
        let served = Served::start_args(&ms, &config, &[], &["--key-store", &store]);
        Fixture {
            served,
            ms,
            admin,
            operator,
            _dir: dir,
        }
    }

    fn addr(&self) -> std::net::SocketAddr {
        self.served.addr
    }

    fn issuer(&self) -> String {
        format!("http://127.0.0.1:{}", self.addr().port())
    }

    /// An admin API request with the owner's key: (status, JSON).
    fn admin_api(&self, method: &str, path: &str, body: &str) -> (u16, Value) {
        let key = format!("X-API-Key: {}", self.admin);
        let (status, _, v) = request_json(
            self.addr(),
            method,
            path,
            &[key.as_str(), "Content-Type: application/json"],
            body,
        );
        (status, v)
    }

    /// A registered client signed in as operator for the kitchen; (client_id, token answer).
    fn kitchen_operator(&self, client: &str) -> (String, Value) {
        let client_id = register(self.addr(), client);
        let redirect = sign_in(
            self.addr(),
            &client_id,
            &self.admin,
            &[("role", "operator"), ("days", "7"), ("room", "Küche")],
        );
        let (status, body) = exchange(self.addr(), &client_id, &redirect["code"], VERIFIER);
        assert_eq!(status, 200, "token: {body}");
        (client_id, body)
    }
}

/// A `tools/call` on `/mcp` with `token` as a Bearer token in a fresh session: the HTTP status
/// of `initialize` when refused, else of the call, and the JSON-RPC answer or error body.
fn call_with(addr: std::net::SocketAddr, token: &str, tool: &str, args: Value) -> (u16, Value) {
    let init = request(
        addr,
        "POST",
        "/mcp",
        &[
            "Content-Type: application/json".to_string(),
            "Accept: application/json, text/event-stream".to_string(),
            format!("Authorization: Bearer {token}"),
        ],
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "oauth test", "version": "1"}}})
        .to_string(),
    );
    if init.status != 200 {
        return (init.status, init.json());
    }
    let mut mcp = McpHttp::connect_bearer(addr, token);
    mcp.try_call(tool, args)
}

#[test]
fn a_client_without_a_key_is_told_where_to_sign_in() {
    let f = Fixture::start("");
    let r = request(
        f.addr(),
        "POST",
        "/mcp",
        &[
            "Content-Type: application/json",
            "Accept: application/json, text/event-stream",
        ],
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
    );
    assert_eq!(r.status, 401, "{r:?}");
    let challenge = r.header("www-authenticate").expect("WWW-Authenticate");
    let metadata_url = format!("{}/.well-known/oauth-protected-resource/mcp", f.issuer());
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{metadata_url}\"")
    );
    // The JSON-RPC error body is the one the server always sent.
    let body = r.json();
    assert_eq!(body["error"]["code"], -32001, "{body}");
    assert_eq!(body["error"]["data"]["code"], "INVALID_API_KEY", "{body}");

    // RFC 9728: the metadata names this resource and its authorization server.
    let path = metadata_url.trim_start_matches(&f.issuer()).to_string();
    let (status, _, prm) = request_json(f.addr(), "GET", &path, &[], "");
    assert_eq!(status, 200);
    assert_eq!(prm["resource"], format!("{}/mcp", f.issuer()));
    assert_eq!(prm["authorization_servers"], json!([f.issuer()]));
    let (status, _, root) = request_json(
        f.addr(),
        "GET",
        "/.well-known/oauth-protected-resource",
        &[],
        "",
    );
    assert_eq!(status, 200);
    assert_eq!(root["authorization_servers"], json!([f.issuer()]));

    // RFC 8414: the issuer is the URL the metadata is fetched from, minus the well-known path.
    let (status, _, asm) = request_json(
        f.addr(),
        "GET",
        "/.well-known/oauth-authorization-server",
        &[],
        "",
    );
    assert_eq!(status, 200);
    assert_eq!(asm["issuer"], f.issuer());
    assert_eq!(
        asm["authorization_endpoint"],
        format!("{}/authorize", f.issuer())
    );
    assert_eq!(asm["token_endpoint"], format!("{}/token", f.issuer()));
    assert_eq!(
        asm["registration_endpoint"],
        format!("{}/register", f.issuer())
    );
    assert_eq!(asm["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(asm["authorization_response_iss_parameter_supported"], true);
    assert_eq!(asm["client_id_metadata_document_supported"], false);

    // Static keys work as before, in either header.
    let mut mcp = McpHttp::connect(f.addr(), Some(&f.operator));
    assert!(mcp.ok("list_rooms", json!({}))["total"].as_u64().unwrap() > 1);
    let (status, _) = call_with(f.addr(), &f.operator, "list_rooms", json!({}));
    assert_eq!(status, 200);
}

#[test]
fn sign_in_grants_a_scoped_key_that_refreshes_and_is_revoked_on_the_admin_page() {
    let f = Fixture::start("");
    let client_id = register(f.addr(), "Test Client");
    // The consent page names the client and where the browser goes back to.
    let page = authorize_get(f.addr(), &authorize_query(&client_id, "st-1"));
    assert_eq!(page.status, 200, "{page:?}");
    assert!(page.body.contains("Test Client"), "{}", page.body);
    assert!(page.body.contains(REDIRECT));
    assert!(page.body.contains("value=\"Küche\""), "rooms to tick");
    let csp = page.header("content-security-policy").unwrap();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(
        csp.contains("form-action 'self' http://127.0.0.1:45999"),
        "{csp}"
    );

    let redirect = sign_in(
        f.addr(),
        &client_id,
        &f.admin,
        &[("role", "operator"), ("days", "7"), ("room", "Küche")],
    );
    assert_eq!(redirect["state"], "st-1", "state echoed");
    assert_eq!(redirect["iss"], f.issuer(), "RFC 9207 iss");
    let (status, tokens) = exchange(f.addr(), &client_id, &redirect["code"], VERIFIER);
    assert_eq!(status, 200, "{tokens}");
    assert_eq!(tokens["token_type"], "Bearer");
    let expires_in = tokens["expires_in"].as_u64().unwrap();
    assert!((3000..=3600).contains(&expires_in), "{tokens}");
    let access = tokens["access_token"].as_str().unwrap().to_string();
    let refresh_token = tokens["refresh_token"].as_str().unwrap().to_string();
    assert!(
        access.starts_with("homekey_operator_"),
        "an API key: {access}"
    );

    // The token is an MCP key of the grant: the kitchen only.
    let mut mcp = McpHttp::connect_bearer(f.addr(), &access);
    let rooms = mcp.ok("list_rooms", json!({}));
    assert_eq!(rooms["total"], 1, "{rooms}");
    assert_eq!(rooms["rooms"][0]["name"], "Küche");
    let (status, refused) = mcp.try_call(
        "control_device",
        json!({"device": LIVING_LIGHT, "action": "on"}),
    );
    // Refused by the gate (403) or at the point of actuation (a tool error), never sent.
    assert!(
        status == 403
            || (refused["result"]["isError"] == true
                && refused.to_string().contains("INSUFFICIENT_PERMISSIONS")),
        "outside the room: {status} {refused}"
    );
    assert!(f.ms.commands_to(LIVING_LIGHT).is_empty());
    mcp.ok(
        "control_device",
        json!({"device": KITCHEN_LIGHT, "action": "on"}),
    );
    assert!(
        !f.ms.commands_to(KITCHEN_LIGHT).is_empty(),
        "the kitchen light got its command"
    );

    // Listed on the admin API under the client's name; the audit log names it.
    let (status, keys) = f.admin_api("GET", "/admin/api/keys", "");
    assert_eq!(status, 200);
    let listed: Vec<&Value> = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["name"] == "Test Client (OAuth)")
        .collect();
    assert_eq!(listed.len(), 1, "{keys}");
    assert_eq!(listed[0]["role"], "operator");
    assert_eq!(listed[0]["rooms"], json!(["Küche"]));
    assert!(listed[0]["expires_at"].is_string());
    wait_until("the control call in the audit log", PATIENCE, || {
        let (_, audit) = f.admin_api(
            "GET",
            "/admin/api/audit?key_name=Test%20Client%20(OAuth)&operation=control_device",
            "",
        );
        match audit["entries"].as_array() {
            Some(e) if !e.is_empty() => Ok(()),
            _ => Err(audit),
        }
    });

    // Refresh: a new key of the same grant; the old token and the old refresh token are spent.
    let (status, renewed) = refresh(f.addr(), &client_id, &refresh_token);
    assert_eq!(status, 200, "{renewed}");
    let access2 = renewed["access_token"].as_str().unwrap().to_string();
    assert_ne!(access2, access);
    let (status, _) = call_with(f.addr(), &access, "list_rooms", json!({}));
    assert_eq!(status, 401, "the refreshed-away token");
    let (status, again) = call_with(f.addr(), &access2, "list_rooms", json!({}));
    assert_eq!(status, 200, "{again}");
    assert_eq!(
        again["result"]["structuredContent"]["data"]["total"], 1,
        "same grant: {again}"
    );
    let (status, replay) = refresh(f.addr(), &client_id, &refresh_token);
    assert_eq!(
        (status, replay["error"].as_str()),
        (400, Some("invalid_grant"))
    );

    // Revoked on the admin API: access and refresh end.
    let refresh2 = renewed["refresh_token"].as_str().unwrap();
    let (status, deleted) = f.admin_api("DELETE", &format!("/admin/api/keys/{access2}"), "");
    assert_eq!(status, 200, "{deleted}");
    let (status, _) = call_with(f.addr(), &access2, "list_rooms", json!({}));
    assert_eq!(status, 401);
    let (status, refused) = refresh(f.addr(), &client_id, refresh2);
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_grant"))
    );
}

/// The consent page's cameras box (issue 30): a grant signed in with it ticked gives a key that
/// sees camera pictures (judged by a `get_camera_image` answer with an image block and by the
/// admin API's record), one without it a key that is refused before any camera is asked.
#[test]
fn the_consent_pages_cameras_box_decides_whether_the_key_sees_pictures() {
    let f = Fixture::start("");
    let client_id = register(f.addr(), "Hall Screen");
    let page = authorize_get(f.addr(), &authorize_query(&client_id, "st-c"));
    assert_eq!(page.status, 200, "{page:?}");
    assert!(
        page.body.contains("name=\"cameras\" value=\"yes\""),
        "the box to tick: {}",
        page.body
    );
    let token = |cameras: bool| {
        let mut form = vec![("role", "monitor"), ("days", "7")];
        if cameras {
            form.push(("cameras", "yes"));
        }
        let redirect = sign_in(f.addr(), &client_id, &f.admin, &form);
        let (status, tokens) = exchange(f.addr(), &client_id, &redirect["code"], VERIFIER);
        assert_eq!(status, 200, "{tokens}");
        tokens["access_token"].as_str().unwrap().to_string()
    };
    let with = token(true);
    let without = token(false);
    let (status, answer) = call_with(
        f.addr(),
        &with,
        "get_camera_image",
        json!({"device": "Haustür"}),
    );
    assert_eq!(status, 200, "{answer}");
    let blocks = answer["result"]["content"].as_array().expect("content");
    assert!(
        blocks.iter().any(|b| b["type"] == "image"),
        "a picture: {}",
        answer.to_string().chars().take(300).collect::<String>()
    );
    let before = f.ms.sim.camera_requests(INTERCOM);
    let (status, refused) = call_with(
        f.addr(),
        &without,
        "get_camera_image",
        json!({"device": "Haustür"}),
    );
    assert_eq!(status, 403, "{refused}");
    assert!(
        refused.to_string().contains("INSUFFICIENT_PERMISSIONS"),
        "{refused}"
    );
    assert_eq!(
        f.ms.sim.camera_requests(INTERCOM),
        before,
        "no camera asked"
    );
    // The admin API shows which key got the setting.
    let (_, keys) = f.admin_api("GET", "/admin/api/keys", "");
    let mut cameras: Vec<bool> = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["name"] == "Hall Screen (OAuth)")
        .map(|k| k["cameras"].as_bool().unwrap())
        .collect();
    cameras.sort();
    assert_eq!(cameras, [false, true], "{keys}");
}

#[test]
fn a_deactivated_grant_cannot_refresh() {
    let f = Fixture::start("");
    let (client_id, tokens) = f.kitchen_operator("Deactivated");
    let access = tokens["access_token"].as_str().unwrap();
    let (status, _) = f.admin_api(
        "PUT",
        &format!("/admin/api/keys/{access}"),
        r#"{"active": false}"#,
    );
    assert_eq!(status, 200);
    let (status, _) = call_with(f.addr(), access, "list_rooms", json!({}));
    assert_eq!(status, 401);
    let (status, body) = refresh(
        f.addr(),
        &client_id,
        tokens["refresh_token"].as_str().unwrap(),
    );
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant")),
        "{body}"
    );
}

#[test]
fn pkce_is_s256_only_and_the_verifier_must_match() {
    let f = Fixture::start("");
    let client_id = register(f.addr(), "PKCE");
    // Without a challenge, with `plain`, or without a method: refused back to the client with
    // state and iss (the redirect URI is registered, so errors go there).
    let cases: [(&str, Option<&str>, Option<&str>); 3] = [
        ("no challenge", None, Some("S256")),
        ("plain", Some(VERIFIER), Some("plain")),
        ("no method", Some(CHALLENGE), None),
    ];
    for (what, challenge, method) in cases {
        let mut q = vec![
            ("response_type", "code".to_string()),
            ("client_id", client_id.clone()),
            ("redirect_uri", REDIRECT.to_string()),
            ("state", "s".to_string()),
        ];
        if let Some(c) = challenge {
            q.push(("code_challenge", c.to_string()));
        }
        if let Some(m) = method {
            q.push(("code_challenge_method", m.to_string()));
        }
        let r = authorize_get(f.addr(), &q);
        assert_eq!(r.status, 303, "{what}: {r:?}");
        let back = query_of(r.header("location").unwrap());
        assert_eq!(back["error"], "invalid_request", "{what}: {back:?}");
        assert_eq!(back["state"], "s");
        assert_eq!(back["iss"], f.issuer());
        assert!(!back.contains_key("code"));
    }

    // A code with a wrong or missing verifier gets no token; the right one still works.
    let redirect = sign_in(
        f.addr(),
        &client_id,
        &f.admin,
        &[("role", "monitor"), ("days", "1")],
    );
    let code = &redirect["code"];
    let wrong = "x".repeat(43);
    let (status, body) = exchange(f.addr(), &client_id, code, &wrong);
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant")),
        "{body}"
    );
    let (status, body) = token(
        f.addr(),
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", &client_id),
            ("redirect_uri", REDIRECT),
        ],
    );
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_request")),
        "{body}"
    );
    let (status, body) = exchange(f.addr(), &client_id, code, VERIFIER);
    assert_eq!(status, 200, "{body}");
    assert!(body["access_token"]
        .as_str()
        .unwrap()
        .starts_with("homekey_monitor_"));
}

#[test]
fn redirect_uris_are_loopback_http_or_https_and_must_be_registered() {
    let f = Fixture::start("");
    for bad in [
        "http://evil.example/cb",
        "http://192.168.1.20:8080/cb",
        "ftp://x/cb",
    ] {
        let r = register_raw(
            f.addr(),
            &json!({"client_name": "x", "redirect_uris": [bad]}),
        );
        assert_eq!(r.status, 400, "{bad}: {r:?}");
        assert_eq!(r.json()["error"], "invalid_redirect_uri", "{bad}");
    }
    let r = register_raw(f.addr(), &json!({"client_name": "x"}));
    assert_eq!(r.status, 400);
    let ok = register_raw(
        f.addr(),
        &json!({"client_name": "x", "redirect_uris": ["https://app.example/cb", "http://localhost:7/cb"]}),
    );
    assert_eq!(ok.status, 201, "{ok:?}");

    // An unregistered redirect URI is never redirected to: an error page.
    let client_id = register(f.addr(), "Redirects");
    let mut q = authorize_query(&client_id, "s");
    q[2].1 = "http://evil.example/cb".into();
    let r = authorize_get(f.addr(), &q);
    assert_eq!(r.status, 400, "{r:?}");
    assert!(r.header("location").is_none());
    assert!(r.body.contains("invalid_request"), "{}", r.body);
    // A forged client id: the same.
    let forged = client_id.replacen("hmc_", "hmc_A", 1);
    let r = authorize_get(f.addr(), &authorize_query(&forged, "s"));
    assert_eq!(r.status, 400);
    assert!(r.body.contains("invalid_client"), "{}", r.body);
}

#[test]
fn codes_are_one_use_and_a_replay_revokes_what_the_code_issued() {
    let f = Fixture::start("");
    let client_id = register(f.addr(), "Replay");
    let redirect = sign_in(
        f.addr(),
        &client_id,
        &f.admin,
        &[("role", "operator"), ("days", "1")],
    );
    let (status, first) = exchange(f.addr(), &client_id, &redirect["code"], VERIFIER);
    assert_eq!(status, 200);
    let access = first["access_token"].as_str().unwrap();
    let (status, _) = call_with(f.addr(), access, "list_rooms", json!({}));
    assert_eq!(status, 200);
    let (status, again) = exchange(f.addr(), &client_id, &redirect["code"], VERIFIER);
    assert_eq!(
        (status, again["error"].as_str()),
        (400, Some("invalid_grant")),
        "{again}"
    );
    let (status, _) = call_with(f.addr(), access, "list_rooms", json!({}));
    assert_eq!(status, 401, "the key of a replayed code is revoked");

    // A forged code, another client's code, an unknown grant type, a forged client.
    let (status, body) = exchange(f.addr(), &client_id, "forged-code", VERIFIER);
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    let other = register(f.addr(), "Other");
    let redirect = sign_in(
        f.addr(),
        &client_id,
        &f.admin,
        &[("role", "operator"), ("days", "1")],
    );
    let (status, body) = exchange(f.addr(), &other, &redirect["code"], VERIFIER);
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant")),
        "{body}"
    );
    let (status, body) = token(
        f.addr(),
        &[("grant_type", "password"), ("client_id", &client_id)],
    );
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("unsupported_grant_type"))
    );
    let forged = client_id.replacen("hmc_", "hmc_A", 1);
    let (status, body) = exchange(f.addr(), &forged, &redirect["code"], VERIFIER);
    assert_eq!(
        (status, body["error"].as_str()),
        (401, Some("invalid_client"))
    );
    let (status, body) = token(
        f.addr(),
        &[
            ("grant_type", "authorization_code"),
            ("code", "a"),
            ("code", "b"),
        ],
    );
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_request")),
        "{body}"
    );
}

#[test]
fn codes_expire() {
    let f = Fixture::start("code_lifetime_secs = 1");
    let client_id = register(f.addr(), "Slow");
    let redirect = sign_in(
        f.addr(),
        &client_id,
        &f.admin,
        &[("role", "monitor"), ("days", "1")],
    );
    let code = &redirect["code"];
    // A wrong verifier does not use the code up: ask with one until the code has expired.
    let wrong = "w".repeat(43);
    wait_until("the code expires", PATIENCE, || {
        let (status, body) = exchange(f.addr(), &client_id, code, &wrong);
        let d = body["error_description"].as_str().unwrap_or("").to_string();
        if status == 400 && d.contains("expired") {
            Ok(())
        } else {
            Err((status, body))
        }
    });
    let (status, body) = exchange(f.addr(), &client_id, code, VERIFIER);
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant")),
        "{body}"
    );
}

#[test]
fn the_consent_page_needs_an_admin_key_and_the_owner_may_deny() {
    let f = Fixture::start("");
    let client_id = register(f.addr(), "Consent");
    let page = authorize_get(f.addr(), &authorize_query(&client_id, "s"));
    assert_eq!(page.status, 200);
    let fields = |key| {
        [
            ("admin_key", key),
            ("role", "operator"),
            ("days", "7"),
            ("decision", "approve"),
        ]
    };
    let wrong = submit_consent(f.addr(), &page.body, &fields("homekey_admin_9_nope"));
    assert_eq!(wrong.status, 401, "{wrong:?}");
    assert!(wrong.header("location").is_none());
    assert!(wrong.body.contains("unknown API key"), "{}", wrong.body);
    let not_admin = submit_consent(f.addr(), &page.body, &fields(f.operator.as_str()));
    assert_eq!(not_admin.status, 403, "{not_admin:?}");
    assert!(not_admin.header("location").is_none());
    // A role the page does not offer.
    let custom = submit_consent(
        f.addr(),
        &page.body,
        &[
            ("admin_key", f.admin.as_str()),
            ("role", "custom"),
            ("days", "7"),
        ],
    );
    assert_eq!(custom.status, 400, "{custom:?}");
    // Deny: back to the client with access_denied.
    let denied = submit_consent(f.addr(), &page.body, &[("decision", "deny")]);
    assert_eq!(denied.status, 303);
    let back = query_of(denied.header("location").unwrap());
    assert_eq!(back["error"], "access_denied");
    assert_eq!(back["state"], "s");
}

#[test]
fn browser_clients_of_any_origin_may_register_and_trade_codes_but_not_post_the_consent_form() {
    let f = Fixture::start("");
    let origin = "Origin: http://localhost:6274";
    let pre = request(
        f.addr(),
        "OPTIONS",
        "/token",
        &[
            origin,
            "Access-Control-Request-Method: POST",
            "Access-Control-Request-Headers: content-type",
        ],
        "",
    );
    assert_eq!(pre.status, 204, "{pre:?}");
    assert_eq!(pre.header("access-control-allow-origin"), Some("*"));
    assert!(pre
        .header("access-control-allow-headers")
        .unwrap()
        .contains("Content-Type"));
    let reg = request(
        f.addr(),
        "POST",
        "/register",
        &[origin, "Content-Type: application/json"],
        &json!({"client_name": "Inspector", "redirect_uris": [REDIRECT]}).to_string(),
    );
    assert_eq!(reg.status, 201, "{reg:?}");
    assert_eq!(reg.header("access-control-allow-origin"), Some("*"));
    let meta = request(
        f.addr(),
        "GET",
        "/.well-known/oauth-authorization-server",
        &["Origin: https://elsewhere.example"],
        "",
    );
    assert_eq!(meta.status, 200);
    assert_eq!(meta.header("access-control-allow-origin"), Some("*"));
    // The consent form only from the server's own pages.
    let client_id = reg.json()["client_id"].as_str().unwrap().to_string();
    let page = authorize_get(f.addr(), &authorize_query(&client_id, "s"));
    let hidden: Vec<(String, String)> = crate::support::oauth::hidden_fields(&page.body);
    let mut pairs: Vec<(&str, &str)> = hidden
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    pairs.extend([
        ("admin_key", f.admin.as_str()),
        ("role", "operator"),
        ("days", "1"),
    ]);
    let forged = request(
        f.addr(),
        "POST",
        "/authorize",
        &[
            "Content-Type: application/x-www-form-urlencoded",
            "Origin: https://evil.example",
        ],
        &crate::support::oauth::form(&pairs),
    );
    assert_eq!(forged.status, 403, "{forged:?}");
    assert!(forged.header("location").is_none());
}

#[test]
fn registration_inputs_are_bounded() {
    let f = Fixture::start("");
    let uris: Vec<String> = (0..5).map(|i| format!("http://127.0.0.1:{i}/cb")).collect();
    let cases = [
        (json!({"redirect_uris": uris}), "invalid_redirect_uri"),
        (
            json!({"redirect_uris": [format!("https://a.example/{}", "x".repeat(600))]}),
            "invalid_redirect_uri",
        ),
        (
            json!({"client_name": "n".repeat(101), "redirect_uris": [REDIRECT]}),
            "invalid_client_metadata",
        ),
        (
            json!({"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"]}),
            "invalid_client_metadata",
        ),
        (json!([REDIRECT]), "invalid_client_metadata"),
    ];
    for (metadata, error) in cases {
        let r = register_raw(f.addr(), &metadata);
        assert_eq!(
            (r.status, r.json()["error"].clone()),
            (400, json!(error)),
            "{metadata}"
        );
    }
    let big = format!("{{\"client_name\": \"{}\"}}", "x".repeat(20 * 1024));
    let r = request(
        f.addr(),
        "POST",
        "/register",
        &["Content-Type: application/json"],
        &big,
    );
    assert_eq!(r.status, 400, "{r:?}");
    // The client's name is the page's text, never its markup.
    let client_id = register(f.addr(), "<script>alert(1)</script>");
    let page = authorize_get(f.addr(), &authorize_query(&client_id, "s"));
    assert!(!page.body.contains("<script>alert"), "{}", page.body);
    assert!(page.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
}

#[test]
fn a_client_registered_without_refresh_gets_no_refresh_token() {
    let f = Fixture::start("");
    let r = register_raw(
        f.addr(),
        &json!({"client_name": "No refresh", "redirect_uris": [REDIRECT],
                "grant_types": ["authorization_code"]}),
    );
    assert_eq!(r.status, 201);
    assert_eq!(r.json()["grant_types"], json!(["authorization_code"]));
    let client_id = r.json()["client_id"].as_str().unwrap().to_string();
    let redirect = sign_in(
        f.addr(),
        &client_id,
        &f.admin,
        &[("role", "monitor"), ("days", "1")],
    );
    let (status, tokens) = exchange(f.addr(), &client_id, &redirect["code"], VERIFIER);
    assert_eq!(status, 200, "{tokens}");
    assert!(tokens.get("refresh_token").is_none(), "{tokens}");
    let (status, body) = refresh(f.addr(), &client_id, "hmr_anything.x");
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("unauthorized_client")),
        "{body}"
    );
}

#[test]
fn what_is_bound_to_a_grant_outlives_a_refresh() {
    let f = Fixture::start("");
    let client_id = register(f.addr(), "Task Client");
    let redirect = sign_in(
        f.addr(),
        &client_id,
        &f.admin,
        &[("role", "operator"), ("days", "7")],
    );
    let (status, tokens) = exchange(f.addr(), &client_id, &redirect["code"], VERIFIER);
    assert_eq!(status, 200, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap().to_string();
    // A 2026-07-28 task of the grant, created with the first token.
    let task = grant_rpc(
        &f,
        &access,
        "tools/call",
        json!({"name": "execute_workflow_demo", "arguments": {"dry_run": true}}),
    );
    let task = task["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {task}"))
        .to_string();
    let (status, renewed) = refresh(
        f.addr(),
        &client_id,
        tokens["refresh_token"].as_str().unwrap(),
    );
    assert_eq!(status, 200, "{renewed}");
    let access2 = renewed["access_token"].as_str().unwrap().to_string();
    assert_ne!(access2, access);
    // The task is the grant's (its shares and its password pause count per grant too): the
    // refreshed token reads it; a static key does not.
    let got = wait_until(
        "the grant's task, read with the refreshed token",
        PATIENCE,
        || {
            let got = grant_rpc(&f, &access2, "tasks/get", json!({"taskId": task}));
            match got["result"]["status"].as_str() {
                Some("completed") => Ok(got),
                _ => Err(got),
            }
        },
    );
    assert_ne!(got["result"]["result"]["isError"], true, "{got}");
    let other = grant_rpc(&f, &f.operator, "tasks/get", json!({"taskId": task}));
    assert_eq!(other["error"]["code"], -32602, "{other}");
}

/// One 2026-07-28 request with the token `key`, declaring the tasks extension.
fn grant_rpc(f: &Fixture, key: &str, method: &str, params: Value) -> Value {
    let mut params = crate::support::mcp::with_modern_meta(params);
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let mut h = crate::support::mcp::McpModern::headers(method, &params);
    h[1] = "Accept: application/json".into();
    if let Some(id) = params["taskId"].as_str() {
        h.push(format!("Mcp-Name: {id}"));
    }
    h.push(format!("Authorization: Bearer {key}"));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    request(f.addr(), "POST", "/mcp", &h, &body.to_string()).json()
}
