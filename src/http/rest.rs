//! Quick-start REST: plain JSON over HTTP for scripts that do not speak MCP (spec §4.6).
//!
//! | route | does |
//! |---|---|
//! | `GET /tools` | `{"tools": [...]}`: the `tools/list` catalogue, all pages |
//! | `POST /tools/call` | body `{"tool": name, "arguments": {...}}` (arguments optional): runs the tool |
//! | `GET /api/devices` | `list_devices`; query parameters become its arguments (`?room=Küche&include_state=false`) |
//! | `POST /api/devices/control` | body `{"device", "action", "value"?, ...}`: `control_device` with that body |
//! | `POST /api/devices/{device}/on` (`/off`) | `control_device` with `device` (percent-decoded) and the action |
//!
//! Every call goes through the MCP core ([`McpServer::serve`](crate::mcp::McpServer::serve))
//! as a `tools/call` of a one-off session at protocol 2025-06-18 on transport `rest`, so
//! validation, the envelope and panic isolation are the same as over MCP. Answers:
//! * success: **200** with the tool's envelope (`structuredContent`, or the JSON text content;
//!   a tool without either gets the raw `{content, isError}` result);
//! * a tool error (`isError: true`): the spec §7.1 object `{"error": {code, message,
//!   details}}` taken from the error envelope, with the status of its code:
//!   `INVALID_PARAMETERS` 400, `INVALID_API_KEY` 401, `INSUFFICIENT_PERMISSIONS` 403,
//!   `DEVICE_NOT_FOUND` 404, `RATE_LIMIT_EXCEEDED` 429, `CONNECTION_ERROR` 502, anything else
//!   500;
//! * a JSON-RPC error: -32602 (bad arguments, **unknown tool**) is 400 `INVALID_PARAMETERS`,
//!   others 500 `INTERNAL_ERROR`; `details.reason` carries the core's explanation;
//! * the request itself: body not JSON or of the wrong shape 400 `INVALID_PARAMETERS`, body over
//!   `max_body_bytes` 413 `PAYLOAD_TOO_LARGE`, wrong method 405 `METHOD_NOT_ALLOWED` with
//!   `Allow`, a disallowed `Origin` 403 `FORBIDDEN` (the Host and Origin checks run in the
//!   router for every route).
//!
//! The body's `Content-Type` is not checked (quick-start `curl -d` sends form encoding); browsers
//! are kept out by the Origin check. Authentication plugs in at [`authorize`].

use serde_json::{json, Map, Value};

use super::{api_error, invalid, Answer, Ctx};
use crate::auth::gate::{Action, Principal};
use crate::mcp::jsonrpc::{ErrorObject, Id, Outcome, Params, Request};
use crate::mcp::{Era, ProtocolVersion, RpcError, SessionState};

/// One REST route, resolved from method and path.
#[derive(Debug, Clone, PartialEq)]
enum Route {
    ListTools,
    CallTool,
    ListDevices,
    Control,
    Switch {
        device: String,
        action: &'static str,
    },
}

/// What a request is about to do, for [`authorize`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RestAction<'a> {
    /// The tool that will run (`None` for `GET /tools`).
    pub tool: Option<&'a str>,
    pub arguments: &'a Map<String, Value>,
}

/// Whether `path` is one of the REST routes (any method).
pub(crate) fn is_rest_path(path: &str) -> bool {
    path == "/tools"
        || path == "/tools/call"
        || path == "/api/devices"
        || path.starts_with("/api/devices/")
}

/// The auth seam (issue 6): every REST request passes here with the tool and arguments it is
/// about to run; the router already authenticated the key ([`crate::auth::gate`]). `GET
/// /tools` needs `read`, a call the tool's permission; a refusal is the §7.1 object with 403
/// (or 401/429) and the rate-limit headers.
pub(crate) fn authorize(
    ctx: &Ctx,
    principal: Option<&Principal>,
    action: &RestAction<'_>,
) -> Result<(), Answer> {
    let result = match action.tool {
        None => ctx.authorize(principal, &Action::Method("tools/list")),
        Some(name) => ctx.authorize_tool(principal, "rest", name, action.arguments),
    };
    result.map_err(|d| {
        let m = crate::metrics::global();
        let (method, tool) = match action.tool {
            None => ("tools/list", None),
            Some(name) => ("tools/call", Some(m.known_tool(name))),
        };
        m.mcp_request("rest", method, tool, crate::metrics::Outcome::Denied, None);
        super::deny(&d, false, &crate::mcp::jsonrpc::RequestIds::Unknown)
    })
}

