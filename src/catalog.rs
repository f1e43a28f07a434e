//! The catalog: tools, prompts, resources and resource templates with their async handlers.
//!
//! Handlers are plain async closures; nothing here depends on a runtime. A handler's `Err` is a
//! tool failure (reported to the client as `isError: true`), unless it is a
//! [`ToolError::Protocol`], which becomes a JSON-RPC error.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use derive_more::{Display, Error, From};
use serde_json::{Map, Value};

use crate::context::ToolContext;
use crate::error::ProtocolError;
use crate::jsonrpc::{ClientCapabilities, RequestMeta};
use crate::model::{
    CallToolResult, GetPromptResult, PassedResult, Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool,
};
use crate::mrtr::InputRequired;

/// A boxed future that can move between threads.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Why a handler failed.
#[derive(Debug, Clone, PartialEq, Display, Error, From)]
#[non_exhaustive]
pub enum ToolError {
    /// The tool ran and failed; the text is shown to the model (`isError: true`).
    #[display("{_0}")]
    #[from(ignore)]
    Failed(#[error(not(source))] String),
    /// The request cannot be served at the protocol level (becomes a JSON-RPC error).
    #[display("{_0}")]
    Protocol(ProtocolError),
    /// The handler needs input from the client first (MRTR): on the stateless wire this becomes
    /// an `input_required` result; in a session the server asks the client and calls again.
    #[display("input required from the client")]
    InputRequired(#[error(not(source))] InputRequired),
}

impl ToolError {
    /// A tool failure with a message.
    pub fn failed(message: impl fmt::Display) -> Self {
        ToolError::Failed(message.to_string())
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError::Failed(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        ToolError::Failed(message.to_owned())
    }
}

/// Runs a tool (`T` = [`CallToolResult`]) or renders a prompt (`T` = [`GetPromptResult`]):
/// the arguments in (an object; `{}` when the client sent none), `T` or a [`ToolError`] out.
/// Any `Fn(Map<String, Value>, ToolContext) -> impl Future<Output = Result<T, ToolError>>` is one.
pub trait ArgumentsHandler<T>: Send + Sync + 'static {
    /// Runs with the given arguments (a prompt's required ones are checked before the call).
    fn call(&self, arguments: Map<String, Value>, context: ToolContext) -> BoxFuture<Result<T, ToolError>>;
}

impl<F, Fut, T> ArgumentsHandler<T> for F
where
    F: Fn(Map<String, Value>, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, ToolError>> + Send + 'static,
{
    fn call(&self, arguments: Map<String, Value>, context: ToolContext) -> BoxFuture<Result<T, ToolError>> {
        Box::pin(self(arguments, context))
    }
}

/// Runs a tool.
pub type ToolHandler = dyn ArgumentsHandler<CallToolResult>;

/// A second way to run a tool, for its plain calls: a call on the 2026-07-28 wire that streams
/// nothing (no progress token, no log level), carries no answers to an earlier round
/// (`inputResponses`, `requestState`) and does not become a task. Such a call is started here
/// instead of through the tool's handler; whatever the lane does not take runs the handler.
///
/// A gateway's tools have one: the call goes to the remote without a context being made for
/// it, and the remote's usual answer is passed on as the text it came as ([`LaneResult::Passed`]).
pub trait ToolLane: Send + Sync + 'static {
    /// Starts a plain call with `arguments` (read here: the future does not borrow them), or
    /// `None` when this call is not the lane's to run (the handler runs it).
    fn start(
        &self,
        arguments: &Map<String, Value>,
        call: &LaneCall<'_>,
    ) -> Option<BoxFuture<Result<LaneResult, ToolError>>>;
}

/// What a [`ToolLane`] is told of a plain call besides its arguments.
#[derive(Debug, Clone, Copy)]
pub struct LaneCall<'a> {
    /// The request's `_meta` (the HTTP edge puts the W3C trace context there).
    pub meta: Option<&'a RequestMeta>,
    /// The capabilities the client declared on this request.
    pub client_capabilities: Option<&'a ClientCapabilities>,
}

/// What a [`ToolLane`]'s call came to.
#[derive(Debug, Clone, PartialEq)]
pub enum LaneResult {
    /// A result as the JSON text another server sent, passed on as it is.
    Passed(PassedResult),
    /// A result, written out as the handler's are.
    Result(CallToolResult),
    /// The call given back unserved — its attempt was refused before it was processed, in a way
    /// only the handler's way answers (a gateway's `401` that the remote's connection answers
    /// with OAuth): the tool's handler runs it.
    Declined,
}

/// Renders a prompt.
pub type PromptHandler = dyn ArgumentsHandler<GetPromptResult>;

/// The variables a URI matched in a resource template (empty for a plain resource).
pub type UriVariables = Vec<(String, String)>;

/// Reads a resource.
pub trait ResourceHandler: Send + Sync + 'static {
    /// Reads `uri`; for a template, `variables` holds what the URI matched.
    fn read(
        &self,
        uri: String,
        variables: UriVariables,
        context: ToolContext,
    ) -> BoxFuture<Result<ReadResourceResult, ToolError>>;
}

