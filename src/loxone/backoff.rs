//! When to try the Miniserver again after a failed connection: exponential backoff with full
//! jitter, capped, and never before a lock-out the Miniserver announced has passed.
//!
//! A Miniserver blocks a client after repeated failed logins (HTTP 403 with the remaining
//! seconds, WebSocket close code 4003; loxone-protocol.md §2.7, §4.5); retrying during the
//! block only extends it. So a lock-out overrides the backoff: the next attempt waits at least
//! until it has passed. A success resets everything.

use std::time::{Duration, Instant};

/// Retry schedule of one connection. Not thread-safe by itself: owned by the link thread.
#[derive(Debug, Clone)]
pub struct Backoff {
    base: Duration,
    max: Duration,
    failures: u32,
    locked_until: Option<Instant>,
}

impl Backoff {
    /// `base`: the first delay (e.g. 1 s); `max`: the cap (e.g. 60 s).
    pub fn new(base: Duration, max: Duration) -> Self {
        Backoff {
            base,
            max: max.max(base),
            failures: 0,
            locked_until: None,
        }
    }

    /// The connection worked: the next failure starts from `base` again.
    pub fn succeeded(&mut self) {
        self.failures = 0;
        self.locked_until = None;
    }

    /// A failed attempt; returns how long to wait before the next one: a random delay in
    /// `[d/2, d]` where `d = min(max, base * 2^(failures-1))` ("equal jitter", so clients that
    /// failed together do not come back together), or the rest of an announced lock-out when
    /// that is longer.
    pub fn failed(&mut self, now: Instant) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let exp = self.failures.saturating_sub(1).min(20);
        let d = self.base.saturating_mul(1u32 << exp).min(self.max);
        let half = d / 2;
        let jitter = half.mul_f64(random_unit());
        let delay = half + jitter;
        match self.locked_until {
            Some(until) if until > now => delay.max(until - now),
            _ => delay,
        }
    }

    /// The Miniserver announced a lock-out of `remaining` (403 `<remaining>` or close 4003
    /// with its default block time): no attempt before it passes.
    pub fn locked_out(&mut self, now: Instant, remaining: Duration) {
        let until = now + remaining;
        self.locked_until = Some(match self.locked_until {
            Some(u) if u > until => u,
            _ => until,
        });
    }
}

/// A uniformly distributed number in `[0, 1)` from the OS random source (jitter needs no
/// cryptographic quality, but the OS source is already linked in and never blocks after boot).
fn random_unit() -> f64 {
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() {
        return 0.5;
    }
    (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Backoff {
        /// Consecutive failures since the last success.
        fn failures(&self) -> u32 {
            self.failures
        }

        /// Whether an attempt now would fall into an announced lock-out.
        fn is_locked(&self, now: Instant) -> bool {
            self.locked_until.is_some_and(|u| u > now)
        }
    }

    #[test]
    fn grows_exponentially_with_jitter_and_caps() {
        let mut b = Backoff::new(Duration::from_secs(1), Duration::from_secs(60));
        let now = Instant::now();
        let mut last_cap = Duration::ZERO;
        for i in 1..=12u32 {
            let d = b.failed(now);
            let cap = Duration::from_secs(1u64 << (i - 1)).min(Duration::from_secs(60));
            assert!(
                d >= cap / 2 && d <= cap,
                "attempt {i}: {d:?} not in [{:?}, {cap:?}]",
                cap / 2
            );
            assert!(cap >= last_cap);
            last_cap = cap;
        }
        assert_eq!(b.failures(), 12);
        b.succeeded();
        assert_eq!(b.failures(), 0);
        let d = b.failed(now);
        assert!(d <= Duration::from_secs(1));
    }

    #[test]
    fn a_lock_out_is_never_cut_short() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
        let now = Instant::now();
        b.locked_out(now, Duration::from_secs(300));
        assert!(b.is_locked(now));
        let d = b.failed(now);
        assert!(d >= Duration::from_secs(299), "{d:?}");
        // A shorter announcement does not shorten the block.
        b.locked_out(now, Duration::from_secs(10));
        assert!(b.failed(now) >= Duration::from_secs(299));
        // Once it has passed, the backoff applies again.
        let later = now + Duration::from_secs(301);
        assert!(!b.is_locked(later));
        assert!(b.failed(later) <= Duration::from_secs(5));
    }

    #[test]
    fn jitter_spreads_clients() {
        let now = Instant::now();
        let delays: std::collections::BTreeSet<u128> = (0..20)
            .map(|_| {
                let mut b = Backoff::new(Duration::from_secs(8), Duration::from_secs(60));
                b.failed(now).as_millis()
            })
            .collect();
        assert!(delays.len() > 10, "{delays:?}");
    }
}
