//! One negotiated connection to a remote MCP server: the HTTP plumbing behind a
//! `ClientConnection` actor. It lives on the actor's thread (awc's client is `!Send`), is shared
//! by the actor's concurrent calls through an `Rc`, and negotiates once (concurrent first calls
//! wait for the same negotiation).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use awc::http::header;
use bytes::Bytes;
use futures_util::future::{LocalBoxFuture, Shared};
use futures_util::{FutureExt as _, StreamExt as _};
use mcpd::client::negotiate::{self, AfterDiscover};
use mcpd::client::request::{add_stateless_meta, routing_headers};
use mcpd::client::sse::SseDecoder;
use mcpd::headers::HeaderParam;
use mcpd::jsonrpc::{self, Outgoing, RequestId};
use mcpd::model::Implementation;
use mcpd::version::ProtocolVersion;
use serde_json::{json, Map, Value};
use tokio::sync::oneshot;

use super::error::ClientError;
use super::handlers::ClientHandlers;
use super::stdio::{StdioChannel, StdioCommand};

/// How long connecting waits for the standalone GET stream's response headers.
const STANDALONE_WAIT: Duration = Duration::from_secs(2);
/// Largest response body or SSE event accepted from a server.
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;
/// How many times one request may reconnect its SSE stream (GET + `Last-Event-ID`).
const MAX_RECONNECTS: usize = 5;
/// How many MRTR rounds one request may take.
const MAX_INPUT_ROUNDS: usize = 8;
/// How long a stdio server may take to answer `server/discover` before it counts as an old one.
const STDIO_DISCOVER_TIMEOUT: Duration = Duration::from_secs(5);

/// What a link needs to know about its server.
#[derive(Debug, Clone)]
pub struct LinkConfig {
    /// The server's display name.
    pub name: String,
    /// The MCP endpoint.
    pub url: String,
    /// Use the 2024-11-05 HTTP+SSE transport.
    pub sse: bool,
    /// Headers sent on every request, verbatim.
    pub headers: Vec<(String, String)>,
    /// A pinned revision (none: negotiate).
    pub pin: Option<ProtocolVersion>,
    /// Connect and per-request time limit.
    pub timeout: Duration,
    /// Start this command and speak stdio to it instead of HTTP (`url` is then only a label).
    pub command: Option<StdioCommand>,
}

/// The wire a link negotiated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// 2026-07-28, no session.
    Stateless,
    /// Streamable HTTP with the initialize handshake (and maybe a session id).
    Session(ProtocolVersion),
    /// The 2024-11-05 HTTP+SSE transport.
    HttpSse(ProtocolVersion),
    /// A child process over stdio, at this revision (2026-07-28: stateless messages).
    Stdio(ProtocolVersion),
}

type Pending = Rc<RefCell<HashMap<RequestId, oneshot::Sender<Result<Value, ClientError>>>>>;

struct SseChannel {
    post_url: String,
    pending: Pending,
    reader: actix_rt::task::JoinHandle<()>,
}

type Connecting = Shared<LocalBoxFuture<'static, Result<Mode, ClientError>>>;
type CancelSignal = Shared<oneshot::Receiver<()>>;

/// A connection to one server.
pub(crate) struct Link {
    http: awc::Client,
    cfg: LinkConfig,
    handlers: ClientHandlers,
    client_info: Implementation,
    mode: Cell<Option<Mode>>,
    connecting: RefCell<Option<Connecting>>,
    next_id: Cell<i64>,
    session_id: RefCell<Option<String>>,
    sse: RefCell<Option<SseChannel>>,
    tool_params: RefCell<HashMap<String, Vec<HeaderParam>>>,
    closed: Cell<bool>,
    standalone: RefCell<Option<actix_rt::task::JoinHandle<()>>>,
    /// Session requests in flight, for a response that arrives on another stream than the
    /// request's own (the standalone GET stream, or a resumed one) — the first answer wins.
    strays: RefCell<HashMap<RequestId, oneshot::Sender<Value>>>,
    stdio: RefCell<Option<Rc<StdioChannel>>>,
    /// The `_meta` of every stateless request (version, client info, capabilities), built once.
    stateless_meta: Map<String, Value>,
}

/// A request body, serialized without copying its params.
struct RequestBody<'a> {
    id: &'a RequestId,
    method: &'a str,
    params: &'a Map<String, Value>,
}

impl serde::Serialize for RequestBody<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut body = serializer.serialize_struct("Request", 4)?;
        body.serialize_field("jsonrpc", jsonrpc::JSONRPC_VERSION)?;
        body.serialize_field("id", self.id)?;
        body.serialize_field("method", self.method)?;
        body.serialize_field("params", self.params)?;
        body.end()
    }
}

/// A stateless request body, serialized without copying its params.
struct StatelessBody<'a> {
    id: &'a RequestId,
    method: &'a str,
    params: &'a Map<String, Value>,
    meta: &'a Map<String, Value>,
    extra: &'a [(&'a str, &'a Value)],
}

impl serde::Serialize for StatelessBody<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut body = serializer.serialize_struct("Request", 4)?;
        body.serialize_field("jsonrpc", jsonrpc::JSONRPC_VERSION)?;
        body.serialize_field("id", self.id)?;
        body.serialize_field("method", self.method)?;
        body.serialize_field("params", &StatelessParams(self))?;
        body.end()
    }
}

