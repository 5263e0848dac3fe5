//! The state of the link to the Miniserver, shared by the thread that owns the link (the
//! polling fallback `loxone::poll`, later the WebSocket reader) and everyone who reports on it
//! (`/health`, tools saying how old a value is).
//!
//! Writers call [`LinkStatus::set_mode`], [`LinkStatus::failed`] and [`LinkStatus::events`];
//! readers take a [`LinkSnapshot`], a cheap copy under a short mutex.

use std::sync::Mutex;
use std::time::SystemTime;

/// How the server currently follows the house.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkMode {
    /// Live: the Miniserver's WebSocket event stream.
    WebSocket,
    /// Degraded: primary values read over HTTP every few seconds; named states (target
    /// temperatures, moods, ...) are not updated.
    Polling,
    /// The Miniserver cannot be reached; values are as old as their `age_secs`.
    Disconnected,
}

impl LinkMode {
    /// Every mode, from live to down.
    pub const ALL: [LinkMode; 3] = [
        LinkMode::WebSocket,
        LinkMode::Polling,
        LinkMode::Disconnected,
    ];

    /// `websocket`, `polling` or `disconnected`.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkMode::WebSocket => "websocket",
            LinkMode::Polling => "polling",
            LinkMode::Disconnected => "disconnected",
        }
    }

    /// Whether this mode is below full live updates.
    pub fn is_degraded(self) -> bool {
        self != LinkMode::WebSocket
    }
}

/// A copy of the link state at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkSnapshot {
    pub mode: LinkMode,
    /// When the current mode began.
    pub since: SystemTime,
    /// The latest error of the link (kept after recovery, for `/health`).
    pub last_error: Option<String>,
    /// Times the link came back after being disconnected.
    pub reconnects: u64,
    /// State values received (events, or values read by a poll round).
    pub events_received: u64,
    /// When the latest value arrived.
    pub last_event_at: Option<SystemTime>,
}

impl LinkSnapshot {
    /// What the Prometheus exposition shows of the link (`home_mcp_miniserver_*`).
    pub fn metrics(&self) -> crate::metrics::LinkScrape {
        crate::metrics::LinkScrape {
            modes: LinkMode::ALL
                .iter()
                .map(|&m| (m.as_str(), m == self.mode))
                .collect(),
            reconnects: self.reconnects,
            events_received: self.events_received,
        }
    }

    /// `{"mode", "degraded", "since_secs", "last_error", "reconnects", "events_received",
    /// "last_event_secs"}`; ages in seconds before now.
    pub fn to_json(&self) -> serde_json::Value {
        let ago = |t: SystemTime| t.elapsed().map(|d| d.as_secs()).unwrap_or(0);
        serde_json::json!({
            "mode": self.mode.as_str(),
            "degraded": self.mode.is_degraded(),
            "since_secs": ago(self.since),
            "last_error": self.last_error,
            "reconnects": self.reconnects,
            "events_received": self.events_received,
            "last_event_secs": self.last_event_at.map(ago),
        })
    }
}

/// The shared link status. Starts `Disconnected` (nothing heard yet).
#[derive(Debug)]
pub struct LinkStatus {
    inner: Mutex<LinkSnapshot>,
}

impl Default for LinkStatus {
    fn default() -> Self {
        LinkStatus {
            inner: Mutex::new(LinkSnapshot {
                mode: LinkMode::Disconnected,
                since: SystemTime::now(),
                last_error: None,
                reconnects: 0,
                events_received: 0,
                last_event_at: None,
            }),
        }
    }
}

impl LinkStatus {
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy of the current state.
    pub fn snapshot(&self) -> LinkSnapshot {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The current mode.
    pub fn mode(&self) -> LinkMode {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).mode
    }

    /// The current mode and since when it holds (for the WebSocket: when this session
    /// connected, so a value pushed before it, in an earlier session, can be told apart).
    pub fn mode_since(&self) -> (LinkMode, SystemTime) {
        let s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        (s.mode, s.since)
    }

    /// The link works in `mode`. Coming back from `Disconnected` after an error counts as a
    /// reconnect; the same mode again changes nothing.
    pub fn set_mode(&self, mode: LinkMode) {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        Self::switch(&mut s, mode);
    }

