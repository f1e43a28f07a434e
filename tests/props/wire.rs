//! The core driven the way the transports drive it, without actix: bytes (and HTTP headers) in,
//! the JSON-RPC answer out (or none). It makes the core calls `mcpd-actors` makes, in the same
//! order — `jsonrpc::parse`, `route_post`, `validate_stateless`, `initialize`, `execute`,
//! `encode_answer`, `encode_batch` — for the three ways a message arrives: an HTTP POST without
//! sessions (`http::mcp::post`), one with sessions (`http::session`), and a stdio connection
//! (`stdio::serve`); what the runtime adds around them (actors, streams, metrics) is left out. The catalog has a tool, prompt or resource for every path the
//! dispatch can take: plain results, tool failures, protocol errors, `x-mcp-header` parameters,
//! input requests (MRTR), pagination, templates and completion.
//!
//! Every handler here answers at once, so a served request must complete on its first poll: a
//! request that would wait is reported, not waited for.

use std::sync::{Arc, LazyLock};

use futures_util::FutureExt as _;
use mcpd::catalog::Catalog;
use mcpd::context::{LogLevel, Peer};
use mcpd::jsonrpc::{
    self, ClientCapabilities, ErrorObject, Incoming, Message, Outgoing, Rejection, Request, RequestId,
};
use mcpd::model::{
    CallToolResult, ContentBlock, GetPromptResult, Prompt, PromptArgument, PromptMessage, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, Tool,
};
use mcpd::mrtr::InputRequired;
use mcpd::server::{
    encode_answer, encode_batch, http_era, legacy_http_version, route_post, set_level_param, stdio_era, HttpHeaders,
    Interest, Method, Posted, Reply, Scope, SessionSupport, Subscription, TimeLimit,
};
use mcpd::version::{Era, ProtocolVersion};
use mcpd::{McpServer, ProtocolError, ServerOptions, ToolContext, ToolError};
use serde_json::{json, Map, Value};

/// The tool names the catalog has (generators pick from these to reach the handlers).
pub(crate) const TOOLS: [&str; 7] = ["echo", "time", "geo", "ask", "fail", "refuse", "shape"];
/// The prompt names.
pub(crate) const PROMPTS: [&str; 2] = ["greet", "plain"];
/// Resource URIs that resolve (a plain resource, an empty one, a template's instance).
pub(crate) const URIS: [&str; 4] = ["test://static", "test://empty", "test://items/42", "test://items/a/b"];

/// The server every property runs against.
pub(crate) fn server() -> &'static McpServer {
    static SERVER: LazyLock<McpServer> = LazyLock::new(new_server);
    &SERVER
}

fn new_server() -> McpServer {
    let mut catalog = Catalog::new();
    mcpd::builtin::register(&mut catalog);
    let geo = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "tenant": {"type": "object", "properties": {"id": {"type": "integer", "x-mcp-header": "Tenant"}}},
        "dry": {"type": "boolean", "x-mcp-header": "Dry"}
    }});
    catalog.add_tool(Tool::new("geo", "Header parameters", geo), |args: Map<String, Value>, _ctx| async move {
        Ok(CallToolResult::structured(Value::Object(args)))
    });
    catalog.add_tool(
        Tool::new("ask", "Asks for input", json!({"type": "object"})),
        |_args, ctx: ToolContext| async move {
            match ctx.input_response("name") {
                Some(answer) => Ok(CallToolResult::structured(json!({"answer": answer, "state": ctx.request_state()}))),
                None => Err(ToolError::InputRequired(
                    InputRequired::new().elicit("name", "Your name?", json!({"type": "object"})).state(json!({"r": 1})),
                )),
            }
        },
    );
    catalog.add_tool(Tool::new("fail", "Fails", json!({"type": "object"})), |_args, _ctx| async move {
        Err::<CallToolResult, _>(ToolError::failed("it failed"))
    });
    catalog.add_tool(Tool::new("refuse", "Protocol error", json!({"type": "object"})), |_args, _ctx| async move {
        Err::<CallToolResult, _>(ToolError::Protocol(ProtocolError::InvalidParams("refused".into())))
    });
    catalog.add_tool(Tool::new("shape", "Echoes its arguments", json!({"type": "object"})), |args, _ctx| async move {
        let mut result = CallToolResult::content(vec![ContentBlock::text("shaped")]);
        result.structured_content = Some(Value::Object(args));
        Ok(result)
    });
    let greet = Prompt::new("greet", "Greets", vec![PromptArgument::required("name", "Who")]);
    catalog.add_prompt(greet, |args: Map<String, Value>, _ctx| async move {
        let text = format!("Hello {}", args.get("name").cloned().unwrap_or_default());
        Ok(GetPromptResult { description: None, messages: vec![PromptMessage::user(ContentBlock::text(text))] })
    });
    catalog.add_prompt(Prompt::new("plain", "Plain", Vec::new()), |_args, _ctx| async move {
        Ok(GetPromptResult { description: Some("plain".into()), messages: Vec::new() })
    });
    catalog.add_resource(
        Resource::new("test://static", "static", "text/plain"),
        |uri: String, _vars, _ctx| async move {
            Ok(ReadResourceResult { contents: vec![ResourceContents::text(uri, "text/plain", "static")] })
        },
    );
    catalog.add_resource(Resource::new("test://empty", "empty", "text/plain"), |_uri, _vars, _ctx| async {
        Ok(ReadResourceResult::default())
    });
    let items = ResourceTemplate::new("test://items/{id}", "items", "application/json");
    catalog.add_template(items, |uri: String, vars: Vec<(String, String)>, _ctx| async move {
        Ok(ReadResourceResult {
            contents: vec![ResourceContents::text(uri, "application/json", json!(vars).to_string())],
        })
    });
    catalog.set_completer(|_reference, _argument, prefix| (0..150).map(|i| format!("{prefix}{i}")).collect());
    let options = ServerOptions { page_size: 2, state_key: Some(vec![7; 32]), ..ServerOptions::default() };
    McpServer::new(options, catalog)
}

