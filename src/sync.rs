//! One rule for the crate's mutexes: a thread that panicked while holding one does not take
//! the data down with it. The next holder takes the lock over ([`lock`]) and finds the data as
//! the panicking holder left it: serving on beats refusing every later request.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`; a lock poisoned by a panicking holder is taken over.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
