//! The virtual servers in force (`virtualServers` of the servers file): each a view of the
//! catalog ([`mcpd::server::view::View`]) served at `/mcp/<name>`. The HTTP edge looks a
//! request's endpoint up here ([`VirtualServers::get`]) and hands the view to the screen inside
//! the request's access; a reload of the servers file replaces the views whole
//! ([`VirtualServers::replace`]).

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};

use mcpd::server::view::View;
use serde_json::Value;

/// The virtual servers by name, swapped whole on reload.
#[derive(Debug, Default)]
pub struct VirtualServers {
    views: RwLock<Arc<BTreeMap<String, Arc<View>>>>,
}

impl VirtualServers {
    /// The registry of `views`.
    pub fn new(views: Vec<View>) -> Self {
        let registry = VirtualServers::default();
        registry.replace(views);
        registry
    }

    /// The virtual server `name`, when there is one.
    pub fn get(&self, name: &str) -> Option<Arc<View>> {
        self.current().get(name).cloned()
    }

    /// Puts `views` in force (a view configured exactly as before keeps its projection).
    /// Returns the names of the views added, removed and changed.
    pub fn replace(&self, views: Vec<View>) -> Vec<String> {
        let before = self.current();
        let mut changed = Vec::new();
        let mut next = BTreeMap::new();
        for view in views {
            let name = view.name().to_owned();
            match before.get(&name) {
                Some(kept) if **kept == view => {
                    next.insert(name, kept.clone());
                }
                _ => {
                    changed.push(name.clone());
                    next.insert(name, Arc::new(view));
                }
            }
        }
        changed.extend(before.keys().filter(|name| !next.contains_key(*name)).cloned());
        *self.views.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
        changed
    }

    /// Every name, in order.
    pub fn names(&self) -> Vec<String> {
        self.current().keys().cloned().collect()
    }

    /// The status JSON's `virtualServers`: each one's endpoint, patterns and renames.
    pub fn status_json(&self) -> Value {
        Value::Array(self.current().values().map(|view| view.to_json()).collect())
    }

    fn current(&self) -> Arc<BTreeMap<String, Arc<View>>> {
        self.views.read().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn views(document: serde_json::Value) -> Vec<View> {
        mcpd::server::view::parse_views(Some(&document)).unwrap()
    }

    #[test]
    fn a_replacement_keeps_unchanged_views_and_names_the_others() {
        let registry = VirtualServers::new(views(serde_json::json!({"a": {"tools": ["x"]}, "b": {"tools": ["y"]}})));
        let a = registry.get("a").unwrap();
        let changed = registry.replace(views(serde_json::json!({"a": {"tools": ["x"]}, "c": {"prompts": ["p"]}})));
        assert_eq!(changed, ["c", "b"]);
        assert!(Arc::ptr_eq(&registry.get("a").unwrap(), &a), "unchanged: the same view");
        assert!(registry.get("b").is_none());
        assert_eq!(registry.names(), ["a", "c"]);
        assert_eq!(registry.status_json()[1]["endpoint"], "/mcp/c");
    }
}
