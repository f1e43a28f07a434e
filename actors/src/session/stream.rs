//! SSE streams of a session: event ids that name their stream, and the replay buffer that lets
//! a client resume a stream with `GET` + `Last-Event-ID` (the framing is [`sse`]'s).
//!
//! An event id is `<stream>:<seq>`. Stream 0 is the session's standalone stream (opened with
//! `GET /mcp`); every POST that answers with SSE gets a new stream. A stream buffers the events
//! it sent (at most [`REPLAY_CAPACITY`]) until it is finished and delivered, so a client whose
//! connection dropped can reconnect and miss nothing.
//!
//! The connection attached to a stream is a bounded [`EventSender`]: a reader that does not
//! keep up is cut off (logged, counted) and detached, and its events stay in the buffer for it
//! to resume ([`crate::queue`] states the policy).

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;

use crate::queue::EventSender;
use crate::sse;

/// How many events a stream keeps for replay.
pub(crate) const REPLAY_CAPACITY: usize = 256;
/// The reconnection delay the priming event asks clients to wait.
pub(crate) const RETRY: Duration = Duration::from_millis(3000);
/// The standalone stream of a session.
pub(crate) const STANDALONE: u64 = 0;

/// Parses `<stream>:<seq>`.
pub(crate) fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.trim().split_once(':')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

/// One stream's state.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    next_seq: u64,
    buffer: VecDeque<(u64, Bytes)>,
    attached: Option<EventSender>,
    finished: bool,
}

impl Stream {
    /// Whether the stream has sent its last event.
    pub(crate) fn finished(&self) -> bool {
        self.finished
    }

    /// Whether a live connection is attached.
    pub(crate) fn attached(&self) -> bool {
        self.attached.as_ref().is_some_and(|s| !s.is_closed())
    }

    /// Allocates the next event id of stream `stream`.
    fn next_id(&mut self, stream: u64) -> (u64, String) {
        self.next_seq += 1;
        (self.next_seq, format!("{stream}:{}", self.next_seq))
    }

    /// Attaches a connection, first sending the priming event when `prime` (the 2024-11-05
    /// transport has none: its clients would read the empty event as a message).
    pub(crate) fn attach(&mut self, stream: u64, sender: EventSender, prime: bool) {
        if prime {
            sender.push(sse::priming(&format!("{stream}:{}", self.next_seq), RETRY));
        }
        self.attached = Some(sender);
    }

    /// Attaches a connection that resumes after event `after`: replays what it missed.
    /// Answers false when events it missed are no longer buffered.
    pub(crate) fn resume(&mut self, stream: u64, after: u64, sender: EventSender) -> bool {
        let oldest = self.buffer.front().map_or(self.next_seq + 1, |(seq, _)| *seq);
        if after + 1 < oldest && after < self.next_seq {
            return false;
        }
        sender.push(sse::priming(&format!("{stream}:{after}"), RETRY));
        for (_, event) in self.buffer.iter().filter(|(seq, _)| *seq > after) {
            // The events' bytes are the buffer's: replaying them costs the reader's queue no memory.
            if !sender.push_replayed(event.clone()) {
                return true;
            }
        }
        if self.finished {
            self.buffer.clear();
        } else {
            self.attached = Some(sender);
        }
        true
    }

    /// Sends one JSON-RPC message as an event; `last` finishes the stream (and closes the
    /// connection after it). Answers the event's sequence number.
    pub(crate) fn emit(&mut self, stream: u64, json: &[u8], last: bool) -> u64 {
        let (seq, id) = self.next_id(stream);
        let event = sse::message(Some(&id), json);
        let delivered = match &self.attached {
            Some(sender) => sender.push(event.clone()),
            None => false,
        };
        if !delivered {
            self.attached = None;
        }
        if last {
            self.finished = true;
            self.attached = None;
        }
        if last && delivered {
            // The client has everything; nothing is left to replay.
            self.buffer.clear();
            return seq;
        }
        self.buffer.push_back((seq, event));
        while self.buffer.len() > REPLAY_CAPACITY {
            self.buffer.pop_front();
        }
        seq
    }

