//! `POST /mcp`: one JSON-RPC message (or a 2025-03-26 batch) in, one answer out. What the
//! message is — for a session, starting one, stateless, handshake era — is the core's decision
//! ([`route_post`]); this module reads the HTTP request and hands the message on.
//!
//! The stateless path is: read the body once (under the size limit and the body timeout,
//! [`super::body`]), parse it once, validate in the core, execute, serialize once. No actor,
//! task or channel is created per request.

use actix_web::http::header::{self, HeaderMap, HeaderName};

use actix_web::{web, HttpRequest, HttpResponse};
use mcpd::jsonrpc::{self, ErrorCode, Message, Outgoing, Rejection, Request, RequestId};
use mcpd::server::{
    encode_answer, encode_batch, http_era, legacy_http_version, route_post, HttpHeaders, Method, Posted, Reply,
    RoutingHeaders, Scope, SessionSupport,
};
use mcpd::version::{Era, ProtocolVersion};
use mcpd::ProtocolError;

use super::guard::{tool_refusal, Caller};
use super::reply::{
    error_response, json_bytes, missing_session_id, plain_error, rejection_response, result_response, share_refused,
};
use super::state::AppState;
use super::stream::sse;
use super::trace::carry_trace;
use crate::served::{Served, Serving};
use crate::shares::Resource;
use crate::telemetry::Transport;
use crate::tool_executor::execute;

// The headers the endpoint routes on, as ready-made names: a lookup by `&str` parses the name
// into a `HeaderName` on every call, and allocates it when it is not a standard one (none of
// MCP's is).
static PROTOCOL_VERSION: HeaderName = HeaderName::from_static(mcpd::headers::PROTOCOL_VERSION);
static METHOD: HeaderName = HeaderName::from_static(mcpd::headers::METHOD);
static NAME: HeaderName = HeaderName::from_static(mcpd::headers::NAME);
static SESSION_ID: HeaderName = HeaderName::from_static(mcpd::headers::SESSION_ID);

/// The text value of the header with this lowercase name; the routing headers and
/// `Authorization` are found by their ready-made names, any other (an `Mcp-Param-*`, an API key
/// header) by parsing its name.
fn header_text<'r>(headers: &'r HeaderMap, name: &str) -> Option<&'r str> {
    let value = match name {
        mcpd::headers::PROTOCOL_VERSION => headers.get(&PROTOCOL_VERSION),
        mcpd::headers::METHOD => headers.get(&METHOD),
        mcpd::headers::NAME => headers.get(&NAME),
        mcpd::headers::SESSION_ID => headers.get(&SESSION_ID),
        "authorization" => headers.get(header::AUTHORIZATION),
        other => headers.get(other),
    };
    value.and_then(|v| v.to_str().ok())
}

pub(super) async fn post(req: HttpRequest, payload: web::Payload, state: web::Data<AppState>) -> HttpResponse {
    if let Some(content_type) = req.headers().get(header::CONTENT_TYPE) {
        let content_type = content_type.to_str().unwrap_or("");
        let essence = content_type.split(';').next().unwrap_or("").trim();
        if !essence.eq_ignore_ascii_case("application/json") {
            return plain_error(
                415,
                ErrorCode::INVALID_REQUEST,
                format!("Unsupported Content-Type {content_type:?}; send application/json"),
            );
        }
    }
    let sessions = state.sessions();
    if sessions == SessionSupport::Enabled && !sse::accepts_json_and_events(&req) {
        return plain_error(
            406,
            ErrorCode::INVALID_REQUEST,
            "Not acceptable: Accept must list both application/json and text/event-stream".into(),
        );
    }
    let body = match super::body::read(&req, payload, &state).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let lookup = |name: &str| header_text(req.headers(), name);
    let headers = HttpHeaders::new(&lookup);
    let incoming = match jsonrpc::parse(&body) {
        Ok(incoming) => incoming,
        Err(rejection) => return rejection_response(&rejection),
    };
    // An endpoint without sessions does not even look for a session id.
    let session_id = match sessions {
        SessionSupport::Enabled => lookup(mcpd::headers::SESSION_ID),
        SessionSupport::Disabled => None,
    };
    let caller = super::guard::caller_of(&req);
    let access = caller.access.clone();
    match route_post(incoming, &headers.routing, session_id, sessions) {
        Posted::InSession(session_id, mut message) => {
            if let Message::Request(request) = &mut message {
                if let Some(refused) = tool_refusal(request, access.as_ref(), &state).await {
                    return refused;
                }
                carry_trace(request, req.headers());
            }
            super::session::handle(session_id, message, &state, caller).await
        }
        Posted::CreateSession(mut request) => {
            carry_trace(&mut request, req.headers());
            let serving = Serving::start(&request, Served { version: None, session: None, transport: Transport::Tcp });
            let asked = request.params.as_ref().and_then(|p| p.get("protocolVersion")).and_then(|v| v.as_str());
            let negotiated = asked.map(ProtocolVersion::negotiate);
            let response = super::session::create(request, &state, caller).await;
            serving.finish_initialize(negotiated, &response);
            response
        }
        Posted::MissingSession(request) => {
            state.metrics.rejected(&request);
            let error = ProtocolError::InvalidRequest("missing Mcp-Session-Id header: send initialize first".into());
            crate::served::refused(
                &request,
                Served { version: None, session: None, transport: Transport::Tcp },
                &error,
            );
            error_response(Some(&request.id), &error, Era::Stateful)
        }
        Posted::Stateless(mut request) => match tool_refusal(&request, access.as_ref(), &state).await {
            Some(refused) => refused,
            None => {
                carry_trace(&mut request, req.headers());
                super::stateless::serve(request, &headers, &state, caller).await
            }
        },
        Posted::Handshake(mut request) => {
            if let Some(refused) = tool_refusal(&request, access.as_ref(), &state).await {
                return refused;
            }
            let shares = state.sessions.shares();
            let _share = match shares.take(caller.identity.as_ref(), access.as_deref(), Resource::InFlight) {
                Ok(share) => share,
                Err(refusal) => return share_refused(Some(&request.id), &refusal),
            };
            carry_trace(&mut request, req.headers());
            let id = request.id.clone();
            match answer_legacy(request, &headers.routing, &state, caller).await {
                Ok(result) => result_response(&id, &result),
                Err(error) => error_response(Some(&id), &error, Era::Stateful),
            }
        }
        // Notifications and responses need no answer; without a session nothing awaits them.
        Posted::Unaddressed => missing_session_id(),
        Posted::Accepted(notification) => {
            if let Some(notification) = notification {
                let version = headers.routing.protocol_version.map(str::trim).and_then(ProtocolVersion::parse);
                let served = Served { version, session: None, transport: Transport::Tcp };
                let http = crate::telemetry::enabled().then(|| super::trace::of_headers(req.headers())).flatten();
                crate::served::notification(&notification, served, http.as_ref());
            }
            HttpResponse::Accepted().finish()
        }
        Posted::Batch(items) => {
            for item in &items {
                if let Ok(Message::Request(request)) = item {
                    if let Some(refused) = tool_refusal(request, access.as_ref(), &state).await {
                        return refused;
                    }
                }
            }
            batch(items, &headers.routing, &state, caller).await
        }
    }
}

