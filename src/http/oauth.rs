//! The OAuth 2.1 routes (issue 15): home-mcp as the authorization server of its own MCP
//! endpoint. Every decision is [`crate::auth::oauth`]'s; this module reads requests, signs the
//! owner in with the gate and writes answers. Served only with [`HttpConfig::oauth`]
//! (404 otherwise) and never gated (a client without a key must reach them).
//!
//! | route | does |
//! |---|---|
//! | `GET /.well-known/oauth-protected-resource[/mcp]` | RFC 9728 metadata of the server root / of `/mcp` |
//! | `GET /.well-known/oauth-authorization-server` | RFC 8414 metadata |
//! | `POST /register` | RFC 7591 registration (JSON, at most [`MAX_FORM_BYTES`]): **201** |
//! | `GET /authorize` | the consent page (`assets/oauth/consent.html`), or an error page / redirect |
//! | `POST /authorize` | the consent form: admin key, role, expiry, rooms, categories; **303** to the client with `code`, `state`, `iss` (or `error`) |
//! | `POST /token` | `authorization_code` and `refresh_token` grants (form, at most [`MAX_FORM_BYTES`]) |
//! | `OPTIONS` on the metadata, `/register`, `/token` | CORS preflight: **204** |
//! | `GET /oauth/assets/consent.css` | the page's style |
//!
//! The owner signs in on the consent page with an admin key: it passes
//! [`Gate::authenticate`](crate::auth::gate::Gate::authenticate) (so failed attempts count
//! toward the per-address lock-out) and needs the `admin` permission, from
//! `[auth] admin_networks` like `/admin`. The page is never framed, runs no script and may
//! only submit to this server and the client's redirect URI (Content-Security-Policy).
//!
//! The metadata documents, `/register` and `/token` answer browser-based clients of any origin
//! (`Access-Control-Allow-Origin: *`, `OPTIONS` preflight; the router's Origin check does not
//! apply to them, [`open_to_browsers`]): they take no cookies or ambient credentials, and a
//! code is worth nothing without its PKCE verifier. `/authorize` keeps the Origin check.
//!
//! What a stranger can make happen without a key (registrations, refused token requests,
//! denials) is logged at debug only, so a flood cannot fill the SD card; grants, sign-ins and
//! refreshes are logged at info.
//!
//! A `401` on `/mcp`, `/sse` and `/message` carries `WWW-Authenticate: Bearer
//! resource_metadata="<issuer>/.well-known/oauth-protected-resource[/mcp]"` ([`challenge`]).
//!
//! [`HttpConfig::oauth`]: super::HttpConfig::oauth

use super::html_escape;
use std::time::Duration;

use serde_json::Value;

use super::assets::{self, Asset};
use super::{header, Answer, Ctx};
use crate::auth::gate::{Action, Credentials};
use crate::auth::oauth::{
    with_query, AuthorizationRequest, AuthorizeError, ErrorCode, Grant, OAuth, OAuthError, Params,
};

/// Largest body of `/register`, `/token` and `POST /authorize`.
pub const MAX_FORM_BYTES: usize = 16 * 1024;

const PRM: &str = "/.well-known/oauth-protected-resource";
const PRM_MCP: &str = "/.well-known/oauth-protected-resource/mcp";
const ASM: &str = "/.well-known/oauth-authorization-server";

/// The consent page's style sheet.
pub const ASSETS: &[Asset] = &[Asset {
    path: "/oauth/assets/consent.css",
    content_type: "text/css; charset=utf-8",
    body: include_str!("../../assets/oauth/consent.css"),
}];

const CONSENT: &str = include_str!("../../assets/oauth/consent.html");

/// Whether `path` is one of this module's routes.
pub(crate) fn is_oauth_path(path: &str) -> bool {
    matches!(
        path,
        PRM | PRM_MCP | ASM | "/register" | "/authorize" | "/token"
    ) || assets::find(ASSETS, path).is_some()
}

/// Whether `path` is an OAuth endpoint that browser-based clients of any origin may call (see
/// the module docs); false without OAuth.
pub(crate) fn open_to_browsers(ctx: &Ctx, path: &str) -> bool {
    ctx.config.oauth.is_some() && matches!(path, PRM | PRM_MCP | ASM | "/register" | "/token")
}

/// The issuer for `request` (see [`OAuth::issuer`]).
fn issuer(ctx: &Ctx, oauth: &OAuth, request: &tiny_http::Request) -> String {
    let fallback = ctx.config.listen.to_string();
    let host = header(request, "Host")
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .unwrap_or(&fallback);
    oauth.issuer(host)
}