    /// Sends a keep-alive comment if attached; drops a connection that is gone.
    pub(crate) fn ping(&mut self) {
        if let Some(sender) = &self.attached {
            if !sender.push(sse::keep_alive()) {
                self.attached = None;
            }
        }
    }

    /// Closes the attached connection, keeping the buffer for resumption.
    pub(crate) fn detach(&mut self) {
        self.attached = None;
    }

    /// Whether nothing is left to deliver or resume.
    pub(crate) fn spent(&self) -> bool {
        self.finished && self.buffer.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counts::EdgeCounters;
    use crate::queue::{events, EventReceiver, QueueLimits};
    use std::sync::Arc;

    fn channel(max_messages: usize) -> (EventSender, EventReceiver) {
        events(QueueLimits { max_messages, max_bytes: 1 << 20 }, "test".into(), Arc::new(EdgeCounters::default()))
    }

    fn roomy() -> (EventSender, EventReceiver) {
        channel(1024)
    }

    fn drain(rx: &mut EventReceiver) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(b) = rx.try_recv() {
            out.push(String::from_utf8(b.to_vec()).unwrap());
        }
        out
    }

    #[test]
    fn events_are_framed_with_ids_and_primed() {
        let (tx, mut rx) = roomy();
        let mut s = Stream::default();
        s.attach(3, tx, true);
        s.emit(3, br#"{"a":1}"#, false);
        s.emit(3, br#"{"b":2}"#, true);
        let events = drain(&mut rx);
        assert_eq!(events[0], "id: 3:0\nretry: 3000\ndata: \n\n");
        assert_eq!(events[1], "id: 3:1\nevent: message\ndata: {\"a\":1}\n\n");
        assert_eq!(events[2], "id: 3:2\nevent: message\ndata: {\"b\":2}\n\n");
        assert!(s.spent(), "delivered and finished: nothing kept");
        assert_eq!(parse_event_id("3:2"), Some((3, 2)));
        assert_eq!(parse_event_id("x"), None);
    }

    #[test]
    fn a_detached_stream_buffers_and_replays_after_the_last_seen_id() {
        let (tx, mut rx) = roomy();
        let mut s = Stream::default();
        s.attach(1, tx, true);
        s.emit(1, b"1", false);
        s.detach();
        drop(rx.try_recv());
        s.emit(1, b"2", false);
        s.emit(1, b"3", true);
        assert!(!s.spent());
        let (tx2, mut rx2) = roomy();
        assert!(s.resume(1, 1, tx2));
        let replayed = drain(&mut rx2);
        assert_eq!(replayed.len(), 3, "priming + events 2 and 3: {replayed:?}");
        assert!(replayed[1].contains("data: 2"));
        assert!(replayed[2].contains("data: 3"));
        assert!(s.spent());
        let _ = drain(&mut rx);
    }

    #[test]
    fn a_reader_that_falls_behind_is_detached_and_can_resume_everything() {
        let (tx, mut rx) = channel(4);
        let mut s = Stream::default();
        s.attach(0, tx, true);
        for n in 0..10 {
            s.emit(0, format!("{n}").as_bytes(), false);
        }
        assert!(!s.attached(), "cut off after 4 undelivered events");
        let delivered = drain(&mut rx);
        assert_eq!(delivered.len(), 4, "priming + 3 events: {delivered:?}");
        let (tx2, mut rx2) = roomy();
        assert!(s.resume(0, 3, tx2), "every event is still buffered");
        let replayed = drain(&mut rx2);
        assert_eq!(replayed.len(), 1 + 7, "priming + events 4..=10: {replayed:?}");
        assert!(replayed[7].contains("data: 9"));
    }
}
