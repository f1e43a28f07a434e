//! The guard in front of every route, as middleware: a bad `Host` (loopback binds) or `Origin`
//! is 403, a missing or wrong API key is 401 (with `WWW-Authenticate: Bearer`), checked in that
//! order before routing, so no handler (nor a 404 or 405) answers an unchecked request.
//!
//! With OAuth on, an API key (when keys are set) or a valid bearer token admits; the protected-
//! resource metadata is open; a missing or bad token is 401 with the RFC 9728 challenge, a token
//! without the required scopes 403. A token decided from cached keys costs no wait and no task;
//! only a key-set fetch or an introspection makes the request wait (boxed, off the hot path). The
//! admitted token's [`Access`] rides in the request's extensions for the per-tool checks.
//!
//! With an access file (`--access`), a key of one of its clients admits that client: its
//! [`Access`] (the tools and prompts its globs allow) rides in the extensions likewise, and an
//! OAuth token whose subject or scopes a client names becomes that client. `--key` keys still
//! admit with everything; without any, an access file means a key (or token) is required. A
//! client's `tools/call` beyond its rate limit is `429` with `Retry-After`.
//!
//! The guard also decides which endpoint a caller may use: `/mcp` (with the 2024-11-05 `/sse`
//! and `/messages`) is the whole server, `/mcp/<name>` a virtual server, whose view joins the
//! request's [`Access`] so the screen shows only what it selects. An access-file client limited
//! to some virtual servers (`"servers"`) finds any other endpoint, `/mcp` included, as a path
//! that does not exist (`404`).

