//! A deadline for a loop that reads a stream message by message (a WebSocket, a reader with
//! a read timeout), checked at every message: a stream of unwanted messages cannot hold a
//! wait past [`PATIENCE`]. For a channel, use [`super::wait::recv_matching`].

use std::fmt::Debug;
use std::time::Instant;

use super::wait::PATIENCE;

/// [`PATIENCE`] from now, for waiting on `what`.
#[derive(Debug)]
pub struct Deadline {
    what: String,
    end: Instant,
}

impl Deadline {
    /// [`PATIENCE`] from now.
    pub fn new(what: &str) -> Self {
        Deadline {
            what: what.to_string(),
            end: Instant::now() + PATIENCE,
        }
    }

    /// Fails naming `what` and `seen` (the last thing seen) once the deadline has passed.
    pub fn check(&self, seen: impl Debug) {
        if Instant::now() >= self.end {
            panic!(
                "timed out after {PATIENCE:?} waiting for {}; last seen: {seen:?}",
                self.what
            );
        }
    }
}