/// The `WWW-Authenticate` value of a 401 on `path` (an MCP route); `None` without OAuth.
pub(crate) fn challenge(ctx: &Ctx, request: &tiny_http::Request, path: &str) -> Option<String> {
    let oauth = ctx.config.oauth.as_ref()?;
    let metadata = if path == "/mcp" { PRM_MCP } else { PRM };
    Some(format!(
        "Bearer resource_metadata=\"{}{metadata}\"",
        issuer(ctx, oauth, request)
    ))
}

/// Routes a request to one of [`is_oauth_path`]'s paths.
pub(crate) fn handle(ctx: &Ctx, request: &mut tiny_http::Request, path: &str) -> Answer {
    let Some(oauth) = ctx.config.oauth.clone() else {
        return super::rest_error(404, "NOT_FOUND", &format!("no route for {path}"));
    };
    let method = request.method().clone();
    if let Some(asset) = assets::find(ASSETS, path) {
        return assets::serve(asset, &method, header(request, "If-None-Match"));
    }
    use tiny_http::Method::{Get, Head, Options, Post};
    let issuer = issuer(ctx, &oauth, request);
    if open_to_browsers(ctx, path) {
        let answer = match (path, &method) {
            (_, Options) => Answer::empty(204)
                .with_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
                .with_header(
                    "Access-Control-Allow-Headers",
                    "Content-Type, Authorization, MCP-Protocol-Version",
                )
                .with_header("Access-Control-Max-Age", "600"),
            (PRM, Get | Head) => metadata(&oauth.resource_metadata(&issuer, &issuer)),
            (PRM_MCP, Get | Head) => {
                metadata(&oauth.resource_metadata(&issuer, &format!("{issuer}/mcp")))
            }
            (ASM, Get | Head) => metadata(&oauth.server_metadata(&issuer)),
            ("/register", Post) => register(&oauth, request),
            ("/token", Post) => token(&oauth, request, &issuer),
            ("/register" | "/token", _) => super::method_not_allowed("POST, OPTIONS"),
            _ => super::method_not_allowed("GET, HEAD, OPTIONS"),
        };
        return answer.with_header("Access-Control-Allow-Origin", "*");
    }
    match (path, &method) {
        ("/authorize", Get) => {
            let query = request.url().split_once('?').map_or("", |(_, q)| q);
            authorize_page(ctx, &oauth, query, &issuer)
        }
        ("/authorize", Post) => consent(ctx, &oauth, request, &issuer),
        _ => super::method_not_allowed("GET, POST"),
    }
}

fn metadata(v: &Value) -> Answer {
    Answer::json(200, v).with_header("Cache-Control", "max-age=300")
}

/// An OAuth error as JSON with its status; `no-store` like every token answer.
fn oauth_error(e: &OAuthError) -> Answer {
    Answer::json(e.code.status(), &e.body())
        .with_header("Cache-Control", "no-store")
        .with_header("Pragma", "no-cache")
}

/// The body as text ([`super::body::text`]), at most [`MAX_FORM_BYTES`].
fn read_text(request: &mut tiny_http::Request) -> Result<String, OAuthError> {
    super::body::text(request, MAX_FORM_BYTES)
        .map_err(|e| OAuthError::new(ErrorCode::InvalidRequest, e.to_string()))
}

fn register(oauth: &OAuth, request: &mut tiny_http::Request) -> Answer {
    let result = match super::body::json(request, MAX_FORM_BYTES) {
        Ok(v) => oauth.register(&v),
        Err(e @ super::body::BodyError::NotJson(_)) => Err(OAuthError::new(
            ErrorCode::InvalidClientMetadata,
            e.to_string(),
        )),
        Err(e) => Err(OAuthError::new(ErrorCode::InvalidRequest, e.to_string())),
    };
    match result {
        Ok(body) => Answer::json(201, &body).with_header("Cache-Control", "no-store"),
        Err(e) => oauth_error(&e),
    }
}

fn token(oauth: &OAuth, request: &mut tiny_http::Request, issuer: &str) -> Answer {
    let result = read_text(request)
        .and_then(|t| Params::parse(&t))
        .and_then(|p| {
            if let Some(r) = p.one("resource", crate::auth::oauth::MAX_PARAM_LEN)? {
                oauth.check_resource(issuer, r)?;
            }
            oauth.token(&p)
        });
    match result {
        Ok(body) => Answer::json(200, &body)
            .with_header("Cache-Control", "no-store")
            .with_header("Pragma", "no-cache"),
        Err(e) => {
            log::debug!("OAuth token request refused: {e}");
            oauth_error(&e)
        }
    }
}

/// `GET /authorize`: the consent page, or an error.
fn authorize_page(ctx: &Ctx, oauth: &OAuth, query: &str, issuer: &str) -> Answer {
    let params = match Params::parse(query) {
        Ok(p) => p,
        Err(e) => return error_page(400, &e),
    };
    match checked_request(oauth, &params, issuer) {
        Ok(req) => consent_page(ctx, &req, 200, ""),
        Err(e) => authorize_error(e, issuer),
    }
}

