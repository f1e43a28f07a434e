//! Unprefixed names, checked before a servers file is put in force. A remote whose entry says
//! `"prefix": "never"` exports its tools and prompts under their own names, which may collide
//! with another unprefixed remote's, with this server's own tools and prompts, or fall in a
//! prefixed remote's namespace (`<prefix>__…`). At start and on every reload the unprefixed
//! remotes the file adds or changes are listed first (through a manager of their own, closed
//! after), and a file that would make a collision is refused with a message naming both sides
//! ([`collisions`]): mcpd does not start, or the configuration in force stays.
//!
//! A remote that cannot be listed then is checked when it comes up: a name another serves
//! already is left out and shown in its health (`exports`).

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError};

use mcpd::client::config::Prefixing;
use mcpd::model::{Prompt, Tool};

use super::reload::ServersDiff;
use super::servers::{prefix_for, SEPARATOR};
use super::{client_info, Gateway};
use crate::client::{ClientHandlers, ClientManager, ServerRecord};

/// What one unprefixed remote exports (or would): its tool and prompt names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Names {
    /// The remote's name in the file.
    pub(super) server: String,
    /// Its tools' names.
    pub(super) tools: Vec<String>,
    /// Its prompts' names.
    pub(super) prompts: Vec<String>,
}

/// Every collision of the unprefixed remotes' names (`unprefixed`, in file order) with each
/// other, with this server's own (`local`: its tools and prompts) and with the namespaces of the
/// prefixed remotes (`prefixes`: server and prefix), each a message naming both sides.
pub(super) fn collisions(local: &Names, unprefixed: &[Names], prefixes: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    type Of = fn(&Names) -> &[String];
    let kinds: [(&str, Of); 2] = [("tool", |n| &n.tools), ("prompt", |n| &n.prompts)];
    for (kind, names_of) in kinds {
        let mut holders: BTreeMap<&str, &str> = BTreeMap::new();
        for remote in unprefixed {
            let at = format!("server {:?} (prefix \"never\"): {kind} ", remote.server);
            for name in names_of(remote) {
                let namespace = prefixes.iter().find(|(server, prefix)| {
                    *server != remote.server
                        && name.strip_prefix(prefix.as_str()).is_some_and(|rest| rest.starts_with(SEPARATOR))
                });
                if names_of(local).contains(name) {
                    found.push(format!("{at}{name:?} collides with this server's own {kind} {name:?}"));
                } else if let Some(other) = holders.get(name.as_str()).filter(|other| **other != remote.server) {
                    found.push(format!("{at}{name:?} collides with {kind} {name:?} of server {other:?}"));
                } else if let Some((server, prefix)) = namespace {
                    found.push(format!(
                        "{at}{name:?} collides with the names of server {server:?} ({prefix}{SEPARATOR}…)"
                    ));
                } else {
                    holders.insert(name, &remote.server);
                }
            }
        }
    }
    found
}

impl Gateway {
    /// Checks the names of the unprefixed remotes a reload adds or changes (`diff`) against
    /// each other, the unprefixed remotes it keeps, this server's own tools and prompts, and the
    /// prefixed remotes' namespaces ([`collisions`]). The remotes to check are listed first.
    ///
    /// # Errors
    /// Every collision found, each naming both sides.
    pub(super) async fn check_names(&self, diff: &ServersDiff) -> Result<(), String> {
        let new: Vec<&ServerRecord> = diff.added.iter().chain(&diff.changed).collect();
        let unprefixed_new = new.iter().any(|r| r.prefix == Prefixing::Never);
        let kept: Vec<ServerRecord> = diff.unchanged.iter().filter_map(|id| self.manager.record(id)).collect();
        let kept_unprefixed = kept.iter().any(|r| r.prefix == Prefixing::Never);
        let prefixed_new = new.iter().any(|r| r.prefix == Prefixing::Always);
        if !(unprefixed_new || kept_unprefixed && prefixed_new) {
            return Ok(());
        }
        let prefixes = self.prefixes(diff, &kept, &new);
        let (local, mut by_server) = self.names_in_force(&kept);
        let candidates: Vec<ServerRecord> =
            new.iter().filter(|r| r.prefix == Prefixing::Never).map(|r| (*r).clone()).collect();
        for names in self.probe(&candidates).await {
            by_server.insert(names.server.clone(), names);
        }
        let unprefixed: Vec<Names> = diff.order.iter().filter_map(|id| by_server.remove(id)).collect();
        let found = collisions(&local, &unprefixed, &prefixes);
        match found.is_empty() {
            true => Ok(()),
            false => Err(found.join("; ")),
        }
    }

    /// Checks the names of the unprefixed remotes the gateway was made with, before their first
    /// listing (mcpd's start), as a reload's are checked: against each other, this server's own
    /// tools and prompts, and the prefixed remotes' namespaces. They are listed first.
    ///
    /// # Errors
    /// Every collision found, each naming both sides.
    pub async fn check_names_at_start(&self) -> Result<(), String> {
        let records: Vec<ServerRecord> = self.remote_ids().iter().filter_map(|id| self.manager.record(id)).collect();
        let order = records.iter().map(|r| r.id.clone()).collect();
        self.check_names(&ServersDiff { added: records, order, ..ServersDiff::default() }).await
    }

