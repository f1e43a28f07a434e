//! Federation: the remotes' prompts, resources and resource templates beside their tools.
//!
//! - **Prompts** are exported as `<prefix>__<prompt>` (the tools' prefixes and name rule);
//!   `prompts/get` goes to the remote under its own name.
//! - **Resources and templates** keep their URIs. Which remote serves a URI is decided by the
//!   [`assign`] rule over every remote's last listing, in the servers file's order: an exact
//!   resource URI (or a template string) two remotes claim is served by the first, and the later
//!   one's claim is a collision shown in its health (`collisions`) and logged; a URI this server
//!   serves itself (its project files, declared resources) is never taken over. Reading a URI
//!   that only a template covers is routed by the catalog's own RFC 6570 matcher to the
//!   template's owner.
//! - **Completions** for a federated prompt (its exported name, sent to the remote under its
//!   own) or a federated resource / template go to the owner; other references to the catalog's
//!   completer ([`mcpd::catalog::Catalog::set_completion_delegate`]).
//! - **Notifications**: a remote's `prompts/list_changed` and `resources/list_changed` refresh
//!   what it exports (the live catalog then tells this server's clients, only when something
//!   changed); its `resources/updated` for a URI it serves (or that was subscribed at it) becomes
//!   `notifications/resources/updated` for the subscribers here.
//! - **Subscriptions**: the first subscriber of a federated URI here subscribes at its owner
//!   (`resources/subscribe`), the last one leaving unsubscribes; when the owner changes (it went
//!   down, another remote serves the URI now) the subscription moves with it. Other URIs go to
//!   the watch that was installed before (the project files' `FileWatch`).
//!
//! `enabledPrompts` and `enabledResources` apply as to this server's own ([`Gateway::filter_federated`]).
//! A remote that does not offer a kind (`-32601` to its list) exports none of it; a listing
//! that fails otherwise leaves that kind out and says why in the remote's `skipped`. Down
//! remotes export nothing (retried with their tools). Listings follow the client's rules and
//! bounds (`ListLimits`: pages and entries), and at most [`COLLISIONS_SHOWN`] collisions are
//! shown per remote.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, PoisonError, Weak};

use mcpd::catalog::{BoxFuture, Catalog, ResourceHandler, SubscriptionWatch, ToolError};
use mcpd::client::list::{check_tool_name, Listed, Listing};
use mcpd::config::ToolFilter;
use mcpd::error::ProtocolError;
use mcpd::jsonrpc::ErrorCode;
use mcpd::model::{GetPromptResult, Prompt, ReadResourceResult, Resource, ResourceTemplate};
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

use super::health::SKIPPED_SHOWN;
use super::servers::{clipped, marked, shown, SEPARATOR};
use super::Gateway;
use crate::client::{ClientError, Listable};
use crate::panics::{self, Site};

/// How many collisions a remote's health lists.
pub(super) const COLLISIONS_SHOWN: usize = 10;

/// The JSON-RPC codes a remote's errors keep here.
const METHOD_NOT_FOUND: i32 = ErrorCode::METHOD_NOT_FOUND.0;
const INVALID_PARAMS: i32 = ErrorCode::INVALID_PARAMS.0;
const RESOURCE_NOT_FOUND: i32 = ErrorCode::RESOURCE_NOT_FOUND.0;

/// The most completion values passed on from a remote (the protocol's own limit).
const COMPLETION_VALUES: usize = 100;

/// One entry a remote offers: as this server exports it, and its key at the remote (a prompt's
/// own name; a resource's URI or a template's string, which are kept).
type Claim<T> = (T, String);

/// What one remote last listed.
#[derive(Debug, Default, Clone)]
pub(super) struct Claims {
    prompts: Vec<Claim<Prompt>>,
    resources: Vec<Claim<Resource>>,
    templates: Vec<Claim<ResourceTemplate>>,
    /// What its listings skipped or why a listing failed (the first [`SKIPPED_SHOWN`]).
    notes: Vec<String>,
}

/// Who serves an exported entry: the remote's id and the entry's key there.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Export {
    owner: String,
    remote: String,
}

/// `enabledPrompts` and `enabledResources`, applied to what the remotes offer as to this
/// server's own: a prompt by its exported name, a resource by its URI (listed or read through a
/// template).
#[derive(Debug)]
struct Filters {
    prompts: ToolFilter,
    resources: ToolFilter,
}

impl Default for Filters {
    fn default() -> Self {
        Filters { prompts: ToolFilter::All, resources: ToolFilter::All }
    }
}

/// What the gateway federates now. Its lock is taken inside the live catalog's write lock
/// (a rebuild), never the other way round, and is never held while the catalog's listeners or
/// subscription watch run.
#[derive(Debug, Default)]
pub(super) struct Federation {
    /// What may be exported.
    filters: Filters,
    /// Each up remote's last listing.
    claims: HashMap<String, Claims>,
    /// Exported prompt name → who serves it (what is in the catalog).
    prompts: BTreeMap<String, Export>,
    /// Resource URI → who serves it (what is in the catalog).
    resources: BTreeMap<String, Export>,
    /// Template → who serves it (what is in the catalog), in template order.
    templates: BTreeMap<String, Export>,
    /// URIs subscribed at a remote → its id.
    subscribed: HashMap<String, String>,
    /// Collisions per remote id.
    collisions: HashMap<String, Vec<String>>,
}

