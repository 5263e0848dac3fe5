//! The spec's error object (interface spec §7.1), built here and nowhere else: a code
//! (`INVALID_API_KEY`, `INSUFFICIENT_PERMISSIONS`, `RATE_LIMIT_EXCEEDED`, `INVALID_PARAMETERS`,
//! `DEVICE_NOT_FOUND`, `CONNECTION_ERROR`, and the routes' own such as `NOT_FOUND`), a
//! message in plain words, and `details`, always an object (`{}` when there is nothing to
//! add; `key_id` for key errors, masked).
//!
//! Two forms carry it: the body of a refused request on the key, admin, REST and dashboard
//! routes ([`ApiError::body`]: `{"error": {code, message, details}}`), and the error envelope
//! of a tool result (spec §2, [`ApiError::envelope`]: `{"status": "error", "error": {...},
//! "timestamp"}`). JSON-RPC errors (§7.2) are `crate::mcp::jsonrpc`'s.

use serde_json::{json, Map, Value};

/// One error of the spec's §7.1 shape.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The code, upper snake case (`DEVICE_NOT_FOUND`).
    pub code: String,
    /// What went wrong, in plain words.
    pub message: String,
    /// Further facts (`key_id`, `limit`, `suggestions`, ...); empty: `{}`.
    pub details: Map<String, Value>,
}

impl ApiError {
    /// An error without details.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            details: Map::new(),
        }
    }

    /// With `details`: an object's members (any other value is kept under `value`).
    pub fn with_details(mut self, details: Value) -> Self {
        match details {
            Value::Object(m) => self.details = m,
            other => self.details = Map::from_iter([("value".to_string(), other)]),
        }
        self
    }

    /// With one more member of `details`.
    pub fn with(mut self, name: &str, value: impl Into<Value>) -> Self {
        self.details.insert(name.into(), value.into());
        self
    }

    /// The object itself: `{"code", "message", "details"}`.
    pub fn object(&self) -> Value {
        json!({"code": self.code, "message": self.message, "details": self.details})
    }

    /// The body of a refused request: `{"error": {"code", "message", "details"}}`.
    pub fn body(&self) -> Value {
        json!({ "error": self.object() })
    }

    /// A tool's error envelope: `{"status": "error", "error": {...}, "timestamp"}` with the
    /// time now (ISO 8601 UTC).
    pub fn envelope(&self) -> Value {
        json!({
            "status": "error",
            "error": self.object(),
            "timestamp": crate::time::now_iso8601(),
        })
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_are_always_an_object() {
        let e = ApiError::new("NOT_FOUND", "no route for /x");
        assert_eq!(
            e.body(),
            json!({"error": {"code": "NOT_FOUND", "message": "no route for /x", "details": {}}})
        );
        let e = e.with("key_id", Value::Null);
        assert_eq!(e.body()["error"]["details"], json!({"key_id": null}));
        let e = ApiError::new("X", "m").with_details(json!(3));
        assert_eq!(e.object()["details"], json!({"value": 3}));
        let env = ApiError::new("CONNECTION_ERROR", "down").envelope();
        assert_eq!(env["status"], "error");
        assert_eq!(env["error"]["code"], "CONNECTION_ERROR");
        assert!(env["timestamp"].is_string());
    }
}
