//! MCP sessions: the negotiated protocol version and the `initialized` flag of one client.
//!
//! stdio has one implicit session, held by the serve loop as a plain [`SessionState`]. Streamable
//! HTTP keeps many in a [`SessionStore`], keyed by the `Mcp-Session-Id` the server issues on a
//! successful `initialize`: 128 random bits from the OS CSPRNG, as 32 lowercase hex digits.
//! Sessions idle longer than the store's idle timeout are forgotten (a later request gets 404
//! and the client re-initializes).
//!
//! ## Caps
//! A client is its address and the key it uses ([`SessionStore::create_for`]). The store holds
//! at most [`SessionLimits::per_client`] sessions per client address, [`SessionLimits::per_key`]
//! per API key, and [`SessionLimits::max`] in all. A new session over a cap replaces the
//! requesting client's own session idle the longest, never another client's: one client's
//! 10,000 `initialize` calls churn through its own sessions and leave everyone else's alone.
//! When the address's or key's cap is taken by other clients' sessions (several keys on one
//! address), the new session is refused ([`SessionError::TooMany`]). When only the global
//! cap is reached and the client holds none, the oldest session of the client holding the
//! most is evicted.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The MCP protocol revisions this server negotiates, oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProtocolVersion {
    V2024_11_05,
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
    /// The stateless revision: no `initialize`, every request declares itself in `_meta`
    /// (see [`super::modern`]).
    V2026_07_28,
}

impl ProtocolVersion {
    /// All supported versions, oldest first.
    pub const ALL: [ProtocolVersion; 5] = [
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
        Self::V2026_07_28,
    ];
    /// The newest version `initialize` negotiates, answered when a client asks for one we do
    /// not know (2026-07-28 has no `initialize`).
    pub const LATEST: ProtocolVersion = Self::V2025_11_25;

    /// The wire string, e.g. `"2025-06-18"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// Whether the version is stateless (2026-07-28 and later): served per request, never
    /// negotiated by `initialize`.
    pub fn is_modern(self) -> bool {
        self >= Self::V2026_07_28
    }

    /// Parses a wire string; `None` for anything this server does not support.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// `initialize`'s version negotiation: echo a supported handshake version, else answer
    /// [`Self::LATEST`] (also for 2026-07-28, which has no handshake).
    pub fn negotiate(requested: &str) -> Self {
        Self::parse(requested)
            .filter(|v| !v.is_modern())
            .unwrap_or(Self::LATEST)
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
    /// The protocol version the transport declared for the current message (HTTP's
    /// `MCP-Protocol-Version`), never stored: a modern or unknown one makes a request without
    /// a session modern (see [`super::modern`]).
    pub declared_version: Option<String>,
    /// This server's address as the client reached it (set per request by HTTP transports,
    /// never stored; see [`super::RequestContext::origin`]).
    pub origin: Option<String>,
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
            declared_version: None,
            origin: None,
        }
    }
}

/// Why a session could not be created.
#[derive(Debug)]
pub enum SessionError {
    /// The OS random source failed.
    Random(getrandom::Error),
    /// The client's address or key holds as many sessions as allowed, all of them other
    /// clients' (the message names the cap).
    TooMany(String),
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Random(e) => write!(f, "cannot generate a session id: {e}"),
            Self::TooMany(why) => f.write_str(why),
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
    /// The address of the client that opened it (`None`: not known, no per-address cap).
    client: Option<IpAddr>,
    #[allow(dead_code)] // kept for diagnostics; eviction uses last_seen
    created: Instant,
    last_seen: Instant,
}

/// How many sessions the store holds (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// In all (default 1,000).
    pub max: usize,
    /// Per client address (default [`DEFAULT_SESSIONS_PER_CLIENT`]).
    pub per_client: usize,
    /// Per API key (default [`DEFAULT_SESSIONS_PER_KEY`]).
    pub per_key: usize,
}

/// Default [`SessionLimits::per_client`]: a client needs one session per connected app; a
/// few dozen leave room for apps that re-initialize without ending their old sessions.
pub const DEFAULT_SESSIONS_PER_CLIENT: usize = 32;

/// Default [`SessionLimits::per_key`]: a key may be shared by a few devices.
pub const DEFAULT_SESSIONS_PER_KEY: usize = 64;

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            max: 1000,
            per_client: DEFAULT_SESSIONS_PER_CLIENT,
            per_key: DEFAULT_SESSIONS_PER_KEY,
        }
    }
}

/// Sessions of the HTTP transport, shared by all workers.
#[derive(Debug)]
pub struct SessionStore {
    sessions: Mutex<HashMap<String, Entry>>,
    idle_timeout: Duration,
    limits: SessionLimits,
}

impl SessionStore {
    /// A store forgetting sessions idle for `idle_timeout` and holding at most `max_sessions`
    /// (at least 1), with the default per-client and per-key caps.
    pub fn new(idle_timeout: Duration, max_sessions: usize) -> Self {
        Self::with_limits(
            idle_timeout,
            SessionLimits {
                max: max_sessions,
                ..SessionLimits::default()
            },
        )
    }

