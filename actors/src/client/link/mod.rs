//! One negotiated connection to a remote MCP server: what a `ClientConnection` actor talks
//! through. A [`Link`] lives on the actor's thread (awc's client is `!Send`), is shared by the
//! actor's concurrent calls through an `Rc`, and negotiates once (concurrent first calls wait
//! for the same negotiation).
//!
//! # Layout
//!
//! - `wire`: [`Wire`], the transport negotiated (or being negotiated), each variant
//!   owning the state only that wire has, and closing the link;
//! - `negotiate`: connecting — `server/discover`, `initialize`, the fallback to HTTP+SSE, the
//!   session's standalone GET stream, starting (and restarting) a stdio child;
//! - `request`: one request on the negotiated wire, with its time limit, cancellation and the
//!   one re-initialization after a `404` in a session;
//! - `input`: stateless 2026-07-28 requests, and completing their MRTR `input_required` rounds;
//! - `exchange`: one HTTP request and its answer (JSON, or SSE resumed with `Last-Event-ID`);
//! - `answer`: what a POST comes back as, from awc or from `plain`, a satellite's own HTTP/1.1
//!   client for a plain `http://` endpoint;
//! - `auth`: bearer tokens on requests and the answer to `401` / `403 insufficient_scope` (OAuth);
//! - `legacy_sse`: the 2024-11-05 HTTP+SSE transport;
//! - `inbound`: what the server sends besides the awaited response (its requests,
//!   notifications, and responses that arrive on another stream), and our replies;
//! - `headers`: the headers a request carries, typed;
//! - `body`: request bodies, written without copying their params (a stateless request's
//!   `_meta` serialized once);
//! - `outcome`: a response message as a result or a [`ClientError`](super::ClientError).

mod answer;
mod auth;
mod body;
mod exchange;
mod headers;
mod http;
mod inbound;
mod input;
mod legacy_sse;
mod negotiate;
mod outcome;
mod plain;
mod request;
mod share;
mod wire;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use mcpd::client::attribution::{attribute, Arrival};
use mcpd::client::config::StdioCommand;
use mcpd::client::list::ListLimits;
use mcpd::client::request::add_stateless_meta;
use mcpd::jsonrpc::RequestId;
use mcpd::model::{CallToolResult, Implementation};
use mcpd::tasks::TASKS_EXTENSION;
use mcpd::version::ProtocolVersion;
use serde_json::{Map, Value};

pub(crate) use headers::ToolName;
pub(crate) use input::{Forward, Forwarded};
pub(crate) use outcome::outcome;
pub(crate) use request::CancelSignal;
pub(crate) use share::LinkShare;

use super::handlers::{CallHandlers, ClientHandlers};
use body::StatelessMeta;
use negotiate::Connecting;
use wire::Wire;

/// Largest response body or SSE event accepted from a server.
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

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
    /// How far one listing (`tools/list` and the like, all pages) may go; the whole listing
    /// also has one deadline, `timeout`.
    pub list_limits: ListLimits,
    /// Answer `401` / `403 insufficient_scope` with OAuth (none: such answers are errors).
    pub oauth: Option<super::oauth::OAuthConfig>,
    /// How long a tool call waits for a task the server made of it (2026-07-28, the tasks
    /// extension): past it the task is cancelled (`tasks/cancel`) and the call fails. Each
    /// poll is a request of its own, under `timeout`.
    pub task_wait: Duration,
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

/// A connection to one server.
pub(crate) struct Link {
    /// This link's own HTTP client, with the configured headers as defaults.
    http: http::HttpClient,
    cfg: LinkConfig,
    /// How the client answers what the server asks of it.
    handlers: ClientHandlers,
    /// What `initialize` and stateless `_meta` say about us.
    client_info: Implementation,
    /// The `_meta` of every stateless request (version, client info, capabilities), serialized
    /// once.
    stateless_meta: StatelessMeta,
    /// The same with the tasks extension declared among the capabilities: the `_meta` of
    /// `tools/call` (the one request a server may answer with a task, which the connection
    /// then waits for) and of `tasks/*` (which need the declaration).
    task_meta: StatelessMeta,
    /// The id of the next request (ids are never reused on a link).
    next_id: Cell<i64>,
    /// The wire: negotiated, being negotiated, or not yet. Borrowed only briefly, never across
    /// an await.
    wire: RefCell<Wire>,
    /// The negotiation under way, shared by concurrent first calls.
    connecting: RefCell<Option<Connecting>>,
    /// Set by [`Link::close`]: no request starts after it.
    closed: Cell<bool>,
    /// OAuth (when configured, over HTTP): the bearer token and the authorization flow.
    auth: Option<Rc<super::oauth::authorizer::Authorizer>>,
    /// What this link publishes to its satellites (a primary) or reads from its primary (a
    /// satellite): see [`share`].
    share: Option<Arc<LinkShare>>,
    /// A satellite: a stateless link on another thread than its primary's, sending calls only.
    satellite: bool,
    /// A satellite's own HTTP/1.1 client for a plain `http://` endpoint.
    plain: Option<plain::PlainHttp>,
    /// The calls in flight with handlers of their own (empty for plain calls: nothing is
    /// registered for them).
    calls: RefCell<Vec<Rc<CallEntry>>>,
    /// Requests in flight on the link (for attributing what a shared stream carries).
    in_flight: Cell<usize>,
    /// The number of the next progress token.
    next_progress: Cell<u64>,
}

