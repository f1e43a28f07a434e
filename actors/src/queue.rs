//! Bounded queues: every message the runtime holds for a peer that may read slowly goes through
//! one of these, so no client, and no child process, can make mcpd buffer without limit.
//!
//! | queue | built where | bound | when it is full |
//! |---|---|---|---|
//! | an SSE response's body ([`EventSender`]) | `http::stream` (stateless streamed answers, session POST answers), `http::session` (`GET /mcp`, `GET /sse`), `http::stateless` (`subscriptions/listen`) | `max_queued_messages` events and `max_queued_bytes` bytes not yet taken by the connection | the reader is **cut off**: one warning naming the stream, `mcpd_sse_streams_cut_total`, the connection closed with an error; a session's events stay in its replay buffer, so its client resumes with `Last-Event-ID`; a stateless request is cancelled |
//! | a request's messages to its client ([`Outbox`]) | `http::stream` (the relay between a running request and its response) | `max_queued_messages` | a notification is **dropped and counted** (`mcpd_notifications_dropped_total`, a warning at the 1st, 10th, 100th… drop); a request to the client fails with an error the tool sees |
//! | stdout of the stdio transport ([`Outbox`]) | `stdio` | `max_queued_messages` | answers **wait** for room (and the transport reads no more input meanwhile); notifications are dropped and counted |
//! | stdin of a stdio server the client started | `client::stdio` | [`crate::client`]'s fixed 64 messages | the call fails: "the server process is not reading its input" |
//!
//! Why notifications are dropped rather than rate-limited: a rate cap bounds neither memory (a
//! reader slower than the cap still falls behind) nor delay, and it slows down a client that
//! reads fine. A bounded queue costs a client that keeps up nothing and loses nothing; one that
//! does not keep up loses progress and log notifications (which only describe work in
//! progress), never an answer. SSE readers are cut off instead of dropping events because a
//! stream with holes cannot be trusted, and a cut stream of a session can be resumed whole.
//!
//! A cut-off reader's connection closes when the connection next takes data (the body fails);
//! one that takes nothing at all is dropped by the kernel after the send timeout
//! (`ConnectionLimits::send_timeout`), which frees what its queue still holds.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use mcpd::jsonrpc::RequestId;
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, Notify};

use crate::config::Limits;
use crate::counts::EdgeCounters;

/// The caps of one queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QueueLimits {
    /// Messages (events) not yet taken by the reader.
    pub(crate) max_messages: usize,
    /// Bytes of events not yet taken by the reader (SSE bodies only).
    pub(crate) max_bytes: usize,
}

impl From<&Limits> for QueueLimits {
    fn from(limits: &Limits) -> Self {
        QueueLimits { max_messages: limits.max_queued_messages.max(1), max_bytes: limits.max_queued_bytes.max(1) }
    }
}

/// Whether `n` is 1, 10, 100, …: the drops worth a log line.
fn worth_logging(n: u64) -> bool {
    n > 0 && 10u64.pow(n.ilog10()) == n
}

/// Whose messages an [`Outbox`] holds, for its log lines (made only when one is logged).
#[derive(Debug)]
pub(crate) enum Label {
    /// The stdio transport's stdout.
    Stdout,
    /// A request's own stream.
    Request {
        /// Its session, if any.
        session: Option<Arc<str>>,
        /// The request.
        id: RequestId,
    },
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Label::Stdout => f.write_str("stdout"),
            Label::Request { session: Some(session), id } => write!(f, "session {session}: request {id}"),
            Label::Request { session: None, id } => write!(f, "stateless request {id}"),
        }
    }
}

/// Messages (serialized JSON-RPC) for one peer: notifications are dropped when the peer does not
/// keep up; answers wait for room. Not `Clone`: a request's outbox has one owner, and stdout's is
/// shared in an `Arc` (so an outbox costs no allocation of its own beyond its channel).
#[derive(Debug)]
pub(crate) struct Outbox {
    tx: mpsc::Sender<Vec<u8>>,
    dropped: AtomicU64,
    what: Label,
    capacity: usize,
    edge: Arc<EdgeCounters>,
}

