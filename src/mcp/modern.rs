//! MCP 2026-07-28 ("modern"): stateless requests carrying their version, capabilities and
//! client identity in `_meta`, next to the `initialize`-based revisions 2024-11-05 to
//! 2025-11-25 ("legacy").
//!
//! A request is modern when its `params._meta` names `io.modelcontextprotocol/protocolVersion`,
//! when its method exists only in the modern era (`server/discover`, `subscriptions/listen`),
//! or when the transport declared a modern or unknown version for it (HTTP's
//! `MCP-Protocol-Version` header on a request without a session). Such a request never touches
//! the session: [`McpServer`](super::McpServer) serves it with a state of its own built by
//! [`RequestMeta::parse`]. This module holds the era's wire names, the validation of `_meta`,
//! the errors the era adds (`UnsupportedProtocolVersionError` -32022, `HeaderMismatch`
//! -32020) and what every modern result carries (`resultType`, the server's identity and the
//! cache hints of [`CacheHint`]).

use serde_json::{json, Map, Value};

use super::handler::{LogLevel, RpcError};
use super::jsonrpc::{Id, Response};
use super::session::ProtocolVersion;

/// `_meta` key of the request's protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the client's capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the client's identity (optional).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of the lowest log level the request wants as `notifications/message`.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key of the server's identity on results.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key tagging every message of a `subscriptions/listen` stream.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// `HeaderMismatch`: HTTP headers that disagree with the body, or are missing.
pub const HEADER_MISMATCH: i64 = -32020;
/// `MissingRequiredClientCapabilityError`.
pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
/// `UnsupportedProtocolVersionError`.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// Methods of the legacy era that 2026-07-28 removed; a modern request for one is -32601.
pub const REMOVED_METHODS: [&str; 6] = [
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
    "notifications/initialized",
];

/// Methods that exist only in the modern era: a request for one is modern whatever it carries.
pub fn modern_only(method: &str) -> bool {
    matches!(method, "server/discover" | "subscriptions/listen")
}

/// Every protocol version this server serves, newest first (the `supportedVersions` of
/// `server/discover` and the `supported` list of -32022).
pub fn supported_versions() -> Vec<&'static str> {
    ProtocolVersion::ALL
        .iter()
        .rev()
        .map(|v| v.as_str())
        .collect()
}

/// The protocol version named in `params._meta`, if any (not checked).
pub fn meta_version(params: Option<&Map<String, Value>>) -> Option<&Value> {
    params?.get("_meta")?.get(META_PROTOCOL_VERSION)
}

/// What a modern request declares in its `_meta`.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestMeta {
    /// The client's capabilities (an object).
    pub client_capabilities: Value,
    /// The client's name and version, when it sent them.
    pub client_info: Option<Value>,
    /// The log level it asked for; no `notifications/message` without one.
    pub log_level: Option<LogLevel>,
}

impl RequestMeta {
    /// Validates `params._meta` of a modern request: -32602 when `_meta`, its protocol version
    /// or its client capabilities are missing or mistyped, -32022 ([`unsupported_version`])
    /// when the version is not 2026-07-28 or later.
    pub fn parse(params: Option<&Map<String, Value>>) -> Result<RequestMeta, ModernError> {
        let meta = match params.and_then(|p| p.get("_meta")) {
            Some(Value::Object(m)) => m,
            Some(_) => return Err(invalid("`_meta` must be an object")),
            None => {
                return Err(invalid(
                    "missing `_meta`: a 2026-07-28 request carries its protocol version and \
                     client capabilities in `params._meta`",
                ))
            }
        };
        let version = match meta.get(META_PROTOCOL_VERSION) {
            Some(Value::String(v)) => v.as_str(),
            Some(_) => {
                return Err(invalid(&format!(
                    "`_meta.{META_PROTOCOL_VERSION}` must be a string"
                )))
            }
            None => return Err(invalid(&format!("missing `_meta.{META_PROTOCOL_VERSION}`"))),
        };
        let client_capabilities = match meta.get(META_CLIENT_CAPABILITIES) {
            Some(c @ Value::Object(_)) => c.clone(),
            Some(_) => {
                return Err(invalid(&format!(
                    "`_meta.{META_CLIENT_CAPABILITIES}` must be an object"
                )))
            }
            None => {
                return Err(invalid(&format!(
                    "missing `_meta.{META_CLIENT_CAPABILITIES}`"
                )))
            }
        };
        match ProtocolVersion::parse(version) {
            Some(v) if v.is_modern() => {}
            _ => return Err(ModernError::Unsupported(version.to_string())),
        }
        let log_level = match meta.get(META_LOG_LEVEL) {
            None | Some(Value::Null) => None,
            Some(Value::String(l)) => Some(LogLevel::parse(l).ok_or_else(|| {
                invalid(&format!(
                    "unknown log level {l:?} in `_meta.{META_LOG_LEVEL}`"
                ))
            })?),
            Some(_) => {
                return Err(invalid(&format!(
                    "`_meta.{META_LOG_LEVEL}` must be a string"
                )))
            }
        };
        Ok(RequestMeta {
            client_capabilities,
            client_info: meta.get(META_CLIENT_INFO).cloned(),
            log_level,
        })
    }
}