/// [`OAuth::authorization_request`] and the `resource` check.
fn checked_request(
    oauth: &OAuth,
    params: &Params,
    issuer: &str,
) -> Result<AuthorizationRequest, AuthorizeError> {
    let req = oauth.authorization_request(params)?;
    if let Some(r) = &req.resource {
        if let Err(error) = oauth.check_resource(issuer, r) {
            return Err(AuthorizeError::Redirect {
                redirect_uri: req.redirect_uri.clone(),
                state: req.state.clone(),
                error,
            });
        }
    }
    Ok(req)
}

/// The answer to a refused authorization request: a page, or a redirect with `error`.
fn authorize_error(e: AuthorizeError, issuer: &str) -> Answer {
    match e {
        AuthorizeError::Page(e) => error_page(400, &e),
        AuthorizeError::Redirect {
            redirect_uri,
            state,
            error,
        } => {
            let mut params = vec![
                ("error", error.code.as_str()),
                ("error_description", error.description.as_str()),
            ];
            if let Some(s) = &state {
                params.push(("state", s));
            }
            params.push(("iss", issuer));
            redirect(&with_query(&redirect_uri, &params))
        }
    }
}

fn redirect(location: &str) -> Answer {
    Answer::empty(303)
        .with_header("Location", location)
        .with_header("Cache-Control", "no-store")
}

/// `POST /authorize`: the owner's decision.
fn consent(ctx: &Ctx, oauth: &OAuth, request: &mut tiny_http::Request, issuer: &str) -> Answer {
    let ip = request.remote_addr().map(|a| a.ip());
    let params = match read_text(request).and_then(|t| Params::parse(&t)) {
        Ok(p) => p,
        Err(e) => return error_page(400, &e),
    };
    let req = match checked_request(oauth, &params, issuer) {
        Ok(r) => r,
        Err(e) => return authorize_error(e, issuer),
    };
    let deny = |code: ErrorCode, m: &str| {
        authorize_error(
            AuthorizeError::Redirect {
                redirect_uri: req.redirect_uri.clone(),
                state: req.state.clone(),
                error: OAuthError::new(code, m),
            },
            issuer,
        )
    };
    if params.one("decision", 16).ok().flatten() == Some("deny") {
        log::debug!("OAuth: the owner denied {:?}", req.client.name);
        return deny(ErrorCode::AccessDenied, "the owner denied the request");
    }
    let Some(gate) = &ctx.config.gate else {
        return consent_page(
            ctx,
            &req,
            403,
            "this server has no API key gate: sign-in is not possible",
        );
    };
    if !gate.admin_network_allows(ip) {
        return consent_page(
            ctx,
            &req,
            403,
            "sign-in is served to [auth] admin_networks only, like /admin",
        );
    }
    let Some(admin_key) = params.one("admin_key", 256).ok().flatten() else {
        return consent_page(ctx, &req, 401, "enter an admin key to sign in");
    };
    let creds = Credentials {
        header_key: Some(admin_key),
        query_key: None,
        ip,
    };
    let principal = match gate.authenticate(&creds) {
        Ok(p) => p,
        Err(d) => return consent_page(ctx, &req, d.code.status(), &d.message),
    };
    let admin = match &principal.key {
        Some(k) if gate.authorize(&principal, &Action::Admin).is_ok() => k.name.clone(),
        _ => return consent_page(ctx, &req, 403, "this key is not an admin key"),
    };
    let one = |name: &str| params.one(name, 64).ok().flatten().unwrap_or("");
    let grant = match Grant::from_form(
        one("role"),
        one("days"),
        params.all("room"),
        params.all("category"),
        params.one("cameras", 8).ok().flatten() == Some("yes"),
        &admin,
    )
    .and_then(|g| g.with_profile(params.one("profile", 16).ok().flatten()))
    {
        Ok(g) => g,
        Err(m) => return consent_page(ctx, &req, 400, &m),
    };
    let summary = format!(
        "{} as {} for {} days{}{}{}{}",
        req.client.name,
        grant.role,
        grant.days,
        if grant.cameras {
            ", with camera pictures"
        } else {
            ""
        },
        grant
            .profile
            .map_or_else(String::new, |p| format!(", {p} tools")),
        if grant.rooms.is_empty() {
            String::new()
        } else {
            format!(", rooms {}", grant.rooms.join(", "))
        },
        if grant.categories.is_empty() {
            String::new()
        } else {
            format!(", categories {}", grant.categories.join(", "))
        },
    );
    let code = match oauth.approve(&req, grant) {
        Ok(c) => c,
        Err(e) => return deny(e.code, &e.description),
    };
    log::info!("OAuth: {admin:?} granted {summary}");
    if let Some(audit) = &ctx.config.audit {
        audit.record(crate::audit::Entry::new(
            Some(&principal.caller()),
            "admin",
            "oauth.grant",
            &summary,
            "ok",
            Duration::ZERO,
        ));
    }
    let mut q = vec![("code", code.as_str())];
    if let Some(s) = &req.state {
        q.push(("state", s));
    }
    q.push(("iss", issuer));
    redirect(&with_query(&req.redirect_uri, &q))
}

