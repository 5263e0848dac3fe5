//! Live values of the house: the latest value of each control or state UUID, with the time it
//! was learnt. The Miniserver is authoritative; this store only remembers what it last said.
//!
//! Writers: the Loxone adapter (command answers, value reads). Readers: tools and resources.
//! Cheap to share (`Arc<StateStore>`); all methods take `&self`.

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

/// One remembered value and when it was learnt.
#[derive(Debug, Clone, PartialEq)]
pub struct StateValue {
    pub value: Value,
    pub updated: SystemTime,
}

/// Thread-safe map UUID -> latest [`StateValue`].
#[derive(Debug, Default)]
pub struct StateStore {
    values: RwLock<HashMap<String, StateValue>>,
}

impl StateStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `value` for `uuid` as of now.
    pub fn set(&self, uuid: &str, value: Value) {
        let mut map = self.values.write().unwrap_or_else(|e| e.into_inner());
        map.insert(
            uuid.to_string(),
            StateValue {
                value,
                updated: SystemTime::now(),
            },
        );
    }

    /// The latest value for `uuid`, if any was learnt.
    pub fn get(&self, uuid: &str) -> Option<StateValue> {
        let map = self.values.read().unwrap_or_else(|e| e.into_inner());
        map.get(uuid).cloned()
    }

    /// Forgets the value of `uuid`.
    pub fn remove(&self, uuid: &str) {
        self.values
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(uuid);
    }

    /// Forgets everything (e.g. after the structure file changed).
    pub fn clear(&self) {
        self.values
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Number of remembered values.
    pub fn len(&self) -> usize {
        self.values.read().unwrap_or_else(|e| e.into_inner()).len()
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
}
