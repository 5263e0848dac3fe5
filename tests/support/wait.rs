//! Waiting for a condition instead of sleeping: every wait has a deadline that only bounds
//! "it happens at all" (at least ten times what it takes on an idle machine), and a wait that
//! runs out fails with the last thing it saw.

use std::fmt::Debug;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

/// The deadline for anything a test waits on: generous, so a busy machine (two cores running
/// a dozen busy loops and sixteen test threads) still makes it. It only bounds a failure.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// Polls `probe` until it returns `Ok(T)`, then returns that value. `Err(seen)` describes
/// what the probe saw instead; when `deadline` passes, the test fails naming `what` and the
/// last `seen`. Polls every 10 ms at first, backing off to 100 ms.
pub fn wait_until<T, S: Debug>(
    what: &str,
    deadline: Duration,
    mut probe: impl FnMut() -> Result<T, S>,
) -> T {
    let end = Instant::now() + deadline;
    let mut pause = Duration::from_millis(10);
    loop {
        match probe() {
            Ok(v) => return v,
            Err(seen) => {
                if Instant::now() >= end {
                    panic!("timed out after {deadline:?} waiting for {what}; last seen: {seen:?}");
                }
            }
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// [`wait_until`] for a yes/no condition with [`PATIENCE`]; `seen` describes the state
/// for the failure message.
pub fn wait_for<S: Debug>(what: &str, mut seen: impl FnMut() -> (bool, S)) {
    wait_until(what, PATIENCE, || match seen() {
        (true, _) => Ok(()),
        (false, s) => Err(s),
    })
}

/// [`wait_until`] for a plain condition with [`PATIENCE`].
pub fn wait_true(what: &str, mut cond: impl FnMut() -> bool) {
    wait_until(
        what,
        PATIENCE,
        || if cond() { Ok(()) } else { Err("false") },
    )
}

/// The next message on `rx` that `want` accepts, within [`PATIENCE`]; fails with the
/// messages it skipped (the last few) when none comes.
pub fn recv_matching<T: Debug>(
    rx: &Receiver<T>,
    what: &str,
    mut want: impl FnMut(&T) -> bool,
) -> T {
    recv_map(rx, what, |m| want(&m).then_some(m))
}

/// The first message on `rx` that `find` maps to `Some`, mapped, within [`PATIENCE`] (the
/// deadline holds however many other messages come); fails with the messages it skipped (the
/// last few) when none comes.
pub fn recv_map<T: Debug, U>(
    rx: &Receiver<T>,
    what: &str,
    mut find: impl FnMut(T) -> Option<U>,
) -> U {
    let end = Instant::now() + PATIENCE;
    let mut skipped: Vec<String> = Vec::new();
    loop {
        let left = end.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(m) => {
                let seen = format!("{m:?}");
                if let Some(v) = find(m) {
                    return v;
                }
                if skipped.len() == 8 {
                    skipped.remove(0);
                }
                skipped.push(seen);
            }
            Err(e) => panic!("no {what} within {PATIENCE:?} ({e}); last skipped: {skipped:?}"),
        }
    }
}

/// Runs `f` on a thread of its own and returns its result; fails naming `what` when it has
/// not finished within [`PATIENCE`] (a hang becomes a failure, and the test goes on).
/// A panic in `f` is passed on.
pub fn finishes<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let handle = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(PATIENCE) {
        Ok(v) => v,
        Err(crossbeam_channel::RecvTimeoutError::Disconnected) => match handle.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the thread sends before it ends"),
        },
        Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
            panic!("{what} did not finish within {PATIENCE:?}")
        }
    }
}

/// A deadline for a loop that reads a stream message by message (a WebSocket, a reader with
/// a read timeout), checked at every message: a stream of unwanted messages cannot hold a
/// wait past [`PATIENCE`]. For a channel, use [`recv_matching`].
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
