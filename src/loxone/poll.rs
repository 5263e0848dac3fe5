//! The HTTP polling fallback: a thread that follows the house when the WebSocket event stream
//! cannot be used, clearly reported as degraded ([`LinkMode::Polling`]).
//!
//! Every `interval` it reads the primary value of each top-level control that has one
//! (`jdev/sps/io/{uuid}`, one request at a time: it is a Pi, and so is the Miniserver's
//! patience) and records it in the house ([`House::record`]), which publishes every change on
//! the bus. Only primary values can be had this way; named states (target temperatures, moods)
//! need the WebSocket. Controls the Miniserver answers with an error (no primary value) are
//! skipped until the structure changes.
//!
//! Every `structure_check` it reads `jdev/sps/LoxAPPversion3`; when it differs from the
//! loaded structure file's `lastModified`, it downloads and parses the new file, logs its
//! warnings ([`log_warnings`]), replaces the house's model ([`House::replace_home`]) and
//! publishes [`Event::StructureChanged`]. A file that cannot be read at all (a
//! [`super::structure::StructureError`]) leaves the model as it was and is remembered
//! ([`House::reject_structure`]): it is not downloaded again while the Miniserver answers the
//! same version, only once the version changes. A download that fails (the Miniserver out of
//! reach) is tried again at the next check.
//!
//! Link status: a round that reaches the Miniserver sets [`LinkMode::Polling`] (counting a
//! reconnect after a failure); an unreachable Miniserver (refused, timeout, credentials,
//! lock-out) sets [`LinkMode::Disconnected`] with the error and ends the round (one timeout,
//! not one per control); the next try is one interval later. While the link is in
//! [`LinkMode::WebSocket`] (another thread owns the live stream) the value rounds pause, the
//! structure watch goes on.
//!
//! Shutdown: [`Poller::stop`] or dropping the [`Poller`] wakes the thread at once (a crossbeam
//! channel, never a long sleep); it ends after the request under way (bounded by the client's
//! request timeout). `stop` waits for that, dropping does not.

use std::collections::HashSet;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crossbeam_channel::{bounded, RecvTimeoutError, Sender, TryRecvError};

use super::client::Client;
use super::structure::{log_warnings, parse_structure_bytes};
use crate::home::{Event, House, LinkMode, Primary, Source};

/// How often the polling thread works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollConfig {
    /// Between value rounds (`[miniserver] poll_interval_secs`, default 5 s).
    pub interval: Duration,
    /// Between structure version checks (`[miniserver] structure_check_secs`, default 60 s).
    pub structure_check: Duration,
}

impl Default for PollConfig {
    fn default() -> Self {
        PollConfig {
            interval: Duration::from_secs(5),
            structure_check: Duration::from_secs(60),
        }
    }
}

