//! JSON-RPC 2.0 framing: bytes in, typed messages out, and the response shapes back.
//!
//! Every transport hands its raw bytes to [`parse`], which returns an [`Incoming`] (one
//! message or a batch) or, for bytes that are not JSON at all, a ready -32700 [`Response`].
//! Each message is classified once, here, into a [`Message`]: a request (has an `id`), a
//! notification (no `id`, never answered) or a client response (`result`/`error` without
//! `method`, accepted and ignored). Malformed messages become a -32600 [`Response`] whose
//! `id` is the request's own id when it could be read, else `null`. Ids keep the exact text
//! the client sent ([`Id`]). Refusals decided before parsing (by a transport or the gate) read
//! only the ids with [`request_ids`] and answer with [`error_for`].
//!
//! Error responses follow spec §7.2:
//! `{"jsonrpc":"2.0","id":…,"error":{"code":…,"message":"…","data":{"details":"…"}}}`.

use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A request id: JSON-RPC allows a number or a string (MCP forbids `null`). Numbers keep the
/// exact text the client sent, so every answer echoes an id byte for byte whatever its size
/// or precision (`123456789012345678901234567890` would come back as
/// `1.2345678901234568e+29` through `f64`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Id {
    Number(IdNumber),
    String(String),
}

/// A numeric request id as the JSON text the client sent (`9007199254740993`, `-7`, `1.5`,
/// `1e3`); only ever a valid JSON number. Two ids are the same when their texts are.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdNumber(String);

impl IdNumber {
    /// The number's JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IdNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<u64> for Id {
    fn from(n: u64) -> Self {
        Id::Number(IdNumber(n.to_string()))
    }
}

impl From<i64> for Id {
    fn from(n: i64) -> Self {
        Id::Number(IdNumber(n.to_string()))
    }
}

impl Id {
    /// The id in `raw` (one JSON value as sent): a string or a number; `None` for anything
    /// else (`null`, booleans, objects, arrays are not ids).
    pub fn from_raw(raw: &RawValue) -> Option<Id> {
        let text = raw.get().trim();
        match text.as_bytes().first()? {
            b'"' => serde_json::from_str(text).ok().map(Id::String),
            b'-' | b'0'..=b'9' => Some(Id::Number(IdNumber(text.to_string()))),
            _ => None,
        }
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::String(s) => serializer.serialize_str(s),
            // The text as sent: serde_json writes a raw value unchanged.
            Id::Number(n) => match RawValue::from_string(n.0.clone()) {
                Ok(raw) => raw.serialize(serializer),
                Err(e) => Err(serde::ser::Error::custom(e)),
            },
        }
    }
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
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    pub data: ErrorData,
}

impl From<RpcError> for ErrorObject {
    /// `data.details` falls back to the message when the error has none.
    fn from(error: RpcError) -> Self {
        let details = error.details.unwrap_or_else(|| error.message.clone());
        ErrorObject {
            code: error.code,
            message: error.message,
            data: ErrorData {
                details,
                extra: serde_json::Map::new(),
            },
        }
    }
}

impl ErrorObject {
    /// With further members of `data` (an object's members; any other `data` is ignored).
    pub fn with_data(mut self, data: Value) -> Self {
        if let Value::Object(extra) = data {
            self.data.extra = extra;
        }
        self
    }
}

/// `error.data` (spec §7.2): free text explaining the error, and the members some errors
/// add (e.g. `supported` and `requested` of MCP 2026-07-28's -32022).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ErrorData {
    pub details: String,
    /// Further members of `data`, flattened next to `details`.
    #[serde(flatten, default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: serde_json::Map<String, Value>,
}

/// The outcome carried by a [`Response`].
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Result(Value),
    /// A result already rendered as JSON text (a cached tool answer): written as is.
    Json(RawJson),
    Error(ErrorObject),
}

/// A JSON-RPC error a handler wants the caller to see (code per spec §7.2).
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    /// Free text for `error.data.details`.
    pub details: Option<String>,
}

