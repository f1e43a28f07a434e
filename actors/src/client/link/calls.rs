//! The calls and requests in flight on a link: registering a call with handlers of its own
//! ([`Registered`]), counting requests ([`InFlight`]), and finding the call a message from the
//! server belongs to.

use std::cell::RefCell;
use std::rc::Rc;

use mcpd::client::attribution::{attribute, Arrival};
use mcpd::jsonrpc::RequestId;

use super::call_entry::CallEntry;
use super::state::Link;
use crate::client::handlers::CallHandlers;

/// Unregisters a call when dropped.
pub(crate) struct Registered<'a> {
    link: &'a Link,
    pub(crate) entry: Rc<CallEntry>,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.link.calls.borrow_mut().retain(|c| !Rc::ptr_eq(c, &self.entry));
    }
}

/// Counts a request in flight while it lives.
pub(crate) struct InFlight<'a>(&'a Link);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.set(self.0.in_flight.get().saturating_sub(1));
    }
}

impl Link {
    /// Registers a call with handlers of its own until the returned guard is dropped; its
    /// progress token (when it wants progress) is made here. A gateway's call `passes`: its
    /// usual answer is kept for [`CallEntry::take_passed`].
    pub(crate) fn register(&self, handlers: CallHandlers, passes: bool) -> Registered<'_> {
        let token = handlers.progress.is_some().then(|| {
            let n = self.next_progress.get();
            self.next_progress.set(n + 1);
            mcpd::client::attribution::progress_token(n)
        });
        let routes = handlers.routes();
        let passed = passes.then(RefCell::default);
        let entry = Rc::new(CallEntry { handlers, token, request: RefCell::new(None), passed });
        // Only calls with something to route are looked through when a message arrives.
        if routes {
            self.calls.borrow_mut().push(entry.clone());
        }
        Registered { link: self, entry }
    }

    /// Counts a request in flight until the returned guard is dropped.
    pub(crate) fn in_flight(&self) -> InFlight<'_> {
        self.in_flight.set(self.in_flight.get() + 1);
        InFlight(self)
    }

    /// The registered call a notification or server request belongs to (see
    /// `mcpd::client::attribution`).
    pub(crate) fn call_for(&self, waiting_for: Option<&RequestId>) -> Option<Rc<CallEntry>> {
        let calls = self.calls.borrow();
        if calls.is_empty() {
            return None;
        }
        let arrival = waiting_for.map_or(Arrival::Shared, Arrival::Own);
        let request_of = |c: &Rc<CallEntry>| c.request.borrow().clone();
        // `attribute` reads ids by reference; the ids are cloned out of their cells first.
        let ids: Vec<Option<RequestId>> = calls.iter().map(request_of).collect();
        let index = attribute(&ids, Option::as_ref, arrival, self.in_flight.get())
            .and_then(|found| ids.iter().position(|id| std::ptr::eq(id, found)))?;
        calls.get(index).cloned()
    }

    /// The registered call whose progress token is `token`.
    pub(crate) fn call_with_token(&self, token: &str) -> Option<Rc<CallEntry>> {
        self.calls.borrow().iter().find(|c| c.token.as_deref() == Some(token)).cloned()
    }
}
