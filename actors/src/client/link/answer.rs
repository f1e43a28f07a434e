//! What a POST to the server comes back as, whichever client sent it — the link's awc client or
//! a satellite's plain HTTP/1.1 client ([`super::plain`]): the status, the session id, and the
//! body read whole or the event stream still open. Both clients build a [`PostAnswer`] and the
//! exchange ([`super::exchange`]) reads it, so it is a file of its own that all three import.

use bytes::Bytes;
use futures_util::StreamExt as _;

use super::plain::body::PlainBody;
use crate::client::error::ClientError;

/// A failure to reach the server or to read its answer.
pub(super) fn transport(e: impl std::fmt::Display) -> ClientError {
    ClientError::Transport(e.to_string())
}

/// An HTTP answer: status, session id header, and either a JSON body or an open SSE stream.
pub(super) struct PostAnswer {
    pub(super) status: u16,
    pub(super) session_id: Option<String>,
    pub(super) body: AnswerBody,
}

/// The body of a [`PostAnswer`].
pub(super) enum AnswerBody {
    /// Read whole (any status but a successful event stream).
    Json(Bytes),
    /// A successful `text/event-stream`, read as it comes.
    Events(EventStream),
}

/// An event stream's body, from awc or from a satellite's [`super::plain::PlainHttp`].
pub(super) enum EventStream {
    Awc(super::http::Response),
    Plain(PlainBody),
}

impl EventStream {
    /// The next chunk of the body (`None` at its end).
    pub(super) async fn next(&mut self) -> Option<Result<Bytes, String>> {
        match self {
            EventStream::Awc(response) => response.next().await.map(|chunk| chunk.map_err(|e| e.to_string())),
            EventStream::Plain(body) => body.next_chunk().await,
        }
    }
}
