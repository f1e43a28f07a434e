//! The gateway's remote goes away and comes back: every `restart_every` the soak stops its
//! listener, waits `down_for`, and starts it again on the same port, recording each window in
//! which it was not serving. A gateway call that fails is expected when it overlaps such a
//! window (or ends within [`GRACE`] after one: the first use of a connection the gateway's
//! client pooled before the restart may fail); any other gateway failure is unintended.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use mcpd_actors::{ListenerConfig, Mcpd};

use crate::stats::{unintended, Stats};

/// After the remote is back, a failing call is still counted as caused by the restart this long.
pub(crate) const GRACE: Duration = Duration::from_secs(1);
/// Attempts to bind the port again before a restart counts as failed.
const START_ATTEMPTS: u32 = 20;

/// When the remote was not serving.
#[derive(Debug, Default)]
pub(crate) struct Windows {
    /// (stop began, start finished); `None`: not back yet.
    spans: RefCell<Vec<(Instant, Option<Instant>)>>,
    /// The longest a failure came after the remote was back.
    latest_after_up: Cell<Duration>,
}

impl Windows {
    /// Whether a call that ran from `from` to `to` overlapped a restart (with its grace), and
    /// records how long after the remote was back it ended.
    pub(crate) fn explains(&self, from: Instant, to: Instant) -> bool {
        let spans = self.spans.borrow();
        let Some((_, end)) = spans.iter().find(|(start, end)| *start <= to && end.is_none_or(|e| e + GRACE >= from))
        else {
            return false;
        };
        if let Some(end) = end {
            let after = to.saturating_duration_since(*end);
            if after > self.latest_after_up.get() {
                self.latest_after_up.set(after);
            }
        }
        true
    }

    /// The windows, in seconds since `zero`.
    pub(crate) fn spans_since(&self, zero: Instant) -> Vec<(f64, Option<f64>)> {
        let secs = |t: Instant| t.saturating_duration_since(zero).as_secs_f64();
        self.spans.borrow().iter().map(|(start, end)| (secs(*start), end.map(secs))).collect()
    }

    /// The latest an expected gateway failure came after the remote was back.
    pub(crate) fn latest_after_up(&self) -> Duration {
        self.latest_after_up.get()
    }
}

/// Stops and restarts `remote` until `stop` is set; leaves it running.
pub(crate) async fn restart_loop(
    remote: Mcpd,
    config: ListenerConfig,
    every: Duration,
    down_for: Duration,
    windows: Rc<Windows>,
    stats: Rc<Stats>,
    stop: Rc<Cell<bool>>,
) {
    let up_for = every - down_for;
    loop {
        let wake = Instant::now() + up_for;
        while Instant::now() < wake {
            if stop.get() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100).min(wake - Instant::now())).await;
        }
        if stop.get() {
            return;
        }
        windows.spans.borrow_mut().push((Instant::now(), None));
        if let Err(e) = remote.stop(false).await {
            stats.record("remote_restart", Err(unintended("the remote did not stop", e.to_string())));
        }
        tokio::time::sleep(down_for).await;
        let mut last_error = String::new();
        let mut started = false;
        for _ in 0..START_ATTEMPTS {
            match remote.start(config.clone()).await {
                Ok(_) => {
                    started = true;
                    break;
                }
                Err(e) => {
                    last_error = e.to_string();
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }
        }
        if !started {
            stats.record("remote_restart", Err(unintended("the remote did not start again", last_error)));
            return;
        }
        if let Some(span) = windows.spans.borrow_mut().last_mut() {
            span.1 = Some(Instant::now());
        }
        stats.record("remote_restart", Ok("stopped and started again"));
    }
}
