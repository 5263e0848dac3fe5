//! The `/dashboard` routes: the embedded page (no key; strict security headers),
//! `/dashboard/access` (whether the API needs a key here; no key), the JSON API
//! under `/dashboard/api/` and the WebSocket `/dashboard/ws` (both gated, `read`
//! permission; the WebSocket also refuses a foreign `Origin` with 403, as `/mcp` does). Only
//! GET (and HEAD); `/dashboard` redirects (308) to `/dashboard/`. See [`crate::dashboard`]
//! for the payloads.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{deny, rest_error, Answer, Ctx, Handled};
use crate::auth::gate::{Action, Principal};
use crate::dashboard::{api, asset, ws, CSP};

/// The WebSocket path.
pub(crate) const WS_PATH: &str = "/dashboard/ws";

/// Whether this server needs a key for the dashboard's API (no key needed to ask): the page
/// asks for one only where it is needed, so the demo's dashboard opens at once.
pub(crate) const ACCESS_PATH: &str = "/dashboard/access";

/// Whether `path` belongs to the dashboard.
pub(crate) fn is_dashboard(path: &str) -> bool {
    path == "/dashboard" || path.starts_with("/dashboard/")
}

/// Whether `path` needs a key: the API and the WebSocket (the page's assets do not).
pub(crate) fn is_gated(path: &str) -> bool {
    path == WS_PATH || path == "/dashboard/api" || path.starts_with("/dashboard/api/")
}

fn secure(answer: Answer) -> Answer {
    answer
        .with_header("Content-Security-Policy", CSP)
        .with_header("X-Content-Type-Options", "nosniff")
        .with_header("Referrer-Policy", "no-referrer")
        .with_header("Cache-Control", "no-store")
}

/// `GET /dashboard/api/doorbells/{uuid}/picture`: a picture of the doorbell card as
/// `image/jpeg`: the last ring's (the Miniserver's picture of it; 404 when there is none), or
/// with `?of=now` the camera's picture now. The page asks for either only when the person at
/// the dashboard presses one of the tile's buttons, never by itself. For keys that may see
/// pictures (what the gate asks of `get_camera_image`: the key's `cameras` grant; otherwise
/// 403 and nothing is fetched). Written to the audit log like a `get_camera_image` call
/// (transport `dashboard`; key, camera, bytes). `Cache-Control: no-store` (added by `secure`).
fn doorbell_picture(
    ctx: &Arc<Ctx>,
    dash: &crate::dashboard::Dashboard,
    uuid: &str,
    now: bool,
    auth: Option<&Principal>,
) -> Answer {
    const TOOL: &str = "get_camera_image";
    let arguments: serde_json::Map<String, serde_json::Value> =
        [("device".to_string(), serde_json::Value::from(uuid))]
            .into_iter()
            .collect();
    if let Err(d) = ctx.authorize_tool(auth, "dashboard", TOOL, &arguments) {
        return deny(&d, false, &crate::mcp::jsonrpc::RequestIds::Unknown);
    }
    let started = std::time::Instant::now();
    let result = dash.doorbell_picture(uuid, now);
    if let Some(audit) = &ctx.config.audit {
        let (target, outcome) = match &result {
            Ok((pic, label)) => (
                crate::audit::picture_target(label, pic.jpeg.len() as u64),
                "ok".to_string(),
            ),
            Err(e) => (uuid.to_string(), e.code().to_string()),
        };
        audit.record(crate::audit::Entry::new(
            auth.map(Principal::caller).as_ref(),
            "dashboard",
            TOOL,
            &target,
            &outcome,
            started.elapsed(),
        ));
    }
    match result {
        Ok((pic, _)) => Answer::with_body(200, "image/jpeg", pic.jpeg),
        Err(e) => {
            let status = match e {
                crate::home::ControllerError::NotFound(_) => 404,
                _ => 502,
            };
            Answer::error(status, &crate::tools::api_error(e.into()))
        }
    }
}

