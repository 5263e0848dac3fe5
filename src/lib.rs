//! home-mcp, a small synchronous MCP server for the Loxone Miniserver, is built in layers,
//! lowest first; each top-level module imports only from layers numbered lower than its own
//! (`tests/module_cycles.py --check` reads this list; CI fails on an import that climbs or
//! stays in its layer, on a circle, and on a module the list does not place):
//! 1. base utilities that know no feature: [`time`], [`logging`], [`memory`], [`ratelimit`],
//!    [`metrics`] (the registry; the wiring names the tools), [`systemd`], [`upgraded`],
//!    [`files`], [`json`] (bounded JSON), [`sync`] (the mutexes' one rule);
//! 2. the home model, controller-independent: [`home`]; the spec's error object: [`error`];
//! 3. the Loxone adapter and the MCP protocol core: [`loxone`], [`mcp`];
//! 4. the Miniserver simulator, the audit log and the workflow store: [`sim`], [`audit`],
//!    [`workflow`];
//! 5. API keys, the auth gate, OAuth and the `keys` command: [`auth`];
//! 6. the tool catalogue: [`tools`];
//! 7. resources, which run tools: [`resources`];
//! 8. prompts, which embed resources: [`prompts`];
//! 9. the house's MCP handler, one dispatcher over tools, resources and prompts: [`dispatch`];
//! 10. the dashboard: [`dashboard`];
//! 11. transports: [`http`], [`stdio`];
//! 12. the configuration, which assembles each part's own settings: [`config`];
//! 13. wiring: [`app`] (starts the parts) and [`check`] (`home-mcp check`, a set-up checked
//!     with the same parts before the service runs it).
//!
//! A request flows down them: transport -> auth gate -> MCP core -> [`dispatch`] -> tool,
//! resource or prompt -> [`home`] model -> [`loxone`] client. [`sim`] speaks the real Loxone
//! HTTP and WebSocket protocol, for `--demo` and the tests.

pub mod app;
pub mod audit;
pub mod auth;
pub mod check;
pub mod config;
pub mod dashboard;
pub mod dispatch;
pub mod error;
pub mod files;
pub mod home;
pub mod http;
pub mod json;
pub mod logging;
pub mod loxone;
pub mod mcp;
pub mod memory;
pub mod metrics;
pub mod prompts;
pub mod ratelimit;
pub mod resources;
pub mod sim;
pub mod stdio;
pub mod sync;
pub mod systemd;
pub mod time;
pub mod tools;
pub mod upgraded;
pub mod workflow;
