//! The stdio transport: newline-delimited JSON-RPC on stdin/stdout. Only MCP messages are
//! written to stdout; logs go to stderr. Requests run concurrently through the connection's
//! `ToolExecutor`; `notifications/cancelled` cancels one. At end of input the in-flight
//! requests are finished and answered, then the transport returns.
//!
//! Bounded: lines are capped at `max_body_bytes`; at most `max_in_flight` requests run at once
//! (more are answered with an error at once, so a cancellation is still read); stdout is an
//! `Outbox` of `max_queued_messages` — answers wait for room, and while one waits no more input
//! is read; notifications the client does not read are dropped and counted (`queue`).

use std::sync::{Arc, Mutex, PoisonError};

use actix::{Actor, Addr};
use mcpd::catalog::CatalogEvent;
use mcpd::context::{LogLevel, Peer};
use mcpd::jsonrpc::{
    self, ClientCapabilities, ErrorCode, ErrorObject, Incoming, Message, Outgoing, Rejection, RequestId,
};
use mcpd::server::{encode_answer, encode_batch, set_level_param, stdio_era, Interest, Method, Scope, Subscription};
use mcpd::version::{Era, ProtocolVersion};
use mcpd::{McpServer, ProtocolError};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::task::JoinSet;

use crate::config::Limits;
use crate::counts::{ActorCounts, EdgeCounters};
use crate::queue::{Label, Outbox};
use crate::served::{Served, Serving};
use crate::telemetry::{Side, Transport};
use crate::tool_executor::{route_notification, run, StopToolExecutor, ToolExecutor};

/// Writes notifications for tools to stdout, through the single writer.
struct StdioPeer {
    out: Arc<Outbox>,
}

impl Peer for StdioPeer {
    fn notify(&self, method: &str, params: Value) {
        // Dropped (and counted) when the client does not read stdout; ignored when it is closed.
        self.out.notify(jsonrpc::outgoing_message(None, method, Some(&params)));
    }
}

/// What the handshake established for this connection.
struct Connection {
    version: Option<ProtocolVersion>,
    client_capabilities: Option<ClientCapabilities>,
    log_level: Option<LogLevel>,
    peer: Arc<dyn Peer>,
    interest: Arc<Mutex<Interest>>,
}

impl Connection {
    /// Where its messages are served (for their spans).
    fn served(&self) -> Served<'static> {
        Served { version: self.version, session: None, transport: Transport::Pipe }
    }

    fn scope(&self) -> Scope {
        Scope {
            version: self.version.unwrap_or(ProtocolVersion::HTTP_DEFAULT),
            // One connection, not an MCP session: handlers see no session id (so a declared
            // command gets no MCPD_SESSION_ID), as on the stateless wire.
            session_id: None,
            client_capabilities: self.client_capabilities.clone(),
            log_level: self.log_level,
            peer: Some(self.peer.clone()),
            catalog: None,
            // stdio has no HTTP authentication: whoever starts the process has every tool.
            access: None,
            caller: None,
        }
    }
}

/// What [`read_line`] read.
pub(crate) enum Line {
    /// The input ended.
    Eof,
    /// A line is in the buffer (without its newline).
    Complete,
    /// A line longer than the limit was skipped (nothing of it is kept).
    TooLong,
}

/// Reads one newline-terminated line into `buf`, keeping at most `limit` bytes of it: a longer
/// line is consumed and reported, never buffered whole.
pub(crate) async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    buf: &mut Vec<u8>,
    limit: usize,
) -> std::io::Result<Line> {
    buf.clear();
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if too_long {
                Line::TooLong
            } else if buf.is_empty() {
                Line::Eof
            } else {
                Line::Complete
            });
        }
        let (chunk, done) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        if !too_long && buf.len() + chunk.len() <= limit {
            buf.extend_from_slice(chunk);
        } else {
            too_long = true;
            buf.clear();
        }
        let consumed = done.unwrap_or(available.len());
        reader.consume(consumed);
        if done.is_some() {
            return Ok(if too_long { Line::TooLong } else { Line::Complete });
        }
    }
}

/// Tells the stdio client about the catalog changes it wants to hear of: list changes, and
/// updates of subscribed resources.
fn catalog_notifier(
    out: Arc<Outbox>,
    interest: Arc<Mutex<Interest>>,
) -> impl Fn(&CatalogEvent) + Send + Sync + 'static {
    move |event| {
        let announcement = interest.lock().unwrap_or_else(PoisonError::into_inner).announcement(event);
        if let Some((method, params)) = announcement {
            out.notify(jsonrpc::outgoing_message(None, method, params.map(Value::Object).as_ref()));
        }
    }
}

/// The answer to a line whose handling panicked (the panic is logged with its location).
fn internal_error() -> ErrorObject {
    ErrorObject::new(ErrorCode::INTERNAL_ERROR, "Internal error: the server failed on a bug (it is logged)")
}

