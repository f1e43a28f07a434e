//! What a client wants to hear about catalog changes, and the notification that tells it: the
//! one mapping from a [`CatalogEvent`] to `notifications/*/list_changed` or
//! `notifications/resources/updated`, shared by sessions, stdio and `subscriptions/listen`.

use serde_json::{json, Map, Value};

use super::method::{uri_param, Method};
use crate::catalog::{CatalogEvent, LiveCatalog};
use crate::error::ProtocolError;

/// A notification announcing a catalog change: its method, and its params (none for a list
/// change).
pub type Announcement = (&'static str, Option<Map<String, Value>>);

/// The catalog changes one client hears about.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Interest {
    tools: bool,
    prompts: bool,
    resources: bool,
    /// Subscribed resource URIs, in the order asked (a listen acknowledgement repeats them).
    uris: Vec<String>,
}

/// A change to a client's resource subscriptions (`resources/subscribe`,
/// `resources/unsubscribe`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subscription {
    /// Hear about this URI's updates.
    Subscribe(String),
    /// Stop hearing about them.
    Unsubscribe(String),
}

impl Subscription {
    /// The change a `resources/subscribe` or `resources/unsubscribe` request asks for; `None`
    /// for other methods.
    ///
    /// # Errors
    /// `-32602` when the request has no string `uri`.
    pub fn requested(method: Method, params: Option<&Map<String, Value>>) -> Option<Result<Self, ProtocolError>> {
        let change: fn(String) -> Subscription = match method {
            Method::Subscribe => Subscription::Subscribe,
            Method::Unsubscribe => Subscription::Unsubscribe,
            _ => return None,
        };
        let name = method.wire_name().unwrap_or_default();
        Some(
            uri_param(params)
                .map(|uri| change(uri.to_owned()))
                .ok_or_else(|| ProtocolError::InvalidParams(format!("{name} needs a string uri"))),
        )
    }
}

impl Interest {
    /// A connection's interest (a session, stdio): every list change, and the resources it
    /// subscribes to.
    pub fn every_list() -> Self {
        Interest { tools: true, prompts: true, resources: true, uris: Vec::new() }
    }

