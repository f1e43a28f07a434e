//! Federation: the remotes' prompts, resources and resource templates beside their tools.
//!
//! - **Prompts** are exported as `<prefix>__<prompt>` (the tools' prefixes and name rule);
//!   `prompts/get` goes to the remote under its own name.
//! - **Resources and templates** keep their URIs. Which remote serves a URI is decided by the
//!   [`claims::assign`] rule over every remote's last listing, in the servers file's order: an exact
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
//! bounds (`ListLimits`: pages and entries), and at most [`claims::COLLISIONS_SHOWN`] collisions
//! are shown per remote.
//!
//! This file is the gateway's side of the federation: its listings, requests and rebuilds at
//! the remotes, and the hooks it installs in the catalog (the completion delegate, the
//! subscription watch). The rules they apply are files of their own, each taking nothing from
//! this one: `claims` (the federation's state and who serves each key), `listings` (a remote's
//! listings made its claims), `routing` (the catalog's federated entries rebuilt from the
//! claims), `completions` and `subscriptions`.

use std::sync::{Arc, PoisonError, Weak};

use mcpd::catalog::{BoxFuture, SubscriptionWatch, ToolError};
use mcpd::client::list::Listing;
use mcpd::config::ToolFilter;
use mcpd::error::ProtocolError;
use mcpd::jsonrpc::ErrorCode;
use mcpd::model::{GetPromptResult, Prompt, ReadResourceResult, Resource, ResourceTemplate};
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

use super::servers::{clipped, Naming};
use super::Gateway;
use crate::client::{ClientError, Listable};
use crate::panics::{self, Site};

mod claims;
mod completions;
mod listings;
mod routing;
mod subscriptions;

pub(super) use claims::{Counts, Federation};
use claims::{Filters, RemoteClaims};
use completions::completion_result;
use routing::{rebuild, Serve};
use subscriptions::{follow_subscriptions, owner_in, Move};

