//! An incremental decoder of server-sent events (the `text/event-stream` format): bytes in as
//! they arrive, whole events out. Comments (`:` lines) are skipped; `data` lines are joined with
//! `\n`; `id` and `retry` are kept because resumption needs them.

/// One event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// `id:` (the last one seen in the event).
    pub id: Option<String>,
    /// `event:` (absent means `message`).
    pub event: Option<String>,
    /// `retry:` in milliseconds.
    pub retry: Option<u64>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

impl SseEvent {
    /// The event type: `message` unless named.
    pub fn kind(&self) -> &str {
        self.event.as_deref().unwrap_or("message")
    }
}

/// Decodes a byte stream into events; holds at most one partial line and one partial event.
#[derive(Debug, Default)]
pub struct SseDecoder {
    line: Vec<u8>,
    current: SseEvent,
    has_fields: bool,
    data_lines: usize,
    /// The longest accepted line, and the largest accepted event data (the newlines joining its
    /// lines included), in bytes: a hostile stream cannot grow memory without bound.
    limit: usize,
}

/// An event grew beyond the decoder's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, derive_more::Display, derive_more::Error)]
#[display("SSE event larger than {_0} bytes")]
pub struct EventTooLarge(#[error(not(source))] pub usize);

impl SseDecoder {
    /// A decoder accepting events up to `limit` bytes.
    pub fn new(limit: usize) -> Self {
        SseDecoder { limit, ..SseDecoder::default() }
    }

    /// Feeds bytes; returns the events they completed.
    ///
    /// # Errors
    /// [`EventTooLarge`] when a line or an event exceeds the limit.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, EventTooLarge> {
        let mut events = Vec::new();
        for &b in bytes {
            if b == b'\n' {
                let mut line = std::mem::take(&mut self.line);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if let Some(event) = self.line_done(&line)? {
                    events.push(event);
                }
            } else {
                self.line.push(b);
                if self.line.len() > self.limit {
                    return Err(EventTooLarge(self.limit));
                }
            }
        }
        Ok(events)
    }

    /// Ends the stream: a pending event without its blank line is still delivered.
    pub fn finish(&mut self) -> Option<SseEvent> {
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() {
            let _ = self.line_done(&line);
        }
        self.take()
    }

    fn take(&mut self) -> Option<SseEvent> {
        if !self.has_fields {
            return None;
        }
        self.has_fields = false;
        self.data_lines = 0;
        Some(std::mem::take(&mut self.current))
    }

    fn line_done(&mut self, line: &[u8]) -> Result<Option<SseEvent>, EventTooLarge> {
        if line.is_empty() {
            return Ok(self.take());
        }
        if line.first() == Some(&b':') {
            return Ok(None);
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (text.as_ref(), ""),
        };
        match field {
            "data" => {
                // The `\n` that joins this line to the previous ones counts too.
                let separator = usize::from(self.has_data());
                if self.current.data.len() + separator + value.len() > self.limit {
                    return Err(EventTooLarge(self.limit));
                }
                if self.has_data() {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.mark_data();
            }
            "id" => self.current.id = Some(value.to_owned()),
            "event" => self.current.event = Some(value.to_owned()),
            "retry" => self.current.retry = value.trim().parse().ok(),
            _ => return Ok(None),
        }
        self.has_fields = true;
        Ok(None)
    }

    fn has_data(&self) -> bool {
        self.data_lines > 0
    }

    fn mark_data(&mut self) {
        self.data_lines += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_are_reassembled() {
        let mut d = SseDecoder::new(1 << 20);
        let mut events = d.feed(b": keep-alive\n\nid: 1:0\nretry: 500\nda").unwrap();
        assert!(events.is_empty());
        events.extend(d.feed(b"ta: \n\nevent: message\r\ndata: {\"a\":1}\ndata: x\n\n").unwrap());
        assert_eq!(events.len(), 2);
        assert_eq!(events[0], SseEvent { id: Some("1:0".into()), event: None, retry: Some(500), data: String::new() });
        assert_eq!(events[1].kind(), "message");
        assert_eq!(events[1].data, "{\"a\":1}\nx");
        assert_eq!(d.feed(b"data: tail").unwrap(), vec![]);
        assert_eq!(d.finish().unwrap().data, "tail");
    }

    #[test]
    fn oversized_events_are_refused() {
        let mut d = SseDecoder::new(8);
        assert_eq!(d.feed(b"data: 0123456789\n"), Err(EventTooLarge(8)));
    }

    #[test]
    fn the_newlines_joining_data_lines_count_toward_the_limit() {
        let mut d = SseDecoder::new(12);
        let events = d.feed(b"data:123456\ndata:12345\n\n").unwrap();
        assert_eq!(events[0].data, "123456\n12345", "12 bytes: at the limit");
        // 6 + 1 + 6 = 13 bytes: the newline was not counted, so a 13-byte event got through.
        assert_eq!(d.feed(b"data:123456\ndata:123456\n\n"), Err(EventTooLarge(12)));
        // Nor can empty data lines grow an event past the limit, one newline at a time.
        let mut d = SseDecoder::new(12);
        assert_eq!(d.feed(&b"data:\n".repeat(14)), Err(EventTooLarge(12)));
    }
}
