//! The catalog while the server runs: [`LiveCatalog`] hands out snapshots, replaces them on a
//! change and tells its listeners which lists changed ([`CatalogEvent`]); it also counts the
//! subscribers of each resource URI for a [`SubscriptionWatch`].

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::entries::Catalog;

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
    use crate::model::{CallToolResult, Tool};
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
