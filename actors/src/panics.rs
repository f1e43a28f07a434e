//! Panic containment. A panic is a bug; it must cost one request (or one message, one line, one
//! background task) and nothing more — never the connection's other requests, the actor, the
//! worker or the process.
//!
//! - [`install`] sets the process's panic hook, once. Every panic is counted by the [`Site`]
//!   it happened in (`mcpd_panics_total{site}` in `/metrics`, from [`counts`]) and its message
//!   and location are noted for whoever catches it. Inside a site it is logged here, once, as one
//!   `error` line with its location; outside any site the previous hook reports it as before
//!   (so tests, and embedders' own panics, look as they always did).
//! - [`contain`] runs a future as a site: a panic while it is polled becomes `Err(Panic)` for
//!   that future alone. [`catch`] does the same for synchronous work, and [`spawn`] spawns a
//!   contained background task.
//! - [`Contain`] is the actix-web middleware around every route: a handler that panics is
//!   answered `500` with a JSON-RPC `-32603` error.
//!
//! The site is a task-local value (`tokio::task_local!`), set only while the contained future
//! is polled, so a panic is attributed to the innermost site it ran in. Containing costs no
//! allocation: the wrapper futures are named types, and a task-local is a thread-local swap per
//! poll.

use std::any::Any;
use std::cell::RefCell;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

use actix_web::dev::{forward_ready, Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::http::header;
use actix_web::{HttpResponse, ResponseError};
use derive_more::{Display, Error};
use futures_util::future::{ready, CatchUnwind, Map, Ready};
use futures_util::FutureExt as _;
use tokio::task::futures::TaskLocalFuture;

/// Where a panic happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Site {
    /// An HTTP request handler (the whole route, guard included).
    Http,
    /// The execution of one request (its tools, prompts, resources, completions), on any wire.
    Request,
    /// The handling of one stdio line.
    Stdio,
    /// A `ClientConnection` message, or a task of its link (streams, a child's pipes).
    Client,
    /// The gateway: listing a remote's tools, calling one, its retries.
    Gateway,
}

impl Site {
    /// Every site, in the order of [`counts`].
    pub const ALL: [Site; 5] = [Site::Http, Site::Request, Site::Stdio, Site::Client, Site::Gateway];

    /// Its `site` label.
    pub const fn label(self) -> &'static str {
        match self {
            Site::Http => "http",
            Site::Request => "request",
            Site::Stdio => "stdio",
            Site::Client => "client",
            Site::Gateway => "gateway",
        }
    }
}

/// The label of panics outside any site.
pub const OUTSIDE: &str = "other";

/// Panics counted per site (the last slot: outside any site).
static COUNTS: [AtomicU64; Site::ALL.len() + 1] = [const { AtomicU64::new(0) }; Site::ALL.len() + 1];

tokio::task_local! {
    /// The site being polled on this thread, if any.
    static SITE: Site;
}

thread_local! {
    /// The last panic on this thread, as the hook saw it (message and location), for the site
    /// that catches it.
    static LAST: RefCell<Option<Panic>> = const { RefCell::new(None) };
}

/// A caught panic: what it said and where.
#[derive(Debug, Clone, PartialEq, Eq, Display, Error)]
#[display("panicked at {location}: {message}")]
pub struct Panic {
    /// The panic's message (`"panic"` when it carried no text).
    #[error(not(source))]
    pub message: String,
    /// `file:line:column`, or `an unknown location` when the hook was not installed.
    pub location: String,
}

/// Sets the process's panic hook (once; later calls do nothing). Called by everything in this
/// crate that contains panics, so an embedder need not call it.
pub fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let site = SITE.try_with(|site| *site).ok();
            let slot = site.map_or(Site::ALL.len(), |site| site as usize);
            if let Some(count) = COUNTS.get(slot) {
                count.fetch_add(1, Ordering::Relaxed);
            }
            let location = info.location().map_or_else(|| "an unknown location".to_owned(), ToString::to_string);
            let panic = Panic { message: message(info.payload()), location };
            match site {
                Some(site) if log::log_enabled!(log::Level::Error) => {
                    log::error!(
                        "a bug: panic in {} at {}: {} (contained)",
                        site.label(),
                        panic.location,
                        panic.message
                    );
                }
                _ => previous(info),
            }
            let _ = LAST.try_with(|last| last.try_borrow_mut().map(|mut last| *last = Some(panic)));
        }));
    });
}

/// Panics counted so far, by site label (the sites' in [`Site::ALL`] order, then [`OUTSIDE`]).
pub fn counts() -> [(&'static str, u64); Site::ALL.len() + 1] {
    let mut out = [(OUTSIDE, 0); Site::ALL.len() + 1];
    for (slot, (label, value)) in out.iter_mut().enumerate() {
        if let Some(site) = Site::ALL.get(slot) {
            *label = site.label();
        }
        *value = COUNTS.get(slot).map_or(0, |count| count.load(Ordering::Relaxed));
    }
    out
}

/// The text a panic payload carries.
fn message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "panic".to_owned()
    }
}

/// The caught panic: as the hook noted it on this thread, or from its payload alone.
fn caught(payload: Box<dyn Any + Send>) -> Panic {
    let said = message(&*payload);
    let noted = LAST.try_with(|last| last.try_borrow_mut().ok().and_then(|mut last| last.take())).ok().flatten();
    match noted {
        Some(panic) if panic.message == said => panic,
        _ => Panic { message: said, location: "an unknown location".into() },
    }
}

/// What a contained future yields.
type Outcome<T> = Result<T, Box<dyn Any + Send>>;