/// Serves a `/dashboard...` request.
pub(crate) fn handle(
    ctx: &Arc<Ctx>,
    request: &tiny_http::Request,
    path: &str,
    url: &str,
    auth: Option<&Principal>,
) -> Handled {
    let Some(dash) = ctx.config.dashboard.clone() else {
        return rest_error(404, "NOT_FOUND", &format!("no route for {path}")).into();
    };
    if !matches!(
        request.method(),
        tiny_http::Method::Get | tiny_http::Method::Head
    ) {
        return secure(super::method_not_allowed("GET")).into();
    }
    if path == ACCESS_PATH {
        // The gate's own answer (development level on loopback: no key), nothing else.
        let needed = ctx.config.gate.as_ref().is_some_and(|g| g.required());
        return secure(Answer::json(
            200,
            &serde_json::json!({ "key_needed": needed }),
        ))
        .into();
    }
    if is_gated(path) {
        if let Err(d) = ctx.authorize(auth, &Action::Method("dashboard")) {
            return secure(deny(&d, false, &crate::mcp::jsonrpc::RequestIds::Unknown)).into();
        }
    }
    if path == "/dashboard" {
        return secure(Answer::empty(308).with_header("Location", "/dashboard/")).into();
    }
    if path == WS_PATH {
        // Cross-site WebSocket hijacking: the router refuses a foreign Origin (a browser
        // sends the page's) before any route runs.
        if !ws::is_handshake(request) {
            return secure(rest_error(
                400,
                "INVALID_PARAMETERS",
                "a WebSocket handshake is expected (Upgrade: websocket, version 13)",
            ))
            .into();
        }
        let Some(slot) = dash.hub().acquire() else {
            return secure(rest_error(
                503,
                "SERVICE_UNAVAILABLE",
                "too many dashboard WebSocket clients; retry later",
            ))
            .with_header("Retry-After", "5")
            .into();
        };
        let hello = dash.hello();
        let port = ctx.local_port;
        let stop_ctx = ctx.clone();
        let stop = Box::new(move || stop_ctx.stopping.load(Ordering::SeqCst));
        // The key is asked again at every ping (revoked: the session ends).
        let gate = ctx.config.gate.clone();
        let principal = auth.cloned();
        let allowed = Box::new(move || match (&gate, &principal) {
            (Some(g), Some(p)) => g
                .revalidate(p)
                .and_then(|now| g.authorize(&now, &Action::Method("dashboard")))
                .is_ok(),
            _ => true,
        });
        // The WebSocket handshake answer carries no rate-limit headers (tungstenite writes it).
        return Handled::Take(Box::new(move |request, _headers| {
            ws::serve(request, slot, hello, port, stop, allowed)
        }));
    }
    if let Some(uuid) = path
        .strip_prefix("/dashboard/api/doorbells/")
        .and_then(|r| r.strip_suffix("/picture"))
    {
        let query = url.split_once('?').map_or("", |(_, q)| q);
        let now = query.split('&').any(|p| p == "of=now");
        return secure(doorbell_picture(ctx, &dash, uuid, now, auth)).into();
    }
    if let Some(rest) = path.strip_prefix("/dashboard/api/") {
        let query = url.split_once('?').map_or("", |(_, q)| q);
        let mut a = api::handle(&dash, rest, query);
        if rest.trim_end_matches('/') == "metrics" && a.status == 200 {
            a.body["mcp_sessions"] = ctx.mcp.sessions().len().into();
            a.body["sse_streams"] = ctx.pool.active().into();
        }
        if rest.trim_end_matches('/') == "data" && a.status == 200 {
            // Whether the doorbell card may fetch pictures for this key at all (the gate
            // decides again for each picture).
            a.body["pictures"] = auth.is_none_or(Principal::sees_pictures).into();
        }
        return secure(Answer::json(a.status, &a.body)).into();
    }
    if path == "/dashboard/api" {
        return secure(rest_error(404, "NOT_FOUND", "no route for /dashboard/api")).into();
    }
    match asset(path.trim_start_matches("/dashboard/")) {
        Some((content_type, body)) => secure(Answer::with_body(
            200,
            content_type,
            body.as_bytes().to_vec(),
        ))
        .into(),
        None => secure(rest_error(
            404,
            "NOT_FOUND",
            &format!("no route for {path}"),
        ))
        .into(),
    }
}