    /// A store with its caps (each at least 1).
    pub fn with_limits(idle_timeout: Duration, limits: SessionLimits) -> Self {
        Self {
            sessions: Mutex::new(HashMap::new()),
            idle_timeout,
            limits: SessionLimits {
                max: limits.max.max(1),
                per_client: limits.per_client.max(1),
                per_key: limits.per_key.max(1),
            },
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
        self.create_entry(Some(version), None, None)
    }

    /// Creates a session at `version` (`None`: its `initialize` is still to come, as legacy
    /// HTTP+SSE opens the stream first) for the client at `client` using the key whose masked
    /// id is `owner` (see [`SessionStore::set_owner`]), within the caps of the module docs.
    pub fn create_for(
        &self,
        version: Option<ProtocolVersion>,
        client: Option<IpAddr>,
        owner: Option<String>,
    ) -> Result<String, SessionError> {
        self.create_entry(version, client, owner)
    }

    fn create_entry(
        &self,
        version: Option<ProtocolVersion>,
        client: Option<IpAddr>,
        owner: Option<String>,
    ) -> Result<String, SessionError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(SessionError::Random)?;
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let now = Instant::now();
        let mut map = self.lock();
        let ttl = self.idle_timeout;
        map.retain(|_, e| now.duration_since(e.last_seen) < ttl);
        let limits = self.limits;
        loop {
            let by_client = client.map_or(0, |ip| {
                map.values().filter(|e| e.client == Some(ip)).count()
            });
            let by_key = owner.as_ref().map_or(0, |o| {
                map.values().filter(|e| e.owner.as_ref() == Some(o)).count()
            });
            let client_full = client.is_some() && by_client >= limits.per_client;
            let key_full = owner.is_some() && by_key >= limits.per_key;
            if !client_full && !key_full && map.len() < limits.max {
                break;
            }
            let own = map
                .iter()
                .filter(|(_, e)| e.client == client && e.owner == owner)
                .min_by_key(|(_, e)| e.last_seen)
                .map(|(k, _)| k.clone());
            let victim = match own {
                Some(k) => k,
                None if client_full => {
                    return Err(SessionError::TooMany(format!(
                        "this client address holds {by_client} sessions of other keys, the \
                         limit per address ([server] max_sessions_per_client)"
                    )))
                }
                None if key_full => {
                    return Err(SessionError::TooMany(format!(
                        "this API key holds {by_key} sessions from other addresses, the limit \
                         per key ([server] max_sessions_per_key)"
                    )))
                }
                None => match biggest_holders_oldest(&map) {
                    Some(k) => k,
                    None => break,
                },
            };
            log::debug!("session cap reached; ending idle session {victim}");
            map.remove(&victim);
        }
        map.insert(
            id.clone(),
            Entry {
                version,
                initialized: false,
                client_capabilities: serde_json::Value::Null,
                log_level: None,
                subscriptions: Default::default(),
                owner,
                client,
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
            declared_version: None,
            origin: None,
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

    /// Sessions that asked for log messages (`logging/setLevel`), with the lowest level each
    /// wants.
    pub fn log_levels(&self) -> Vec<(String, super::LogLevel)> {
        self.lock()
            .iter()
            .filter_map(|(id, e)| e.log_level.map(|l| (id.clone(), l)))
            .collect()
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

    /// Marks session `id` as active now (an open stream keeps its session alive); `false`
    /// when the store no longer holds it (deleted, or replaced over a cap): its streams end.
    pub fn keep_alive(&self, id: &str) -> bool {
        match self.lock().get_mut(id) {
            Some(e) => {
                e.last_seen = Instant::now();
                true
            }
            None => false,
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

/// The session idle the longest of the client (address and key) holding the most sessions.
fn biggest_holders_oldest(map: &HashMap<String, Entry>) -> Option<String> {
    let mut counts: HashMap<(Option<IpAddr>, Option<&str>), usize> = HashMap::new();
    for e in map.values() {
        *counts.entry((e.client, e.owner.as_deref())).or_default() += 1;
    }
    let (client, owner) = counts.into_iter().max_by_key(|(_, n)| *n)?.0;
    map.iter()
        .filter(|(_, e)| e.client == client && e.owner.as_deref() == owner)
        .min_by_key(|(_, e)| e.last_seen)
        .map(|(k, _)| k.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation() {
        use ProtocolVersion as V;
        for (asked, answered) in [
            ("2024-11-05", V::V2024_11_05),
            ("1999-01-01", V::LATEST),
            ("2026-07-28", V::LATEST),
        ] {
            assert_eq!(V::negotiate(asked), answered, "{asked}");
        }
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
        // A stream's keep-alive tells whether its session is still held.
        assert!(!store.keep_alive(&a), "an evicted session's streams end");
        assert!(store.keep_alive(&b));
    }

    #[test]
    fn a_client_over_its_cap_replaces_its_own_sessions_only() {
        let limits = SessionLimits {
            max: 10,
            per_client: 3,
            per_key: 4,
        };
        let store = SessionStore::with_limits(Duration::from_secs(3600), limits);
        let a: IpAddr = "192.168.1.10".parse().unwrap();
        let b: IpAddr = "192.168.1.11".parse().unwrap();
        let v = Some(ProtocolVersion::LATEST);
        let other = store.create_for(v, Some(b), None).unwrap();
        let mut mine = Vec::new();
        for _ in 0..50 {
            mine.push(store.create_for(v, Some(a), None).unwrap());
        }
        assert!(store.contains(&other), "another client's session stays");
        assert_eq!(store.len(), 4, "three of a's, one of b's");
        assert!(mine[47..].iter().all(|id| store.contains(id)), "a's newest");
        // Keys: the key cap counts across addresses; a key on b's address with a's key
        // cap taken by a's own sessions replaces its own.
        let k = Some("key1****".to_string());
        for _ in 0..10 {
            store.create_for(v, Some(b), k.clone()).unwrap();
        }
        assert!(store.contains(&other), "b's keyless session stays");
        // b's address is full with its own keyed sessions and the keyless one: a third
        // client on b's address with another key is refused rather than evicting them.
        let refused = store.create_for(v, Some(b), Some("key2****".into()));
        assert!(
            matches!(refused, Err(SessionError::TooMany(_))),
            "{refused:?}"
        );
        assert!(store.contains(&other));
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