/// The future [`contain`] returns.
pub type Contained<F> = Map<
    TaskLocalFuture<Site, CatchUnwind<AssertUnwindSafe<F>>>,
    fn(Outcome<<F as Future>::Output>) -> Result<<F as Future>::Output, Panic>,
>;

/// Runs `future` as `site`: its output, or the [`Panic`] that stopped it (logged and counted
/// by the hook).
pub fn contain<F: Future>(site: Site, future: F) -> Contained<F> {
    fn judged<T>(outcome: Outcome<T>) -> Result<T, Panic> {
        outcome.map_err(caught)
    }
    SITE.scope(site, AssertUnwindSafe(future).catch_unwind()).map(judged::<F::Output> as fn(_) -> _)
}

/// Runs synchronous `work` as `site`: its value, or the [`Panic`] that stopped it.
///
/// # Errors
/// The panic.
pub fn catch<T>(site: Site, work: impl FnOnce() -> T) -> Result<T, Panic> {
    SITE.sync_scope(site, || std::panic::catch_unwind(AssertUnwindSafe(work))).map_err(caught)
}

/// Spawns `task` on the current actix system as `site`; a panic ends the task (logged and
/// counted by the hook), nothing else.
pub fn spawn(site: Site, task: impl Future<Output = ()> + 'static) -> actix_rt::task::JoinHandle<()> {
    actix_rt::spawn(contain(site, task).map(drop))
}

/// The actix-web middleware that contains every route's handler ([`Site::Http`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Contain;

impl<S, B> Transform<S, ServiceRequest> for Contain
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error>,
{
    type Response = ServiceResponse<B>;
    type Error = actix_web::Error;
    type Transform = ContainService<S>;
    type InitError = ();
    type Future = Ready<Result<ContainService<S>, ()>>;

    fn new_transform(&self, service: S) -> Self::Future {
        install();
        ready(Ok(ContainService { service }))
    }
}

/// [`Contain`] around the app's service.
#[derive(Debug)]
pub(crate) struct ContainService<S> {
    service: S,
}

type Answered<B> = Result<ServiceResponse<B>, actix_web::Error>;

impl<S, B> Service<ServiceRequest> for ContainService<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error>,
{
    type Response = ServiceResponse<B>;
    type Error = actix_web::Error;
    type Future = Map<Contained<S::Future>, fn(Result<Answered<B>, Panic>) -> Answered<B>>;

    forward_ready!(service);

    fn call(&self, req: ServiceRequest) -> Self::Future {
        fn answered<B>(outcome: Result<Answered<B>, Panic>) -> Answered<B> {
            outcome.unwrap_or_else(|panic| Err(HandlerPanicked(panic).into()))
        }
        contain(Site::Http, self.service.call(req)).map(answered::<B> as fn(_) -> _)
    }
}

/// A request handler panicked: `500`, JSON-RPC `-32603`; what and where is in the log only.
#[derive(Debug, Display, Error)]
#[display("{_0}")]
struct HandlerPanicked(#[error(not(source))] Panic);

/// The body of the answer to a request whose handler panicked.
const PANICKED_BODY: &str = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error: the server failed on a bug while handling this request (it is logged)"}}"#;

impl ResponseError for HandlerPanicked {
    fn status_code(&self) -> actix_web::http::StatusCode {
        actix_web::http::StatusCode::INTERNAL_SERVER_ERROR
    }

    fn error_response(&self) -> HttpResponse {
        HttpResponse::InternalServerError()
            .insert_header((header::CONTENT_TYPE, header::HeaderValue::from_static("application/json")))
            .body(PANICKED_BODY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix_rt::test]
    async fn a_panic_in_a_site_is_its_error_with_the_location_and_is_counted() {
        install();
        let before = counts()[1].1;
        let outcome = contain(Site::Request, async {
            if before < u64::MAX {
                panic!("boom {}", 7);
            }
            1
        })
        .await;
        let panic = outcome.unwrap_err();
        assert_eq!(panic.message, "boom 7");
        assert!(panic.location.contains("panics.rs:"), "{panic}");
        assert!(counts()[1].1 > before, "counted under request");
        assert_eq!(counts()[1].0, "request");
        assert_eq!(contain(Site::Client, async { 2 }).await, Ok(2));
        let sync = catch(Site::Stdio, || -> u8 { panic!("sync") }).unwrap_err();
        assert_eq!(sync.message, "sync");
        assert_eq!(catch(Site::Stdio, || 3), Ok(3));
    }

    #[actix_rt::test]
    async fn a_handler_that_panics_is_answered_500_and_the_app_goes_on() {
        use actix_web::{test, web, App};
        let app = test::init_service(
            App::new()
                .wrap(Contain)
                .route(
                    "/boom",
                    web::get().to(|| async {
                        if PANICKED_BODY.is_empty() {
                            return "never";
                        }
                        panic!("handler bug")
                    }),
                )
                .route("/ok", web::get().to(|| async { "fine" })),
        )
        .await;
        let before = counts()[0].1;
        let error = test::try_call_service(&app, test::TestRequest::get().uri("/boom").to_request()).await.unwrap_err();
        assert!(counts()[0].1 > before, "counted under http");
        let response = error.error_response();
        assert_eq!(response.status(), 500);
        let body = actix_web::body::to_bytes(response.into_body()).await.unwrap();
        assert_eq!(body, PANICKED_BODY.as_bytes());
        let fine = test::call_service(&app, test::TestRequest::get().uri("/ok").to_request()).await;
        assert_eq!(test::read_body(fine).await, "fine");
    }
}
