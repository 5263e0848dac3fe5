//! The conformance fixture (`tests/conformance-fixture`, a test-only package) over real
//! loopback sockets: its catalogue served through the product's HTTP transport. (The official suite
//! itself runs in `tests/conformance.sh`.)

use std::net::SocketAddr;

use serde_json::{json, Value};

use crate::support::fake_mcp::RecordingPeer;
use crate::support::net::request;

/// The fixture's handler, compiled into this test as it is into its binary (never into the
/// product library).
#[path = "conformance-fixture/src/fixture.rs"]
mod fixture;

/// Starts the fixture on a free port, served in process by the product's HTTP transport as
/// its binary serves it (the binary's own argument handling is tested in its package); returns
/// the server (shut down on drop) and its address.
fn start() -> (Fixture, SocketAddr) {
    use home_mcp::http::{HttpConfig, HttpServer};
    use home_mcp::mcp::{McpConfig, McpServer};
    use std::sync::Arc;
    let mcp = Arc::new(McpServer::new(
        Arc::new(fixture::ConformanceFixture),
        McpConfig::default(),
    ));
    let config = HttpConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..HttpConfig::default()
    };
    let health = Arc::new(|| json!({"status": "ok", "fixture": "conformance"}));
    let server = HttpServer::start(config, mcp, health).expect("fixture listens");
    let addr = server.addr();
    (Fixture(Some(server)), addr)
}

/// The in-process fixture server, shut down when dropped.
struct Fixture(Option<home_mcp::http::HttpServer>);

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(s) = self.0.take() {
            s.shutdown();
            s.join();
        }
    }
}

/// POSTs one JSON-RPC message to /mcp; returns (status, session id, body).
fn rpc(addr: &SocketAddr, session: Option<&str>, body: Value) -> (u16, Option<String>, Value) {
    let mut headers = vec![
        "Content-Type: application/json".to_string(),
        "Accept: application/json".to_string(),
    ];
    if let Some(id) = session {
        headers.push(format!("Mcp-Session-Id: {id}"));
    }
    let r = request(*addr, "POST", "/mcp", &headers, &body.to_string());
    let session = r.header("mcp-session-id").map(str::to_string);
    let body = if r.body.is_empty() {
        Value::Null
    } else {
        r.json()
    };
    (r.status, session, body)
}

#[test]
fn the_fixture_serves_appendix_a() {
    let (_server, addr) = start();
    let (status, session, init) = rpc(
        &addr,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}}),
    );
    assert_eq!(status, 200, "{init}");
    assert_eq!(
        init["result"]["serverInfo"]["name"],
        "home-mcp-conformance-fixture"
    );
    let caps = &init["result"]["capabilities"];
    assert_eq!(caps["resources"]["subscribe"], true);
    assert!(caps["logging"].is_object() && caps["completions"].is_object());
    let session = session.expect("a session id");
    let s = Some(session.as_str());
    rpc(
        &addr,
        s,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );

    let (_, _, tools) = rpc(
        &addr,
        s,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"test_simple_text") && names.contains(&"json_schema_2020_12_tool"));
    // No product tool leaks into the fixture.
    assert!(!names.contains(&"list_rooms"));
    let schema = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "json_schema_2020_12_tool")
        .unwrap()["inputSchema"]
        .clone();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["additionalProperties"], false);
    assert!(schema["$defs"]["address"].is_object());

    let (_, _, image) = rpc(
        &addr,
        s,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "test_image_content", "arguments": {}}}),
    );
    assert_eq!(image["result"]["content"][0]["type"], "image");
    assert_eq!(image["result"]["content"][0]["mimeType"], "image/png");

    let (_, _, read) = rpc(
        &addr,
        s,
        json!({"jsonrpc": "2.0", "id": 4, "method": "resources/read",
            "params": {"uri": "test://template/123/data"}}),
    );
    assert!(read["result"]["contents"][0]["text"]
        .as_str()
        .unwrap()
        .contains("123"));

    let (_, _, sub) = rpc(
        &addr,
        s,
        json!({"jsonrpc": "2.0", "id": 5, "method": "resources/subscribe",
            "params": {"uri": "test://watched-resource"}}),
    );
    assert_eq!(sub["result"], json!({}));

    let (_, _, done) = rpc(
        &addr,
        s,
        json!({"jsonrpc": "2.0", "id": 6, "method": "completion/complete", "params": {
            "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
            "argument": {"name": "arg1", "value": "par"}}}),
    );
    assert_eq!(
        done["result"]["completion"]["values"],
        json!(["paris", "park", "party"])
    );
}

