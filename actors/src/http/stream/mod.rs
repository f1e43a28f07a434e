//! Answers that switch from JSON to SSE, shared by the stateless and the session wires.
//!
//! A request that may talk to the client on the way (progress, logs, requests to the client)
//! runs with a channel for those messages. If it finishes before sending any, the answer is
//! plain JSON; as soon as it sends one, the answer becomes a `text/event-stream`: the messages
//! as they come, then the response, and the stream ends. Where the events go is a [`Sink`]:
//!
//! - [`BodySink`] (stateless wire) writes straight to the response body; the client closing
//!   the stream cancels the request.
//! - [`SessionSink`] (sessions) writes through the `Session` actor, which numbers the events
//!   and keeps them for replay; the request may detach the connection (SSE polling) and the
//!   client resumes with `GET` + `Last-Event-ID`.
//!
//! The SSE framing of every event is in [`sse`]. Both channels of an exchange are bounded
//! ([`crate::queue`]): the messages a request sends on the way (an [`Outbox`]: notifications
//! beyond `max_queued_messages` are dropped and counted) and the response body (an
//! [`EventSender`]: a reader that falls `max_queued_messages` events or `max_queued_bytes`
//! behind is cut off).

pub(crate) mod sse;

use std::future::Future;
use std::pin::Pin;

use std::sync::Arc;

use actix::Addr;
use actix_web::HttpResponse;
use mcpd::jsonrpc::RequestId;
use mcpd::server::{encode_answer, Reply};
use mcpd::version::Era;
use mcpd::ProtocolError;
use tokio::sync::mpsc::Receiver;
use tokio::sync::oneshot;

use super::reply::{error_response, json_bytes, result_response, session_not_found};
use crate::counts::EdgeCounters;
use crate::queue::{self, EventSender, Label, Outbox, QueueLimits};
use crate::session::{BusyGuard, DetachStream, Emit, OpenStream, Session};

/// What a request came to: its result or error, or `None` when it was cancelled (a cancelled
/// request gets no answer).
pub(crate) type RequestAnswer = Option<Result<Reply, ProtocolError>>;

/// A running request whose answer may be streamed.
pub(super) struct Exchange<F> {
    /// The request's id.
    pub(super) id: RequestId,
    /// The era its errors are numbered for.
    pub(super) era: Era,
    /// The request's work, boxed by whoever starts the exchange (this is the rare path: kept
    /// inline, its state would make every request's future larger).
    pub(super) execution: Pin<Box<F>>,
    /// What the request sends the client before its answer (serialized JSON-RPC messages; the
    /// receiving end of the request's [`Outbox`]).
    pub(super) messages: Receiver<Vec<u8>>,
    /// Fired when the request asks to close its stream's connection early (sessions).
    pub(super) close: Option<oneshot::Receiver<()>>,
}

/// Where a streamed answer's events go, and how its wire answers when nothing was streamed.
pub(super) trait Sink: Sized + 'static {
    /// The plain JSON answer of a request that sent nothing before it finished.
    fn json(id: &RequestId, answer: RequestAnswer) -> HttpResponse;
    /// Sends one serialized message as an event; `last` (the answer) ends the stream.
    fn send(&self, message: Vec<u8>, last: bool);
    /// Closes the connection but keeps the stream, for the client to resume.
    fn detach(&self);
    /// Resolves when the client went away and the request should stop.
    fn abandoned(&self) -> impl Future<Output = ()>;
}

/// How a streamed answer begins.
enum Start {
    /// The request finished, but had sent this message first.
    Done(Vec<u8>, RequestAnswer),
    /// The request runs and has sent this message (`None`: it asked to detach first).
    Running(Option<Vec<u8>>),
}

