//! The HTTP edge: routes, the key and Origin guard, and JSON-RPC error responses.
//!
//! Routes: `POST /mcp` (JSON-RPC), other methods on `/mcp` (405 with `Allow`), `GET /` and
//! `GET /status` (status JSON); anything else is 404. Every route is behind the same guard:
//! a bad `Host` (loopback binds) or `Origin` is 403, a missing or wrong key is 401.

mod mcp;
mod reply;
mod session;
mod stateless;

use std::sync::Arc;

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use mcpd::auth::{KeySet, OriginPolicy};
use mcpd::McpServer;

use crate::config::{Limits, SessionConfig, TransportMode};
use crate::counts::ActorCounts;
use crate::metrics::Metrics;
use crate::session::SessionRegistry;
use crate::status::StatusCell;

/// What every HTTP worker shares. Built once per listener start.
pub struct AppState {
    /// The protocol layer.
    pub server: Arc<McpServer>,
    /// API keys.
    pub keys: KeySet,
    /// Origin and Host policy.
    pub origins: OriginPolicy,
    /// Whether the listener is bound to loopback (then `Host` is checked).
    pub check_host: bool,
    /// Limits.
    pub limits: Limits,
    /// Transport mode.
    pub mode: TransportMode,
    /// The listener's status, for `GET /status`.
    pub status: Arc<StatusCell>,
    /// Metrics, for `GET /metrics`.
    pub metrics: Arc<Metrics>,
    /// Live sessions.
    pub sessions: Arc<SessionRegistry>,
    /// Session settings.
    pub session_config: SessionConfig,
    /// Actor counts (sessions and executors started here count themselves).
    pub counts: Arc<ActorCounts>,
    /// More fields for the status JSON (tool sets, remote servers), computed per request.
    pub extras: Option<StatusExtras>,
}

/// A provider of extra status fields (an object merged into the status JSON).
pub type StatusExtras = Arc<dyn Fn() -> serde_json::Value + Send + Sync>;

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").field("mode", &self.mode).finish_non_exhaustive()
    }
}

/// Registers the routes on an actix-web app. With sessions, `GET` and `DELETE` on `/mcp` and
/// the 2024-11-05 `GET /sse` + `POST /messages` are served too.
pub fn configure(cfg: &mut web::ServiceConfig, mode: TransportMode) {
    let mcp = web::resource("/mcp").route(web::post().to(mcp::post));
    let mcp = match mode {
        TransportMode::StreamableHttp => mcp
            .route(web::get().to(session::get))
            .route(web::delete().to(session::delete))
            .default_service(web::to(method_not_allowed_session)),
        TransportMode::Http => mcp.default_service(web::to(method_not_allowed)),
    };
    if mode == TransportMode::StreamableHttp {
        cfg.service(web::resource("/sse").route(web::get().to(session::legacy_sse)))
            .service(web::resource("/messages").route(web::post().to(session::legacy_messages)));
    }
    cfg.service(mcp)
        .service(
            web::resource("/metrics").route(web::get().to(metrics)).default_service(web::to(method_not_allowed_get)),
        )
        .service(
            web::resource(["/", "/status"])
                .route(web::get().to(status))
                .default_service(web::to(method_not_allowed_get)),
        )
        .default_service(web::to(not_found));
}

/// Checks Host, Origin and key, in that order. `None` means the request may proceed.
pub(crate) fn guard(req: &HttpRequest, state: &AppState) -> Option<HttpResponse> {
    let headers = req.headers();
    if state.check_host {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
        if !state.origins.host_allowed(host) {
            log::debug!("rejecting Host {host:?}");
            return Some(reply::plain_error(
                403,
                mcpd::jsonrpc::ErrorCode::INVALID_REQUEST,
                format!("Forbidden: Host {host:?} is not allowed"),
            ));
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !state.origins.origin_allowed(origin) {
            log::debug!("rejecting Origin {origin:?}");
            return Some(reply::plain_error(
                403,
                mcpd::jsonrpc::ErrorCode::INVALID_REQUEST,
                format!("Forbidden: Origin {origin:?} is not allowed"),
            ));
        }
    }
    let authorized = state.keys.authorizes(|name| headers.get(name).and_then(|v| v.to_str().ok()));
    if !authorized {
        let mut response = reply::plain_error(
            401,
            mcpd::jsonrpc::ErrorCode::UNAUTHORIZED,
            "Unauthorized: a valid API key is required".into(),
        );
        response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
        return Some(response);
    }
    None
}

async fn status(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Some(denied) = guard(&req, &state) {
        return denied;
    }
    let mut status = serde_json::to_value(state.status.snapshot()).unwrap_or_default();
    if let Some(object) = status.as_object_mut() {
        // The catalog changes at run time (the gateway): count what is exposed now.
        object.insert("tools".into(), serde_json::json!(state.server.catalog().tools().count()));
        if let Some(serde_json::Value::Object(more)) = state.extras.as_ref().map(|extras| extras()) {
            object.extend(more);
        }
    }
    HttpResponse::Ok().json(status)
}

async fn method_not_allowed(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Some(denied) = guard(&req, &state) {
        return denied;
    }
    let mut response = reply::plain_error(
        405,
        mcpd::jsonrpc::ErrorCode::INVALID_REQUEST,
        format!("Method {} is not allowed on /mcp; use POST", req.method()),
    );
    response.headers_mut().insert(header::ALLOW, header::HeaderValue::from_static("POST"));
    response
}

async fn metrics(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Some(denied) = guard(&req, &state) {
        return denied;
    }
    // Content negotiation as Prometheus servers do it: OpenMetrics when asked for, else 0.0.4.
    let accept = req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    if accept.contains("application/openmetrics-text") {
        HttpResponse::Ok()
            .content_type("application/openmetrics-text; version=1.0.0; charset=utf-8")
            .body(state.metrics.encode_openmetrics())
    } else {
        HttpResponse::Ok()
            .content_type("text/plain; version=0.0.4; charset=utf-8")
            .body(state.metrics.encode_prometheus())
    }
}

async fn method_not_allowed_session(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Some(denied) = guard(&req, &state) {
        return denied;
    }
    let mut response = reply::plain_error(
        405,
        mcpd::jsonrpc::ErrorCode::INVALID_REQUEST,
        format!("Method {} is not allowed on /mcp; use POST, GET or DELETE", req.method()),
    );
    response.headers_mut().insert(header::ALLOW, header::HeaderValue::from_static("POST, GET, DELETE"));
    response
}

async fn method_not_allowed_get(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Some(denied) = guard(&req, &state) {
        return denied;
    }
    let mut response = reply::plain_error(
        405,
        mcpd::jsonrpc::ErrorCode::INVALID_REQUEST,
        format!("Method {} is not allowed on {}; use GET", req.method(), req.path()),
    );
    response.headers_mut().insert(header::ALLOW, header::HeaderValue::from_static("GET"));
    response
}

async fn not_found(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Some(denied) = guard(&req, &state) {
        return denied;
    }
    reply::plain_error(
        404,
        mcpd::jsonrpc::ErrorCode::INVALID_REQUEST,
        format!("Not found: {}; the MCP endpoint is POST /mcp", req.path()),
    )
}
