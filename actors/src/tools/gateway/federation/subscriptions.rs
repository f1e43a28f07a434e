//! Subscriptions that follow their URI: a federated URI is subscribed at the remote that serves
//! it, and when the owner changes (it went down, another remote serves the URI now) the
//! subscription moves with it ([`follow_subscriptions`]); [`owner_in`] says which remote serves
//! a URI, an exact resource's or the template's the catalog resolves it with.
//!
//! These are the rules alone, over the federation's maps and the catalog; the gateway's
//! subscription watch and its rebuilds apply them and send the requests they call for.

use std::collections::{BTreeMap, HashMap};

use mcpd::catalog::Catalog;

use super::claims::Export;

/// The federated resources and templates, as [`owner_in`] reads them.
pub(super) type View<'a> = (&'a BTreeMap<String, Export>, &'a BTreeMap<String, Export>);

/// A subscription that changes hands: unsubscribe at one remote, subscribe at another.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Move {
    pub(super) uri: String,
    pub(super) unsubscribe: Option<String>,
    pub(super) subscribe: Option<String>,
}

/// Makes each URI subscribed at a remote follow its owner `now` (subscriptions are at
/// `subscribed[uri]`, live while that remote `was_up`): a new owner is subscribed at (also the
/// same remote when it comes back up), the previous one unsubscribed from while it `is_up`. A URI
/// no remote serves stays noted at the last one, which is subscribed at again when it serves it
/// again.
pub(super) fn follow_subscriptions(
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
pub(super) fn owner_in(catalog: &Catalog, (resources, templates): View<'_>, uri: &str) -> Option<String> {
    if catalog.resource(uri).is_some() {
        return resources.get(uri).map(|e| e.owner.clone());
    }
    let template = catalog.templates().find(|t| t.definition.match_uri(uri).is_some())?;
    templates.get(&template.definition.uri_template).map(|e| e.owner.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