impl<F, Fut> ResourceHandler for F
where
    F: Fn(String, UriVariables, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ReadResourceResult, ToolError>> + Send + 'static,
{
    fn read(
        &self,
        uri: String,
        variables: UriVariables,
        context: ToolContext,
    ) -> BoxFuture<Result<ReadResourceResult, ToolError>> {
        Box::pin(self(uri, variables, context))
    }
}

/// A registered tool.
#[derive(Clone)]
pub struct ToolEntry {
    /// Its definition.
    pub definition: Arc<Tool>,
    /// Its handler.
    pub handler: Arc<ToolHandler>,
    /// Its lane for plain calls, when it has one ([`ToolLane`]).
    pub lane: Option<Arc<dyn ToolLane>>,
    /// Its `x-mcp-header` parameters, read once from the input schema (an error when the
    /// annotations are invalid).
    pub header_params: Arc<Result<Vec<crate::headers::HeaderParam>, crate::headers::HeaderParamError>>,
}

/// A registered prompt.
#[derive(Clone)]
pub struct PromptEntry {
    /// Its definition.
    pub definition: Arc<Prompt>,
    /// Its handler.
    pub handler: Arc<PromptHandler>,
}

/// A registered resource.
#[derive(Clone)]
pub struct ResourceEntry {
    /// Its definition.
    pub definition: Arc<Resource>,
    /// Its handler.
    pub handler: Arc<dyn ResourceHandler>,
}

/// A registered resource template.
#[derive(Clone)]
pub struct TemplateEntry {
    /// Its definition.
    pub definition: Arc<ResourceTemplate>,
    /// Its handler.
    pub handler: Arc<dyn ResourceHandler>,
}

macro_rules! opaque_debug {
    ($($t:ty),*) => {$(
        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($t)).field("definition", &self.definition).finish_non_exhaustive()
            }
        }
    )*};
}
opaque_debug!(ToolEntry, PromptEntry, ResourceEntry, TemplateEntry);

/// Everything a server offers. Lists are kept sorted by name (URI for resources), which makes
/// `*/list` deterministic and cursors stable.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    tools: BTreeMap<String, ToolEntry>,
    prompts: BTreeMap<String, PromptEntry>,
    resources: BTreeMap<String, ResourceEntry>,
    templates: BTreeMap<String, TemplateEntry>,
    completer: Option<Completer>,
    delegate: Option<CompletionDelegate>,
}

/// Suggests values for `completion/complete`: given the `ref` object, the argument name and the
/// prefix typed so far, returns candidate values.
pub type CompleteFn = dyn Fn(&Map<String, Value>, &str, &str) -> Vec<String> + Send + Sync;

/// A completion function.
#[derive(Clone)]
pub struct Completer(Arc<CompleteFn>);

impl Completer {
    /// Asks it for the values of `argument` starting with `prefix` (for a new completer that
    /// answers some references itself and hands the others to the one it replaces).
    pub fn complete(&self, reference: &Map<String, Value>, argument: &str, prefix: &str) -> Vec<String> {
        (self.0)(reference, argument, prefix)
    }
}

/// Answers `completion/complete` for the references it owns, asynchronously (the gateway's
/// federated prompts and templates, answered by their remote): given the request's params, `None`
/// when the reference is not its own (the catalog's [`Completer`] answers it), else the future
/// of the whole `completion/complete` result.
pub type DelegateFn =
    dyn Fn(&Map<String, Value>) -> Option<BoxFuture<Result<Map<String, Value>, ToolError>>> + Send + Sync;

/// A completion delegate (see [`DelegateFn`]).
#[derive(Clone)]
pub struct CompletionDelegate(Arc<DelegateFn>);

