//! What the server sends besides the response a request waits for, on any stream: its requests
//! (answered by the client's handlers, the answer sent back on the current wire), its
//! notifications (passed to the notification hook), and responses to other requests in flight
//! (handed to the session request that claimed them).

use mcpd::jsonrpc::{Outgoing, RequestId};
use serde_json::{json, Value};

use super::outcome::outcome_of;
use super::{CallEntry, Link};
use crate::client::error::ClientError;
use crate::client::handlers::NotificationSink;
use mcpd::client::attribution::progress_token_of;

impl Link {
    /// Handles one message from the server: answers its requests, passes on its notifications,
    /// and returns the outcome when it is the response to `waiting_for`.
    pub(super) async fn handle_message(
        &self,
        message: Value,
        waiting_for: Option<&RequestId>,
        status: u16,
    ) -> Option<Result<Value, ClientError>> {
        let method = message.get("method").and_then(Value::as_str).map(str::to_owned);
        match (method, message.get("id").and_then(RequestId::from_value)) {
            (Some(method), Some(request_id)) => {
                let params = message.get("params").cloned().unwrap_or_else(|| json!({}));
                let call = self.call_for(waiting_for);
                let answer = match call.as_ref().and_then(|c| c.handlers.requests.as_ref()) {
                    Some(answer) => answer(&method, params),
                    None => self.handlers.answer(&method, params),
                };
                let answer = answer.await;
                let bytes = match &answer {
                    Ok(result) => Outgoing::Result { id: &request_id, result }.to_vec(),
                    Err(error) => Outgoing::Error { id: Some(&request_id), error }.to_vec(),
                };
                if let Err(e) = self.send_reply(bytes).await {
                    log::warn!("{}: could not answer {method}: {e}", self.cfg.name);
                }
                None
            }
            (Some(method), None) => {
                log::debug!("{}: notification {method}", self.cfg.name);
                if self.call_notification(&method, &message, waiting_for) {
                    return None;
                }
                if let Some(hook) = &self.handlers.notifications {
                    hook(&self.cfg.name, &method, message.get("params").unwrap_or(&Value::Null));
                }
                None
            }
            (None, id) => match (waiting_for, id) {
                (Some(waiting), Some(id)) if &id == waiting => Some(outcome_of(&message, waiting, status)),
                (Some(waiting), None) if message.get("error").is_some() => Some(outcome_of(&message, waiting, status)),
                (_, Some(id)) => {
                    // The response to another request in flight, on this stream.
                    self.deliver_stray(&id, message);
                    None
                }
                _ => None,
            },
        }
    }

    /// Passes a notification to the call it belongs to, when that call has a handler for it
    /// (progress by its token, log messages by where they arrived); whether it did.
    fn call_notification(&self, method: &str, message: &Value, waiting_for: Option<&RequestId>) -> bool {
        let params = message.get("params").unwrap_or(&Value::Null);
        type Sink = fn(&CallEntry) -> Option<NotificationSink>;
        let (call, sink): (Option<std::rc::Rc<CallEntry>>, Sink) = match method {
            "notifications/progress" => {
                let call = progress_token_of(params).and_then(|token| self.call_with_token(token));
                (call, |c: &CallEntry| c.handlers.progress.clone())
            }
            "notifications/message" => (self.call_for(waiting_for), |c: &CallEntry| c.handlers.log.clone()),
            _ => return false,
        };
        match call.as_deref().and_then(sink) {
            Some(sink) => {
                sink(params);
                true
            }
            None => false,
        }
    }

    /// Sends a message that gets no response — our answer to a server request, or a
    /// notification — on the current wire: to the child, or POSTed to the endpoint (the
    /// HTTP+SSE channel's, on that wire).
    pub(super) async fn send_reply(&self, bytes: Vec<u8>) -> Result<(), ClientError> {
        if let Some(channel) = self.stdio_channel() {
            return channel.send(bytes);
        }
        let url = self.sse_channel().map_or_else(|| self.cfg.url.clone(), |channel| channel.post_url().to_owned());
        let answer = self.post(&url, bytes, self.wire_headers()).await?;
        if (200..300).contains(&answer.status) {
            Ok(())
        } else {
            Err(ClientError::Protocol(format!("the server refused our message with HTTP {}", answer.status)))
        }
    }
}
