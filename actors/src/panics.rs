//! Panic containment. A panic is a bug; it must cost one request (or one message, one line, one
//! background task) and nothing more — never the connection's other requests, the actor, the
//! worker or the process.
//!
//! - [`install`] sets the process's panic hook, once. Every panic is counted by the [`Site`]
//!   it happened in (`mcpd_panics_total{site}` in `/metrics`, from [`counts`]) and its message
//!   and location are noted for whoever catches it. Inside a site it is logged here, once, as one
//!   `error` line with its location; outside any site the hook installed before mcpd's reports
//!   it (so tests, and embedders' own panics, look as they would without mcpd).
//! - [`contain`] runs a future as a site: a panic while it is polled becomes `Err(Panic)` for
//!   that future alone. [`poll`] does it one poll at a time for a future pinned in place (the
//!   request execution path: no wrapper is moved around), [`catch`] for synchronous work, and
//!   [`spawn`] spawns a contained background task.
//! - `Contain` is the actix-web middleware around every route: a handler that panics is
//!   answered `500` with a JSON-RPC `-32603` error.
//!
//! The site is a thread-local cell, set only while contained work runs (one poll of a contained
//! future at a time), so a panic is attributed to the innermost site it ran in. Containing
//! costs no allocation: [`Contained`] is the future itself beside its site (pinned in place with
//! `pin-project-lite`), and a poll is a cell swap and a `catch_unwind` (a landing pad, free
//! unless something panics).

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;
use std::task::{Context, Poll};

use actix_web::dev::{forward_ready, Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::http::header;
use actix_web::{HttpResponse, ResponseError};
use derive_more::{Display, Error};
use futures_util::future::{ready, Either, Ready};

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

thread_local! {
    /// The site whose work runs on this thread now, if any.
    static SITE: Cell<Option<Site>> = const { Cell::new(None) };

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
            let site = SITE.try_with(Cell::get).ok().flatten();
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

/// Runs `work` with `site` as this thread's site, then puts the previous one back.
fn in_site<T>(site: Site, work: impl FnOnce() -> T) -> T {
    struct Restore(Option<Site>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = SITE.try_with(|current| current.set(self.0));
        }
    }
    let _restore = Restore(SITE.try_with(|current| current.replace(Some(site))).ok().flatten());
    work()
}

pin_project_lite::pin_project! {
    /// A future run as a [`Site`] ([`contain`]): its output, or the [`Panic`] that stopped it.
    #[derive(Debug)]
    #[must_use = "futures do nothing unless polled"]
    pub struct Contained<F> {
        #[pin]
        future: F,
        site: Site,
    }
}

impl<F: Future> Future for Contained<F> {
    type Output = Result<F::Output, Panic>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        poll(*this.site, this.future, cx)
    }
}

/// Runs `future` as `site`: its output, or the [`Panic`] that stopped it (logged and counted
/// by the hook).
pub fn contain<F: Future>(site: Site, future: F) -> Contained<F> {
    Contained { future, site }
}

/// Runs synchronous `work` as `site`: its value, or the [`Panic`] that stopped it.
///
/// # Errors
/// The panic.
pub fn catch<T>(site: Site, work: impl FnOnce() -> T) -> Result<T, Panic> {
    in_site(site, || std::panic::catch_unwind(AssertUnwindSafe(work))).map_err(caught)
}

/// Polls `future` once as `site`: what [`contain`] does, for a future pinned where it is. No
/// wrapper future is built around it, so a large future (a request's execution) is not moved
/// again on the hot path.
pub fn poll<F: Future>(site: Site, future: Pin<&mut F>, cx: &mut Context<'_>) -> Poll<Result<F::Output, Panic>> {
    match catch(site, || future.poll(cx)) {
        Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
        Ok(Poll::Pending) => Poll::Pending,
        Err(panic) => Poll::Ready(Err(panic)),
    }
}

/// Spawns `task` on the current actix system as `site`; a panic ends the task (logged and
/// counted by the hook), nothing else.
pub fn spawn(site: Site, task: impl Future<Output = ()> + 'static) -> actix_rt::task::JoinHandle<()> {
    actix_rt::spawn(async move {
        let _ = contain(site, task).await;
    })
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
    type Future = Either<ContainedAnswer<S::Future>, Ready<Answered<B>>>;

    forward_ready!(service);

    fn call(&self, req: ServiceRequest) -> Self::Future {
        match catch(Site::Http, || self.service.call(req)) {
            Ok(answer) => Either::Left(ContainedAnswer { answer: contain(Site::Http, answer) }),
            Err(panic) => Either::Right(ready(Err(HandlerPanicked(panic).into()))),
        }
    }
}

pin_project_lite::pin_project! {
    /// The answer of a contained handler: a panic becomes [`HandlerPanicked`].
    #[derive(Debug)]
    pub(crate) struct ContainedAnswer<F> {
        #[pin]
        answer: Contained<F>,
    }
}

impl<F, B> Future for ContainedAnswer<F>
where
    F: Future<Output = Answered<B>>,
{
    type Output = Answered<B>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().answer.poll(cx) {
            Poll::Ready(Ok(answer)) => Poll::Ready(answer),
            Poll::Ready(Err(panic)) => Poll::Ready(Err(HandlerPanicked(panic).into())),
            Poll::Pending => Poll::Pending,
        }
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
        let mut pinned = std::pin::pin!(async {
            actix_rt::task::yield_now().await;
            if before < u64::MAX {
                panic!("after a pending poll");
            }
        });
        let polled = std::future::poll_fn(|cx| poll(Site::Request, pinned.as_mut(), cx)).await;
        assert_eq!(polled.unwrap_err().message, "after a pending poll");
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
