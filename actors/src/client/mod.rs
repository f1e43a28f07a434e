//! The MCP client runtime: one `ClientConnection` actor per remote server, the handlers that
//! answer what servers ask, and the manager API over them.

mod connection;
mod error;
mod handlers;
mod link;
mod manager;
mod stdio;
mod tls;

pub use connection::{CallResult, CallTool, CallToolCancellable, ClientConnection, Invalidate, ListTools, SendRequest};
pub use error::ClientError;
pub use handlers::{ClientHandlers, Handler, HandlerFuture, NotificationHook, Root};
pub use link::{LinkConfig, Mode, MAX_RESPONSE_BYTES};
pub use manager::{ClientManager, ServerRecord};