    /// [`LinkStatus::set_mode`]`(Polling)`, unless the WebSocket is up: a polling round that
    /// began before the WebSocket connected must not mark the live link as polling (nothing
    /// would set it back while the WebSocket stays up).
    pub fn polling_unless_websocket(&self) {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if s.mode != LinkMode::WebSocket {
            Self::switch(&mut s, LinkMode::Polling);
        }
    }

    fn switch(s: &mut LinkSnapshot, mode: LinkMode) {
        if s.mode == mode {
            return;
        }
        if s.mode == LinkMode::Disconnected && s.last_error.is_some() {
            s.reconnects += 1;
        }
        log::info!("Miniserver link: {} -> {}", s.mode.as_str(), mode.as_str());
        s.mode = mode;
        s.since = SystemTime::now();
    }

    /// An HTTP request (a polling round, a structure check) found the Miniserver unreachable
    /// with `error`: mode `Disconnected` (since now, unless it already was), but not while the
    /// WebSocket is up. The live link alone decides that mode: a request that timed out while
    /// the Miniserver hung, answered late, must not demote a WebSocket that has come back
    /// (nothing else would set it back while it stays up). A hung Miniserver ends the
    /// WebSocket itself (no answer to its keepalive, [`LinkStatus::websocket_lost`]).
    pub fn failed(&self, error: &str) {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if s.mode == LinkMode::WebSocket {
            s.last_error = Some(error.to_string());
            return;
        }
        Self::disconnect(&mut s, error);
    }

    /// The WebSocket session ended with `error`: mode `Disconnected` until polling or the
    /// WebSocket reaches the Miniserver again.
    pub fn websocket_lost(&self, error: &str) {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        Self::disconnect(&mut s, error);
    }

    /// Mode `Disconnected` since now (unless it already was), with `error` as the last one.
    fn disconnect(s: &mut LinkSnapshot, error: &str) {
        if s.mode != LinkMode::Disconnected {
            log::warn!(
                "Miniserver link: {} -> disconnected: {error}",
                s.mode.as_str()
            );
            s.mode = LinkMode::Disconnected;
            s.since = SystemTime::now();
        }
        s.last_error = Some(error.to_string());
    }

    /// `n` values arrived at `at`.
    pub fn events(&self, n: u64, at: SystemTime) {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        s.events_received += n;
        s.last_event_at = Some(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transitions_count_reconnects() {
        let l = LinkStatus::new();
        assert_eq!(l.mode(), LinkMode::Disconnected);
        l.set_mode(LinkMode::Polling);
        assert_eq!(l.snapshot().reconnects, 0, "first connect is no reconnect");
        l.failed("refused");
        let s = l.snapshot();
        assert_eq!(s.mode, LinkMode::Disconnected);
        assert_eq!(s.last_error.as_deref(), Some("refused"));
        l.set_mode(LinkMode::Polling);
        l.set_mode(LinkMode::Polling);
        assert_eq!(l.snapshot().reconnects, 1);
        l.events(3, SystemTime::now());
        let j = l.snapshot().to_json();
        assert_eq!(j["mode"], "polling");
        assert_eq!(j["degraded"], true);
        assert_eq!(j["events_received"], 3);
    }

    #[test]
    fn a_late_polling_round_does_not_demote_the_websocket() {
        let l = LinkStatus::new();
        l.polling_unless_websocket();
        assert_eq!(l.mode(), LinkMode::Polling);
        l.set_mode(LinkMode::WebSocket);
        l.polling_unless_websocket();
        assert_eq!(l.mode(), LinkMode::WebSocket);
        l.websocket_lost("cable");
        l.polling_unless_websocket();
        assert_eq!(l.mode(), LinkMode::Polling);
    }

    #[test]
    fn a_late_http_failure_does_not_demote_the_websocket() {
        let l = LinkStatus::new();
        l.set_mode(LinkMode::WebSocket);
        l.failed("a request sent during the hang timed out");
        let s = l.snapshot();
        assert_eq!(s.mode, LinkMode::WebSocket);
        assert_eq!(
            s.last_error.as_deref(),
            Some("a request sent during the hang timed out")
        );
        l.websocket_lost("no answer to keepalive");
        assert_eq!(l.mode(), LinkMode::Disconnected);
    }
}