/// The way back to the client of a session or a stdio connection: notifications are dropped,
/// and a request (an elicitation) is answered at once.
struct ImmediatePeer;

impl Peer for ImmediatePeer {
    fn notify(&self, _method: &str, _params: Value) {}

    fn request(&self, method: &str, _params: Value) -> mcpd::catalog::BoxFuture<Result<Value, ErrorObject>> {
        let answer = match method {
            "elicitation/create" => Ok(json!({"action": "accept", "content": {"name": "Ada"}})),
            _ => Err(ErrorObject::new(jsonrpc::ErrorCode::METHOD_NOT_FOUND, format!("{method}: not here"))),
        };
        Box::pin(async move { answer })
    }
}

/// Checks a stateless answer's result: every result on that wire says whether it is complete.
fn stateless_result(outcome: &Result<Reply, ProtocolError>) {
    if let Ok(reply) = outcome {
        let result = reply.clone().into_value().expect("a result is JSON");
        let kind = result.get("resultType").and_then(Value::as_str);
        assert!(matches!(kind, Some("complete" | "input_required")), "a stateless result without resultType: {result}");
    }
}

/// Runs a request through `McpServer::execute` without a time limit; a request whose future is
/// not ready at once is a failure of the property (every handler here answers at once).
fn execute(server: &McpServer, request: Request, scope: &Scope) -> Result<Reply, ProtocolError> {
    let limit = TimeLimit::new(std::time::Duration::from_secs(300), std::future::pending::<()>());
    let execution =
        server.execute(request, scope, limit).now_or_never().expect("no request waits: every handler answers at once");
    if let Some((tool, _outcome)) = execution.tool_outcome() {
        assert!(TOOLS.contains(&tool), "only catalog tools are labelled, got {tool:?}");
    }
    execution.outcome
}

fn rejection_bytes(rejection: &Rejection) -> Vec<u8> {
    Outgoing::Error { id: rejection.id.as_ref(), error: &rejection.error }.to_vec()
}

fn error_bytes(id: Option<&RequestId>, error: &ProtocolError, era: Era) -> Vec<u8> {
    Outgoing::Error { id, error: &error.to_error_object(era) }.to_vec()
}

/// The request headers of one HTTP POST (names lowercase).
#[derive(Debug, Clone, Default)]
pub(crate) struct HeaderSet(pub Vec<(String, String)>);

impl HeaderSet {
    fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// How an HTTP POST is answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HttpAnswer {
    /// A JSON-RPC answer (a response object, or a batch's array).
    Json(Vec<u8>),
    /// `subscriptions/listen`: a stream of notifications, no response object.
    Listen,
    /// `202 Accepted` (a notification or a response), or `400` for one without its session.
    Nothing,
}

/// `POST /mcp` (`http::mcp::post` after the body is read).
pub(crate) fn http_post(
    server: &McpServer,
    body: &[u8],
    headers: &HeaderSet,
    session_id: Option<&str>,
    sessions: SessionSupport,
) -> HttpAnswer {
    match post(server, body, headers, session_id, sessions) {
        Ok(Some(bytes)) => HttpAnswer::Json(bytes),
        Ok(None) => HttpAnswer::Nothing,
        Err(Listening) => HttpAnswer::Listen,
    }
}

