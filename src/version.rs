//! The five MCP revisions, their eras, and legacy version negotiation.

use std::fmt;

/// A protocol revision mcpd speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProtocolVersion {
    /// HTTP+SSE era; initialize handshake.
    V2024_11_05,
    /// Streamable HTTP, sessions, JSON-RPC batches.
    V2025_03_26,
    /// `MCP-Protocol-Version` header, structured content, elicitation; no batches.
    V2025_06_18,
    /// SSE priming and polling, URL elicitation, tasks.
    V2025_11_25,
    /// Stateless: no handshake, per-request `_meta`, `server/discover`, routing headers.
    V2026_07_28,
}

/// Whether a revision has a handshake and sessions, or is stateless.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// 2024-11-05 … 2025-11-25: `initialize`, optional sessions.
    Stateful,
    /// 2026-07-28: every request stands alone.
    Stateless,
}

impl ProtocolVersion {
    /// Every revision, newest first (the order `server/discover` advertises).
    pub const ALL: [ProtocolVersion; 5] = [
        ProtocolVersion::V2026_07_28,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2024_11_05,
    ];

    /// The handshake revisions, newest first.
    pub const LEGACY: [ProtocolVersion; 4] = [
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2024_11_05,
    ];

    /// The newest handshake revision: the answer to an `initialize` asking for one we lack.
    pub const LATEST_LEGACY: ProtocolVersion = ProtocolVersion::V2025_11_25;

    /// The stateless revision.
    pub const STATELESS: ProtocolVersion = ProtocolVersion::V2026_07_28;

    /// What a legacy HTTP request without `MCP-Protocol-Version` is assumed to speak.
    pub const HTTP_DEFAULT: ProtocolVersion = ProtocolVersion::V2025_03_26;

    /// The wire string.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2024_11_05 => "2024-11-05",
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
            ProtocolVersion::V2026_07_28 => "2026-07-28",
        }
    }

    /// Reads a wire string (exact match; values are case-sensitive).
    pub fn parse(s: &str) -> Option<ProtocolVersion> {
        ProtocolVersion::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// The era of this revision.
    pub const fn era(self) -> Era {
        match self {
            ProtocolVersion::V2026_07_28 => Era::Stateless,
            _ => Era::Stateful,
        }
    }

    /// JSON-RPC batches are part of 2025-03-26 only.
    pub const fn allows_batch(self) -> bool {
        matches!(self, ProtocolVersion::V2025_03_26)
    }

    /// The answer to `initialize`: the requested revision when it is a handshake revision we
    /// speak, else our newest handshake revision (the spec's rule: never an error).
    pub fn negotiate(requested: &str) -> ProtocolVersion {
        match ProtocolVersion::parse(requested) {
            Some(v) if v.era() == Era::Stateful => v,
            _ => ProtocolVersion::LATEST_LEGACY,
        }
    }

    /// The wire strings of every revision, newest first.
    pub fn all_strings() -> Vec<&'static str> {
        ProtocolVersion::ALL.iter().map(|v| v.as_str()).collect()
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_legacy_versions_and_falls_back_to_latest() {
        for v in ProtocolVersion::LEGACY {
            assert_eq!(ProtocolVersion::negotiate(v.as_str()), v);
        }
        assert_eq!(ProtocolVersion::negotiate("1999-01-01"), ProtocolVersion::V2025_11_25);
        assert_eq!(ProtocolVersion::negotiate("2026-07-28"), ProtocolVersion::V2025_11_25);
    }

    #[test]
    fn only_2025_03_26_allows_batches() {
        let allowed: Vec<_> = ProtocolVersion::ALL.into_iter().filter(|v| v.allows_batch()).collect();
        assert_eq!(allowed, vec![ProtocolVersion::V2025_03_26]);
    }
}
