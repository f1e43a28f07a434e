//! Opening idle sessions: `initialize` requests over keep-alive connections, each answer a new
//! session that is never used again. Progress is counted as answers arrive; the time at every
//! [`BUCKET`]th session gives the opening rate as the number held grows.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::conn::Conn;
use crate::wire::{http_request, INITIALIZE_BODY, PROTOCOL_VERSION};

/// Sessions per opening-rate bucket.
pub(crate) const BUCKET: u64 = 100_000;

/// What the openers share with the main thread.
pub(crate) struct Opening {
    /// Sessions opened so far.
    pub(crate) opened: AtomicU64,
    /// When each multiple of [`BUCKET`] was reached (index 0: the start).
    pub(crate) marks: Mutex<Vec<Instant>>,
    /// The first error, which stops every opener.
    pub(crate) error: Mutex<Option<String>>,
}

impl Opening {
    pub(crate) fn new() -> Arc<Opening> {
        Arc::new(Opening {
            opened: AtomicU64::new(0),
            marks: Mutex::new(vec![Instant::now()]),
            error: Mutex::new(None),
        })
    }

    fn failed(&self) -> bool {
        self.error.lock().is_ok_and(|e| e.is_some())
    }

    fn fail(&self, message: String) {
        if let Ok(mut error) = self.error.lock() {
            error.get_or_insert(message);
        }
    }

    /// Sessions per second in each full bucket.
    pub(crate) fn rates(&self) -> Vec<f64> {
        let marks = self.marks.lock().map(|m| m.clone()).unwrap_or_default();
        marks.windows(2).map(|w| BUCKET as f64 / (w[1] - w[0]).as_secs_f64()).collect()
    }
}

/// Opens `total` sessions on `port` over `connections` connections (on the calling thread's
/// runtime); the first error ends every connection's loop.
pub(crate) async fn open(port: u16, total: u64, connections: usize, opening: Arc<Opening>) {
    let request = http_request(port, "POST", &[("MCP-Protocol-Version", PROTOCOL_VERSION)], INITIALIZE_BODY);
    let request: Arc<[u8]> = request.into();
    let next = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..connections)
        .map(|_| {
            let (request, next, opening) = (request.clone(), next.clone(), opening.clone());
            tokio::task::spawn_local(async move {
                let mut conn = match Conn::connect(port).await {
                    Ok(conn) => conn,
                    Err(e) => return opening.fail(e),
                };
                while next.fetch_add(1, Ordering::Relaxed) < total && !opening.failed() {
                    match conn.exchange(&request, b"\"protocolVersion\"").await {
                        Ok(reply) if reply.status == 200 && reply.session.is_some() => {
                            let done = opening.opened.fetch_add(1, Ordering::Relaxed) + 1;
                            if done % BUCKET == 0 {
                                if let Ok(mut marks) = opening.marks.lock() {
                                    marks.push(Instant::now());
                                }
                            }
                        }
                        Ok(reply) => {
                            let body = reply.excerpt.unwrap_or_default();
                            return opening.fail(format!("initialize answered {}: {body}", reply.status));
                        }
                        Err(e) => return opening.fail(format!("initialize: {e}")),
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        let _ = task.await;
    }
}
