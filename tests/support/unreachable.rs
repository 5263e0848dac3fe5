//! The Miniserver out of reach: a client with quick timeouts pointed at a loopback port where
//! nothing listens, and the demo house over it (answers from the structure file only).

use std::sync::Arc;
use std::time::Duration;

use home_mcp::config::{MiniserverConfig, Timeouts};
use home_mcp::home::{Home, House};
use home_mcp::loxone::client::Client;
use home_mcp::loxone::structure::parse_structure;
use home_mcp::sim::{DEMO_PASSWORD, DEMO_STRUCTURE, DEMO_USER};
use home_mcp::tools::HomeTools;

use super::net::closed_port;

/// Client timeouts short enough that a test against a dead or wrong Miniserver ends soon
/// (connect 0.5 s, request 2 s; values are remembered as by default). A refused connection
/// fails at once.
pub fn quick_timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_millis(500),
        request: Duration::from_secs(2),
        ..home_mcp::config::Config::default().miniserver_timeouts
    }
}

/// A Miniserver address where nothing listens (connections are refused), with the demo
/// credentials.
pub fn unreachable_miniserver() -> MiniserverConfig {
    MiniserverConfig {
        base_url: format!("http://127.0.0.1:{}", closed_port()),
        user: DEMO_USER.into(),
        password: DEMO_PASSWORD.into(),
    }
}

/// The demo house's structure file, parsed.
pub fn demo_home() -> Home {
    parse_structure(DEMO_STRUCTURE).expect("the demo structure parses")
}

/// The tools over the demo house whose Miniserver is out of reach
/// ([`unreachable_miniserver`] with [`quick_timeouts`]).
pub fn unreachable_demo() -> HomeTools {
    let client = Client::new(&unreachable_miniserver(), &quick_timeouts());
    HomeTools::new(Arc::new(House::new(
        demo_home(),
        Arc::new(client),
        quick_timeouts().value_max_age,
    )))
}
