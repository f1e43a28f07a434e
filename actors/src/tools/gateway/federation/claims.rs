//! What the remotes claim and who serves each key: a remote's last listings ([`RemoteClaims`]), the
//! federation's state ([`Federation`]: the filters, every remote's claims, what the catalog
//! holds and for whom, the subscriptions made at remotes, the collisions), and the rule that
//! gives each key (URI, template or prompt name) one owner ([`assign`]).
//!
//! This is the state and the rule every other part of the federation reads — the listings fill
//! it, the routing rebuilds the catalog from it, completions and subscriptions look owners up in
//! it — so it sits in a file of its own that imports none of theirs.

use std::collections::{BTreeMap, HashMap};

use mcpd::config::ToolFilter;
use mcpd::model::{Prompt, Resource, ResourceTemplate};

use crate::tools::gateway::servers::shown;

/// How many collisions a remote's health lists.
pub(super) const COLLISIONS_SHOWN: usize = 10;

/// One entry a remote offers: as this server exports it, and its key at the remote (a prompt's
/// own name; a resource's URI or a template's string, which are kept).
pub(super) type Claim<T> = (T, String);

/// What one remote last listed.
#[derive(Debug, Default, Clone)]
pub(super) struct RemoteClaims {
    pub(super) prompts: Vec<Claim<Prompt>>,
    pub(super) resources: Vec<Claim<Resource>>,
    pub(super) templates: Vec<Claim<ResourceTemplate>>,
    /// What its listings skipped or why a listing failed (the first
    /// [`SKIPPED_SHOWN`](crate::tools::gateway::SKIPPED_SHOWN)).
    pub(super) notes: Vec<String>,
}

/// Who serves an exported entry: the remote's id and the entry's key there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Export {
    pub(super) owner: String,
    pub(super) remote: String,
}

/// `enabledPrompts` and `enabledResources`, applied to what the remotes offer as to this
/// server's own: a prompt by its exported name, a resource by its URI (listed or read through a
/// template).
#[derive(Debug)]
pub(super) struct Filters {
    pub(super) prompts: ToolFilter,
    pub(super) resources: ToolFilter,
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
pub(crate) struct Federation {
    /// What may be exported.
    pub(super) filters: Filters,
    /// Each up remote's last listing.
    pub(super) claims: HashMap<String, RemoteClaims>,
    /// Exported prompt name → who serves it (what is in the catalog).
    pub(super) prompts: BTreeMap<String, Export>,
    /// Resource URI → who serves it (what is in the catalog).
    pub(super) resources: BTreeMap<String, Export>,
    /// Template → who serves it (what is in the catalog), in template order.
    pub(super) templates: BTreeMap<String, Export>,
    /// URIs subscribed at a remote → its id.
    pub(super) subscribed: HashMap<String, String>,
    /// Collisions per remote id.
    pub(super) collisions: HashMap<String, Vec<String>>,
}

/// One remote's federated counts, for its health.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) prompts: usize,
    pub(crate) resources: usize,
    pub(crate) templates: usize,
    pub(crate) collisions: Vec<String>,
    pub(crate) notes: Vec<String>,
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

impl Federation {
    /// The federated counts of the remote `id`.
    pub(super) fn counts(&self, id: &str) -> Counts {
        let mut collisions = self.collisions.get(id).cloned().unwrap_or_default();
        if collisions.len() > COLLISIONS_SHOWN {
            let more = collisions.len() - COLLISIONS_SHOWN;
            collisions.truncate(COLLISIONS_SHOWN);
            collisions.push(format!("… and {more} more"));
        }
        let owned = |exports: &BTreeMap<String, Export>| exports.values().filter(|e| e.owner == id).count();
        Counts {
            prompts: owned(&self.prompts),
            resources: owned(&self.resources),
            templates: owned(&self.templates),
            collisions,
            notes: self.claims.get(id).map(|c| c.notes.clone()).unwrap_or_default(),
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
}