/// Answers `exchange`: plain JSON when the request finishes before sending anything, otherwise
/// the event stream of the sink `open` makes (its error response when it cannot make one).
pub(super) async fn respond<F, S, O, OF>(exchange: Exchange<F>, open: O) -> HttpResponse
where
    F: Future<Output = RequestAnswer> + 'static,
    S: Sink,
    O: FnOnce() -> OF,
    OF: Future<Output = Result<(S, HttpResponse), HttpResponse>>,
{
    let Exchange { id, era, mut execution, mut messages, mut close } = exchange;
    let start = tokio::select! {
        biased;
        answer = &mut execution => match messages.try_recv() {
            Err(_) => return S::json(&id, answer),
            Ok(first) => Start::Done(first, answer),
        },
        first = messages.recv() => match first {
            Some(first) => Start::Running(Some(first)),
            None => return S::json(&id, execution.await),
        },
        () = close_requested(&mut close) => Start::Running(None),
    };
    let (sink, response) = match open().await {
        Ok(opened) => opened,
        Err(response) => return response,
    };
    if matches!(start, Start::Running(None)) {
        // The request closed its stream before sending anything: the client gets the priming
        // event, reconnects with its id, and receives the rest on the GET.
        sink.detach();
    }
    actix_rt::spawn(async move {
        let answer = match start {
            Start::Done(first, answer) => {
                sink.send(first, false);
                answer
            }
            Start::Running(first) => {
                if let Some(first) = first {
                    sink.send(first, false);
                }
                loop {
                    tokio::select! {
                        answer = &mut execution => break answer,
                        next = messages.recv() => match next {
                            Some(message) => sink.send(message, false),
                            None => break execution.await,
                        },
                        () = close_requested(&mut close) => sink.detach(),
                        // On this wire the client going away cancels the request.
                        () = sink.abandoned() => return,
                    }
                }
            }
        };
        while let Ok(message) = messages.try_recv() {
            sink.send(message, false);
        }
        if let Some(outcome) = answer {
            sink.send(encode_answer(&id, era, &outcome), true);
        }
    });
    response
}

/// Resolves when the request asks to close its stream; never when it drops the trigger.
async fn close_requested(rx: &mut Option<oneshot::Receiver<()>>) {
    if let Some(receiver) = rx.as_mut() {
        let fired = receiver.await.is_ok();
        *rx = None;
        if fired {
            return;
        }
    }
    std::future::pending().await
}

/// An outbox for the messages of the request `what` names, and the receiving end for its
/// [`Exchange`].
pub(super) fn outbox(limits: QueueLimits, what: Label, edge: &Arc<EdgeCounters>) -> (Outbox, Receiver<Vec<u8>>) {
    Outbox::new(limits.max_messages, what, edge.clone())
}

/// The stateless wire's sink: events go straight to the response body.
pub(super) struct BodySink(EventSender);

impl BodySink {
    /// A sink and the response it feeds; `what` names the stream in a cut-off's log line.
    pub(super) fn open(limits: QueueLimits, what: String, edge: Arc<EdgeCounters>) -> (BodySink, HttpResponse) {
        let (body, events) = queue::events(limits, what, edge);
        (BodySink(body), sse::response(events, ()))
    }
}

impl Sink for BodySink {
    fn json(id: &RequestId, answer: RequestAnswer) -> HttpResponse {
        match answer {
            Some(Ok(result)) => result_response(id, &result),
            Some(Err(error)) => error_response(Some(id), &error, Era::Stateless),
            None => HttpResponse::Accepted().finish(),
        }
    }

    fn send(&self, message: Vec<u8>, _last: bool) {
        // A reader cut off here is gone: `abandoned` resolves and the request is cancelled.
        self.0.push(sse::message(None, &message));
    }

    fn detach(&self) {
        // Stateless requests have no stream to resume: nothing to detach.
    }

    fn abandoned(&self) -> impl Future<Output = ()> {
        self.0.closed()
    }
}

/// A session's sink: events go through the `Session` actor, which numbers and buffers them.
pub(super) struct SessionSink {
    session: Addr<Session>,
    stream: u64,
    /// Keeps the session from expiring while the answer streams.
    _busy: BusyGuard,
}

impl SessionSink {
    /// Opens a new stream of `session` for the answer to `request` and the response it feeds
    /// (404 when the session ended); `what` names the stream in a cut-off's log line.
    pub(super) async fn open(
        session: Addr<Session>,
        busy: BusyGuard,
        limits: QueueLimits,
        what: String,
        edge: Arc<EdgeCounters>,
        request: RequestId,
    ) -> Result<(SessionSink, HttpResponse), HttpResponse> {
        let (body, events) = queue::events(limits, what, edge);
        let opened = OpenStream { sender: body, request: Some(request) };
        let stream = session.send(opened).await.map_err(|_| session_not_found())?;
        Ok((SessionSink { session, stream, _busy: busy }, sse::response(events, ())))
    }
}

impl Sink for SessionSink {
    fn json(id: &RequestId, answer: RequestAnswer) -> HttpResponse {
        match answer {
            Some(outcome) => json_bytes(200, encode_answer(id, Era::Stateful, &outcome)),
            None => HttpResponse::Accepted().finish(),
        }
    }

    fn send(&self, message: Vec<u8>, last: bool) {
        self.session.do_send(Emit { stream: self.stream, message, last });
    }

    fn detach(&self) {
        self.session.do_send(DetachStream { stream: self.stream });
    }

    fn abandoned(&self) -> impl Future<Output = ()> {
        // The client can resume a session's stream: going away does not stop the request.
        std::future::pending()
    }
}
