//! Task timestamps: milliseconds since the Unix epoch, written as ISO 8601 UTC
//! (`2026-07-28T10:30:00.000Z`) without a date library (the formatting is the `time` tool's).

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn now_millis() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)).unwrap_or(0)
}

/// `millis` since the Unix epoch as ISO 8601 UTC with milliseconds (the `time` tool's format).
pub fn iso8601_millis(millis: u64) -> String {
    crate::timestamp::rfc3339_utc(i64::try_from(millis).unwrap_or(i64::MAX / 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso8601_utc_with_milliseconds() {
        assert_eq!(iso8601_millis(0), "1970-01-01T00:00:00.000Z");
        // 2025-11-25T10:30:00Z, the spec's example.
        assert_eq!(iso8601_millis(1_764_066_600_000), "2025-11-25T10:30:00.000Z");
        assert_eq!(iso8601_millis(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601_millis(1_785_283_199_999), "2026-07-28T23:59:59.999Z");
    }
}
