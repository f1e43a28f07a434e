//! The SSE decoder (`text/event-stream` from remote servers): a stream cut into chunks anywhere
//! — inside a line, between `\r` and `\n`, inside a UTF-8 character — yields exactly the events
//! of the stream fed whole, which are the events of a plain line-by-line reading of the format;
//! no event's data, id or type exceeds the decoder's limit, and a stream that would exceed it is
//! refused (in whichever chunk crosses it).

use mcpd::client::sse::{SseDecoder, SseEvent};
use proptest::prelude::*;
use proptest::sample::{select, Index};

use crate::support::config;

/// What decoding a stream gave: the events, and whether the stream was refused as too large
/// (then the events are those delivered before).
#[derive(Debug, PartialEq, Eq)]
struct Decoded {
    events: Vec<SseEvent>,
    refused: bool,
}

/// Feeds `chunks` in turn, then ends the stream.
fn decode(limit: usize, chunks: &[&[u8]]) -> Decoded {
    let mut decoder = SseDecoder::new(limit);
    let mut events = Vec::new();
    for chunk in chunks {
        match decoder.feed(chunk) {
            Ok(more) => events.extend(more),
            Err(e) => {
                assert_eq!(e.0, limit, "the error names the limit");
                return Decoded { events, refused: true };
            }
        }
    }
    events.extend(decoder.finish());
    Decoded { events, refused: false }
}

/// The format read line by line, as the decoder documents it: lines end with `\n` (a `\r`
/// before it is dropped), a blank line ends an event that has fields, `:` starts a comment,
/// `data` lines are joined with `\n`, `id`, `event` and `retry` are kept, other fields are
/// ignored; a line, or an event's data, longer than `limit` bytes refuses the stream; at the end
/// a last line without its `\n` still counts (but is not refused for its data), and a pending
/// event is delivered.
fn reference(limit: usize, stream: &[u8]) -> Decoded {
    let mut events = Vec::new();
    let mut event = SseEvent::default();
    let (mut fields, mut data_lines) = (false, 0);
    let mut lines: Vec<&[u8]> = stream.split(|b| *b == b'\n').collect();
    let last = lines.pop().unwrap_or_default();
    let refused = |events| Decoded { events, refused: true };
    for (i, &raw) in lines.iter().chain(std::iter::once(&last)).enumerate() {
        let at_end = i == lines.len();
        if raw.len() > limit {
            return refused(events);
        }
        let line = if at_end { raw } else { raw.strip_suffix(b"\r").unwrap_or(raw) };
        if line.is_empty() {
            if fields && !at_end {
                events.push(std::mem::take(&mut event));
                (fields, data_lines) = (false, 0);
            }
            continue;
        }
        if line[0] == b':' {
            continue;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        match field {
            "data" => {
                let separator = usize::from(data_lines > 0);
                if event.data.len() + separator + value.len() > limit {
                    if at_end {
                        continue;
                    }
                    return refused(events);
                }
                if data_lines > 0 {
                    event.data.push('\n');
                }
                event.data.push_str(value);
                data_lines += 1;
            }
            "id" => event.id = Some(value.to_owned()),
            "event" => event.event = Some(value.to_owned()),
            "retry" => event.retry = value.trim().parse().ok(),
            _ => continue,
        }
        fields = true;
    }
    if fields {
        events.push(event);
    }
    Decoded { events, refused: false }
}

/// One line of a stream, with its end.
fn line() -> impl Strategy<Value = Vec<u8>> {
    let text = prop_oneof![
        3 => "[a-z0-9 {}\":,]{0,10}".prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<char>(), 0..6).prop_map(|c| String::from_iter(c).into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..6),
    ];
    let field = select(vec![
        "data: ", "data:", "data", "id: ", "id:", "event: ", "retry: ", "retry:", ": ", ":", "", "other: ", "dat",
    ]);
    let end = select(vec!["\n", "\n", "\n", "\r\n", "\r", ""]);
    (field, text, end).prop_map(|(field, text, end)| [field.as_bytes(), text.as_slice(), end.as_bytes()].concat())
}

/// A stream: lines, often blank ones between events.
fn stream() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop_oneof![3 => line(), 1 => Just(b"\n".to_vec()), 1 => Just(b"\r\n".to_vec())], 0..16)
        .prop_map(|lines| lines.concat())
}

/// Cuts `stream` at the given points.
fn chunks<'s>(stream: &'s [u8], cuts: &[Index]) -> Vec<&'s [u8]> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c.index(stream.len() + 1)).collect();
    points.sort_unstable();
    let mut chunks = Vec::new();
    let mut start = 0;
    for point in points {
        chunks.push(&stream[start..point]);
        start = point;
    }
    chunks.push(&stream[start..]);
    chunks
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_chunking_yields_the_events_of_the_whole_stream(
        stream in stream(),
        cuts in prop::collection::vec(any::<Index>(), 0..8),
        limit in prop_oneof![3 => Just(1usize << 20), 1 => 1usize..40],
    ) {
        let expected = reference(limit, &stream);
        let whole = decode(limit, &[&stream]);
        let chunked = decode(limit, &chunks(&stream, &cuts));
        if expected.refused {
            prop_assert_eq!(whole, Decoded { events: Vec::new(), refused: true }, "fed whole, nothing comes before the refusal");
            prop_assert!(chunked.refused, "a stream over the limit is refused however it is cut");
            prop_assert!(expected.events.starts_with(&chunked.events), "events before the refusal are the stream's first ones");
        } else {
            prop_assert_eq!(&whole, &expected, "the stream read whole, against the format");
            prop_assert_eq!(chunked, whole);
        }
    }

    #[test]
    fn no_event_exceeds_the_limit(
        stream in prop_oneof![stream(), prop::collection::vec(any::<u8>(), 0..256)],
        cuts in prop::collection::vec(any::<Index>(), 0..8),
        limit in 1usize..48,
    ) {
        for event in decode(limit, &chunks(&stream, &cuts)).events {
            prop_assert!(event.data.len() <= limit, "data of {} bytes over a limit of {}", event.data.len(), limit);
            // A line holds at most `limit` bytes; as text, a byte that is not UTF-8 becomes U+FFFD.
            for field in [&event.id, &event.event].into_iter().flatten() {
                prop_assert!(field.len() <= 3 * limit, "a field of {} bytes from lines of at most {}", field.len(), limit);
            }
        }
    }
}
