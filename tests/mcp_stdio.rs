//! The stdio transport, driven with in-memory input and output.

use std::io::Cursor;
use std::sync::Arc;

use home_mcp::mcp::{McpConfig, McpServer};
use serde_json::{json, Value};

use crate::support::fake_mcp::FakeHandler;

fn server() -> McpServer {
    McpServer::new(Arc::new(FakeHandler::default()), McpConfig::default())
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
        r#"{"jsonrpc":"2.0","id":4,"method":"tasks/unknown"}"#.into(),
        "{malformed".into(),
        oversized,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"boom"}}"#.into(),
        r#"[{"jsonrpc":"2.0","id":6,"method":"ping"}]"#.into(),
        r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#.into(),
    ];
    let input = script.join("\r\n") + "\n";
    let out = run(input.as_bytes(), 256);
    assert_eq!(out.len(), 10, "{out:#?}");
    // Tool calls run beside the reading (a slow call does not hold the next line), so their
    // answers may come out of order: answers are matched by id; those without an id (to
    // lines with no usable id) come from the reader itself, in order.
    let by_id = |id: i64| -> &Value {
        let found: Vec<&Value> = out.iter().filter(|v| v["id"] == id).collect();
        assert_eq!(found.len(), 1, "answers to {id}: {out:#?}");
        found[0]
    };
    let code = |v: &Value| v["error"]["code"].clone();
    // tools/list before initialize is refused.
    assert_eq!(code(by_id(0)), -32600);
    assert_eq!(by_id(1)["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(by_id(2)["result"]["tools"][0]["name"], "echo");
    assert_eq!(by_id(3)["result"]["content"][0]["text"], "{\"a\":1}");
    assert_eq!(code(by_id(4)), -32601);
    // The panicking tool: an internal error for its request only.
    assert_eq!(code(by_id(5)), -32603);
    assert_eq!(*by_id(7), json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
    // The batch is not run (batches are not for 2025-06-18 sessions): its request gets the
    // refusal with its id.
    let batch: Vec<&Value> = out.iter().filter(|v| v.is_array()).collect();
    assert_eq!(batch.len(), 1, "{out:#?}");
    assert_eq!(batch[0][0]["id"], 6, "{}", batch[0]);
    assert_eq!(code(&batch[0][0]), -32600, "{}", batch[0]);
    assert!(batch[0][0]["error"]["data"]["details"]
        .as_str()
        .unwrap()
        .contains("batches are not supported"));
    // Malformed and oversized (with the limit named): no id to echo.
    let anonymous: Vec<&Value> = out
        .iter()
        .filter(|v| v.is_object() && v["id"].is_null())
        .collect();
    let codes: Vec<Value> = anonymous.iter().map(|v| code(v)).collect();
    assert_eq!(codes, [-32700, -32600], "{anonymous:#?}");
    assert!(anonymous[1]["error"]["data"]["details"]
        .as_str()
        .unwrap()
        .contains("256"));
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