impl CompletionDelegate {
    /// The future of the result, when the reference in `params` is the delegate's.
    pub fn complete(&self, params: &Map<String, Value>) -> Option<BoxFuture<Result<Map<String, Value>, ToolError>>> {
        (self.0)(params)
    }
}

impl fmt::Debug for CompletionDelegate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CompletionDelegate")
    }
}

impl fmt::Debug for Completer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Completer")
    }
}

impl Catalog {
    /// Sets the function that answers `completion/complete` (without one, every completion is
    /// an empty list).
    pub fn set_completer(
        &mut self,
        completer: impl Fn(&Map<String, Value>, &str, &str) -> Vec<String> + Send + Sync + 'static,
    ) -> &mut Self {
        self.completer = Some(Completer(Arc::new(completer)));
        self
    }

    /// The completion function, if any.
    pub fn completer(&self) -> Option<&CompleteFn> {
        self.completer.as_ref().map(|c| &*c.0)
    }

    /// The completion function as a handle that outlives this borrow: a module that adds its
    /// own completions takes the current one and delegates the references it does not know.
    pub fn completer_handle(&self) -> Option<Completer> {
        self.completer.clone()
    }

    /// Sets the asynchronous completion delegate, asked before the completer (one per
    /// catalog; a new one replaces the old).
    pub fn set_completion_delegate(
        &mut self,
        delegate: impl Fn(&Map<String, Value>) -> Option<BoxFuture<Result<Map<String, Value>, ToolError>>>
            + Send
            + Sync
            + 'static,
    ) -> &mut Self {
        self.delegate = Some(CompletionDelegate(Arc::new(delegate)));
        self
    }

    /// The completion delegate, if any.
    pub fn completion_delegate(&self) -> Option<&CompletionDelegate> {
        self.delegate.as_ref()
    }

    /// An empty catalog.
    pub fn new() -> Self {
        Catalog::default()
    }

    /// Adds (or replaces) a tool.
    pub fn add_tool(&mut self, definition: Tool, handler: impl ArgumentsHandler<CallToolResult>) -> &mut Self {
        self.insert_tool(definition, Arc::new(handler), None)
    }

    /// Adds (or replaces) a tool with a lane for its plain calls ([`ToolLane`]); `handler` runs
    /// every other call.
    pub fn add_tool_with_lane(
        &mut self,
        definition: Tool,
        handler: impl ArgumentsHandler<CallToolResult>,
        lane: impl ToolLane,
    ) -> &mut Self {
        self.insert_tool(definition, Arc::new(handler), Some(Arc::new(lane)))
    }

    fn insert_tool(
        &mut self,
        definition: Tool,
        handler: Arc<ToolHandler>,
        lane: Option<Arc<dyn ToolLane>>,
    ) -> &mut Self {
        let header_params = Arc::new(crate::headers::header_params(&definition.input_schema));
        let entry = ToolEntry { definition: Arc::new(definition), handler, lane, header_params };
        self.tools.insert(entry.definition.name.clone(), entry);
        self
    }

    /// Adds (or replaces) a prompt.
    pub fn add_prompt(&mut self, definition: Prompt, handler: impl ArgumentsHandler<GetPromptResult>) -> &mut Self {
        let entry = PromptEntry { definition: Arc::new(definition), handler: Arc::new(handler) };
        self.prompts.insert(entry.definition.name.clone(), entry);
        self
    }

    /// Adds (or replaces) a resource.
    pub fn add_resource(&mut self, definition: Resource, handler: impl ResourceHandler) -> &mut Self {
        let entry = ResourceEntry { definition: Arc::new(definition), handler: Arc::new(handler) };
        self.resources.insert(entry.definition.uri.clone(), entry);
        self
    }

    /// Adds (or replaces) a resource template.
    pub fn add_template(&mut self, definition: ResourceTemplate, handler: impl ResourceHandler) -> &mut Self {
        let entry = TemplateEntry { definition: Arc::new(definition), handler: Arc::new(handler) };
        self.templates.insert(entry.definition.uri_template.clone(), entry);
        self
    }

    /// Removes a tool; true when it was there.
    pub fn remove_tool(&mut self, name: &str) -> bool {
        self.tools.remove(name).is_some()
    }

    /// Removes a prompt; true when it was there.
    pub fn remove_prompt(&mut self, name: &str) -> bool {
        self.prompts.remove(name).is_some()
    }

