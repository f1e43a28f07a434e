//! The event log of shared sessions: every SSE event a session's streams send, in Redis, so
//! that a client may resume a stream on another instance than the one that sends it.
//!
//! Each stream is `mcpd:events:<session>:<stream>`, written in order by one writer task per
//! session ([`EventWriter`]: pipelined, bounded, at most [`REPLAY_CAPACITY`] events kept per
//! stream, expiring with the idle time), with the stream's owner instance and request id in
//! `mcpd:stream:<session>:<stream>`. A `GET` with a `Last-Event-ID` of a stream another instance
//! sends is replayed from there ([`Events::resume`]) and then tailed every [`TAIL_POLL`] until
//! its last event; when the owner's heartbeat is gone (it died), the request ends with a
//! JSON-RPC error event. Stream numbers carry the instance's tag in their high bits, so no two
//! instances use the same.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpd::jsonrpc::RequestId;
use serde_json::Value;
use tokio::sync::mpsc;

use super::link::{millis, RedisLink, Unreachable, TAG_SHIFT};
use crate::cluster::tasks::heartbeat_key;
use crate::queue::EventSender;
use crate::session::store::EventLog;
use crate::session::stream::{REPLAY_CAPACITY, RETRY as SSE_RETRY};
use crate::sse;

/// How often a stream resumed on another instance than its owner's is read again.
pub(crate) const TAIL_POLL: Duration = Duration::from_millis(100);
/// Events a session's writer may have queued before more are dropped (and counted as errors).
const WRITER_QUEUE: usize = 1024;
/// How many times (every [`TAIL_POLL`]) a resumed stream of another instance is looked for
/// before it is unknown.
const UNKNOWN_STREAM_TRIES: u32 = 5;

fn events_key(session: &str, stream: u64) -> String {
    format!("mcpd:events:{session}:{stream}")
}

fn stream_key(session: &str, stream: u64) -> String {
    format!("mcpd:stream:{session}:{stream}")
}

/// Why a stream could not be resumed from Redis.
#[derive(Debug)]
pub(crate) enum ResumeRemote {
    /// Redis knows no such stream.
    Unknown,
    /// Redis did not answer.
    Unreachable(Unreachable),
}

/// One stream entry as XRANGE answers it: (id, [field, value, …]).
type Entry = (String, Vec<(String, Vec<u8>)>);

/// Where a reader of a Redis event stream is: the last event's sequence number (its SSE id's)
/// and the last entry's Redis id (where the next read starts).
#[derive(Debug, Default)]
struct Cursor {
    seq: u64,
    entry: Option<String>,
}

impl Cursor {
    /// The start of the next `XRANGE`: after the last entry read, or the beginning.
    fn next_range(&self) -> String {
        self.entry.as_ref().map_or_else(|| "-".to_owned(), |id| format!("({id}"))
    }
}

/// Sends `entries` as events of `stream` — on a first read only those after sequence `after`
/// (every entry carries its sequence number: entries are appended with Redis's own ids, so a
/// stream numbered again never collides with an old one); answers whether the last one was
/// the stream's final event (or the reader is gone).
fn deliver(sender: &EventSender, stream: u64, entries: &[Entry], after: Option<u64>, cursor: &mut Cursor) -> bool {
    for (id, fields) in entries {
        cursor.entry = Some(id.clone());
        let mut message: &[u8] = &[];
        let mut seq = None;
        let mut last = false;
        for (field, value) in fields {
            match field.as_str() {
                "m" => message = value,
                "s" => seq = std::str::from_utf8(value).ok().and_then(|s| s.parse::<u64>().ok()),
                "l" => last = true,
                _ => {}
            }
        }
        let Some(seq) = seq else { continue };
        if after.is_some_and(|after| seq <= after) {
            continue;
        }
        cursor.seq = seq;
        if !sender.push_replayed(sse::message(Some(&format!("{stream}:{seq}")), message)) {
            return true;
        }
        if last {
            return true;
        }
    }
    false
}

/// What a session's writer writes.
#[derive(Debug)]
enum Write {
    Open { stream: u64, request: String },
    Event { stream: u64, seq: u64, message: Vec<u8>, last: bool },
}

/// A session's event writer: events are written in the order sent, pipelined.
#[derive(Debug, Clone)]
pub(crate) struct EventWriter {
    tx: mpsc::Sender<Write>,
    link: RedisLink,
}

impl EventWriter {
    fn send(&self, write: Write) {
        if self.tx.try_send(write).is_err() {
            self.link.dropped();
        }
    }
}

