//! The way back to the client, shared by all transports.
//!
//! A transport provides an [`Outlet`]: something that takes one serialised JSON-RPC message
//! and puts it on the wire (a stdout line, an SSE event on a POST response, a session's GET
//! stream, a legacy `/sse` stream). [`OutletPeer`] turns an outlet into the handler's
//! [`Peer`]: notifications are sent as they are; a server-to-client request is registered in
//! [`Pending`] under a fresh id (`srv-<n>`), sent, and the calling thread waits on a channel
//! until the client's response (a [`ClientResponse`] the core routes here by id, from the same
//! session only) or the timeout.
//!
//! [`Hub`] holds one outlet per session for messages not tied to a request
//! (`notifications/resources/updated`, `notifications/resources/list_changed`): HTTP sessions
//! register their outbox, legacy SSE its stream, stdio its output. Call order for a transport:
//! 1. [`Hub::register`] the session's outlet when the session exists;
//! 2. [`McpServer::peer`](super::McpServer::peer) per request for the handler's peer;
//! 3. [`Hub::unregister`] when the session ends.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crossbeam_channel::{bounded, Sender};
use serde_json::{json, Value};

use super::handler::{Peer, RpcError};
use super::jsonrpc::{ClientResponse, Id};

/// Puts one serialised JSON-RPC message on the wire of one client.
pub trait Outlet: Send + Sync {
    /// Sends `message` (compact JSON). `false` when it cannot be delivered (the stream is gone
    /// or the reader too slow); the message is then lost for this outlet.
    fn send(&self, message: &str) -> bool;
}

