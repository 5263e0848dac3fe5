//! The one fake MCP server side and client side for transport tests: [`FakeHandler`], a
//! handler whose tools exercise what a transport carries (plain answers, structured content,
//! panics, progress and log notifications, elicitation, long catalogues), and
//! [`RecordingPeer`], a client that records what a call sends back and answers requests.

use std::sync::Mutex;
use std::time::Duration;

use home_mcp::mcp::{
    CallToolResult, Content, Handler, Implementation, LogLevel, Peer, RequestContext,
    ResourceContents, ResourceDescriptor, RpcError, ToolAnnotations, ToolDescriptor,
};
use serde_json::{json, Map, Value};

/// A handler for transport tests. Tools, in `tools/list` order:
/// - `echo`: its arguments as text and as `structuredContent` (read-only, with a title and an
///   output schema, so version-dependent shapes show);
/// - `boom`: panics;
/// - `progress`: three `notifications/progress` (when the request has a token) and one log
///   message, then "done";
/// - `ask`: asks the client for a name (`elicitation/create`) and answers
///   `"{action}:{name}"`, or "cannot elicit" when the client cannot;
/// - `filler_00` ... : `fillers` more tools that pad the catalogue (~140 bytes each).
///
/// Two resources, `test://watched` and `test://second` (any `test://` URI reads as "x").
#[derive(Debug, Default, Clone, Copy)]
pub struct FakeHandler {
    pub fillers: usize,
}

/// A text-only tool result.
fn text_result(t: impl Into<String>) -> CallToolResult {
    CallToolResult {
        content: vec![Content::Text { text: t.into() }],
        structured_content: None,
        is_error: false,
    }
}

fn tool(name: &str, description: &str) -> ToolDescriptor {
    ToolDescriptor {
        name: name.into(),
        title: None,
        description: description.into(),
        input_schema: json!({"type": "object"}),
        output_schema: None,
        annotations: ToolAnnotations::default(),
    }
}

impl Handler for FakeHandler {
    fn server_info(&self) -> Implementation {
        Implementation {
            name: "fake".into(),
            version: "0.0.1".into(),
            title: Some("Fake server".into()),
        }
    }

    fn instructions(&self) -> String {
        "Use echo.".into()
    }

    fn list_tools(&self) -> Vec<ToolDescriptor> {
        let mut tools = vec![
            ToolDescriptor {
                name: "echo".into(),
                title: Some("Echo".into()),
                description: "Returns its arguments".into(),
                input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}}}),
                output_schema: Some(json!({"type": "object"})),
                annotations: ToolAnnotations {
                    read_only_hint: true,
                    ..Default::default()
                },
            },
            tool("boom", "Panics"),
            tool("progress", "Reports progress and a log message"),
            tool("ask", "Asks the client for a name"),
        ];
        for n in 0..self.fillers {
            tools.push(tool(
                &format!("filler_{n:02}"),
                &format!(
                    "Filler tool number {n}, padding the catalogue {}",
                    "x".repeat(60)
                ),
            ));
        }
        tools
    }

    fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        ctx: &RequestContext,
    ) -> Result<CallToolResult, RpcError> {
        match name {
            "echo" => Ok(CallToolResult {
                content: vec![Content::Text {
                    text: Value::Object(arguments.clone()).to_string(),
                }],
                structured_content: Some(Value::Object(arguments)),
                is_error: false,
            }),
            "boom" => panic!("boom tool exploded"),
            "progress" => {
                for i in 1..=3 {
                    ctx.progress(i as f64, Some(3.0), Some("step"));
                }
                ctx.log(LogLevel::Info, "test", json!("halfway"));
                Ok(text_result("done"))
            }
            "ask" => {
                if !ctx.can_elicit() {
                    return Ok(text_result("cannot elicit"));
                }
                let Some(peer) = &ctx.peer else {
                    return Ok(text_result("no peer"));
                };
                let answer = peer.0.request(
                    "elicitation/create",
                    json!({"message": "Name?", "requestedSchema": {"type": "object",
                        "properties": {"name": {"type": "string"}}}}),
                    super::PATIENCE,
                )?;
                Ok(text_result(format!(
                    "{}:{}",
                    answer["action"].as_str().unwrap_or("?"),
                    answer["content"]["name"].as_str().unwrap_or("?")
                )))
            }
            other if other.starts_with("filler_") => Ok(text_result(other)),
            other => Err(RpcError::invalid_params(format!("Unknown tool: {other}"))),
        }
    }

    fn list_resources(&self) -> Vec<ResourceDescriptor> {
        ["watched", "second"]
            .map(|name| ResourceDescriptor {
                uri: format!("test://{name}"),
                name: name.into(),
                title: None,
                description: None,
                mime_type: Some("text/plain".into()),
            })
            .into()
    }

    fn read_resource(
        &self,
        uri: &str,
        _ctx: &RequestContext,
    ) -> Result<Vec<ResourceContents>, RpcError> {
        if uri.starts_with("test://") {
            Ok(vec![ResourceContents::text(uri, "text/plain", "x")])
        } else {
            Err(RpcError {
                code: RpcError::RESOURCE_NOT_FOUND,
                message: "Resource not found".into(),
                details: None,
            })
        }
    }
}

/// How a [`RecordingPeer`] answers a request: `(method, params) -> result`.
pub type Answer = Box<dyn Fn(&str, &Value) -> Result<Value, RpcError> + Send + Sync>;

/// A client as a server sees it mid-call: records every notification and request it is sent
/// (method and params, in order) and answers requests with `answer(method, params)`.
pub struct RecordingPeer {
    pub sent: Mutex<Vec<(String, Value)>>,
    answer: Answer,
}

impl RecordingPeer {
    pub fn new(
        answer: impl Fn(&str, &Value) -> Result<Value, RpcError> + Send + Sync + 'static,
    ) -> Self {
        RecordingPeer {
            sent: Mutex::new(Vec::new()),
            answer: Box::new(answer),
        }
    }
}

impl Peer for RecordingPeer {
    fn notify(&self, method: &str, params: Value) {
        self.sent.lock().unwrap().push((method.into(), params));
    }

    fn request(&self, method: &str, params: Value, _timeout: Duration) -> Result<Value, RpcError> {
        let answer = (self.answer)(method, &params);
        self.sent.lock().unwrap().push((method.into(), params));
        answer
    }
}
