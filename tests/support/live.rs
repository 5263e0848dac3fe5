//! The live state of an in-process house: the simulator behind an `App` driven over its own
//! HTTP API, state UUIDs by name, and waiting for an event on the change bus.

use home_mcp::app::App;
use home_mcp::home::{Event, Subscription};

use super::drive::MiniserverApi;
use super::wait::{wait_until, PATIENCE};

/// The HTTP API of the demo app's simulator (`--demo`), to drive it as a wall button would.
pub fn api(app: &App) -> MiniserverApi {
    let (_, server) = app.simulator.as_ref().expect("demo has a simulator");
    MiniserverApi::demo(server.addr())
}

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

/// The next event on `sub` that `want` accepts, within [`PATIENCE`]; fails with the last
/// few events it skipped.
pub fn next_event(sub: &Subscription, what: &str, mut want: impl FnMut(&Event) -> bool) -> Event {
    let mut skipped: Vec<Event> = Vec::new();
    wait_until(what, PATIENCE, || {
        while let Some(e) = sub.try_recv() {
            if want(&e) {
                return Ok(e);
            }
            if skipped.len() == 8 {
                skipped.remove(0);
            }
            skipped.push(e);
        }
        Err(format!("{skipped:?}"))
    })
}
