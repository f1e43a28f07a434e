//! The messages a `Session` actor handles: streams opened, written, resumed and detached,
//! subscriptions changed, catalog changes, a reconcile, a due check, the end. Apart from the
//! actor so that those who send them (the HTTP handlers, the registry, the peer of a request)
//! need not import it.

use actix::Message;
use mcpd::catalog::CatalogEvent;
use mcpd::server::Subscription;

use super::end::EndReason;
use super::stream::STANDALONE;
use crate::queue::EventSender;

/// Open a new SSE stream for a POST whose answer is streamed; answers its number. The
/// priming event is sent to `sender` at once.
#[derive(Debug, Message)]
#[rtype(result = "u64")]
pub(crate) struct OpenStream {
    /// The HTTP response body's sender (bounded: a reader that falls behind is detached).
    pub sender: EventSender,
    /// The request the stream answers.
    pub request: Option<mcpd::jsonrpc::RequestId>,
}

/// Send a JSON-RPC message on a stream; `last` finishes it. Server-initiated messages go on the
/// standalone stream ([`Emit::standalone`]).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(crate) struct Emit {
    /// The stream.
    pub stream: u64,
    /// The serialized message.
    pub message: Vec<u8>,
    /// Whether this is the stream's final message (the response).
    pub last: bool,
}

impl Emit {
    /// A server-initiated message, for the standalone stream.
    pub(crate) fn standalone(message: Vec<u8>) -> Self {
        Emit { stream: STANDALONE, message, last: false }
    }
}

/// Why a `GET` could not attach.
#[derive(Debug, Clone, PartialEq, Eq, derive_more::Display)]
pub(crate) enum ResumeError {
    /// Another connection holds the standalone stream.
    #[display("the session already has an open standalone stream")]
    Conflict,
    /// The `Last-Event-ID` names no stream this session still buffers.
    #[display("Last-Event-ID {_0:?} names no stream this session can resume")]
    UnknownEvent(String),
}

/// Attach a `GET`: with `Last-Event-ID`, resume that stream after that event; without it,
/// open the standalone stream.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), ResumeError>")]
pub(crate) struct Resume {
    /// The `Last-Event-ID` header.
    pub last_event_id: Option<String>,
    /// The HTTP response body's sender (bounded: a reader that falls behind is detached).
    pub sender: EventSender,
}

/// Close a stream's connection without ending the stream (the client resumes it later).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(crate) struct DetachStream {
    /// The stream.
    pub stream: u64,
}

/// `resources/subscribe` or `resources/unsubscribe`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(crate) struct ChangeSubscription(pub Subscription);

/// The catalog changed: the session's client hears about it on the standalone stream when it
/// wants to (list changes always, resource updates when subscribed).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(crate) struct CatalogChanged(pub CatalogEvent);

/// Cluster mode: check the session's record now (the store's news were lost: a DELETE or a
/// lost record may have been missed).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(crate) struct Reconcile;

/// A check the session filed is due (sent by the sweeper, [`super::expiry`]): the session ends
/// if it has been idle for its idle time, else does what is due (keep-alives, a record refresh)
/// and files its next check.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(crate) struct Sweep {
    /// The slot the check was filed in.
    pub slot: u64,
}

/// End the session.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(crate) struct StopSession {
    /// Why.
    pub reason: EndReason,
}
