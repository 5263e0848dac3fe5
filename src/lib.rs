//! home-mcp: a small, synchronous MCP server for the Loxone Miniserver.
//!
//! Data flows one way: transport ([`http`], [`stdio`]) -> [`mcp`] dispatch -> [`tools`] ->
//! [`home`] model -> [`loxone`] client. [`sim`] is a Miniserver simulator speaking the real
//! Loxone HTTP protocol, used by `--demo` and the tests. [`app`] wires the parts; [`check`]
//! (`home-mcp check`) checks a set-up with the same parts before the service runs it.

pub mod app;
pub mod audit;
pub mod auth;
pub mod check;
pub mod config;
pub mod dashboard;
pub mod dispatch;
pub mod home;
pub mod http;
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
pub mod systemd;
pub mod time;
pub mod tools;
pub mod upgraded;
pub mod workflow;
