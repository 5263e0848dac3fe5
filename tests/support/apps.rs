//! The in-process demo house with a configuration of the test's choosing (the plain
//! [`super::house::demo`] uses [`super::house::test_config`]).

use home_mcp::app::App;
use home_mcp::config::{Config, LiveMode};
use home_mcp::tools::HomeTools;

/// The demo house started with `config`.
pub fn demo_with(config: &Config) -> (App, HomeTools) {
    let app = App::start(config, true).expect("demo starts");
    let tools = HomeTools::new(app.house.clone());
    (app, tools)
}

/// The demo house ([`super::house::test_config`]) that keeps its values by HTTP polling only,
/// without the WebSocket link: named states such as targets stay unknown unless the test
/// sets them, whatever the timing.
pub fn demo_polling() -> (App, HomeTools) {
    let mut config = super::house::test_config();
    config.miniserver_live = LiveMode::Polling;
    demo_with(&config)
}
