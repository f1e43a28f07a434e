//! The sessions' clock: milliseconds since the process first asked, monotonic (a change of the
//! wall clock neither expires sessions early nor keeps them late). A request marks its session's
//! last activity with one read of it and one atomic store; expiry deadlines are on the same
//! scale.

use std::sync::OnceLock;
use std::time::Instant;

/// The instant the clock counts from.
fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// Milliseconds since the clock's origin.
pub(crate) fn now_ms() -> u64 {
    u64::try_from(origin().elapsed().as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_counts_up_from_its_origin() {
        let first = now_ms();
        std::thread::sleep(std::time::Duration::from_millis(15));
        let second = now_ms();
        assert!(second >= first + 10, "{first} then {second}");
    }
}
