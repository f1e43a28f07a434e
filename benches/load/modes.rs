//! The four modes the load bench compares (bare, stateless, legacy, session), their targets, and
//! the request bodies and revisions they send.

pub(crate) const MODERN_VERSION: &str = "2026-07-28";
pub(crate) const LEGACY_VERSION: &str = "2025-11-25";
pub(crate) const STATELESS_BODY: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
pub(crate) const LEGACY_BODY: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}"#;
pub(crate) const INITIALIZE_BODY: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
pub(crate) const INITIALIZED_BODY: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Bare,
    Stateless,
    Legacy,
    Session,
}

pub(crate) const MODES: [Mode; 4] = [Mode::Bare, Mode::Stateless, Mode::Legacy, Mode::Session];

impl Mode {
    pub(crate) fn key(self) -> &'static str {
        match self {
            Mode::Bare => "bare",
            Mode::Stateless => "stateless",
            Mode::Legacy => "legacy",
            Mode::Session => "session",
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Mode::Bare => "bare actix-web JSON echo",
            Mode::Stateless => "stateless 2026-07-28",
            Mode::Legacy => "legacy session-less",
            Mode::Session => "streamable session",
        }
    }

    /// The least acceptable fraction of the bare handler's throughput, if there is a target.
    pub(crate) fn target(self) -> Option<f64> {
        match self {
            Mode::Stateless => Some(0.85),
            Mode::Session => Some(0.6),
            Mode::Bare | Mode::Legacy => None,
        }
    }
}