struct StatelessParams<'a, 'b>(&'b StatelessBody<'a>);

impl serde::Serialize for StatelessParams<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let body = self.0;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in body.params.iter().filter(|(k, _)| k.as_str() != "_meta") {
            map.serialize_entry(key, value)?;
        }
        for (key, value) in body.extra {
            map.serialize_entry(key, value)?;
        }
        map.serialize_entry("_meta", body.meta)?;
        map.end()
    }
}

fn transport(e: impl std::fmt::Display) -> ClientError {
    ClientError::Transport(e.to_string())
}

/// An HTTP answer: status, session id header, and either a JSON body or an open SSE stream.
struct Answer {
    status: u16,
    session_id: Option<String>,
    body: AnswerBody,
}

enum AnswerBody {
    Json(Bytes),
    Events(awc::ClientResponse),
}

impl Link {
    pub(crate) fn new(cfg: LinkConfig, handlers: ClientHandlers, client_info: Implementation) -> Rc<Link> {
        // Headers every request carries are parsed once, as the client's defaults.
        // awc's own limit is only a backstop: the link's time limits decide, so that a silent
        // server is reported as a timeout (and, in a session, cancelled).
        let connector = match super::tls::client_config() {
            Some(tls) => awc::Connector::new().rustls_0_23(tls),
            None => awc::Connector::new(),
        };
        let mut builder = awc::Client::builder()
            .connector(connector)
            .timeout(cfg.timeout + Duration::from_secs(5))
            .disable_redirects()
            .add_default_header((header::ACCEPT, "application/json, text/event-stream"))
            .add_default_header((header::CONTENT_TYPE, "application/json"));
        for (name, value) in &cfg.headers {
            builder = builder.add_default_header((name.as_str(), value.as_str()));
        }
        let http = builder.finish();
        let mut stateless_meta = Map::new();
        add_stateless_meta(&mut stateless_meta, &client_info, &handlers.capabilities());
        let stateless_meta = match stateless_meta.remove("_meta") {
            Some(Value::Object(meta)) => meta,
            _ => Map::new(),
        };
        Rc::new(Link {
            http,
            cfg,
            handlers,
            client_info,
            mode: Cell::new(None),
            connecting: RefCell::new(None),
            next_id: Cell::new(1),
            session_id: RefCell::new(None),
            sse: RefCell::new(None),
            tool_params: RefCell::new(HashMap::new()),
            closed: Cell::new(false),
            standalone: RefCell::new(None),
            strays: RefCell::new(HashMap::new()),
            stdio: RefCell::new(None),
            stateless_meta,
        })
    }

    pub(crate) fn name(&self) -> &str {
        &self.cfg.name
    }

    pub(crate) fn mode(&self) -> Option<Mode> {
        self.mode.get()
    }

    fn stdio_channel(&self) -> Option<Rc<StdioChannel>> {
        self.stdio.borrow().clone()
    }

    /// Sends one request and reads its answer, over stdio when the link has a child, else by
    /// POST to the endpoint.
    async fn exchange(
        &self,
        id: &RequestId,
        body: Vec<u8>,
        headers: &[(String, String)],
    ) -> Result<Value, ClientError> {
        if let Some(channel) = self.stdio_channel() {
            return channel.request(id, body).await;
        }
        let answer = self.post(&self.cfg.url, body, headers).await?;
        if let Some(session) = &answer.session_id {
            if !matches!(self.mode.get(), Some(Mode::Stateless)) {
                *self.session_id.borrow_mut() = Some(session.clone());
            }
        }
        self.read_response(answer, id).await
    }

    fn start_stdio(self: &Rc<Self>, command: &StdioCommand) -> Result<(), ClientError> {
        let link = Rc::downgrade(self);
        let channel = StdioChannel::spawn(command, &self.cfg.name, MAX_RESPONSE_BYTES, move |message| {
            if let Some(link) = link.upgrade() {
                actix_rt::spawn(async move {
                    link.handle_message(message, None, 200).await;
                });
            }
        })?;
        *self.stdio.borrow_mut() = Some(Rc::new(channel));
        Ok(())
    }

    fn next_id(&self) -> RequestId {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        RequestId::Number(id)
    }

    // ---- HTTP ------------------------------------------------------------------------------

    async fn post(&self, url: &str, body: Vec<u8>, extra: &[(String, String)]) -> Result<Answer, ClientError> {
        let mut request = self.http.post(url);
        for (name, value) in extra {
            request = request.insert_header((name.as_str(), value.as_str()));
        }
        let response = request.send_body(body).await.map_err(transport)?;
        self.answer(response).await
    }

