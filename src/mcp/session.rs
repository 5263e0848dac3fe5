//! MCP sessions: the negotiated protocol version and the `initialized` flag of one client.
//!
//! stdio has one implicit session, held by the serve loop as a plain [`SessionState`]. Streamable
//! HTTP keeps many in a [`SessionStore`], keyed by the `Mcp-Session-Id` the server issues on a
//! successful `initialize`: 128 random bits from the OS CSPRNG, as 32 lowercase hex digits.
//! Sessions idle longer than the store's idle timeout are forgotten (a later request gets 404
//! and the client re-initializes); when the store is full, the session idle the longest is
//! evicted to make room.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The MCP protocol revisions this server negotiates, oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProtocolVersion {
    V2024_11_05,
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
}

impl ProtocolVersion {
    /// All supported versions, oldest first.
    pub const ALL: [ProtocolVersion; 4] = [
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
    ];
    /// The newest supported version, answered when a client asks for one we do not know.
    pub const LATEST: ProtocolVersion = Self::V2025_11_25;

    /// The wire string, e.g. `"2025-06-18"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
        }
    }

    /// Parses a wire string; `None` for anything this server does not support.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Version negotiation: echo a supported version, else answer [`Self::LATEST`].
    pub fn negotiate(requested: &str) -> Self {
        Self::parse(requested).unwrap_or(Self::LATEST)
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the MCP core needs to know about the caller's session while handling one message.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionState {
    /// `Mcp-Session-Id` (HTTP), `None` for stdio.
    pub id: Option<String>,
    /// Negotiated version; `None` until `initialize` succeeded.
    pub version: Option<ProtocolVersion>,
    /// Set by `notifications/initialized`.
    pub initialized: bool,
    /// Transport name for the handler's [`RequestContext`](super::RequestContext): `stdio`, `http`.
    pub transport: &'static str,
    /// The client's `capabilities` from `initialize`.
    pub client_capabilities: serde_json::Value,
    /// Set by `logging/setLevel`: the lowest level the client wants as `notifications/message`.
    pub log_level: Option<super::LogLevel>,
    /// Resource URIs the client subscribed to (`resources/subscribe`).
    pub subscriptions: std::collections::BTreeSet<String>,
    /// Set when this message changed `subscriptions`, so the store writes them back (other
    /// requests of the session may run at the same time with an older copy).
    pub subscriptions_changed: bool,
    /// Who sends the current message (set per request by HTTP transports, never stored).
    pub caller: Option<super::Caller>,
    /// The masked id of the API key that opened the session ([`SessionStore::set_owner`]);
    /// `None`: opened without a key (development on loopback) or over stdio.
    pub owner: Option<String>,
}

impl SessionState {
    /// A fresh, uninitialized session on `transport`.
    pub fn new(transport: &'static str) -> Self {
        Self {
            id: None,
            version: None,
            initialized: false,
            transport,
            client_capabilities: serde_json::Value::Null,
            log_level: None,
            subscriptions: Default::default(),
            subscriptions_changed: false,
            caller: None,
            owner: None,
        }
    }
}

/// Why a session could not be created.
#[derive(Debug)]
pub enum SessionError {
    /// The OS random source failed.
    Random(getrandom::Error),
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Random(e) => write!(f, "cannot generate a session id: {e}"),
        }
    }
}

impl std::error::Error for SessionError {}

#[derive(Debug)]
struct Entry {
    /// `None` for a legacy SSE session opened before its `initialize`.
    version: Option<ProtocolVersion>,
    initialized: bool,
    client_capabilities: serde_json::Value,
    log_level: Option<super::LogLevel>,
    subscriptions: std::collections::BTreeSet<String>,
    owner: Option<String>,
    #[allow(dead_code)] // kept for diagnostics; eviction uses last_seen
    created: Instant,
    last_seen: Instant,
}

/// Sessions of the HTTP transport, shared by all workers.
#[derive(Debug)]
pub struct SessionStore {
    sessions: Mutex<HashMap<String, Entry>>,
    idle_timeout: Duration,
    max_sessions: usize,
}

impl SessionStore {
    /// A store forgetting sessions idle for `idle_timeout` and holding at most `max_sessions`
    /// (at least 1).
    pub fn new(idle_timeout: Duration, max_sessions: usize) -> Self {
        Self {
            sessions: Mutex::new(HashMap::new()),
            idle_timeout,
            max_sessions: max_sessions.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        // A panic while holding the lock cannot leave the map inconsistent (single inserts and
        // removes), so a poisoned lock is simply taken over.
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Creates a session at `version` and returns its new id. Expired sessions are purged
    /// first; if the store is still full, the session idle the longest is evicted.
    pub fn create(&self, version: ProtocolVersion) -> Result<String, SessionError> {
        self.create_entry(Some(version))
    }

    /// Creates a session whose `initialize` is still to come (legacy HTTP+SSE opens the stream
    /// first) and returns its id.
    pub fn create_uninitialized(&self) -> Result<String, SessionError> {
        self.create_entry(None)
    }

    fn create_entry(&self, version: Option<ProtocolVersion>) -> Result<String, SessionError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(SessionError::Random)?;
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let now = Instant::now();
        let mut map = self.lock();
        let ttl = self.idle_timeout;
        map.retain(|_, e| now.duration_since(e.last_seen) < ttl);
        while map.len() >= self.max_sessions {
            let oldest = map
                .iter()
                .min_by_key(|(_, e)| e.last_seen)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => {
                    log::info!("session store full; evicting idle session {k}");
                    map.remove(&k);
                }
                None => break,
            }
        }
        map.insert(
            id.clone(),
            Entry {
                version,
                initialized: false,
                client_capabilities: serde_json::Value::Null,
                log_level: None,
                subscriptions: Default::default(),
                owner: None,
                created: now,
                last_seen: now,
            },
        );
        Ok(id)
    }