/// Why a message was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The queue is full: the peer is not reading.
    Full,
    /// The reader is gone.
    Gone,
}

impl Outbox {
    /// An outbox of `capacity` messages for the peer `what` names (in log lines), and its
    /// receiving end.
    pub(crate) fn new(capacity: usize, what: Label, edge: Arc<EdgeCounters>) -> (Outbox, mpsc::Receiver<Vec<u8>>) {
        let capacity = capacity.max(1);
        let (tx, rx) = mpsc::channel(capacity);
        (Outbox { tx, dropped: AtomicU64::new(0), what, capacity, edge }, rx)
    }

    /// Queues a notification, or drops and counts it when the peer is not keeping up.
    pub(crate) fn notify(&self, message: Vec<u8>) {
        if let Err(TrySendError::Full(_)) = self.tx.try_send(message) {
            EdgeCounters::bump(&self.edge.notifications_dropped);
            let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if worth_logging(n) {
                log::warn!(
                    "{}: {n} notification(s) dropped so far: the client is not reading them ({} are queued)",
                    self.what,
                    self.capacity
                );
            }
        }
    }

    /// Queues a message that must not vanish silently (a request to the client).
    pub(crate) fn try_send(&self, message: Vec<u8>) -> Result<(), Refused> {
        self.tx.try_send(message).map_err(|e| match e {
            TrySendError::Full(_) => Refused::Full,
            TrySendError::Closed(_) => Refused::Gone,
        })
    }

    /// Queues an answer, waiting for room.
    pub(crate) async fn send(&self, message: Vec<u8>) -> Result<(), Refused> {
        self.tx.send(message).await.map_err(|_| Refused::Gone)
    }
}

/// What the two ends of an event queue share.
#[derive(Debug)]
struct EventShared {
    /// Bytes queued and not yet taken by the reader.
    bytes: AtomicUsize,
    /// Set once, when the reader is cut off.
    cut: AtomicBool,
    /// Wakes [`EventSender::closed`] when the reader is cut off.
    cut_notify: Notify,
    limits: QueueLimits,
    /// The stream, for the log line.
    what: String,
    edge: Arc<EdgeCounters>,
}

/// The sending end of an SSE response body: a reader that does not keep up is cut off.
#[derive(Debug, Clone)]
pub(crate) struct EventSender {
    tx: mpsc::Sender<Bytes>,
    shared: Arc<EventShared>,
}

/// The receiving end: the response body. After a cut-off it fails, which closes the connection.
#[derive(Debug)]
pub(crate) struct EventReceiver {
    rx: mpsc::Receiver<Bytes>,
    shared: Arc<EventShared>,
    failed: bool,
}

/// A queue for the SSE events of the stream `what` names (in the cut-off's log line).
pub(crate) fn events(limits: QueueLimits, what: String, edge: Arc<EdgeCounters>) -> (EventSender, EventReceiver) {
    let (tx, rx) = mpsc::channel(limits.max_messages.max(1));
    let shared = Arc::new(EventShared {
        bytes: AtomicUsize::new(0),
        cut: AtomicBool::new(false),
        cut_notify: Notify::new(),
        limits,
        what,
        edge,
    });
    (EventSender { tx, shared: shared.clone() }, EventReceiver { rx, shared, failed: false })
}

impl EventSender {
    /// Queues an event; false when the reader is gone or has been cut off (now or before). An
    /// event is always taken into an empty queue, however large.
    pub(crate) fn push(&self, event: Bytes) -> bool {
        self.queue(event, true)
    }

    /// Queues an event already held elsewhere (a replayed event: its bytes are shared with the
    /// replay buffer), checking the event count only.
    pub(crate) fn push_replayed(&self, event: Bytes) -> bool {
        self.queue(event, false)
    }

