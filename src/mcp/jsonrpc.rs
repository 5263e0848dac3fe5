//! JSON-RPC 2.0 framing: bytes in, typed messages out, and the response shapes back.
//!
//! Every transport hands its raw bytes to [`parse`], which returns an [`Incoming`] (one
//! message or a batch) or, for bytes that are not JSON at all, a ready -32700 [`Response`].
//! Each message is classified once, here, into a [`Message`]: a request (has an `id`), a
//! notification (no `id`, never answered) or a client response (`result`/`error` without
//! `method`, accepted and ignored). Malformed messages become a -32600 [`Response`] whose
//! `id` is the request's own id when it could be read, else `null`.
//!
//! Error responses follow spec §7.2:
//! `{"jsonrpc":"2.0","id":…,"error":{"code":…,"message":"…","data":{"details":"…"}}}`.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Number, Value};

use super::handler::RpcError;

/// A request id: JSON-RPC allows a number or a string (MCP forbids `null`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum Id {
    Number(Number),
    String(String),
}

/// `params` of a request or notification: an object or an array, as JSON-RPC requires.
#[derive(Debug, Clone, PartialEq)]
pub enum Params {
    Object(Map<String, Value>),
    Array(Vec<Value>),
}

/// A request: the peer expects exactly one [`Response`] with the same `id`.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub id: Id,
    pub method: String,
    pub params: Option<Params>,
}

/// A notification: no `id`, never answered (not even with an error).
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub method: String,
    pub params: Option<Params>,
}

/// One well-formed JSON-RPC message from the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request(Request),
    Notification(Notification),
    /// A response to a server-to-client request (`result` or `error`, no `method`), routed
    /// by id to the request waiting for it (see [`super::peer::Pending`]).
    ClientResponse(ClientResponse),
}

/// The client's answer to a server-to-client request.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientResponse {
    pub id: Id,
    /// `result`, or the `error` as an [`RpcError`].
    pub outcome: Result<Value, RpcError>,
}

/// What arrived in one transport frame (an HTTP body or a stdio line).
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// One message, or the -32600 answer for an invalid one.
    Single(Result<Message, Response>),
    /// A non-empty JSON array; each element classified on its own.
    Batch(Vec<Result<Message, Response>>),
}

/// The `error` member of an error response.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    pub data: ErrorData,
}

/// `error.data` (spec §7.2): free text explaining the error.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorData {
    pub details: String,
}

/// The outcome carried by a [`Response`].
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Result(Value),
    /// A result already rendered as JSON text (a cached tool answer): written as is.
    Json(RawJson),
    Error(ErrorObject),
}

/// Valid JSON text, serialised verbatim (no parse, no tree), shared: a clone is a reference.
/// Equal when the texts are.
#[derive(Debug, Clone)]
pub struct RawJson(std::sync::Arc<Box<serde_json::value::RawValue>>);

impl RawJson {
    /// `text` if it is valid JSON.
    pub fn new(text: String) -> Result<Self, serde_json::Error> {
        serde_json::value::RawValue::from_string(text).map(|raw| Self(std::sync::Arc::new(raw)))
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// The text parsed into a [`Value`] (for callers that need the tree).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.get()).unwrap_or(Value::Null)
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// One JSON-RPC response object. `id` is `None` (serialised as `null`) only for errors about
/// messages whose id could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub id: Option<Id>,
    pub outcome: Outcome,
}

impl Serialize for Response {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("jsonrpc", "2.0")?;
        map.serialize_entry("id", &self.id)?;
        match &self.outcome {
            Outcome::Result(value) => map.serialize_entry("result", value)?,
            Outcome::Json(raw) => map.serialize_entry("result", raw)?,
            Outcome::Error(error) => map.serialize_entry("error", error)?,
        }
        map.end()
    }
}

impl Response {
    /// A success response.
    pub fn result(id: Id, result: Value) -> Self {
        Self {
            id: Some(id),
            outcome: Outcome::Result(result),
        }
    }

    /// An error response; `data.details` falls back to the message when the error has none.
    pub fn error(id: Option<Id>, error: RpcError) -> Self {
        let details = error.details.unwrap_or_else(|| error.message.clone());
        Self {
            id,
            outcome: Outcome::Error(ErrorObject {
                code: error.code,
                message: error.message,
                data: ErrorData { details },
            }),
        }
    }

    /// -32700 with `id: null`.
    pub fn parse_error(details: impl Into<String>) -> Self {
        Self::error(
            None,
            RpcError {
                code: RpcError::PARSE_ERROR,
                message: "Parse error".into(),
                details: Some(details.into()),
            },
        )
    }

    /// -32600 for the given id (or `null`).
    pub fn invalid_request(id: Option<Id>, details: impl Into<String>) -> Self {
        Self::error(
            id,
            RpcError {
                code: RpcError::INVALID_REQUEST,
                message: "Invalid Request".into(),
                details: Some(details.into()),
            },
        )
    }

