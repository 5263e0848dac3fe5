//! The change bus: fans state changes and structure reloads out to any number of subscribers
//! (later: dashboard WebSocket, SSE streams, MCP resource subscriptions, history).
//!
//! Each subscriber gets its own bounded crossbeam channel ([`Bus::subscribe`]). [`Bus::publish`]
//! never blocks: it `try_send`s to each subscriber in turn. A subscriber whose channel is full
//! lags alone: the event is dropped for it only, its dropped count grows and it is marked
//! *lagged* ([`Subscription::take_lagged`]), after which it should resync from a snapshot of the
//! state store (`StateStore::snapshot`). A subscriber that dropped more than the bus's
//! `max_dropped` events in total is unsubscribed (its channel disconnects once drained,
//! [`Subscription::is_closed`]). Dropping a [`Subscription`] unsubscribes it at once (RAII):
//! its channel (capacity x event size, allocated up front) is freed when the call that
//! subscribed ends, whether or not anything is ever published again.
//!
//! Publishers: the house (`House::record`, fed by command answers, reads, the polling thread
//! and the WebSocket reader; `House::refresh_alerts` and `House::notify` for the Message
//! Center) and the structure watch (`loxone::poll`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime};

use crossbeam_channel::{bounded, Receiver, Sender, TrySendError};

use super::state::{Source, Value};

/// Default total of dropped events after which a subscriber is unsubscribed.
pub const DEFAULT_MAX_DROPPED: u64 = 10_000;

/// One state value that changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The state (or control) UUID whose value changed.
    pub uuid: String,
    /// The control the state belongs to, when known (for a control's primary value, the
    /// control's own UUID).
    pub control: Option<String>,
    pub value: Value,
    /// When the value was learnt.
    pub at: SystemTime,
    /// The state store's change number (strictly increasing; a gap means missed changes).
    pub seq: u64,
    pub source: Source,
}

/// What the bus carries.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A state value changed.
    Change(Change),
    /// The Miniserver's structure file changed (`jdev/sps/LoxAPPversion3`) and the house was
    /// reloaded: tools, rooms and controls may differ (MCP: `notifications/tools/list_changed`).
    StructureChanged {
        /// The previous and the new `lastModified` of the structure file.
        old_version: String,
        new_version: String,
    },
    /// A Message Center entry came, went or changed, or the Miniserver pushed a notification
    /// (`super::alerts`; published by `House::refresh_alerts` and `House::notify`).
    Alert(Box<super::alerts::AlertEvent>),
}

#[derive(Debug, Default)]
struct SubState {
    dropped: AtomicU64,
    lagged: AtomicBool,
    closed: AtomicBool,
}

struct Subscriber {
    tx: Sender<Event>,
    state: Arc<SubState>,
}

/// The fan-out point. Share it as `Arc<Bus>`; all methods take `&self`.
pub struct Bus {
    /// Shared with each [`Subscription`] (weakly), which removes itself on drop.
    subscribers: Arc<Mutex<Vec<Subscriber>>>,
    max_dropped: u64,
    published: AtomicU64,
}

impl Default for Bus {
    fn default() -> Self {
        Bus::new(DEFAULT_MAX_DROPPED)
    }
}

impl std::fmt::Debug for Bus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bus")
            .field("subscribers", &self.subscriber_count())
            .field("max_dropped", &self.max_dropped)
            .finish()
    }
}

impl Bus {
    /// A bus that unsubscribes a subscriber after it dropped `max_dropped` events in total
    /// (at least 1).
    pub fn new(max_dropped: u64) -> Self {
        Bus {
            subscribers: Arc::new(Mutex::new(Vec::new())),
            max_dropped: max_dropped.max(1),
            published: AtomicU64::new(0),
        }
    }

