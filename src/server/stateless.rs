//! Every check of the 2026-07-28 stateless wire, behind one call
//! ([`McpServer::validate_stateless`]): the request's `_meta`, its routing headers
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`), its revision, its method and the
//! `Mcp-Param-*` headers its tool declares — in the order the specification and the conformance
//! suite expect. A transport passes its headers (HTTP) or none (stdio) and cannot forget half.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::call_params::member;
use super::method::Method;
use super::McpServer;
use crate::catalog::Catalog;
use crate::context::LogLevel;
use crate::error::ProtocolError;
use crate::headers;
use crate::jsonrpc::{ClientCapabilities, Request};
use crate::model::meta_keys;
use crate::version::ProtocolVersion;

/// The routing headers of one HTTP request, already extracted by the transport (names are
/// case-insensitive on the wire; values are raw, not yet trimmed or decoded).
///
/// Transport-facing: public because the runtime (`mcpd-actors`, another crate) applies it; see
/// [the crate docs](crate#transport-facing-rules).
#[derive(Debug, Clone, Copy, Default)]
pub struct RoutingHeaders<'a> {
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<&'a str>,
    /// `Mcp-Method`.
    pub method: Option<&'a str>,
    /// `Mcp-Name`.
    pub name: Option<&'a str>,
}

/// A transport's header lookup: the value of the header with this lowercase name, when it is
/// present and text.
///
/// Transport-facing: public because the runtime (`mcpd-actors`, another crate) applies it; see
/// [the crate docs](crate#transport-facing-rules).
pub type HeaderLookup<'a> = dyn Fn(&str) -> Option<&'a str> + 'a;

/// The headers of one HTTP request as the core reads them: the routing headers (read once, the
/// transport routes on them too) and a lookup for the `Mcp-Param-*` headers a tool declares.
///
/// Transport-facing: public because the runtime (`mcpd-actors`, another crate) applies it; see
/// [the crate docs](crate#transport-facing-rules).
#[derive(Clone, Copy)]
pub struct HttpHeaders<'a> {
    /// The routing headers.
    pub routing: RoutingHeaders<'a>,
    lookup: &'a HeaderLookup<'a>,
}

impl std::fmt::Debug for HttpHeaders<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpHeaders").field("routing", &self.routing).finish_non_exhaustive()
    }
}

impl<'a> HttpHeaders<'a> {
    /// Reads the routing headers through `lookup` and keeps it for the rest.
    pub fn new(lookup: &'a HeaderLookup<'a>) -> Self {
        let routing = RoutingHeaders {
            protocol_version: lookup(headers::PROTOCOL_VERSION),
            method: lookup(headers::METHOD),
            name: lookup(headers::NAME),
        };
        HttpHeaders { routing, lookup }
    }

    /// The value of the header with this lowercase name.
    pub fn get(&self, name: &str) -> Option<&'a str> {
        (self.lookup)(name)
    }
}

/// What a valid stateless request declared about itself, and the catalog it was checked
/// against (it runs against the same one: see [`super::Scope::stateless`]).
#[derive(Debug, Clone)]
pub struct StatelessRequest {
    /// Its method.
    pub method: Method,
    /// Its declared client capabilities.
    pub client_capabilities: ClientCapabilities,
    /// The log level it asked for, if any.
    pub log_level: Option<LogLevel>,
    /// Whether its `_meta` carries a `progressToken`.
    pub wants_progress: bool,
    /// The catalog snapshot it was validated against.
    pub catalog: Arc<Catalog>,
}

impl StatelessRequest {
    /// Whether the answer may have to stream notifications before the result (the request asked
    /// for progress or logs); otherwise it is plain JSON and nothing is set up for streaming.
    pub fn may_stream(&self) -> bool {
        self.wants_progress || self.log_level.is_some()
    }
}

impl McpServer {
    /// Validates a stateless request. Order: required `_meta` keys (`-32602`); then, over HTTP,
    /// `MCP-Protocol-Version` vs `_meta`, `Mcp-Method` vs `method`, `Mcp-Name` vs `params.name`
    /// / `params.uri` (`-32020`); then the version itself (`-32022`); then the method (`-32601`);
    /// then, over HTTP, the `Mcp-Param-*` headers of a `tools/call` (`-32020`).
    ///
    /// # Errors
    /// The first failing check, as a [`ProtocolError`].
    pub fn validate_stateless(
        &self,
        request: &Request,
        headers: Option<&HttpHeaders<'_>>,
    ) -> Result<StatelessRequest, ProtocolError> {
        self.validate_stateless_for(request, headers, None)
    }

    /// [`McpServer::validate_stateless`] for a caller with `access`: the request is checked
    /// against (and will run on) the catalog as that caller has it ([`McpServer::catalog_for`]:
    /// a virtual server's tools under their names there).
    ///
    /// # Errors
    /// As [`McpServer::validate_stateless`].
    pub fn validate_stateless_for(
        &self,
        request: &Request,
        headers: Option<&HttpHeaders<'_>>,
        access: Option<&crate::auth::scopes::Access>,
    ) -> Result<StatelessRequest, ProtocolError> {
        let method = Method::parse(&request.method);
        let declared = validate(request, method, headers.map(|h| &h.routing))?;
        let catalog = self.catalog_for(access);
        if let Some(headers) = headers.filter(|_| method == Method::ToolsCall) {
            check_param_headers(request, &catalog, headers)?;
        }
        Ok(StatelessRequest {
            method,
            client_capabilities: declared.client_capabilities,
            log_level: declared.log_level,
            wants_progress: declared.wants_progress,
            catalog,
        })
    }
}

/// What a stateless request's `_meta` declared.
#[derive(Debug)]
struct Declared {
    client_capabilities: ClientCapabilities,
    log_level: Option<LogLevel>,
    wants_progress: bool,
}

fn validate(
    request: &Request,
    method: Method,
    routing: Option<&RoutingHeaders<'_>>,
) -> Result<Declared, ProtocolError> {
    let meta = request.meta().ok_or(ProtocolError::MissingMeta("_meta"))?;
    let version = meta
        .protocol_version()
        .and_then(Value::as_str)
        .ok_or(ProtocolError::MissingMeta(meta_keys::PROTOCOL_VERSION))?;
    // Shared with the request's context, not copied.
    let capabilities = match meta.client_capabilities() {
        Some(c) if c.is_object() => c.clone(),
        _ => return Err(ProtocolError::MissingMeta(meta_keys::CLIENT_CAPABILITIES)),
    };
    if let Some(routing) = routing {
        check_routing_headers(request, method, version, routing)?;
    }
    if ProtocolVersion::parse(version) != Some(ProtocolVersion::STATELESS) {
        return Err(ProtocolError::UnsupportedVersion { requested: version.to_owned() });
    }
    if !method.is_stateless() {
        return Err(ProtocolError::MethodNotFound { method: request.method.clone() });
    }
    let log_level = match meta.log_level() {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            Some(LogLevel::parse(s).ok_or_else(|| ProtocolError::InvalidParams(format!("unknown log level {s:?}")))?)
        }
        Some(other) => return Err(ProtocolError::InvalidParams(format!("log level must be a string, got {other}"))),
    };
    let wants_progress = meta.progress_token().is_some();
    Ok(Declared { client_capabilities: capabilities, log_level, wants_progress })
}

fn check_routing_headers(
    request: &Request,
    method: Method,
    version: &str,
    headers: &RoutingHeaders<'_>,
) -> Result<(), ProtocolError> {
    match headers.protocol_version.map(str::trim) {
        Some(h) if h == version => {}
        Some(h) => {
            return Err(ProtocolError::HeaderMismatch(format!(
                "MCP-Protocol-Version header {h:?} does not match _meta protocolVersion {version:?}"
            )))
        }
        None => return Err(ProtocolError::HeaderMismatch("missing MCP-Protocol-Version header".into())),
    }
    match headers.method.map(str::trim) {
        Some(m) if m == request.method => {}
        Some(m) => {
            return Err(ProtocolError::HeaderMismatch(format!(
                "Mcp-Method header {m:?} does not match method {:?}",
                request.method
            )))
        }
        None => return Err(ProtocolError::HeaderMismatch("missing Mcp-Method header".into())),
    }
    let Some(name_field) = method.name_param() else { return Ok(()) };
    let expected = request.params.as_ref().and_then(|p| member(p, name_field)).and_then(Value::as_str);
    let Some(raw) = headers.name else {
        return Err(ProtocolError::HeaderMismatch("missing Mcp-Name header".into()));
    };
    let decoded = headers::decode_value(raw).map_err(|e| ProtocolError::HeaderMismatch(format!("Mcp-Name: {e}")))?;
    if Some(&*decoded) != expected {
        return Err(ProtocolError::HeaderMismatch(format!(
            "Mcp-Name header {decoded:?} does not match params.{name_field}"
        )));
    }
    Ok(())
}

/// Checks the `Mcp-Param-*` headers of a stateless `tools/call` against its arguments: every
/// argument the tool's schema marks with `x-mcp-header` and the body carries (not null) must
/// come with its header, whose value (Base64 sentinel decoded) equals the argument. Unknown
/// tools and invalid annotations are left to the call itself.
fn check_param_headers(request: &Request, catalog: &Catalog, headers: &HttpHeaders<'_>) -> Result<(), ProtocolError> {
    let Some(params) = request.params.as_ref() else { return Ok(()) };
    let Some(name) = member(params, "name").and_then(Value::as_str) else { return Ok(()) };
    let Some(tool) = catalog.tool(name) else { return Ok(()) };
    let Ok(header_params) = tool.header_params.as_ref() else { return Ok(()) };
    if header_params.is_empty() {
        return Ok(());
    }
    let empty = Map::new();
    let arguments = params.get("arguments").and_then(Value::as_object).unwrap_or(&empty);
    for param in header_params {
        let Some(value) = headers::argument_at(arguments, &param.path) else { continue };
        let header_name = format!("{}{}", headers::PARAM_PREFIX, param.name.to_ascii_lowercase());
        let raw = headers.get(&header_name).ok_or_else(|| {
            ProtocolError::HeaderMismatch(format!(
                "missing Mcp-Param-{} header for argument {}",
                param.name,
                param.path.join(".")
            ))
        })?;
        let decoded = headers::decode_value(raw)
            .map_err(|e| ProtocolError::HeaderMismatch(format!("Mcp-Param-{}: {e}", param.name)))?;
        if !headers::param_matches(&decoded, value, param.kind) {
            return Err(ProtocolError::HeaderMismatch(format!(
                "Mcp-Param-{} header does not match argument {}",
                param.name,
                param.path.join(".")
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::RequestId;
    use crate::model::{CallToolResult, Tool};
    use serde_json::json;

    fn request(method: &str, params: Value) -> Request {
        Request::new(RequestId::Number(1), method, params.as_object().cloned())
    }

    fn meta(version: &str) -> Value {
        json!({"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {}})
    }

    fn headers<'a>(version: &'a str, method: &'a str, name: Option<&'a str>) -> RoutingHeaders<'a> {
        RoutingHeaders { protocol_version: Some(version), method: Some(method), name }
    }

    fn check(r: &Request, h: Option<&RoutingHeaders<'_>>) -> Result<Declared, ProtocolError> {
        validate(r, Method::parse(&r.method), h)
    }

    #[test]
    fn missing_meta_beats_header_checks() {
        let r = request("server/discover", json!({}));
        let h = headers("2026-07-28", "wrong", None);
        assert_eq!(check(&r, Some(&h)).unwrap_err(), ProtocolError::MissingMeta("_meta"));
        let r = request("server/discover", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}));
        assert!(matches!(check(&r, Some(&h)), Err(ProtocolError::MissingMeta(_))));
    }

    #[test]
    fn header_mismatch_beats_unsupported_version() {
        let r = request("server/discover", json!({"_meta": meta("v999.0.0")}));
        let err = check(&r, Some(&headers("2026-07-28", "server/discover", None))).unwrap_err();
        assert!(matches!(err, ProtocolError::HeaderMismatch(_)));
        let err = check(&r, Some(&headers("v999.0.0", "server/discover", None))).unwrap_err();
        assert_eq!(err, ProtocolError::UnsupportedVersion { requested: "v999.0.0".into() });
    }

    #[test]
    fn removed_methods_are_not_found_after_version_check() {
        let r = request("ping", json!({"_meta": meta("2026-07-28")}));
        let err = check(&r, Some(&headers("2026-07-28", "ping", None))).unwrap_err();
        assert!(matches!(err, ProtocolError::MethodNotFound { .. }));
    }

    #[test]
    fn mcp_name_is_decoded_and_compared() {
        let r = request("tools/call", json!({"name": "Hello, 世界", "_meta": meta("2026-07-28")}));
        let ok = headers("2026-07-28", "tools/call", Some("=?base64?SGVsbG8sIOS4lueVjA==?="));
        assert!(check(&r, Some(&ok)).is_ok());
        let bad = headers("2026-07-28", "tools/call", Some("other"));
        assert!(matches!(check(&r, Some(&bad)), Err(ProtocolError::HeaderMismatch(_))));
        let missing = headers("2026-07-28", "tools/call", None);
        assert!(matches!(check(&r, Some(&missing)), Err(ProtocolError::HeaderMismatch(_))));
        assert!(check(&r, None).is_ok(), "stdio has no headers to check");
    }

    #[test]
    fn progress_token_and_log_level_are_read_from_meta() {
        let mut with_both = meta("2026-07-28");
        with_both["progressToken"] = json!(5);
        with_both["io.modelcontextprotocol/logLevel"] = json!("info");
        let valid = check(&request("tools/list", json!({"_meta": with_both})), None).unwrap();
        assert!(valid.wants_progress);
        assert_eq!(valid.log_level, Some(LogLevel::Info));
        let plain = check(&request("tools/list", json!({"_meta": meta("2026-07-28")})), None).unwrap();
        assert!(!plain.wants_progress);
        assert_eq!(plain.log_level, None);
    }

    #[test]
    fn param_headers_are_checked_in_the_same_call_over_http_only() {
        let mut catalog = Catalog::new();
        let schema = json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}});
        catalog.add_tool(Tool::new("geo", "Geo", schema), |_a, _c| async { Ok(CallToolResult::text("ok")) });
        let server = McpServer::new(Default::default(), catalog);
        let r =
            request("tools/call", json!({"name": "geo", "arguments": {"region": "eu"}, "_meta": meta("2026-07-28")}));
        let lookup_with = |region: &'static str| {
            move |name: &str| match name {
                "mcp-protocol-version" => Some("2026-07-28"),
                "mcp-method" => Some("tools/call"),
                "mcp-name" => Some("geo"),
                "mcp-param-region" => Some(region),
                _ => None,
            }
        };
        let matching = lookup_with("eu");
        let valid = server.validate_stateless(&r, Some(&HttpHeaders::new(&matching))).expect("matching header");
        assert_eq!(valid.method, Method::ToolsCall);
        assert!(!valid.may_stream());
        let different = lookup_with("us");
        let err = server.validate_stateless(&r, Some(&HttpHeaders::new(&different))).unwrap_err();
        assert!(matches!(err, ProtocolError::HeaderMismatch(_)), "{err:?}");
        assert!(server.validate_stateless(&r, None).is_ok(), "stdio carries no headers");
    }
}
