//! The pure rules of the client's OAuth 2.1 flow (the MCP authorization specification): reading
//! `WWW-Authenticate` challenges, where metadata is looked for and what is accepted, the
//! metadata documents, scope selection, token endpoint authentication and the RFC 9207 `iss`
//! check. No I/O: `mcpd-actors` (`client::oauth`) runs the flow on these.

pub mod challenge;
pub mod discovery;
pub mod metadata;
pub mod rules;

pub use challenge::{bearer_challenge, Challenge};
pub use discovery::canonical_resource;
