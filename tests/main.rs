//! home-mcp's integration tests, one binary (`cargo test --test integration`), one harness
//! (`support`). Each module below is one area of the product, tested from outside where the
//! area has an outside: the simulator driven over its HTTP API, the server over its sockets.

mod support;

mod access;
mod admin;
mod admin_page;
mod audio;
mod auth;
mod batch;
mod blinds;
mod cache;
mod categories;
mod cli;
mod climate;
mod command_limits;
mod command_urls;
mod confirm;
mod conformance;
mod dashboard;
mod device_actions;
mod edge;
mod edge_app;
mod faults;
mod fixture_commands;
mod harness;
mod health_access;
mod keys;
mod lights;
mod link;
mod live;
mod live_link;
mod mcp_http;
mod mcp_stdio;
mod metrics;
mod oauth;
mod output_schemas;
mod packaging;
mod prompts;
mod rate_budgets;
mod read_paths;
mod regressions;
mod resolve;
mod resources;
mod rest;
mod security;
mod sim;
mod sse_legacy;
mod streams;
mod structure;
mod summary;
mod token;
mod tool_arguments;
mod tools;
mod workflows;
mod ws;