async fn answer_legacy(
    request: Request,
    routing: &RoutingHeaders<'_>,
    state: &AppState,
    caller: Caller,
) -> Result<Reply, ProtocolError> {
    if Method::parse(&request.method) == Method::Initialize {
        let serving = Serving::start(&request, Served { version: None, session: None, transport: Transport::Tcp });
        let outcome = state.server.initialize(request.params.as_ref());
        serving.finish_edge("initialize", &outcome);
        return outcome.map(|handshake| Reply::Value(handshake.result));
    }
    let version = match legacy_http_version(routing.protocol_version) {
        Ok(version) => version,
        Err(error) => {
            state.metrics.rejected(&request);
            return Err(error);
        }
    };
    let scope = Scope { access: caller.access, caller: caller.identity, ..Scope::new(version) };
    execute(&state.server, &state.metrics, request, scope, state.limits.tool_timeout, Transport::Tcp).await
}

/// A JSON-RPC batch: only under 2025-03-26 (the header, or its absence, decides).
async fn batch(
    items: Vec<Result<Message, Rejection>>,
    routing: &RoutingHeaders<'_>,
    state: &AppState,
    caller: Caller,
) -> HttpResponse {
    let version = match routing.protocol_version.map(str::trim) {
        None => ProtocolVersion::HTTP_DEFAULT,
        Some(v) => ProtocolVersion::parse(v).unwrap_or(ProtocolVersion::STATELESS),
    };
    if !version.allows_batch() {
        return error_response(None, &ProtocolError::BatchNotAllowed(version.as_str()), Era::Stateful);
    }
    let caller = &caller;
    let answers = items.into_iter().map(|item| async move {
        match item {
            Err(rejection) => Some(Outgoing::Error { id: rejection.id.as_ref(), error: &rejection.error }.to_vec()),
            Ok(Message::Request(request)) => {
                let id: RequestId = request.id.clone();
                let shares = state.sessions.shares();
                let share = shares.take(caller.identity.as_ref(), caller.access.as_deref(), Resource::InFlight);
                let outcome = match (http_era(&request, None), share) {
                    (Era::Stateless, _) => Err(ProtocolError::BatchNotAllowed(ProtocolVersion::STATELESS.as_str())),
                    (_, Err(refusal)) => Err(ProtocolError::Internal(refusal.to_string())),
                    (_, Ok(_share)) => answer_legacy(request, routing, state, caller.clone()).await,
                };
                Some(encode_answer(&id, Era::Stateful, &outcome))
            }
            Ok(Message::Notification(_) | Message::Response(_)) => None,
        }
    });
    let answers: Vec<Vec<u8>> = futures_util::future::join_all(answers).await.into_iter().flatten().collect();
    match encode_batch(&answers) {
        Some(body) => json_bytes(200, body),
        None => HttpResponse::Accepted().finish(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    #[test]
    fn routing_and_param_headers_are_found_by_their_lowercase_names() {
        let req = TestRequest::default()
            .insert_header(("MCP-Protocol-Version", "2026-07-28"))
            .insert_header(("Mcp-Method", "tools/call"))
            .insert_header(("Mcp-Name", "echo"))
            .insert_header(("Mcp-Session-Id", "s1"))
            .insert_header(("Mcp-Param-Region", "eu"))
            .to_http_request();
        let found = |name: &str| header_text(req.headers(), name);
        assert_eq!(found(mcpd::headers::PROTOCOL_VERSION), Some("2026-07-28"));
        assert_eq!(found(mcpd::headers::METHOD), Some("tools/call"));
        assert_eq!(found(mcpd::headers::NAME), Some("echo"));
        assert_eq!(found(mcpd::headers::SESSION_ID), Some("s1"));
        assert_eq!(found("mcp-param-region"), Some("eu"));
        assert_eq!(found("mcp-param-other"), None);
    }
}