/// Why a modern request is refused before it is dispatched.
#[derive(Debug, Clone, PartialEq)]
pub enum ModernError {
    /// An ordinary JSON-RPC error (-32602 for bad `_meta`).
    Rpc(RpcError),
    /// The requested version is not one this server serves statelessly.
    Unsupported(String),
}

impl ModernError {
    /// The error response for request `id`.
    pub fn into_response(self, id: Option<Id>) -> Response {
        match self {
            ModernError::Rpc(e) => Response::error(id, e),
            ModernError::Unsupported(requested) => unsupported_version(id, &requested),
        }
    }
}

fn invalid(what: &str) -> ModernError {
    ModernError::Rpc(RpcError::invalid_params(format!("Invalid params: {what}")))
}

/// `UnsupportedProtocolVersionError` (-32022) for request `id`: `data.supported` lists every
/// version this server serves, `data.requested` echoes the one asked for.
pub fn unsupported_version(id: Option<Id>, requested: &str) -> Response {
    let supported = supported_versions();
    Response::error_with_data(
        id,
        RpcError {
            code: UNSUPPORTED_PROTOCOL_VERSION,
            message: "Unsupported protocol version".into(),
            details: Some(format!(
                "protocol version {requested:?} is not supported; supported: {}",
                supported.join(", ")
            )),
        },
        json!({ "supported": supported, "requested": requested }),
    )
}

/// `MissingRequiredClientCapabilityError` (-32021) for request `id`: `data.requiredCapabilities`
/// is a client-capabilities object naming each missing capability (`{"sampling": {}}`).
pub fn missing_capabilities(id: Option<Id>, missing: &[&str]) -> Response {
    let required: Map<String, Value> = missing.iter().map(|c| (c.to_string(), json!({}))).collect();
    Response::error_with_data(
        id,
        RpcError {
            code: MISSING_CLIENT_CAPABILITY,
            message: "Missing required client capability".into(),
            details: Some(format!(
                "this request needs the client capabilities {}; declare them in `_meta.{}`",
                missing.join(", "),
                META_CLIENT_CAPABILITIES
            )),
        },
        json!({ "requiredCapabilities": required }),
    )
}

/// `HeaderMismatch` (-32020) for request `id`, naming what disagreed.
pub fn header_mismatch(id: Option<Id>, what: impl Into<String>) -> Response {
    let what = what.into();
    Response::error(
        id,
        RpcError {
            code: HEADER_MISMATCH,
            message: format!("Header mismatch: {what}"),
            details: Some(what),
        },
    )
}

pub use super::handler::CacheHint;

/// Methods whose results carry [`CacheHint`]s.
pub fn cacheable(method: &str) -> bool {
    matches!(
        method,
        "server/discover"
            | "tools/list"
            | "prompts/list"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
    )
}

/// Completes a modern result: `resultType: "complete"` unless the result names its own,
/// the server's identity in `_meta`, and `ttlMs`/`cacheScope` when `hint` is given.
pub fn finish_result(mut result: Value, server_info: &Value, hint: Option<CacheHint>) -> Value {
    let Some(obj) = result.as_object_mut() else {
        return result;
    };
    obj.entry("resultType")
        .or_insert_with(|| Value::String("complete".into()));
    let meta = obj
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        meta.entry(META_SERVER_INFO)
            .or_insert_with(|| server_info.clone());
    }
    if let Some(h) = hint {
        if obj.get("resultType").and_then(Value::as_str) == Some("complete") {
            obj.insert("ttlMs".into(), h.ttl_ms.into());
            obj.insert(
                "cacheScope".into(),
                Value::String(if h.public { "public" } else { "private" }.into()),
            );
        }
    }
    result
}

/// Decodes an `Mcp-Name` / `Mcp-Param-*` header value: the base64 sentinel form
/// `=?base64?…?=` is decoded (UTF-8), anything else is taken as it is. `None` when a sentinel
/// value is not valid base64 or not UTF-8.
pub fn decode_header_value(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => {
            use base64::Engine;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()?;
            String::from_utf8(bytes).ok()
        }
        None => Some(value.to_string()),
    }
}

