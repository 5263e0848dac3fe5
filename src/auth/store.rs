//! Where API keys live: the [`KeyStore`] seam. Backends (spec §5.8): a TOML file with
//! `[[keys]]` tables (default), `HOME_API_KEYS` JSON (`HOME_KEY_BACKEND=env`), memory, SQLite.

use std::fmt;
use std::sync::Mutex;

use super::ApiKey;

/// Why a store operation failed.
#[derive(Debug)]
pub enum StoreError {
    /// Reading or writing the backing file or database failed.
    Io(String),
    /// The stored data does not parse.
    Corrupt(String),
    /// A key with this id exists already.
    Exists,
    /// No key with this id.
    NotFound,
    /// The backend is read-only (e.g. `HOME_API_KEYS`).
    ReadOnly,
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Io(m) => write!(f, "key store: {m}"),
            StoreError::Corrupt(m) => write!(f, "key store is damaged: {m}"),
            StoreError::Exists => f.write_str("a key with this id exists"),
            StoreError::NotFound => f.write_str("no such key"),
            StoreError::ReadOnly => f.write_str("this key store is read-only"),
        }
    }
}

impl std::error::Error for StoreError {}

/// A store of API keys. All methods take `&self` (stores synchronise inside).
pub trait KeyStore: Send + Sync {
    /// Every key.
    fn list(&self) -> Result<Vec<ApiKey>, StoreError>;
    /// The key with `id`.
    fn get(&self, id: &str) -> Result<Option<ApiKey>, StoreError> {
        Ok(self.list()?.into_iter().find(|k| k.id == id))
    }
    /// Adds a key; [`StoreError::Exists`] when the id is taken.
    fn insert(&self, key: ApiKey) -> Result<(), StoreError>;
    /// Replaces the key with the same id; [`StoreError::NotFound`] when there is none.
    fn update(&self, key: ApiKey) -> Result<(), StoreError>;
    /// Deletes a key; [`StoreError::NotFound`] when there is none.
    fn delete(&self, id: &str) -> Result<(), StoreError>;
}

/// Keys in memory only (tests, `HOME_KEY_BACKEND=memory`).
#[derive(Debug, Default)]
pub struct MemoryStore {
    keys: Mutex<Vec<ApiKey>>,
}

impl MemoryStore {
    pub fn new(keys: Vec<ApiKey>) -> Self {
        Self {
            keys: Mutex::new(keys),
        }
    }
}

impl KeyStore for MemoryStore {
    fn list(&self) -> Result<Vec<ApiKey>, StoreError> {
        Ok(self.keys.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    fn insert(&self, key: ApiKey) -> Result<(), StoreError> {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if keys.iter().any(|k| k.id == key.id) {
            return Err(StoreError::Exists);
        }
        keys.push(key);
        Ok(())
    }

    fn update(&self, key: ApiKey) -> Result<(), StoreError> {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        match keys.iter_mut().find(|k| k.id == key.id) {
            Some(k) => {
                *k = key;
                Ok(())
            }
            None => Err(StoreError::NotFound),
        }
    }

    fn delete(&self, id: &str) -> Result<(), StoreError> {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        let before = keys.len();
        keys.retain(|k| k.id != id);
        if keys.len() == before {
            Err(StoreError::NotFound)
        } else {
            Ok(())
        }
    }
}
