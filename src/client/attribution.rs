//! Which call a message belongs to, when a client runs calls with handlers of their own
//! (progress, log and server-request handlers for one call only) beside the connection's.
//!
//! - `notifications/progress` belongs to the call whose progress token it carries. The client
//!   makes the tokens ([`progress_token`]), one per call and never reused on a connection, so
//!   a token names at most one call.
//! - A notification or server request on a request's own response stream (a streamable HTTP
//!   POST answered with SSE) belongs to that request's call.
//! - On a stream every request shares (stdio, a session's GET stream, HTTP+SSE) nothing names
//!   the call, so a message belongs to a call only when that call is the one request in flight
//!   on the connection; otherwise it goes to the connection's own handlers.

use serde_json::Value;

use crate::jsonrpc::RequestId;

/// The progress token of the `n`th call that asked for progress on a connection.
pub fn progress_token(n: u64) -> String {
    format!("mcpd-progress-{n}")
}

/// The token a `notifications/progress` carries, when it is one this client could have made
/// (a string; numbers are never ours).
pub fn progress_token_of(params: &Value) -> Option<&str> {
    params.get("progressToken").and_then(Value::as_str)
}

/// Where a message arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival<'a> {
    /// On the response stream of this request.
    Own(&'a RequestId),
    /// On a stream every request shares.
    Shared,
}

/// The call among `calls` (those with handlers of their own) a notification or server request
/// belongs to. `request_of` gives a call's current request id (a call that takes several
/// rounds has one per round); `in_flight` counts every request in flight on the connection,
/// calls with handlers or not.
pub fn attribute<'a, T>(
    calls: &'a [T],
    request_of: impl Fn(&T) -> Option<&RequestId>,
    arrival: Arrival<'_>,
    in_flight: usize,
) -> Option<&'a T> {
    match arrival {
        Arrival::Own(id) => calls.iter().find(|call| request_of(call) == Some(id)),
        Arrival::Shared => match calls {
            [only] if in_flight == 1 => Some(only),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn of(call: &(u8, Option<RequestId>)) -> Option<&RequestId> {
        call.1.as_ref()
    }

    fn calls() -> Vec<(u8, Option<RequestId>)> {
        vec![(1, Some(RequestId::Number(7))), (2, Some(RequestId::Number(9))), (3, None)]
    }

    #[test]
    fn a_message_on_a_requests_own_stream_belongs_to_that_requests_call_only() {
        let calls = calls();
        assert_eq!(attribute(&calls, of, Arrival::Own(&RequestId::Number(9)), 5).map(|c| c.0), Some(2));
        // A plain request's stream (no handlers of its own): the connection's handlers.
        assert_eq!(attribute(&calls, of, Arrival::Own(&RequestId::Number(8)), 5), None);
        assert_eq!(attribute(&calls, of, Arrival::Own(&RequestId::String("7".into())), 5), None);
    }

    #[test]
    fn on_a_shared_stream_only_the_one_request_in_flight_is_unambiguous() {
        let one = vec![(1, Some(RequestId::Number(7)))];
        assert_eq!(attribute(&one, of, Arrival::Shared, 1).map(|c| c.0), Some(1));
        // A plain request is in flight too: it may be the one the server means.
        assert_eq!(attribute(&one, of, Arrival::Shared, 2), None);
        // Two calls with handlers: ambiguous.
        assert_eq!(attribute(&calls(), of, Arrival::Shared, 3), None);
        let none: Vec<(u8, Option<RequestId>)> = Vec::new();
        assert_eq!(attribute(&none, of, Arrival::Shared, 1), None);
    }

    #[test]
    fn progress_tokens_are_distinct_strings_and_other_tokens_are_not_ours() {
        assert_ne!(progress_token(1), progress_token(2));
        let ours = json!({"progressToken": progress_token(3), "progress": 1});
        assert_eq!(progress_token_of(&ours), Some("mcpd-progress-3"));
        assert_eq!(progress_token_of(&json!({"progressToken": 3, "progress": 1})), None);
        assert_eq!(progress_token_of(&json!({"progress": 1})), None);
    }
}
