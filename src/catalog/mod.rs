//! The catalog: tools, prompts, resources and resource templates with their async handlers.
//!
//! Handlers are plain async closures; nothing here depends on a runtime. A handler's `Err` is a
//! tool failure (reported to the client as `isError: true`), unless it is a
//! [`ToolError::Protocol`], which becomes a JSON-RPC error.
//!
//! Each file has one job, and this one only names them:
//! - `handler` — the handler traits, a tool's lane for plain calls, and [`ToolError`];
//! - `entries` — the registered entries and the [`Catalog`] that holds them by key;
//! - `complete` — the completer and the completion delegate a catalog carries;
//! - `lists` — the lists one page at a time, as a caller sees them;
//! - `live` — [`LiveCatalog`]: snapshots, change events and subscriber counts per URI.

mod complete;
mod entries;
mod handler;
mod lists;
mod live;

pub use crate::future::BoxFuture;
pub use complete::{CompleteFn, Completer, CompletionDelegate, DelegateFn};
pub use entries::{Catalog, PromptEntry, ResourceEntry, TemplateEntry, ToolEntry};
pub use handler::{
    ArgumentsHandler, LaneCall, LaneResult, PromptHandler, ResourceHandler, ToolError, ToolHandler, ToolLane,
    UriVariables,
};
pub(crate) use lists::{Keep, Page};
pub use live::{CatalogEvent, LiveCatalog, SubscriptionWatch};
