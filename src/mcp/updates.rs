//! Resource subscriptions: from "something changed" to `notifications/resources/updated`.
//!
//! [`spawn_notifier`] runs one thread that pulls [`Update`]s from a source (the home wires the
//! house's change bus in `crate::app`: each state change becomes the URIs it affects, a
//! structure reload becomes [`Update::ListChanged`]) and hands them to the [`McpServer`]:
//! `notifications/resources/updated {uri}` for every subscribed session with an outlet,
//! `notifications/resources/list_changed` for every session with an outlet, and
//! `notifications/message` for [`Update::Log`] to every session whose log level admits it.
//! Resource updates are
//! coalesced per URI by a [`Coalescer`]: at most one notification per URI per interval; a
//! burst sends the first at once and one more at the end of the interval.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::McpServer;

/// What the notifier learns from its source.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// These resource URIs changed.
    Uris(Vec<String>),
    /// The list of resources changed (structure reload).
    ListChanged,
    /// Changes were lost (the source lagged behind): any subscribed URI may have changed, so
    /// each is announced as updated.
    Resync,
    /// Something worth a log message happened: `notifications/message` to every session
    /// whose log level admits `level` ([`McpServer::notify_log`]); not coalesced.
    Log {
        level: super::LogLevel,
        logger: String,
        data: serde_json::Value,
    },
}

/// Rate limit per URI.
#[derive(Debug)]
pub struct Coalescer {
    interval: Duration,
    last_sent: HashMap<String, Instant>,
    held: BTreeSet<String>,
}

impl Coalescer {
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            last_sent: HashMap::new(),
            held: BTreeSet::new(),
        }
    }

    /// Takes a changed URI; returns it when it may be sent now (else it is held).
    pub fn offer(&mut self, uri: String, now: Instant) -> Option<String> {
        match self.last_sent.get(&uri) {
            Some(t) if now.duration_since(*t) < self.interval => {
                self.held.insert(uri);
                None
            }
            _ => {
                self.last_sent.insert(uri.clone(), now);
                Some(uri)
            }
        }
    }

    /// Held URIs whose interval has passed (they count as sent now).
    pub fn due(&mut self, now: Instant) -> Vec<String> {
        let interval = self.interval;
        let ready: Vec<String> = self
            .held
            .iter()
            .filter(|u| {
                self.last_sent
                    .get(*u)
                    .is_none_or(|t| now.duration_since(*t) >= interval)
            })
            .cloned()
            .collect();
        for u in &ready {
            self.held.remove(u);
            self.last_sent.insert(u.clone(), now);
        }
        // Forget URIs quiet for long, so the map stays small.
        self.last_sent
            .retain(|_, t| now.duration_since(*t) < interval * 8);
        ready
    }
}

/// What the notifier's source returns for one wait.
pub enum Next {
    Update(Update),
    /// Several updates from one event (resource URIs and a log message).
    Updates(Vec<Update>),
    /// Nothing within the wait.
    Idle,
    /// The source is gone: the notifier ends.
    Closed,
}

/// Starts the notifier thread. `next(wait)` blocks at most `wait` for the next update.
pub fn spawn_notifier(
    mcp: Arc<McpServer>,
    interval: Duration,
    mut next: impl FnMut(Duration) -> Next + Send + 'static,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("mcp-resource-updates".into())
        .spawn(move || {
            let mut coalescer = Coalescer::new(interval);
            let tick = (interval / 4).max(Duration::from_millis(10));
            loop {
                let updates = match next(tick) {
                    Next::Closed => return,
                    Next::Idle => Vec::new(),
                    Next::Update(u) => vec![u],
                    Next::Updates(list) => list,
                };
                for update in updates {
                    match update {
                        Update::ListChanged => {
                            let n = mcp.notify_list_changed();
                            log::debug!("resources list_changed sent to {n} sessions");
                        }
                        Update::Log {
                            level,
                            logger,
                            data,
                        } => {
                            mcp.notify_log(level, &logger, data);
                        }
                        update @ (Update::Uris(_) | Update::Resync) => {
                            let uris = match update {
                                Update::Uris(uris) => uris,
                                _ => mcp.subscribed_uris(),
                            };
                            let now = Instant::now();
                            for uri in uris {
                                if let Some(uri) = coalescer.offer(uri, now) {
                                    mcp.notify_resource_updated(&uri);
                                }
                            }
                        }
                    }
                }
                for uri in coalescer.due(Instant::now()) {
                    mcp.notify_resource_updated(&uri);
                }
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalesces_per_uri() {
        let mut c = Coalescer::new(Duration::from_millis(250));
        let t0 = Instant::now();
        assert_eq!(c.offer("a".into(), t0), Some("a".into()));
        assert_eq!(c.offer("b".into(), t0), Some("b".into()));
        assert_eq!(c.offer("a".into(), t0 + Duration::from_millis(10)), None);
        assert_eq!(c.offer("a".into(), t0 + Duration::from_millis(20)), None);
        assert!(c.due(t0 + Duration::from_millis(100)).is_empty());
        assert_eq!(
            c.due(t0 + Duration::from_millis(260)),
            vec!["a".to_string()]
        );
        assert!(c.due(t0 + Duration::from_millis(600)).is_empty());
    }
}
