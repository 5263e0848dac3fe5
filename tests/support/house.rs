//! Helpers shared by the tool tests: the demo house (simulator + real client) and calls that
//! assert the envelope shape of success, tool errors and JSON-RPC errors.

use serde_json::Value;

use home_mcp::app::App;
use home_mcp::config::{Config, LiveMode};
use home_mcp::mcp::{CallToolResult, Content, Handler, RequestContext, RpcError};
use home_mcp::sim::Simulator;
use home_mcp::tools::HomeTools;

/// The default configuration, with the outbound command limit (6 commands per control per
/// 10 s) raised: the tool tests drive one control through many states within a second on
/// purpose. The limit itself is tested with its defaults in tests/command_limits.rs.
pub fn test_config() -> Config {
    let mut config = Config::default();
    config.command_limits.per_control = 1000;
    config.command_limits.total = 10_000;
    config
}

/// The whole server on the embedded demo house (`App::start` with `--demo`: simulator, client,
/// live link, poller) with [`test_config`], and its tools; both stop when dropped.
pub fn demo() -> (App, HomeTools) {
    demo_with(&test_config())
}

/// The demo house started with `config`.
pub fn demo_with(config: &Config) -> (App, HomeTools) {
    let app = App::start(config, true).expect("demo starts");
    let tools = HomeTools::new(app.house.clone());
    (app, tools)
}

/// The demo house ([`test_config`]) that keeps its values by HTTP polling only,
/// without the WebSocket link: named states such as targets stay unknown unless the test
/// sets them, whatever the timing.
pub fn demo_polling() -> (App, HomeTools) {
    let mut config = test_config();
    config.miniserver_live = LiveMode::Polling;
    demo_with(&config)
}

/// The demo app's in-process simulator (its state and request log); fails for an app that is
/// not a demo.
pub fn sim(app: &App) -> &Simulator {
    &app.simulator.as_ref().expect("demo has a simulator").0
}

/// Calls tool `name` with `args` (a JSON object) as an MCP client would (protocol 2025-06-18,
/// transport `test`), with a key whose owner lets the model confirm alarm and house-wide
/// actions (`confirm: true`; who confirms is tested in `confirm.rs`); the result or the
/// JSON-RPC error as is.
pub fn call(tools: &HomeTools, name: &str, args: Value) -> Result<CallToolResult, RpcError> {
    let Value::Object(map) = args else {
        panic!("args must be an object")
    };
    let ctx = RequestContext {
        session_id: None,
        protocol_version: "2025-06-18".into(),
        transport: "test",
        caller: Some(home_mcp::mcp::Caller {
            key_name: "test (model confirms)".into(),
            model_confirms: true,
            ..home_mcp::mcp::Caller::default()
        }),
        ..RequestContext::default()
    };
    tools.call_tool(name, map, &ctx)
}

/// A tool result's first content as JSON (the envelope); fails when it is not JSON text.
pub fn text(r: &CallToolResult) -> Value {
    let Content::Text { text } = &r.content[0] else {
        panic!("text content expected, got {:?}", r.content[0])
    };
    serde_json::from_str(text).expect("text content is JSON")
}

/// Calls a tool that must succeed; returns the envelope's `data`.
pub fn ok(tools: &HomeTools, name: &str, args: Value) -> Value {
    let r = call(tools, name, args).expect("no JSON-RPC error");
    let t = text(&r);
    assert!(!r.is_error, "{name} failed: {t}");
    assert_eq!(t["status"], "success");
    assert!(t["timestamp"].as_str().unwrap().ends_with('Z'));
    assert_eq!(
        r.structured_content.as_ref(),
        Some(&t),
        "structuredContent mirrors the text"
    );
    t["data"].clone()
}

/// Calls a tool that must fail as a tool result; returns the envelope's `error`.
pub fn tool_error(tools: &HomeTools, name: &str, args: Value) -> Value {
    let r = call(tools, name, args).expect("no JSON-RPC error");
    assert!(r.is_error, "{name} should fail");
    let t = text(&r);
    assert_eq!(t["status"], "error");
    t["error"].clone()
}

/// Calls a tool that must be refused with JSON-RPC -32602 (invalid params); its message.
pub fn invalid_params(tools: &HomeTools, name: &str, args: Value) -> String {
    match call(tools, name, args) {
        Err(e) => {
            assert_eq!(e.code, -32602, "{e:?}");
            e.message
        }
        Ok(r) => panic!("expected -32602, got {:?}", text(&r)),
    }
}

/// The text of a structure file from `tests/fixtures` (real Loxone samples).
pub fn fixture_text(file: &str) -> String {
    let path = format!("{}/tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A house on a simulated Miniserver that serves a structure file, reached with the real
/// HTTP client: no live link or poller threads (tests that need them start an `App`).
/// Fields drop in order: tools and house, then the server, then the simulator.
pub struct SimHouse {
    pub tools: HomeTools,
    pub house: std::sync::Arc<home_mcp::home::House>,
    pub server: home_mcp::sim::SimServer,
    pub sim: std::sync::Arc<Simulator>,
}

/// [`SimHouse`] for the fixture file `file`.
pub fn fixture_house(file: &str) -> SimHouse {
    sim_house(&fixture_text(file))
}

/// [`SimHouse`] serving `text` as its structure file (user/password `demo`/`demo`).
pub fn sim_house(text: &str) -> SimHouse {
    use std::sync::Arc;
    let sim = Arc::new(
        Simulator::new(text, None, home_mcp::sim::SimConfig::default())
            .expect("the simulator takes the structure file"),
    );
    let server = home_mcp::sim::SimServer::start(sim.clone(), "127.0.0.1:0").unwrap();
    let ms = home_mcp::config::MiniserverConfig {
        base_url: server.base_url(),
        user: home_mcp::sim::DEMO_USER.into(),
        password: home_mcp::sim::DEMO_PASSWORD.into(),
    };
    let client = home_mcp::loxone::client::Client::new(&ms, &Config::default().miniserver_timeouts);
    let house = Arc::new(home_mcp::home::House::new(
        home_mcp::loxone::structure::parse_structure(text).expect("the fixture parses"),
        Arc::new(client),
        Config::default().miniserver_timeouts.value_max_age,
    ));
    SimHouse {
        tools: HomeTools::new(house.clone()),
        house,
        server,
        sim,
    }
}

/// The UUID of the control `name` in `room` of the app's house; fails when it is not exactly
/// one control.
pub fn uuid_of(app: &App, name: &str, room: &str) -> String {
    app.house
        .home()
        .resolve_control(name, Some(room), &|_| true)
        .unwrap_or_else(|e| panic!("{name} in {room}: {e:?}"))
        .uuid
        .clone()
}

/// The UUID of the one control named `name` in the app's house (any room).
pub fn uuid_named(app: &App, name: &str) -> String {
    let home = app.house.home();
    let found: Vec<_> = home.controls.iter().filter(|c| c.name == name).collect();
    assert_eq!(found.len(), 1, "controls named {name}: {}", found.len());
    found[0].uuid.clone()
}

/// The UUIDs of the controls of type `kind` (`"Jalousie"`, `"SmokeAlarm"`, ...) in the
/// structure file `doc` (LoxAPP3.json: `controls` keyed by UUID), in the file's key order;
/// their sub-controls are not included.
pub fn uuids_of_type(doc: &Value, kind: &str) -> Vec<String> {
    doc["controls"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, c)| c["type"] == kind)
        .map(|(uuid, _)| uuid.clone())
        .collect()
}
