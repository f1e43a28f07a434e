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

mod declared;
mod files;
mod watch;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mcpd::catalog::LiveCatalog;
use mcpd::config::ToolFilter;
use mcpd::model::{ReadResourceResult, ResourceContents};
use mcpd::Catalog;
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use super::commands::CommandOptions;
use super::paths::ProjectRoot;

pub use declared::{check_declared, DeclaredResource, Source, DEFAULT_TIMEOUT, MAX_TIMEOUT};
pub use watch::FileWatch;

/// The template of project files.
pub const FILE_TEMPLATE: &str = "file:///{+path}";
/// What a project file's URI starts with.
pub const FILE_PREFIX: &str = "file:///";

/// What stays as it is in a project file URI's path: `A-Z a-z 0-9 - . _ ~ /`.
const PATH_KEEP: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~').remove(b'/');

/// Limits and switches of the resources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceOptions {
    /// Offer the project's files (the template, the listing, subscriptions).
    pub files: bool,
    /// The largest file (or command output) a read returns.
    pub max_read_bytes: u64,
    /// How many project files `resources/list` shows at most.
    pub max_listed: usize,
    /// How many directories deep the listing goes.
    pub max_walk_depth: usize,
    /// How many resources are watched at once for subscribers (further ones are not watched).
    pub max_watched: usize,
    /// Changes to one file within this time are announced once, at its end.
    pub debounce: Duration,
}

impl Default for ResourceOptions {
    fn default() -> Self {
        ResourceOptions {
            files: true,
            max_read_bytes: 1024 * 1024,
            max_listed: 1000,
            max_walk_depth: 16,
            max_watched: 256,
            debounce: Duration::from_millis(200),
        }
    }
}

/// The URI of a project-relative path (see the module documentation).
pub fn file_uri(relative: &str) -> String {
    format!("{FILE_PREFIX}{}", utf8_percent_encode(relative, PATH_KEEP))
}

/// The project-relative path a `file:///` URI's path part names, percent-decoded.
///
/// # Errors
/// When it is not UTF-8 once decoded.
pub fn decode_path(encoded: &str) -> Result<String, String> {
    percent_decode_str(encoded)
        .decode_utf8()
        .map(|p| p.into_owned())
        .map_err(|_| format!("{encoded:?} is not a valid path: it is not UTF-8 once percent-decoded"))
}

/// The MIME type of a file name by its extension (a small table of what projects hold; a
/// crate's database of hundreds of types would add nothing a client uses here).
pub fn mime_type(name: &str) -> Option<&'static str> {
    let ext = Path::new(name).extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "txt" | "text" | "log" => "text/plain",
        "md" | "markdown" => "text/markdown",
        "rs" => "text/x-rust",
        "py" => "text/x-python",
        "c" | "h" => "text/x-c",
        "cc" | "cpp" | "hpp" | "cxx" => "text/x-c++",
        "go" => "text/x-go",
        "java" => "text/x-java",
        "kt" => "text/x-kotlin",
        "rb" => "text/x-ruby",
        "sh" | "bash" => "text/x-shellscript",
        "js" | "mjs" | "cjs" => "text/javascript",
        "ts" | "tsx" => "text/x-typescript",
        "css" => "text/css",
        "html" | "htm" => "text/html",
        "csv" => "text/csv",
        "xml" => "application/xml",
        "json" => "application/json",
        "toml" => "application/toml",
        "yaml" | "yml" => "application/yaml",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" => "application/gzip",
        "tar" => "application/x-tar",
        "wasm" => "application/wasm",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "mp4" => "video/mp4",
        "woff2" => "font/woff2",
        _ => return None,
    })
}

/// Whether contents of this MIME type are always sent as a blob.
fn binary_kind(mime: &str) -> bool {
    !mime.ends_with("+xml")
        && (["image/", "audio/", "video/", "font/"].iter().any(|p| mime.starts_with(p))
            || matches!(
                mime,
                "application/pdf"
                    | "application/zip"
                    | "application/gzip"
                    | "application/x-tar"
                    | "application/wasm"
                    | "application/octet-stream"
            ))
}

/// The contents of `bytes` read at `uri`: text when it is text (see the module documentation),
/// else a base64 blob. `mime` is the declared or guessed type.
pub(crate) fn contents(uri: &str, mime: Option<&str>, bytes: Vec<u8>) -> ReadResourceResult {
    use base64::Engine as _;
    let binary = mime.is_some_and(binary_kind) || bytes.contains(&0);
    let content = match (binary, String::from_utf8(bytes)) {
        (false, Ok(text)) => ResourceContents::text(uri, mime.unwrap_or("text/plain"), text),
        (_, Ok(text)) => ResourceContents::blob(
            uri,
            mime.unwrap_or("application/octet-stream"),
            base64::engine::general_purpose::STANDARD.encode(text.as_bytes()),
        ),
        (_, Err(e)) => ResourceContents::blob(
            uri,
            mime.unwrap_or("application/octet-stream"),
            base64::engine::general_purpose::STANDARD.encode(e.as_bytes()),
        ),
    };
    ReadResourceResult { contents: vec![content] }
}

/// The resources registered, per kind (after the filter), for the status and metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResourceCounts {
    /// Project files listed by `resources/list`.
    pub files: usize,
    /// Resource templates (the project files' one).
    pub templates: usize,
    /// Declared resources.
    pub declared: usize,
}

/// Adds the resources to `catalog`: the project files (template and listing) when
/// `options.files`, and the declared resources; `filter` (`enabledResources`) keeps the URIs it
/// matches (also when a file is read through the template). Returns what it registered, and
/// the file watch to install on the live catalog ([`FileWatch::install`]) for subscriptions.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_uris_and_back() {
        assert_eq!(file_uri("src/main.rs"), "file:///src/main.rs");
        assert_eq!(file_uri("docs/a b%.md"), "file:///docs/a%20b%25.md");
        assert_eq!(file_uri("ü/x~y"), "file:///%C3%BC/x~y");
        assert_eq!(decode_path("docs/a%20b%25.md").unwrap(), "docs/a b%.md");
        assert_eq!(decode_path("%2e%2e/x").unwrap(), "../x");
        assert!(decode_path("%ff").is_err());
    }

    #[test]
    fn text_is_text_and_the_rest_a_blob() {
        let text = contents("file:///a.md", mime_type("a.md"), b"# hi".to_vec());
        assert!(
            matches!(&text.contents[0], ResourceContents::Text { mime_type: Some(m), text, .. } if m == "text/markdown" && text == "# hi")
        );
        let png = contents("file:///a.png", mime_type("a.PNG"), b"abc".to_vec());
        assert!(
            matches!(&png.contents[0], ResourceContents::Blob { mime_type: Some(m), blob, .. } if m == "image/png" && blob == "YWJj")
        );
        let nul = contents("file:///x", None, vec![b'a', 0]);
        assert!(
            matches!(&nul.contents[0], ResourceContents::Blob { mime_type: Some(m), .. } if m == "application/octet-stream")
        );
        let svg = contents("file:///a.svg", mime_type("a.svg"), b"<svg/>".to_vec());
        assert!(matches!(&svg.contents[0], ResourceContents::Text { .. }));
    }
}
