//! The MCP client runtime: one `ClientConnection` actor per remote server, the handlers that
//! answer what servers ask, and the manager API over them. Everything a server sends is
//! untrusted: listings are bounded and judged entry by entry (`listing`, after the core's
//! `mcpd::client::list`), results of the wrong shape are protocol errors, and a panic in a
//! connection's handler fails only that request.

mod bound;
mod connection;
mod credentials;
mod error;
mod handlers;
mod link;
mod listing;
mod manager;
pub mod oauth;
mod record;
mod stdio;
mod task;
pub(crate) mod tls;
mod tool_call;

pub use connection::{
    CallToolCancellable, CancelTask, ClientConnection, GetTask, List, ListTools, Listable, SendRequest, StartToolCall,
    StopClientConnection,
};
pub use error::ClientError;
pub use handlers::{
    CallHandlers, ClientHandlers, Handler, HandlerFuture, NotificationHook, NotificationSink, RequestAnswerer, Root,
};
pub(crate) use link::ToolName;
pub use link::{LinkConfig, Mode, MAX_RESPONSE_BYTES};
pub use manager::ClientManager;
pub use record::ServerRecord;
pub(crate) use tool_call::Passed;
pub use tool_call::{CallResult, CallTool, RemoteCallOutcome};
