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
//!   what it exports (the live catalog then tells this server's clients); its
//!   `resources/updated` for a URI it serves (or that was subscribed at it) becomes
//!   `notifications/resources/updated` for the subscribers here.
//! - **Subscriptions**: the first subscriber of a federated URI here subscribes at its owner
//!   (`resources/subscribe`), the last one leaving unsubscribes; other URIs go to the watch
//!   that was installed before (the project files' `FileWatch`).
//!
//! A remote that does not offer a kind (`-32601` to its list) exports none of it; a listing
//! that fails otherwise leaves that kind out and says why in the remote's `skipped`. Down
//! remotes export nothing (retried with their tools). Listings follow the client's rules and
//! bounds (`ListLimits`: pages and entries), and at most [`COLLISIONS_SHOWN`] collisions are
//! shown per remote.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, PoisonError, Weak};

use mcpd::catalog::{BoxFuture, Catalog, SubscriptionWatch, ToolError};
use mcpd::client::list::check_tool_name;
use mcpd::error::ProtocolError;
use mcpd::model::{GetPromptResult, Prompt, ReadResourceResult, Resource, ResourceTemplate};
use serde_json::{json, Map, Value};

use super::{shown, Gateway, SEPARATOR, SKIPPED_SHOWN};
use crate::client::{ClientError, Listing};
use crate::panics::{self, Site};

/// How many collisions a remote's health lists.
pub const COLLISIONS_SHOWN: usize = 10;

/// The JSON-RPC code of a method the remote does not have.
const METHOD_NOT_FOUND: i32 = -32601;

/// What one remote last listed (prompts as exported, with their remote names).
#[derive(Debug, Default, Clone)]
pub(super) struct Claims {
    prompts: Vec<(Prompt, String)>,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
    /// What its listings skipped or why a listing failed.
    notes: Vec<String>,
}