impl EventLog for EventWriter {
    /// Records a stream's owner and request (not awaited).
    fn open_stream(&self, stream: u64, request: Option<&RequestId>) {
        let request = request.map(|id| serde_json::to_string(id).unwrap_or_default()).unwrap_or_default();
        self.send(Write::Open { stream, request });
    }

    /// Queues one event of `stream` (dropped and counted as an error when the writer is
    /// [`WRITER_QUEUE`] behind: the local replay buffer still has it).
    fn event(&self, stream: u64, seq: u64, message: &[u8], last: bool) {
        self.send(Write::Event { stream, seq, message: message.to_vec(), last });
    }
}

async fn write_events(link: RedisLink, session: Arc<str>, idle: Duration, mut rx: mpsc::Receiver<Write>) {
    let mut batch = Vec::new();
    while rx.recv_many(&mut batch, 64).await > 0 {
        let mut pipe = redis::pipe();
        for write in batch.drain(..) {
            match write {
                Write::Open { stream, request } => {
                    let key = stream_key(&session, stream);
                    pipe.cmd("HSET")
                        .arg(&key)
                        .arg("owner")
                        .arg(&*link.instance)
                        .arg("request")
                        .arg(request)
                        .ignore()
                        .cmd("PEXPIRE")
                        .arg(&key)
                        .arg(millis(idle))
                        .ignore();
                }
                Write::Event { stream, seq, message, last } => {
                    let key = events_key(&session, stream);
                    pipe.cmd("XADD")
                        .arg(&key)
                        .arg("MAXLEN")
                        .arg("~")
                        .arg(REPLAY_CAPACITY)
                        .arg("*")
                        .arg("s")
                        .arg(seq)
                        .arg("m")
                        .arg(message);
                    if last {
                        pipe.arg("l").arg("1");
                    }
                    pipe.ignore().cmd("PEXPIRE").arg(&key).arg(millis(idle)).ignore();
                    pipe.cmd("PEXPIRE").arg(stream_key(&session, stream)).arg(millis(idle)).ignore();
                }
            }
        }
        if let Err(error) = pipe.query_async::<()>(&mut link.connection()).await {
            link.failed(&error);
        }
    }
}

/// The event streams of the sessions this instance serves.
#[derive(Debug, Clone)]
pub(crate) struct Events {
    link: RedisLink,
}

impl Events {
    /// The event streams, through `link`.
    pub(super) fn new(link: RedisLink) -> Self {
        Events { link }
    }

    /// A session's event writer (one task, in order).
    pub(super) fn writer(&self, session: &str, idle: Duration) -> EventWriter {
        let (tx, rx) = mpsc::channel(WRITER_QUEUE);
        actix_rt::spawn(write_events(self.link.clone(), Arc::from(session), idle, rx));
        EventWriter { tx, link: self.link.clone() }
    }

    /// `GET` + `Last-Event-ID` of a stream this instance does not hold: replays it from Redis
    /// after `after`, then follows it until its last event (or, for a standalone stream, hands
    /// `sender` back to be attached to this instance's standalone stream). `Ok(None)` when the
    /// stream is done (or followed).
    ///
    /// # Errors
    /// [`ResumeRemote::Unknown`] when Redis knows no such stream, [`ResumeRemote::Unreachable`]
    /// when it does not answer.
    pub(crate) async fn resume(
        &self,
        session: &str,
        stream: u64,
        after: u64,
        sender: EventSender,
    ) -> Result<Option<EventSender>, ResumeRemote> {
        let events = events_key(session, stream);
        let meta = stream_key(session, stream);
        let mut tries = 0;
        let (owner, request, entries) = loop {
            let read: (Option<String>, Option<String>, Vec<Entry>) = redis::pipe()
                .cmd("HGET")
                .arg(&meta)
                .arg("owner")
                .cmd("HGET")
                .arg(&meta)
                .arg("request")
                .cmd("XRANGE")
                .arg(&events)
                .arg("-")
                .arg("+")
                .query_async(&mut self.link.connection())
                .await
                .map_err(|e| ResumeRemote::Unreachable(self.link.failed(&e)))?;
            match read {
                (Some(owner), request, entries) => break (owner, request, entries),
                // Another instance's stream whose record its writer has not written yet (the
                // client reconnected within milliseconds of the priming event): wait a little.
                _ if tries < UNKNOWN_STREAM_TRIES && stream >> TAG_SHIFT != self.link.tag => {
                    tries += 1;
                    actix_rt::time::sleep(TAIL_POLL).await;
                }
                _ => return Err(ResumeRemote::Unknown),
            }
        };
        sender.push(sse::priming(&format!("{stream}:{after}"), SSE_RETRY));
        let mut cursor = Cursor { seq: after, entry: None };
        if deliver(&sender, stream, &entries, Some(after), &mut cursor) {
            return Ok(None);
        }
        if stream & ((1 << TAG_SHIFT) - 1) == 0 {
            // Another instance's standalone stream: what it sent is replayed; from now on this
            // instance's own standalone stream carries the session's notifications.
            return Ok(Some(sender));
        }
        let request = request.and_then(|r| serde_json::from_str::<RequestId>(&r).ok());
        actix_rt::spawn(self.clone().follow(events, owner, request, stream, cursor, sender));
        Ok(None)
    }

