//! [`SlowBodies`]: the request bodies still arriving after [`SLOW_BODY_GRACE`], counted across a
//! listener's workers and capped, so that stalled clients hold at most that many connections.
//! The listener makes it, the application state holds it, reading a body ([`super::body`])
//! counts in it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// How long a body may take before it counts as slow.
pub(crate) const SLOW_BODY_GRACE: Duration = Duration::from_secs(1);

/// The bodies still arriving after [`SLOW_BODY_GRACE`], shared by every worker of a listener.
#[derive(Debug)]
pub(crate) struct SlowBodies {
    waiting: AtomicUsize,
    max: usize,
    /// Whether the cap was reached (one warning per episode).
    full: AtomicBool,
}

/// One slow body, counted until dropped.
pub(super) struct SlowBody<'a>(&'a SlowBodies);

impl Drop for SlowBody<'_> {
    fn drop(&mut self) {
        let left = self.0.waiting.fetch_sub(1, Ordering::Relaxed) - 1;
        if left < self.0.max / 2 && self.0.full.swap(false, Ordering::Relaxed) {
            log::info!("slow request bodies are below their limit again ({left} waiting, limit {})", self.0.max);
        }
    }
}

impl SlowBodies {
    /// At most `max` slow bodies at once.
    pub(crate) fn new(max: usize) -> Self {
        SlowBodies { waiting: AtomicUsize::new(0), max: max.max(1), full: AtomicBool::new(false) }
    }

    /// The most that may be slow at once.
    pub(super) fn max(&self) -> usize {
        self.max
    }

    /// Counts one more slow body until the returned guard drops; `None` when `max` are slow
    /// already (the first refusal of an episode is logged).
    pub(super) fn enter(&self) -> Option<SlowBody<'_>> {
        if self.waiting.fetch_add(1, Ordering::Relaxed) >= self.max {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            if !self.full.swap(true, Ordering::Relaxed) {
                log::warn!(
                    "{} requests are waiting for their bodies (the limit, --max-slow-bodies): a body not received \
                     within {} s is now answered 408 at once, keeping connections free for other clients",
                    self.max,
                    SLOW_BODY_GRACE.as_secs()
                );
            }
            return None;
        }
        Some(SlowBody(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_bodies_are_capped_and_freed() {
        let slow = SlowBodies::new(2);
        let a = slow.enter().expect("first");
        let b = slow.enter().expect("second");
        assert!(slow.enter().is_none(), "a third is refused");
        assert!(slow.full.load(Ordering::Relaxed));
        drop(a);
        let c = slow.enter().expect("room again");
        drop((b, c));
        assert_eq!(slow.waiting.load(Ordering::Relaxed), 0);
        assert!(!slow.full.load(Ordering::Relaxed), "the episode is over");
    }
}