/// The JSON-RPC codes a remote's errors keep here.
const METHOD_NOT_FOUND: i32 = ErrorCode::METHOD_NOT_FOUND.0;
const INVALID_PARAMS: i32 = ErrorCode::INVALID_PARAMS.0;
const RESOURCE_NOT_FOUND: i32 = ErrorCode::RESOURCE_NOT_FOUND.0;

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
    async fn list_claims(&self, id: &str, naming: &Naming) -> RemoteClaims {
        let (prompts, resources, templates) = futures_util::future::join3(
            self.list_kind::<Prompt>(id),
            self.list_kind::<Resource>(id),
            self.list_kind::<ResourceTemplate>(id),
        )
        .await;
        let claims = listings::claims_of(id, naming, prompts, resources, templates);
        for note in &claims.notes {
            log::warn!("gateway: remote {id}: {note}");
        }
        claims
    }

    /// Lists what `id` federates when it is `up` (else takes it all out) and rebuilds the
    /// catalog's federated prompts, resources and templates.
    pub(super) async fn refresh_federated(self: &Arc<Self>, id: &str, up: bool) {
        let claims = match (up, self.naming_of(id)) {
            (true, Some(naming)) => Some(self.list_claims(id, &naming).await),
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
    fn apply_claims(self: &Arc<Self>, id: &str, claims: Option<RemoteClaims>) {
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

    /// Every federated prompt (its name here) with the remote that serves it.
    pub(super) fn federated_prompts(&self) -> Vec<(String, String)> {
        let federation = self.federation.lock().unwrap_or_else(PoisonError::into_inner);
        federation.prompts.iter().map(|(name, export)| (name.clone(), export.owner.clone())).collect()
    }

    /// Whether `enabledPrompts` lets a remote's prompt be exported as `name`.
    pub(super) fn prompt_allowed(&self, name: &str) -> bool {
        self.federation.lock().unwrap_or_else(PoisonError::into_inner).filters.prompts.allows(name)
    }

    /// The federated counts of `id`.
    pub(super) fn federated_counts(&self, id: &str) -> Counts {
        self.federation.lock().unwrap_or_else(PoisonError::into_inner).counts(id)
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
        let Some(naming) = self.naming_of(id) else { return };
        let uri = &naming.exported_uri(uri);
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
        let (server, remote_reference) =
            completions::target(&self.federation.lock().unwrap_or_else(PoisonError::into_inner), reference)?;
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

    /// Subscribes (or unsubscribes) at the owner of `uri` (as exported here), in the background.
    fn remote_subscription(self: &Arc<Self>, server: String, uri: String, subscribe: bool) {
        let method = if subscribe { "resources/subscribe" } else { "resources/unsubscribe" };
        let uri = self.naming_of(&server).map_or(uri.clone(), |naming| naming.remote_uri(&uri));
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

/// The gateway serves the federated entries' requests at their owners.
impl Serve for Gateway {
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
        // A prefixed remote's `ui://` URIs are namespaced here: asked under its own, and each
        // content's URI named as here again (the text, MIME type and `_meta` as they came).
        let Some(naming) = self.naming_of(server) else {
            return Err(ToolError::Protocol(ProtocolError::ResourceNotFound { uri }));
        };
        let remote = naming.remote_uri(&uri);
        let mut read: ReadResourceResult =
            self.forward_as(server, "resources/read", json!({ "uri": remote }), Some(&uri)).await?;
        for content in &mut read.contents {
            let here = naming.exported_uri(content.uri());
            *content.uri_mut() = here;
        }
        Ok(read)
    }
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
    use mcpd::catalog::Catalog;

    use super::listings::{export_prompt, keyed};
    use super::*;
    use mcpd::client::list::Listing;

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

    fn claims(prefix: &str, prompts: &[&str], resources: &[&str], templates: &[&str]) -> RemoteClaims {
        RemoteClaims {
            prompts: prompts
                .iter()
                .map(|p| {
                    let naming = Naming::new(prefix, mcpd::client::config::Prefixing::Always);
                    (export_prompt(&Prompt::new(*p, "A prompt.", Vec::new()), &naming, prefix), (*p).to_owned())
                })
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

    /// A prefixed remote's MCP Apps `ui://` URIs (and templates) are namespaced with its prefix,
    /// and a completion of its template goes to it under its own template.
    #[test]
    fn a_prefixed_remotes_ui_uris_are_namespaced() {
        let live = Arc::new(mcpd::catalog::LiveCatalog::new(Catalog::new()));
        let gateway = gateway_over(&["docs"], live.clone());
        let naming = Naming::new("docs", mcpd::client::config::Prefixing::Always);
        let mime = "text/html;profile=mcp-app";
        let resources =
            Listing { items: vec![Resource::new("ui://app/view.html", "view", mime)], ..Listing::default() };
        let templates =
            Listing { items: vec![ResourceTemplate::new("ui://app/{page}", "page", mime)], ..Listing::default() };
        let claims = listings::claims_of("docs", &naming, Ok(None), Ok(Some(resources)), Ok(Some(templates)));
        gateway.apply_claims("docs", Some(claims));
        let catalog = live.snapshot();
        let view = catalog.resource("ui://docs__app/view.html").expect("namespaced");
        assert_eq!(view.definition.mime_type.as_deref(), Some(mime));
        assert!(catalog.resource("ui://app/view.html").is_none());
        assert!(catalog.template("ui://docs__app/{page}").is_some());
        assert_eq!(gateway.owner_of("ui://docs__app/help").as_deref(), Some("docs"));
        let reference = json!({"type": "ref/resource", "uri": "ui://docs__app/{page}"});
        let federation = gateway.federation.lock().unwrap();
        let (owner, remote) = completions::target(&federation, reference.as_object().unwrap()).unwrap();
        assert_eq!((owner.as_str(), &remote["uri"]), ("docs", &json!("ui://app/{page}")));
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
}