/// Handles a request whose path passed [`is_rest_path`].
pub(crate) fn handle(
    ctx: &Ctx,
    request: &mut tiny_http::Request,
    path: &str,
    principal: Option<&Principal>,
) -> Answer {
    let route = match resolve(request.method(), path) {
        Ok(r) => r,
        Err(answer) => return answer,
    };
    let (tool, arguments) = match route {
        Route::ListTools => {
            if let Err(a) = authorize(
                ctx,
                principal,
                &RestAction {
                    tool: None,
                    arguments: &Map::new(),
                },
            ) {
                return a;
            }
            return list_tools(ctx, principal);
        }
        Route::CallTool => {
            let body = match super::json_body(ctx, request) {
                Ok(b) => b,
                Err(a) => return a,
            };
            match parse_call(body) {
                Ok(call) => call,
                Err(a) => return a,
            }
        }
        Route::ListDevices => ("list_devices".to_string(), query_arguments(request.url())),
        Route::Control => match super::json_body(ctx, request) {
            Ok(Value::Object(args)) => ("control_device".to_string(), args),
            Ok(_) => {
                return invalid(
                    "the body must be a JSON object {\"device\", \"action\", \"value\"?}",
                )
            }
            Err(a) => return a,
        },
        Route::Switch { device, action } => {
            let mut args = Map::new();
            args.insert("device".into(), device.into());
            args.insert("action".into(), action.into());
            ("control_device".to_string(), args)
        }
    };
    if let Err(a) = authorize(
        ctx,
        principal,
        &RestAction {
            tool: Some(&tool),
            arguments: &arguments,
        },
    ) {
        return a;
    }
    call_tool(ctx, &tool, arguments, principal)
}

fn resolve(method: &tiny_http::Method, path: &str) -> Result<Route, Answer> {
    use tiny_http::Method::{Get, Post};
    let (route, allow) = match path {
        "/tools" => (Route::ListTools, "GET"),
        "/tools/call" => (Route::CallTool, "POST"),
        "/api/devices" => (Route::ListDevices, "GET"),
        "/api/devices/control" => (Route::Control, "POST"),
        _ => {
            let rest = path.strip_prefix("/api/devices/").unwrap_or("");
            let (raw, action) = match rest.rsplit_once('/') {
                Some((d, "on")) => (d, "on"),
                Some((d, "off")) => (d, "off"),
                _ => {
                    return Err(api_error(
                        404,
                        "NOT_FOUND",
                        format!("no route for {path}"),
                        json!({}),
                    ))
                }
            };
            let device = percent_encoding::percent_decode_str(raw)
                .decode_utf8()
                .map_err(|_| invalid("the device name is not valid UTF-8"))?
                .into_owned();
            if device.trim().is_empty() || raw.contains('/') {
                return Err(invalid("name one device: /api/devices/{device}/on"));
            }
            (Route::Switch { device, action }, "POST")
        }
    };
    let ok = match allow {
        "GET" => *method == Get,
        _ => *method == Post,
    };
    if ok {
        Ok(route)
    } else {
        Err(super::method_not_allowed(allow))
    }
}

/// `{"tool": name, "arguments": {...}}` (arguments optional).
fn parse_call(body: Value) -> Result<(String, Map<String, Value>), Answer> {
    let Value::Object(mut body) = body else {
        return Err(invalid(
            "the body must be a JSON object {\"tool\", \"arguments\"}",
        ));
    };
    let tool = match body.remove("tool") {
        Some(Value::String(t)) => t,
        Some(_) => return Err(invalid("tool must be a string")),
        None => return Err(invalid("tool is required")),
    };
    let arguments = match body.remove("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(a)) => a,
        Some(_) => return Err(invalid("arguments must be a JSON object")),
    };
    Ok((tool, arguments))
}

/// Query parameters as tool arguments: `true`/`false` become booleans, the rest strings.
fn query_arguments(url: &str) -> Map<String, Value> {
    let mut args = Map::new();
    let Some((_, query)) = url.split_once('?') else {
        return args;
    };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(&s.replace('+', " "))
                .decode_utf8_lossy()
                .into_owned()
        };
        let k = decode(k);
        if k == "key" {
            continue; // the credential of `?key=`, for the gate, not a tool argument
        }
        let v = decode(v);
        let value = match v.as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::String(v),
        };
        args.insert(k, value);
    }
    args
}

/// One JSON-RPC request through the core, in a one-off session on transport `rest`.
fn rpc(
    ctx: &Ctx,
    method: &str,
    params: Map<String, Value>,
    principal: Option<&Principal>,
) -> Result<Value, ErrorObject> {
    let mut state = SessionState::new("rest");
    state.caller = principal.map(Principal::caller);
    state.version = Some(ProtocolVersion::V2025_06_18);
    state.initialized = true;
    let request = Request {
        id: Id::from(1u64),
        method: method.to_string(),
        params: Some(Params::Object(params)),
    };
    match ctx
        .mcp
        .serve(&mut state, request, Era::Session, &None)
        .outcome
    {
        Outcome::Result(v) => Ok(v),
        Outcome::Json(raw) => Ok(raw.to_value()),
        Outcome::Error(e) => Err(e),
    }
}

fn rpc_failure(e: ErrorObject) -> Answer {
    let details = json!({"reason": e.data.details});
    if e.code == RpcError::INVALID_PARAMS {
        api_error(400, "INVALID_PARAMETERS", e.message, details)
    } else {
        api_error(500, "INTERNAL_ERROR", e.message, details)
    }
}

