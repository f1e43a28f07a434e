//! Bounded waiting: the one way these tests wait for something to have happened.
//!
//! A test that needs an effect it cannot await directly (a metric to settle, a request to reach
//! a mock server, a process to be gone) checks for it again every [`INTERVAL`] until it holds or
//! a deadline passes; [`eventually`] then fails the test saying what it waited for and what it
//! saw last. [`poll_until`] is the same loop for callers that decide themselves what a timeout
//! means. A fixed sleep is never a substitute: on a loaded machine it is either too short (the
//! test flakes) or too long (the suite crawls).

use std::fmt::Display;
use std::time::{Duration, Instant};

/// How often a condition is checked again.
const INTERVAL: Duration = Duration::from_millis(20);

/// The answer of one check: done (with a value for the caller), or not yet (with what was seen,
/// for the failure message).
pub(crate) trait Check {
    /// What a successful check yields.
    type Value;

    /// `Ok` when done; `Err` with a description of the state seen (may be empty).
    fn done(self) -> Result<Self::Value, String>;
}

impl Check for bool {
    type Value = ();

    fn done(self) -> Result<(), String> {
        if self {
            Ok(())
        } else {
            Err(String::new())
        }
    }
}

impl<T> Check for Option<T> {
    type Value = T;

    fn done(self) -> Result<T, String> {
        self.ok_or_else(String::new)
    }
}

impl<T, E: Display> Check for Result<T, E> {
    type Value = T;

    fn done(self) -> Result<T, String> {
        self.map_err(|seen| seen.to_string())
    }
}

/// Checks until `check` is done or `within` has passed, without blocking the actix runtime:
/// the value, or what the last check saw.
pub(crate) async fn poll_until<C: Check>(
    within: Duration,
    mut check: impl AsyncFnMut() -> C,
) -> Result<C::Value, String> {
    let deadline = Instant::now() + within;
    loop {
        match check().await.done() {
            Ok(value) => return Ok(value),
            Err(seen) if Instant::now() >= deadline => return Err(seen),
            Err(_) => actix_rt::time::sleep(INTERVAL).await,
        }
    }
}

/// Checks until `check` is done; fails the test when `within` passes first, naming `what` (the
/// state waited for, e.g. "no session is left").
pub(crate) async fn eventually<C: Check>(what: &str, within: Duration, check: impl AsyncFnMut() -> C) -> C::Value {
    poll_until(within, check).await.unwrap_or_else(|seen| gave_up(what, within, &seen))
}

/// [`poll_until`] for tests outside an async runtime (the thread sleeps between checks).
pub(crate) fn poll_until_blocking<C: Check>(
    within: Duration,
    mut check: impl FnMut() -> C,
) -> Result<C::Value, String> {
    let deadline = Instant::now() + within;
    loop {
        match check().done() {
            Ok(value) => return Ok(value),
            Err(seen) if Instant::now() >= deadline => return Err(seen),
            Err(_) => std::thread::sleep(INTERVAL),
        }
    }
}

/// [`eventually`] for tests outside an async runtime.
pub(crate) fn eventually_blocking<C: Check>(what: &str, within: Duration, check: impl FnMut() -> C) -> C::Value {
    poll_until_blocking(within, check).unwrap_or_else(|seen| gave_up(what, within, &seen))
}

fn gave_up(what: &str, within: Duration, seen: &str) -> ! {
    if seen.is_empty() {
        panic!("gave up after {within:?} waiting until {what}");
    }
    panic!("gave up after {within:?} waiting until {what}; last seen:\n{seen}");
}