/// A call in flight with handlers of its own.
pub(crate) struct CallEntry {
    pub(crate) handlers: CallHandlers,
    /// The progress token sent with it, when it wants progress.
    pub(crate) token: Option<String>,
    /// Its current request (a call that takes several rounds has one per round).
    request: RefCell<Option<RequestId>>,
    /// A gateway's call (`Some`): the usual answer to its stateless `tools/call`, read straight
    /// into the result the gateway passes on ([`outcome::passed_result`]).
    passed: Option<RefCell<Option<CallToolResult>>>,
}

impl CallEntry {
    /// Notes the request now carrying the call.
    pub(crate) fn carried_by(&self, id: &RequestId) {
        *self.request.borrow_mut() = Some(id.clone());
    }

    /// Whether the call's usual answer is read into the result a gateway passes on.
    fn passes(&self) -> bool {
        self.passed.is_some()
    }

    /// Keeps the result read so.
    fn keep_passed(&self, result: CallToolResult) {
        if let Some(passed) = &self.passed {
            *passed.borrow_mut() = Some(result);
        }
    }

    /// The result read so, once.
    pub(crate) fn take_passed(&self) -> Option<CallToolResult> {
        self.passed.as_ref().and_then(|passed| passed.borrow_mut().take())
    }
}

/// Unregisters a call when dropped.
pub(crate) struct Registered<'a> {
    link: &'a Link,
    pub(crate) entry: Rc<CallEntry>,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.link.calls.borrow_mut().retain(|c| !Rc::ptr_eq(c, &self.entry));
    }
}

/// Counts a request in flight while it lives.
pub(crate) struct InFlight<'a>(&'a Link);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.set(self.0.in_flight.get().saturating_sub(1));
    }
}

impl Link {
    pub(crate) fn new(cfg: LinkConfig, handlers: ClientHandlers, client_info: Implementation) -> Rc<Link> {
        Link::build(cfg, handlers, client_info, None, false)
    }

    /// A primary link publishing its stateless wire to satellites through `share`.
    pub(crate) fn primary(
        cfg: LinkConfig,
        handlers: ClientHandlers,
        client_info: Implementation,
        share: Arc<LinkShare>,
    ) -> Rc<Link> {
        Link::build(cfg, handlers, client_info, Some(share), false)
    }

    /// A satellite of the primary publishing `share`: on the stateless wire from the start
    /// (it never negotiates), without OAuth of its own (it sends the primary's bearer).
    pub(crate) fn satellite(
        mut cfg: LinkConfig,
        handlers: ClientHandlers,
        client_info: Implementation,
        share: Arc<LinkShare>,
    ) -> Rc<Link> {
        cfg.oauth = None;
        let link = Link::build(cfg, handlers, client_info, Some(share), true);
        drop(link.replace_wire(Wire::Stateless { tool_params: Default::default() }));
        link
    }

    fn build(
        cfg: LinkConfig,
        handlers: ClientHandlers,
        client_info: Implementation,
        share: Option<Arc<LinkShare>>,
        satellite: bool,
    ) -> Rc<Link> {
        // Headers every request carries are parsed once, as the client's defaults.
        let http = http::HttpClient::new(&cfg);
        let capabilities = handlers.capabilities();
        let task_meta = StatelessMeta::new(&meta_members(&client_info, &with_tasks_extension(capabilities.clone())));
        let stateless_meta = StatelessMeta::new(&meta_members(&client_info, &capabilities));
        let auth = match (&cfg.oauth, &cfg.command) {
            (Some(oauth), None) => {
                Some(super::oauth::authorizer::Authorizer::new(cfg.url.clone(), oauth.clone(), cfg.timeout))
            }
            _ => None,
        };
        let plain = satellite.then(|| plain::PlainHttp::for_url(&cfg.url, &cfg.headers)).flatten();
        Rc::new(Link {
            auth,
            http,
            cfg,
            handlers,
            client_info,
            stateless_meta,
            task_meta,
            next_id: Cell::new(1),
            wire: RefCell::new(Wire::Idle),
            connecting: RefCell::new(None),
            closed: Cell::new(false),
            plain,
            share,
            satellite,
            calls: RefCell::new(Vec::new()),
            in_flight: Cell::new(0),
            next_progress: Cell::new(1),
        })
    }

