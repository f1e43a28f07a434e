//! [`Ctx`]: what every operation of the soak needs — the server under test, an HTTP client, the
//! probe, the counters, the remote's down windows, the catalog's changes. The workload makes it;
//! the operations (sessions, streams, stateless and gateway calls) read it.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::watch;

use crate::remote::Windows;
use crate::stats::Stats;
use crate::tools::Probe;

/// What every operation needs.
pub(crate) struct Ctx {
    /// The server under test.
    pub(crate) port: u16,
    /// Its MCP endpoint.
    pub(crate) url: String,
    pub(crate) http: awc::Client,
    pub(crate) probe: Arc<Probe>,
    pub(crate) stats: Rc<Stats>,
    pub(crate) windows: Rc<Windows>,
    /// How many times the catalog changed.
    pub(crate) toggles: watch::Receiver<u64>,
    pub(crate) slow_pause: Duration,
    /// The stateless `tools/call echo` body.
    pub(crate) echo_body: Bytes,
    /// The stateless `tools/call remote__echo` body (through the gateway).
    pub(crate) gateway_body: Bytes,
}