    /// Records the masked id of the API key that opened session `id`: the HTTP transports
    /// refuse its other requests from any other key (they get "session not found"), so a
    /// session id seen by another client is no way into it.
    pub fn set_owner(&self, id: &str, owner: Option<String>) {
        if let Some(entry) = self.lock().get_mut(id) {
            entry.owner = owner;
        }
    }

    /// Looks a session up and marks it as seen now. `None` for an unknown, deleted or expired
    /// session (an expired one is removed).
    pub fn touch(&self, id: &str, transport: &'static str) -> Option<SessionState> {
        let now = Instant::now();
        let mut map = self.lock();
        let entry = map.get_mut(id)?;
        if now.duration_since(entry.last_seen) >= self.idle_timeout {
            map.remove(id);
            return None;
        }
        entry.last_seen = now;
        Some(SessionState {
            id: Some(id.to_string()),
            version: entry.version,
            initialized: entry.initialized,
            transport,
            client_capabilities: entry.client_capabilities.clone(),
            log_level: entry.log_level,
            subscriptions: entry.subscriptions.clone(),
            subscriptions_changed: false,
            caller: None,
            owner: entry.owner.clone(),
        })
    }

    /// Records what handling a message changed: the `initialized` flag (never goes back to
    /// false), the client's capabilities (from `initialize`), the log level, and the
    /// subscriptions when this message changed them. Unknown ids are ignored.
    pub fn update(&self, state: &SessionState) {
        let Some(id) = state.id.as_deref() else {
            return;
        };
        if let Some(entry) = self.lock().get_mut(id) {
            entry.initialized |= state.initialized;
            if state.version.is_some() {
                entry.version = state.version;
            }
            if !state.client_capabilities.is_null() {
                entry.client_capabilities = state.client_capabilities.clone();
            }
            if state.log_level.is_some() {
                entry.log_level = state.log_level;
            }
            if state.subscriptions_changed {
                entry.subscriptions = state.subscriptions.clone();
            }
        }
    }

    /// Every URI some session is subscribed to.
    pub fn subscribed_uris(&self) -> std::collections::BTreeSet<String> {
        self.lock()
            .values()
            .flat_map(|e| e.subscriptions.iter().cloned())
            .collect()
    }

    /// Ids of the live sessions subscribed to `uri`.
    pub fn subscribers(&self, uri: &str) -> Vec<String> {
        self.lock()
            .iter()
            .filter(|(_, e)| e.subscriptions.contains(uri))
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Whether session `id` is held and not expired (does not count as activity).
    pub fn contains(&self, id: &str) -> bool {
        let now = Instant::now();
        self.lock()
            .get(id)
            .is_some_and(|e| now.duration_since(e.last_seen) < self.idle_timeout)
    }

    /// Marks session `id` as active now (an open stream keeps its session alive).
    pub fn keep_alive(&self, id: &str) {
        if let Some(e) = self.lock().get_mut(id) {
            e.last_seen = Instant::now();
        }
    }

    /// Ends a session (`DELETE /mcp`). Returns whether it existed.
    pub fn remove(&self, id: &str) -> bool {
        self.lock().remove(id).is_some()
    }

    /// Number of sessions held (including expired ones not yet purged).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether the store holds no session.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation() {
        assert_eq!(
            ProtocolVersion::negotiate("2024-11-05"),
            ProtocolVersion::V2024_11_05
        );
        assert_eq!(
            ProtocolVersion::negotiate("1999-01-01"),
            ProtocolVersion::LATEST
        );
        assert_eq!(
            ProtocolVersion::negotiate("2026-07-28"),
            ProtocolVersion::LATEST
        );
    }

    #[test]
    fn ids_and_cap() {
        // An hour-long idle expiry cannot strike during the test, however busy the machine.
        let store = SessionStore::new(Duration::from_secs(3600), 2);
        let a = store.create(ProtocolVersion::LATEST).unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        // Eviction picks the oldest by its timestamp: let the clock move between the two.
        std::thread::sleep(Duration::from_millis(5));
        let b = store.create(ProtocolVersion::LATEST).unwrap();
        assert_ne!(a, b);
        let _c = store.create(ProtocolVersion::LATEST).unwrap();
        assert!(store.touch(&a, "http").is_none(), "oldest evicted");
        assert!(store.touch(&b, "http").is_some());
    }

    #[test]
    fn idle_sessions_expire() {
        let store = SessionStore::new(Duration::from_millis(20), 2);
        let b = store.create(ProtocolVersion::LATEST).unwrap();
        // The product's idle expiry (20 ms) has certainly passed after ten times as long.
        std::thread::sleep(Duration::from_millis(200));
        assert!(store.touch(&b, "http").is_none(), "expired");
        assert!(!store.remove(&b));
    }
}
