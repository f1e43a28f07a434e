//! A remote's listings made its claims: its prompts exported as `<prefix>__<name>` (marked with
//! the server's name, checked against the tool name rule), its resources and templates under
//! their own URIs (a prefixed remote's MCP Apps `ui://` ones namespaced like its names), and
//! what each listing skipped — or why it failed — noted for its health (the first
//! [`SKIPPED_SHOWN`]).
//!
//! The listings themselves are the gateway's requests; what they are turned into is a rule of
//! its own, kept here apart from them and from what the claims then decide.

use mcpd::client::list::{check_tool_name, Listed, Listing};
use mcpd::model::{Prompt, Resource, ResourceTemplate};

use super::claims::RemoteClaims;
use crate::client::ClientError;
use crate::tools::gateway::health::SKIPPED_SHOWN;
use crate::tools::gateway::servers::{marked, shown, Naming};

/// One listing at a remote: its entries, `None` when the remote does not offer the kind, or why
/// it failed.
pub(super) type ListOutcome<T> = Result<Option<Listing<T>>, ClientError>;

/// What a remote claims from its listings of prompts, resources and templates (`id` its name,
/// `naming` how what it exports is named).
pub(super) fn claims_of(
    id: &str,
    naming: &Naming,
    prompts: ListOutcome<Prompt>,
    resources: ListOutcome<Resource>,
    templates: ListOutcome<ResourceTemplate>,
) -> RemoteClaims {
    let mut notes = Vec::new();
    let mut claims = RemoteClaims::default();
    for prompt in entries(prompts, "prompt", &mut notes) {
        let exported = export_prompt(&prompt, naming, id);
        match check_tool_name(&exported.name) {
            Ok(()) => claims.prompts.push((exported, prompt.name)),
            Err(reason) => note(&mut notes, format!("prompt exported as {:?}: {reason}", shown(&exported.name))),
        }
    }
    claims.resources = entries(resources, "resource", &mut notes)
        .into_iter()
        .map(|mut resource| {
            let key = std::mem::take(&mut resource.uri);
            resource.uri = naming.exported_uri(&key);
            (resource, key)
        })
        .collect();
    claims.templates = entries(templates, "resource template", &mut notes)
        .into_iter()
        .map(|mut template| {
            let key = std::mem::take(&mut template.uri_template);
            template.uri_template = naming.exported_uri(&key);
            (template, key)
        })
        .collect();
    claims.notes = notes;
    claims
}

/// Adds `text` to `notes` unless [`SKIPPED_SHOWN`] are there already.
fn note(notes: &mut Vec<String>, text: String) {
    if notes.len() < SKIPPED_SHOWN {
        notes.push(text);
    }
}

/// The entries of one listing (none when the remote does not offer the kind, or the listing
/// failed), with what it skipped, or why it failed, noted.
fn entries<T: Listed>(listed: Result<Option<Listing<T>>, ClientError>, kind: &str, notes: &mut Vec<String>) -> Vec<T> {
    match listed {
        Ok(listing) => {
            let listing = listing.unwrap_or_default();
            for skipped in &listing.skipped {
                note(notes, format!("{kind}: {skipped}"));
            }
            listing.items
        }
        Err(e) => {
            note(notes, format!("{} failed: {e}", T::METHOD));
            Vec::new()
        }
    }
}

/// Entries whose key is kept as it is at the remote (resources, templates).
#[cfg(test)]
pub(super) fn keyed<T: Listed>(items: Vec<T>) -> Vec<super::claims::Claim<T>> {
    items
        .into_iter()
        .map(|entry| {
            let key = entry.key().to_owned();
            (entry, key)
        })
        .collect()
}

/// A remote's prompt as this server exports it: `<prefix>__<name>` (or its own name, unprefixed),
/// its description marked with the server's name (as its tools' are).
pub(super) fn export_prompt(prompt: &Prompt, naming: &Naming, server: &str) -> Prompt {
    let mut exported = prompt.clone();
    exported.name = naming.exported(&prompt.name);
    exported.description = Some(marked(server, prompt.description.as_deref()));
    exported
}