/// `GET /tools`: the tools the caller's profile lists (its key's, else the server's).
fn list_tools(ctx: &Ctx, principal: Option<&Principal>) -> Answer {
    let mut tools = Vec::new();
    let mut cursor: Option<Value> = None;
    // Bounded: a core that keeps returning cursors cannot loop us forever.
    for _ in 0..1000 {
        let mut params = Map::new();
        if let Some(c) = &cursor {
            params.insert("cursor".into(), c.clone());
        }
        let mut page = match rpc(ctx, "tools/list", params, principal) {
            Ok(p) => p,
            Err(e) => return rpc_failure(e),
        };
        if let Some(Value::Array(t)) = page.get_mut("tools").map(Value::take) {
            tools.extend(t);
        }
        cursor = page.get("nextCursor").filter(|c| !c.is_null()).cloned();
        if cursor.is_none() {
            break;
        }
    }
    Answer::json(200, &json!({ "tools": tools }))
}

/// HTTP status of a §7.1 error code.
fn status_of(code: &str) -> u16 {
    match code {
        "INVALID_PARAMETERS" => 400,
        "INVALID_API_KEY" => 401,
        "INSUFFICIENT_PERMISSIONS" => 403,
        "DEVICE_NOT_FOUND" => 404,
        "RATE_LIMIT_EXCEEDED" => 429,
        "CONNECTION_ERROR" => 502,
        _ => 500,
    }
}

/// The JSON of the result's first text block, if it is JSON.
fn text_json(result: &Value) -> Option<Value> {
    let text = result.pointer("/content/0/text")?.as_str()?;
    serde_json::from_str(text).ok()
}

fn call_tool(
    ctx: &Ctx,
    tool: &str,
    arguments: Map<String, Value>,
    principal: Option<&Principal>,
) -> Answer {
    let mut params = Map::new();
    params.insert("name".into(), tool.into());
    params.insert("arguments".into(), Value::Object(arguments));
    let result = match rpc(ctx, "tools/call", params, principal) {
        Ok(r) => r,
        Err(e) => return rpc_failure(e),
    };
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let envelope = result
        .get("structuredContent")
        .filter(|v| v.is_object())
        .cloned()
        .or_else(|| text_json(&result));
    if !is_error {
        return Answer::json(200, envelope.as_ref().unwrap_or(&result));
    }
    match envelope.as_ref().and_then(|e| e.get("error")) {
        Some(err) => {
            let code = err
                .get("code")
                .and_then(Value::as_str)
                .unwrap_or("INTERNAL_ERROR");
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("tool failed");
            let details = err
                .get("details")
                .filter(|d| d.is_object())
                .cloned()
                .unwrap_or_else(|| json!({}));
            api_error(status_of(code), code, message, details)
        }
        None => {
            let message = result
                .pointer("/content/0/text")
                .and_then(Value::as_str)
                .unwrap_or("tool failed");
            api_error(500, "TOOL_ERROR", message, json!({"result": result}))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        use tiny_http::Method::{Get, Post, Put};
        assert_eq!(
            resolve(&Get, "/tools").unwrap_or_else(|a| panic!("{}", a.status)),
            Route::ListTools
        );
        assert_eq!(
            resolve(&Post, "/tools/call").unwrap_or_else(|a| panic!("{}", a.status)),
            Route::CallTool
        );
        assert_eq!(
            resolve(&Post, "/api/devices/K%C3%BCche%20Licht/on")
                .unwrap_or_else(|a| panic!("{}", a.status)),
            Route::Switch {
                device: "Küche Licht".into(),
                action: "on"
            }
        );
        assert_eq!(resolve(&Post, "/tools").unwrap_err().status, 405);
        assert_eq!(resolve(&Put, "/api/devices/x/off").unwrap_err().status, 405);
        assert_eq!(
            resolve(&Post, "/api/devices/x/dim").unwrap_err().status,
            404
        );
        assert_eq!(
            resolve(&Post, "/api/devices/a/b/on").unwrap_err().status,
            400
        );
        assert_eq!(
            resolve(&Post, "/api/devices/%20/on").unwrap_err().status,
            400
        );
        assert!(is_rest_path("/api/devices/x/on"));
        assert!(!is_rest_path("/toolsx"));
    }

    #[test]
    fn query_becomes_arguments() {
        let a = query_arguments("/api/devices?room=K%C3%BCche&include_state=false&category=a+b");
        assert_eq!(a["room"], "Küche");
        assert_eq!(a["include_state"], false);
        assert_eq!(a["category"], "a b");
    }

    #[test]
    fn call_bodies() {
        let (t, a) = parse_call(json!({"tool": "x"})).unwrap_or_else(|a| panic!("{}", a.status));
        assert_eq!((t.as_str(), a.len()), ("x", 0));
        assert_eq!(
            parse_call(json!({"arguments": {}})).unwrap_err().status,
            400
        );
        assert_eq!(
            parse_call(json!({"tool": "x", "arguments": 3}))
                .unwrap_err()
                .status,
            400
        );
        assert_eq!(parse_call(json!([1])).unwrap_err().status, 400);
    }
}