/// One remote's federated counts, for its health.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Counts {
    pub(super) prompts: usize,
    pub(super) resources: usize,
    pub(super) templates: usize,
    pub(super) collisions: Vec<String>,
    pub(super) notes: Vec<String>,
}

/// Who serves each key (URI, template or prompt name), by the first-in-file rule, and the
/// collisions: `claims` in the servers file's order (remote id, the keys it claims); a key
/// `local` holds is never assigned. Returns key → remote id and (remote id, message) for each
/// claim that lost.
pub(super) fn assign<'a>(
    kind: &str,
    claims: impl IntoIterator<Item = (&'a str, Vec<&'a str>)>,
    local: &dyn Fn(&str) -> bool,
) -> (BTreeMap<String, String>, Vec<(String, String)>) {
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    let mut collisions = Vec::new();
    for (id, keys) in claims {
        for key in keys {
            if local(key) {
                collisions.push((id.to_owned(), format!("{kind} {} is served by this server itself", shown(key))));
            } else if let Some(first) = owner.get(key) {
                if first != id {
                    collisions.push((id.to_owned(), format!("{kind} {} is served by {first}", shown(key))));
                }
            } else {
                owner.insert(key.to_owned(), id.to_owned());
            }
        }
    }
    (owner, collisions)
}

/// What federation does with one kind of entry: where it sits in [`Claims`], [`Federation`] and
/// the catalog, and how it is served.
trait Federated: Listable + Clone + PartialEq {
    /// How messages name the kind.
    const KIND: &'static str;
    fn claimed(claims: &Claims) -> &[Claim<Self>];
    fn exports_mut(federation: &mut Federation) -> &mut BTreeMap<String, Export>;
    /// Whether the filters let `key` be exported (templates: always; their URIs are judged
    /// when read).
    fn allowed(filters: &Filters, key: &str) -> bool;
    /// Whether this server serves `key` itself (not through the gateway).
    fn served_locally(catalog: &Catalog, federation: &Federation, key: &str) -> bool;
    /// The entry under `key` in the catalog now.
    fn in_catalog<'c>(catalog: &'c Catalog, key: &str) -> Option<&'c Self>;
    fn remove(catalog: &mut Catalog, key: &str);
    /// Adds the entry, served by `export.owner`.
    fn add(catalog: &mut Catalog, entry: Self, gateway: Arc<Gateway>, export: Export);
}

/// The parts of a [`Federated`] impl that only name where the kind sits: its member of
/// [`Claims`] and [`Federation`], and its catalog lookup and removal.
macro_rules! placed {
    ($member:ident, $lookup:ident, $remove:ident) => {
        fn claimed(claims: &Claims) -> &[Claim<Self>] {
            &claims.$member
        }

        fn exports_mut(federation: &mut Federation) -> &mut BTreeMap<String, Export> {
            &mut federation.$member
        }

        fn in_catalog<'c>(catalog: &'c Catalog, key: &str) -> Option<&'c Self> {
            catalog.$lookup(key).map(|entry| &*entry.definition)
        }

        fn remove(catalog: &mut Catalog, key: &str) {
            catalog.$remove(key);
        }
    };
}

impl Federated for Prompt {
    const KIND: &'static str = "prompt";

    placed!(prompts, prompt, remove_prompt);

    fn allowed(filters: &Filters, key: &str) -> bool {
        filters.prompts.allows(key)
    }

    fn served_locally(catalog: &Catalog, federation: &Federation, key: &str) -> bool {
        catalog.prompt(key).is_some() && !federation.prompts.contains_key(key)
    }

    fn add(catalog: &mut Catalog, entry: Self, gateway: Arc<Gateway>, export: Export) {
        catalog.add_prompt(entry, move |arguments: Map<String, Value>, _ctx| {
            let (gateway, export) = (gateway.clone(), export.clone());
            async move { gateway.get_prompt(&export.owner, &export.remote, arguments).await }
        });
    }
}

impl Federated for Resource {
    const KIND: &'static str = "resource";

    placed!(resources, resource, remove_resource);

    fn allowed(filters: &Filters, key: &str) -> bool {
        filters.resources.allows(key)
    }

    /// An exact resource of this server's, or one of its own templates matching the URI (an
    /// exact federated URI would shadow it).
    fn served_locally(catalog: &Catalog, federation: &Federation, key: &str) -> bool {
        (catalog.resource(key).is_some() && !federation.resources.contains_key(key))
            || catalog.templates().any(|t| {
                !federation.templates.contains_key(&t.definition.uri_template) && t.definition.match_uri(key).is_some()
            })
    }

    fn add(catalog: &mut Catalog, entry: Self, gateway: Arc<Gateway>, export: Export) {
        catalog.add_resource(entry, read_at(gateway, export.owner));
    }
}

impl Federated for ResourceTemplate {
    const KIND: &'static str = "resource template";

    placed!(templates, template, remove_template);

