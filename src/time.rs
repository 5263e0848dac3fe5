//! Timestamps: ISO 8601 / RFC 3339 UTC strings for tool envelopes and records.

use std::time::SystemTime;

/// `t` as an RFC 3339 UTC string with millisecond precision, e.g. `2026-11-21T08:28:00.123Z`.
pub fn iso8601(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// The current time as [`iso8601`].
pub fn now_iso8601() -> String {
    iso8601(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn formats_utc_with_millis() {
        let t = UNIX_EPOCH + Duration::from_millis(1_230_768_000_123);
        assert_eq!(iso8601(t), "2009-01-01T00:00:00.123Z");
    }
}
