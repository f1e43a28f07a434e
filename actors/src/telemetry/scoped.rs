//! [`Scoped`]: a future polled with a span's context as the current one, so that what it starts
//! (a CLIENT span for a gateway's call, a command's span) is that span's child. Without a
//! context (telemetry off) it polls its future as it is: no thread-local is touched.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use opentelemetry::Context;

pin_project_lite::pin_project! {
    /// A future run with `cx` attached while it is polled.
    #[derive(Debug)]
    pub struct Scoped<F> {
        #[pin]
        inner: F,
        cx: Option<Context>,
    }
}

impl<F> Scoped<F> {
    /// `inner`, polled with `cx` current (when there is one).
    pub fn new(inner: F, cx: Option<Context>) -> Scoped<F> {
        Scoped { inner, cx }
    }
}

impl<F: Future> Future for Scoped<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, task: &mut TaskContext<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _current = this.cx.as_ref().map(|cx| cx.clone().attach());
        this.inner.poll(task)
    }
}
