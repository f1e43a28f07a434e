//! Reading server-sent events from a live response.

use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::Value;

use super::server::TestServer;

/// One parsed SSE event.
#[derive(Debug, Default, Clone)]
pub(crate) struct Event {
    pub(crate) id: Option<String>,
    pub(crate) event: Option<String>,
    pub(crate) retry: Option<u64>,
    pub(crate) data: String,
}

impl Event {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("event data is not JSON ({e}): {:?}", self.data))
    }
}

/// Reads SSE events from an open response.
pub(crate) struct SseReader {
    response: Response,
    buffer: String,
}

pub(crate) type Response = awc::ClientResponse<actix_web::dev::Decompress<actix_web::dev::Payload>>;

impl SseReader {
    pub(crate) fn new(response: Response) -> Self {
        SseReader { response, buffer: String::new() }
    }

    /// The next event, or `None` when the stream ends or nothing comes within `wait`.
    pub(crate) async fn next(&mut self, wait: Duration) -> Option<Event> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = Event::default();
                let mut comment_only = true;
                for line in block.lines() {
                    if line.starts_with(':') {
                        continue;
                    }
                    comment_only = false;
                    let (field, value) =
                        line.split_once(':').map_or((line, ""), |(f, v)| (f, v.strip_prefix(' ').unwrap_or(v)));
                    match field {
                        "id" => event.id = Some(value.to_owned()),
                        "event" => event.event = Some(value.to_owned()),
                        "retry" => event.retry = value.parse().ok(),
                        "data" => {
                            if !event.data.is_empty() {
                                event.data.push('\n');
                            }
                            event.data.push_str(value);
                        }
                        _ => {}
                    }
                }
                if comment_only {
                    continue;
                }
                return Some(event);
            }
            match actix_rt::time::timeout(wait, self.response.next()).await {
                Ok(Some(Ok(chunk))) => self.buffer.push_str(&String::from_utf8_lossy(&chunk)),
                _ => return None,
            }
        }
    }

    /// Events until the stream ends (bounded by `wait` per event).
    pub(crate) async fn all(&mut self, wait: Duration) -> Vec<Event> {
        let mut events = Vec::new();
        while let Some(event) = self.next(wait).await {
            events.push(event);
        }
        events
    }
}

pub(crate) async fn open(
    method: &str,
    server: &TestServer,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Response {
    let client = awc::Client::builder().disable_timeout().finish();
    let mut request = client.request(awc::http::Method::from_bytes(method.as_bytes()).unwrap(), server.url(path));
    for (n, v) in headers {
        request = request.insert_header((*n, *v));
    }
    match body {
        Some(body) => {
            request.insert_header(("content-type", "application/json")).send_json(body).await.expect("response")
        }
        None => request.send().await.expect("response"),
    }
}
