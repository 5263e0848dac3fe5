//! The one test harness: every integration test module takes its helpers from here.
//!
//! - [`wait`]: `wait_until(what, deadline, probe)` and friends (`recv_matching`, `finishes`,
//!   a `Deadline` checked per message of a stream): conditions, not fixed sleeps; a wait
//!   that runs out fails with the last thing it saw.
//! - [`net`]: free/closed loopback ports and a raw HTTP/1.1 client.
//! - [`oauth`]: a hand-made OAuth client (registration, the consent form posted as a browser
//!   would, token requests) with the RFC 7636 PKCE example values.
//! - [`drive`]: the simulated Miniserver driven and read over its own HTTP API, as a wall
//!   button or the Loxone app would (the independent oracle of a test).
//! - [`server`]: a simulated Miniserver on a port, and the real `home-mcp serve` binary
//!   against it.
//! - [`mcp`]: an MCP client over Streamable HTTP (JSON and SSE answers).
//! - [`process`]: the real binary as a child process, killed on drop.
//! - [`house`]: the demo house in-process (simulator + real client) and tool calls that
//!   check the envelope shapes, for tests of one tool's logic.
//! - [`edge`]: the contract of the HTTP edge's attack tests: a keyed server under the unit's
//!   descriptor limit, `/health` and a keyed client answered within 2 s, RSS bounded.
//! - [`gate`]: key records and a one-shot raw HTTP request.
//! - [`live`]: the demo app's simulator over HTTP, state UUIDs, the next bus event.
//! - [`app_server`]: the demo app behind a real `HttpServer` on a loopback port, with a gate
//!   over in-memory keys.
//! - [`keys_cli`]: the `keys` command against a key store file.
//! - [`unreachable`]: quick client timeouts and the demo house with its Miniserver out of reach.
//! - [`wire`]: the commands a `Simulator` received (its request log), for in-process houses.
//! - [`fixture_app`]: the whole server on a simulator serving a real structure file.
//! - [`sse`]: a server on the fake handler and an incremental SSE reader for the stream tests.
//! - [`fake_mcp`]: the one fake MCP handler (and recording client peer) of transport tests.
//! - [`demo`]: `serve --demo` as a child, what it prints (pages, admin key) read from stdout.
//! - [`conn`]: a keep-alive HTTP/1.1 connection, several requests on one socket.
//! - [`between`]: a drifting value shown by a tool, between the simulator's readings
//!   before and after the call.
//! - [`picture`]: what a simulated camera drew into a picture (its timestamp), read back
//!   from the pixels after scaling.
//! - [`find`]: controls of a `Home` by name and room, a room's room controller, one device's
//!   entry in what `list_devices` answers.

pub mod app_server;
pub mod between;
pub mod conn;
pub mod demo;
pub mod drive;
pub mod edge;
pub mod fake_mcp;
pub mod find;
pub mod fixture_app;
pub mod gate;
pub mod house;
pub mod keys_cli;
pub mod live;
pub mod mcp;
pub mod net;
pub mod oauth;
pub mod picture;
pub mod process;
pub mod server;
pub mod sse;
pub mod stats;
/// An HTTPS listener for `home-mcp check`'s certificate test (rustls comes with the `tls`
/// feature only).
#[cfg(feature = "tls")]
pub mod tls;
pub mod unreachable;
pub mod wait;
pub mod wire;

pub use house::*;
pub use net::closed_port;
pub use wait::{recv_matching, wait_for, wait_true, wait_until, PATIENCE};
