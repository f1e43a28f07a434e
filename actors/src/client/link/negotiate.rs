//! Connecting a link, once (concurrent first calls share the attempt, under the link's time
//! limit; a failed attempt is forgotten, so the next call tries again):
//!
//! - HTTP: `server/discover` unless a handshake revision is pinned — the stateless wire when
//!   the server offers 2026-07-28 — else `initialize`; an `initialize` refused the way old
//!   servers refuse it falls back to the 2024-11-05 HTTP+SSE transport on the same URL. A
//!   session with an id then opens its standalone GET stream before the first request goes out
//!   (waiting at most [`STANDALONE_WAIT`]).
//! - stdio: start the child, `server/discover` briefly (a server that ignores it is an old
//!   one), then the stateless wire or `initialize`. A child that exited is started again by
//!   the next call.
//!
//! The rules that pick a revision are the core's (`mcpd::client::negotiate`).

use std::rc::Rc;
use std::time::Duration;

use awc::http::header;
use futures_util::future::LocalBoxFuture;
use futures_util::{FutureExt as _, StreamExt as _};
use mcpd::client::config::StdioCommand;
use mcpd::client::negotiate::{self, AfterDiscover};
use mcpd::client::sse::SseDecoder;
use mcpd::jsonrpc;
use mcpd::version::ProtocolVersion;
use serde_json::{json, Map, Value};
use tokio::sync::oneshot;

use super::exchange::is_event_stream;
use super::headers;
use super::wire::{Carrier, SessionClock, SessionWire, Wire};
use super::{Link, Mode, MAX_RESPONSE_BYTES};
use crate::client::error::ClientError;
use crate::client::stdio::StdioChannel;
use crate::panics::{self, Site};
use crate::telemetry::Transport;

/// How long connecting waits for the standalone GET stream's response headers.
const STANDALONE_WAIT: Duration = Duration::from_secs(2);
/// How long a stdio server may take to answer `server/discover` before it counts as an old one.
const STDIO_DISCOVER_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the standalone stream may stay open (awc needs some limit; the session ends it).
const STANDALONE_LIFETIME: Duration = Duration::from_secs(24 * 3600);

impl Link {
    /// Negotiates once; concurrent callers share the same attempt. A failed attempt is
    /// forgotten, so the next call tries again.
    pub(crate) async fn connect(self: &Rc<Self>) -> Result<Mode, ClientError> {
        if self.closed.get() {
            return Err(ClientError::Closed);
        }
        if let Some(mode) = self.mode() {
            let child_gone = matches!(mode, Mode::Stdio(_)) && self.stdio_channel().is_none_or(|c| !c.alive());
            if !child_gone {
                return Ok(mode);
            }
            // The child exited: start it again and negotiate anew.
            log::info!("{}: restarting the server process", self.cfg.name);
            drop(self.replace_wire(Wire::Idle));
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
        outcome
    }

    /// Negotiates the wire and puts it in place.
    async fn negotiate(self: Rc<Self>) -> Result<Mode, ClientError> {
        if let Some(command) = self.cfg.command.clone() {
            return self.negotiate_stdio(&command).await;
        }
        let url = self.cfg.url.to_ascii_lowercase();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(ClientError::Config("MCP URL must use http:// or https://.".into()));
        }
        drop(self.replace_wire(Wire::Connecting(Carrier::Http { session: None })));
        let pin = self.cfg.pin;
        if self.cfg.sse {
            if pin == Some(ProtocolVersion::STATELESS) {
                return Err(ClientError::Config("2026-07-28 requires Streamable HTTP.".into()));
            }
            self.open_sse().await?;
            return self.initialize(pin.unwrap_or(ProtocolVersion::LATEST_LEGACY)).await;
        }
        let version = match pin {
            Some(version) if version != ProtocolVersion::STATELESS => version,
            _ => match self.discover().await? {
                Some(version) => version,
                None => return Ok(self.install_stateless()),
            },
        };
        self.initialize(version).await
    }

    /// Over stdio: `server/discover` (briefly: a server that ignores it is an old one), then the
    /// stateless wire or `initialize`.
    async fn negotiate_stdio(self: &Rc<Self>, command: &StdioCommand) -> Result<Mode, ClientError> {
        let channel = self.start_stdio(command)?;
        let pin = self.cfg.pin;
        let version = match pin {
            Some(version) if version != ProtocolVersion::STATELESS => version,
            _ => {
                let probe = actix_rt::time::timeout(STDIO_DISCOVER_TIMEOUT, self.discover()).await;
                match probe {
                    Ok(Ok(None)) => {
                        let clock = SessionClock::start(ProtocolVersion::STATELESS, Transport::Pipe);
                        drop(self.replace_wire(Wire::Stdio {
                            version: ProtocolVersion::STATELESS,
                            channel,
                            _clock: clock,
                        }));
                        return Ok(Mode::Stdio(ProtocolVersion::STATELESS));
                    }
                    Ok(Ok(Some(version))) => version,
                    Ok(Err(error)) => return Err(error),
                    Err(_) if pin.is_none() => ProtocolVersion::LATEST_LEGACY,
                    Err(_) => return Err(ClientError::Protocol("The server does not support 2026-07-28.".into())),
                }
            }
        };
        self.initialize(version).await
    }

    /// Starts the child and makes it the carrier to negotiate over.
    fn start_stdio(self: &Rc<Self>, command: &StdioCommand) -> Result<Rc<StdioChannel>, ClientError> {
        let link = Rc::downgrade(self);
        let channel = StdioChannel::spawn(command, &self.cfg.name, MAX_RESPONSE_BYTES, move |message| {
            if let Some(link) = link.upgrade() {
                panics::spawn(Site::Client, async move {
                    link.handle_message(message, None, 200).await;
                });
            }
        })?;
        let channel = Rc::new(channel);
        drop(self.replace_wire(Wire::Connecting(Carrier::Stdio(channel.clone()))));
        Ok(channel)
    }

