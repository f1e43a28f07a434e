//! A signal from inside a test tool: how many calls have arrived in it. A test that must act
//! while a call is running (cancel it, drop it) awaits the arrival instead of sleeping and hoping
//! the call got there first.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

/// How long a test waits for a call to arrive in its tool before it fails.
const ARRIVAL_TIMEOUT: Duration = Duration::from_secs(10);

/// The count of calls that arrived in a tool; clones share it.
#[derive(Debug, Clone)]
pub(crate) struct Arrivals(Arc<watch::Sender<usize>>);

impl Arrivals {
    /// No call yet.
    pub(crate) fn new() -> Self {
        Arrivals(Arc::new(watch::Sender::new(0)))
    }

    /// The tool calls this first thing: one more call arrived.
    pub(crate) fn arrive(&self) {
        self.0.send_modify(|arrived| *arrived += 1);
    }

    /// How many calls have arrived so far.
    pub(crate) fn count(&self) -> usize {
        *self.0.borrow()
    }

    /// Whether `n` calls have arrived, waiting at most `within` for them.
    pub(crate) async fn reached(&self, n: usize, within: Duration) -> bool {
        let mut arrived = self.0.subscribe();
        let outcome = actix_rt::time::timeout(within, arrived.wait_for(|count| *count >= n)).await;
        outcome.is_ok_and(|waited| waited.is_ok())
    }

    /// Waits until `n` calls have arrived; fails the test after [`ARRIVAL_TIMEOUT`], naming
    /// `what` (e.g. "the sleep tool is running").
    pub(crate) async fn wait_for(&self, n: usize, what: &str) {
        assert!(self.reached(n, ARRIVAL_TIMEOUT).await, "gave up after {ARRIVAL_TIMEOUT:?} waiting until {what}");
    }
}
