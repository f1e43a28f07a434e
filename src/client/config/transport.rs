//! The two HTTP transports a configured server can use, and how `type` / `transport` values
//! are read.

/// How the client reaches a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Transport {
    /// Streamable HTTP (one endpoint; JSON or SSE responses). The default.
    #[default]
    StreamableHttp,
    /// The 2024-11-05 HTTP+SSE transport (a GET stream plus an `endpoint` event for POSTs).
    Sse,
}

impl Transport {
    /// The internal name: `streamable_http` or `sse` (what a `transport` key is patched to).
    pub const fn as_str(self) -> &'static str {
        match self {
            Transport::StreamableHttp => "streamable_http",
            Transport::Sse => "sse",
        }
    }

    /// The desktop-host spelling: `streamableHttp` or `sse` (what a `type` key is patched to).
    pub const fn document_value(self) -> &'static str {
        match self {
            Transport::StreamableHttp => "streamableHttp",
            Transport::Sse => "sse",
        }
    }

    /// Reads a `type` / `transport` value. It is lowercased, `-` becomes `_` and white space is
    /// removed; then `sse` is [`Transport::Sse`], and an empty value, `http`, `streamablehttp`
    /// or `streamable_http` is [`Transport::StreamableHttp`]. Anything else (`stdio`, `ws`, …)
    /// is `None`.
    pub fn parse(value: &str) -> Option<Transport> {
        match normalize_transport(value).as_str() {
            "sse" => Some(Transport::Sse),
            "" | "http" | "streamablehttp" | "streamable_http" => Some(Transport::StreamableHttp),
            _ => None,
        }
    }
}

impl std::fmt::Display for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `type` / `transport` value lowercased, without white space, `-` turned into `_`.
pub(super) fn normalize_transport(value: &str) -> String {
    value.to_lowercase().chars().filter(|c| !c.is_whitespace()).map(|c| if c == '-' { '_' } else { c }).collect()
}