impl RpcError {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// MCP: the resource URI names nothing.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;

    /// -32602 with a message that names the offending field.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self {
            code: Self::INVALID_PARAMS,
            message: message.into(),
            details: None,
        }
    }

    /// -32603.
    pub fn internal(message: impl Into<String>) -> Self {
        Self {
            code: Self::INTERNAL_ERROR,
            message: message.into(),
            details: None,
        }
    }

    pub fn with_details(mut self, details: impl Into<String>) -> Self {
        self.details = Some(details.into());
        self
    }
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
        Self {
            id,
            outcome: Outcome::Error(error.into()),
        }
    }

    /// [`Response::error`] with further members of `error.data` (an object's members; any
    /// other `data` is ignored).
    pub fn error_with_data(id: Option<Id>, error: RpcError, data: Value) -> Self {
        Self {
            id,
            outcome: Outcome::Error(ErrorObject::from(error).with_data(data)),
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
/// Errors: a frame that nests deeper or holds more values than [`crate::json::REQUEST`]
/// allows gives `Err` with a -32600 response (`id: null`) before anything is parsed; bytes
/// that are not JSON give `Err` with a -32700 response (`id: null`). An empty array is
/// `Single(Err(-32600))`. Anything else that is not a valid message is classified as
/// `Err(-32600)` inside the returned [`Incoming`]. Each message's `id` is kept as the text
/// sent (see [`Id`]); its other members are parsed as usual.
pub fn parse(raw: &[u8]) -> Result<Incoming, Response> {
    crate::json::check(raw, crate::json::REQUEST)
        .map_err(|e| Response::invalid_request(None, format!("{e}: send less at a time")))?;
    let frame: Frame<RawMessage> = serde_json::from_slice(raw)
        .map_err(|e| Response::parse_error(format!("invalid JSON: {e}")))?;
    Ok(match frame {
        Frame::Batch(items) if items.is_empty() => {
            Incoming::Single(Err(Response::invalid_request(None, "empty batch")))
        }
        Frame::Batch(items) => Incoming::Batch(items.into_iter().map(classify).collect()),
        Frame::Single(item) => Incoming::Single(classify(item)),
    })
}

/// A frame as read: one element or a batch of them.
enum Frame<T> {
    Single(T),
    Batch(Vec<T>),
}

/// What a frame's elements are read as: [`RawMessage`] for [`parse`], [`Probe`] for
/// [`request_ids`]. Anything that is not a JSON object becomes [`Element::other`].
trait Element: Sized {
    /// Reads the members of an object.
    fn object<'de, A: MapAccess<'de>>(map: A) -> Result<Self, A::Error>;
    /// Any JSON value that is not an object.
    fn other() -> Self;
}

/// One element of a frame read for [`parse`]: an object's `id` as the raw text sent and its
/// other members, or a value that is not an object.
enum RawMessage {
    Object {
        id: Option<Box<RawValue>>,
        members: Map<String, Value>,
    },
    NotObject,
}

impl Element for RawMessage {
    fn object<'de, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let (mut id, mut members) = (None, Map::new());
        while let Some(key) = map.next_key::<String>()? {
            if key == "id" {
                id = Some(map.next_value::<Box<RawValue>>()?);
            } else {
                let value = map.next_value::<Value>()?;
                members.insert(key, value);
            }
        }
        Ok(RawMessage::Object { id, members })
    }

    fn other() -> Self {
        RawMessage::NotObject
    }
}

/// One element of a frame read for [`request_ids`]: its id if it is a request; every other
/// member is skipped without being kept.
struct Probe(Option<Id>);

impl Element for Probe {
    fn object<'de, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let (mut id, mut method) = (None, false);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "id" => id = Id::from_raw(&map.next_value::<Box<RawValue>>()?),
                "method" => method = map.next_value::<Value>()?.is_string(),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Probe(id.filter(|_| method)))
    }

    fn other() -> Self {
        Probe(None)
    }
}

/// Reads one element with [`Element`]'s rules.
struct ElementVisitor<T>(std::marker::PhantomData<T>);

