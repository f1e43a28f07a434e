//! The registered entries (a definition with its handler) and the [`Catalog`] that holds them,
//! keyed by name (URI for resources, URI template for templates): adding, removing, looking up
//! and iterating. Paging ([`super::lists`]) and change events ([`super::live`]) read its maps.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::complete::{CompleteFn, Completer, CompletionDelegate};
use super::handler::{
    ArgumentsHandler, PromptHandler, ResourceHandler, ToolError, ToolHandler, ToolLane, UriVariables,
};
use crate::future::BoxFuture;
use crate::model::{CallToolResult, GetPromptResult, Prompt, Resource, ResourceTemplate, Tool};

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
    pub(super) tools: BTreeMap<String, ToolEntry>,
    pub(super) prompts: BTreeMap<String, PromptEntry>,
    pub(super) resources: BTreeMap<String, ResourceEntry>,
    pub(super) templates: BTreeMap<String, TemplateEntry>,
    pub(super) completer: Option<Completer>,
    pub(super) delegate: Option<CompletionDelegate>,
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

    /// Takes the tool called `name` out, entry and all (to put it back under another name with
    /// [`Catalog::put_tool`]).
    pub fn take_tool(&mut self, name: &str) -> Option<ToolEntry> {
        self.tools.remove(name)
    }

    /// Adds (or replaces) a tool entry under its definition's name: its handler, lane and header
    /// parameters as they are.
    pub fn put_tool(&mut self, entry: ToolEntry) -> &mut Self {
        self.tools.insert(entry.definition.name.clone(), entry);
        self
    }
}