    fn allowed(_filters: &Filters, _key: &str) -> bool {
        true
    }

    fn served_locally(catalog: &Catalog, federation: &Federation, key: &str) -> bool {
        catalog.template(key).is_some() && !federation.templates.contains_key(key)
    }

    fn add(catalog: &mut Catalog, entry: Self, gateway: Arc<Gateway>, export: Export) {
        catalog.add_template(entry, read_at(gateway, export.owner));
    }
}

/// Reads a federated resource (or a URI of a federated template) at its remote.
fn read_at(gateway: Arc<Gateway>, server: String) -> impl ResourceHandler {
    move |uri: String, _vars, _ctx| {
        let (gateway, server) = (gateway.clone(), server.clone());
        async move { gateway.read_resource(&server, uri).await }
    }
}

/// What the catalog should hold of one kind (key → who serves it and the entry), and the
/// collisions: every remote's claims in the servers file's `order`, judged by [`assign`].
type Plan<T> = (BTreeMap<String, (Export, T)>, Vec<(String, String)>);

fn plan<T: Federated>(catalog: &Catalog, federation: &Federation, order: &[String]) -> Plan<T> {
    let claims: Vec<(&str, Vec<&Claim<T>>)> = order
        .iter()
        .filter_map(|id| {
            let allowed = |(entry, _): &&Claim<T>| T::allowed(&federation.filters, entry.key());
            federation.claims.get(id).map(|c| (id.as_str(), T::claimed(c).iter().filter(allowed).collect()))
        })
        .collect();
    let (owners, collisions) = assign(
        T::KIND,
        claims.iter().map(|(id, claimed)| (*id, claimed.iter().map(|(entry, _)| entry.key()).collect())),
        &|key| T::served_locally(catalog, federation, key),
    );
    let mut wanted = BTreeMap::new();
    for (id, claimed) in claims {
        for (entry, remote) in claimed {
            let key = entry.key();
            if owners.get(key).is_some_and(|owner| owner == id) && !wanted.contains_key(key) {
                let export = Export { owner: id.to_owned(), remote: remote.clone() };
                wanted.insert(key.to_owned(), (export, entry.clone()));
            }
        }
    }
    (wanted, collisions)
}

/// Makes the catalog's federated entries of one kind what `wanted` says, touching only those
/// that changed (an unchanged catalog announces no `list_changed`).
fn apply<T: Federated>(
    gateway: &Arc<Gateway>,
    catalog: &mut Catalog,
    federation: &mut Federation,
    wanted: BTreeMap<String, (Export, T)>,
) {
    let before = std::mem::take(T::exports_mut(federation));
    for key in before.keys().filter(|key| !wanted.contains_key(*key)) {
        T::remove(catalog, key);
    }
    for (key, (export, entry)) in wanted {
        let unchanged = before.get(&key).is_some_and(|current| *current == export)
            && T::in_catalog(catalog, &key).is_some_and(|current| *current == entry);
        if !unchanged {
            T::add(catalog, entry, gateway.clone(), export.clone());
        }
        T::exports_mut(federation).insert(key, export);
    }
}

/// Rebuilds the federated prompts, resources and templates in `catalog` from every remote's
/// claims, in the servers file's `order`.
fn rebuild(gateway: &Arc<Gateway>, catalog: &mut Catalog, federation: &mut Federation, order: &[String]) {
    // Every plan is judged against the catalog as it was, before any kind changes.
    let (prompts, mut collisions) = plan::<Prompt>(catalog, federation, order);
    let (resources, resource_collisions) = plan::<Resource>(catalog, federation, order);
    let (templates, template_collisions) = plan::<ResourceTemplate>(catalog, federation, order);
    collisions.extend(resource_collisions.into_iter().chain(template_collisions));
    apply(gateway, catalog, federation, prompts);
    apply(gateway, catalog, federation, resources);
    apply(gateway, catalog, federation, templates);
    federation.collisions.clear();
    for (id, message) in collisions {
        federation.collisions.entry(id).or_default().push(message);
    }
}

/// A remote's JSON-RPC error as this server's: invalid params and unknown resources keep their
/// meaning; anything else is an internal error naming the remote.
fn protocol_error(server: &str, error: ClientError, uri: Option<&str>) -> ToolError {
    match (&error, uri) {
        (ClientError::Rpc { code: INVALID_PARAMS, message, .. }, _) => ToolError::Protocol(
            ProtocolError::InvalidParams(format!("remote server {server}: {}", clipped(message, 500))),
        ),
        (ClientError::Rpc { code: RESOURCE_NOT_FOUND, .. }, Some(uri)) => {
            ToolError::Protocol(ProtocolError::ResourceNotFound { uri: uri.to_owned() })
        }
        _ => ToolError::Protocol(ProtocolError::Internal(format!("remote server {server} failed: {error}"))),
    }
}

/// Adds `text` to `notes` unless [`SKIPPED_SHOWN`] are there already.
fn note(notes: &mut Vec<String>, text: String) {
    if notes.len() < SKIPPED_SHOWN {
        notes.push(text);
    }
}

