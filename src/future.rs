//! The one boxed-future type of the core: what a handler, a peer or a task store hands back
//! when its answer comes later. It lives apart from its users (the catalog's handlers, the
//! context's [`crate::context::Peer`], the task store) so that none of them imports another for it.

use std::future::Future;
use std::pin::Pin;

/// A boxed future that can move between threads.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;