    /// The prefixes (server, prefix) of the prefixed remotes of the file read again: the ones
    /// in force keep theirs, an added one gets the first free one (as [`Gateway::apply`] gives it).
    fn prefixes(&self, diff: &ServersDiff, kept: &[ServerRecord], new: &[&ServerRecord]) -> Vec<(String, String)> {
        let remotes = self.remotes.lock().unwrap_or_else(PoisonError::into_inner);
        let mut taken: Vec<(String, String)> = remotes
            .iter()
            .filter(|r| !diff.removed.contains(&r.id))
            .map(|r| (r.id.clone(), r.prefix.clone()))
            .collect();
        for record in &diff.added {
            if taken.iter().any(|(id, _)| *id == record.id) {
                continue;
            }
            let prefix = prefix_for(&record.id, &taken.iter().map(|(_, p)| p.clone()).collect::<Vec<_>>());
            taken.push((record.id.clone(), prefix));
        }
        let prefixed = |id: &str| {
            let record = kept.iter().find(|r| r.id == id).or_else(|| new.iter().copied().find(|r| r.id == id));
            record.is_some_and(|r| r.prefix == Prefixing::Always)
        };
        taken.into_iter().filter(|(id, _)| prefixed(id)).collect()
    }

    /// This server's own tools and prompts (the catalog's, less what the gateway exports), and
    /// what each kept unprefixed remote of `kept` exports now.
    fn names_in_force(&self, kept: &[ServerRecord]) -> (Names, BTreeMap<String, Names>) {
        let catalog = self.live.snapshot();
        let exported = self.exported_tools();
        let federated = self.federated_prompts();
        let gateway_tool = |name: &str| exported.values().any(|names| names.contains(name));
        let local = Names {
            server: String::new(),
            tools: catalog.tool_names().into_iter().filter(|n| !gateway_tool(n)).collect(),
            prompts: catalog
                .prompts()
                .map(|p| p.definition.name.clone())
                .filter(|n| !federated.iter().any(|(name, _)| name == n))
                .collect(),
        };
        let mut by_server = BTreeMap::new();
        for record in kept.iter().filter(|r| r.prefix == Prefixing::Never) {
            let names = Names {
                server: record.id.clone(),
                tools: exported.get(&record.id).map(|t| t.iter().cloned().collect()).unwrap_or_default(),
                prompts: federated.iter().filter(|(_, owner)| *owner == record.id).map(|(n, _)| n.clone()).collect(),
            };
            by_server.insert(record.id.clone(), names);
        }
        (local, by_server)
    }

    /// The tool and prompt names `records` (unprefixed) would export, listed through a manager
    /// of their own (closed after); a remote that cannot be listed exports none now.
    async fn probe(&self, records: &[ServerRecord]) -> Vec<Names> {
        if records.is_empty() {
            return Vec::new();
        }
        let mut manager = ClientManager::new(ClientHandlers::default(), client_info(), self.counts.clone());
        if let Some(store) = &self.store {
            manager = manager.with_credentials(store.clone());
        }
        for record in records {
            manager.upsert(record.clone());
        }
        let manager = Arc::new(manager);
        let listed = futures_util::future::join_all(records.iter().map(|record| {
            let manager = manager.clone();
            async move {
                let tools = manager.list::<Tool>(&record.id).await;
                let prompts = manager.list::<Prompt>(&record.id).await;
                if let Err(error) = &tools {
                    log::info!("gateway: {} could not be listed before it is put in force: {error}", record.id);
                }
                let tools = tools.map(|l| l.items).unwrap_or_default();
                let prompts = prompts.map(|l| l.items).unwrap_or_default();
                Names {
                    server: record.id.clone(),
                    tools: tools.into_iter().map(|t| t.name).filter(|n| self.filter.allows(n)).collect(),
                    prompts: prompts.into_iter().map(|p| p.name).filter(|n| self.prompt_allowed(n)).collect(),
                }
            }
        }))
        .await;
        manager.close().await;
        listed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(server: &str, tools: &[&str], prompts: &[&str]) -> Names {
        let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect();
        Names { server: server.into(), tools: strings(tools), prompts: strings(prompts) }
    }

    #[test]
    fn every_collision_names_both_sides() {
        let local = names("", &["echo", "time"], &["greet"]);
        let unprefixed = [
            names("github", &["search", "echo", "docs__open"], &["review"]),
            names("gitlab", &["search", "merge"], &["greet", "review"]),
        ];
        let prefixes = [("docs".to_owned(), "docs".to_owned())];
        assert_eq!(
            collisions(&local, &unprefixed, &prefixes),
            [
                "server \"github\" (prefix \"never\"): tool \"echo\" collides with this server's own tool \"echo\"",
                "server \"github\" (prefix \"never\"): tool \"docs__open\" collides with the names of server \"docs\" (docs__…)",
                "server \"gitlab\" (prefix \"never\"): tool \"search\" collides with tool \"search\" of server \"github\"",
                "server \"gitlab\" (prefix \"never\"): prompt \"greet\" collides with this server's own prompt \"greet\"",
                "server \"gitlab\" (prefix \"never\"): prompt \"review\" collides with prompt \"review\" of server \"github\"",
            ]
        );
        let apart = [names("github", &["search", "search"], &[]), names("gitlab", &["merge", "docsx__a"], &[])];
        assert!(collisions(&local, &apart, &prefixes).is_empty(), "a remote listing a name twice is no collision");
    }
}
