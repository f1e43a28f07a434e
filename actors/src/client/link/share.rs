//! What a connection's link shares with its *satellites*: links on other threads that send the
//! connection's stateless calls from the caller's own thread.
//!
//! On the stateless 2026-07-28 wire a call needs no state of the connection's thread (no
//! session, no stream): only the wire itself, the `x-mcp-header` parameters of the listed
//! tools and, with OAuth, the current bearer token. The primary link (the `ClientConnection`'s)
//! publishes those here as they change; a satellite (see `ClientManager`) reads them on each
//! call. So a gateway's call stays on the worker thread that received it: no hop to the
//! connection's thread and back, which costs two thread wake-ups per call.
//!
//! A satellite never negotiates and never authorizes: while the primary's wire is not the
//! stateless one, or a satellite's request is answered `401` / `403`, the call goes through the
//! primary instead, which negotiates and runs OAuth.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use awc::http::header::HeaderValue;
use mcpd::headers::HeaderParam;

/// The tool header parameters, shared whole (replaced on each listing, read per call).
pub(crate) type ToolParams = Arc<HashMap<String, Vec<HeaderParam>>>;

/// Published by a primary link, read by its satellites.
#[derive(Debug)]
pub(crate) struct LinkShare {
    /// The primary's wire is the stateless one (satellites may call).
    stateless: AtomicBool,
    /// The primary is configured for OAuth (a satellite's `401` may be the primary's to answer).
    oauth: bool,
    /// The listed tools' `x-mcp-header` parameters.
    tool_params: Mutex<ToolParams>,
    /// The bearer the primary last sent (OAuth).
    bearer: Mutex<Option<HeaderValue>>,
}

impl LinkShare {
    pub(crate) fn new(oauth: bool) -> Arc<LinkShare> {
        Arc::new(LinkShare {
            stateless: AtomicBool::new(false),
            oauth,
            tool_params: Mutex::default(),
            bearer: Mutex::new(None),
        })
    }

    /// Whether satellites may send calls now.
    pub(crate) fn stateless(&self) -> bool {
        self.stateless.load(Ordering::Acquire)
    }

    /// Whether the primary answers `401`s with OAuth.
    pub(crate) fn oauth(&self) -> bool {
        self.oauth
    }

    pub(super) fn set_stateless(&self, stateless: bool) {
        self.stateless.store(stateless, Ordering::Release);
    }

    pub(super) fn set_tool_params(&self, params: ToolParams) {
        *self.tool_params.lock().unwrap_or_else(PoisonError::into_inner) = params;
    }

    pub(super) fn tool_params(&self, tool: &str) -> Option<Vec<HeaderParam>> {
        self.tool_params.lock().unwrap_or_else(PoisonError::into_inner).get(tool).cloned()
    }

    pub(super) fn set_bearer(&self, bearer: Option<&HeaderValue>) {
        let mut current = self.bearer.lock().unwrap_or_else(PoisonError::into_inner);
        if current.as_ref() != bearer {
            *current = bearer.cloned();
        }
    }

    pub(super) fn bearer(&self) -> Option<HeaderValue> {
        self.bearer.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_publishes_the_wire_params_and_bearer() {
        let share = LinkShare::new(true);
        assert!(!share.stateless() && share.oauth());
        share.set_stateless(true);
        assert!(share.stateless());
        let params = HashMap::from([("search".to_owned(), Vec::new())]);
        share.set_tool_params(Arc::new(params));
        assert_eq!(share.tool_params("search"), Some(Vec::new()));
        assert_eq!(share.tool_params("other"), None);
        share.set_bearer(Some(&HeaderValue::from_static("Bearer t")));
        assert_eq!(share.bearer(), Some(HeaderValue::from_static("Bearer t")));
        share.set_bearer(None);
        assert_eq!(share.bearer(), None);
    }
}
