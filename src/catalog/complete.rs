//! Completion (`completion/complete`): the synchronous [`Completer`] a catalog answers with, and
//! the asynchronous [`CompletionDelegate`] asked first for the references it owns.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::handler::ToolError;
use crate::future::BoxFuture;

/// Suggests values for `completion/complete`: given the `ref` object, the argument name and the
/// prefix typed so far, returns candidate values.
pub type CompleteFn = dyn Fn(&Map<String, Value>, &str, &str) -> Vec<String> + Send + Sync;

/// A completion function.
#[derive(Clone)]
pub struct Completer(pub(super) Arc<CompleteFn>);

impl Completer {
    /// Asks it for the values of `argument` starting with `prefix` (for a new completer that
    /// answers some references itself and hands the others to the one it replaces).
    pub fn complete(&self, reference: &Map<String, Value>, argument: &str, prefix: &str) -> Vec<String> {
        (self.0)(reference, argument, prefix)
    }
}

/// Answers `completion/complete` for the references it owns, asynchronously (the gateway's
/// federated prompts and templates, answered by their remote): given the request's params, `None`
/// when the reference is not its own (the catalog's [`Completer`] answers it), else the future
/// of the whole `completion/complete` result.
pub type DelegateFn =
    dyn Fn(&Map<String, Value>) -> Option<BoxFuture<Result<Map<String, Value>, ToolError>>> + Send + Sync;

/// A completion delegate (see [`DelegateFn`]).
#[derive(Clone)]
pub struct CompletionDelegate(pub(super) Arc<DelegateFn>);

impl CompletionDelegate {
    /// The future of the result, when the reference in `params` is the delegate's.
    pub fn complete(&self, params: &Map<String, Value>) -> Option<BoxFuture<Result<Map<String, Value>, ToolError>>> {
        (self.0)(params)
    }
}

impl fmt::Debug for CompletionDelegate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CompletionDelegate")
    }
}

impl fmt::Debug for Completer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Completer")
    }
}
