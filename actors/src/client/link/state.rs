//! [`Link`]: what one connection to a server holds (its HTTP client, configuration, handlers,
//! the `_meta` of its stateless requests, the wire, OAuth, the share with satellites, the calls
//! in flight), and how a link is made. What a link does is in the files of each job, which add
//! their own `impl Link` blocks.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use futures_util::future::{LocalBoxFuture, Shared};
use mcpd::client::request::add_stateless_meta;
use mcpd::jsonrpc::RequestId;
use mcpd::model::Implementation;
use mcpd::tasks::TASKS_EXTENSION;
use serde_json::{Map, Value};

use super::body::StatelessMeta;
use super::call_entry::CallEntry;
use super::config::{LinkConfig, Mode, ServerPeer};
use super::http::HttpClient;
use super::plain::PlainHttp;
use super::share::LinkShare;
use super::wire::Wire;
use crate::client::error::ClientError;
use crate::client::handlers::ClientHandlers;
use crate::client::oauth::authorizer::Authorizer;

/// A negotiation under way, shared by the calls waiting for it.
pub(super) type Connecting = Shared<LocalBoxFuture<'static, Result<Mode, ClientError>>>;

/// A connection to one server.
pub(crate) struct Link {
    /// This link's own HTTP client, with the configured headers as defaults.
    pub(super) http: HttpClient,
    pub(super) cfg: LinkConfig,
    /// How the client answers what the server asks of it.
    pub(super) handlers: ClientHandlers,
    /// What `initialize` and stateless `_meta` say about us.
    pub(super) client_info: Implementation,
    /// The `_meta` of every stateless request (version, client info, capabilities), serialized
    /// once.
    pub(super) stateless_meta: StatelessMeta,
    /// The same with the tasks extension declared among the capabilities: the `_meta` of
    /// `tools/call` (the one request a server may answer with a task, which the connection
    /// then waits for) and of `tasks/*` (which need the declaration).
    pub(super) task_meta: StatelessMeta,
    /// The id of the next request (ids are never reused on a link).
    pub(super) next_id: Cell<i64>,
    /// The wire: negotiated, being negotiated, or not yet. Borrowed only briefly, never across
    /// an await.
    pub(super) wire: RefCell<Wire>,
    /// The negotiation under way, shared by concurrent first calls.
    pub(super) connecting: RefCell<Option<Connecting>>,
    /// Set by [`Link::close`]: no request starts after it.
    pub(super) closed: Cell<bool>,
    /// OAuth (when configured, over HTTP): the bearer token and the authorization flow.
    pub(super) auth: Option<Rc<Authorizer>>,
    /// What this link publishes to its satellites (a primary) or reads from its primary (a
    /// satellite): see [`LinkShare`].
    pub(super) share: Option<Arc<LinkShare>>,
    /// A satellite: a stateless link on another thread than its primary's, sending calls only.
    pub(super) satellite: bool,
    /// A satellite's own HTTP/1.1 client for a plain `http://` endpoint.
    pub(super) plain: Option<PlainHttp>,
    /// The calls in flight with handlers of their own (empty for plain calls: nothing is
    /// registered for them).
    pub(super) calls: RefCell<Vec<Rc<CallEntry>>>,
    /// Requests in flight on the link (for attributing what a shared stream carries).
    pub(super) in_flight: Cell<usize>,
    /// The number of the next progress token.
    pub(super) next_progress: Cell<u64>,
    /// Where the server is, for the requests' spans.
    pub(super) peer: ServerPeer,
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
        let http = HttpClient::new(&cfg);
        let capabilities = handlers.capabilities();
        let task_meta = StatelessMeta::new(&meta_members(&client_info, &with_tasks_extension(capabilities.clone())));
        let stateless_meta = StatelessMeta::new(&meta_members(&client_info, &capabilities));
        let auth = match (&cfg.oauth, &cfg.command) {
            (Some(oauth), None) => Some(Authorizer::new(cfg.url.clone(), oauth.clone(), cfg.timeout)),
            _ => None,
        };
        let plain = satellite.then(|| PlainHttp::for_url(&cfg.url, &cfg.headers)).flatten();
        let peer = ServerPeer::of(&cfg.url, cfg.command.is_some());
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
            peer,
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
    pub(super) fn published(&self) -> Option<&LinkShare> {
        self.share.as_deref().filter(|_| !self.satellite)
    }

    /// The share this link reads, when it is a satellite.
    pub(super) fn borrowed(&self) -> Option<&LinkShare> {
        self.share.as_deref().filter(|_| self.satellite)
    }

    pub(super) fn next_id(&self) -> RequestId {
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
