//! The HTTP edge: the app, its routes, and the answers that are about HTTP itself.
//!
//! | route | methods | answer |
//! |---|---|---|
//! | `/mcp` | `POST` | JSON-RPC, every revision ([`mcp`]) |
//! | `/mcp` | `GET`, `DELETE` (with sessions) | the standalone stream, end a session ([`session`]) |
//! | `/mcp/<name>` | as `/mcp` | a virtual server: the same, through its view (`404` for a name that is none, or a caller it is not for) |
//! | `/sse`, `/messages` | `GET`, `POST` (with sessions) | the 2024-11-05 HTTP+SSE transport |
//! | `/`, `/status` | `GET` | the status JSON |
//! | `/metrics` | `GET` | Prometheus text |
//! | `/.well-known/oauth-protected-resource[/…]` | `GET` | RFC 9728 metadata (with OAuth; open to every caller) |
//! | anything else | | 404 |
//!
//! Other methods on a route are 405 with `Allow`. Every route, the 404 and the 405 included, is
//! behind one guard middleware ([`guard`]): a bad `Host` (loopback binds) or `Origin` is 403, a
//! missing or wrong key is 401; with OAuth, a missing or bad token is 401 and a missing scope 403,
//! each with its `WWW-Authenticate` challenge.
//!
//! Slow and stalled clients are bounded here too: open connections are capped and counted
//! ([`connections`]), request bodies have a deadline and stalled ones a cap of their own
//! ([`body`], [`slow_bodies`]), and every SSE response is a bounded queue ([`crate::queue`]).

mod body;
pub(crate) mod connections;
mod deadline;
mod guard;
mod mcp;
mod reply;
mod session;
mod session_start;
mod slow_bodies;
mod state;
mod stateless;
pub(crate) mod stream;
mod trace;

pub(crate) use slow_bodies::SlowBodies;
pub(crate) use state::AppState;
pub use state::StatusExtras;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::{web, App, HttpRequest, HttpResponse};
use mcpd::auth::challenge::METADATA_PATH;
use mcpd::jsonrpc::ErrorCode;

use crate::config::TransportMode;

/// The app of one HTTP worker: the routes of `state`'s transport mode, behind the guard.
pub(crate) fn app(
    state: web::Data<AppState>,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let mode = state.mode;
    // Outermost: a handler (or the guard) that panics is answered 500, nothing else fails.
    App::new()
        .app_data(state.clone())
        .wrap(guard::Guard(state))
        .wrap(crate::panics::Contain)
        .configure(|cfg| routes(cfg, mode))
}

/// Registers the routes. With sessions, `GET` and `DELETE` on `/mcp` and the 2024-11-05
/// `GET /sse` + `POST /messages` are served too.
fn routes(cfg: &mut web::ServiceConfig, mode: TransportMode) {
    const GET: &[&str] = &["GET"];
    let endpoint = |resource: actix_web::Resource| {
        let resource = resource.route(web::post().to(mcp::post));
        match mode {
            TransportMode::StreamableHttp => resource
                .route(web::get().to(session::get))
                .route(web::delete().to(session::delete))
                .default_service(not_allowed(&["POST", "GET", "DELETE"])),
            TransportMode::Http => resource.default_service(not_allowed(&["POST"])),
        }
    };
    let mcp = endpoint(web::resource("/mcp"));
    // A virtual server: found when the guard put its view in the request's access.
    let view = endpoint(web::resource("/mcp/{server}").guard(actix_web::guard::fn_guard(viewed)));
    if mode == TransportMode::StreamableHttp {
        cfg.service(web::resource("/sse").route(web::get().to(session::legacy_sse)))
            .service(web::resource("/messages").route(web::post().to(session::legacy_messages)));
    }
    // The operator routes: found by operators only (`guard::is_operator`), everyone else's 404
    // is that of any path that does not exist.
    let operator = || actix_web::guard::fn_guard(guard::is_operator);
    cfg.service(mcp)
        .service(view)
        .service(web::resource("/status/me").route(web::get().to(status_me)).default_service(not_allowed(GET)))
        .service(
            web::resource("/metrics").guard(operator()).route(web::get().to(metrics)).default_service(not_allowed(GET)),
        )
        .service(
            web::resource([METADATA_PATH, "/.well-known/oauth-protected-resource/{tail:.*}"])
                .route(web::get().to(resource_metadata))
                .default_service(not_allowed(GET)),
        )
        .service(
            web::resource(["/", "/status"])
                .guard(operator())
                .route(web::get().to(status))
                .default_service(not_allowed(GET)),
        )
        .default_service(web::to(not_found));
}

