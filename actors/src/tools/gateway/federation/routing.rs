//! Where each federated prompt, resource and template is served: one generic pass per kind
//! (trait [`Federated`] over `Prompt`, `Resource` and `ResourceTemplate`) that plans what the
//! catalog should hold from every remote's claims in the servers file's order ([`plan`], by
//! [`assign`]) and changes only the catalog entries whose owner or definition changed
//! ([`apply`]), so an unchanged listing announces no `list_changed`.
//!
//! A federated entry is served by its owner through [`Serve`] (the gateway's `prompts/get` and
//! `resources/read` at a remote): the routing names only those two requests, so it depends on
//! the federation's state and not on the gateway that runs it.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use mcpd::catalog::{Catalog, ResourceHandler, ToolError};
use mcpd::model::{GetPromptResult, Prompt, ReadResourceResult, Resource, ResourceTemplate};
use serde_json::{Map, Value};

use super::claims::{assign, Claim, Export, Federation, Filters, RemoteClaims};
use crate::client::Listable;

/// What answers for the federated entries in the catalog: a request at the remote that owns one.
pub(super) trait Serve: Send + Sync + 'static {
    /// `prompts/get` of the prompt `name` (its own name) at the remote `server`.
    fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Map<String, Value>,
    ) -> impl Future<Output = Result<GetPromptResult, ToolError>> + Send;

    /// `resources/read` of `uri` at the remote `server`.
    fn read_resource(
        &self,
        server: &str,
        uri: String,
    ) -> impl Future<Output = Result<ReadResourceResult, ToolError>> + Send;
}

/// What federation does with one kind of entry: where it sits in [`RemoteClaims`], [`Federation`] and
/// the catalog, and how it is served.
trait Federated: Listable + Clone + PartialEq {
    /// How messages name the kind.
    const KIND: &'static str;
    fn claimed(claims: &RemoteClaims) -> &[Claim<Self>];
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
    fn add<S: Serve>(catalog: &mut Catalog, entry: Self, gateway: Arc<S>, export: Export);
}

/// The parts of a [`Federated`] impl that only name where the kind sits: its member of
/// [`RemoteClaims`] and [`Federation`], and its catalog lookup and removal.
macro_rules! placed {
    ($member:ident, $lookup:ident, $remove:ident) => {
        fn claimed(claims: &RemoteClaims) -> &[Claim<Self>] {
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

    fn add<S: Serve>(catalog: &mut Catalog, entry: Self, gateway: Arc<S>, export: Export) {
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

    fn add<S: Serve>(catalog: &mut Catalog, entry: Self, gateway: Arc<S>, export: Export) {
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

    fn add<S: Serve>(catalog: &mut Catalog, entry: Self, gateway: Arc<S>, export: Export) {
        catalog.add_template(entry, read_at(gateway, export.owner));
    }
}

/// Reads a federated resource (or a URI of a federated template) at its remote.
fn read_at<S: Serve>(gateway: Arc<S>, server: String) -> impl ResourceHandler {
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
fn apply<T: Federated, S: Serve>(
    gateway: &Arc<S>,
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
pub(super) fn rebuild<S: Serve>(
    gateway: &Arc<S>,
    catalog: &mut Catalog,
    federation: &mut Federation,
    order: &[String],
) {
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