    async fn answer(&self, mut response: awc::ClientResponse) -> Result<Answer, ClientError> {
        let status = response.status().as_u16();
        let session_id = response
            .headers()
            .get(mcpd::headers::SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned);
        let is_sse = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.to_ascii_lowercase().contains("text/event-stream"));
        let body = if is_sse && (200..300).contains(&status) {
            AnswerBody::Events(response)
        } else {
            AnswerBody::Json(response.body().limit(MAX_RESPONSE_BYTES).await.map_err(transport)?)
        };
        Ok(Answer { status, session_id, body })
    }

    /// Reads the response to request `id` out of an answer (JSON, or SSE events on which the
    /// server may also send notifications and requests of its own).
    async fn read_response(&self, answer: Answer, id: &RequestId) -> Result<Value, ClientError> {
        let status = answer.status;
        match answer.body {
            AnswerBody::Json(bytes) => {
                if !(200..300).contains(&status) {
                    return Err(http_error(status, &bytes));
                }
                let message: Value = serde_json::from_slice(&bytes)
                    .map_err(|e| ClientError::Protocol(format!("the response is not JSON: {e}")))?;
                outcome_owned(message, id, status)
            }
            AnswerBody::Events(response) => self.read_events(response, id, status).await,
        }
    }

    async fn read_events(
        &self,
        mut response: awc::ClientResponse,
        id: &RequestId,
        status: u16,
    ) -> Result<Value, ClientError> {
        let mut decoder = SseDecoder::new(MAX_RESPONSE_BYTES);
        let mut last_event_id: Option<String> = None;
        let mut retry = Duration::from_millis(1000);
        let mut reconnects = 0;
        loop {
            let chunk = response.next().await;
            let ended = !matches!(chunk, Some(Ok(_)));
            let events = match chunk {
                Some(Ok(bytes)) => decoder.feed(&bytes).map_err(|e| ClientError::Protocol(e.to_string()))?,
                Some(Err(e)) => {
                    log::debug!("{}: SSE stream broke: {e}", self.cfg.name);
                    decoder.finish().into_iter().collect()
                }
                None => decoder.finish().into_iter().collect(),
            };
            for event in events {
                if let Some(event_id) = &event.id {
                    last_event_id = Some(event_id.clone());
                }
                if let Some(ms) = event.retry {
                    retry = Duration::from_millis(ms);
                }
                if event.data.trim().is_empty() || event.kind() != "message" {
                    continue;
                }
                let message: Value = match serde_json::from_str(&event.data) {
                    Ok(message) => message,
                    Err(e) => return Err(ClientError::Protocol(format!("an SSE event is not JSON: {e}"))),
                };
                if let Some(outcome) = self.handle_message(message, Some(id), status).await {
                    return outcome;
                }
            }
            if !ended {
                continue;
            }
            // The stream ended before the response: resume it where it stopped, after the
            // server's retry delay (2025-11-25 SSE polling), when the session allows it.
            let resumable = matches!(self.mode.get(), Some(Mode::Session(_))) && last_event_id.is_some();
            if !resumable || reconnects >= MAX_RECONNECTS {
                return Err(ClientError::Protocol(format!("MCP SSE stream ended without a response to request {id}.")));
            }
            reconnects += 1;
            actix_rt::time::sleep(retry).await;
            response = self.resume(last_event_id.as_deref().unwrap_or_default()).await?;
            decoder = SseDecoder::new(MAX_RESPONSE_BYTES);
        }
    }

    async fn resume(&self, last_event_id: &str) -> Result<awc::ClientResponse, ClientError> {
        let mut request = self.http.get(&self.cfg.url).insert_header((header::ACCEPT, "text/event-stream"));
        if let Some(session) = self.session_id.borrow().as_deref() {
            request = request.insert_header((mcpd::headers::SESSION_ID, session));
        }
        if let Some(Mode::Session(version)) = self.mode.get() {
            request = request.insert_header((mcpd::headers::PROTOCOL_VERSION, version.as_str()));
        }
        let response = request.insert_header(("Last-Event-ID", last_event_id)).send().await.map_err(transport)?;
        if !response.status().is_success() {
            return Err(ClientError::Protocol(format!(
                "resuming the SSE stream failed with HTTP {}",
                response.status()
            )));
        }
        Ok(response)
    }

    /// Handles one message from the server: answers its requests, skips its notifications,
    /// and returns the outcome when it is the response to `waiting_for`.
    async fn handle_message(
        &self,
        message: Value,
        waiting_for: Option<&RequestId>,
        status: u16,
    ) -> Option<Result<Value, ClientError>> {
        let method = message.get("method").and_then(Value::as_str).map(str::to_owned);
        match (method, message.get("id").and_then(RequestId::from_value)) {
            (Some(method), Some(request_id)) => {
                let params = message.get("params").cloned().unwrap_or_else(|| json!({}));
                let answer = self.handlers.answer(&method, params).await;
                let bytes = match &answer {
                    Ok(result) => Outgoing::Result { id: &request_id, result }.to_vec(),
                    Err(error) => Outgoing::Error { id: Some(&request_id), error }.to_vec(),
                };
                if let Err(e) = self.send_reply(bytes).await {
                    log::warn!("{}: could not answer {method}: {e}", self.cfg.name);
                }
                None
            }
            (Some(method), None) => {
                log::debug!("{}: notification {method}", self.cfg.name);
                if let Some(hook) = &self.handlers.notifications {
                    hook(&self.cfg.name, &method, message.get("params").unwrap_or(&Value::Null));
                }
                None
            }
            (None, id) => match (waiting_for, id) {
                (Some(waiting), Some(id)) if &id == waiting => Some(outcome_of(&message, waiting, status)),
                (Some(waiting), None) if message.get("error").is_some() => Some(outcome_of(&message, waiting, status)),
                (_, Some(id)) => {
                    // The response to another request in flight, on this stream.
                    if let Some(waiter) = self.strays.borrow_mut().remove(&id) {
                        let _ = waiter.send(message);
                    }
                    None
                }
                _ => None,
            },
        }
    }

    /// POSTs our answer to a server request (or a notification) back to the server.
    async fn send_reply(&self, bytes: Vec<u8>) -> Result<(), ClientError> {
        if let Some(channel) = self.stdio_channel() {
            return channel.send(bytes);
        }
        let url = self.sse.borrow().as_ref().map_or_else(|| self.cfg.url.clone(), |s| s.post_url.clone());
        let answer = self.post(&url, bytes, &self.session_headers()).await?;
        if (200..300).contains(&answer.status) {
            Ok(())
        } else {
            Err(ClientError::Protocol(format!("the server refused our message with HTTP {}", answer.status)))
        }
    }

    fn session_headers(&self) -> Vec<(String, String)> {
        let mut headers = Vec::new();
        match self.mode.get() {
            Some(Mode::Session(version) | Mode::HttpSse(version)) => {
                headers.push(("MCP-Protocol-Version".to_owned(), version.as_str().to_owned()));
            }
            Some(Mode::Stateless) => {
                headers.push(("MCP-Protocol-Version".to_owned(), ProtocolVersion::STATELESS.as_str().to_owned()))
            }
            // stdio carries no headers.
            Some(Mode::Stdio(_)) | None => {}
        }
        if let Some(session) = self.session_id.borrow().as_ref() {
            headers.push(("Mcp-Session-Id".to_owned(), session.clone()));
        }
        headers
    }

    // ---- negotiation -----------------------------------------------------------------------

    /// Negotiates once; concurrent callers share the same attempt. A failed attempt is
    /// forgotten, so the next call tries again.
    pub(crate) async fn connect(self: &Rc<Self>) -> Result<Mode, ClientError> {
        if self.closed.get() {
            return Err(ClientError::Closed);
        }
        if let Some(mode) = self.mode.get() {
            let child_gone = matches!(mode, Mode::Stdio(_)) && self.stdio_channel().is_none_or(|c| !c.alive());
            if !child_gone {
                return Ok(mode);
            }
            // The child exited: start it again and negotiate anew.
            log::info!("{}: restarting the server process", self.cfg.name);
            self.mode.set(None);
            self.stdio.borrow_mut().take();
        }
        let attempt = {
            let mut connecting = self.connecting.borrow_mut();
            match connecting.as_ref() {
                Some(attempt) => attempt.clone(),
                None => {
                    let link = self.clone();
                    let attempt: LocalBoxFuture<'static, Result<Mode, ClientError>> =
                        Box::pin(async move { link.negotiate().await });
                    let shared = attempt.shared();
                    *connecting = Some(shared.clone());
                    shared
                }
            }
        };
        let timeout = self.cfg.timeout;
        let outcome = match actix_rt::time::timeout(timeout, attempt).await {
            Ok(outcome) => outcome,
            Err(_) => Err(ClientError::Timeout(timeout.as_secs())),
        };
        self.connecting.borrow_mut().take();
        if let Ok(mode) = outcome {
            self.mode.set(Some(mode));
        }
        outcome
    }

    async fn negotiate(self: Rc<Self>) -> Result<Mode, ClientError> {
        if let Some(command) = self.cfg.command.clone() {
            return self.negotiate_stdio(&command).await;
        }
        let url = self.cfg.url.to_ascii_lowercase();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(ClientError::Config("MCP URL must use http:// or https://.".into()));
        }
        let pin = self.cfg.pin;
        if self.cfg.sse {
            if pin == Some(ProtocolVersion::STATELESS) {
                return Err(ClientError::Config("2026-07-28 requires Streamable HTTP.".into()));
            }
            self.open_sse().await?;
            return self.initialize(pin.unwrap_or(ProtocolVersion::LATEST_LEGACY), true).await;
        }
        let version = match pin {
            Some(version) if version != ProtocolVersion::STATELESS => version,
            _ => match self.discover().await? {
                Some(version) => version,
                None => return Ok(Mode::Stateless),
            },
        };
        self.initialize(version, false).await
    }

    /// Over stdio: `server/discover` (briefly: a server that ignores it is an old one), then the
    /// stateless wire or `initialize`.
    async fn negotiate_stdio(self: &Rc<Self>, command: &StdioCommand) -> Result<Mode, ClientError> {
        self.start_stdio(command)?;
        let pin = self.cfg.pin;
        let version = match pin {
            Some(version) if version != ProtocolVersion::STATELESS => version,
            _ => {
                let probe = actix_rt::time::timeout(STDIO_DISCOVER_TIMEOUT, self.discover()).await;
                match probe {
                    Ok(Ok(None)) => return Ok(Mode::Stdio(ProtocolVersion::STATELESS)),
                    Ok(Ok(Some(version))) => version,
                    Ok(Err(error)) => return Err(error),
                    Err(_) if pin.is_none() => ProtocolVersion::LATEST_LEGACY,
                    Err(_) => return Err(ClientError::Protocol("The server does not support 2026-07-28.".into())),
                }
            }
        };
        match self.initialize(version, false).await? {
            Mode::Session(version) => {
                let mode = Mode::Stdio(version);
                self.mode.set(Some(mode));
                Ok(mode)
            }
            other => Ok(other),
        }
    }

    /// `server/discover`: `None` means "speak 2026-07-28"; else the handshake revision to use.
    async fn discover(&self) -> Result<Option<ProtocolVersion>, ClientError> {
        let pinned_modern = self.cfg.pin == Some(ProtocolVersion::STATELESS);
        let mut retried = false;
        loop {
            let outcome = self.stateless_call("server/discover", &Map::new(), &[]).await;
            let decision = match &outcome {
                Ok(result) => negotiate::after_discover_result(result, pinned_modern),
                Err(ClientError::Rpc { code, data, http_status, .. }) => negotiate::after_discover_error(
                    jsonrpc::ErrorCode(*code),
                    data.as_ref(),
                    *http_status,
                    pinned_modern,
                    retried,
                ),
                Err(_) => return outcome.map(|_| None),
            };
            match decision {
                AfterDiscover::Stateless => return Ok(None),
                AfterDiscover::Initialize(version) => return Ok(Some(version)),
                AfterDiscover::RetryDiscover => retried = true,
                AfterDiscover::Fail(message) => {
                    return Err(match outcome {
                        Err(error @ ClientError::Rpc { .. }) => error,
                        _ => ClientError::Protocol(message),
                    })
                }
            }
        }
    }

    async fn initialize(self: &Rc<Self>, version: ProtocolVersion, over_sse: bool) -> Result<Mode, ClientError> {
        let params = json!({
            "protocolVersion": version.as_str(),
            "capabilities": self.handlers.capabilities(),
            "clientInfo": self.client_info,
        });
        let id = self.next_id();
        let body = jsonrpc::outgoing_message(Some(&id), "initialize", Some(&params));
        let headers = vec![("MCP-Protocol-Version".to_owned(), version.as_str().to_owned())];
        let result = if over_sse {
            self.sse_request(&id, body, &headers).await
        } else {
            self.exchange(&id, body, &headers).await
        };
        let result = match result {
            Err(ClientError::Rpc { code, http_status, .. })
                if !over_sse
                    && self.cfg.command.is_none()
                    && negotiate::initialize_error_means_http_sse(
                        jsonrpc::ErrorCode(code),
                        http_status,
                        self.cfg.pin.is_some(),
                    ) =>
            {
                // An old HTTP+SSE server: open its stream on the same URL and try once more.
                self.open_sse().await?;
                return Box::pin(self.initialize(version, true)).await;
            }
            other => other?,
        };
        let answered = result.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
        let negotiated = negotiate::check_negotiated(answered, self.cfg.pin).map_err(ClientError::Protocol)?;
        let mode = if over_sse { Mode::HttpSse(negotiated) } else { Mode::Session(negotiated) };
        self.mode.set(Some(mode));
        let initialized = jsonrpc::outgoing_message(None, "notifications/initialized", None);
        self.send_reply(initialized).await?;
        if !over_sse && self.cfg.command.is_none() && self.session_id.borrow().is_some() {
            // The stream is open (or refused) before the first request goes out, so the server
            // never mistakes it for the resumption of a request's stream; a server that holds
            // back its headers gets STANDALONE_WAIT, then requests go ahead anyway.
            let opened = self.open_standalone();
            let _ = actix_rt::time::timeout(STANDALONE_WAIT, opened).await;
        }
        Ok(mode)
    }

    /// Opens the session's standalone GET stream in the background, for messages the server
    /// sends outside any request (requests to the client, list changes). A server that answers
    /// 400/405 (or anything but an event stream) simply has none.
    fn open_standalone(self: &Rc<Self>) -> oneshot::Receiver<()> {
        let (opened_tx, opened) = oneshot::channel();
        let link = Rc::downgrade(self);
        let mut request = self.http.get(&self.cfg.url).timeout(Duration::from_secs(24 * 3600));
        request = request.insert_header((header::ACCEPT, "text/event-stream"));
        for (name, value) in &self.session_headers() {
            request = request.insert_header((name.as_str(), value.as_str()));
        }
        let name = self.cfg.name.clone();
        let task = actix_rt::spawn(async move {
            let sent = request.send().await;
            let _ = opened_tx.send(());
            let mut response = match sent {
                Ok(response) => response,
                Err(e) => return log::debug!("{name}: no standalone stream: {e}"),
            };
            let is_sse = response
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|c| c.contains("text/event-stream"));
            if !response.status().is_success() || !is_sse {
                return log::debug!("{name}: no standalone stream (HTTP {})", response.status());
            }
            let mut decoder = SseDecoder::new(MAX_RESPONSE_BYTES);
            while let Some(Ok(chunk)) = response.next().await {
                let Ok(events) = decoder.feed(&chunk) else { break };
                for event in events.into_iter().filter(|e| !e.data.trim().is_empty()) {
                    let (Ok(message), Some(link)) = (serde_json::from_str::<Value>(&event.data), link.upgrade()) else {
                        continue;
                    };
                    actix_rt::spawn(async move {
                        link.handle_message(message, None, 200).await;
                    });
                }
            }
            log::debug!("{name}: standalone stream ended");
        });
        *self.standalone.borrow_mut() = Some(task);
        opened
    }

    // ---- the 2024-11-05 HTTP+SSE transport ---------------------------------------------------

    async fn open_sse(self: &Rc<Self>) -> Result<(), ClientError> {
        let request = self.http.get(&self.cfg.url).insert_header((header::ACCEPT, "text/event-stream"));
        let mut response = request.send().await.map_err(transport)?;
        let is_sse = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.contains("text/event-stream"));
        if !response.status().is_success() || !is_sse {
            return Err(ClientError::Protocol(format!(
                "MCP server did not open an HTTP+SSE stream (HTTP {}).",
                response.status().as_u16()
            )));
        }
        let (endpoint_tx, endpoint_rx) = oneshot::channel::<String>();
        let pending: Pending = Rc::new(RefCell::new(HashMap::new()));
        let link = Rc::downgrade(self);
        let reader_pending = pending.clone();
        let name = self.cfg.name.clone();
        let reader = actix_rt::spawn(async move {
            let mut decoder = SseDecoder::new(MAX_RESPONSE_BYTES);
            let mut endpoint_tx = Some(endpoint_tx);
            while let Some(Ok(chunk)) = response.next().await {
                let Ok(events) = decoder.feed(&chunk) else { break };
                for event in events {
                    if event.kind() == "endpoint" {
                        if let Some(tx) = endpoint_tx.take() {
                            let _ = tx.send(event.data.trim().to_owned());
                        }
                        continue;
                    }
                    let Ok(message) = serde_json::from_str::<Value>(&event.data) else { continue };
                    let id = message.get("id").and_then(RequestId::from_value);
                    if message.get("method").is_none() {
                        if let Some(id) = id {
                            let waiter = reader_pending.borrow_mut().remove(&id);
                            if let Some(waiter) = waiter {
                                let _ = waiter.send(outcome_of(&message, &id, 200));
                            }
                        }
                        continue;
                    }
                    if let Some(link) = link.upgrade() {
                        actix_rt::spawn(async move {
                            link.handle_message(message, None, 200).await;
                        });
                    }
                }
            }
            log::debug!("{name}: HTTP+SSE stream ended");
            for (_, waiter) in reader_pending.borrow_mut().drain() {
                let _ = waiter.send(Err(ClientError::Protocol("the MCP SSE stream ended".into())));
            }
        });
        let endpoint = match actix_rt::time::timeout(self.cfg.timeout, endpoint_rx).await {
            Ok(Ok(endpoint)) => endpoint,
            Ok(Err(_)) => return Err(ClientError::Protocol("MCP SSE stream ended before its endpoint event.".into())),
            Err(_) => return Err(ClientError::Timeout(self.cfg.timeout.as_secs())),
        };
        let post_url = resolve_same_origin(&self.cfg.url, &endpoint)
            .ok_or_else(|| ClientError::Protocol("MCP SSE endpoint must use the configured server origin.".into()))?;
        *self.sse.borrow_mut() = Some(SseChannel { post_url, pending, reader });
        Ok(())
    }

    async fn sse_request(
        &self,
        id: &RequestId,
        body: Vec<u8>,
        headers: &[(String, String)],
    ) -> Result<Value, ClientError> {
        let (tx, rx) = oneshot::channel();
        let post_url = {
            let sse = self.sse.borrow();
            let channel = sse.as_ref().ok_or(ClientError::Closed)?;
            channel.pending.borrow_mut().insert(id.clone(), tx);
            channel.post_url.clone()
        };
        let answer = self.post(&post_url, body, headers).await?;
        if !(200..300).contains(&answer.status) {
            if let AnswerBody::Json(bytes) = &answer.body {
                return Err(http_error(answer.status, bytes));
            }
        }
        rx.await.map_err(|_| ClientError::Closed)?
    }

    // ---- requests ----------------------------------------------------------------------------

    /// A stateless 2026-07-28 request (also used by `server/discover`).
    async fn stateless_call(
        &self,
        method: &str,
        params: &Map<String, Value>,
        extra: &[(&str, &Value)],
    ) -> Result<Value, ClientError> {
        let tool_params = (method == "tools/call")
            .then(|| params.get("name").and_then(Value::as_str).and_then(|n| self.tool_params.borrow().get(n).cloned()))
            .flatten();
        let mut headers = routing_headers(method, params, tool_params.as_deref()).map_err(ClientError::Protocol)?;
        headers.push(("MCP-Protocol-Version".to_owned(), ProtocolVersion::STATELESS.as_str().to_owned()));
        let id = self.next_id();
        // The request's own `_meta` (rare) is merged with ours; otherwise ours is used as is.
        let merged;
        let meta = match params.get("_meta").and_then(Value::as_object) {
            Some(own) => {
                let mut own = own.clone();
                own.extend(self.stateless_meta.iter().map(|(k, v)| (k.clone(), v.clone())));
                merged = own;
                &merged
            }
            None => &self.stateless_meta,
        };
        let body = StatelessBody { id: &id, method, params, meta, extra };
        let body = serde_json::to_vec(&body).map_err(|e| ClientError::Protocol(e.to_string()))?;
        self.exchange(&id, body, &headers).await
    }

    /// Sends one request on the negotiated wire and returns its result. On the stateless wire,
    /// `input_required` results are completed with the client's handlers and retried (new id,
    /// the `requestState` byte for byte); in a session a timed-out request is cancelled with
    /// `notifications/cancelled`.
    pub(crate) async fn request(
        self: &Rc<Self>,
        method: &str,
        params: Map<String, Value>,
    ) -> Result<Value, ClientError> {
        self.request_cancellable(method, params, None).await
    }

    /// As [`Link::request`]; when `cancel` fires (or its sender is dropped: the caller went
    /// away) the request is abandoned — in a session with `notifications/cancelled`, on the
    /// stateless wire by closing its stream.
    pub(crate) async fn request_cancellable(
        self: &Rc<Self>,
        method: &str,
        params: Map<String, Value>,
        cancel: Option<oneshot::Receiver<()>>,
    ) -> Result<Value, ClientError> {
        let cancel = cancel.map(futures_util::FutureExt::shared);
        match self.request_once(method, &params, cancel.clone()).await {
            // The server forgot the session (restart, expiry): start a new one and try once more.
            // A 404 means the request was not processed, so repeating it is safe.
            Err(error) if session_gone(&error) && matches!(self.mode.get(), Some(Mode::Session(_))) => {
                log::info!("{}: session not found; initializing again", self.cfg.name);
                self.mode.set(None);
                self.session_id.borrow_mut().take();
                if let Some(task) = self.standalone.borrow_mut().take() {
                    task.abort();
                }
                self.request_once(method, &params, cancel).await
            }
            outcome => outcome,
        }
    }

    async fn request_once(
        self: &Rc<Self>,
        method: &str,
        params: &Map<String, Value>,
        cancel: Option<CancelSignal>,
    ) -> Result<Value, ClientError> {
        let cancelled = async move {
            match cancel {
                Some(signal) => {
                    let _ = signal.await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        let mode = self.connect().await?;
        let timeout = self.cfg.timeout;
        match mode {
            Mode::Stateless | Mode::Stdio(ProtocolVersion::V2026_07_28) => {
                let work = actix_rt::time::timeout(timeout, self.stateless_with_input(method, params));
                tokio::select! {
                    outcome = work => outcome.map_err(|_| ClientError::Timeout(timeout.as_secs()))?,
                    // Dropping the request closes its stream: cancellation on this wire.
                    () = cancelled => Err(ClientError::Cancelled),
                }
            }
            Mode::Session(_) | Mode::HttpSse(_) | Mode::Stdio(_) => {
                let id = self.next_id();
                let body = serde_json::to_vec(&RequestBody { id: &id, method, params }).unwrap_or_default();
                let headers = self.session_headers();
                let (_claim, stray) = StrayClaim::register(self, &id, matches!(mode, Mode::Session(_)));
                let work = async {
                    match (mode, stray) {
                        (Mode::HttpSse(_), _) => self.sse_request(&id, body, &headers).await,
                        (_, Some(answer)) => tokio::select! {
                            outcome = self.exchange(&id, body, &headers) => outcome,
                            Ok(message) = answer => outcome_owned(message, &id, 200),
                        },
                        (_, None) => self.exchange(&id, body, &headers).await,
                    }
                };
                let (reason, error) = tokio::select! {
                    outcome = actix_rt::time::timeout(timeout, work) => match outcome {
                        Ok(outcome) => return outcome,
                        Err(_) => ("timed out", ClientError::Timeout(timeout.as_secs())),
                    },
                    () = cancelled => ("cancelled by the caller", ClientError::Cancelled),
                };
                // Tell the server in the background: the caller gets its answer now.
                let cancel = json!({"requestId": id, "reason": reason});
                let link = self.clone();
                actix_rt::spawn(async move {
                    let message = jsonrpc::outgoing_message(None, "notifications/cancelled", Some(&cancel));
                    if let Err(e) = link.send_reply(message).await {
                        log::debug!("{}: could not send notifications/cancelled: {e}", link.cfg.name);
                    }
                });
                Err(error)
            }
        }
    }

    async fn stateless_with_input(&self, method: &str, params: &Map<String, Value>) -> Result<Value, ClientError> {
        let mut responses = Value::Null;
        let mut state: Option<Value> = None;
        for round in 0..MAX_INPUT_ROUNDS {
            let mut extra: Vec<(&str, &Value)> = Vec::new();
            if round > 0 {
                extra.push(("inputResponses", &responses));
            }
            if let Some(state) = &state {
                extra.push(("requestState", state));
            }
            let mut result = self.stateless_call(method, params, &extra).await?;
            if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
                return Ok(result);
            }
            let mut answers = Map::new();
            if let Some(requests) = result.get("inputRequests").and_then(Value::as_object) {
                for (key, request) in requests {
                    let input_method = request.get("method").and_then(Value::as_str).unwrap_or_default();
                    let input_params = request.get("params").cloned().unwrap_or_else(|| json!({}));
                    let answer = self.handlers.answer(input_method, input_params).await.map_err(|e| {
                        ClientError::Protocol(format!(
                            "cannot answer the server's {input_method} request: {}",
                            e.message
                        ))
                    })?;
                    answers.insert(key.clone(), answer);
                }
            }
            responses = Value::Object(answers);
            // Sent back byte for byte: a JSON string is re-serialized exactly as received.
            state = result.as_object_mut().and_then(|r| r.remove("requestState"));
        }
        Err(ClientError::Protocol(format!("{method} asked for input more than {MAX_INPUT_ROUNDS} times")))
    }

    /// Remembers the `x-mcp-header` parameters of listed tools (stateless calls need them).
    pub(crate) fn remember_tool_params(&self, params: HashMap<String, Vec<HeaderParam>>) {
        *self.tool_params.borrow_mut() = params;
    }

    /// Ends the connection: DELETE the session (briefly, best effort), stop the SSE reader.
    pub(crate) async fn close(&self) {
        self.closed.set(true);
        if let Some(channel) = self.stdio.borrow_mut().take() {
            channel.close();
        }
        if let Some(task) = self.standalone.borrow_mut().take() {
            task.abort();
        }
        let session = self.session_id.borrow_mut().take();
        if let (Some(Mode::Session(version)), Some(session)) = (self.mode.get(), session) {
            let request = self
                .http
                .delete(&self.cfg.url)
                .timeout(Duration::from_secs(2))
                .insert_header((mcpd::headers::SESSION_ID, session.as_str()))
                .insert_header((mcpd::headers::PROTOCOL_VERSION, version.as_str()));
            if let Err(e) = request.send().await {
                log::debug!("{}: DELETE of the session failed: {e}", self.cfg.name);
            }
        }
        if let Some(channel) = self.sse.borrow_mut().take() {
            channel.reader.abort();
            for (_, waiter) in channel.pending.borrow_mut().drain() {
                let _ = waiter.send(Err(ClientError::Closed));
            }
        }
    }
}

fn session_gone(error: &ClientError) -> bool {
    match error {
        ClientError::Rpc { http_status, .. } => *http_status == 404,
        ClientError::Transport(message) => message.starts_with("HTTP 404"),
        _ => false,
    }
}

/// The outcome of a response message to request `id` (for the stdio transport).
pub(crate) fn outcome(message: Value, id: &RequestId) -> Result<Value, ClientError> {
    outcome_owned(message, id, 200)
}

/// A session request's claim on a response arriving on another stream than its own; dropping
/// it (when the request ends either way) forgets the claim.
struct StrayClaim<'a> {
    link: &'a Link,
    id: RequestId,
}