impl<'de, T: Element> Visitor<'de> for ElementVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::object(map)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(T::other())
    }
    fn visit_bool<E>(self, _: bool) -> Result<T, E> {
        Ok(T::other())
    }
    fn visit_i64<E>(self, _: i64) -> Result<T, E> {
        Ok(T::other())
    }
    fn visit_u64<E>(self, _: u64) -> Result<T, E> {
        Ok(T::other())
    }
    fn visit_f64<E>(self, _: f64) -> Result<T, E> {
        Ok(T::other())
    }
    fn visit_str<E>(self, _: &str) -> Result<T, E> {
        Ok(T::other())
    }
    fn visit_unit<E>(self) -> Result<T, E> {
        Ok(T::other())
    }
}

impl<'de> Deserialize<'de> for RawMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ElementVisitor(std::marker::PhantomData))
    }
}

impl<'de> Deserialize<'de> for Probe {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ElementVisitor(std::marker::PhantomData))
    }
}

/// Reads a frame: an array is a batch of elements (at most `keep` of them kept, the rest
/// counted in `extra` and skipped), anything else one element.
struct FrameVisitor<T> {
    keep: usize,
    marker: std::marker::PhantomData<T>,
}

impl<'de, T: Element + Deserialize<'de>> Visitor<'de> for FrameVisitor<T> {
    type Value = (Frame<T>, usize);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message or batch")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let (mut items, mut extra) = (Vec::new(), 0);
        while items.len() < self.keep {
            match seq.next_element::<T>()? {
                Some(item) => items.push(item),
                None => return Ok((Frame::Batch(items), 0)),
            }
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {
            extra += 1;
        }
        Ok((Frame::Batch(items), extra))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Ok((Frame::Single(T::object(map)?), 0))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok((Frame::Single(T::other()), 0))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok((Frame::Single(T::other()), 0))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok((Frame::Single(T::other()), 0))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok((Frame::Single(T::other()), 0))
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok((Frame::Single(T::other()), 0))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok((Frame::Single(T::other()), 0))
    }
}

impl<'de> Deserialize<'de> for Frame<RawMessage> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let visitor = FrameVisitor {
            keep: usize::MAX,
            marker: std::marker::PhantomData,
        };
        Ok(d.deserialize_any(visitor)?.0)
    }
}

/// The ids of the requests in a frame, for an error answer decided before (or instead of)
/// [`parse`]: a refusal by the HTTP transport or the gate.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestIds {
    /// No request id to echo: not JSON, a single notification or client response, a
    /// message without a valid id, or a batch without requests or longer than the limit.
    /// The refusal is one error with `id: null`.
    Unknown,
    /// One request: its error carries the id.
    Single(Id),
    /// The requests of a batch, in order (notifications and client responses have no
    /// answer): one error per request, each with its id.
    Batch(Vec<Id>),
}

/// Reads the ids of the requests in `raw` (a transport frame) without keeping anything else:
/// one pass over the bytes, every other member skipped. A batch of more than `max_items`
/// elements is [`RequestIds::Unknown`] (refused whole, as [`super::McpServer::batch_refusal`]
/// does), so a refusal never answers with more than `max_items` errors.
pub fn request_ids(raw: &[u8], max_items: usize) -> RequestIds {
    let mut de = serde_json::Deserializer::from_slice(raw);
    let visitor = FrameVisitor::<Probe> {
        keep: max_items,
        marker: std::marker::PhantomData,
    };
    let scanned = (&mut de)
        .deserialize_any(visitor)
        .and_then(|frame| de.end().map(|()| frame));
    let Ok(scanned) = scanned else {
        return RequestIds::Unknown;
    };
    match scanned {
        (Frame::Single(Probe(Some(id))), _) => RequestIds::Single(id),
        (Frame::Batch(items), 0) => {
            let ids: Vec<Id> = items.into_iter().filter_map(|p| p.0).collect();
            if ids.is_empty() {
                RequestIds::Unknown
            } else {
                RequestIds::Batch(ids)
            }
        }
        _ => RequestIds::Unknown,
    }
}

