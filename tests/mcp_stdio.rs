//! The stdio transport, driven with in-memory input and output.

use std::io::Cursor;
use std::sync::Arc;

use home_mcp::mcp::{
    CallToolResult, Content, Handler, Implementation, McpConfig, McpServer, RequestContext,
    RpcError, ToolAnnotations, ToolDescriptor,
};
use serde_json::{json, Map, Value};

/// `echo` returns its arguments; `boom` panics.
struct FakeHandler;

impl Handler for FakeHandler {
    fn server_info(&self) -> Implementation {
        Implementation {
            name: "fake".into(),
            version: "0.0.1".into(),
            title: None,
        }
    }
    fn instructions(&self) -> String {
        String::new()
    }
    fn list_tools(&self) -> Vec<ToolDescriptor> {
        vec![ToolDescriptor {
            name: "echo".into(),
            title: None,
            description: "Returns its arguments".into(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: ToolAnnotations::default(),
        }]
    }
    fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        _ctx: &RequestContext,
    ) -> Result<CallToolResult, RpcError> {
        match name {
            "echo" => Ok(CallToolResult {
                content: vec![Content::Text {
                    text: Value::Object(arguments).to_string(),
                }],
                structured_content: None,
                is_error: false,
            }),
            "boom" => panic!("boom"),
            other => Err(RpcError::invalid_params(format!("Unknown tool: {other}"))),
        }
    }
}

fn server() -> McpServer {
    McpServer::new(Arc::new(FakeHandler), McpConfig::default())
}

/// Runs `input` through `serve_with_limit` and returns the output lines as JSON.
fn run(input: &[u8], limit: usize) -> Vec<Value> {
    let mut out = Vec::new();
    home_mcp::stdio::serve_with_limit(&server(), Cursor::new(input), &mut out, limit)
        .expect("serve ends cleanly at EOF");
    let text = String::from_utf8(out).expect("utf-8 output");
    assert!(text.is_empty() || text.ends_with('\n'));
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect()
}

#[test]
fn scripted_session() {
    let oversized = format!(
        r#"{{"jsonrpc":"2.0","id":99,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(300)
    );
    let script = [
        r#"{"jsonrpc":"2.0","id":0,"method":"tools/list"}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#.into(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into(),
        String::new(),
        "   ".into(),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#.into(),
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}"#.into(),
        r#"{"jsonrpc":"2.0","id":4,"method":"server/discover"}"#.into(),
        "{malformed".into(),
        oversized,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"boom"}}"#.into(),
        r#"[{"jsonrpc":"2.0","id":6,"method":"ping"}]"#.into(),
        r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#.into(),
    ];
    let input = script.join("\r\n") + "\n";
    let out = run(input.as_bytes(), 256);
    let codes: Vec<Value> = out.iter().map(|v| v["error"]["code"].clone()).collect();
    assert_eq!(out.len(), 10, "{out:#?}");
    // tools/list before initialize is refused.
    assert_eq!(
        (out[0]["id"].clone(), codes[0].clone()),
        (json!(0), json!(-32600))
    );
    assert_eq!(out[1]["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(out[2]["result"]["tools"][0]["name"], "echo");
    assert_eq!(out[3]["result"]["content"][0]["text"], "{\"a\":1}");
    assert_eq!(codes[4], -32601);
    assert_eq!(out[4]["id"], 4);
    assert_eq!(
        (out[5]["id"].clone(), codes[5].clone()),
        (Value::Null, json!(-32700))
    );
    assert_eq!(
        (out[6]["id"].clone(), codes[6].clone()),
        (Value::Null, json!(-32600))
    );
    assert!(out[6]["error"]["data"]["details"]
        .as_str()
        .unwrap()
        .contains("256"));
    assert_eq!(
        (out[7]["id"].clone(), codes[7].clone()),
        (json!(5), json!(-32603))
    );
    // Batches are not for 2025-06-18 sessions.
    assert_eq!(codes[8], -32600);
    assert_eq!(out[9], json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
}

#[test]
fn eof_without_newline_and_empty_input() {
    assert!(run(b"", 1024).is_empty());
    let out = run(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, 1024);
    assert_eq!(out, vec![json!({"jsonrpc": "2.0", "id": 1, "result": {}})]);
    // An oversized last line without newline is still answered.
    let out = run(&[b'x'; 2000], 1024);
    assert_eq!(out[0]["error"]["code"], -32600);
}

#[test]
fn default_limit_is_one_mebibyte() {
    assert_eq!(home_mcp::stdio::MAX_LINE_BYTES, 1024 * 1024);
    let mut line = vec![b' '; 1024 * 1024 + 10];
    line.push(b'\n');
    line.extend_from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    line.push(b'\n');
    let mut out = Vec::new();
    home_mcp::stdio::serve(&server(), Cursor::new(line), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].contains("-32600"));
    assert!(lines[1].contains(r#""result":{}"#));
}
