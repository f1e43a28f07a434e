//! Reading a request body under the edge's limits, so that a client cannot hold a connection
//! (and a descriptor) by promising a body and never sending it.
//!
//! - At most `max_body_bytes` (`413`; a `Content-Length` above it is refused before reading).
//! - Within `body_timeout` (`408`, and the connection is closed: the rest of the body is never
//!   read).
//! - A body still incomplete after [`SLOW_BODY_GRACE`] becomes a *slow body* ([`super::slow_bodies`]), and at most
//!   `max_slow_bodies` may be slow at once; past that a slow body is answered `408` at once.
//!   Clients that send their body with their headers (every ordinary client) never count, so
//!   stalled bodies can hold at most that many connections and the rest of `max_connections` is
//!   a reserve for them.
//!
//! Every answer carries a JSON-RPC error body like the other edge errors. The deadlines are the
//! worker's sweeper's ([`super::deadline`]), not a timer per request: actix polls a handler once
//! before it feeds the body, so nearly every body waits once, and must cost next to nothing.

use actix_web::http::header;
use actix_web::http::ConnectionType;
use actix_web::{web, HttpRequest, HttpResponse};
use futures_util::StreamExt as _;
use mcpd::jsonrpc::ErrorCode;

use super::deadline::within;
use super::reply::plain_error;
use super::slow_bodies::SLOW_BODY_GRACE;
use super::state::AppState;
use crate::counts::EdgeCounters;

/// A 408 that closes the connection.
fn request_timeout(message: String) -> HttpResponse {
    let mut response = plain_error(408, ErrorCode::INVALID_REQUEST, message);
    response.head_mut().set_connection_type(ConnectionType::Close);
    response
}

/// Reads the body of `req` under the listener's limits; the error answer otherwise.
pub(super) async fn read(
    req: &HttpRequest,
    payload: web::Payload,
    state: &AppState,
) -> Result<web::BytesMut, HttpResponse> {
    let timeout = state.connections.body_timeout;
    let collect = collect(req, payload, state.limits.max_body_bytes);
    tokio::pin!(collect);
    let grace = SLOW_BODY_GRACE.min(timeout);
    if let Ok(done) = within(grace, collect.as_mut()).await {
        return done;
    }
    let edge = state.metrics.edge();
    let Some(_slow) = state.slow_bodies.enter() else {
        EdgeCounters::bump(&edge.slow_bodies_refused);
        return Err(request_timeout(format!(
            "Request body not received within {} s while {} other requests wait for theirs; the connection is closed",
            grace.as_secs_f64(),
            state.slow_bodies.max()
        )));
    };
    match within(timeout.saturating_sub(grace), collect.as_mut()).await {
        Ok(done) => done,
        Err(_) => {
            EdgeCounters::bump(&edge.body_timeouts);
            log::debug!("{} {}: no complete body within {timeout:?}; answered 408", req.method(), req.path());
            Err(request_timeout(format!(
                "Request body not received within {} s; the connection is closed",
                timeout.as_secs_f64()
            )))
        }
    }
}

/// Collects the body up to `limit` bytes; a larger one is answered 413 with a JSON-RPC error.
async fn collect(req: &HttpRequest, mut payload: web::Payload, limit: usize) -> Result<web::BytesMut, HttpResponse> {
    let too_large =
        || plain_error(413, ErrorCode::INVALID_REQUEST, format!("Request body too large: the limit is {limit} bytes"));
    let declared =
        req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    let mut body = web::BytesMut::with_capacity(declared.unwrap_or(1024).min(limit));
    while let Some(chunk) = payload.next().await {
        let chunk =
            chunk.map_err(|e| plain_error(400, ErrorCode::INVALID_REQUEST, format!("Invalid request body: {e}")))?;
        if body.len() + chunk.len() > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
