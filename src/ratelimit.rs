//! Request rate limits (spec §8): a fixed window per bucket.
//!
//! A bucket is a string its user picks: the auth gate (`key:<id>` for a key's role limit,
//! `ip:<addr>` for the per-client limit on the MCP HTTP transport), the house's outbound
//! command limits (a control's UUID, `*` for all). Each bucket's window starts at its first
//! request and lasts [`RateLimiter::window`] (one minute in production use);
//! within it at most `limit` requests pass. A refused request does not count. The answer
//! carries what the `X-RateLimit-*` headers and `Retry-After` need ([`RateInfo`]).
//!
//! Fixed windows allow a burst of up to twice the limit across a window edge; that is accepted
//! for a house controller (the limits are coarse abuse guards, not billing).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Buckets kept before expired ones are swept.
const SWEEP_ABOVE: usize = 4096;

/// The state of one bucket after a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateInfo {
    /// Requests allowed per window.
    pub limit: u32,
    /// Requests still allowed in this window.
    pub remaining: u32,
    /// When the window ends, Unix seconds (`X-RateLimit-Reset`).
    pub reset: u64,
    /// Seconds until the window ends, at least 1 (`Retry-After`).
    pub retry_after: u64,
}

impl RateInfo {
    /// `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset`.
    pub fn headers(&self) -> [(&'static str, String); 3] {
        [
            ("X-RateLimit-Limit", self.limit.to_string()),
            ("X-RateLimit-Remaining", self.remaining.to_string()),
            ("X-RateLimit-Reset", self.reset.to_string()),
        ]
    }
}

struct Bucket {
    start: Instant,
    count: u32,
    /// The limit of the latest request.
    limit: u32,
}

/// One bucket's current window, for `GET /admin/rate-limits`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BucketState {
    /// The bucket name (`key:<id>`, `ip:<addr>`; the gate masks key ids).
    pub bucket: String,
    /// Requests counted in this window.
    pub count: u32,
    /// Requests allowed per window.
    pub limit: u32,
    /// Requests still allowed in this window.
    pub remaining: u32,
    /// Seconds until the window ends.
    pub reset_in_secs: u64,
}

/// Fixed-window counters, shared by all workers.
pub struct RateLimiter {
    window: Duration,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl RateLimiter {
    pub fn new(window: Duration) -> Self {
        Self {
            window: window.max(Duration::from_millis(1)),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    pub fn window(&self) -> Duration {
        self.window
    }

    /// Counts one request against `bucket`: `Ok` with the bucket's state when it passes,
    /// `Err` (not counted) when `limit` requests already passed in this window.
    pub fn hit(&self, bucket: &str, limit: u32) -> Result<RateInfo, RateInfo> {
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() > SWEEP_ABOVE {
            let window = self.window;
            buckets.retain(|_, b| now.duration_since(b.start) < window);
        }
        let b = match buckets.get_mut(bucket) {
            Some(b) => b,
            None => buckets.entry(bucket.to_string()).or_insert(Bucket {
                start: now,
                count: 0,
                limit,
            }),
        };
        b.limit = limit;
        if now.duration_since(b.start) >= self.window {
            b.start = now;
            b.count = 0;
        }
        let left = self.window.saturating_sub(now.duration_since(b.start));
        let retry_after = left.as_secs() + u64::from(left.subsec_nanos() > 0);
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let mut info = RateInfo {
            limit,
            remaining: 0,
            reset: unix + retry_after,
            retry_after: retry_after.max(1),
        };
        if b.count >= limit {
            return Err(info);
        }
        b.count += 1;
        info.remaining = limit - b.count;
        Ok(info)
    }
}

impl RateLimiter {
    /// `Err` with the bucket's state when `limit` requests already passed in its current
    /// window; counts nothing (to refuse early, before work that [`RateLimiter::hit`] would
    /// count only on failure).
    pub fn check(&self, bucket: &str, limit: u32) -> Result<(), RateInfo> {
        let now = Instant::now();
        let buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        match buckets.get(bucket) {
            Some(b) if now.duration_since(b.start) < self.window && b.count >= limit => {
                let left = self.window.saturating_sub(now.duration_since(b.start));
                let retry_after = (left.as_secs() + u64::from(left.subsec_nanos() > 0)).max(1);
                let unix = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs();
                Err(RateInfo {
                    limit,
                    remaining: 0,
                    reset: unix + retry_after,
                    retry_after,
                })
            }
            _ => Ok(()),
        }
    }

    /// The buckets whose window is still running, sorted by name (read-only).
    pub fn snapshot(&self) -> Vec<BucketState> {
        let now = Instant::now();
        let buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<BucketState> = buckets
            .iter()
            .filter(|(_, b)| now.duration_since(b.start) < self.window)
            .map(|(name, b)| {
                let left = self.window.saturating_sub(now.duration_since(b.start));
                BucketState {
                    bucket: name.clone(),
                    count: b.count,
                    limit: b.limit,
                    remaining: b.limit.saturating_sub(b.count),
                    reset_in_secs: left.as_secs() + u64::from(left.subsec_nanos() > 0),
                }
            })
            .collect();
        out.sort_by(|a, b| a.bucket.cmp(&b.bucket));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_refuses_within_a_window() {
        // An hour-long window cannot end during the test, however busy the machine.
        let r = RateLimiter::new(Duration::from_secs(3600));
        assert_eq!(r.hit("a", 2).unwrap().remaining, 1);
        assert_eq!(r.hit("a", 2).unwrap().remaining, 0);
        let refused = r.hit("a", 2).unwrap_err();
        assert!(refused.retry_after >= 1);
        assert_eq!(r.hit("b", 2).unwrap().remaining, 1, "buckets are separate");
        assert!(r.check("a", 2).is_err(), "check sees the used-up bucket");
        assert!(r.check("b", 2).is_ok() && r.check("c", 1).is_ok());
        assert_eq!(r.hit("b", 2).unwrap().remaining, 0, "check counted nothing");
        let snap = r.snapshot();
        let rows: Vec<_> = snap
            .iter()
            .map(|s| (s.bucket.as_str(), s.count, s.limit, s.remaining))
            .collect();
        assert_eq!(rows, [("a", 2, 2, 0), ("b", 2, 2, 0)], "{snap:?}");
    }

    #[test]
    fn a_new_window_resets_the_count() {
        let r = RateLimiter::new(Duration::from_millis(20));
        assert_eq!(r.hit("a", 2).unwrap().remaining, 1);
        let _ = r.hit("a", 2);
        // The product's window (20 ms) has certainly ended after ten times as long.
        std::thread::sleep(Duration::from_millis(200));
        assert!(r.snapshot().is_empty(), "every window ended");
        assert_eq!(r.hit("a", 2).unwrap().remaining, 1, "a new window");
    }
}