/// What the gateway federates now.
#[derive(Debug, Default)]
pub(super) struct Federation {
    /// Each up remote's last listing.
    claims: HashMap<String, Claims>,
    /// Exported prompt name → (remote id, the remote's name).
    prompts: HashMap<String, (String, String)>,
    /// Resource URI → remote id (what is in the catalog).
    resources: HashMap<String, String>,
    /// Template → remote id (what is in the catalog), in template order.
    templates: BTreeMap<String, String>,
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

/// Who serves each key (URI or template), by the first-in-file rule, and the collisions:
/// `claims` in the servers file's order (remote id, the keys it claims); a key `local` holds is
/// never assigned. Returns key → remote id and, per remote, its collision messages.
pub fn assign<'a>(
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

/// A remote's JSON-RPC error as this server's: invalid params and unknown resources keep their
/// meaning; anything else is an internal error naming the remote.
fn protocol_error(server: &str, error: ClientError, uri: Option<&str>) -> ToolError {
    match (&error, uri) {
        (ClientError::Rpc { code: -32602, message, .. }, _) => ToolError::Protocol(ProtocolError::InvalidParams(
            format!("remote server {server}: {}", shown_message(message)),
        )),
        (ClientError::Rpc { code: -32002, .. }, Some(uri)) => {
            ToolError::Protocol(ProtocolError::ResourceNotFound { uri: uri.to_owned() })
        }
        _ => ToolError::Protocol(ProtocolError::Internal(format!("remote server {server} failed: {error}"))),
    }
}

/// A remote's message as this server repeats it: at most 500 characters.
fn shown_message(message: &str) -> String {
    match message.char_indices().nth(500) {
        Some((cut, _)) => format!("{}…", message.get(..cut).unwrap_or_default()),
        None => message.to_owned(),
    }
}

impl Gateway {
    /// Lists one kind at a remote: `None` when it does not offer it.
    async fn list_kind<T: crate::client::Listable>(&self, id: &str) -> Result<Option<Listing<T>>, ClientError> {
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
        let (prompts, resources, templates) = futures_util::join!(
            self.list_kind::<Prompt>(id),
            self.list_kind::<Resource>(id),
            self.list_kind::<ResourceTemplate>(id)
        );
        let mut claims = Claims::default();
        let mut note = |notes: &mut Vec<String>, text: String| {
            if notes.len() < SKIPPED_SHOWN {
                notes.push(text);
            }
        };
        match prompts {
            Ok(listing) => {
                for prompt in listing.iter().flat_map(|l| l.items.iter()) {
                    let mut exported = prompt.clone();
                    exported.name = format!("{prefix}{SEPARATOR}{}", prompt.name);
                    match check_tool_name(&exported.name) {
                        Ok(()) => claims.prompts.push((exported, prompt.name.clone())),
                        Err(reason) => note(
                            &mut claims.notes,
                            format!("prompt exported as {:?}: {reason}", shown(&exported.name)),
                        ),
                    }
                }
                for skipped in listing.iter().flat_map(|l| l.skipped.iter()) {
                    note(&mut claims.notes, format!("prompt: {skipped}"));
                }
            }
            Err(e) => note(&mut claims.notes, format!("prompts/list failed: {e}")),
        }
        match resources {
            Ok(listing) => {
                claims.resources = listing.as_ref().map(|l| l.items.clone()).unwrap_or_default();
                for skipped in listing.iter().flat_map(|l| l.skipped.iter()) {
                    note(&mut claims.notes, format!("resource: {skipped}"));
                }
            }
            Err(e) => note(&mut claims.notes, format!("resources/list failed: {e}")),
        }
        match templates {
            Ok(listing) => {
                claims.templates = listing.as_ref().map(|l| l.items.clone()).unwrap_or_default();
                for skipped in listing.iter().flat_map(|l| l.skipped.iter()) {
                    note(&mut claims.notes, format!("resource template: {skipped}"));
                }
            }
            Err(e) => note(&mut claims.notes, format!("resources/templates/list failed: {e}")),
        }
        for note in &claims.notes {
            log::warn!("gateway: remote {id}: {note}");
        }
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

    /// Replaces `id`'s claims (`None`: it is down or gone) and rebuilds the federated part of
    /// the catalog.
    pub(super) fn apply_claims(self: &Arc<Self>, id: &str, claims: Option<Claims>) {
        let order: Vec<String> = self.remote_ids();
        let mut federation = self.federation.lock().unwrap_or_else(PoisonError::into_inner);
        match claims {
            Some(claims) => federation.claims.insert(id.to_owned(), claims),
            None => federation.claims.remove(id),
        };
        federation.claims.retain(|id, _| order.contains(id));
        let gateway = self.clone();
        let federation = &mut *federation;
        self.live.update(|catalog| rebuild(&gateway, catalog, federation, &order));
        for (id, messages) in &federation.collisions {
            for message in messages {
                log::warn!("gateway: remote {id}: {message}");
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
        Counts {
            prompts: federation.prompts.values().filter(|(owner, _)| owner == id).count(),
            resources: federation.resources.values().filter(|owner| *owner == id).count(),
            templates: federation.templates.values().filter(|owner| *owner == id).count(),
            collisions,
            notes: federation.claims.get(id).map(|c| c.notes.clone()).unwrap_or_default(),
        }
    }

    /// The remote serving `uri`: an exact resource, else the first federated template that
    /// matches it (in template order, as the catalog resolves).
    fn owner_of(&self, uri: &str) -> Option<String> {
        let federation = self.federation.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(owner) = federation.resources.get(uri) {
            return Some(owner.clone());
        }
        let catalog = self.live.snapshot();
        if catalog.resource(uri).is_some() {
            return None;
        }
        federation.templates.iter().find_map(|(template, owner)| {
            catalog.template(template).and_then(|entry| entry.definition.match_uri(uri)).map(|_| owner.clone())
        })
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

    async fn get_prompt(&self, server: &str, name: &str, arguments: Map<String, Value>) -> Result<GetPromptResult, ToolError> {
        let params = json!({ "name": name, "arguments": arguments });
        let answer = self.forward(server, "prompts/get", params, None).await?;
        serde_json::from_value(answer).map_err(|e| {
            ToolError::Protocol(ProtocolError::Internal(format!("remote server {server} answered an invalid prompt: {e}")))
        })
    }

    async fn read_resource(&self, server: &str, uri: String) -> Result<ReadResourceResult, ToolError> {
        let answer = self.forward(server, "resources/read", json!({ "uri": uri }), Some(&uri)).await?;
        serde_json::from_value(answer).map_err(|e| {
            ToolError::Protocol(ProtocolError::Internal(format!("remote server {server} answered an invalid resource: {e}")))
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
                self.mark_up(server);
                if let Value::Object(answer) = &mut answer {
                    // The remote's own bookkeeping is not this server's answer.
                    answer.remove("resultType");
                }
                Ok(answer)
            }
            Err(error) => {
                if !matches!(error, ClientError::Rpc { .. }) {
                    self.mark_down(server, &error);
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
                    let (server, remote_name) = federation.prompts.get(name)?;
                    let mut remote_reference = reference.clone();
                    remote_reference.insert("name".into(), json!(remote_name));
                    (server.clone(), remote_reference)
                }
                "ref/resource" => {
                    let uri = reference.get("uri").and_then(Value::as_str)?;
                    let server = federation.templates.get(uri).or_else(|| federation.resources.get(uri))?;
                    (server.clone(), reference.clone())
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
            Ok(completion_result(&server, &answer)?)
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
        if tokio::runtime::Handle::try_current().is_err() {
            log::warn!("gateway: no runtime to forward a subscription to {uri}");
            return;
        }
        let gateway = self.clone();
        panics::spawn(Site::Gateway, async move {
            let method = if subscribe { "resources/subscribe" } else { "resources/unsubscribe" };
            let mut params = Map::new();
            params.insert("uri".into(), json!(uri));
            if let Err(e) = gateway.manager.request(&server, method, params).await {
                log::warn!("gateway: {method} {uri} at {server} failed: {e}");
            }
        });
    }
}

/// The remote's completion answer, checked and bounded (at most 100 values, strings only).
fn completion_result(server: &str, answer: &Value) -> Result<Map<String, Value>, ToolError> {
    let invalid = || {
        ToolError::Protocol(ProtocolError::Internal(format!("remote server {server} answered an invalid completion")))
    };
    let completion = answer.get("completion").and_then(Value::as_object).ok_or_else(invalid)?;
    let values = completion.get("values").and_then(Value::as_array).ok_or_else(invalid)?;
    let mut kept: Vec<Value> = values.iter().filter(|v| v.is_string()).take(100).cloned().collect();
    kept.retain(|v| v.as_str().is_some_and(|s| s.len() <= 4096));
    let total = completion.get("total").and_then(Value::as_u64).unwrap_or(values.len() as u64);
    let has_more = completion.get("hasMore").and_then(Value::as_bool).unwrap_or(false) || values.len() > kept.len();
    let mut result = Map::new();
    result.insert("completion".into(), json!({ "values": kept, "total": total, "hasMore": has_more }));
    Ok(result)
}

/// Rebuilds the federated prompts, resources and templates in `catalog` from every remote's
/// claims, in the servers file's `order`.
fn rebuild(gateway: &Arc<Gateway>, catalog: &mut Catalog, federation: &mut Federation, order: &[String]) {
    for name in federation.prompts.keys() {
        catalog.remove_prompt(name);
    }
    for uri in federation.resources.keys() {
        catalog.remove_resource(uri);
    }
    for template in federation.templates.keys() {
        catalog.remove_template(template);
    }
    federation.prompts.clear();
    federation.collisions.clear();
    let claims: Vec<(&str, &Claims)> =
        order.iter().filter_map(|id| federation.claims.get(id).map(|c| (id.as_str(), c))).collect();
    for (id, claims) in &claims {
        for (prompt, remote_name) in &claims.prompts {
            if catalog.prompt(&prompt.name).is_some() {
                continue;
            }
            federation.prompts.insert(prompt.name.clone(), ((*id).to_owned(), remote_name.clone()));
            let (gateway, server, remote_name) = (gateway.clone(), (*id).to_owned(), remote_name.clone());
            catalog.add_prompt(prompt.clone(), move |arguments: Map<String, Value>, _ctx| {
                let (gateway, server, remote_name) = (gateway.clone(), server.clone(), remote_name.clone());
                async move { gateway.get_prompt(&server, &remote_name, arguments).await }
            });
        }
    }
    let (resources, resource_collisions) = assign(
        "resource",
        claims.iter().map(|(id, c)| (*id, c.resources.iter().map(|r| r.uri.as_str()).collect())),
        &|uri| catalog.resource(uri).is_some(),
    );
    let (templates, template_collisions) = assign(
        "resource template",
        claims.iter().map(|(id, c)| (*id, c.templates.iter().map(|t| t.uri_template.as_str()).collect())),
        &|template| catalog.template(template).is_some(),
    );
    for (id, message) in resource_collisions.into_iter().chain(template_collisions) {
        federation.collisions.entry(id).or_default().push(message);
    }
    for (id, claims) in &claims {
        for resource in &claims.resources {
            if resources.get(&resource.uri).is_some_and(|owner| owner == id) && catalog.resource(&resource.uri).is_none() {
                let (gateway, server) = (gateway.clone(), (*id).to_owned());
                catalog.add_resource(resource.clone(), move |uri: String, _vars, _ctx| {
                    let (gateway, server) = (gateway.clone(), server.clone());
                    async move { gateway.read_resource(&server, uri).await }
                });
            }
        }
        for template in &claims.templates {
            let owned = templates.get(&template.uri_template).is_some_and(|owner| owner == id);
            if owned && catalog.template(&template.uri_template).is_none() {
                let (gateway, server) = (gateway.clone(), (*id).to_owned());
                catalog.add_template(template.clone(), move |uri: String, _vars, _ctx| {
                    let (gateway, server) = (gateway.clone(), server.clone());
                    async move { gateway.read_resource(&server, uri).await }
                });
            }
        }
    }
    federation.resources = resources.into_iter().collect();
    federation.templates = templates;
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
        assert_eq!(owner.get("test://c").map(String::as_str), Some("wiki"), "a remote listing a URI twice is no collision");
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
    fn remote_completions_are_bounded_and_checked() {
        let values: Vec<Value> = (0..150).map(|i| json!(format!("v{i}"))).chain([json!(7)]).collect();
        let answer = json!({"completion": {"values": values, "total": 151}});
        let result = completion_result("docs", &answer).unwrap();
        assert_eq!(result["completion"]["values"].as_array().unwrap().len(), 100);
        assert_eq!(result["completion"]["total"], 151);
        assert_eq!(result["completion"]["hasMore"], true);
        assert!(completion_result("docs", &json!({"values": []})).is_err());
    }
}
