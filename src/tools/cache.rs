//! Response caches (spec §8): answers of read-only tools (30 s by default) and resource
//! contents (60 s), with identical concurrent requests coalesced. [`super::HomeTools`] owns one
//! [`Cache`] for each; nothing else needs this module.
//!
//! Freshness is tied to the house, not only to the clock: every entry remembers the
//! [`House::generation`](crate::home::House::generation) its computation started and ended
//! with, and is served only while the house is still at that generation and the entry is
//! younger than the TTL. The generation grows with every state change (WebSocket events,
//! polling, reads that learnt a new value), every command (so nobody reads stale data after a
//! command), every failed read and every structure reload. A computation during which the
//! generation moved is answered but not kept (it may mix old and new values, or contain values
//! that could not be read). Every finished call of a tool that acts counts as a change too
//! (workflow edits do not touch the house) and clears both caches outright.
//!
//! Coalescing ("single flight"): while a key is being computed, an identical request that sees
//! the same generation waits for that computation (at most [`COALESCE_WAIT`]) and shares its
//! answer, errors included, instead of asking the Miniserver again. A request that comes after
//! a change does not join a computation that started before it.
//!
//! Only success answers are kept: callers say per answer whether it may be cached. At most
//! `capacity` entries; when full, expired entries go first, then the oldest. A TTL of zero
//! turns caching off (coalescing of concurrent identical requests stays).

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::metrics::CacheKind;
use crate::sync::lock;

/// How long a request waits for an identical one in progress before computing on its own.
pub const COALESCE_WAIT: Duration = Duration::from_secs(15);

/// Default number of entries per cache.
pub const DEFAULT_CAPACITY: usize = 512;

/// Default TTL of tool answers (spec §8).
pub const DEFAULT_TOOL_TTL: Duration = Duration::from_secs(30);

/// Default TTL of resource contents (spec §8).
pub const DEFAULT_RESOURCE_TTL: Duration = Duration::from_secs(60);

/// The caches' settings (`[server] tool_cache_secs`, `resource_cache_secs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheConfig {
    /// TTL of read-only tool answers; zero: not cached.
    pub tool_ttl: Duration,
    /// TTL of resource contents; zero: not cached.
    pub resource_ttl: Duration,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            tool_ttl: DEFAULT_TOOL_TTL,
            resource_ttl: DEFAULT_RESOURCE_TTL,
        }
    }
}

/// Adds `by` to every numeric `age_secs` in `v` (rounded to whole seconds, as the answers give
/// them); whether there was one. For answers served from the cache: the values they carry are
/// older than when they were computed.
pub fn age_by(v: &mut Value, by: Duration) -> bool {
    match v {
        Value::Object(map) => {
            let mut found = false;
            for (k, x) in map.iter_mut() {
                if k == "age_secs" {
                    if let Some(age) = x.as_f64() {
                        *x = serde_json::json!((age + by.as_secs_f64()).round());
                        found = true;
                    }
                } else {
                    found |= age_by(x, by);
                }
            }
            found
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |found, x| age_by(x, by) | found),
        _ => false,
    }
}

/// Whether `v` holds a numeric `age_secs` anywhere (what [`age_by`] would change).
pub fn has_age(v: &Value) -> bool {
    match v {
        Value::Object(map) => map
            .iter()
            .any(|(k, x)| (k == "age_secs" && x.is_number()) || has_age(x)),
        Value::Array(items) => items.iter().any(has_age),
        _ => false,
    }
}

struct Entry<V> {
    value: V,
    generation: u64,
    filled: Instant,
}

enum FlightState<V> {
    Running,
    Done(V),
    /// The computing thread panicked: waiters compute on their own.
    Abandoned,
}

struct Flight<V> {
    generation: u64,
    state: Mutex<FlightState<V>>,
    done: Condvar,
}

struct Inner<V> {
    entries: HashMap<String, Entry<V>>,
    flights: HashMap<String, Arc<Flight<V>>>,
}

/// A TTL cache keyed by text, with single-flight coalescing. Share it by reference; all
/// methods take `&self`.
pub struct Cache<V> {
    ttl: Duration,
    capacity: usize,
    inner: Mutex<Inner<V>>,
    /// Lookups are counted in [`crate::metrics`] under this cache (see [`Cache::counted`]).
    metric: Option<CacheKind>,
}