/// The entries of one listing (none when the remote does not offer the kind, or the listing
/// failed), with what it skipped, or why it failed, noted.
fn entries<T: Listed>(listed: Result<Option<Listing<T>>, ClientError>, kind: &str, notes: &mut Vec<String>) -> Vec<T> {
    match listed {
        Ok(listing) => {
            let listing = listing.unwrap_or_default();
            for skipped in &listing.skipped {
                note(notes, format!("{kind}: {skipped}"));
            }
            listing.items
        }
        Err(e) => {
            note(notes, format!("{} failed: {e}", T::METHOD));
            Vec::new()
        }
    }
}

/// Entries whose key is kept as it is at the remote (resources, templates).
fn keyed<T: Listed>(items: Vec<T>) -> Vec<Claim<T>> {
    items
        .into_iter()
        .map(|entry| {
            let key = entry.key().to_owned();
            (entry, key)
        })
        .collect()
}

/// A remote's prompt as this server exports it: `<prefix>__<name>`, its description marked with
/// the server's name (as its tools' are).
fn export_prompt(prompt: &Prompt, prefix: &str, server: &str) -> Prompt {
    let mut exported = prompt.clone();
    exported.name = format!("{prefix}{SEPARATOR}{}", prompt.name);
    exported.description = Some(marked(server, prompt.description.as_deref()));
    exported
}

