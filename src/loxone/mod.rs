//! The Miniserver adapter: reads the structure file into the [`crate::home`] model
//! ([`structure`]) and talks Loxone HTTP to a Miniserver ([`client`]; secured commands hashed
//! by [`secured`]); [`ws`] is the WebSocket wire format (headers, event tables) and a
//! blocking reader; [`message_center`] reads the Message Center and the pushed notifications
//! into the house's alerts. It knows nothing of MCP.

pub mod answer;
pub mod backoff;
pub mod camera;
pub mod client;
pub mod commands;
pub mod config;
pub mod crypto;
pub mod feed;
pub mod live;
pub mod message_center;
pub mod picture;
pub mod poll;
pub mod secured;
pub mod stats;
pub mod structure;
pub mod token;
pub mod ws;

/// The HTTP agent of every request to the Miniserver and its cameras: these deadlines, statuses
/// as answers (not errors), no redirects followed (a redirect would take the credentials
/// elsewhere), no proxy from the environment, our user agent.
pub(crate) fn agent(
    connect: Option<std::time::Duration>,
    whole: std::time::Duration,
) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_connect(connect)
        .timeout_global(Some(whole))
        .http_status_as_error(false)
        .max_redirects(0)
        .proxy(None)
        .user_agent(concat!("home-mcp/", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}