    fn queue(&self, event: Bytes, check_bytes: bool) -> bool {
        let shared = &*self.shared;
        if shared.cut.load(Ordering::Relaxed) {
            return false;
        }
        let len = event.len();
        // Counted before the send: the reader (on another thread, perhaps) subtracts on receipt.
        let queued = shared.bytes.fetch_add(len, Ordering::Relaxed);
        if check_bytes && queued > 0 && queued + len > shared.limits.max_bytes {
            shared.bytes.fetch_sub(len, Ordering::Relaxed);
            self.cut_off(queued);
            return false;
        }
        match self.tx.try_send(event) {
            Ok(()) => true,
            Err(refused) => {
                shared.bytes.fetch_sub(len, Ordering::Relaxed);
                if matches!(refused, TrySendError::Full(_)) {
                    self.cut_off(queued);
                }
                false
            }
        }
    }

    fn cut_off(&self, queued_bytes: usize) {
        let shared = &*self.shared;
        if shared.cut.swap(true, Ordering::Relaxed) {
            return;
        }
        let events = shared.limits.max_messages.saturating_sub(self.tx.capacity());
        log::warn!(
            "{}: cut off a reader that is not keeping up: {events} events ({queued_bytes} bytes) undelivered \
             (limits: {} events, {} bytes); closing its connection",
            shared.what,
            shared.limits.max_messages,
            shared.limits.max_bytes
        );
        EdgeCounters::bump(&shared.edge.streams_cut);
        shared.cut_notify.notify_waiters();
    }

    /// Whether the reader is gone or cut off.
    pub(crate) fn is_closed(&self) -> bool {
        self.tx.is_closed() || self.shared.cut.load(Ordering::Relaxed)
    }

    /// Resolves when the reader is gone or cut off.
    pub(crate) async fn closed(&self) {
        let cut = self.shared.cut_notify.notified();
        tokio::pin!(cut);
        cut.as_mut().enable();
        if self.shared.cut.load(Ordering::Relaxed) {
            return;
        }
        tokio::select! {
            () = self.tx.closed() => {}
            () = cut => {}
        }
    }
}

impl EventReceiver {
    /// The next event; an error once the reader has been cut off (the queued events are dropped
    /// with the response), then the end.
    pub(crate) fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, std::io::Error>>> {
        if self.failed {
            return Poll::Ready(None);
        }
        if self.shared.cut.load(Ordering::Relaxed) {
            self.failed = true;
            self.rx.close();
            let reason = format!("{}: the reader did not keep up and was cut off", self.shared.what);
            return Poll::Ready(Some(Err(std::io::Error::other(reason))));
        }
        self.rx.poll_recv(cx).map(|event| {
            event.map(|event| {
                self.shared.bytes.fetch_sub(event.len(), Ordering::Relaxed);
                Ok(event)
            })
        })
    }

