//! One keep-alive HTTP/1.1 connection of the load generator: writes pre-built request bytes and
//! reads one answer with a `Content-Length` (what mcpd answers a JSON request with), keeping any
//! bytes past it for the next answer.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A request with no complete answer within this is an error.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest answer the generator accepts.
const MAX_RESPONSE: usize = 1 << 20;

/// One parsed answer.
pub(crate) struct Reply {
    pub(crate) status: u16,
    /// The `mcp-session-id` header, when there was one.
    pub(crate) session: Option<String>,
    /// Whether the body contains the needle the exchange was given.
    pub(crate) body_ok: bool,
    /// The start of the body when the answer is not good, for the error report.
    pub(crate) excerpt: Option<String>,
}

/// A connection with its read buffer.
pub(crate) struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    filled: usize,
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn excerpt(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(160)]).into_owned()
}

impl Conn {
    pub(crate) async fn connect(port: u16) -> Result<Conn, String> {
        let stream = TcpStream::connect(("127.0.0.1", port)).await.map_err(|e| format!("connect: {e}"))?;
        stream.set_nodelay(true).map_err(|e| format!("set_nodelay: {e}"))?;
        Ok(Conn { stream, buf: vec![0; 4096], filled: 0 })
    }

    async fn fill(&mut self) -> Result<(), String> {
        if self.filled == self.buf.len() {
            if self.buf.len() >= MAX_RESPONSE {
                return Err(format!("answer larger than {MAX_RESPONSE} bytes"));
            }
            self.buf.resize(self.buf.len() * 2, 0);
        }
        match self.stream.read(&mut self.buf[self.filled..]).await {
            Ok(0) => Err("connection closed by the server".into()),
            Ok(n) => {
                self.filled += n;
                Ok(())
            }
            Err(e) => Err(format!("read: {e}")),
        }
    }

    /// Sends `request` and reads its answer; `needle` is what a good body contains.
    pub(crate) async fn exchange(&mut self, request: &[u8], needle: &[u8]) -> Result<Reply, String> {
        match tokio::time::timeout(REQUEST_TIMEOUT, self.exchange_untimed(request, needle)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!("no answer within {} s", REQUEST_TIMEOUT.as_secs())),
        }
    }

    async fn exchange_untimed(&mut self, request: &[u8], needle: &[u8]) -> Result<Reply, String> {
        self.stream.write_all(request).await.map_err(|e| format!("write: {e}"))?;
        let mut scanned = 0;
        let head_len = loop {
            if let Some(at) = find(&self.buf[scanned..self.filled], b"\r\n\r\n") {
                break scanned + at + 4;
            }
            scanned = self.filled.saturating_sub(3);
            self.fill().await?;
        };
        let head = &self.buf[..head_len];
        let status = head
            .get(9..12)
            .filter(|_| head.starts_with(b"HTTP/1."))
            .and_then(|code| std::str::from_utf8(code).ok())
            .and_then(|code| code.parse::<u16>().ok())
            .ok_or_else(|| format!("malformed status line: {}", excerpt(head)))?;
        let mut length = None;
        let mut session = None;
        for line in head[..head_len - 4].split(|&b| b == b'\n').skip(1) {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let Some(colon) = line.iter().position(|&b| b == b':') else { continue };
            let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
            if name.eq_ignore_ascii_case(b"content-length") {
                let parsed = std::str::from_utf8(value).ok().and_then(|v| v.parse::<usize>().ok());
                length = Some(parsed.ok_or("malformed content-length")?);
            } else if name.eq_ignore_ascii_case(b"mcp-session-id") {
                session = Some(String::from_utf8_lossy(value).into_owned());
            }
        }
        let length = length.ok_or_else(|| format!("status {status} without content-length: {}", excerpt(head)))?;
        let total = head_len + length;
        if total > MAX_RESPONSE {
            return Err(format!("answer of {total} bytes"));
        }
        while self.filled < total {
            self.fill().await?;
        }
        let body = &self.buf[head_len..total];
        let body_ok = find(body, needle).is_some();
        let excerpt = (status != 200 || !body_ok).then(|| excerpt(body));
        self.buf.copy_within(total..self.filled, 0);
        self.filled -= total;
        Ok(Reply { status, session, body_ok, excerpt })
    }
}