/// The scenarios that need the transport's Peer, driven through the MCP core with a recording
/// peer: the core hands the session's log level, the request's progress token and the client's
/// capabilities to the fixture, and the fixture sends what the suite expects. Once a transport
/// passes its Peer to `handle_with_peer`, these reach the client.
#[test]
fn peer_scenarios_through_the_core() {
    use fixture::ConformanceFixture;
    use home_mcp::mcp::{McpConfig, McpServer, PeerHandle, Reply, SessionState};
    use std::sync::Arc;

    let mcp = McpServer::new(Arc::new(ConformanceFixture), McpConfig::default());
    let mut state = SessionState::new("test");
    let send = |state: &mut SessionState, peer: Option<PeerHandle>, msg: Value| -> Value {
        match mcp.handle_with_peer(state, msg.to_string().as_bytes(), peer) {
            Reply::Single(r) => serde_json::from_str(&r.to_json()).unwrap(),
            other => panic!("{other:?}"),
        }
    };
    send(
        &mut state,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"sampling": {}, "elicitation": {}},
            "clientInfo": {"name": "t", "version": "0"}}}),
    );
    let set = send(
        &mut state,
        None,
        json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "debug"}}),
    );
    assert_eq!(set["result"], json!({}));

    // A cooperative client: answers sampling and elicitation.
    let peer = Arc::new(RecordingPeer::new(|method, _| {
        Ok(match method {
            "sampling/createMessage" => json!({"role": "assistant", "model": "m",
                "content": {"type": "text", "text": "pong"}}),
            _ => json!({"action": "accept", "content": {"username": "ada", "email": "a@b"}}),
        })
    }));
    let handle = || Some(PeerHandle(peer.clone()));
    let call = |state: &mut SessionState, id: u32, name: &str, args: Value| {
        send(
            state,
            handle(),
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": name, "arguments": args, "_meta": {"progressToken": "p-1"}}}),
        )
    };
    let r = call(&mut state, 3, "test_tool_with_logging", json!({}));
    assert_eq!(r["result"]["isError"], false);
    call(&mut state, 4, "test_tool_with_progress", json!({}));
    let r = call(&mut state, 5, "test_sampling", json!({"prompt": "ping?"}));
    assert_eq!(r["result"]["content"][0]["text"], "LLM response: pong");
    let r = call(
        &mut state,
        6,
        "test_elicitation",
        json!({"message": "who?"}),
    );
    assert!(r["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("ada"));
    call(
        &mut state,
        7,
        "test_elicitation_sep1034_defaults",
        json!({}),
    );
    call(&mut state, 8, "test_elicitation_sep1330_enums", json!({}));

    let sent = peer.sent.lock().unwrap();
    let methods: Vec<&str> = sent.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(
        methods,
        [
            "notifications/message",
            "notifications/message",
            "notifications/message",
            "notifications/progress",
            "notifications/progress",
            "notifications/progress",
            "sampling/createMessage",
            "elicitation/create",
            "elicitation/create",
            "elicitation/create",
        ]
    );
    let progress: Vec<&Value> = sent[3..6].iter().map(|(_, p)| &p["progress"]).collect();
    assert_eq!(progress, [&json!(0.0), &json!(50.0), &json!(100.0)]);
    assert!(sent[3..6].iter().all(|(_, p)| p["progressToken"] == "p-1"));
}
