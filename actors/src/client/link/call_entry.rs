//! [`CallEntry`]: a call in flight with handlers of its own (progress, server requests), the
//! request carrying it now, and a gateway's result read straight off the wire.

use std::cell::RefCell;

use mcpd::jsonrpc::RequestId;
use mcpd::model::CallToolResult;

use crate::client::handlers::CallHandlers;

/// A call in flight with handlers of its own.
pub(crate) struct CallEntry {
    pub(crate) handlers: CallHandlers,
    /// The progress token sent with it, when it wants progress.
    pub(crate) token: Option<String>,
    /// Its current request (a call that takes several rounds has one per round).
    pub(super) request: RefCell<Option<RequestId>>,
    /// A gateway's call (`Some`): the usual answer to its stateless `tools/call`, read straight
    /// into the result the gateway passes on (`outcome::passed_result`).
    pub(super) passed: Option<RefCell<Option<CallToolResult>>>,
}

impl CallEntry {
    /// Notes the request now carrying the call.
    pub(crate) fn carried_by(&self, id: &RequestId) {
        *self.request.borrow_mut() = Some(id.clone());
    }

    /// Whether the call's usual answer is read into the result a gateway passes on.
    pub(super) fn passes(&self) -> bool {
        self.passed.is_some()
    }

    /// Keeps the result read so.
    pub(super) fn keep_passed(&self, result: CallToolResult) {
        if let Some(passed) = &self.passed {
            *passed.borrow_mut() = Some(result);
        }
    }

    /// Whether the result read so has `isError: true`.
    pub(super) fn passed_is_error(&self) -> bool {
        self.passed.as_ref().is_some_and(|passed| passed.borrow().as_ref().is_some_and(|result| result.is_error))
    }

    /// The result read so, once.
    pub(crate) fn take_passed(&self) -> Option<CallToolResult> {
        self.passed.as_ref().and_then(|passed| passed.borrow_mut().take())
    }
}