    /// Puts the stateless HTTP wire in place.
    fn install_stateless(&self) -> Mode {
        drop(self.replace_wire(Wire::Stateless { tool_params: Default::default() }));
        Mode::Stateless
    }

    /// `server/discover`: `None` means "speak 2026-07-28"; else the handshake revision to use.
    async fn discover(&self) -> Result<Option<ProtocolVersion>, ClientError> {
        let pinned_modern = self.cfg.pin == Some(ProtocolVersion::STATELESS);
        let mut retried = false;
        loop {
            let outcome = self.stateless_call("server/discover", &Map::new(), &[], None).await;
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

    /// `initialize` over the carrier being negotiated, then `notifications/initialized`; puts
    /// the negotiated wire in place (and opens a session's standalone stream).
    async fn initialize(self: &Rc<Self>, version: ProtocolVersion) -> Result<Mode, ClientError> {
        let carrier = self.carrier().ok_or(ClientError::Closed)?;
        let params = json!({
            "protocolVersion": version.as_str(),
            "capabilities": self.handlers.capabilities(),
            "clientInfo": self.client_info,
        });
        let id = self.next_id();
        let op = self.client_op("initialize", None, &id);
        let mut params = params;
        if let (Some(trace), Some(params)) = (op.propagation(), params.as_object_mut()) {
            let mut meta = serde_json::Map::new();
            trace.write_into(&mut meta);
            params.insert("_meta".into(), Value::Object(meta));
        }
        let body = jsonrpc::outgoing_message(Some(&id), "initialize", Some(&params));
        let headers = vec![headers::version(version)];
        let result = match carrier {
            Carrier::Sse(_) => self.sse_request(&id, body, headers).await,
            Carrier::Http { .. } | Carrier::Stdio(_) => self.exchange(&id, body, headers).await,
        };
        op.finish("initialize", None, &result, false);
        let result = match result {
            Err(ClientError::Rpc { code, http_status, .. })
                if matches!(carrier, Carrier::Http { .. })
                    && negotiate::initialize_error_means_http_sse(
                        jsonrpc::ErrorCode(code),
                        http_status,
                        self.cfg.pin.is_some(),
                    ) =>
            {
                // An old HTTP+SSE server: open its stream on the same URL and try once more.
                self.open_sse().await?;
                return Box::pin(self.initialize(version)).await;
            }
            other => other?,
        };
        let answered = result.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
        let negotiated = negotiate::check_negotiated(answered, self.cfg.pin).map_err(ClientError::Protocol)?;
        // The carrier as the exchange left it (an HTTP answer may have named the session).
        let wire = match self.carrier().unwrap_or(carrier) {
            Carrier::Http { session } => Wire::Session(SessionWire::new(negotiated, session)),
            Carrier::Sse(channel) => {
                Wire::HttpSse { version: negotiated, channel, _clock: SessionClock::start(negotiated, Transport::Tcp) }
            }
            Carrier::Stdio(channel) => {
                Wire::Stdio { version: negotiated, channel, _clock: SessionClock::start(negotiated, Transport::Pipe) }
            }
        };
        let has_session = matches!(&wire, Wire::Session(SessionWire { id: Some(_), .. }));
        drop(self.replace_wire(wire));
        let mode = self.mode().ok_or(ClientError::Closed)?;
        let initialized = jsonrpc::outgoing_message(None, "notifications/initialized", None);
        self.send_reply(initialized).await?;
        if has_session {
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
    /// 400/405 (or anything but an event stream) simply has none. The receiver hears when the
    /// stream's response head arrived (or the request failed).
    fn open_standalone(self: &Rc<Self>) -> oneshot::Receiver<()> {
        let (opened_tx, opened) = oneshot::channel();
        let link = Rc::downgrade(self);
        let mut request = self.http.client().get(&self.cfg.url).timeout(STANDALONE_LIFETIME);
        request = request.insert_header((header::ACCEPT, "text/event-stream"));
        for header in self.wire_headers() {
            request = request.insert_header(header);
        }
        if let Some(bearer) = self.current_bearer() {
            request = request.insert_header((header::AUTHORIZATION, bearer));
        }
        let name = self.cfg.name.clone();
        let task = panics::spawn(Site::Client, async move {
            let sent = request.send().await;
            let _ = opened_tx.send(());
            let mut response = match sent {
                Ok(response) => response,
                Err(e) => return log::debug!("{name}: no standalone stream: {e}"),
            };
            if !response.status().is_success() || !is_event_stream(&response) {
                return log::debug!("{name}: no standalone stream (HTTP {})", response.status());
            }
            let mut decoder = SseDecoder::new(MAX_RESPONSE_BYTES);
            while let Some(Ok(chunk)) = response.next().await {
                let Ok(events) = decoder.feed(&chunk) else { break };
                for event in events.into_iter().filter(|e| !e.data.trim().is_empty()) {
                    let (Ok(message), Some(link)) = (serde_json::from_str::<Value>(&event.data), link.upgrade()) else {
                        continue;
                    };
                    panics::spawn(Site::Client, async move {
                        link.handle_message(message, None, 200).await;
                    });
                }
            }
            log::debug!("{name}: standalone stream ended");
        });
        match &mut *self.wire.borrow_mut() {
            Wire::Session(session) => session.standalone = Some(task),
            _ => task.abort(),
        }
        opened
    }
}
