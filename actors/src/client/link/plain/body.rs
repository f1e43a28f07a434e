//! [`PlainBody`]: an answer's body as a satellite's plain client reads it off its connection,
//! as it comes — in every framing the head named (Content-Length, chunked with extensions and
//! trailers, up to the close) — or whole, bounded by [`MAX_RESPONSE_BYTES`] (a chunk announced
//! past the bound is refused before its bytes are waited for). Only a body read to its end,
//! with nothing after it, gives its connection back for another request.

use bytes::Bytes;

use super::connection::Connection;
use super::head::{trailers_length, Chunk, Framing, MAX_HEAD_BYTES};
use crate::client::link::MAX_RESPONSE_BYTES;

/// An answer's body, read from its connection as it comes.
pub(crate) struct PlainBody {
    connection: Connection,
    framing: Framing,
    keep_alive: bool,
    /// Body bytes handed out so far.
    read: u64,
    /// The most a body read whole may hold: a chunk announced past it is refused before its
    /// bytes are waited for (no limit for an event stream, read as it comes).
    limit: u64,
}

impl PlainBody {
    /// The body of an answer whose head said `framing` and `keep_alive`, read off `connection`.
    pub(super) fn new(connection: Connection, framing: Framing, keep_alive: bool) -> PlainBody {
        PlainBody { connection, framing, keep_alive, read: 0, limit: u64::MAX }
    }

    /// The next chunk of the body (`None` at its end).
    pub(crate) async fn next_chunk(&mut self) -> Option<Result<Bytes, String>> {
        match self.next().await {
            Ok(Some(bytes)) => Some(Ok(bytes)),
            Ok(None) => None,
            Err(e) => {
                self.framing = Framing::Failed;
                Some(Err(e))
            }
        }
    }

    /// The next bytes of the body as they arrive, `None` at its end.
    async fn next(&mut self) -> Result<Option<Bytes>, String> {
        let connection = &mut self.connection;
        loop {
            let available = connection.pending().len() as u64;
            match &mut self.framing {
                Framing::Done | Framing::Failed => return Ok(None),
                Framing::Length(0) => self.framing = Framing::Done,
                Framing::Length(left) if available == 0 => {
                    let what = format!("{left} bytes before the end of the body");
                    connection.fill_or(&what).await?;
                }
                Framing::Length(left) => {
                    let n = available.min(*left);
                    *left -= n;
                    self.read += n;
                    return Ok(Some(connection.take(n as usize)));
                }
                Framing::Close if available == 0 => {
                    if connection.fill().await.map_err(|e| e.to_string())? == 0 {
                        self.framing = Framing::Done;
                    }
                }
                Framing::Close => return Ok(Some(connection.take(available as usize))),
                Framing::Chunked(chunk) => match chunk {
                    Chunk::Size => match httparse::parse_chunk_size(connection.pending()) {
                        Ok(httparse::Status::Complete((length, 0))) => {
                            connection.consume(length);
                            *chunk = Chunk::Trailers;
                        }
                        Ok(httparse::Status::Complete((length, size))) => {
                            if self.read.saturating_add(size) > self.limit {
                                return Err(format!("the body is over the {MAX_RESPONSE_BYTES}-byte limit"));
                            }
                            connection.consume(length);
                            *chunk = Chunk::Data(size);
                        }
                        Ok(httparse::Status::Partial) if available as usize >= MAX_HEAD_BYTES => {
                            return Err(format!("a chunk size line is over {} KiB", MAX_HEAD_BYTES / 1024))
                        }
                        Ok(httparse::Status::Partial) => connection.fill_or("in a chunk size line").await?,
                        Err(_) => return Err("invalid chunk size line".into()),
                    },
                    Chunk::Data(0) => *chunk = Chunk::DataEnd,
                    Chunk::Data(_) if available == 0 => connection.fill_or("inside a chunk").await?,
                    Chunk::Data(left) => {
                        let n = available.min(*left);
                        *left -= n;
                        self.read += n;
                        return Ok(Some(connection.take(n as usize)));
                    }
                    Chunk::DataEnd if available < 2 => connection.fill_or("after a chunk").await?,
                    Chunk::DataEnd => {
                        if &connection.pending()[..2] != b"\r\n" {
                            return Err("a chunk does not end with CRLF".into());
                        }
                        connection.consume(2);
                        *chunk = Chunk::Size;
                    }
                    Chunk::Trailers => match trailers_length(connection.pending())? {
                        Some(length) => {
                            connection.consume(length);
                            self.framing = Framing::Done;
                        }
                        None => connection.fill_or("in the trailers").await?,
                    },
                },
            }
        }
    }

    /// The whole body, up to [`MAX_RESPONSE_BYTES`].
    pub(super) async fn whole(&mut self) -> Result<Bytes, String> {
        let over = || format!("the body is over the {MAX_RESPONSE_BYTES}-byte limit");
        self.limit = MAX_RESPONSE_BYTES as u64;
        if let Framing::Length(length) = self.framing {
            if length > MAX_RESPONSE_BYTES as u64 {
                self.framing = Framing::Failed;
                return Err(over());
            }
        }
        let mut first = Bytes::new();
        let mut more: Vec<u8> = Vec::new();
        while let Some(chunk) = self.next_chunk().await {
            let chunk = chunk?;
            if first.len() + more.len() + chunk.len() > MAX_RESPONSE_BYTES {
                self.framing = Framing::Failed;
                return Err(over());
            }
            if first.is_empty() && more.is_empty() {
                first = chunk;
            } else {
                if more.is_empty() {
                    more.extend_from_slice(&first);
                }
                more.extend_from_slice(&chunk);
            }
        }
        Ok(if more.is_empty() { first } else { Bytes::from(more) })
    }

    /// The connection, when the body was read to its end, nothing came after it and the answer
    /// allowed keep-alive.
    pub(super) fn reusable(self) -> Option<Connection> {
        let done = matches!(self.framing, Framing::Done);
        (done && self.keep_alive && self.connection.pending().is_empty()).then_some(self.connection)
    }
}
