//! A remote's tools in the catalog: listed ([`Gateway::refresh`]), named as its entry says
//! (behind its prefix, or as they are), and taken out again when it relists or leaves
//! ([`Gateway::forget_tools`]). The gateway remembers which tools each remote put in the catalog,
//! so an unprefixed remote's tools are found without a prefix.
//!
//! Once the servers file is in force a name is served by one owner: a tool an unprefixed remote
//! lists under a name that another remote, or this server itself, serves already is left out and
//! shown under its `collisions` (a servers file that would make such a collision is refused
//! before it is put in force: `names`).

use std::collections::BTreeSet;
use std::sync::{Arc, PoisonError};

use mcpd::client::list::check_tool_name;
use mcpd::context::ToolContext;
use serde_json::{Map, Value};

use super::health::SKIPPED_SHOWN;
use super::servers::{export, shown, SEPARATOR};
use super::{Gateway, Lane};
use crate::client::{ClientError, ToolName};
use crate::panics::{self, Site};

impl Gateway {
    /// Fetches one remote's tools and replaces its exported tools, then what it federates
    /// (prompts, resources, templates; taken out when it is down). Entries the listing skipped,
    /// and tools whose exported name would break the tool name rules, are left out and shown in
    /// the remote's health, as are tools whose name another already serves.
    pub async fn refresh(self: &Arc<Self>, id: &str) {
        let Some(naming) = self.naming_of(id) else { return };
        let outcome = panics::contain(Site::Gateway, self.manager.refresh_tools(id))
            .await
            .unwrap_or_else(|panic| Err(ClientError::from(panic)));
        // A reload replaced or removed the remote meanwhile: this listing is of the old one (the
        // new configuration is listed by its own refresh).
        if matches!(outcome, Err(ClientError::ConfigChanged)) || self.naming_of(id).as_ref() != Some(&naming) {
            return;
        }
        let (mut skipped, mut skipped_count) = (Vec::new(), 0);
        // Each tool as exported, with its name at the remote.
        let mut exported = Vec::new();
        if let Ok(listing) = &outcome {
            skipped.extend(listing.skipped.iter().take(SKIPPED_SHOWN).map(ToString::to_string));
            skipped_count = listing.skipped_count;
            for tool in &listing.items {
                let exported_tool = export(tool, &naming, id);
                match check_tool_name(&exported_tool.name) {
                    Ok(()) if self.filter.allows(&exported_tool.name) => {
                        exported.push((exported_tool, tool.name.clone()))
                    }
                    Ok(()) => {}
                    Err(reason) => {
                        log::warn!("gateway: not exporting a tool of {id}: {reason}");
                        skipped_count += 1;
                        if skipped.len() < SKIPPED_SHOWN {
                            skipped.push(format!("tool exported as {:?}: {reason}", shown(&exported_tool.name)));
                        }
                    }
                }
            }
        }
        let mut collisions = Vec::new();
        let mut count = 0;
        let gateway = self.clone();
        self.live.update(|catalog| {
            let mut owners = self.exported.lock().unwrap_or_else(PoisonError::into_inner);
            for name in owners.remove(id).unwrap_or_default() {
                catalog.remove_tool(&name);
            }
            let mut mine = BTreeSet::new();
            for (tool, remote_name) in exported {
                if catalog.tool(&tool.name).is_some() || mine.contains(&tool.name) {
                    let holder = owners.iter().find(|(_, names)| names.contains(&tool.name)).map(|(other, _)| other);
                    let by = holder.map_or_else(|| "this server itself".to_owned(), Clone::clone);
                    if collisions.len() < SKIPPED_SHOWN {
                        collisions.push(format!("tool {} is served by {by}", shown(&tool.name)));
                    }
                    continue;
                }
                mine.insert(tool.name.clone());
                // The server's id and the tool's remote name, shared by every call (no copies).
                let names = Arc::new((id.to_owned(), remote_name));
                let lane =
                    ToolName::new(&names.1).map(|tool| Lane { gateway: gateway.clone(), server: Arc::from(id), tool });
                let gateway = gateway.clone();
                let handler = move |arguments: Map<String, Value>, ctx: ToolContext| {
                    let (gateway, names) = (gateway.clone(), names.clone());
                    async move { gateway.call(&names.0, &names.1, arguments, ctx).await }
                };
                match lane {
                    Some(lane) => catalog.add_tool_with_lane(tool, handler, lane),
                    None => catalog.add_tool(tool, handler),
                };
            }
            count = mine.len();
            owners.insert(id.to_owned(), mine);
        });
        for collision in &collisions {
            log::warn!("gateway: remote {id}: {collision}; left out");
        }
        if skipped_count > skipped.len() {
            skipped.push(format!("… and {} more", skipped_count - skipped.len()));
        }
        self.health.set(id, outcome.as_ref().map(|_| count).map_err(ToString::to_string), skipped);
        self.health.set_collisions(id, collisions);
        if let Err(e) = &outcome {
            log::warn!("gateway: remote {id} is down: {e}");
        }
        self.refresh_federated(id, outcome.is_ok()).await;
    }

    /// Takes the tools of the remote `id` out of the catalog: those it exported, and (when its
    /// names were prefixed with `prefix`) any other name in its namespace no other remote holds.
    pub(super) fn forget_tools(&self, id: &str, prefix: Option<&str>) {
        let namespace = prefix.map(|prefix| format!("{prefix}{SEPARATOR}"));
        self.live.update(|catalog| {
            let mut owners = self.exported.lock().unwrap_or_else(PoisonError::into_inner);
            for name in owners.remove(id).unwrap_or_default() {
                catalog.remove_tool(&name);
            }
            let Some(namespace) = namespace else { return };
            let held = |name: &str| owners.values().any(|names| names.contains(name));
            for name in catalog.tool_names().into_iter().filter(|n| n.starts_with(&namespace) && !held(n)) {
                catalog.remove_tool(&name);
            }
        });
    }

    /// Every tool a remote exports now, by remote id.
    pub(super) fn exported_tools(&self) -> std::collections::HashMap<String, BTreeSet<String>> {
        self.exported.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}