/// A valid `subscriptions/listen`: answered with a stream.
struct Listening;

fn post(
    server: &McpServer,
    body: &[u8],
    headers: &HeaderSet,
    session_id: Option<&str>,
    sessions: SessionSupport,
) -> Result<Option<Vec<u8>>, Listening> {
    let lookup = |name: &str| headers.get(name);
    let http = HttpHeaders::new(&lookup);
    let incoming = match jsonrpc::parse(body) {
        Ok(incoming) => incoming,
        Err(rejection) => return Ok(Some(rejection_bytes(&rejection))),
    };
    let session_id = session_id.filter(|_| sessions == SessionSupport::Enabled);
    Ok(match route_post(incoming, &http.routing, session_id, sessions) {
        Posted::InSession(_, message) => {
            let mut session = Connection::session(headers_version(&http).unwrap_or(ProtocolVersion::LATEST_LEGACY));
            session.message(server, message, Transport::Session)
        }
        Posted::CreateSession(request) => Some(match server.initialize(request.params.as_ref()) {
            Ok(handshake) => jsonrpc::result_bytes(&request.id, &handshake.result),
            Err(error) => error_bytes(Some(&request.id), &error, Era::Stateful),
        }),
        Posted::MissingSession(request) => {
            let error = ProtocolError::InvalidRequest("missing Mcp-Session-Id header: send initialize first".into());
            Some(error_bytes(Some(&request.id), &error, Era::Stateful))
        }
        Posted::Stateless(request) => stateless_http(server, request, &http)?,
        Posted::Handshake(request) => {
            let outcome = answer_legacy(server, &request, &http);
            Some(encode_answer(&request.id, Era::Stateful, &outcome))
        }
        Posted::Unaddressed => {
            assert_eq!(
                sessions,
                SessionSupport::Enabled,
                "only an endpoint with sessions refuses unaddressed messages"
            );
            None
        }
        Posted::Accepted(_) => None,
        Posted::Batch(items) => http_batch(server, items, &http),
    })
}

fn headers_version(http: &HttpHeaders<'_>) -> Option<ProtocolVersion> {
    http.routing.protocol_version.and_then(|v| ProtocolVersion::parse(v.trim()))
}

/// `http::stateless::serve`.
fn stateless_http(server: &McpServer, request: Request, http: &HttpHeaders<'_>) -> Result<Option<Vec<u8>>, Listening> {
    let valid = match server.validate_stateless(&request, Some(http)) {
        Ok(valid) => valid,
        Err(error) => return Ok(Some(error_bytes(Some(&request.id), &error, Era::Stateless))),
    };
    if valid.method == Method::Listen {
        let interest = Interest::listen(request.params.as_ref());
        assert!(interest.honoured().is_object(), "a listen acknowledgement states an object");
        return Err(Listening);
    }
    let id = request.id.clone();
    let peer: Option<Arc<dyn Peer>> = valid.may_stream().then(|| Arc::new(ImmediatePeer) as Arc<dyn Peer>);
    let scope = Scope { peer, ..Scope::stateless(valid) };
    let outcome = execute(server, request, &scope);
    stateless_result(&outcome);
    Ok(Some(encode_answer(&id, Era::Stateless, &outcome)))
}

/// `http::mcp::answer_legacy`.
fn answer_legacy(server: &McpServer, request: &Request, http: &HttpHeaders<'_>) -> Result<Reply, ProtocolError> {
    if Method::parse(&request.method) == Method::Initialize {
        return server.initialize(request.params.as_ref()).map(|handshake| Reply::Value(handshake.result));
    }
    let version = legacy_http_version(http.routing.protocol_version)?;
    execute(server, request.clone(), &Scope::new(version))
}

/// `http::mcp::batch`.
fn http_batch(server: &McpServer, items: Vec<Result<Message, Rejection>>, http: &HttpHeaders<'_>) -> Option<Vec<u8>> {
    let version = match http.routing.protocol_version.map(str::trim) {
        None => ProtocolVersion::HTTP_DEFAULT,
        Some(v) => ProtocolVersion::parse(v).unwrap_or(ProtocolVersion::STATELESS),
    };
    if !version.allows_batch() {
        return Some(error_bytes(None, &ProtocolError::BatchNotAllowed(version.as_str()), Era::Stateful));
    }
    let answers: Vec<Vec<u8>> = items
        .into_iter()
        .filter_map(|item| match item {
            Err(rejection) => Some(rejection_bytes(&rejection)),
            Ok(Message::Request(request)) => {
                let outcome = if http_era(&request, None) == Era::Stateless {
                    Err(ProtocolError::BatchNotAllowed(ProtocolVersion::STATELESS.as_str()))
                } else {
                    answer_legacy(server, &request, http)
                };
                Some(encode_answer(&request.id, Era::Stateful, &outcome))
            }
            Ok(Message::Notification(_) | Message::Response(_)) => None,
        })
        .collect();
    encode_batch(&answers)
}