impl<'a> StrayClaim<'a> {
    /// The claim and, when `enabled`, where such a response will arrive.
    fn register(link: &'a Link, id: &RequestId, enabled: bool) -> (StrayClaim<'a>, Option<oneshot::Receiver<Value>>) {
        let receiver = enabled.then(|| {
            let (tx, rx) = oneshot::channel();
            link.strays.borrow_mut().insert(id.clone(), tx);
            rx
        });
        (StrayClaim { link, id: id.clone() }, receiver)
    }
}

impl Drop for StrayClaim<'_> {
    fn drop(&mut self) {
        self.link.strays.borrow_mut().remove(&self.id);
    }
}

/// As [`outcome_of`], moving the result out instead of copying it.
fn outcome_owned(mut message: Value, id: &RequestId, status: u16) -> Result<Value, ClientError> {
    if message.get("error").is_none() && message.get("id").and_then(RequestId::from_value).as_ref() == Some(id) {
        if let Some(result) = message.as_object_mut().and_then(|m| m.remove("result")) {
            return Ok(result);
        }
    }
    outcome_of(&message, id, status)
}

/// The result or error of a response message.
fn outcome_of(message: &Value, id: &RequestId, status: u16) -> Result<Value, ClientError> {
    if let Some(error) = message.get("error") {
        return Err(ClientError::from_error_object(error, status));
    }
    let answered = message.get("id").and_then(RequestId::from_value);
    if answered.as_ref() != Some(id) {
        return Err(ClientError::Protocol(format!("MCP response id does not match request {id}.")));
    }
    message.get("result").cloned().ok_or_else(|| ClientError::Protocol("MCP response has no result.".into()))
}

