//! Building HTTP responses that carry JSON-RPC bodies.

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use mcpd::jsonrpc::{self, ErrorCode, ErrorObject, Outgoing, Rejection, RequestId};
use mcpd::version::Era;
use mcpd::ProtocolError;
use serde::Serialize;

/// `Content-Type: application/json`, built once: `content_type(&str)` would validate and copy the
/// value into a fresh buffer for every response.
const JSON: HeaderValue = HeaderValue::from_static("application/json");

fn status(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// A JSON body with a status.
pub(crate) fn json_bytes(code: u16, body: Vec<u8>) -> HttpResponse {
    HttpResponse::build(status(code)).insert_header((header::CONTENT_TYPE, JSON)).body(body)
}

/// A success response (a typed [`mcpd::server::Reply`] is serialized straight into the body).
pub(crate) fn result_response<R: Serialize + ?Sized>(id: &RequestId, result: &R) -> HttpResponse {
    json_bytes(200, jsonrpc::result_bytes(id, result))
}

/// A protocol error with the status its era gives it.
pub(crate) fn error_response(id: Option<&RequestId>, error: &ProtocolError, era: Era) -> HttpResponse {
    let object = error.to_error_object(era);
    json_bytes(error.http_status(era), Outgoing::Error { id, error: &object }.to_vec())
}

/// `404` for a path that is no route (or an endpoint that is not there for the caller: the same
/// answer, so an endpoint's existence does not show).
pub(crate) fn not_found(path: &str) -> HttpResponse {
    plain_error(404, ErrorCode::INVALID_REQUEST, format!("Not found: {path}; the MCP endpoint is POST /mcp"))
}

/// An error that is about the HTTP exchange itself (no request id).
pub(crate) fn plain_error(code: u16, rpc_code: ErrorCode, message: String) -> HttpResponse {
    let object = ErrorObject::new(rpc_code, message);
    json_bytes(code, Outgoing::Error { id: None, error: &object }.to_vec())
}

/// `429 Too Many Requests` for a caller past its share ([`crate::shares`]): `Retry-After` and a
/// JSON-RPC error naming the share, answering the request when there is one.
pub(crate) fn share_refused(id: Option<&RequestId>, refusal: &crate::shares::ShareRefusal) -> HttpResponse {
    log::debug!("{refusal}");
    let object = ErrorObject::new(ErrorCode::INTERNAL_ERROR, refusal.to_string());
    let mut response = json_bytes(429, Outgoing::Error { id, error: &object }.to_vec());
    response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from(SHARE_RETRY_AFTER_SECS));
    response
}

/// The `Retry-After` of a refused share, in seconds: a share comes back when something ends.
const SHARE_RETRY_AFTER_SECS: u64 = 1;

/// 404 for a session id that names no live session.
pub(crate) fn session_not_found() -> HttpResponse {
    plain_error(
        404,
        ErrorCode::INVALID_REQUEST,
        "Session not found: it ended, expired or never existed; initialize again".into(),
    )
}

/// 400 for a request that names no session where it must.
pub(crate) fn missing_session_id() -> HttpResponse {
    plain_error(400, ErrorCode::INVALID_REQUEST, "Missing Mcp-Session-Id header".into())
}

/// 400 for a body that is no valid JSON-RPC message, echoing its id when it could be read.
pub(crate) fn rejection_response(rejection: &Rejection) -> HttpResponse {
    json_bytes(400, Outgoing::Error { id: rejection.id.as_ref(), error: &rejection.error }.to_vec())
}

/// 429 for a request beyond its session's (or stream's) cap on running requests.
pub(crate) fn too_many_in_flight(id: &RequestId, max: usize) -> HttpResponse {
    let object = ErrorObject::new(
        ErrorCode::INTERNAL_ERROR,
        format!("Too many requests in flight: this session runs at most {max} at once; retry when one has finished"),
    );
    json_bytes(429, Outgoing::Error { id: Some(id), error: &object }.to_vec())
}
