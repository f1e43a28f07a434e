//! Resources `mcpd serve` offers: the project's files through the template `file:///{+path}`
//! (`files.rs`), a listing of them, subscriptions backed by file watching (`watch.rs`), and the
//! resources declared in the declarations file (`declared.rs`).
//!
//! **The URI scheme.** A project file's URI is `file:///` followed by its path **relative to the
//! project root**, `/`-separated, each byte other than `A-Z a-z 0-9 - . _ ~ /` percent-encoded
//! (UTF-8): `src/main.rs` is `file:///src/main.rs`, `docs/a b.md` is `file:///docs/a%20b.md`.
//! The template `file:///{+path}` matches any such URI; reading percent-decodes the path (it must
//! be UTF-8) and judges it exactly like the file tools ([`ProjectRoot::existing`]): `..` above the
//! root, an absolute path (`file:////etc/passwd`) or a symlink leading out are refused with the
//! file tools' message (`"../x" is outside the project directory`, `-32602`); a missing file is
//! `-32002` (resource not found). The file is then opened through the root's capability.
//!
//! **Contents.** A file that is UTF-8 without a NUL byte, and whose MIME type (from its
//! extension, [`mime_type`]) is not a binary kind, is `text` with that MIME type (`text/plain`
//! when the extension is unknown); anything else is a base64 `blob` (`application/octet-stream`
//! when unknown). Files over [`ResourceOptions::max_read_bytes`] are refused.

mod contents;
mod counts;
mod declared;
mod files;
mod options;
mod uri;
mod watch;

use std::sync::Arc;

use mcpd::catalog::LiveCatalog;
use mcpd::config::ToolFilter;
use mcpd::Catalog;

use super::commands::CommandOptions;
use super::paths::ProjectRoot;

pub use contents::mime_type;
pub use counts::ResourceCounts;
pub use declared::{check_declared, DeclaredResource, Source, DEFAULT_TIMEOUT, MAX_TIMEOUT};
pub use options::ResourceOptions;
pub use uri::{decode_path, file_uri, FILE_PREFIX, FILE_TEMPLATE};
pub use watch::FileWatch;

/// Adds the resources to `catalog`: the project files (template and listing) when
/// `options.files`, and the declared resources; `filter` (`enabledResources`) keeps the URIs it
/// matches (also when a file is read through the template). Returns what it registered, and
/// the file watch to install on the live catalog ([`install_watch`]) for subscriptions.
pub fn register(
    catalog: &mut Catalog,
    root: &ProjectRoot,
    options: &ResourceOptions,
    commands: &CommandOptions,
    declared: Vec<DeclaredResource>,
    filter: &ToolFilter,
) -> (ResourceCounts, Arc<FileWatch>) {
    let mut counts = ResourceCounts::default();
    let filter = Arc::new(filter.clone());
    let declared: Vec<DeclaredResource> = declared.into_iter().filter(|r| filter.allows(&r.uri)).collect();
    let watched_files: Vec<(String, String)> = declared
        .iter()
        .filter_map(|r| match &r.source {
            Source::File(path) => Some((r.uri.clone(), path.clone())),
            _ => None,
        })
        .collect();
    if options.files {
        files::register(catalog, root, options, filter.clone(), &mut counts);
    }
    counts.declared = declared.len();
    declared::register(catalog, root, options, commands, declared);
    let watch = Arc::new(FileWatch::new(root.clone(), options, watched_files));
    (counts, watch)
}

/// Removes from `live` the listed project files that `root`'s deny set covers now (one of
/// mcpd's own files named by a reloaded configuration): what is never served is never listed.
/// Returns how many it removed (clients hear `resources/list_changed` when any).
pub fn forget_denied(live: &LiveCatalog, root: &ProjectRoot) -> usize {
    let denied: Vec<String> = live
        .snapshot()
        .resources()
        .map(|entry| &entry.definition.uri)
        .filter(|uri| {
            let path = uri.strip_prefix(FILE_PREFIX).and_then(|encoded| decode_path(encoded).ok());
            path.is_some_and(|path| matches!(root.existing(&path), Err(super::paths::PathError::Denied { .. })))
        })
        .cloned()
        .collect();
    if !denied.is_empty() {
        live.update(|catalog| {
            for uri in &denied {
                catalog.remove_resource(uri);
            }
        });
    }
    denied.len()
}

/// Makes `watch` hear the subscriptions of `live` and announce file changes through it.
pub fn install_watch(live: &Arc<LiveCatalog>, watch: &Arc<FileWatch>) {
    watch.attach(live);
    live.set_subscription_watch(watch.clone());
}
