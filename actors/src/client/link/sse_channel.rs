//! [`SseChannel`]: an open 2024-11-05 HTTP+SSE stream, where to POST, and the requests waiting
//! for their response on the stream. The wire holds it; `legacy_sse` opens and uses it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use mcpd::jsonrpc::RequestId;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::client::error::ClientError;

/// Requests waiting for their response on the stream, by id.
pub(super) type Pending = Rc<RefCell<HashMap<RequestId, oneshot::Sender<Result<Value, ClientError>>>>>;

/// An open HTTP+SSE stream and where to POST.
pub(super) struct SseChannel {
    /// The `endpoint` event's URL, resolved against the stream's.
    pub(super) post_url: String,
    /// Shared with the reader, which answers them.
    pub(super) pending: Pending,
    /// Reads the stream.
    pub(super) reader: actix_rt::task::JoinHandle<()>,
}

impl SseChannel {
    /// Where our messages go.
    pub(super) fn post_url(&self) -> &str {
        &self.post_url
    }

    /// Stops the reader; the requests still waiting fail with [`ClientError::Closed`].
    pub(super) fn close(&self) {
        self.reader.abort();
        for (_, waiter) in self.pending.borrow_mut().drain() {
            let _ = waiter.send(Err(ClientError::Closed));
        }
    }
}

impl Drop for SseChannel {
    fn drop(&mut self) {
        self.close();
    }
}
