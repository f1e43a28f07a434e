//! What the soak counts: every HTTP request it sends; every operation's outcome by kind (ok, an
//! expected failure such as a call through the gateway while its remote restarts or a slow
//! reader cut off by the server, or an unintended failure); and, once a second, a sample of the
//! process's RSS, those totals and the live actors of the server under test.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::sync::Arc;

use mcpd_actors::{ActorKind, Mcpd};
use serde::Serialize;

use crate::tools::Probe;

/// How an operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Class {
    /// As it should.
    Ok,
    /// A failure the workload provokes on purpose.
    Expected,
    /// A failure that should not happen.
    Unintended,
}

/// An operation that did not succeed: whether the soak provoked it, what kind of failure it is
/// (a short fixed label), and the detail of this one.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) class: Class,
    pub(crate) what: &'static str,
    pub(crate) detail: String,
}

/// A failure that should not happen.
pub(crate) fn unintended(what: &'static str, detail: impl Into<String>) -> Failure {
    Failure { class: Class::Unintended, what, detail: detail.into() }
}

/// A failure the workload provokes on purpose.
pub(crate) fn expected(what: &'static str, detail: impl Into<String>) -> Failure {
    Failure { class: Class::Expected, what, detail: detail.into() }
}

/// What an operation came to: a short label of how it succeeded, or its failure.
pub(crate) type Outcome = Result<&'static str, Failure>;

/// How many times an outcome happened, with a few of its details.
#[derive(Debug, Default, Clone, Serialize)]
pub(crate) struct Tally {
    pub(crate) count: u64,
    pub(crate) examples: Vec<String>,
}

/// The counters of one load generator (a single-threaded actix system: plain cells).
#[derive(Debug, Default)]
pub(crate) struct Stats {
    requests: Cell<u64>,
    totals: Cell<[u64; 3]>,
    outcomes: RefCell<BTreeMap<(&'static str, Class, &'static str), Tally>>,
}

impl Stats {
    /// One more HTTP request sent.
    pub(crate) fn request(&self) {
        self.requests.set(self.requests.get() + 1);
    }

    /// HTTP requests sent so far.
    pub(crate) fn requests(&self) -> u64 {
        self.requests.get()
    }

    /// Records how operation `op` ended.
    pub(crate) fn record(&self, op: &'static str, outcome: Outcome) {
        let (class, what, detail) = match outcome {
            Ok(what) => (Class::Ok, what, None),
            Err(failure) => (failure.class, failure.what, Some(failure.detail)),
        };
        let mut totals = self.totals.get();
        totals[class as usize] += 1;
        self.totals.set(totals);
        let mut outcomes = self.outcomes.borrow_mut();
        let tally = outcomes.entry((op, class, what)).or_default();
        tally.count += 1;
        if let Some(detail) = detail {
            if tally.examples.len() < 3 && !tally.examples.contains(&detail) {
                tally.examples.push(detail);
            }
        }
    }

    /// Operations so far: ok, expected failures, unintended failures.
    pub(crate) fn totals(&self) -> [u64; 3] {
        self.totals.get()
    }

    /// Every outcome so far, by operation, class and kind.
    pub(crate) fn outcomes(&self) -> Vec<(&'static str, Class, &'static str, Tally)> {
        self.outcomes.borrow().iter().map(|((op, class, what), tally)| (*op, *class, *what, tally.clone())).collect()
    }
}

/// The live actors of the server under test (and the `soak_wait` calls running in it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Live {
    /// Sessions in the registry.
    pub(crate) sessions: usize,
    /// `Session` actors.
    pub(crate) session_actors: i64,
    /// `ToolExecutor` actors.
    pub(crate) executors: i64,
    /// `ClientConnection` actors (the gateway's).
    pub(crate) client_connections: i64,
    /// `soak_wait` calls still running.
    pub(crate) waits: i64,
}

impl Live {
    /// Now.
    pub(crate) fn take(runtime: &Mcpd, probe: &Arc<Probe>) -> Live {
        let counts = runtime.counts();
        Live {
            sessions: runtime.live_sessions(),
            session_actors: counts.live(ActorKind::Session),
            executors: counts.live(ActorKind::ToolExecutor),
            client_connections: counts.live(ActorKind::ClientConnection),
            waits: probe.running(),
        }
    }
}

/// One second of the run.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Sample {
    /// Seconds since the load began.
    pub(crate) t: f64,
    /// Resident set size of this process, in KiB.
    pub(crate) rss_kib: u64,
    /// HTTP requests sent so far.
    pub(crate) requests: u64,
    /// Operations so far: ok, expected failures, unintended failures.
    pub(crate) operations: [u64; 3],
    /// Live actors.
    pub(crate) live: Live,
}

/// This process's resident set size in KiB (`VmRSS` of `/proc/self/status`; 0 where absent).
pub(crate) fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| line.strip_prefix("VmRSS:")?.trim().strip_suffix("kB")?.trim().parse().ok())
        })
        .unwrap_or(0)
}