    /// The next queued event, if one is there now (tests).
    #[cfg(test)]
    pub(crate) fn try_recv(&mut self) -> Option<Bytes> {
        let event = self.rx.try_recv().ok()?;
        self.shared.bytes.fetch_sub(event.len(), Ordering::Relaxed);
        Some(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(max_messages: usize, max_bytes: usize) -> (EventSender, EventReceiver, Arc<EdgeCounters>) {
        let edge = Arc::new(EdgeCounters::default());
        let (tx, rx) = events(QueueLimits { max_messages, max_bytes }, "test stream".into(), edge.clone());
        (tx, rx, edge)
    }

    fn poll(rx: &mut EventReceiver) -> Poll<Option<Result<Bytes, std::io::Error>>> {
        rx.poll_event(&mut Context::from_waker(std::task::Waker::noop()))
    }

    #[test]
    fn a_reader_that_keeps_up_gets_every_event() {
        let (tx, mut rx, edge) = queue(2, 10);
        for round in 0..100u8 {
            assert!(tx.push(Bytes::from(vec![round; 8])));
            assert!(matches!(poll(&mut rx), Poll::Ready(Some(Ok(event))) if event[0] == round));
        }
        assert_eq!(edge.streams_cut.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn too_many_undelivered_events_cut_the_reader_off() {
        let (tx, mut rx, edge) = queue(3, 1 << 20);
        for _ in 0..3 {
            assert!(tx.push(Bytes::from_static(b"e")));
        }
        assert!(!tx.is_closed());
        assert!(!tx.push(Bytes::from_static(b"e")), "the 4th undelivered event is refused");
        assert!(tx.is_closed());
        assert!(!tx.push(Bytes::from_static(b"e")), "and so is everything after it");
        assert_eq!(edge.streams_cut.load(Ordering::Relaxed), 1, "counted once");
        assert!(matches!(poll(&mut rx), Poll::Ready(Some(Err(_)))), "the body fails: the connection closes");
        assert!(matches!(poll(&mut rx), Poll::Ready(None)));
    }

    #[test]
    fn too_many_undelivered_bytes_cut_the_reader_off_but_one_large_event_passes() {
        let (tx, mut rx, _) = queue(100, 10);
        assert!(tx.push(Bytes::from(vec![0; 50])), "an empty queue takes any event");
        assert!(matches!(poll(&mut rx), Poll::Ready(Some(Ok(_)))));
        assert!(tx.push(Bytes::from(vec![0; 6])));
        assert!(!tx.push(Bytes::from(vec![0; 6])), "12 bytes undelivered: over 10");
        assert!(tx.is_closed());
    }

    #[test]
    fn replayed_events_are_held_to_the_event_count_only() {
        let (tx, _rx, _) = queue(3, 10);
        for _ in 0..3 {
            assert!(tx.push_replayed(Bytes::from(vec![0; 8])));
        }
        assert!(!tx.push_replayed(Bytes::from(vec![0; 8])));
    }

    #[actix_rt::test]
    async fn closed_resolves_when_the_reader_is_cut_off_or_gone() {
        let (tx, _rx, _) = queue(1, 100);
        assert!(tx.push(Bytes::from_static(b"a")));
        assert!(!tx.push(Bytes::from_static(b"b")));
        tx.closed().await;
        let (tx, rx, _) = queue(1, 100);
        drop(rx);
        tx.closed().await;
        assert!(!tx.push(Bytes::from_static(b"a")));
    }

    #[actix_rt::test]
    async fn an_outbox_drops_notifications_but_answers_wait() {
        let edge = Arc::new(EdgeCounters::default());
        let (outbox, mut rx) = Outbox::new(2, Label::Stdout, edge.clone());
        let outbox = Arc::new(outbox);
        for _ in 0..5 {
            outbox.notify(b"n".to_vec());
        }
        assert_eq!(edge.notifications_dropped.load(Ordering::Relaxed), 3);
        assert_eq!(outbox.try_send(b"r".to_vec()), Err(Refused::Full));
        let waiting = Arc::clone(&outbox);
        let answer = actix_rt::spawn(async move { waiting.send(b"answer".to_vec()).await });
        assert_eq!(rx.recv().await.as_deref(), Some(&b"n"[..]));
        assert_eq!(rx.recv().await.as_deref(), Some(&b"n"[..]));
        assert_eq!(rx.recv().await.as_deref(), Some(&b"answer"[..]));
        assert_eq!(answer.await.unwrap(), Ok(()));
        drop(rx);
        assert_eq!(outbox.try_send(b"r".to_vec()), Err(Refused::Gone));
    }

    #[test]
    fn drops_are_logged_at_powers_of_ten() {
        let logged: Vec<u64> = (0..=1000).filter(|n| worth_logging(*n)).collect();
        assert_eq!(logged, [1, 10, 100, 1000]);
    }
}