/// The running polling thread. Dropping it stops it.
pub struct Poller {
    stop: Option<Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl Poller {
    /// Starts the thread (`home-poll`). The first value round runs at once. Errors only when
    /// the OS cannot start a thread.
    pub fn start(
        house: Arc<House>,
        client: Arc<Client>,
        config: PollConfig,
    ) -> std::io::Result<Poller> {
        let (tx, rx) = bounded::<()>(1);
        let handle = std::thread::Builder::new()
            .name("home-poll".into())
            .spawn(move || {
                let mut p = Polling {
                    house,
                    client,
                    no_primary: HashSet::new(),
                };
                let mut next_check = Instant::now() + config.structure_check;
                loop {
                    let stop_asked = || !matches!(rx.try_recv(), Err(TryRecvError::Empty));
                    if p.house.link().mode() != LinkMode::WebSocket && !p.round(&stop_asked) {
                        return;
                    }
                    if Instant::now() >= next_check {
                        p.check_structure();
                        next_check = Instant::now() + config.structure_check;
                    }
                    let wait = config
                        .interval
                        .min(next_check.saturating_duration_since(Instant::now()));
                    match rx.recv_timeout(wait.max(Duration::from_millis(10))) {
                        Err(RecvTimeoutError::Timeout) => {}
                        _ => return,
                    }
                }
            })?;
        Ok(Poller {
            stop: Some(tx),
            handle: Some(handle),
        })
    }

    /// Stops the thread and waits for it (at most the request under way, bounded by the
    /// client's request timeout).
    pub fn stop(mut self) {
        // Dropping the sender disconnects the channel: the thread wakes at once.
        self.stop.take();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Poller {
    /// Tells the thread to stop without waiting for it: a request under way to a Miniserver
    /// that went away may hang until the request timeout, and dropping must not.
    fn drop(&mut self) {
        self.stop.take();
    }
}

struct Polling {
    house: Arc<House>,
    client: Arc<Client>,
    /// Controls the Miniserver answered with an error: not asked again until a reload.
    no_primary: HashSet<String>,
}

impl Polling {
    /// One value round. Returns `false` when shutdown was asked for.
    fn round(&mut self, stop_asked: &dyn Fn() -> bool) -> bool {
        let home = self.house.home();
        let mut read = 0u64;
        let mut reached = false;
        for c in home.controls.iter().filter(|c| Primary::has_value(c)) {
            if stop_asked() {
                return false;
            }
            // A round that began before the WebSocket connected ends when it does: its
            // initial tables bring every value, and reading on would only add requests.
            if self.house.link().mode() == LinkMode::WebSocket {
                break;
            }
            if self.no_primary.contains(&c.uuid) {
                continue;
            }
            match self.house.refresh(c, Source::Poll) {
                Ok(_) => {
                    read += 1;
                    reached = true;
                }
                Err(e) if e.is_unreachable() => {
                    self.house.link().failed(&e.to_string());
                    return true;
                }
                Err(e) => {
                    reached = true;
                    log::debug!("poll: {} ({}) has no primary value: {e}", c.name, c.uuid);
                    self.no_primary.insert(c.uuid.clone());
                }
            }
        }
        if reached || home.controls.is_empty() {
            // Not when the WebSocket connected during this round: it stays the live link.
            self.house.link().polling_unless_websocket();
        }
        if read > 0 {
            self.house.link().events(read, SystemTime::now());
        }
        true
    }

    /// Compares the Miniserver's structure version with the loaded one; reloads on change.
    fn check_structure(&mut self) {
        let known = self.house.home().last_modified.clone();
        let version = match self.client.structure_version() {
            Ok(v) => v,
            Err(e) => {
                let e = crate::home::ControllerError::from(e);
                if e.is_unreachable() {
                    self.house.link().failed(&e.to_string());
                } else {
                    log::warn!("structure version check failed: {e}");
                }
                return;
            }
        };
        if version.trim() == known.trim() {
            return;
        }
        let rejected = self.house.rejected_structure();
        if rejected.is_some_and(|r| r.version.trim() == version.trim()) {
            // Read and found unreadable before: not fetched again until the version changes.
            return;
        }
        log::info!("structure file changed ({known} -> {version}); reloading");
        let bytes = match self.client.structure_file() {
            Ok(b) => b,
            Err(e) => {
                log::warn!("structure reload failed, keeping the old model: {e}");
                return;
            }
        };
        let home = match parse_structure_bytes(&bytes) {
            Ok(h) => h,
            Err(e) => {
                log::warn!(
                    "structure file {version} cannot be read, keeping the old model (not \
                     fetched again until its version changes): {e}"
                );
                self.house.reject_structure(&version, &e.to_string());
                return;
            }
        };
        log_warnings(&home);
        log::info!(
            "structure file {}: {} rooms, {} controls, {} warnings",
            home.last_modified,
            home.rooms.len(),
            home.controls.len(),
            home.warnings.len()
        );
        let new_version = home.last_modified.clone();
        self.house.replace_home(home);
        self.no_primary.clear();
        self.house.bus().publish(Event::StructureChanged {
            old_version: known,
            new_version,
        });
    }
}