impl Gateway {
    /// Lists one kind at a remote: `None` when it does not offer it.
    async fn list_kind<T: Listable>(&self, id: &str) -> Result<Option<Listing<T>>, ClientError> {
        let listed = panics::contain(Site::Gateway, self.manager.list::<T>(id))
            .await
            .unwrap_or_else(|panic| Err(ClientError::from(panic)));
        match listed {
            Ok(listing) => Ok(Some(listing)),
            Err(ClientError::Rpc { code: METHOD_NOT_FOUND, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Lists a remote's prompts, resources and templates.
    async fn list_claims(&self, id: &str, prefix: &str) -> Claims {
        let (prompts, resources, templates) = futures_util::future::join3(
            self.list_kind::<Prompt>(id),
            self.list_kind::<Resource>(id),
            self.list_kind::<ResourceTemplate>(id),
        )
        .await;
        let mut notes = Vec::new();
        let mut claims = Claims::default();
        for prompt in entries(prompts, "prompt", &mut notes) {
            let exported = export_prompt(&prompt, prefix, id);
            match check_tool_name(&exported.name) {
                Ok(()) => claims.prompts.push((exported, prompt.name)),
                Err(reason) => note(&mut notes, format!("prompt exported as {:?}: {reason}", shown(&exported.name))),
            }
        }
        claims.resources = keyed(entries(resources, "resource", &mut notes));
        claims.templates = keyed(entries(templates, "resource template", &mut notes));
        for note in &notes {
            log::warn!("gateway: remote {id}: {note}");
        }
        claims.notes = notes;
        claims
    }

    /// Lists what `id` federates when it is `up` (else takes it all out) and rebuilds the
    /// catalog's federated prompts, resources and templates.
    pub(super) async fn refresh_federated(self: &Arc<Self>, id: &str, up: bool) {
        let claims = match (up, self.prefix_of(id)) {
            (true, Some(prefix)) => Some(self.list_claims(id, &prefix).await),
            _ => None,
        };
        self.apply_claims(id, claims);
    }

    /// Applies `enabledPrompts` (`prompts`, to the exported names) and `enabledResources`
    /// (`resources`, to the URIs listed and read) to what the remotes offer; call it before
    /// [`Gateway::refresh_all`].
    pub fn filter_federated(&self, prompts: ToolFilter, resources: ToolFilter) {
        self.federation.lock().unwrap_or_else(PoisonError::into_inner).filters = Filters { prompts, resources };
    }

    /// Takes everything `id` federates out of the catalog (it is gone, or down); the URIs it
    /// served go to the next remote in the file that claims them.
    pub fn forget_federated(self: &Arc<Self>, id: &str) {
        self.apply_claims(id, None);
    }

    /// Replaces `id`'s claims (`None`: it is down or gone) and rebuilds the federated part of
    /// the catalog; subscriptions whose URI changed hands move to the new owner.
    fn apply_claims(self: &Arc<Self>, id: &str, claims: Option<Claims>) {
        let order = self.remote_ids();
        let mut moves = Vec::new();
        // Under the catalog's write lock, then the federation's (the one order of the two): no
        // one holds the federation's lock while waiting for the catalog, and the catalog's
        // listeners run after both are released.
        self.live.update(|catalog| {
            let mut federation = self.federation.lock().unwrap_or_else(PoisonError::into_inner);
            let were_up: Vec<String> = federation.claims.keys().cloned().collect();
            match claims {
                Some(claims) => federation.claims.insert(id.to_owned(), claims),
                None => federation.claims.remove(id),
            };
            federation.claims.retain(|id, _| order.contains(id));
            let known = std::mem::take(&mut federation.collisions);
            rebuild(self, catalog, &mut federation, &order);
            // Each collision is logged once, when it arises.
            for (id, messages) in &federation.collisions {
                for message in messages.iter().filter(|m| !known.get(id).is_some_and(|k| k.contains(m))) {
                    log::warn!("gateway: remote {id}: {message}");
                }
            }
            let Federation { claims, resources, templates, subscribed, .. } = &mut *federation;
            moves = follow_subscriptions(
                subscribed,
                &|id| were_up.iter().any(|up| up == id),
                &|id| claims.contains_key(id),
                &|uri| owner_in(catalog, (resources, templates), uri),
            );
        });
        for Move { uri, unsubscribe, subscribe } in moves {
            if let Some(server) = unsubscribe {
                self.remote_subscription(server, uri.clone(), false);
            }
            if let Some(server) = subscribe {
                self.remote_subscription(server, uri, true);
            }
        }
    }

    /// The federated counts of `id`.
    pub(super) fn federated_counts(&self, id: &str) -> Counts {
        let federation = self.federation.lock().unwrap_or_else(PoisonError::into_inner);
        let mut collisions = federation.collisions.get(id).cloned().unwrap_or_default();
        if collisions.len() > COLLISIONS_SHOWN {
            let more = collisions.len() - COLLISIONS_SHOWN;
            collisions.truncate(COLLISIONS_SHOWN);
            collisions.push(format!("… and {more} more"));
        }
        let owned = |exports: &BTreeMap<String, Export>| exports.values().filter(|e| e.owner == id).count();
        Counts {
            prompts: owned(&federation.prompts),
            resources: owned(&federation.resources),
            templates: owned(&federation.templates),
            collisions,
            notes: federation.claims.get(id).map(|c| c.notes.clone()).unwrap_or_default(),
        }
    }

    /// The remote serving `uri`: an exact resource, else the template the catalog resolves it
    /// with, when that is a federated one.
    fn owner_of(&self, uri: &str) -> Option<String> {
        // The catalog first: the federation's lock is never held while waiting for it.
        let catalog = self.live.snapshot();
        let federation = self.federation.lock().unwrap_or_else(PoisonError::into_inner);
        owner_in(&catalog, (&federation.resources, &federation.templates), uri)
    }

    /// A remote's `notifications/resources/updated`: announced here when the URI is one it
    /// serves or was subscribed at it (a remote cannot speak for another's URIs).
    pub(super) fn remote_resource_updated(&self, id: &str, params: &Value) {
        let Some(uri) = params.get("uri").and_then(Value::as_str) else { return };
        let subscribed = self
            .federation
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .subscribed
            .get(uri)
            .is_some_and(|owner| owner == id);
        if subscribed || self.owner_of(uri).is_some_and(|owner| owner == id) {
            self.live.resource_updated(uri);
        }
    }

    async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<GetPromptResult, ToolError> {
        self.forward_as(server, "prompts/get", json!({ "name": name, "arguments": arguments }), None).await
    }

    async fn read_resource(&self, server: &str, uri: String) -> Result<ReadResourceResult, ToolError> {
        let allowed = self.federation.lock().unwrap_or_else(PoisonError::into_inner).filters.resources.allows(&uri);
        if !allowed {
            // As this server's own templates answer a URI `enabledResources` leaves out.
            return Err(ToolError::Protocol(ProtocolError::ResourceNotFound { uri }));
        }
        self.forward_as(server, "resources/read", json!({ "uri": uri }), Some(&uri)).await
    }

    /// A request to a remote, its answer read as `T`.
    async fn forward_as<T: DeserializeOwned>(
        &self,
        server: &str,
        method: &str,
        params: Value,
        uri: Option<&str>,
    ) -> Result<T, ToolError> {
        let answer = self.forward(server, method, params, uri).await?;
        serde_json::from_value(answer).map_err(|e| {
            ToolError::Protocol(ProtocolError::Internal(format!(
                "remote server {server} answered {method} with an invalid result: {e}"
            )))
        })
    }

    /// A request to a remote, contained; the remote's errors become this server's.
    async fn forward(&self, server: &str, method: &str, params: Value, uri: Option<&str>) -> Result<Value, ToolError> {
        let Value::Object(params) = params else { return Err(ToolError::failed("parameters must be an object")) };
        let outcome = panics::contain(Site::Gateway, self.manager.request(server, method, params))
            .await
            .unwrap_or_else(|panic| Err(ClientError::from(panic)));
        match outcome {
            Ok(mut answer) => {
                self.health.mark_up(server);
                if let Value::Object(answer) = &mut answer {
                    // The remote's own bookkeeping is not this server's answer.
                    answer.remove("resultType");
                }
                Ok(answer)
            }
            Err(error) => {
                if !matches!(error, ClientError::Rpc { .. }) {
                    self.health.mark_down(server, &error);
                }
                Err(protocol_error(server, error, uri))
            }
        }
    }

    /// `completion/complete` for a federated prompt or resource; `None` for other references.
    fn delegate_completion(
        self: &Arc<Self>,
        params: &Map<String, Value>,
    ) -> Option<BoxFuture<Result<Map<String, Value>, ToolError>>> {
        let reference = params.get("ref").and_then(Value::as_object)?;
        let (server, remote_reference) = {
            let federation = self.federation.lock().unwrap_or_else(PoisonError::into_inner);
            match reference.get("type").and_then(Value::as_str)? {
                "ref/prompt" => {
                    let name = reference.get("name").and_then(Value::as_str)?;
                    let export = federation.prompts.get(name)?;
                    let mut remote_reference = reference.clone();
                    remote_reference.insert("name".into(), json!(export.remote));
                    (export.owner.clone(), remote_reference)
                }
                "ref/resource" => {
                    let uri = reference.get("uri").and_then(Value::as_str)?;
                    let export = federation.templates.get(uri).or_else(|| federation.resources.get(uri))?;
                    (export.owner.clone(), reference.clone())
                }
                _ => return None,
            }
        };
        let mut forwarded = params.clone();
        forwarded.insert("ref".into(), Value::Object(remote_reference));
        forwarded.remove("_meta");
        let gateway = self.clone();
        Some(Box::pin(async move {
            let answer = gateway.forward(&server, "completion/complete", Value::Object(forwarded), None).await?;
            completion_result(&answer).ok_or_else(|| {
                ToolError::Protocol(ProtocolError::Internal(format!(
                    "remote server {server} answered an invalid completion"
                )))
            })
        }))
    }

    /// Installs the completion delegate and the subscription watch (over the one installed
    /// before, which keeps every URI the gateway does not federate).
    pub(super) fn install_federation(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        self.live.update(|catalog| {
            catalog.set_completion_delegate(move |params| weak.upgrade()?.delegate_completion(params));
        });
        let previous = self.live.subscription_watch();
        self.live.set_subscription_watch(Arc::new(FederatedWatch { gateway: Arc::downgrade(self), previous }));
    }

    /// Subscribes (or unsubscribes) at the owner of `uri`, in the background.
    fn remote_subscription(self: &Arc<Self>, server: String, uri: String, subscribe: bool) {
        let method = if subscribe { "resources/subscribe" } else { "resources/unsubscribe" };
        if actix_rt::Arbiter::try_current().is_none() {
            log::warn!("gateway: no runtime to send {method} {uri} to {server}");
            return;
        }
        let gateway = self.clone();
        panics::spawn(Site::Gateway, async move {
            let mut params = Map::new();
            params.insert("uri".into(), json!(uri));
            if let Err(e) = gateway.manager.request(&server, method, params).await {
                log::warn!("gateway: {method} {uri} at {server} failed: {e}");
            }
        });
    }
}

/// The federated resources and templates, as [`owner_in`] reads them.
type View<'a> = (&'a BTreeMap<String, Export>, &'a BTreeMap<String, Export>);

/// A subscription that changes hands: unsubscribe at one remote, subscribe at another.
#[derive(Debug, PartialEq, Eq)]
struct Move {
    uri: String,
    unsubscribe: Option<String>,
    subscribe: Option<String>,
}

/// Makes each URI subscribed at a remote follow its owner `now` (subscriptions are at
/// `subscribed[uri]`, live while that remote `was_up`): a new owner is subscribed at (also the
/// same remote when it comes back up), the previous one unsubscribed from while it `is_up`. A URI
/// no remote serves stays noted at the last one, which is subscribed at again when it serves it
/// again.
fn follow_subscriptions(
    subscribed: &mut HashMap<String, String>,
    was_up: &dyn Fn(&str) -> bool,
    is_up: &dyn Fn(&str) -> bool,
    now: &dyn Fn(&str) -> Option<String>,
) -> Vec<Move> {
    let mut moves = Vec::new();
    for (uri, at) in subscribed.iter_mut() {
        let before = was_up(at).then(|| at.clone());
        let owner = now(uri);
        if owner == before {
            continue;
        }
        let unsubscribe = before.filter(|before| is_up(before));
        if let Some(owner) = &owner {
            at.clone_from(owner);
        }
        if unsubscribe.is_some() || owner.is_some() {
            moves.push(Move { uri: uri.clone(), unsubscribe, subscribe: owner });
        }
    }
    moves
}

/// The remote serving `uri` in `catalog`: its exact resource's owner, else the owner of the
/// template the catalog resolves it with (in template order), when those are federated.
fn owner_in(catalog: &Catalog, (resources, templates): View<'_>, uri: &str) -> Option<String> {
    if catalog.resource(uri).is_some() {
        return resources.get(uri).map(|e| e.owner.clone());
    }
    let template = catalog.templates().find(|t| t.definition.match_uri(uri).is_some())?;
    templates.get(&template.definition.uri_template).map(|e| e.owner.clone())
}

/// The remote's completion answer, checked and bounded (at most [`COMPLETION_VALUES`] values,
/// strings of at most 4096 bytes); `None` when it is not a completion.
fn completion_result(answer: &Value) -> Option<Map<String, Value>> {
    let completion = answer.get("completion").and_then(Value::as_object)?;
    let values = completion.get("values").and_then(Value::as_array)?;
    let kept: Vec<Value> = values
        .iter()
        .filter(|v| v.as_str().is_some_and(|s| s.len() <= 4096))
        .take(COMPLETION_VALUES)
        .cloned()
        .collect();
    let total = completion.get("total").and_then(Value::as_u64).unwrap_or(values.len() as u64);
    let has_more = completion.get("hasMore").and_then(Value::as_bool).unwrap_or(false) || values.len() > kept.len();
    let mut result = Map::new();
    result.insert("completion".into(), json!({ "values": kept, "total": total, "hasMore": has_more }));
    Some(result)
}

/// The live catalog's subscription watch while the gateway runs: federated URIs are subscribed
/// at their owner, the others passed to the watch installed before.
struct FederatedWatch {
    gateway: Weak<Gateway>,
    previous: Option<Arc<dyn SubscriptionWatch>>,
}

impl SubscriptionWatch for FederatedWatch {
    fn watch(&self, uri: &str) {
        if let Some(gateway) = self.gateway.upgrade() {
            if let Some(owner) = gateway.owner_of(uri) {
                gateway
                    .federation
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .subscribed
                    .insert(uri.to_owned(), owner.clone());
                gateway.remote_subscription(owner, uri.to_owned(), true);
                return;
            }
        }
        if let Some(previous) = &self.previous {
            previous.watch(uri);
        }
    }

    fn unwatch(&self, uri: &str) {
        if let Some(gateway) = self.gateway.upgrade() {
            let owner = gateway.federation.lock().unwrap_or_else(PoisonError::into_inner).subscribed.remove(uri);
            if let Some(owner) = owner {
                gateway.remote_subscription(owner, uri.to_owned(), false);
                return;
            }
        }
        if let Some(previous) = &self.previous {
            previous.unwatch(uri);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_remote_in_the_file_serves_a_uri_two_claim_and_the_later_one_is_told() {
        let claims = vec![
            ("docs", vec!["test://a", "test://b"]),
            ("wiki", vec!["test://b", "test://c", "test://c"]),
            ("notes", vec!["file:///README.md", "test://a"]),
        ];
        let (owner, collisions) = assign("resource", claims, &|uri| uri.starts_with("file:"));
        assert_eq!(owner.get("test://a").map(String::as_str), Some("docs"));
        assert_eq!(owner.get("test://b").map(String::as_str), Some("docs"));
        assert_eq!(
            owner.get("test://c").map(String::as_str),
            Some("wiki"),
            "a remote listing a URI twice is no collision"
        );
        assert!(!owner.contains_key("file:///README.md"), "this server's own URIs are never taken over");
        assert_eq!(
            collisions,
            vec![
                ("wiki".to_owned(), "resource test://b is served by docs".to_owned()),
                ("notes".to_owned(), "resource file:///README.md is served by this server itself".to_owned()),
                ("notes".to_owned(), "resource test://a is served by docs".to_owned()),
            ]
        );
    }

    #[test]
    fn when_the_first_claimant_is_gone_the_next_one_serves_the_uri() {
        let (owner, collisions) = assign("resource template", vec![("wiki", vec!["test://{id}"])], &|_| false);
        assert_eq!(owner.get("test://{id}").map(String::as_str), Some("wiki"));
        assert!(collisions.is_empty());
    }

    #[test]
    fn subscriptions_follow_their_uri_to_its_owner() {
        let mut subscribed: HashMap<String, String> =
            [("test://a", "docs"), ("test://b", "docs"), ("test://c", "wiki")]
                .map(|(u, o)| (u.into(), o.into()))
                .into();
        // docs went down: wiki serves test://a now; nobody serves test://b; test://c unchanged.
        let owners = |uri: &str| match uri {
            "test://a" | "test://c" => Some("wiki".to_owned()),
            _ => None,
        };
        let mut moves = follow_subscriptions(&mut subscribed, &|_| true, &|id| id == "wiki", &owners);
        moves.sort_by(|a, b| a.uri.cmp(&b.uri));
        let to = |uri: &str, unsubscribe: Option<&str>, subscribe: Option<&str>| Move {
            uri: uri.into(),
            unsubscribe: unsubscribe.map(Into::into),
            subscribe: subscribe.map(Into::into),
        };
        assert_eq!(moves, [to("test://a", None, Some("wiki"))], "a down remote is not told");
        assert_eq!(subscribed["test://a"], "wiki");
        assert_eq!(subscribed["test://b"], "docs", "kept for when docs serves it again");
        // docs is back and first in the file: it serves both again.
        let back = |uri: &str| (uri != "test://c").then(|| "docs".to_owned()).or(Some("wiki".into()));
        let mut moves = follow_subscriptions(&mut subscribed, &|id| id == "wiki", &|_| true, &back);
        moves.sort_by(|a, b| a.uri.cmp(&b.uri));
        assert_eq!(moves, [to("test://a", Some("wiki"), Some("docs")), to("test://b", None, Some("docs"))]);
    }

    fn gateway_over(ids: &[&str], live: Arc<mcpd::catalog::LiveCatalog>) -> Arc<Gateway> {
        let records = ids
            .iter()
            .map(|id| {
                let document = mcpd::client::config::ConfigDocument::parse(r#"{"url":"http://127.0.0.1:1/mcp"}"#);
                crate::client::ServerRecord::new(*id, document.unwrap())
            })
            .collect();
        let counts = Arc::new(crate::counts::ActorCounts::new());
        Gateway::new(records, live, mcpd::config::ToolFilter::from_value(None), counts)
    }

    fn claims(prefix: &str, prompts: &[&str], resources: &[&str], templates: &[&str]) -> Claims {
        Claims {
            prompts: prompts
                .iter()
                .map(|p| (export_prompt(&Prompt::new(*p, "A prompt.", Vec::new()), prefix, prefix), (*p).to_owned()))
                .collect(),
            resources: keyed(resources.iter().map(|u| Resource::new(*u, *u, "text/plain")).collect()),
            templates: keyed(templates.iter().map(|t| ResourceTemplate::new(*t, *t, "text/plain")).collect()),
            notes: Vec::new(),
        }
    }

    #[test]
    fn the_catalog_changes_only_when_what_is_federated_does() {
        let live = Arc::new(mcpd::catalog::LiveCatalog::new(Catalog::new()));
        live.update(|c| {
            c.add_resource(Resource::new("test://mine", "mine", "text/plain"), |_uri: String, _v, _c| async {
                Err(ToolError::failed("unused"))
            });
        });
        let gateway = gateway_over(&["docs", "wiki"], live.clone());
        let heard = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = heard.clone();
        live.listen(move |event| sink.lock().unwrap().push(event.clone()));
        let events = || std::mem::take(&mut *heard.lock().unwrap());

        gateway.apply_claims("docs", Some(claims("docs", &["review"], &["test://shared"], &["test://docs/{id}"])));
        gateway.apply_claims("wiki", Some(claims("wiki", &[], &["test://shared", "test://mine", "test://wiki"], &[])));
        use mcpd::catalog::CatalogEvent::{PromptsChanged, ResourcesChanged};
        assert_eq!(events(), [PromptsChanged, ResourcesChanged, ResourcesChanged], "docs', then wiki's");
        let catalog = live.snapshot();
        assert!(catalog.prompt("docs__review").is_some());
        assert_eq!(catalog.resources().count(), 3, "test://mine, test://shared, test://wiki");
        assert!(catalog.template("test://docs/{id}").is_some());
        assert_eq!(gateway.owner_of("test://shared").as_deref(), Some("docs"));
        assert_eq!(gateway.owner_of("test://docs/7").as_deref(), Some("docs"));
        assert_eq!(gateway.owner_of("test://mine"), None, "this server's own");
        let wiki = gateway.federated_counts("wiki");
        assert_eq!((wiki.prompts, wiki.resources, wiki.templates), (0, 1, 0));
        assert_eq!(
            wiki.collisions,
            ["resource test://shared is served by docs", "resource test://mine is served by this server itself"]
        );

        // The same listings again: nothing changes, nobody is told.
        gateway.apply_claims("docs", Some(claims("docs", &["review"], &["test://shared"], &["test://docs/{id}"])));
        assert_eq!(events(), [], "an unchanged listing announces nothing");

        gateway.forget_federated("docs");
        assert_eq!(gateway.owner_of("test://shared").as_deref(), Some("wiki"));
        assert!(live.snapshot().prompt("docs__review").is_none());
        assert!(gateway.federated_counts("wiki").collisions.len() == 1);
        assert_eq!(gateway.federated_counts("docs"), Counts::default());
    }

    #[test]
    fn enabled_prompts_and_resources_filter_what_is_federated() {
        let live = Arc::new(mcpd::catalog::LiveCatalog::new(Catalog::new()));
        let gateway = gateway_over(&["docs"], live.clone());
        let patterns = |p: &str| ToolFilter::from_value(Some(p));
        gateway.filter_federated(patterns("docs__keep*"), patterns("test://docs/1*, test://kept"));
        let listed = claims("docs", &["keep", "drop"], &["test://kept", "test://dropped"], &["test://docs/{id}"]);
        gateway.apply_claims("docs", Some(listed));
        let catalog = live.snapshot();
        let names: Vec<&str> = catalog.prompts().map(|p| p.definition.name.as_str()).collect();
        assert_eq!(names, ["docs__keep"]);
        let uris: Vec<&str> = catalog.resources().map(|r| r.definition.uri.as_str()).collect();
        assert_eq!(uris, ["test://kept"]);
        assert!(catalog.template("test://docs/{id}").is_some(), "a template is judged by the URIs read");
        assert_eq!(gateway.federated_counts("docs").collisions, Vec::<String>::new(), "left out is no collision");
        let refused = actix_rt::System::new().block_on(gateway.read_resource("docs", "test://docs/2".into()));
        assert_eq!(refused, Err(ToolError::Protocol(ProtocolError::ResourceNotFound { uri: "test://docs/2".into() })));
    }

    #[test]
    fn remote_completions_are_bounded_and_checked() {
        let values: Vec<Value> = (0..150).map(|i| json!(format!("v{i}"))).chain([json!(7)]).collect();
        let answer = json!({"completion": {"values": values, "total": 151}});
        let result = completion_result(&answer).unwrap();
        assert_eq!(result["completion"]["values"].as_array().unwrap().len(), 100);
        assert_eq!(result["completion"]["total"], 151);
        assert_eq!(result["completion"]["hasMore"], true);
        assert!(completion_result(&json!({"values": []})).is_none());
    }
}