/// Which transport a [`Connection`] stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Stdio,
    Session,
}

/// What a stdio connection (or a streamable-HTTP session) agreed on, as `stdio::Connection`
/// keeps it.
#[derive(Debug)]
pub(crate) struct Connection {
    version: Option<ProtocolVersion>,
    client_capabilities: Option<ClientCapabilities>,
    log_level: Option<LogLevel>,
    interest: Interest,
}

impl Default for Connection {
    fn default() -> Self {
        Connection { version: None, client_capabilities: None, log_level: None, interest: Interest::every_list() }
    }
}

impl Connection {
    /// A streamable-HTTP session that negotiated `version` (and elicitation).
    fn session(version: ProtocolVersion) -> Self {
        let client_capabilities = Some(json!({"elicitation": {}}).into());
        Connection { version: Some(version), client_capabilities, ..Connection::default() }
    }

    fn scope(&self) -> Scope {
        Scope {
            version: self.version.unwrap_or(ProtocolVersion::HTTP_DEFAULT),
            session_id: Some(Arc::from("props")),
            client_capabilities: self.client_capabilities.clone(),
            log_level: self.log_level,
            peer: Some(Arc::new(ImmediatePeer)),
            catalog: None,
            access: None,
            caller: None,
        }
    }

    /// One line of a stdio connection (`stdio::handle_line`): its answer line, if any.
    pub(crate) fn stdio_line(&mut self, server: &McpServer, line: &[u8]) -> Option<Vec<u8>> {
        match jsonrpc::parse(line) {
            Err(rejection) => Some(rejection_bytes(&rejection)),
            Ok(Incoming::Single(message)) => self.message(server, message, Transport::Stdio),
            Ok(Incoming::Batch(items)) => {
                let version = self.version.unwrap_or(ProtocolVersion::HTTP_DEFAULT);
                if !version.allows_batch() {
                    return Some(error_bytes(None, &ProtocolError::BatchNotAllowed(version.as_str()), Era::Stateful));
                }
                let answers: Vec<Vec<u8>> = items
                    .into_iter()
                    .filter_map(|item| match item {
                        Err(rejection) => Some(rejection_bytes(&rejection)),
                        Ok(message) => self.message(server, message, Transport::Stdio),
                    })
                    .collect();
                encode_batch(&answers)
            }
        }
    }

    /// One message (`stdio::handle_message`; in a session `http::session::request_in_session`,
    /// which refuses a second `initialize`).
    fn message(&mut self, server: &McpServer, message: Message, transport: Transport) -> Option<Vec<u8>> {
        let request = match message {
            Message::Request(request) => request,
            Message::Notification(notification) => {
                // A cancellation names a request or nothing; either way it gets no answer.
                let _ = mcpd::server::cancelled_request(&notification);
                return None;
            }
            Message::Response(_) => return None,
        };
        let id = request.id.clone();
        if transport == Transport::Stdio && stdio_era(&request) == Era::Stateless {
            let outcome = server.validate_stateless(&request, None).and_then(|valid| {
                let scope = Scope { peer: Some(Arc::new(ImmediatePeer)), ..Scope::stateless(valid) };
                execute(server, request, &scope)
            });
            stateless_result(&outcome);
            return Some(encode_answer(&id, Era::Stateless, &outcome));
        }
        let method = Method::parse(&request.method);
        if let Some(change) = Subscription::requested(method, request.params.as_ref()) {
            let outcome = change.map(|change| {
                self.interest.apply(change);
                json!({})
            });
            return Some(encode_answer(&id, Era::Stateful, &outcome));
        }
        let outcome = match method {
            Method::Initialize if transport == Transport::Session => {
                Err(ProtocolError::InvalidRequest("this session is already initialized".into()))
            }
            Method::Initialize => server.initialize(request.params.as_ref()).map(|handshake| {
                self.version = Some(handshake.version);
                self.client_capabilities = Some(handshake.client_capabilities);
                Reply::Value(handshake.result)
            }),
            Method::SetLogLevel => set_level_param(request.params.as_ref()).map(|level| {
                self.log_level = Some(level);
                Reply::Value(json!({}))
            }),
            _ => {
                let scope = self.scope();
                let era = scope.version.era();
                return Some(encode_answer(&id, era, &execute(server, request, &scope)));
            }
        };
        Some(encode_answer(&id, Era::Stateful, &outcome))
    }
}
