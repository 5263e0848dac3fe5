//! The seam between the domain-free MCP core and the home server: the core calls a
//! [`Handler`] for everything that is not protocol bookkeeping (tool catalogue and calls for
//! now; resources and prompts later). The home side implements it in `crate::tools`.

use serde::Serialize;
use serde_json::{Map, Value};

/// `Implementation` of MCP: the server's name and version for `serverInfo`.
#[derive(Debug, Clone, Serialize)]
pub struct Implementation {
    pub name: String,
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// Tool annotations (MCP 2025-03-26+): hints for clients, not guarantees.
#[derive(Debug, Clone, Copy, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    pub read_only_hint: bool,
    pub destructive_hint: bool,
    pub idempotent_hint: bool,
    pub open_world_hint: bool,
}

/// One entry of `tools/list`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDescriptor {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub description: String,
    /// JSON Schema of the arguments; always `{"type": "object", ...}`.
    pub input_schema: Value,
    /// JSON Schema of `structuredContent` (MCP 2025-06-18+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    pub annotations: ToolAnnotations,
}

/// One content block of a tool result.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Content {
    Text { text: String },
}

/// Result of `tools/call`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    pub content: Vec<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    pub is_error: bool,
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

/// What a handler knows about the caller of one request.
#[derive(Debug, Clone, Default)]
pub struct RequestContext {
    /// MCP session id (HTTP) or `None` (stdio).
    pub session_id: Option<String>,
    /// Negotiated protocol version of the session.
    pub protocol_version: String,
    /// Transport name for logs and metrics: `stdio`, `http`.
    pub transport: &'static str,
}

/// The domain side of an MCP server.
pub trait Handler: Send + Sync {
    /// `serverInfo` of `initialize`.
    fn server_info(&self) -> Implementation;
    /// `instructions` of `initialize` (may be empty).
    fn instructions(&self) -> String;
    /// The full tool catalogue, in display order.
    fn list_tools(&self) -> Vec<ToolDescriptor>;
    /// Runs one tool. `Err` becomes a JSON-RPC error (e.g. -32602 for bad arguments, or for an
    /// unknown tool); failures of the house itself come back as `Ok` with `is_error: true`.
    fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        ctx: &RequestContext,
    ) -> Result<CallToolResult, RpcError>;
}