/// The origin (`scheme://authority`) of `uri`.
fn origin_of(uri: &str) -> String {
    match uri.split_once("://") {
        Some((scheme, rest)) => {
            let authority = rest.split(['/', '?']).next().unwrap_or("");
            format!("{scheme}://{authority}")
        }
        None => String::new(),
    }
}

/// The page's headers: strict CSP (no script, forms only to this server and `redirect_uri`'s
/// origin, which Chromium checks on the redirect too), no framing, no sniffing, and a referrer
/// only to this origin (a POST then still carries its `Origin`, which the router checks).
fn page(status: u16, html: String, redirect_uri: Option<&str>) -> Answer {
    let form_action = match redirect_uri {
        Some(u) => format!("'self' {}", origin_of(u)),
        None => "'self'".into(),
    };
    Answer::with_body(status, "text/html; charset=utf-8", html.into_bytes())
        .with_header(
            "Content-Security-Policy",
            format!(
                "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; \
             form-action {form_action}; frame-ancestors 'none'"
            ),
        )
        .with_header("X-Frame-Options", "DENY")
        .with_header("X-Content-Type-Options", "nosniff")
        .with_header("Referrer-Policy", "same-origin")
        .with_header("Cache-Control", "no-store")
}

fn error_page(status: u16, e: &OAuthError) -> Answer {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>home-mcp: \
         sign-in refused</title><link rel=\"stylesheet\" href=\"/oauth/assets/consent.css\">\
         </head><body><main><h1>Sign-in refused</h1><p class=\"error\" id=\"error\">{}: {}</p>\
         </main></body></html>",
        e.code.as_str(),
        html_escape(&e.description)
    );
    page(status, html, None)
}

/// The consent page for `req`, with `error` shown (empty: none).
fn consent_page(ctx: &Ctx, req: &AuthorizationRequest, status: u16, error: &str) -> Answer {
    let mut hidden = String::new();
    let mut field = |name: &str, value: &str| {
        hidden.push_str(&format!(
            "<input type=\"hidden\" name=\"{name}\" value=\"{}\">\n",
            html_escape(value)
        ));
    };
    field("response_type", "code");
    field("client_id", &req.client_id);
    field("redirect_uri", &req.redirect_uri);
    field("code_challenge", &req.code_challenge);
    field("code_challenge_method", "S256");
    for (name, value) in [
        ("state", &req.state),
        ("resource", &req.resource),
        ("scope", &req.scope),
    ] {
        if let Some(v) = value {
            field(name, v);
        }
    }
    let (rooms, categories) = match &ctx.config.admin {
        Some(admin) => {
            let home = admin.house.home();
            (
                checkboxes("room", home.rooms.iter().map(|r| r.name.as_str())),
                checkboxes("category", home.categories.iter().map(|c| c.name.as_str())),
            )
        }
        None => (String::new(), String::new()),
    };
    let html = CONSENT
        .replace("{{client_name}}", &html_escape(&req.client.name))
        .replace("{{redirect_uri}}", &html_escape(&req.redirect_uri))
        .replace("{{error}}", &html_escape(error))
        .replace("{{hidden}}", &hidden)
        .replace("{{rooms}}", &rooms)
        .replace("{{categories}}", &categories);
    page(status, html, Some(&req.redirect_uri))
}

fn checkboxes<'a>(name: &str, values: impl Iterator<Item = &'a str>) -> String {
    let mut seen = std::collections::BTreeSet::new();
    values
        .filter(|v| seen.insert(*v))
        .enumerate()
        .map(|(i, v)| {
            let v = html_escape(v);
            format!(
                "<label><input type=\"checkbox\" name=\"{name}\" id=\"{name}-{i}\" \
                 value=\"{v}\"> {v}</label>\n"
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_origins() {
        assert_eq!(
            html_escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(origin_of("http://127.0.0.1:5/cb?x"), "http://127.0.0.1:5");
        assert!(is_oauth_path("/oauth/assets/consent.css"));
        assert!(is_oauth_path(PRM_MCP));
        assert!(!is_oauth_path("/mcp"));
    }
}