    /// The error code, if this is an error response.
    pub fn error_code(&self) -> Option<i64> {
        match &self.outcome {
            Outcome::Error(e) => Some(e.code),
            Outcome::Result(_) | Outcome::Json(_) => None,
        }
    }

    /// Serialises to compact JSON (cannot fail for these types).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| {
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error","data":{"details":"response serialisation failed"}}}"#.to_string()
        })
    }
}

/// Parses one transport frame.
///
/// Errors: bytes that are not JSON give `Err` with a -32700 response (`id: null`). An empty
/// array is `Single(Err(-32600))`. Anything else that is not a valid message is classified as
/// `Err(-32600)` inside the returned [`Incoming`].
pub fn parse(raw: &[u8]) -> Result<Incoming, Response> {
    let value: Value = serde_json::from_slice(raw)
        .map_err(|e| Response::parse_error(format!("invalid JSON: {e}")))?;
    Ok(match value {
        Value::Array(items) if items.is_empty() => {
            Incoming::Single(Err(Response::invalid_request(None, "empty batch")))
        }
        Value::Array(items) => Incoming::Batch(items.into_iter().map(classify).collect()),
        other => Incoming::Single(classify(other)),
    })
}

/// Classifies one JSON value as a [`Message`], or returns the -32600 answer for it.
pub fn classify(value: Value) -> Result<Message, Response> {
    let Value::Object(mut obj) = value else {
        return Err(Response::invalid_request(
            None,
            "a message must be a JSON object",
        ));
    };
    let id = match obj.remove("id") {
        None => None,
        Some(Value::Number(n)) => Some(Id::Number(n)),
        Some(Value::String(s)) => Some(Id::String(s)),
        Some(_) => {
            return Err(Response::invalid_request(
                None,
                "`id` must be a number or a string",
            ))
        }
    };
    match obj.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        _ => return Err(Response::invalid_request(id, "`jsonrpc` must be \"2.0\"")),
    }
    match obj.remove("method") {
        Some(Value::String(method)) => {
            let params = match obj.remove("params") {
                None => None,
                Some(Value::Object(m)) => Some(Params::Object(m)),
                Some(Value::Array(a)) => Some(Params::Array(a)),
                Some(_) => {
                    return Err(Response::invalid_request(
                        id,
                        "`params` must be an object or an array",
                    ))
                }
            };
            Ok(match id {
                Some(id) => Message::Request(Request { id, method, params }),
                None => Message::Notification(Notification { method, params }),
            })
        }
        Some(_) => Err(Response::invalid_request(id, "`method` must be a string")),
        None => match id {
            Some(id) if obj.contains_key("result") || obj.contains_key("error") => {
                let outcome = match (obj.remove("result"), obj.remove("error")) {
                    (Some(result), _) => Ok(result),
                    (None, Some(error)) => Err(RpcError {
                        code: error
                            .get("code")
                            .and_then(Value::as_i64)
                            .unwrap_or(RpcError::INTERNAL_ERROR),
                        message: error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("error")
                            .to_string(),
                        details: error.get("data").map(Value::to_string),
                    }),
                    (None, None) => Ok(Value::Null),
                };
                Ok(Message::ClientResponse(ClientResponse { id, outcome }))
            }
            id => Err(Response::invalid_request(id, "`method` is required")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn single(raw: &str) -> Result<Message, Response> {
        match parse(raw.as_bytes()).expect("json") {
            Incoming::Single(m) => m,
            Incoming::Batch(_) => panic!("batch"),
        }
    }

    #[test]
    fn classifies_messages() {
        let m = single(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).unwrap();
        assert!(matches!(
            m,
            Message::Request(Request {
                id: Id::Number(_),
                ..
            })
        ));
        let m = single(r#"{"jsonrpc":"2.0","id":"a","method":"x","params":[1]}"#).unwrap();
        assert!(matches!(
            m,
            Message::Request(Request {
                params: Some(Params::Array(_)),
                ..
            })
        ));
        let m = single(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(matches!(m, Message::Notification(_)));
        let m = single(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#).unwrap();
        assert!(matches!(
            m,
            Message::ClientResponse(ClientResponse { outcome: Ok(_), .. })
        ));
    }

    #[test]
    fn rejects_invalid_requests() {
        let e = parse(b"{nope").unwrap_err();
        assert_eq!(e.error_code(), Some(-32700));
        assert_eq!(e.id, None);
        for (raw, id) in [
            (r#"42"#, None),
            (r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#, Some(3)),
            (r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#, None),
            (r#"{"jsonrpc":"2.0","id":4,"method":5}"#, Some(4)),
            (
                r#"{"jsonrpc":"2.0","id":5,"method":"m","params":"s"}"#,
                Some(5),
            ),
            (r#"[]"#, None),
        ] {
            let e = single(raw).unwrap_err();
            assert_eq!(e.error_code(), Some(-32600), "{raw}");
            assert_eq!(e.id, id.map(|n: i64| Id::Number(n.into())), "{raw}");
        }
    }

    #[test]
    fn error_shape() {
        let r = Response::invalid_request(None, "why");
        let v: Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(
            v,
            json!({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request","data":{"details":"why"}}})
        );
    }
}
