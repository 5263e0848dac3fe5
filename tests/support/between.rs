//! A value that moves while the test runs (the simulated room temperature drifts toward its
//! target) checked against the simulator read just before and just after the tool call that
//! shows it.

use std::fmt::Display;
use std::time::Duration;

use home_mcp::app::App;
use home_mcp::config::LiveMode;
use home_mcp::tools::HomeTools;

/// The demo house ([`super::house::test_config`]) polling only (named states such as targets
/// stay unknown unless the test sets them, whatever the timing), with `value_max_age` 0: a
/// value a tool shows is read from the Miniserver during the call, never a polled one from
/// before the test's first reading, so [`assert_between`] holds.
pub fn demo_reading_at_call() -> (App, HomeTools) {
    let mut config = super::house::test_config();
    config.miniserver_live = LiveMode::Polling;
    config.miniserver_timeouts.value_max_age = Duration::ZERO;
    super::house::demo_with(&config)
}

/// Rounds to the tools' resolution of one decimal.
fn one_decimal(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Asserts that `value`, what a tool showed of a quantity that only moves one way while the
/// test runs, lies between `before` and `after` (inclusive): the simulator's readings just
/// before and just after the call. Compared at the tool's resolution of one decimal
/// (rounding keeps the order).
pub fn assert_between(what: impl Display, value: f64, before: f64, after: f64) {
    let (lo, hi) = (before.min(after), before.max(after));
    let v = one_decimal(value);
    assert!(
        one_decimal(lo) <= v && v <= one_decimal(hi),
        "{what}: {value} is not between the simulator's {before} before the call and {after} \
         after it"
    );
}