/// The body value `Mcp-Name` mirrors for `method`: `params.name` of `tools/call` and
/// `prompts/get`, `params.uri` of `resources/read`, `params.taskId` of the task methods;
/// `None` for other methods.
pub fn name_source(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        // Extension io.modelcontextprotocol/tasks: the task's id routes its requests.
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// The tool parameters a client mirrors into HTTP headers (SEP-2243): each top-level property
/// of `input_schema` annotated with `"x-mcp-header": "<Name>"`, as `(property, Name)`; its value
/// travels in `Mcp-Param-<Name>` too.
pub fn param_headers(input_schema: &Value) -> Vec<(String, String)> {
    input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .filter_map(|(p, s)| {
                    let name = s.get("x-mcp-header")?.as_str()?;
                    Some((p.clone(), name.to_string()))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Why the `Mcp-Param-*` headers of a `tools/call` disagree with its `arguments`, if they do:
/// for each `(property, Name)` of `params` ([`param_headers`]), a value in the body needs the
/// header `Mcp-Param-<Name>` (`header` looks one up by name) with the same value (base64
/// sentinel decoded; numbers and booleans as their JSON text), and a header needs the value.
pub fn param_header_mismatch<'a>(
    params: &[(String, String)],
    arguments: Option<&Map<String, Value>>,
    header: impl Fn(&str) -> Option<&'a str>,
) -> Option<String> {
    for (property, name) in params {
        let body = match arguments.and_then(|a| a.get(property)) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => Some(other.to_string()),
        };
        let field = format!("Mcp-Param-{name}");
        match (header(&field).map(str::trim), body) {
            (None, None) => {}
            (None, Some(_)) => return Some(format!("the {field} header is required")),
            (Some(_), None) => {
                return Some(format!(
                    "{field} header present but argument '{property}' is absent"
                ))
            }
            (Some(raw), Some(body)) => match decode_header_value(raw) {
                None => return Some(format!("{field} header value '{raw}' is not valid base64")),
                Some(v) if v != body => {
                    return Some(format!(
                        "{field} header value '{v}' does not match body value '{body}'"
                    ))
                }
                Some(_) => {}
            },
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn meta_validation() {
        let ok = params(json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28",
            META_CLIENT_CAPABILITIES: {}, META_LOG_LEVEL: "info"}}));
        let m = RequestMeta::parse(Some(&ok)).unwrap();
        assert_eq!(m.log_level, Some(LogLevel::Info));
        assert!(matches!(
            RequestMeta::parse(Some(&params(json!({})))),
            Err(ModernError::Rpc(e)) if e.code == -32602
        ));
        let no_caps = params(json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}));
        assert!(matches!(
            RequestMeta::parse(Some(&no_caps)),
            Err(ModernError::Rpc(_))
        ));
        let old = params(json!({"_meta": {META_PROTOCOL_VERSION: "2025-11-25",
            META_CLIENT_CAPABILITIES: {}}}));
        assert_eq!(
            RequestMeta::parse(Some(&old)),
            Err(ModernError::Unsupported("2025-11-25".into()))
        );
    }

    #[test]
    fn header_values_decode() {
        assert_eq!(
            decode_header_value("get_weather").as_deref(),
            Some("get_weather")
        );
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8sIOS4lueVjA==?=").as_deref(),
            Some("Hello, 世界")
        );
        assert_eq!(decode_header_value("=?base64?***?="), None);
    }

    #[test]
    fn mirrored_parameters_must_match_their_headers() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}, "q": {"type": "string"}}});
        let p = param_headers(&schema);
        assert_eq!(p, [("region".to_string(), "Region".to_string())]);
        let args = params(json!({"region": "Hello", "q": "x"}));
        let check = |h: Option<&'static str>| {
            param_header_mismatch(&p, Some(&args), |n| (n == "Mcp-Param-Region").then_some(h?))
        };
        assert_eq!(check(Some("=?base64?SGVsbG8=?=")), None);
        assert_eq!(check(Some("Hello")), None);
        assert!(check(None).is_some(), "missing header");
        assert!(check(Some("=?base64?SGVsbG8?=")).is_some(), "bad padding");
        assert!(
            check(Some("=?base64?SGVs!!!bG8=?=")).is_some(),
            "bad characters"
        );
        assert!(check(Some("Bye")).is_some(), "other value");
    }

    #[test]
    fn results_are_completed() {
        let info = json!({"name": "s", "version": "1"});
        let r = finish_result(
            json!({"tools": []}),
            &info,
            Some(CacheHint {
                ttl_ms: 5,
                public: true,
            }),
        );
        assert_eq!(r["resultType"], "complete");
        assert_eq!(r["ttlMs"], 5);
        assert_eq!(r["cacheScope"], "public");
        assert_eq!(r["_meta"][META_SERVER_INFO]["name"], "s");
    }
}
