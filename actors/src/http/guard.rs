//! The guard in front of every route, as middleware: a bad `Host` (loopback binds) or `Origin`
//! is 403, a missing or wrong API key is 401 (with `WWW-Authenticate: Bearer`), checked in that
//! order before routing, so no handler (nor a 404 or 405) answers an unchecked request.

use actix_web::body::EitherBody;
use actix_web::dev::{forward_ready, Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use futures_util::future::{ready, Either, MapOk, Ready, TryFutureExt as _};
use mcpd::jsonrpc::ErrorCode;

use super::reply::plain_error;
use super::AppState;

/// The middleware factory (one per worker app).
pub(super) struct Guard(pub(super) web::Data<AppState>);

impl<S, B> Transform<S, ServiceRequest> for Guard
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error>,
{
    type Response = ServiceResponse<EitherBody<B>>;
    type Error = actix_web::Error;
    type Transform = GuardService<S>;
    type InitError = ();
    type Future = Ready<Result<GuardService<S>, ()>>;

    fn new_transform(&self, service: S) -> Self::Future {
        ready(Ok(GuardService { service, state: self.0.clone() }))
    }
}

/// The guard around the app's service.
pub(super) struct GuardService<S> {
    service: S,
    state: web::Data<AppState>,
}

type Admitted<B> = fn(ServiceResponse<B>) -> ServiceResponse<EitherBody<B>>;

impl<S, B> Service<ServiceRequest> for GuardService<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error>,
{
    type Response = ServiceResponse<EitherBody<B>>;
    type Error = actix_web::Error;
    type Future = Either<Ready<Result<Self::Response, Self::Error>>, MapOk<S::Future, Admitted<B>>>;

    forward_ready!(service);

    fn call(&self, req: ServiceRequest) -> Self::Future {
        match denial(req.request(), &self.state) {
            Some(denied) => Either::Left(ready(Ok(req.into_response(denied).map_into_right_body()))),
            None => Either::Right(self.service.call(req).map_ok(ServiceResponse::map_into_left_body as Admitted<B>)),
        }
    }
}

/// Checks Host, Origin and key, in that order. `None` means the request may proceed.
fn denial(req: &HttpRequest, state: &AppState) -> Option<HttpResponse> {
    let headers = req.headers();
    if state.check_host {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
        if !state.origins.host_allowed(host) {
            return Some(forbidden("Host", host));
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !state.origins.origin_allowed(origin) {
            return Some(forbidden("Origin", origin));
        }
    }
    let authorized = state.keys.authorizes(|name| headers.get(name).and_then(|v| v.to_str().ok()));
    if !authorized {
        let mut response =
            plain_error(401, ErrorCode::UNAUTHORIZED, "Unauthorized: a valid API key is required".into());
        response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
        return Some(response);
    }
    None
}

/// 403 for a `Host` or `Origin` the policy does not allow.
fn forbidden(header: &str, value: &str) -> HttpResponse {
    log::debug!("rejecting {header} {value:?}");
    plain_error(403, ErrorCode::INVALID_REQUEST, format!("Forbidden: {header} {value:?} is not allowed"))
}
