//! One keep-alive connection of a satellite's plain client ([`super::PlainHttp`]): its TCP
//! stream and the bytes read from it but not used yet, kept for the next answer (so bytes that
//! came early are neither lost nor read as part of another answer). Writing a request and
//! reading the head of its final answer happen here ([`Connection::exchange`]); the body is read
//! by [`super::body::PlainBody`], off the same buffer.

use bytes::Bytes;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::head::{parse_head, Head, MAX_HEAD_BYTES};

/// How much room a read gets in a connection's buffer.
const READ_CHUNK: usize = 16 * 1024;

/// Why an exchange failed.
pub(super) enum Failure {
    /// The request could not be written: on a kept connection, it may go out again on a new one.
    Unsent(String),
    /// Anything else (the server may have seen the request): never sent again.
    Broken(String),
}

/// One keep-alive connection and what was read from it but not yet used.
pub(super) struct Connection {
    stream: TcpStream,
    /// Bytes read; those from `start` on are not used yet. Kept for the next answer.
    buffer: Vec<u8>,
    start: usize,
}

impl Connection {
    /// A connection over `stream`, nothing read yet.
    pub(super) fn new(stream: TcpStream) -> Connection {
        Connection { stream, buffer: Vec::with_capacity(READ_CHUNK), start: 0 }
    }

    /// Whether an idle connection can carry a request: neither closed by the server (an EOF
    /// waiting) nor holding bytes nobody asked for. Costs no system call while the socket has
    /// not been reported readable.
    pub(super) fn still_open(&self) -> bool {
        let mut probe = [0u8; 1];
        matches!(self.stream.try_read(&mut probe), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
    }

    /// The bytes read and not used yet.
    pub(super) fn pending(&self) -> &[u8] {
        &self.buffer[self.start..]
    }

    /// Marks the first `n` pending bytes used.
    pub(super) fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.buffer.len() {
            self.buffer.clear();
            self.start = 0;
        }
    }

    /// The first `n` pending bytes, used.
    pub(super) fn take(&mut self, n: usize) -> Bytes {
        let taken = Bytes::copy_from_slice(&self.pending()[..n]);
        self.consume(n);
        taken
    }

    /// Reads what the server sent next after the pending bytes; 0 at the end of the stream.
    pub(super) async fn fill(&mut self) -> std::io::Result<usize> {
        if self.start > 0 {
            self.buffer.drain(..self.start);
            self.start = 0;
        }
        self.buffer.reserve(READ_CHUNK);
        self.stream.read_buf(&mut self.buffer).await
    }

    /// As [`Connection::fill`], with the end of the stream an error saying `what` it cut.
    pub(super) async fn fill_or(&mut self, what: &str) -> Result<(), String> {
        match self.fill().await {
            Ok(0) => Err(format!("the server closed the connection {what}")),
            Ok(_) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Writes `request` and reads the head of its final answer (1xx interim answers skipped).
    pub(super) async fn exchange(&mut self, request: &[u8]) -> Result<Head, Failure> {
        if let Err(e) = self.stream.write_all(request).await {
            return Err(Failure::Unsent(format!("sending the request: {e}")));
        }
        let mut answered = !self.pending().is_empty();
        loop {
            if !self.pending().is_empty() {
                let seen = self.pending().len();
                if let Some((length, head)) = parse_head(self.pending()).map_err(Failure::Broken)? {
                    self.consume(length);
                    match head {
                        Some(head) => return Ok(head),
                        None => continue,
                    }
                }
                if seen >= MAX_HEAD_BYTES {
                    return Err(Failure::Broken(format!(
                        "reading the response: its head is over the {} KiB limit",
                        MAX_HEAD_BYTES / 1024
                    )));
                }
            }
            match self.fill().await {
                Ok(0) if !answered => {
                    return Err(Failure::Broken("the server closed the connection without answering".into()))
                }
                Ok(0) => {
                    return Err(Failure::Broken(
                        "reading the response: the server closed the connection in the response head".into(),
                    ))
                }
                Ok(_) => answered = true,
                Err(e) => return Err(Failure::Broken(format!("reading the response: {e}"))),
            }
        }
    }
}
