//! The whole server (`App`: client, poller, live link) started on a simulated Miniserver that
//! serves one real structure file from `tests/fixtures/`, exactly as on a real Miniserver
//! (api info, structure file over HTTP). For a house without the app's threads, see
//! [`super::house::fixture_house`].

use std::sync::Arc;

use home_mcp::app::App;
use home_mcp::config::{Config, MiniserverConfig};
use home_mcp::sim::{SimConfig, SimServer, Simulator, DEMO_PASSWORD, DEMO_USER};
use home_mcp::tools::HomeTools;

use super::house::fixture_text;

/// Every real structure file in `tests/fixtures/` (see `tests/fixtures/SOURCES.md`).
pub const FIXTURES: &[&str] = &[
    "Smarteon-loxone-client-kotlin-sample-app.json",
    "Smarteon-loxone-java-showroom.json",
    "SolarNetwork-solarnetwork-loxone-evident-test.json",
    "TheJack75-Loxone.NET-uk-demo-miniserver.json",
];

/// The server on a simulated Miniserver serving one fixture structure file. Fields drop in
/// this order: the tools and the app (its link and poller) before the server, the server
/// before the simulator.
pub struct FixtureApp {
    pub name: &'static str,
    pub tools: HomeTools,
    pub app: App,
    pub server: SimServer,
    pub sim: Arc<Simulator>,
}

/// [`FixtureApp`] for the fixture file `name`, the simulator starting from `values`
/// (`{uuid: {state: value}}` as JSON text) or from its defaults.
pub fn fixture_app(name: &'static str, values: Option<&str>) -> FixtureApp {
    let json = fixture_text(name);
    let sim = Arc::new(
        Simulator::new(&json, values, SimConfig::default())
            .expect("the simulator takes the structure file"),
    );
    let server = SimServer::start(sim.clone(), "127.0.0.1:0").expect("simulator listens");
    let config = Config {
        miniserver: Some(MiniserverConfig {
            base_url: server.base_url(),
            user: DEMO_USER.into(),
            password: DEMO_PASSWORD.into(),
        }),
        ..Config::default()
    };
    let app = App::start(&config, false).expect("server starts on the simulated fixture");
    let tools = HomeTools::new(app.house.clone());
    FixtureApp {
        name,
        tools,
        app,
        server,
        sim,
    }
}