    /// Follows another instance's stream until its last event, the client going away, or the
    /// owner dying (the request then ends with an error event).
    async fn follow(
        self,
        events: String,
        owner: String,
        request: Option<RequestId>,
        stream: u64,
        mut cursor: Cursor,
        sender: EventSender,
    ) {
        let mut quiet = Duration::ZERO;
        let mut last_ping = Instant::now();
        loop {
            tokio::select! {
                () = actix_rt::time::sleep(TAIL_POLL) => {}
                () = sender.closed() => return,
            }
            let read: redis::RedisResult<(Vec<Entry>, i64)> = redis::pipe()
                .cmd("XRANGE")
                .arg(&events)
                .arg(cursor.next_range())
                .arg("+")
                .cmd("EXISTS")
                .arg(heartbeat_key(&owner))
                .query_async(&mut self.link.connection())
                .await;
            let (entries, owner_alive) = match read {
                Ok(read) => read,
                Err(error) => {
                    self.link.failed(&error);
                    continue;
                }
            };
            let read_any = !entries.is_empty();
            if deliver(&sender, stream, &entries, None, &mut cursor) {
                return;
            }
            if !read_any {
                quiet += TAIL_POLL;
            } else {
                quiet = Duration::ZERO;
            }
            if owner_alive == 0 && quiet >= TAIL_POLL * 5 {
                if let Some(id) = &request {
                    let error: Result<Value, _> = Err(mcpd::ProtocolError::Internal(
                        "the instance serving this request stopped before answering it".into(),
                    ));
                    let message = mcpd::server::encode_answer(id, mcpd::version::Era::Stateful, &error);
                    sender.push(sse::message(Some(&format!("{stream}:{}", cursor.seq + 1)), &message));
                }
                log::info!("cluster: stream {stream} of instance {owner}, which stopped, ended with an error");
                return;
            }
            if last_ping.elapsed() >= sse::KEEP_ALIVE_INTERVAL {
                last_ping = Instant::now();
                if !sender.push(sse::keep_alive()) {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, seq: u64, message: &str, last: bool) -> Entry {
        let mut fields = vec![("s".to_owned(), seq.to_string().into_bytes()), ("m".to_owned(), message.into())];
        if last {
            fields.push(("l".to_owned(), b"1".to_vec()));
        }
        (id.to_owned(), fields)
    }

    #[test]
    fn a_replay_sends_what_follows_the_last_event_id_and_stops_at_the_answer() {
        let (tx, mut rx) = crate::queue::events(
            crate::queue::QueueLimits { max_messages: 16, max_bytes: 1 << 16 },
            "test".into(),
            Arc::new(crate::counts::EdgeCounters::default()),
        );
        let entries = [entry("5-0", 1, "one", false), entry("5-1", 2, "two", false), entry("6-0", 3, "three", false)];
        let mut cursor = Cursor::default();
        assert!(!deliver(&tx, 9, &entries, Some(1), &mut cursor), "not finished");
        assert_eq!((cursor.seq, cursor.next_range()), (3, "(6-0".to_owned()));
        let sent: Vec<String> =
            std::iter::from_fn(|| rx.try_recv()).map(|b| String::from_utf8(b.to_vec()).unwrap()).collect();
        assert_eq!(sent, ["id: 9:2\nevent: message\ndata: two\n\n", "id: 9:3\nevent: message\ndata: three\n\n"]);
        // Followed: every new entry is new, the answer ends the stream.
        let more = [entry("7-0", 4, "answer", true), entry("8-0", 5, "never", false)];
        assert!(deliver(&tx, 9, &more, None, &mut cursor), "the answer ends it");
        assert_eq!(rx.try_recv().map(|b| b.to_vec()), Some(b"id: 9:4\nevent: message\ndata: answer\n\n".to_vec()));
        assert!(rx.try_recv().is_none(), "nothing after the answer");
    }
}