fn error_line(id: Option<&RequestId>, error: &ErrorObject) -> Vec<u8> {
    Outgoing::Error { id, error }.to_vec()
}

/// Serves MCP over a byte stream pair until `input` ends.
///
/// # Errors
/// I/O errors reading `input`.
pub async fn serve<R, W>(
    server: Arc<McpServer>,
    limits: Limits,
    counts: Arc<ActorCounts>,
    input: R,
    mut output: W,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + 'static,
{
    let opened = std::time::Instant::now();
    let metrics = Arc::new(crate::metrics::Metrics::standalone(counts.clone()));
    let (out, mut out_rx) = Outbox::new(limits.max_queued_messages, Label::Stdout, metrics.edge().clone());
    let out = Arc::new(out);
    let writer = actix_rt::spawn(async move {
        while let Some(mut line) = out_rx.recv().await {
            line.push(b'\n');
            if let Err(e) = output.write_all(&line).await {
                log::error!("stdout closed: {e}");
                break;
            }
            if out_rx.is_empty() {
                let _ = output.flush().await;
            }
        }
        let _ = output.flush().await;
    });
    let edge = metrics.edge().clone();
    // Tasks over stdio (2026-07-28 messages that opt in): this serve's own runtime, unless the
    // server already has one (an embedder that also runs `Mcpd`). Stopped with the stream.
    let own_tasks = (server.options().tasks.enabled && !server.has_task_service()).then(|| {
        let tasks = crate::tasks::Tasks::start(server.options().tasks, counts.clone(), None);
        server.install_tasks(Arc::new(tasks.clone()));
        tasks
    });
    let executor = ToolExecutor::new(server.clone(), limits.tool_timeout, counts, metrics).over_pipe().start();
    let interest = Arc::new(Mutex::new(Interest::every_list()));
    let mut connection = Connection {
        version: None,
        client_capabilities: None,
        log_level: None,
        peer: Arc::new(StdioPeer { out: out.clone() }),
        interest: interest.clone(),
    };
    let listener = server.live_catalog().listen(catalog_notifier(out.clone(), interest));
    let mut tasks = JoinSet::new();
    let mut reader = BufReader::new(input);
    let mut buf = Vec::new();
    let result = loop {
        match read_line(&mut reader, &mut buf, limits.max_body_bytes).await {
            Err(e) => break Err(e),
            Ok(Line::Eof) => break Ok(()),
            Ok(Line::TooLong) => {
                let error = ErrorObject::new(
                    ErrorCode::INVALID_REQUEST,
                    format!("Message too large: the limit is {} bytes", limits.max_body_bytes),
                );
                let _ = out.send(error_line(None, &error)).await;
            }
            Ok(Line::Complete) => {
                let line = buf.strip_suffix(b"\r").unwrap_or(&buf);
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let stdio = Stdio { server: &server, executor: &executor, out: &out, edge: &edge, limits: &limits };
                let handled = crate::panics::catch(crate::panics::Site::Stdio, || {
                    handle_line(line, &stdio, &mut connection, &mut tasks)
                });
                let refusal = handled.unwrap_or_else(|_| Some(error_line(None, &internal_error())));
                if let Some(refusal) = refusal {
                    let _ = out.send(refusal).await;
                }
            }
        }
        while tasks.try_join_next().is_some() {}
    };
    while tasks.join_next().await.is_some() {}
    server.live_catalog().unlisten(listener);
    connection.interest.lock().unwrap_or_else(PoisonError::into_inner).release(server.live_catalog());
    executor.do_send(StopToolExecutor);
    if let Some(tasks) = own_tasks {
        tasks.stop();
    }
    // The connection is the session: it ends with the input.
    let version = connection.version.map(ProtocolVersion::as_str);
    let failure = result.is_err().then_some(mcpd::telemetry::semconv::Failure::Other);
    crate::telemetry::record_session_duration(
        Side::Server,
        version,
        Transport::Pipe,
        failure,
        opened.elapsed().as_secs_f64(),
    );
    drop(connection);
    drop(out);
    let _ = writer.await;
    result
}

/// What handling a line needs of the transport.
struct Stdio<'a> {
    server: &'a Arc<McpServer>,
    executor: &'a Addr<ToolExecutor>,
    out: &'a Arc<Outbox>,
    edge: &'a EdgeCounters,
    limits: &'a Limits,
}