    /// A new subscriber with a channel of `capacity` events (at least 1). It receives every
    /// event published from now on, as long as it keeps up.
    pub fn subscribe(&self, capacity: usize) -> Subscription {
        let (tx, rx) = bounded(capacity.max(1));
        let state = Arc::new(SubState::default());
        self.subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Subscriber {
                tx,
                state: state.clone(),
            });
        Subscription {
            rx,
            state,
            bus: Arc::downgrade(&self.subscribers),
        }
    }

    /// Sends `event` to every subscriber without ever blocking (see the module docs for full
    /// and departed subscribers). Returns how many subscribers received it.
    pub fn publish(&self, event: Event) -> usize {
        self.published.fetch_add(1, Ordering::Relaxed);
        let mut subs = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
        let mut delivered = 0;
        let max = self.max_dropped;
        subs.retain(|s| match s.tx.try_send(event.clone()) {
            Ok(()) => {
                delivered += 1;
                true
            }
            Err(TrySendError::Full(_)) => {
                s.state.lagged.store(true, Ordering::Relaxed);
                let dropped = s.state.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                if dropped >= max {
                    log::warn!("bus: a subscriber dropped {dropped} events; unsubscribed");
                    s.state.closed.store(true, Ordering::Relaxed);
                    false
                } else {
                    true
                }
            }
            Err(TrySendError::Disconnected(_)) => false,
        });
        delivered
    }

    /// Subscribers currently attached (a dropped [`Subscription`] is no longer counted).
    pub fn subscriber_count(&self) -> usize {
        self.subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    /// Events published since the bus was made.
    pub fn published(&self) -> u64 {
        self.published.load(Ordering::Relaxed)
    }
}

/// One subscriber's end. Dropping it unsubscribes at once.
pub struct Subscription {
    rx: Receiver<Event>,
    state: Arc<SubState>,
    bus: Weak<Mutex<Vec<Subscriber>>>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        // Never called with the bus's lock held: `publish` drops `Subscriber`s (the sending
        // ends), not `Subscription`s.
        if let Some(subs) = self.bus.upgrade() {
            subs.lock()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|s| !Arc::ptr_eq(&s.state, &self.state));
        }
    }
}

impl Subscription {
    /// The next event, waiting at most `timeout`; `None` on timeout or when the bus dropped
    /// this subscriber and its channel is drained.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Event> {
        self.rx.recv_timeout(timeout).ok()
    }

    /// The next event if one is waiting.
    pub fn try_recv(&self) -> Option<Event> {
        self.rx.try_recv().ok()
    }

    /// The raw receiver, for `crossbeam_channel::select!` with other channels.
    pub fn receiver(&self) -> &Receiver<Event> {
        &self.rx
    }

    /// Events dropped for this subscriber because its channel was full.
    pub fn dropped(&self) -> u64 {
        self.state.dropped.load(Ordering::Relaxed)
    }

    /// Whether events were dropped since the last call; clears the mark. When `true`, resync
    /// from `StateStore::snapshot`.
    pub fn take_lagged(&self) -> bool {
        self.state.lagged.swap(false, Ordering::Relaxed)
    }

    /// Whether the bus unsubscribed this subscriber for dropping too many events.
    pub fn is_closed(&self) -> bool {
        self.state.closed.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(seq: u64) -> Event {
        Event::Change(Change {
            uuid: "u".into(),
            control: None,
            value: Value::Number(seq as f64),
            at: SystemTime::UNIX_EPOCH,
            seq,
            source: Source::Poll,
        })
    }

    #[test]
    fn full_subscriber_lags_then_is_dropped() {
        let bus = Bus::new(3);
        let slow = bus.subscribe(1);
        let fast = bus.subscribe(16);
        assert_eq!(bus.publish(change(1)), 2);
        assert_eq!(bus.publish(change(2)), 1);
        assert!(slow.take_lagged());
        assert!(!slow.take_lagged());
        assert_eq!(slow.dropped(), 1);
        bus.publish(change(3));
        bus.publish(change(4));
        assert!(slow.is_closed());
        assert_eq!(bus.subscriber_count(), 1);
        // The slow one still gets what was queued, then its channel ends.
        assert_eq!(slow.try_recv(), Some(change(1)));
        assert_eq!(slow.recv_timeout(Duration::from_millis(10)), None);
        for i in 1..=4 {
            assert_eq!(fast.try_recv(), Some(change(i)));
        }
    }

    #[test]
    fn departed_subscribers_are_removed() {
        let bus = Bus::default();
        let a = bus.subscribe(4);
        drop(bus.subscribe(4));
        assert_eq!(
            bus.subscriber_count(),
            1,
            "unsubscribed on drop, before any publish"
        );
        assert_eq!(bus.publish(change(1)), 1);
        assert_eq!(bus.subscriber_count(), 1);
        assert!(a.try_recv().is_some());
    }
}