    /// Removes a resource; true when it was there.
    pub fn remove_resource(&mut self, uri: &str) -> bool {
        self.resources.remove(uri).is_some()
    }

    /// Removes a resource template (by its URI template); true when it was there.
    pub fn remove_template(&mut self, uri_template: &str) -> bool {
        self.templates.remove(uri_template).is_some()
    }

    /// The resource at exactly `uri`.
    pub fn resource(&self, uri: &str) -> Option<&ResourceEntry> {
        self.resources.get(uri)
    }

    /// The template `uri_template`.
    pub fn template(&self, uri_template: &str) -> Option<&TemplateEntry> {
        self.templates.get(uri_template)
    }

    /// Keeps only the tools whose names pass `keep`.
    pub fn retain_tools(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.tools.retain(|name, _| keep(name));
    }

    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&ToolEntry> {
        self.tools.get(name)
    }

    /// The prompt called `name`.
    pub fn prompt(&self, name: &str) -> Option<&PromptEntry> {
        self.prompts.get(name)
    }

    /// The resource at `uri`, or the first template (in template order) that matches it.
    pub fn resolve_resource(&self, uri: &str) -> Option<(Arc<dyn ResourceHandler>, UriVariables)> {
        if let Some(entry) = self.resources.get(uri) {
            return Some((entry.handler.clone(), Vec::new()));
        }
        self.templates.values().find_map(|t| t.definition.match_uri(uri).map(|vars| (t.handler.clone(), vars)))
    }

    /// Tools in name order.
    pub fn tools(&self) -> impl Iterator<Item = &ToolEntry> {
        self.tools.values()
    }

    /// Prompts in name order.
    pub fn prompts(&self) -> impl Iterator<Item = &PromptEntry> {
        self.prompts.values()
    }

    /// Resources in URI order.
    pub fn resources(&self) -> impl Iterator<Item = &ResourceEntry> {
        self.resources.values()
    }

    /// Templates in template order.
    pub fn templates(&self) -> impl Iterator<Item = &TemplateEntry> {
        self.templates.values()
    }

    /// Tool names in order.
    pub fn tool_names(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }

    /// One page of the tools `keep` keeps (a caller's view), starting after the key `after`.
    pub(crate) fn tool_page(&self, after: Option<&str>, size: usize, keep: Keep<'_>) -> Page<Tool> {
        page(&self.tools, after, size, keep, |e| e.definition.clone())
    }

    /// One page of the prompts `keep` keeps, after `after`.
    pub(crate) fn prompt_page(&self, after: Option<&str>, size: usize, keep: Keep<'_>) -> Page<Prompt> {
        page(&self.prompts, after, size, keep, |e| e.definition.clone())
    }

    /// One page of the resources `keep` keeps (by URI), after `after`.
    pub(crate) fn resource_page(&self, after: Option<&str>, size: usize, keep: Keep<'_>) -> Page<Resource> {
        page(&self.resources, after, size, keep, |e| e.definition.clone())
    }

    /// One page of the templates `keep` keeps (by URI template), after `after`.
    pub(crate) fn template_page(&self, after: Option<&str>, size: usize, keep: Keep<'_>) -> Page<ResourceTemplate> {
        page(&self.templates, after, size, keep, |e| e.definition.clone())
    }
}

/// Which entries of a list a caller sees, by key (name, URI or URI template).
pub(crate) type Keep<'a> = &'a dyn Fn(&str) -> bool;

/// One page of a list: its items and, when more remain, the key to continue after.
pub(crate) type Page<T> = (Vec<Arc<T>>, Option<String>);

/// Takes up to `size` entries after the key `after`; the second value is the key to continue
/// after, when more remain.
fn page<E, T>(
    map: &BTreeMap<String, E>,
    after: Option<&str>,
    size: usize,
    keep: Keep<'_>,
    f: impl Fn(&E) -> T,
) -> (Vec<T>, Option<String>) {
    use std::ops::Bound;
    let lower = match after {
        Some(key) => Bound::Excluded(key),
        None => Bound::Unbounded,
    };
    let mut iter = map.range::<str, _>((lower, Bound::Unbounded)).filter(|(k, _)| keep(k));
    let items: Vec<(&String, &E)> = iter.by_ref().take(size.max(1)).collect();
    let next = if iter.next().is_some() { items.last().map(|(k, _)| (*k).clone()) } else { None };
    (items.into_iter().map(|(_, e)| f(e)).collect(), next)
}