    /// The filter a `subscriptions/listen` request asked for: `notifications:
    /// {toolsListChanged, promptsListChanged, resourcesListChanged, resourceSubscriptions}`.
    pub fn listen(params: Option<&Map<String, Value>>) -> Self {
        let wanted = params.and_then(|p| p.get("notifications")).and_then(Value::as_object);
        let flag = |name: &str| wanted.and_then(|w| w.get(name)).and_then(Value::as_bool).unwrap_or(false);
        let uris = wanted
            .and_then(|w| w.get("resourceSubscriptions"))
            .and_then(Value::as_array)
            .map(|uris| uris.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        Interest {
            tools: flag("toolsListChanged"),
            prompts: flag("promptsListChanged"),
            resources: flag("resourcesListChanged"),
            uris,
        }
    }

    /// The filter as a listen acknowledgement states it (mcpd honours every standard kind).
    pub fn honoured(&self) -> Value {
        let mut honoured = Map::new();
        for (on, key) in [
            (self.tools, "toolsListChanged"),
            (self.prompts, "promptsListChanged"),
            (self.resources, "resourcesListChanged"),
        ] {
            if on {
                honoured.insert(key.into(), json!(true));
            }
        }
        if !self.uris.is_empty() {
            honoured.insert("resourceSubscriptions".into(), json!(self.uris));
        }
        Value::Object(honoured)
    }

    /// Applies a subscription change; true when it changed anything (a new URI, or one
    /// removed), which is when the catalog's subscriber counts must hear of it
    /// ([`crate::catalog::LiveCatalog::subscribed`]).
    pub fn apply(&mut self, change: Subscription) -> bool {
        match change {
            Subscription::Subscribe(uri) if !self.uris.contains(&uri) => {
                self.uris.push(uri);
                true
            }
            Subscription::Subscribe(_) => false,
            Subscription::Unsubscribe(uri) => {
                let before = self.uris.len();
                self.uris.retain(|u| *u != uri);
                self.uris.len() != before
            }
        }
    }

    /// Applies a subscription change and, when it changed anything, tells `catalog`'s
    /// subscriber counts (what transports call).
    pub fn apply_counted(&mut self, change: Subscription, catalog: &LiveCatalog) {
        let (uri, subscribe) = match &change {
            Subscription::Subscribe(uri) => (uri.clone(), true),
            Subscription::Unsubscribe(uri) => (uri.clone(), false),
        };
        if self.apply(change) {
            if subscribe {
                catalog.subscribed(&uri);
            } else {
                catalog.unsubscribed(&uri);
            }
        }
    }

    /// Releases every subscription of a client that goes away from `catalog`'s counts.
    pub fn release(&self, catalog: &LiveCatalog) {
        for uri in &self.uris {
            catalog.unsubscribed(uri);
        }
    }

    /// Counts every subscription of a new listener (`subscriptions/listen`) in `catalog`.
    pub fn hold(&self, catalog: &LiveCatalog) {
        for uri in &self.uris {
            catalog.subscribed(uri);
        }
    }

    /// This interest without the list changes whose `[tools, prompts, resources]` flag is
    /// false and without the URIs `keep` refuses ([`super::screen::Screen::interest`]).
    pub(super) fn narrowed(mut self, kinds: [bool; 3], keep: impl Fn(&str) -> bool) -> Interest {
        let [tools, prompts, resources] = kinds;
        self.tools &= tools;
        self.prompts &= prompts;
        self.resources &= resources;
        self.uris.retain(|uri| keep(uri));
        self
    }

    /// The subscribed resource URIs (to release them when the client goes away).
    pub fn uris(&self) -> &[String] {
        &self.uris
    }

    /// The notification announcing `event` to this client, if it wants to hear it.
    pub fn announcement(&self, event: &CatalogEvent) -> Option<Announcement> {
        match event {
            CatalogEvent::ToolsChanged if self.tools => Some(("notifications/tools/list_changed", None)),
            CatalogEvent::PromptsChanged if self.prompts => Some(("notifications/prompts/list_changed", None)),
            CatalogEvent::ResourcesChanged if self.resources => Some(("notifications/resources/list_changed", None)),
            CatalogEvent::ResourceUpdated(uri) if self.uris.contains(uri) => {
                let mut params = Map::new();
                params.insert("uri".into(), json!(uri));
                Some(("notifications/resources/updated", Some(params)))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_hear_every_list_change_and_only_their_subscribed_resources() {
        let mut interest = Interest::every_list();
        assert_eq!(
            interest.announcement(&CatalogEvent::ToolsChanged),
            Some(("notifications/tools/list_changed", None))
        );
        let updated = CatalogEvent::ResourceUpdated("test://a".into());
        assert_eq!(interest.announcement(&updated), None);
        assert!(interest.apply(Subscription::Subscribe("test://a".into())));
        assert!(!interest.apply(Subscription::Subscribe("test://a".into())));
        assert_eq!(interest.uris(), ["test://a".to_owned()]);
        let (method, params) = interest.announcement(&updated).expect("subscribed");
        assert_eq!(method, "notifications/resources/updated");
        assert_eq!(params.unwrap()["uri"], "test://a");
        assert!(interest.apply(Subscription::Unsubscribe("test://a".into())));
        assert!(!interest.apply(Subscription::Unsubscribe("test://a".into())));
        assert_eq!(interest.announcement(&updated), None);
    }

    #[test]
    fn a_listen_filter_hears_only_what_it_asked_for_and_states_it() {
        let params = json!({"notifications": {"promptsListChanged": true, "resourceSubscriptions": ["test://b"]}});
        let interest = Interest::listen(params.as_object());
        assert_eq!(interest.announcement(&CatalogEvent::ToolsChanged), None);
        assert!(interest.announcement(&CatalogEvent::PromptsChanged).is_some());
        assert!(interest.announcement(&CatalogEvent::ResourceUpdated("test://b".into())).is_some());
        assert_eq!(interest.honoured(), json!({"promptsListChanged": true, "resourceSubscriptions": ["test://b"]}));
    }

    #[test]
    fn subscription_requests_need_a_string_uri() {
        let params = json!({"uri": "test://c"});
        assert_eq!(
            Subscription::requested(Method::Subscribe, params.as_object()),
            Some(Ok(Subscription::Subscribe("test://c".into())))
        );
        let err = Subscription::requested(Method::Unsubscribe, None).unwrap().unwrap_err();
        assert_eq!(err, ProtocolError::InvalidParams("resources/unsubscribe needs a string uri".into()));
        assert_eq!(Subscription::requested(Method::ToolsCall, None), None);
    }
}
