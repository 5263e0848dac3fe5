//! Live values of the house: the latest value of each control or state UUID, with the time it
//! was learnt, where it came from and the change number that set it. The Miniserver is
//! authoritative; this store only remembers what it last said.
//!
//! Writers: the Loxone adapter (command answers, value reads, the polling thread, later the
//! WebSocket event stream) through [`StateStore::apply`], which says whether the value changed
//! and numbers every change with a store-wide, strictly increasing sequence number (`seq`), so
//! a subscriber of the change bus (`home::bus`) can tell which changes it missed. Readers:
//! tools and resources. Cheap to share; all methods take `&self`.

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::SystemTime;

/// A value as the Miniserver reports it: a number (most states) or a text (moods, track names).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Number(f64),
    Text(String),
}

impl Value {
    /// The number, if this is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => Some(*n),
            Value::Text(_) => None,
        }
    }
}

/// Where a value was learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Read on demand over HTTP (`jdev/sps/io/{uuid}`), e.g. by a tool.
    Read,
    /// Read by the HTTP polling fallback (`loxone::poll`).
    Poll,
    /// Pushed by the Miniserver's WebSocket event tables.
    Event,
    /// The answer to a command we sent.
    Command,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Read => "read",
            Source::Poll => "poll",
            Source::Event => "event",
            Source::Command => "command",
        }
    }
}

/// One remembered value: the value, when it was learnt (`updated`, the time the reader saw it,
/// not the time it changed), where from, and the sequence number of the change that set it.
#[derive(Debug, Clone, PartialEq)]
pub struct StateValue {
    pub value: Value,
    pub updated: SystemTime,
    pub source: Source,
    /// The store's change number when this value was set (0 before any change).
    pub seq: u64,
}

impl StateValue {
    /// Seconds since the value was learnt (0 if the clock went backwards).
    pub fn age_secs(&self) -> f64 {
        self.updated
            .elapsed()
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0)
    }
}

#[derive(Debug, Default)]
struct Inner {
    values: HashMap<String, StateValue>,
    seq: u64,
}

/// Thread-safe map UUID -> latest [`StateValue`], with a change counter.
#[derive(Debug, Default)]
pub struct StateStore {
    inner: RwLock<Inner>,
}

impl StateStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `value` for `uuid` as learnt at `at` from `source`. Returns the new change
    /// number when the value differs from the remembered one (or none was remembered), else
    /// `None`; an unchanged value only refreshes `updated` and `source`.
    pub fn apply(&self, uuid: &str, value: Value, at: SystemTime, source: Source) -> Option<u64> {
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        if let Some(old) = inner.values.get_mut(uuid) {
            if old.value == value {
                old.updated = at;
                old.source = source;
                return None;
            }
        }
        inner.seq += 1;
        let seq = inner.seq;
        inner.values.insert(
            uuid.to_string(),
            StateValue {
                value,
                updated: at,
                source,
                seq,
            },
        );
        Some(seq)
    }

    /// Records `value` for `uuid` as read now (see [`StateStore::apply`]).
    pub fn set(&self, uuid: &str, value: Value) {
        self.apply(uuid, value, SystemTime::now(), Source::Read);
    }

    /// The latest value for `uuid`, if any was learnt.
    pub fn get(&self, uuid: &str) -> Option<StateValue> {
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        inner.values.get(uuid).cloned()
    }

    /// The number of the latest change (0 before any).
    pub fn seq(&self) -> u64 {
        self.inner.read().unwrap_or_else(|e| e.into_inner()).seq
    }

    /// A copy of every remembered value and the change number it is consistent with: what a
    /// subscriber that lagged behind resyncs from.
    pub fn snapshot(&self) -> (u64, Vec<(String, StateValue)>) {
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        let values = inner
            .values
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        (inner.seq, values)
    }

    /// Forgets the value of `uuid` (the next apply counts as a change).
    pub fn remove(&self, uuid: &str) {
        self.inner
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .values
            .remove(uuid);
    }

    /// Forgets every value (e.g. after the structure file changed); the change counter goes on.
    pub fn clear(&self) {
        self.inner
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .values
            .clear();
    }

    /// Number of remembered values.
    pub fn len(&self) -> usize {
        self.inner
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_then_get_returns_latest() {
        let s = StateStore::new();
        assert!(s.get("a").is_none());
        s.set("a", Value::Number(1.0));
        s.set("a", Value::Number(2.0));
        assert_eq!(s.get("a").unwrap().value, Value::Number(2.0));
        assert_eq!(s.len(), 1);
        s.clear();
        assert!(s.is_empty());
    }

    #[test]
    fn apply_reports_changes_with_increasing_seq() {
        let s = StateStore::new();
        let t0 = SystemTime::UNIX_EPOCH;
        let t1 = t0 + std::time::Duration::from_secs(1);
        assert_eq!(s.apply("a", Value::Number(1.0), t0, Source::Poll), Some(1));
        assert_eq!(s.apply("a", Value::Number(1.0), t1, Source::Event), None);
        let v = s.get("a").unwrap();
        assert_eq!((v.updated, v.source, v.seq), (t1, Source::Event, 1));
        assert_eq!(
            s.apply("b", Value::Text("x".into()), t1, Source::Read),
            Some(2)
        );
        assert_eq!(s.apply("a", Value::Number(0.0), t1, Source::Poll), Some(3));
        assert_eq!(s.seq(), 3);
        s.remove("a");
        assert_eq!(s.apply("a", Value::Number(0.0), t1, Source::Poll), Some(4));
        let (seq, all) = s.snapshot();
        assert_eq!((seq, all.len()), (4, 2));
    }
}