use actix_web::body::EitherBody;
use actix_web::dev::{forward_ready, Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::http::header;
use actix_web::{web, HttpMessage as _, HttpRequest, HttpResponse};
use futures_util::future::{ready, Either, LocalBoxFuture, MapOk, Ready, TryFutureExt as _};
use mcpd::auth::access::{retry_after_secs, AccessClient, ClientCallOutcome};
use mcpd::auth::challenge::METADATA_PATH;
use mcpd::auth::identity::Identity;
use mcpd::auth::oauth::{bearer_token, AuthOutcome};
use mcpd::auth::scopes::Access;
use mcpd::jsonrpc::{ErrorCode, Request};
use mcpd::server::Method;
use std::rc::Rc;
use std::sync::Arc;

use crate::auth::{Authenticator, Decision};

use super::reply::plain_error;
use super::state::AppState;

/// The middleware factory (one per worker app).
pub(super) struct Guard(pub(super) web::Data<AppState>);

impl<S, B> Transform<S, ServiceRequest> for Guard
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: 'static,
{
    type Response = ServiceResponse<EitherBody<B>>;
    type Error = actix_web::Error;
    type Transform = GuardService<S>;
    type InitError = ();
    type Future = Ready<Result<GuardService<S>, ()>>;

    fn new_transform(&self, service: S) -> Self::Future {
        ready(Ok(GuardService { service: Rc::new(service), state: self.0.clone() }))
    }
}

/// The guard around the app's service.
pub(super) struct GuardService<S> {
    /// Shared with the futures of requests that wait for a key-set fetch or an introspection.
    service: Rc<S>,
    state: web::Data<AppState>,
}

type Admitted<B> = fn(ServiceResponse<B>) -> ServiceResponse<EitherBody<B>>;
type Answer<B> = Result<ServiceResponse<EitherBody<B>>, actix_web::Error>;

impl<S, B> Service<ServiceRequest> for GuardService<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: 'static,
{
    type Response = ServiceResponse<EitherBody<B>>;
    type Error = actix_web::Error;
    type Future = Either<Either<Ready<Answer<B>>, MapOk<S::Future, Admitted<B>>>, LocalBoxFuture<'static, Answer<B>>>;

    forward_ready!(service);

    fn call(&self, req: ServiceRequest) -> Self::Future {
        match admission(req.request(), &self.state) {
            Admission::Deny(denied) => {
                Either::Left(Either::Left(ready(Ok(req.into_response(denied).map_into_right_body()))))
            }
            Admission::Admit(access, caller, operator) => {
                let access = match on_endpoint(req.path(), access, &self.state) {
                    Ok(access) => access,
                    Err(NotThere) => {
                        let absent = super::reply::not_found(req.path());
                        return Either::Left(Either::Left(ready(Ok(req.into_response(absent).map_into_right_body()))));
                    }
                };
                if let Some(access) = access {
                    req.extensions_mut().insert(access);
                }
                if let Some(caller) = caller {
                    req.extensions_mut().insert(caller);
                }
                if operator {
                    req.extensions_mut().insert(Operator);
                }
                Either::Left(Either::Right(
                    self.service.call(req).map_ok(ServiceResponse::map_into_left_body as Admitted<B>),
                ))
            }
            Admission::Wait(auth) => {
                let service = self.service.clone();
                let state = self.state.clone();
                Either::Right(Box::pin(async move {
                    let token = bearer(req.request()).unwrap_or_default().to_owned();
                    match auth.decide(&token).await {
                        Ok(access) => {
                            auth.count(AuthOutcome::Ok);
                            let caller = token_caller(&access);
                            let access = token_client(access, &state);
                            if token_operator(&auth, &access) {
                                req.extensions_mut().insert(Operator);
                            }
                            let access = match on_endpoint(req.path(), Some(access), &state) {
                                Ok(access) => access,
                                Err(NotThere) => {
                                    let absent = super::reply::not_found(req.path());
                                    return Ok(req.into_response(absent).map_into_right_body());
                                }
                            };
                            if let Some(access) = access {
                                req.extensions_mut().insert(access);
                            }
                            req.extensions_mut().insert(caller);
                            service.call(req).await.map(ServiceResponse::map_into_left_body)
                        }
                        Err(outcome) => {
                            let denied = refusal(&auth, outcome);
                            Ok(req.into_response(denied).map_into_right_body())
                        }
                    }
                }))
            }
        }
    }
}

/// What the guard does with a request.
enum Admission {
    /// Answer it with this.
    Deny(HttpResponse),
    /// Let it through, with what its token allows (`None`: everything), as this caller
    /// (`None`: the anonymous one, when no authentication is configured), an operator or not.
    Admit(Option<Arc<Access>>, Option<Identity>, bool),
    /// Its token needs a key-set fetch or an introspection first.
    Wait(Arc<Authenticator>),
}

/// The bearer token of the request, if any.
fn bearer(req: &HttpRequest) -> Option<&str> {
    // `from_utf8` checks a long token word by word; `HeaderValue::to_str` byte by byte (~10
    // instructions a byte). Whatever is not a token's characters is refused later anyway.
    let value = req.headers().get(header::AUTHORIZATION)?;
    std::str::from_utf8(value.as_bytes()).ok().and_then(bearer_token)
}

/// Checks Host, Origin and then the credential: an API key, or (with OAuth) a bearer token.
fn admission(req: &HttpRequest, state: &AppState) -> Admission {
    let headers = req.headers();
    if state.check_host {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
        if !state.origins.host_allowed(host) {
            return Admission::Deny(forbidden("Host", host));
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !state.origins.origin_allowed(origin) {
            return Admission::Deny(forbidden("Origin", origin));
        }
    }
    let key = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(access) = state.access.as_ref().and_then(|control| control.identify(key)) {
        if let Some(auth) = &state.auth {
            auth.count(AuthOutcome::ApiKey);
        }
        let caller = access.client.as_ref().map(|client| Identity::client(&client.name));
        let operator = access.client.as_ref().is_some_and(|client| client.operator);
        return Admission::Admit(Some(access), caller, operator);
    }
    let Some(auth) = &state.auth else {
        // An access file means callers authenticate, even without `--key`.
        if state.keys.is_open() && state.access.is_none() {
            // No authentication configured: every caller is the operator ([`is_operator`]).
            return Admission::Admit(None, None, false);
        }
        if let Some(caller) = key_caller(state, key) {
            return Admission::Admit(None, Some(caller), true);
        }
        let mut response =
            plain_error(401, ErrorCode::UNAUTHORIZED, "Unauthorized: a valid API key is required".into());
        response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
        return Admission::Deny(response);
    };
    // Clients find how to authenticate here, so it is open to every caller.
    if req.path().starts_with(METADATA_PATH) {
        return Admission::Admit(None, None, false);
    }
    if let Some(caller) = key_caller(state, key) {
        auth.count(AuthOutcome::ApiKey);
        return Admission::Admit(None, Some(caller), true);
    }
    let Some(token) = bearer(req) else {
        return Admission::Deny(refusal(auth, AuthOutcome::Missing));
    };
    match auth.decide_now(token) {
        Decision::Now(Ok(access)) => {
            auth.count(AuthOutcome::Ok);
            let caller = token_caller(&access);
            let access = token_client(access, state);
            let operator = token_operator(auth, &access);
            Admission::Admit(Some(access), Some(caller), operator)
        }
        Decision::Now(Err(outcome)) => Admission::Deny(refusal(auth, outcome)),
        Decision::Later => Admission::Wait(auth.clone()),
    }
}

/// The MCP endpoint a path names: `Some(None)` the whole server (`/mcp`, and the 2024-11-05
/// `/sse` and `/messages`), `Some(Some(name))` the virtual server `name` (`/mcp/<name>`), `None`
/// no MCP endpoint.
fn endpoint(path: &str) -> Option<Option<&str>> {
    match path {
        "/mcp" | "/sse" | "/messages" => Some(None),
        _ => path.strip_prefix("/mcp/").filter(|name| !name.is_empty() && !name.contains('/')).map(Some),
    }
}

/// A request's access on the endpoint its path names: on a virtual server's, `access` seeing
/// through the view (a caller nothing else limits gets the view alone). `Err`: the `404` of a
/// path that does not exist, for an access-file client the endpoint is not for. A name that is
/// no virtual server is left to the routes (their `404`).
fn on_endpoint(path: &str, access: Option<Arc<Access>>, state: &AppState) -> Result<Option<Arc<Access>>, NotThere> {
    let Some(endpoint) = endpoint(path) else { return Ok(access) };
    let view = match endpoint {
        None => None,
        Some(name) => match state.views.as_ref().and_then(|views| views.get(name)) {
            Some(view) => Some(view),
            None => return Ok(access),
        },
    };
    if access.as_ref().and_then(|a| a.client.as_ref()).is_some_and(|client| !client.may_use(endpoint)) {
        log::debug!("{path} refused: the caller's access-file client is limited to other virtual servers");
        return Err(NotThere);
    }
    Ok(match (view, access) {
        (None, access) => access,
        (Some(view), Some(access)) => Some(Arc::new(access.through(view))),
        (Some(view), None) => Some(Arc::new(Access::of_view(view))),
    })
}

/// An endpoint that is not there for the caller: answered as a path that does not exist.
#[derive(Debug)]
struct NotThere;

/// The caller a `--key` key the request presents is (compared in constant time); `None` when it
/// presents none.
fn key_caller<'a>(state: &AppState, key: impl Fn(&str) -> Option<&'a str>) -> Option<Identity> {
    state.keys.identify(key).and_then(|index| state.keys.identity(index)).cloned()
}

/// The caller a verified token is: its subject at its issuer (also when an access-file client
/// matches it: two subjects one client names are two callers).
fn token_caller(access: &Access) -> Identity {
    Identity::subject(access.granted.issuer.as_deref(), access.granted.subject.as_deref())
}

/// Whether an admitted token's caller is an operator: the token grants the operator scope, or
/// the access-file client it matches is marked `operator`.
fn token_operator(auth: &Authenticator, access: &Access) -> bool {
    auth.grants_operator(access) || access.client.as_ref().is_some_and(|client| client.operator)
}

/// Marks a request whose caller is an operator: the one decision every operator route
/// (`/status`, `/metrics`, and any added later) follows ([`is_operator`]). Without
/// authentication every caller is one; with it, a `--key` key, an access-file client marked
/// `"operator": true`, or a token granting the operator scope (`--auth-operator-scope`, default
/// `mcp:admin`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Operator;

/// The guard of every operator route: a caller that is no operator finds no such route (`404`,
/// as for any path that does not exist). Without any authentication configured every caller is
/// one (nothing is marked: the request pays nothing for it).
pub(super) fn is_operator(ctx: &actix_web::guard::GuardContext<'_>) -> bool {
    let open = ctx
        .app_data::<web::Data<AppState>>()
        .is_some_and(|state| state.keys.is_open() && state.access.is_none() && state.auth.is_none());
    open || ctx.req_data().contains::<Operator>()
}

/// An admitted token's access, limited to the access-file client it matches (if any).
fn token_client(access: Arc<Access>, state: &AppState) -> Arc<Access> {
    match &state.access {
        Some(control) => control.for_token(access),
        None => access,
    }
}

/// The answer to a request whose token is refused (counted here): `401` with the challenge,
/// `403` for a missing scope, `503` when the issuer cannot be asked.
pub(super) fn refusal(auth: &Authenticator, outcome: AuthOutcome) -> HttpResponse {
    auth.count(outcome);
    log::debug!("bearer token refused: {}", outcome.label());
    let required = auth.required();
    let (status, message) = match outcome {
        AuthOutcome::InsufficientScope => (403, format!("Forbidden: {}", outcome.description())),
        AuthOutcome::IssuerUnavailable => {
            (503, format!("Service unavailable: {}; try again later", outcome.description()))
        }
        _ => (401, format!("Unauthorized: {}", outcome.description())),
    };
    with_challenge(plain_error(status, ErrorCode::UNAUTHORIZED, message), &auth.challenge(outcome, &required))
}

/// `response` with a `WWW-Authenticate` header.
pub(super) fn with_challenge(mut response: HttpResponse, challenge: &str) -> HttpResponse {
    if let Ok(value) = header::HeaderValue::from_str(challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// 403 for a `Host` or `Origin` the policy does not allow.
fn forbidden(header: &str, value: &str) -> HttpResponse {
    log::debug!("rejecting {header} {value:?}");
    plain_error(403, ErrorCode::INVALID_REQUEST, format!("Forbidden: {header} {value:?} is not allowed"))
}

/// Who a request comes from and what it may see, as the guard admitted it: one value the
/// handlers carry into the request's [`mcpd::server::Scope`] and whatever it opens.
#[derive(Debug, Clone, Default)]
pub(super) struct Caller {
    /// What it may see and use (`None`: everything — no OAuth, no access file, or a `--key`).
    pub(super) access: Option<Arc<Access>>,
    /// Who it is (`None`: the anonymous caller of a server without authentication).
    pub(super) identity: Option<Identity>,
}

/// Who the guard admitted, and with what access.
pub(super) fn caller_of(req: &HttpRequest) -> Caller {
    let extensions = req.extensions();
    Caller { access: extensions.get::<Arc<Access>>().cloned(), identity: extensions.get::<Identity>().cloned() }
}

/// The refusal of a `tools/call` before it runs: `429` with `Retry-After` when the caller's
/// access-file client has spent its rate limit (one bucket across the cluster with `--redis`,
/// [`crate::access::AccessControl::take_call`]); `403 insufficient_scope` for a tool whose own
/// scopes the caller's token lacks, naming the scopes to ask for (not for a tool the client may
/// not call at all: that one is unknown to it, as the core answers). `None`: it may go on.
pub(super) async fn tool_refusal(
    request: &Request,
    access: Option<&Arc<Access>>,
    state: &AppState,
) -> Option<HttpResponse> {
    let access = access?;
    if Method::parse(&request.method) != Method::ToolsCall {
        return None;
    }
    let named = request.params.as_ref().and_then(|p| p.get("name")).and_then(|n| n.as_str());
    // The caller's rules judge a virtual server's renamed tool by its original name.
    let tool = named.and_then(|name| access.tool_original(name));
    if let Some(client) = &access.client {
        let taken = match &state.access {
            Some(control) => control.take_call(client).await,
            None => client.take_call(std::time::Instant::now()),
        };
        if let Err(wait) = taken {
            client.calls.add(ClientCallOutcome::Limited);
            return Some(rate_limited(request, client, wait));
        }
        if !tool.is_some_and(|tool| client.tools.matches(tool)) {
            return None;
        }
        // A client recognised by its key is an API key: its globs are its rules, no scope is
        // asked of it (as of any API key).
        if access.rules.is_empty() {
            return None;
        }
    }
    let auth = state.auth.as_ref()?;
    let ask = auth.tool_refusal(tool?, access)?;
    let tool = named?;
    auth.count(AuthOutcome::InsufficientScope);
    log::debug!("tools/call {tool:?} refused: the token lacks a scope it needs");
    let message = format!("Forbidden: tool {tool:?} needs scope {}", ask.join(" "));
    let challenge = auth.challenge(AuthOutcome::InsufficientScope, &ask);
    let object = mcpd::jsonrpc::ErrorObject::new(ErrorCode::UNAUTHORIZED, message);
    let body = mcpd::jsonrpc::Outgoing::Error { id: Some(&request.id), error: &object }.to_vec();
    Some(with_challenge(super::reply::json_bytes(403, body), &challenge))
}

/// `429 Too Many Requests` for a client past its rate limit: `Retry-After` in whole seconds
/// (rounded up) and a JSON-RPC error answering the request.
fn rate_limited(request: &Request, client: &AccessClient, wait: std::time::Duration) -> HttpResponse {
    let retry = retry_after_secs(wait);
    let limit =
        client.rate_limit.map_or_else(String::new, |l| format!(" ({} a minute, {} at once)", l.per_minute, l.burst));
    log::debug!("client {:?} is over its rate limit", client.name);
    let message =
        format!("Too many requests: client {:?} is over its rate limit{limit}; retry in {retry} s", client.name);
    let object = mcpd::jsonrpc::ErrorObject::new(ErrorCode::INTERNAL_ERROR, message);
    let body = mcpd::jsonrpc::Outgoing::Error { id: Some(&request.id), error: &object }.to_vec();
    let mut response = super::reply::json_bytes(429, body);
    response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from(retry));
    response
}

#[cfg(test)]
mod tests {
    use super::endpoint;

    #[test]
    fn the_endpoint_of_a_path() {
        for whole in ["/mcp", "/sse", "/messages"] {
            assert_eq!(endpoint(whole), Some(None), "{whole}");
        }
        assert_eq!(endpoint("/mcp/docs"), Some(Some("docs")));
        for other in ["/mcp/", "/mcp/docs/x", "/status", "/metrics", "/mcpx", "/"] {
            assert_eq!(endpoint(other), None, "{other}");
        }
    }
}
