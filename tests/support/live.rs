//! The live state of an in-process house: state UUIDs by name, the link live over its
//! WebSocket, and waiting for an event on the change bus. (The simulator behind an `App` is
//! driven with [`super::drive::MiniserverApi::of`].)

use home_mcp::app::App;
use home_mcp::home::{Event, LinkMode, Subscription};

use super::wait::{recv_matching, wait_until, PATIENCE};

/// The UUID of state `state` of the control `control` (a uuidAction) in the app's house.
pub fn state_uuid(app: &App, control: &str, state: &str) -> String {
    let home = app.house.home();
    let c = home
        .control(control)
        .unwrap_or_else(|| panic!("no control {control}"));
    c.state(state)
        .unwrap_or_else(|| panic!("{} has no state {state}", c.name))
        .to_string()
}

/// Waits (within [`PATIENCE`]) until the app's link to its Miniserver is live over the
/// WebSocket ([`LinkMode::WebSocket`]). The initial tables may still be arriving then.
pub fn wait_websocket(app: &App) {
    wait_until("the link live over its WebSocket", PATIENCE, || {
        match app.house.link().mode() {
            LinkMode::WebSocket => Ok(()),
            other => Err(other),
        }
    });
}

/// The next event on `sub` that `want` accepts, within [`PATIENCE`] (checked at every
/// event, so a stream of unwanted events cannot hold the wait past it); fails with the last
/// few events it skipped.
pub fn next_event(sub: &Subscription, what: &str, want: impl FnMut(&Event) -> bool) -> Event {
    recv_matching(sub.receiver(), what, want)
}
