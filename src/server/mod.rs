//! The pure part of serving: a request in, a result (already shaped for its era) or a
//! [`ProtocolError`](crate::ProtocolError) out. Transports decide the era and the scope; this module executes.
//!
//! | module | role |
//! |---|---|
//! | `method` | the [`Method`] enum: dispatch, the stateless method table, metrics labels |
//! | `route` | era selection and the HTTP endpoint's routing decision ([`route_post`]) |
//! | `stateless` | every check of the 2026-07-28 wire ([`McpServer::validate_stateless`]) |
//! | `meta` | the members of a request's `_meta` that era and validation read, in one pass |
//! | `scope` | what the transport established about a request ([`Scope`]) |
//! | `screen` | what a caller may see and use, applied to every method ([`Screen`]) |
//! | `execute` | dispatch, era shaping, the time limit ([`McpServer::execute`]) |
//! | `reply` | a request's result, a tool call's kept typed until it is written ([`Reply`]) |
//! | `operation` | `tools/call`, `prompts/get`, `resources/read`, `completion/complete` |
//! | `call_params` | the members of a call's params that serving reads, taken in one pass |
//! | `rounds` | multi round-trip requests (input from the client) |
//! | `list` | the `*/list` results and their cursors |
//! | `interest` | catalog changes a client hears about, and their notifications |
//! | `view` | virtual servers: a selection and renames of the catalog, served at their own endpoint ([`view::View`]) |
//! | `tasks` | which calls may become tasks, what the runtime runs, `tasks/*` ([`TaskService`]) |
//! | `options` | server settings and caching hints |
//! | `mcp_server` | [`McpServer`]: options, catalog, capabilities, keys, the task service |
//! | `log_level` | the level of `logging/setLevel` ([`set_level_param`]) |
//! | `panic` | the message of a handler's panic |

mod call_params;
mod execute;
mod interest;
mod list;
mod log_level;
mod mcp_server;
mod meta;
mod method;
mod operation;
mod options;
mod panic;
mod reply;
mod rounds;
mod route;
mod scope;
pub mod screen;
mod stateless;
mod tasks;
pub mod view;

pub use execute::{encode_answer, encode_batch, Execution, TimeLimit, ToolOutcome};
pub use interest::{Announcement, Interest, Subscription};
pub use log_level::set_level_param;
pub use mcp_server::{Handshake, McpServer};
pub use method::{cancelled_request, Method, CANCELLED};
pub use options::{CacheHint, CachePolicy, CacheScope, ServerOptions, TaskOptions, DEFAULT_PAGE_SIZE};
pub use reply::Reply;
pub use rounds::MAX_INPUT_ROUNDS;
pub use route::{http_era, legacy_http_version, route_post, stdio_era, Posted, SessionSupport};
pub use scope::Scope;
pub use screen::Screen;
pub use stateless::{HeaderLookup, HttpHeaders, RoutingHeaders, StatelessRequest};
pub use tasks::{Rerun, RunOutcome, TaskCall, TaskCallOutcome, TaskService, TaskStep, ANONYMOUS_OWNER};