impl<V: Clone> Cache<V> {
    /// A cache keeping entries for `ttl` (zero: none), at most `capacity` (at least 1).
    pub fn new(ttl: Duration, capacity: usize) -> Self {
        Self {
            ttl,
            capacity: capacity.max(1),
            inner: Mutex::new(Inner {
                entries: HashMap::new(),
                flights: HashMap::new(),
            }),
            metric: None,
        }
    }

    /// Counts hits and misses as `kind` in [`crate::metrics`] (`home_mcp_cache_hits_total`,
    /// `home_mcp_cache_misses_total`); a cache with a zero TTL (off) counts nothing.
    pub fn counted(mut self, kind: CacheKind) -> Self {
        self.metric = (!self.ttl.is_zero()).then_some(kind);
        self
    }

    fn count(&self, hit: bool) {
        if let Some(kind) = self.metric {
            crate::metrics::global().cache(kind, hit);
        }
    }

    /// The answer for `key`: a fresh cached one, the one an identical request in progress
    /// computes, or `compute()`'s. `generation` reads the house's generation; `compute` returns
    /// the answer and whether it may be kept (success answers only). An answer served from an
    /// entry passes through `aged(answer, time since the entry was filled)` first: values in
    /// it that say their own age (`age_secs`) are that much older than when it was computed.
    pub fn get_or_compute_aged(
        &self,
        key: &str,
        generation: impl Fn() -> u64,
        compute: impl FnOnce() -> (V, bool),
        aged: impl FnOnce(V, Duration) -> V,
    ) -> V {
        let start = generation();
        let flight = {
            let mut inner = lock(&self.inner);
            if let Some(e) = inner.entries.get(key) {
                if e.generation == start && e.filled.elapsed() < self.ttl {
                    self.count(true);
                    return aged(e.value.clone(), e.filled.elapsed());
                }
                inner.entries.remove(key);
            }
            match inner.flights.get(key) {
                Some(f) if f.generation == start => Err(f.clone()),
                _ => {
                    let f = Arc::new(Flight {
                        generation: start,
                        state: Mutex::new(FlightState::Running),
                        done: Condvar::new(),
                    });
                    inner.flights.insert(key.to_string(), f.clone());
                    Ok(f)
                }
            }
        };
        match flight {
            Ok(mine) => {
                self.count(false);
                self.lead(key, mine, start, generation, compute)
            }
            Err(theirs) => match wait(&theirs) {
                Some(v) => {
                    self.count(true);
                    v
                }
                None => {
                    self.count(false);
                    compute().0
                }
            },
        }
    }

    fn lead(
        &self,
        key: &str,
        flight: Arc<Flight<V>>,
        start: u64,
        generation: impl Fn() -> u64,
        compute: impl FnOnce() -> (V, bool),
    ) -> V {
        // Wakes the waiters and removes the flight even if `compute` panics.
        struct Finish<'a, V: Clone> {
            cache: &'a Cache<V>,
            key: &'a str,
            flight: Arc<Flight<V>>,
        }
        impl<V: Clone> Drop for Finish<'_, V> {
            fn drop(&mut self) {
                {
                    let mut s = lock(&self.flight.state);
                    if matches!(*s, FlightState::Running) {
                        *s = FlightState::Abandoned;
                    }
                }
                self.flight.done.notify_all();
                let mut inner = lock(&self.cache.inner);
                if inner
                    .flights
                    .get(self.key)
                    .is_some_and(|f| Arc::ptr_eq(f, &self.flight))
                {
                    inner.flights.remove(self.key);
                }
            }
        }
        let finish = Finish {
            cache: self,
            key,
            flight,
        };
        let (value, cacheable) = compute();
        *lock(&finish.flight.state) = FlightState::Done(value.clone());
        if cacheable && !self.ttl.is_zero() && generation() == start {
            let mut inner = lock(&self.inner);
            if inner.entries.len() >= self.capacity && !inner.entries.contains_key(key) {
                self.evict(&mut inner);
            }
            inner.entries.insert(
                key.to_string(),
                Entry {
                    value: value.clone(),
                    generation: start,
                    filled: Instant::now(),
                },
            );
        }
        drop(finish);
        value
    }

    /// Drops the expired entries, or if none, the oldest one.
    fn evict(&self, inner: &mut Inner<V>) {
        let ttl = self.ttl;
        inner.entries.retain(|_, e| e.filled.elapsed() < ttl);
        if inner.entries.len() >= self.capacity {
            let oldest = inner
                .entries
                .iter()
                .min_by_key(|(_, e)| e.filled)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                inner.entries.remove(&k);
            }
        }
    }

    /// How long entries are kept (zero: caching off).
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Forgets every entry (computations in progress finish; they are kept only if the house's
    /// generation did not move meanwhile).
    pub fn clear(&self) {
        lock(&self.inner).entries.clear();
    }
}