/// Handles one line: answers run as tasks; a line answered at once (a parse error, a refused
/// batch, a request over the in-flight cap) is handed back for the caller to write.
fn handle_line(
    line: &[u8],
    stdio: &Stdio<'_>,
    connection: &mut Connection,
    tasks: &mut JoinSet<()>,
) -> Option<Vec<u8>> {
    let (server, executor, out) = (stdio.server, stdio.executor, stdio.out);
    match jsonrpc::parse(line) {
        Err(rejection) => Some(error_line(rejection.id.as_ref(), &rejection.error)),
        Ok(Incoming::Single(message)) => {
            if let Message::Request(request) = &message {
                if tasks.len() >= stdio.limits.max_in_flight {
                    EdgeCounters::bump(&stdio.edge.requests_over_limit);
                    let max = stdio.limits.max_in_flight;
                    let error = ErrorObject::new(
                        ErrorCode::INTERNAL_ERROR,
                        format!("Too many requests in flight: at most {max} run at once; retry when one has finished"),
                    );
                    return Some(error_line(Some(&request.id), &error));
                }
            }
            if let Some(answer) = handle_message(message, server, executor, connection) {
                let out = out.clone();
                tasks.spawn_local(async move {
                    if let Some(bytes) = answer.await {
                        let _ = out.send(bytes).await;
                    }
                });
            }
            None
        }
        Ok(Incoming::Batch(items)) => {
            let version = connection.version.unwrap_or(ProtocolVersion::HTTP_DEFAULT);
            if !version.allows_batch() {
                let error = ProtocolError::BatchNotAllowed(version.as_str()).to_error_object(Era::Stateful);
                return Some(error_line(None, &error));
            }
            let answers: Vec<_> = items
                .into_iter()
                .filter_map(|item| match item {
                    Err(Rejection { id, error }) => {
                        let bytes = error_line(id.as_ref(), &error);
                        Some(Box::pin(async move { Some(bytes) }) as AnswerFuture)
                    }
                    Ok(message) => handle_message(message, server, executor, connection),
                })
                .collect();
            let out = out.clone();
            tasks.spawn_local(async move {
                let parts: Vec<Vec<u8>> = futures_util::future::join_all(answers).await.into_iter().flatten().collect();
                if let Some(body) = encode_batch(&parts) {
                    let _ = out.send(body).await;
                }
            });
            None
        }
    }
}

type AnswerFuture = std::pin::Pin<Box<dyn std::future::Future<Output = Option<Vec<u8>>>>>;

/// Handles one message; returns the future of its answer line, if it gets one.
fn handle_message(
    message: Message,
    server: &Arc<McpServer>,
    executor: &Addr<ToolExecutor>,
    connection: &mut Connection,
) -> Option<AnswerFuture> {
    let request = match message {
        Message::Request(request) => request,
        Message::Notification(notification) => {
            crate::served::notification(&notification, connection.served(), None);
            route_notification(executor, &notification);
            return None;
        }
        Message::Response(_) => return None,
    };
    let id = request.id.clone();
    let ready = |era: Era, outcome: Result<Value, ProtocolError>| -> Option<AnswerFuture> {
        let bytes = encode_answer(&id, era, &outcome);
        Some(Box::pin(async move { Some(bytes) }))
    };
    if stdio_era(&request) == Era::Stateless {
        return match server.validate_stateless(&request, None) {
            Err(error) => {
                let served = Served { version: Some(ProtocolVersion::STATELESS), ..connection.served() };
                crate::served::refused(&request, served, &error);
                ready(Era::Stateless, Err(error))
            }
            Ok(valid) => {
                let scope = Scope { peer: Some(connection.peer.clone()), ..Scope::stateless(valid) };
                Some(answer(executor, request, scope))
            }
        };
    }
    let method = Method::parse(&request.method);
    // What the transport answers itself gets its span here; the rest, in the executor.
    let edge = || Serving::start(&request, connection.served());
    if let Some(change) = Subscription::requested(method, request.params.as_ref()) {
        let serving = edge();
        let outcome = change.map(|change| {
            let catalog = server.live_catalog();
            connection.interest.lock().unwrap_or_else(PoisonError::into_inner).apply_counted(change, catalog);
            json!({})
        });
        serving.finish_edge(method.wire_name().unwrap_or_default(), &outcome);
        return ready(Era::Stateful, outcome);
    }
    match method {
        Method::Initialize => {
            let serving = edge();
            let outcome = server.initialize(request.params.as_ref()).map(|handshake| {
                connection.version = Some(handshake.version);
                connection.client_capabilities = Some(handshake.client_capabilities);
                handshake.result
            });
            serving.finish_edge("initialize", &outcome);
            ready(Era::Stateful, outcome)
        }
        Method::SetLogLevel => {
            let serving = edge();
            let outcome = set_level_param(request.params.as_ref()).map(|level| {
                connection.log_level = Some(level);
                json!({})
            });
            serving.finish_edge("logging/setLevel", &outcome);
            ready(Era::Stateful, outcome)
        }
        _ => Some(answer(executor, request, connection.scope())),
    }
}

/// Runs a request on the executor; the future of its answer line (none when cancelled).
fn answer(executor: &Addr<ToolExecutor>, request: mcpd::jsonrpc::Request, scope: Scope) -> AnswerFuture {
    let id = request.id.clone();
    let era = scope.version.era();
    let answer = run(executor, request, scope);
    Box::pin(async move { answer.await.map(|outcome| encode_answer(&id, era, &outcome)) })
}