/// The error answer to a frame whose requests are `ids` (see [`request_ids`]) as JSON text:
/// one error response with the request's id, an array with one per request of a batch, or
/// one with `id: null`.
pub fn error_for(ids: &RequestIds, error: &ErrorObject) -> String {
    let one = |id: Option<&Id>| {
        Response {
            id: id.cloned(),
            outcome: Outcome::Error(error.clone()),
        }
        .to_json()
    };
    match ids {
        RequestIds::Unknown => one(None),
        RequestIds::Single(id) => one(Some(id)),
        RequestIds::Batch(list) => format!(
            "[{}]",
            list.iter()
                .map(|id| one(Some(id)))
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}

/// Classifies one element of a frame as a [`Message`], or returns the -32600 answer for it.
fn classify(item: RawMessage) -> Result<Message, Response> {
    let RawMessage::Object {
        id,
        members: mut obj,
    } = item
    else {
        return Err(Response::invalid_request(
            None,
            "a message must be a JSON object",
        ));
    };
    let id = match id {
        None => None,
        Some(raw) => match Id::from_raw(&raw) {
            Some(id) => Some(id),
            None => {
                return Err(Response::invalid_request(
                    None,
                    "`id` must be a number or a string",
                ))
            }
        },
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
            assert_eq!(e.id, id.map(|n: i64| Id::from(n)), "{raw}");
        }
    }

    #[test]
    fn ids_keep_their_text() {
        for id in [
            "9007199254740993",
            "123456789012345678901234567890",
            "-42",
            "1.50",
            "1e400",
            "\"x\\u0041\"",
        ] {
            let raw = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"nope"}}"#);
            let Ok(Message::Request(r)) = single(&raw) else {
                panic!("{raw}")
            };
            let answer = Response::invalid_request(Some(r.id), "x").to_json();
            let expected = if id.starts_with('"') { "\"xA\"" } else { id };
            assert!(
                answer.contains(&format!(r#""id":{expected},"#)),
                "{id}: {answer}"
            );
        }
    }

    #[test]
    fn request_ids_of_frames() {
        let ids = |raw: &str| request_ids(raw.as_bytes(), 3);
        assert_eq!(
            ids(
                r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"m","params":{"a":[1,{"b":2}]}}"#
            ),
            RequestIds::Single(Id::Number(IdNumber(
                "123456789012345678901234567890".into()
            )))
        );
        assert_eq!(
            ids(
                r#"[{"id":"a","method":"m"},{"method":"n"},{"id":2,"result":{}},{"id":3,"method":"m"}]"#
            ),
            RequestIds::Unknown,
            "four elements exceed the limit of 3"
        );
        assert_eq!(
            ids(r#"[{"id":"a","method":"m"},{"method":"n"},{"id":-3,"method":"m"}]"#),
            RequestIds::Batch(vec![Id::String("a".into()), Id::from(-3i64)])
        );
        for raw in [
            "{nope",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"id":null,"method":"m"}"#,
            r#"{"id":1,"result":{}}"#,
            r#"{"id":1,"method":"m"} trailing"#,
            "[]",
            "[1,2]",
            "7",
        ] {
            assert_eq!(ids(raw), RequestIds::Unknown, "{raw}");
        }
    }

    #[test]
    fn frames_beyond_the_bounds_are_refused_before_parsing() {
        let deep = format!("{}1{}", "[".repeat(33), "]".repeat(33));
        let e = parse(deep.as_bytes()).unwrap_err();
        assert_eq!((e.error_code(), e.id.clone()), (Some(-32600), None));
        let wide = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"a":[{}0]}}}}"#,
            "0,".repeat(20_000)
        );
        let e = parse(wide.as_bytes()).unwrap_err();
        assert!(
            e.to_json().contains("more than 16384 values"),
            "{}",
            e.to_json()
        );
        assert!(
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":[[[1]]]}}"#).is_ok()
        );
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