/// Waits for `flight` to finish: its answer, or `None` when it was abandoned or took longer
/// than [`COALESCE_WAIT`].
fn wait<V: Clone>(flight: &Flight<V>) -> Option<V> {
    let guard = lock(&flight.state);
    let (guard, _) = flight
        .done
        .wait_timeout_while(guard, COALESCE_WAIT, |s| matches!(s, FlightState::Running))
        .unwrap_or_else(|e| e.into_inner());
    match &*guard {
        FlightState::Done(v) => Some(v.clone()),
        _ => None,
    }
}

/// The cache key of a tool call: the name and the arguments as JSON with object keys sorted,
/// so that argument order does not matter.
pub fn tool_key(name: &str, arguments: &serde_json::Map<String, Value>) -> String {
    let mut key = String::with_capacity(64);
    key.push_str(name);
    key.push(' ');
    key.push_str(&crate::mcp::input::canonical_json(&Value::Object(
        arguments.clone(),
    )));
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;
    use std::sync::atomic::{AtomicU64, Ordering};

    impl<V: Clone> Cache<V> {
        /// [`Cache::get_or_compute_aged`] without ageing.
        fn get_or_compute(
            &self,
            key: &str,
            generation: impl Fn() -> u64,
            compute: impl FnOnce() -> (V, bool),
        ) -> V {
            self.get_or_compute_aged(key, generation, compute, |v, _| v)
        }

        fn len(&self) -> usize {
            lock(&self.inner).entries.len()
        }

        fn is_empty(&self) -> bool {
            self.len() == 0
        }
    }

    #[test]
    fn keys_ignore_argument_order() {
        let a = json!({"room": "Küche", "filter": {"b": 1, "a": [2, {"y": 1, "x": 2}]}});
        let b = json!({"filter": {"a": [2, {"x": 2, "y": 1}], "b": 1}, "room": "Küche"});
        assert_eq!(
            tool_key("t", a.as_object().unwrap()),
            tool_key("t", b.as_object().unwrap())
        );
        assert_ne!(
            tool_key("t", a.as_object().unwrap()),
            tool_key("u", a.as_object().unwrap())
        );
    }

    #[test]
    fn generation_ttl_capacity_and_errors() {
        let generation = AtomicU64::new(0);
        let gen = || generation.load(Ordering::SeqCst);
        let calls = AtomicU64::new(0);
        let compute = |ok: bool| {
            let calls = &calls;
            move || (calls.fetch_add(1, Ordering::SeqCst), ok)
        };
        let c: Cache<u64> = Cache::new(Duration::from_secs(60), 2);
        assert_eq!(c.get_or_compute("a", gen, compute(true)), 0);
        assert_eq!(c.get_or_compute("a", gen, compute(true)), 0);
        generation.fetch_add(1, Ordering::SeqCst);
        assert_eq!(c.get_or_compute("a", gen, compute(true)), 1);
        // Not cacheable: computed every time.
        assert_eq!(c.get_or_compute("e", gen, compute(false)), 2);
        assert_eq!(c.get_or_compute("e", gen, compute(false)), 3);
        // A generation that moves during the computation: not kept.
        let moving = c.get_or_compute("m", gen, || {
            generation.fetch_add(1, Ordering::SeqCst);
            (99, true)
        });
        assert_eq!(moving, 99);
        assert_eq!(c.get_or_compute("m", gen, compute(true)), 4);
        // Capacity 2.
        c.get_or_compute("x", gen, compute(true));
        c.get_or_compute("y", gen, compute(true));
        assert!(c.len() <= 2);
        c.clear();
        assert!(c.is_empty());
        // TTL zero: never kept.
        let off: Cache<u64> = Cache::new(Duration::ZERO, 8);
        off.get_or_compute("a", gen, compute(true));
        assert!(off.is_empty());
    }

    /// How many hold the flight of `key` (the map, the leader, each waiter); 0 without one.
    fn holders(c: &Cache<u32>, key: &str) -> usize {
        lock(&c.inner).flights.get(key).map_or(0, Arc::strong_count)
    }

    /// Waits (polling, 60 s at most) until `n` hold the flight of `key`.
    fn wait_holders(c: &Cache<u32>, key: &str, n: usize) {
        let end = std::time::Instant::now() + Duration::from_secs(60);
        while holders(c, key) != n {
            assert!(
                std::time::Instant::now() < end,
                "{} hold the flight, not {n}",
                holders(c, key)
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn identical_requests_in_flight_share_one_computation() {
        // TTL zero: nothing is kept, so only the flight can share the work.
        let c: Arc<Cache<u32>> = Arc::new(Cache::new(Duration::ZERO, 8));
        let computed = Arc::new(AtomicU64::new(0));
        let (started_tx, started) = std::sync::mpsc::channel();
        let (go, go_rx) = std::sync::mpsc::channel::<()>();
        let leader = {
            let (c, computed) = (c.clone(), computed.clone());
            std::thread::spawn(move || {
                c.get_or_compute(
                    "k",
                    || 0,
                    move || {
                        computed.fetch_add(1, Ordering::SeqCst);
                        started_tx.send(()).unwrap();
                        let _ = go_rx.recv();
                        (7, true)
                    },
                )
            })
        };
        started.recv().unwrap();
        let alone = holders(&c, "k");
        let waiters: Vec<_> = (0..7)
            .map(|_| {
                let (c, computed) = (c.clone(), computed.clone());
                std::thread::spawn(move || {
                    c.get_or_compute(
                        "k",
                        || 0,
                        || {
                            computed.fetch_add(1, Ordering::SeqCst);
                            (8, true)
                        },
                    )
                })
            })
            .collect();
        // All seven joined the leader's flight (conditions, not clocks) before it finishes.
        wait_holders(&c, "k", alone + 7);
        go.send(()).unwrap();
        assert_eq!(leader.join().unwrap(), 7);
        for w in waiters {
            assert_eq!(w.join().unwrap(), 7, "a waiter gets the leader's answer");
        }
        assert_eq!(
            computed.load(Ordering::SeqCst),
            1,
            "one computation for eight"
        );
    }

    #[test]
    fn panicking_leader_releases_waiters() {
        let c: Arc<Cache<u32>> = Arc::new(Cache::new(Duration::from_secs(60), 8));
        let (started_tx, started) = std::sync::mpsc::channel();
        let (go, go_rx) = std::sync::mpsc::channel::<()>();
        let c2 = c.clone();
        let leader = std::thread::spawn(move || {
            c2.get_or_compute(
                "k",
                || 0,
                move || {
                    started_tx.send(()).unwrap();
                    let _ = go_rx.recv();
                    panic!("boom")
                },
            )
        });
        started.recv().unwrap();
        let alone = holders(&c, "k");
        let c3 = c.clone();
        let waiter = std::thread::spawn(move || c3.get_or_compute("k", || 0, || (7, true)));
        // Conditions, not clocks: the waiter is waiting on the leader's flight...
        wait_holders(&c, "k", alone + 1);
        // ... when the leader panics.
        go.send(()).unwrap();
        assert!(leader.join().is_err());
        assert_eq!(
            waiter.join().unwrap(),
            7,
            "released, it computes for itself"
        );
        // A released waiter's value is not kept (it was not the leader).
        assert_eq!(c.get_or_compute("k", || 0, || (8, true)), 8);
    }
}
