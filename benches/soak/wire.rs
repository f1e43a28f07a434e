//! One raw HTTP/1.1 exchange over its own TCP connection, for the soak's SSE work: it sends a
//! request, reads the head, then the body as it arrives (`Content-Length`, chunked, or until the
//! connection closes), turned into events by mcpd's own SSE decoder. Raw, because a slow reader
//! needs a small receive buffer (`SO_RCVBUF`): then the server, not the kernel, holds what the
//! reader has not taken.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::{Buf as _, BytesMut};
use mcpd::client::sse::{SseDecoder, SseEvent};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};

use crate::support::http1::http_request;

/// Largest head or SSE event accepted.
const MAX_ITEM: usize = 1 << 20;

/// Why no event came.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// None within the time allowed.
    Timeout(Duration),
    /// The connection or the body broke (closed early, reset, malformed).
    Broken(String),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Timeout(limit) => write!(f, "no event within {limit:?}"),
            ReadError::Broken(reason) => f.write_str(reason),
        }
    }
}

/// How the body is delimited.
#[derive(Debug)]
enum Body {
    Length(usize),
    /// Chunked; `Some(n)`: inside a chunk with `n` bytes left.
    Chunked(Option<usize>),
    UntilClose,
    Done,
}

/// An answer whose body is read as it comes.
#[derive(Debug)]
pub(crate) struct Exchange {
    stream: TcpStream,
    buf: BytesMut,
    body: Body,
    decoder: SseDecoder,
    /// Events decoded but not yet handed out.
    pending: VecDeque<SseEvent>,
    /// The status code.
    pub(crate) status: u16,
    /// Whether the answer is `text/event-stream`.
    pub(crate) sse: bool,
}

/// Sends `method /mcp` with `headers` (and a JSON `body` for a POST) on a new connection and
/// reads the answer's head. With `receive_buffer`, the socket's receive buffer is that small.
pub(crate) async fn send(
    port: u16,
    receive_buffer: Option<u32>,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<Exchange, String> {
    let socket = TcpSocket::new_v4().map_err(|e| format!("socket: {e}"))?;
    if let Some(size) = receive_buffer {
        socket.set_recv_buffer_size(size).map_err(|e| format!("SO_RCVBUF: {e}"))?;
    }
    let mut stream = socket.connect(([127, 0, 0, 1], port).into()).await.map_err(|e| format!("connect: {e}"))?;
    stream.write_all(&http_request(port, method, headers, body)).await.map_err(|e| format!("write: {e}"))?;
    let mut exchange = Exchange {
        stream,
        buf: BytesMut::with_capacity(8192),
        body: Body::Done,
        decoder: SseDecoder::new(MAX_ITEM),
        pending: VecDeque::new(),
        status: 0,
        sse: false,
    };
    exchange.read_head().await?;
    Ok(exchange)
}

fn header_value<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

impl Exchange {
    /// Reads more from the socket; false at its end.
    async fn fill(&mut self) -> Result<bool, String> {
        self.buf.reserve(16 * 1024);
        match self.stream.read_buf(&mut self.buf).await {
            Ok(0) => Ok(false),
            Ok(_) => Ok(true),
            Err(e) => Err(format!("read: {e}")),
        }
    }

    async fn read_head(&mut self) -> Result<(), String> {
        let end = loop {
            if let Some(at) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break at;
            }
            if self.buf.len() > MAX_ITEM {
                return Err("response head too large".into());
            }
            if !self.fill().await? {
                return Err("the connection closed before the response head".into());
            }
        };
        let head = String::from_utf8_lossy(&self.buf[..end]).into_owned();
        self.buf.advance(end + 4);
        self.status = head
            .strip_prefix("HTTP/1.1 ")
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| format!("malformed status line: {}", head.lines().next().unwrap_or_default()))?;
        self.sse = header_value(&head, "content-type").is_some_and(|v| v.starts_with("text/event-stream"));
        self.body = if header_value(&head, "transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
            Body::Chunked(None)
        } else if let Some(length) = header_value(&head, "content-length") {
            Body::Length(length.parse().map_err(|_| format!("malformed content-length {length:?}"))?)
        } else {
            Body::UntilClose
        };
        Ok(())
    }

    /// The next piece of the body; `None` at its end. A connection that ends inside the body
    /// is an error naming where.
    async fn body_piece(&mut self) -> Result<Option<BytesMut>, String> {
        loop {
            match self.body {
                Body::Done => return Ok(None),
                Body::Length(0) => {
                    self.body = Body::Done;
                    return Ok(None);
                }
                Body::Length(left) if !self.buf.is_empty() => {
                    let take = left.min(self.buf.len());
                    self.body = Body::Length(left - take);
                    return Ok(Some(self.buf.split_to(take)));
                }
                Body::UntilClose if !self.buf.is_empty() => return Ok(Some(self.buf.split())),
                Body::Chunked(Some(0)) if self.buf.len() >= 2 => {
                    self.buf.advance(2); // the CRLF after a chunk
                    self.body = Body::Chunked(None);
                    continue;
                }
                Body::Chunked(Some(left)) if left > 0 && !self.buf.is_empty() => {
                    let take = left.min(self.buf.len());
                    self.body = Body::Chunked(Some(left - take));
                    return Ok(Some(self.buf.split_to(take)));
                }
                Body::Chunked(None) => {
                    if let Some(at) = self.buf.windows(2).position(|w| w == b"\r\n") {
                        let line = String::from_utf8_lossy(&self.buf[..at]).into_owned();
                        self.buf.advance(at + 2);
                        let size = line.split(';').next().unwrap_or_default().trim();
                        let size = usize::from_str_radix(size, 16).map_err(|_| format!("bad chunk size {line:?}"))?;
                        // The last chunk; this client sends no TE header, so no trailers follow.
                        self.body = if size == 0 { Body::Done } else { Body::Chunked(Some(size)) };
                        continue;
                    }
                }
                _ => {}
            }
            if !self.fill().await? {
                return match self.body {
                    Body::UntilClose => {
                        self.body = Body::Done;
                        Ok(None)
                    }
                    _ => Err(format!("the connection closed inside the body ({:?})", self.body)),
                };
            }
        }
    }

    /// The whole remaining body as text (for JSON answers and errors), within `limit`.
    pub(crate) async fn text(&mut self, limit: Duration) -> Result<String, String> {
        let read = async {
            let mut all = Vec::new();
            while let Some(piece) = self.body_piece().await? {
                all.extend_from_slice(&piece);
                if all.len() > MAX_ITEM {
                    return Err("body too large".to_owned());
                }
            }
            Ok(String::from_utf8_lossy(&all).into_owned())
        };
        tokio::time::timeout(limit, read).await.map_err(|_| format!("no whole body within {limit:?}"))?
    }

    /// The next SSE event (`None` when the stream ended), within `limit`.
    pub(crate) async fn next_event(&mut self, limit: Duration) -> Result<Option<SseEvent>, ReadError> {
        let read = async {
            loop {
                // The decoder hands back every event a piece completes; the rest wait here.
                if let Some(event) = self.pending.pop_front() {
                    return Ok(Some(event));
                }
                match self.body_piece().await? {
                    Some(piece) => {
                        let events = self.decoder.feed(&piece).map_err(|e| e.to_string())?;
                        self.pending.extend(events);
                    }
                    None => return Ok(self.decoder.finish()),
                }
            }
        };
        tokio::time::timeout(limit, read).await.map_err(|_| ReadError::Timeout(limit))?.map_err(ReadError::Broken)
    }
}
