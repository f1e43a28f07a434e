//! The head of an answer to a satellite's plain client, parsed by `httparse` from the bytes the
//! connection read: its status, session id, whether the body is an event stream, its framing
//! (Content-Length, chunked, or up to the close), whether the connection may carry another
//! request, its content coding. No I/O here: what is malformed, conflicting or over the limits
//! ([`MAX_HEAD_BYTES`], [`MAX_HEADERS`]) is an error naming it, and the body reader
//! ([`super::body::PlainBody`]) follows the [`Framing`].

/// The largest answer head (status line and headers) read, in bytes; also the cap on a chunk
/// size line and on a chunked body's trailers.
pub(super) const MAX_HEAD_BYTES: usize = 64 * 1024;
/// The most headers an answer head (or a chunked body's trailers) may have.
pub(super) const MAX_HEADERS: usize = 64;

/// What the client needs of an answer's head.
pub(super) struct Head {
    pub(super) status: u16,
    pub(super) session_id: Option<String>,
    /// Whether the body is a `text/event-stream`.
    pub(super) events: bool,
    pub(super) framing: Framing,
    /// Whether the connection may carry another request after this answer.
    pub(super) keep_alive: bool,
    /// Its `Content-Encoding`, when not `identity`.
    pub(super) coding: Option<String>,
}

/// Parses an answer head at the start of `bytes` (up to [`MAX_HEAD_BYTES`] of them): `None`
/// when more bytes are needed, else its length and the head (`None` for a 1xx interim answer).
pub(super) fn parse_head(bytes: &[u8]) -> Result<Option<(usize, Option<Head>)>, String> {
    let bytes = &bytes[..bytes.len().min(MAX_HEAD_BYTES)];
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let length = match response.parse(bytes) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(format!("reading the response: it has more than {MAX_HEADERS} headers"))
        }
        Err(e) => return Err(format!("reading the response: the answer is not HTTP/1.1 ({e})")),
    };
    let status = response.code.unwrap_or_default();
    if (100..200).contains(&status) {
        if status == 101 {
            return Err("reading the response: the server switched protocols (HTTP 101)".into());
        }
        return Ok(Some((length, None)));
    }
    let mut session_id = None;
    let mut events = false;
    let mut lengths: Option<u64> = None;
    let mut chunked = None;
    let mut close = response.version != Some(1);
    let mut coding: Option<String> = None;
    for header in response.headers.iter() {
        let name = header.name;
        if name.eq_ignore_ascii_case(mcpd::headers::SESSION_ID) {
            if session_id.is_none() {
                session_id = visible_ascii(header.value).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned);
            }
        } else if name.eq_ignore_ascii_case("content-type") {
            events |= header.value.windows(17).any(|w| w.eq_ignore_ascii_case(b"text/event-stream"));
        } else if name.eq_ignore_ascii_case("content-length") {
            for value in header.value.split(|&b| b == b',') {
                let value = value.trim_ascii();
                let parsed = (!value.is_empty() && value.iter().all(u8::is_ascii_digit))
                    .then(|| std::str::from_utf8(value).ok()?.parse::<u64>().ok())
                    .flatten()
                    .ok_or_else(|| {
                        format!(
                            "reading the response: invalid Content-Length {:?}",
                            String::from_utf8_lossy(header.value)
                        )
                    })?;
                if lengths.is_some_and(|known| known != parsed) {
                    return Err("reading the response: conflicting Content-Length values".into());
                }
                lengths = Some(parsed);
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            let last = header.value.rsplit(|&b| b == b',').next().unwrap_or_default().trim_ascii();
            chunked = Some(last.eq_ignore_ascii_case(b"chunked"));
        } else if name.eq_ignore_ascii_case("content-encoding") {
            let value = String::from_utf8_lossy(header.value).trim().to_ascii_lowercase();
            if !value.is_empty() && value != "identity" {
                coding = Some(value);
            }
        } else if name.eq_ignore_ascii_case("connection") {
            close |= header.value.split(|&b| b == b',').any(|token| token.trim_ascii().eq_ignore_ascii_case(b"close"));
        }
    }
    let framing = match (chunked, lengths) {
        _ if status == 204 || status == 304 => Framing::Length(0),
        (Some(_), Some(_)) => {
            return Err("reading the response: it has both Transfer-Encoding and Content-Length".into())
        }
        (Some(true), None) => Framing::Chunked(Chunk::Size),
        (Some(false), None) => return Err("reading the response: unsupported Transfer-Encoding".into()),
        (None, Some(length)) => Framing::Length(length),
        (None, None) => Framing::Close,
    };
    let keep_alive = !close && !matches!(framing, Framing::Close);
    Ok(Some((length, Some(Head { status, session_id, events, framing, keep_alive, coding }))))
}

/// A header value as text when it is visible ASCII (and tabs), as `HeaderValue::to_str` wants.
fn visible_ascii(value: &[u8]) -> Option<&str> {
    value.iter().all(|&b| b == b'\t' || (b' '..=b'~').contains(&b)).then(|| std::str::from_utf8(value).ok()).flatten()
}

/// The length of a chunked body's trailers and final CRLF at the start of `bytes`, `None`
/// when more bytes are needed. (A function of its own: the headers array it parses into is not
/// part of the body's future.)
pub(super) fn trailers_length(bytes: &[u8]) -> Result<Option<usize>, String> {
    let mut trailers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    match httparse::parse_headers(&bytes[..bytes.len().min(MAX_HEAD_BYTES)], &mut trailers) {
        Ok(httparse::Status::Complete((length, _))) => Ok(Some(length)),
        Ok(httparse::Status::Partial) if bytes.len() >= MAX_HEAD_BYTES => {
            Err(format!("the trailers are over {} KiB", MAX_HEAD_BYTES / 1024))
        }
        Ok(httparse::Status::Partial) => Ok(None),
        Err(e) => Err(format!("invalid trailers ({e})")),
    }
}

/// How an answer's body ends.
pub(super) enum Framing {
    /// After this many more bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`, at this point of it.
    Chunked(Chunk),
    /// When the server closes the connection.
    Close,
    /// Read to its end.
    Done,
    /// Cut by an error: the connection is not reused.
    Failed,
}

/// Where a chunked body is.
pub(super) enum Chunk {
    /// Before a chunk size line.
    Size,
    /// Inside a chunk's data, this many bytes before its end.
    Data(u64),
    /// After a chunk's data, before its CRLF.
    DataEnd,
    /// After the last chunk: the trailers (skipped) and the final CRLF.
    Trailers,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflicting_or_invalid_framing_headers_are_refused() {
        let refused = |head: &str| match parse_head(head.as_bytes()) {
            Err(e) => e,
            Ok(_) => panic!("accepted {head:?}"),
        };
        let e = refused("HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\n");
        assert_eq!(e, "reading the response: conflicting Content-Length values");
        assert!(refused("HTTP/1.1 200 OK\r\ncontent-length: 2, 3\r\n\r\n").contains("conflicting"));
        assert!(refused("HTTP/1.1 200 OK\r\ncontent-length: -2\r\n\r\n").contains("invalid Content-Length \"-2\""));
        assert!(refused("HTTP/1.1 200 OK\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\n\r\n")
            .contains("both Transfer-Encoding and Content-Length"));
        assert!(refused("HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n").contains("unsupported Transfer-Encoding"));
        let same = parse_head(b"HTTP/1.1 200 OK\r\ncontent-length: 2, 2\r\n\r\n").unwrap().unwrap().1.unwrap();
        assert!(matches!(same.framing, Framing::Length(2)) && same.keep_alive);
    }
}