    pub(crate) fn name(&self) -> &str {
        &self.cfg.name
    }

    /// What the link was configured with.
    pub(crate) fn config(&self) -> &LinkConfig {
        &self.cfg
    }

    /// How the client answers what the server asks of it.
    pub(crate) fn handlers(&self) -> &ClientHandlers {
        &self.handlers
    }

    /// The share this link publishes to, when it is a primary.
    fn published(&self) -> Option<&LinkShare> {
        self.share.as_deref().filter(|_| !self.satellite)
    }

    /// The share this link reads, when it is a satellite.
    fn borrowed(&self) -> Option<&LinkShare> {
        self.share.as_deref().filter(|_| self.satellite)
    }

    /// Registers a call with handlers of its own until the returned guard is dropped; its
    /// progress token (when it wants progress) is made here. A gateway's call `passes`: its
    /// usual answer is kept for [`CallEntry::take_passed`].
    pub(crate) fn register(&self, handlers: CallHandlers, passes: bool) -> Registered<'_> {
        let token = handlers.progress.is_some().then(|| {
            let n = self.next_progress.get();
            self.next_progress.set(n + 1);
            mcpd::client::attribution::progress_token(n)
        });
        let routes = handlers.routes();
        let passed = passes.then(RefCell::default);
        let entry = Rc::new(CallEntry { handlers, token, request: RefCell::new(None), passed });
        // Only calls with something to route are looked through when a message arrives.
        if routes {
            self.calls.borrow_mut().push(entry.clone());
        }
        Registered { link: self, entry }
    }

    /// Counts a request in flight until the returned guard is dropped.
    pub(crate) fn in_flight(&self) -> InFlight<'_> {
        self.in_flight.set(self.in_flight.get() + 1);
        InFlight(self)
    }

    /// The registered call a notification or server request belongs to (see
    /// `mcpd::client::attribution`).
    pub(crate) fn call_for(&self, waiting_for: Option<&RequestId>) -> Option<Rc<CallEntry>> {
        let calls = self.calls.borrow();
        if calls.is_empty() {
            return None;
        }
        let arrival = waiting_for.map_or(Arrival::Shared, Arrival::Own);
        let request_of = |c: &Rc<CallEntry>| c.request.borrow().clone();
        // `attribute` reads ids by reference; the ids are cloned out of their cells first.
        let ids: Vec<Option<RequestId>> = calls.iter().map(request_of).collect();
        let index = attribute(&ids, Option::as_ref, arrival, self.in_flight.get())
            .and_then(|found| ids.iter().position(|id| std::ptr::eq(id, found)))?;
        calls.get(index).cloned()
    }

    /// The registered call whose progress token is `token`.
    pub(crate) fn call_with_token(&self, token: &str) -> Option<Rc<CallEntry>> {
        self.calls.borrow().iter().find(|c| c.token.as_deref() == Some(token)).cloned()
    }

    fn next_id(&self) -> RequestId {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        RequestId::Number(id)
    }
}

/// The `_meta` members of a stateless request: revision, client info, `capabilities`.
fn meta_members(client_info: &Implementation, capabilities: &Value) -> Map<String, Value> {
    let mut params = Map::new();
    add_stateless_meta(&mut params, client_info, capabilities);
    match params.remove("_meta") {
        Some(Value::Object(meta)) => meta,
        _ => Map::new(),
    }
}

/// `capabilities` with `extensions["io.modelcontextprotocol/tasks"]: {}` (the client can take a
/// `CreateTaskResult` and follow the task).
fn with_tasks_extension(mut capabilities: Value) -> Value {
    if let Value::Object(caps) = &mut capabilities {
        let extensions = caps.entry("extensions").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(extensions) = extensions {
            extensions.insert(TASKS_EXTENSION.into(), Value::Object(Map::new()));
        }
    }
    capabilities
}

/// Whether a request declares the tasks extension: `tools/call` (a server may answer it with a
/// task) and the extension's own `tasks/*` methods.
fn declares_tasks(method: &str) -> bool {
    method == "tools/call" || method.starts_with("tasks/")
}
