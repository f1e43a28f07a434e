//! The catalog's lists one page at a time (`tools/list`, `prompts/list`, `resources/list`,
//! `resources/templates/list`): the entries a caller sees, in key order, after a cursor's key.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::entries::Catalog;
use crate::model::{Prompt, Resource, ResourceTemplate, Tool};

impl Catalog {
    /// One page of the tools `keep` keeps (a caller's view), starting after the key `after`.
    pub(crate) fn tool_page(&self, after: Option<&str>, size: usize, keep: Keep<'_>) -> Page<Tool> {
        page(&self.tools, after, size, keep, |e| e.definition.clone())
    }

    /// One page of the prompts `keep` keeps, after `after`.
    pub(crate) fn prompt_page(&self, after: Option<&str>, size: usize, keep: Keep<'_>) -> Page<Prompt> {
        page(&self.prompts, after, size, keep, |e| e.definition.clone())
    }

    /// One page of the resources `keep` keeps (by URI), after `after`.
    pub(crate) fn resource_page(&self, after: Option<&str>, size: usize, keep: Keep<'_>) -> Page<Resource> {
        page(&self.resources, after, size, keep, |e| e.definition.clone())
    }

    /// One page of the templates `keep` keeps (by URI template), after `after`.
    pub(crate) fn template_page(&self, after: Option<&str>, size: usize, keep: Keep<'_>) -> Page<ResourceTemplate> {
        page(&self.templates, after, size, keep, |e| e.definition.clone())
    }
}

/// Which entries of a list a caller sees, by key (name, URI or URI template).
pub(crate) type Keep<'a> = &'a dyn Fn(&str) -> bool;

/// One page of a list: its items and, when more remain, the key to continue after.
pub(crate) type Page<T> = (Vec<Arc<T>>, Option<String>);

/// Takes up to `size` entries after the key `after`; the second value is the key to continue
/// after, when more remain.
fn page<E, T>(
    map: &BTreeMap<String, E>,
    after: Option<&str>,
    size: usize,
    keep: Keep<'_>,
    f: impl Fn(&E) -> T,
) -> (Vec<T>, Option<String>) {
    use std::ops::Bound;
    let lower = match after {
        Some(key) => Bound::Excluded(key),
        None => Bound::Unbounded,
    };
    let mut iter = map.range::<str, _>((lower, Bound::Unbounded)).filter(|(k, _)| keep(k));
    let items: Vec<(&String, &E)> = iter.by_ref().take(size.max(1)).collect();
    let next = if iter.next().is_some() { items.last().map(|(k, _)| (*k).clone()) } else { None };
    (items.into_iter().map(|(_, e)| f(e)).collect(), next)
}