/// A change other parts of the runtime must hear about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatalogEvent {
    /// The tool list changed.
    ToolsChanged,
    /// The prompt list changed.
    PromptsChanged,
    /// The resource or template list changed.
    ResourcesChanged,
    /// One resource's contents changed.
    ResourceUpdated(String),
}

type Listener = Arc<dyn Fn(&CatalogEvent) + Send + Sync>;

/// Hears when a resource URI gains its first subscriber and loses its last one, across every
/// connection (sessions, stdio, `subscriptions/listen`): what a resource provider needs to
/// watch only what someone listens to (the runtime's project-file watcher).
pub trait SubscriptionWatch: Send + Sync + 'static {
    /// `uri` has its first subscriber.
    fn watch(&self, uri: &str);
    /// `uri` lost its last subscriber.
    fn unwatch(&self, uri: &str);
}

/// How many connections subscribe to each URI, and who hears the first and last.
#[derive(Default)]
struct Subscribers {
    counts: std::collections::HashMap<String, usize>,
    watch: Option<Arc<dyn SubscriptionWatch>>,
}

/// A catalog that can change while the server runs. Readers take a cheap snapshot
/// ([`LiveCatalog::snapshot`]); writers replace it ([`LiveCatalog::update`]) and listeners
/// (the runtime's sessions) hear which lists changed.
#[derive(Default)]
pub struct LiveCatalog {
    current: std::sync::RwLock<Arc<Catalog>>,
    listeners: std::sync::Mutex<Vec<(u64, Listener)>>,
    next_listener: std::sync::atomic::AtomicU64,
    subscribers: std::sync::Mutex<Subscribers>,
}

impl fmt::Debug for LiveCatalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveCatalog").field("current", &self.snapshot()).finish_non_exhaustive()
    }
}

fn same<E>(a: &BTreeMap<String, E>, b: &BTreeMap<String, E>, def: impl Fn(&E) -> *const ()) -> bool {
    a.len() == b.len() && a.iter().zip(b.iter()).all(|((ka, ea), (kb, eb))| ka == kb && def(ea) == def(eb))
}

impl LiveCatalog {
    /// A live catalog starting with `catalog`.
    pub fn new(catalog: Catalog) -> Self {
        LiveCatalog { current: std::sync::RwLock::new(Arc::new(catalog)), ..Default::default() }
    }

    /// The current catalog.
    pub fn snapshot(&self) -> Arc<Catalog> {
        self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Changes the catalog; listeners hear which lists changed.
    pub fn update(&self, change: impl FnOnce(&mut Catalog)) {
        let (before, after) = {
            let mut guard = self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner);
            let before = guard.clone();
            let mut next = (*before).clone();
            change(&mut next);
            let after = Arc::new(next);
            *guard = after.clone();
            (before, after)
        };
        let mut events = Vec::new();
        if !same(&before.tools, &after.tools, |e| Arc::as_ptr(&e.definition).cast()) {
            events.push(CatalogEvent::ToolsChanged);
        }
        if !same(&before.prompts, &after.prompts, |e| Arc::as_ptr(&e.definition).cast()) {
            events.push(CatalogEvent::PromptsChanged);
        }
        if !same(&before.resources, &after.resources, |e| Arc::as_ptr(&e.definition).cast())
            || !same(&before.templates, &after.templates, |e| Arc::as_ptr(&e.definition).cast())
        {
            events.push(CatalogEvent::ResourcesChanged);
        }
        for event in events {
            self.emit(&event);
        }
    }

    /// Announces that the tool and prompt lists may look different to clients although the
    /// catalog did not change (who sees what changed: the access file was reloaded), so that
    /// they list again (`notifications/tools/list_changed`, `…/prompts/list_changed`).
    pub fn announce_lists_changed(&self) {
        self.emit(&CatalogEvent::ToolsChanged);
        self.emit(&CatalogEvent::PromptsChanged);
    }

    /// Announces that a resource's contents changed (subscribers get
    /// `notifications/resources/updated`).
    pub fn resource_updated(&self, uri: &str) {
        self.emit(&CatalogEvent::ResourceUpdated(uri.to_owned()));
    }

    /// Announces a change made elsewhere (another instance of a cluster) to this catalog's
    /// listeners, as if it had happened here.
    pub fn announce(&self, event: &CatalogEvent) {
        self.emit(event);
    }