/// Whether the guard admitted the request to a virtual server's endpoint.
fn viewed(ctx: &actix_web::guard::GuardContext<'_>) -> bool {
    ctx.req_data().get::<std::sync::Arc<mcpd::auth::scopes::Access>>().is_some_and(|access| access.view.is_some())
}

async fn status(state: web::Data<AppState>) -> HttpResponse {
    let mut status = serde_json::to_value(state.status.snapshot()).unwrap_or_default();
    if let Some(object) = status.as_object_mut() {
        // The catalog changes at run time (the gateway): count what is exposed now.
        object.insert("tools".into(), serde_json::json!(state.server.catalog().tools().count()));
        if let Some(serde_json::Value::Object(more)) = state.extras.as_ref().map(|extras| extras()) {
            object.extend(more);
        }
        if let Some(auth) = &state.auth {
            object.insert("oauth".into(), auth.status());
        }
        if let Some(tasks) = &state.tasks {
            object.insert("tasks".into(), tasks.status());
        }
        if let Some(access) = &state.access {
            object.insert("access".into(), access.status_json());
        }
        if let Some(views) = &state.views {
            object.insert("virtualServers".into(), views.status_json());
        }
        object.insert("shares".into(), state.sessions.shares().status_json());
    }
    HttpResponse::Ok().json(status)
}

/// `GET /status/me`: what the caller is and holds — its identity, its access-file client (name,
/// patterns, limits, call counts: the slice of `/status` that is its own) and its shares held.
async fn status_me(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let caller = guard::caller_of(&req);
    HttpResponse::Ok().json(me(&caller, &state))
}

/// The body of `/status/me`.
fn me(caller: &guard::Caller, state: &AppState) -> serde_json::Value {
    let identity = caller.identity.as_ref().map_or(mcpd::server::ANONYMOUS_OWNER, |i| i.shown());
    let client = caller.access.as_ref().and_then(|access| access.client.as_ref());
    let client = match (client, &state.access) {
        (Some(client), Some(access)) => access.client_json(&client.name),
        _ => serde_json::Value::Null,
    };
    let held = state.sessions.shares().held_by(caller.identity.as_ref());
    serde_json::json!({ "identity": identity, "client": client, "held": held })
}

/// RFC 9728 protected-resource metadata (`404` when OAuth is off).
async fn resource_metadata(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    match &state.auth {
        Some(auth) => HttpResponse::Ok().json(auth.metadata()),
        None => not_found(req).await,
    }
}

async fn metrics(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
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

/// The 405 answer of a resource that allows only `allowed`: `Allow` lists them, the message
/// names them ("use POST, GET or DELETE").
fn not_allowed(allowed: &'static [&'static str]) -> actix_web::Route {
    web::to(move |req: HttpRequest| async move {
        let hint = match allowed.split_last() {
            Some((last, [])) => (*last).to_owned(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        };
        let mut response = reply::plain_error(
            405,
            ErrorCode::INVALID_REQUEST,
            format!("Method {} is not allowed on {}; use {hint}", req.method(), req.path()),
        );
        if let Ok(allow) = header::HeaderValue::from_str(&allowed.join(", ")) {
            response.headers_mut().insert(header::ALLOW, allow);
        }
        response
    })
}

async fn not_found(req: HttpRequest) -> HttpResponse {
    reply::not_found(req.path())
}