fn http_error(status: u16, body: &[u8]) -> ClientError {
    match serde_json::from_slice::<Value>(body) {
        Ok(message) if message.get("error").is_some() => ClientError::from_error_object(&message["error"], status),
        _ => {
            let text = String::from_utf8_lossy(body);
            let text: String = text.chars().take(1000).collect();
            ClientError::Transport(format!("HTTP {status}: {text}"))
        }
    }
}

/// Resolves the `endpoint` event against the GET URL; `None` when it names another origin.
fn resolve_same_origin(base: &str, endpoint: &str) -> Option<String> {
    let origin_end = base.find("://").map(|i| i + 3)?;
    let authority_end = base[origin_end..].find('/').map_or(base.len(), |i| origin_end + i);
    let origin = &base[..authority_end];
    if endpoint.contains("://") {
        let end = endpoint.find("://").map(|i| i + 3)?;
        let end = endpoint[end..].find('/').map_or(endpoint.len(), |i| end + i);
        return endpoint[..end].eq_ignore_ascii_case(origin).then(|| endpoint.to_owned());
    }
    if endpoint.starts_with("//") {
        return None;
    }
    if endpoint.starts_with('/') {
        return Some(format!("{origin}{endpoint}"));
    }
    let dir_end = base.rfind('/').filter(|i| *i >= authority_end).map_or(base.len(), |i| i + 1);
    let dir = if dir_end > base.len() { base } else { &base[..dir_end] };
    let joiner = if dir.ends_with('/') { "" } else { "/" };
    Some(format!("{dir}{joiner}{endpoint}"))
}

#[cfg(test)]
mod tests {
    use super::resolve_same_origin;

    #[test]
    fn sse_endpoints_resolve_against_the_stream_url_and_keep_its_origin() {
        let base = "http://127.0.0.1:9/sse";
        assert_eq!(
            resolve_same_origin(base, "/messages?sessionId=a").as_deref(),
            Some("http://127.0.0.1:9/messages?sessionId=a")
        );
        assert_eq!(resolve_same_origin(base, "http://127.0.0.1:9/m").as_deref(), Some("http://127.0.0.1:9/m"));
        assert_eq!(resolve_same_origin(base, "http://evil.example:9/m"), None);
        assert_eq!(resolve_same_origin(base, "//evil.example/m"), None);
        assert_eq!(resolve_same_origin("http://h/a/sse", "messages").as_deref(), Some("http://h/a/messages"));
    }
}
