//! The CLIENT span of each request a link writes on its wire ([`ClientOp`]), started where the
//! request is written so it carries that wire's `jsonrpc.request.id`, `mcp.protocol.version`
//! and `mcp.session.id`, with the server's address (`server.address`, `server.port`, as
//! configured: no DNS lookup). Its context replaces the caller's in the request's
//! `params._meta` and `traceparent` header, so a call through a gateway is one trace; its end
//! records `mcp.client.operation.duration`. Each MRTR round and each task poll is a request of
//! its own, so a span of its own.

use std::time::Instant;

use mcpd::jsonrpc::RequestId;
use mcpd::telemetry::semconv::{self, Failure};
use mcpd::version::ProtocolVersion;
use serde_json::{Map, Value};

use super::config::Mode;
use super::wire::Wire;
use super::Link;
use crate::client::error::ClientError;
use crate::telemetry::{self, Operation, OperationSpan, Peer, Propagation, Side, Transport};

/// The target a request's span is named after: the tool of `tools/call`, the prompt of
/// `prompts/get` (names the remote listed, or the caller chose: a client's request goes out as
/// asked).
pub(super) fn target_of<'p>(method: &str, params: &'p Map<String, Value>) -> Option<&'p str> {
    semconv::target_kind(method).and(params.get("name")).and_then(Value::as_str)
}

/// One request on the wire, traced.
pub(super) struct ClientOp {
    span: OperationSpan,
    started: Instant,
    version: Option<ProtocolVersion>,
    transport: Transport,
}

impl Link {
    /// The span of request `id` (`method`, of `target`) about to be written on the wire.
    pub(super) fn client_op(&self, method: &str, target: Option<&str>, id: &RequestId) -> ClientOp {
        let started = Instant::now();
        let version = self.mode().map(|mode| match mode {
            Mode::Stateless => ProtocolVersion::STATELESS,
            Mode::Session(version) | Mode::HttpSse(version) | Mode::Stdio(version) => version,
        });
        let transport = self.peer.transport;
        let span = if telemetry::enabled() {
            let session = match &*self.wire.borrow() {
                Wire::Session(session) => session.id.clone(),
                _ => None,
            };
            let op = Operation {
                method,
                target,
                target_listed: true,
                resource_uri: None,
                request_id: Some(id),
                protocol_version: version.map(ProtocolVersion::as_str),
                session_id: session.as_deref(),
                transport,
            };
            let peer = self.peer.address.as_ref().map(|(address, port)| Peer { address, port: *port });
            telemetry::client_span(&op, peer.as_ref())
        } else {
            OperationSpan::disabled()
        };
        ClientOp { span, started, version, transport }
    }
}

impl ClientOp {
    /// The context the request carries (`None`: telemetry off; the caller's own, if any, goes on).
    pub(super) fn propagation(&self) -> Option<Propagation> {
        self.span.trace_headers()
    }

    /// Ends the span with the request's outcome: `tool_error` is whether a `tools/call` result
    /// read elsewhere (a gateway's passed result) has `isError: true`.
    pub(super) fn finish(
        self,
        method: &str,
        target: Option<&str>,
        outcome: &Result<Value, ClientError>,
        tool_error: bool,
    ) {
        let failure = match outcome {
            Err(ClientError::Rpc { code, message, .. }) => {
                let failure = Failure::Code(i64::from(*code));
                self.span.fail(failure, message);
                Some(failure)
            }
            Err(error) => {
                self.span.fail(Failure::Other, &error.to_string());
                Some(Failure::Other)
            }
            Ok(result) if tool_error || result.get("isError") == Some(&Value::Bool(true)) => {
                self.span.fail(Failure::ToolError, "the tool reported an error");
                Some(Failure::ToolError)
            }
            Ok(_) => None,
        };
        let op = Operation {
            method,
            target,
            protocol_version: self.version.map(ProtocolVersion::as_str),
            transport: self.transport,
            ..Operation::default()
        };
        telemetry::record_operation_duration(Side::Client, &op, failure, self.started.elapsed().as_secs_f64());
        self.span.end();
    }
}