/// Any `Fn(&str) -> bool` is an outlet (tests, stdio).
impl<F: Fn(&str) -> bool + Send + Sync> Outlet for F {
    fn send(&self, message: &str) -> bool {
        self(message)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

struct Waiter {
    session: Option<String>,
    tx: Sender<Result<Value, RpcError>>,
}

/// Server-to-client requests waiting for the client's answer.
#[derive(Default)]
pub struct Pending {
    next: AtomicU64,
    waiting: Mutex<HashMap<String, Waiter>>,
}

impl Pending {
    /// Routes a client's response to the request waiting for it. `false` when no request of
    /// that session waits for that id (late, duplicate or foreign answers are dropped).
    pub fn resolve(&self, session: Option<&str>, response: ClientResponse) -> bool {
        let key = match &response.id {
            Id::String(s) => s.clone(),
            Id::Number(n) => n.to_string(),
        };
        let mut map = lock(&self.waiting);
        match map.get(&key) {
            Some(w) if w.session.as_deref() == session => {
                let w = map.remove(&key);
                drop(map);
                w.is_some_and(|w| w.tx.send(response.outcome).is_ok())
            }
            _ => {
                log::debug!("dropping a client response for unknown request {key}");
                false
            }
        }
    }

    /// Number of requests waiting.
    pub fn len(&self) -> usize {
        lock(&self.waiting).len()
    }

    /// Whether no request waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A [`Peer`] writing through an [`Outlet`].
pub struct OutletPeer {
    pub(crate) outlet: Arc<dyn Outlet>,
    pub(crate) pending: Arc<Pending>,
    pub(crate) session: Option<String>,
}

impl Peer for OutletPeer {
    fn notify(&self, method: &str, params: Value) {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string();
        if !self.outlet.send(&message) {
            log::debug!("notification {method} could not be delivered");
        }
    }

    fn request(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, RpcError> {
        let n = self.pending.next.fetch_add(1, Ordering::Relaxed) + 1;
        let id = format!("srv-{n}");
        let (tx, rx) = bounded(1);
        lock(&self.pending.waiting).insert(
            id.clone(),
            Waiter {
                session: self.session.clone(),
                tx,
            },
        );
        let message =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        let outcome = if self.outlet.send(&message) {
            rx.recv_timeout(timeout).unwrap_or_else(|_| {
                Err(RpcError::internal(format!("no answer to {method}"))
                    .with_details(format!("the client did not answer within {timeout:?}")))
            })
        } else {
            Err(RpcError::internal(format!("cannot send {method}"))
                .with_details("the client's stream is closed"))
        };
        lock(&self.pending.waiting).remove(&id);
        outcome
    }
}

/// Per-session outlets for notifications not tied to a request.
#[derive(Default)]
pub struct Hub {
    outlets: Mutex<HashMap<String, Arc<dyn Outlet>>>,
    /// Subscriptions of sessions the [`SessionStore`](super::SessionStore) does not hold
    /// (stdio).
    local: Mutex<HashMap<String, BTreeSet<String>>>,
    /// `logging/setLevel` of sessions the session store does not hold (stdio).
    local_log: Mutex<HashMap<String, super::LogLevel>>,
    /// Open `subscriptions/listen` streams (MCP 2026-07-28), by a key of their own.
    listeners: Mutex<HashMap<u64, Listener>>,
    next_listener: AtomicU64,
}

/// What a `subscriptions/listen` stream asked for and the server agreed to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListenFilter {
    /// `notifications/resources/list_changed`.
    pub resources_list_changed: bool,
    /// `notifications/resources/updated` for these URIs.
    pub resource_uris: BTreeSet<String>,
    /// `notifications/tasks` for these task ids (extension `io.modelcontextprotocol/tasks`).
    pub task_ids: BTreeSet<String>,
}

struct Listener {
    outlet: Arc<dyn Outlet>,
    /// The JSON-RPC id of the `subscriptions/listen` request: every message carries it.
    subscription: Value,
    filter: ListenFilter,
}

/// Registration of one `subscriptions/listen` stream in the [`Hub`]; dropping it ends the
/// subscription (the transport holds it as long as the stream is open).
pub struct Listening<'a> {
    hub: &'a Hub,
    key: u64,
}

impl Drop for Listening<'_> {
    fn drop(&mut self) {
        lock(&self.hub.listeners).remove(&self.key);
    }
}

/// `notification` (a method and its params object) tagged with `subscription` in
/// `params._meta` (`io.modelcontextprotocol/subscriptionId`).
pub fn tagged(method: &str, mut params: Value, subscription: &Value) -> String {
    if !params.is_object() {
        params = json!({});
    }
    params["_meta"] = json!({ super::modern::META_SUBSCRIPTION_ID: subscription });
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

impl Hub {
    /// Sets the outlet of session `key` (replacing an earlier one).
    pub fn register(&self, key: &str, outlet: Arc<dyn Outlet>) {
        lock(&self.outlets).insert(key.to_string(), outlet);
    }

    /// Forgets session `key`.
    pub fn unregister(&self, key: &str) {
        lock(&self.outlets).remove(key);
        lock(&self.local).remove(key);
        lock(&self.local_log).remove(key);
    }

    /// Sets the `logging/setLevel` of a session kept outside the session store (stdio);
    /// `None` forgets it.
    pub fn set_local_log_level(&self, key: &str, level: Option<super::LogLevel>) {
        let mut map = lock(&self.local_log);
        match level {
            Some(l) => map.insert(key.to_string(), l),
            None => map.remove(key),
        };
    }

    /// Local sessions with a log level, and the level.
    pub fn local_log_levels(&self) -> Vec<(String, super::LogLevel)> {
        lock(&self.local_log)
            .iter()
            .map(|(k, l)| (k.clone(), *l))
            .collect()
    }

    /// The outlet of session `key`.
    pub fn outlet(&self, key: &str) -> Option<Arc<dyn Outlet>> {
        lock(&self.outlets).get(key).cloned()
    }

    /// Sets the subscriptions of a session kept outside the session store (stdio).
    pub fn set_local_subscriptions(&self, key: &str, uris: BTreeSet<String>) {
        lock(&self.local).insert(key.to_string(), uris);
    }

    /// Every URI some local session is subscribed to.
    pub fn local_subscribed_uris(&self) -> BTreeSet<String> {
        lock(&self.local).values().flatten().cloned().collect()
    }

    /// Local sessions subscribed to `uri`.
    pub fn local_subscribers(&self, uri: &str) -> Vec<String> {
        lock(&self.local)
            .iter()
            .filter(|(_, s)| s.contains(uri))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Sends `message` to session `key`; `false` when it has no outlet or delivery failed.
    pub fn send_to(&self, key: &str, message: &str) -> bool {
        match self.outlet(key) {
            Some(o) => o.send(message),
            None => false,
        }
    }

    /// Keys of all sessions with an outlet.
    pub fn keys(&self) -> Vec<String> {
        lock(&self.outlets).keys().cloned().collect()
    }

    /// Registers a `subscriptions/listen` stream writing to `outlet`, tagged with
    /// `subscription`; it receives what `filter` names until the returned guard is dropped.
    pub fn listen(
        &self,
        outlet: Arc<dyn Outlet>,
        subscription: Value,
        filter: ListenFilter,
    ) -> Listening<'_> {
        let key = self.next_listener.fetch_add(1, Ordering::Relaxed);
        lock(&self.listeners).insert(
            key,
            Listener {
                outlet,
                subscription,
                filter,
            },
        );
        Listening { hub: self, key }
    }

    /// Sends `method` with `params` to every listen stream `wants` selects, tagged with its
    /// subscription id. Returns how many it reached.
    pub fn send_to_listeners(
        &self,
        method: &str,
        params: &Value,
        wants: impl Fn(&ListenFilter) -> bool,
    ) -> usize {
        let targets: Vec<(Arc<dyn Outlet>, Value)> = lock(&self.listeners)
            .values()
            .filter(|l| wants(&l.filter))
            .map(|l| (l.outlet.clone(), l.subscription.clone()))
            .collect();
        targets
            .iter()
            .filter(|(outlet, id)| outlet.send(&tagged(method, params.clone(), id)))
            .count()
    }

    /// Every URI some listen stream follows.
    pub fn listened_uris(&self) -> BTreeSet<String> {
        lock(&self.listeners)
            .values()
            .flat_map(|l| l.filter.resource_uris.iter().cloned())
            .collect()
    }

    /// Drops the outlets whose key `keep` rejects (e.g. expired HTTP sessions).
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        lock(&self.outlets).retain(|k, _| keep(k));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_round_trip_and_foreign_answers() {
        let pending = Arc::new(Pending::default());
        let sent = Arc::new(Mutex::new(Vec::<String>::new()));
        let s2 = sent.clone();
        let peer = Arc::new(OutletPeer {
            outlet: Arc::new(move |m: &str| {
                s2.lock().unwrap().push(m.to_string());
                true
            }),
            pending: pending.clone(),
            session: Some("a".into()),
        });
        let p2 = peer.clone();
        let t = std::thread::spawn(move || {
            p2.request("elicitation/create", json!({}), Duration::from_secs(5))
        });
        while pending.is_empty() {
            std::thread::sleep(Duration::from_millis(2));
        }
        let id = Id::String("srv-1".into());
        let answer = |outcome| ClientResponse {
            id: id.clone(),
            outcome,
        };
        assert!(!pending.resolve(Some("b"), answer(Ok(json!({"x": 1})))));
        assert!(pending.resolve(Some("a"), answer(Ok(json!({"action": "accept"})))));
        assert_eq!(t.join().unwrap(), Ok(json!({"action": "accept"})));
        assert!(pending.is_empty());
        let r = peer.request("x", json!({}), Duration::from_millis(20));
        assert!(r.is_err());
        assert!(sent.lock().unwrap()[0].contains("\"srv-1\""));
    }
}