    fn emit(&self, event: &CatalogEvent) {
        let listeners: Vec<Listener> = self
            .listeners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|(_, l)| l.clone())
            .collect();
        for listener in listeners {
            listener(event);
        }
    }

    /// Registers a listener; returns the id to remove it with.
    pub fn listen(&self, listener: impl Fn(&CatalogEvent) + Send + Sync + 'static) -> u64 {
        let id = self.next_listener.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.listeners.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((id, Arc::new(listener)));
        id
    }

    /// Removes a listener.
    pub fn unlisten(&self, id: u64) {
        self.listeners.lock().unwrap_or_else(std::sync::PoisonError::into_inner).retain(|(i, _)| *i != id);
    }

    /// Sets who hears about the first and last subscriber of each URI (URIs subscribed already
    /// are announced to it at once).
    pub fn set_subscription_watch(&self, watch: Arc<dyn SubscriptionWatch>) {
        let mut subscribers = self.subscribers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for uri in subscribers.counts.keys() {
            watch.watch(uri);
        }
        subscribers.watch = Some(watch);
    }

    /// Who hears about first and last subscribers now (to wrap it: a provider of some URIs
    /// passes the others on to the watch it replaces).
    pub fn subscription_watch(&self) -> Option<Arc<dyn SubscriptionWatch>> {
        self.subscribers.lock().unwrap_or_else(std::sync::PoisonError::into_inner).watch.clone()
    }

    /// One more connection subscribes to `uri` (a transport calls this when
    /// [`crate::server::Interest::apply`] added it).
    pub fn subscribed(&self, uri: &str) {
        let mut subscribers = self.subscribers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = subscribers.counts.entry(uri.to_owned()).or_default();
        *count += 1;
        if *count == 1 {
            if let Some(watch) = &subscribers.watch {
                watch.watch(uri);
            }
        }
    }

    /// One connection less subscribes to `uri` (unsubscribed, or the connection ended).
    pub fn unsubscribed(&self, uri: &str) {
        let mut subscribers = self.subscribers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(count) = subscribers.counts.get_mut(uri) else { return };
        *count -= 1;
        if *count == 0 {
            subscribers.counts.remove(uri);
            if let Some(watch) = &subscribers.watch {
                watch.unwatch(uri);
            }
        }
    }

    /// How many connections subscribe to `uri`.
    pub fn subscribers(&self, uri: &str) -> usize {
        self.subscribers.lock().unwrap_or_else(std::sync::PoisonError::into_inner).counts.get(uri).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Mutex;

    #[test]
    fn updates_announce_the_lists_that_changed() {
        let live = LiveCatalog::new(Catalog::new());
        let heard = Arc::new(Mutex::new(Vec::new()));
        let sink = heard.clone();
        let id = live.listen(move |e| sink.lock().unwrap().push(e.clone()));
        live.update(|c| {
            c.add_tool(Tool::new("a", "A", json!({"type":"object"})), |_a, _c| async { Ok(CallToolResult::text("a")) });
        });
        live.update(|_| {});
        live.resource_updated("test://x");
        live.announce_lists_changed();
        live.unlisten(id);
        live.update(|c| {
            c.remove_tool("a");
        });
        assert_eq!(
            *heard.lock().unwrap(),
            vec![
                CatalogEvent::ToolsChanged,
                CatalogEvent::ResourceUpdated("test://x".into()),
                CatalogEvent::ToolsChanged,
                CatalogEvent::PromptsChanged
            ]
        );
        assert_eq!(live.snapshot().tools().count(), 0);
    }

    #[test]
    fn the_watch_hears_the_first_and_last_subscriber_of_a_uri() {
        struct Heard(Mutex<Vec<String>>);
        impl SubscriptionWatch for Heard {
            fn watch(&self, uri: &str) {
                self.0.lock().unwrap().push(format!("+{uri}"));
            }
            fn unwatch(&self, uri: &str) {
                self.0.lock().unwrap().push(format!("-{uri}"));
            }
        }
        let live = LiveCatalog::new(Catalog::new());
        live.subscribed("a://early");
        let heard = Arc::new(Heard(Mutex::new(Vec::new())));
        live.set_subscription_watch(heard.clone());
        live.subscribed("a://x");
        live.subscribed("a://x");
        live.unsubscribed("a://x");
        assert_eq!(live.subscribers("a://x"), 1);
        live.unsubscribed("a://x");
        live.unsubscribed("a://never");
        assert_eq!(*heard.0.lock().unwrap(), ["+a://early", "+a://x", "-a://x"]);
    }
}
