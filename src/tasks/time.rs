//! Task timestamps: milliseconds since the Unix epoch, written as ISO 8601 UTC
//! (`2026-07-28T10:30:00.000Z`) without a date library.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn now_millis() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)).unwrap_or(0)
}

/// `millis` since the Unix epoch as ISO 8601 UTC with milliseconds.
pub fn iso8601_millis(millis: u64) -> String {
    let secs = millis / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(i64::MAX / 2);
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        millis % 1000
    )
}

/// The proleptic Gregorian date of a day count from 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, u32::try_from(month).unwrap_or(1), u32::try_from(day).unwrap_or(1))
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
