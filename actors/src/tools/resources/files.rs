//! The project's files as resources: the template `file:///{+path}` that reads any file inside
//! the project (confined like the file tools), and the `resources/list` entries of a bounded,
//! ignore-file-aware set of them, taken when the server starts.
//!
//! The listing walks the project like `search_files` (the file tools' walk, through the
//! capability, honouring `.gitignore`, `.ignore` and `.git/info/exclude`), skips hidden entries
//! (a name starting with `.`) and symlinks, sorts by path and keeps the first
//! [`ResourceOptions::max_listed`] regular files with a UTF-8 path. Files created later are not
//! listed, but are readable through the template at once.

use std::io::Read;
use std::ops::ControlFlow;
use std::sync::Arc;

use cap_fs_ext::OpenOptionsSyncExt;
use cap_std::fs::OpenOptions;
use mcpd::catalog::UriVariables;
use mcpd::config::ToolFilter;
use mcpd::model::{ReadResourceResult, Resource, ResourceTemplate};
use mcpd::{Catalog, ProtocolError, ToolContext, ToolError};

use super::contents::{contents, mime_type};
use super::counts::ResourceCounts;
use super::options::ResourceOptions;
use super::uri::{decode_path, file_uri, FILE_PREFIX, FILE_TEMPLATE};
use crate::tools::files::walk::Walk;
use crate::tools::paths::{is_escape, Inside, PathError, ProjectRoot};

/// Registers the template and the listed files.
pub(super) fn register(
    catalog: &mut Catalog,
    root: &ProjectRoot,
    options: &ResourceOptions,
    filter: Arc<ToolFilter>,
    counts: &mut ResourceCounts,
) {
    let reader = Arc::new(Reader { root: root.clone(), max_bytes: options.max_read_bytes, filter: filter.clone() });
    let template = ResourceTemplate {
        uri_template: FILE_TEMPLATE.into(),
        name: "project-file".into(),
        title: Some("Project files".into()),
        description: Some(format!(
            "Any file of the project, by its path relative to the project root ({FILE_PREFIX}src/main.rs; \
             percent-encoded). Text files are text with a MIME type by extension, others a base64 blob; at most {} \
             bytes. Subscribe to hear when one changes on disk.",
            options.max_read_bytes
        )),
        mime_type: None,
        annotations: None,
    };
    let handler = {
        let reader = reader.clone();
        move |uri: String, variables: UriVariables, _context: ToolContext| {
            let reader = reader.clone();
            async move {
                let encoded =
                    variables.into_iter().find(|(name, _)| name == "path").map(|(_, v)| v).unwrap_or_default();
                let path = decode_path(&encoded).map_err(|e| ToolError::Protocol(ProtocolError::InvalidParams(e)))?;
                if !reader.filter.allows(&uri) {
                    return Err(ToolError::Protocol(ProtocolError::ResourceNotFound { uri }));
                }
                reader.read_blocking(uri, path, None).await
            }
        }
    };
    catalog.add_template(template, handler.clone());
    counts.templates = 1;
    for (relative, size) in listing(root, options) {
        let uri = file_uri(&relative);
        if !filter.allows(&uri) {
            continue;
        }
        let mut resource = Resource::named(uri, relative.clone());
        resource.mime_type = mime_type(&relative).map(str::to_owned);
        resource.size = Some(size);
        let handler = handler.clone();
        catalog.add_resource(resource, move |uri: String, _variables: UriVariables, context: ToolContext| {
            let encoded = uri.strip_prefix(FILE_PREFIX).unwrap_or_default().to_owned();
            handler(uri, vec![("path".into(), encoded)], context)
        });
        counts.files += 1;
    }
}

/// Up to `max_listed` project files (path relative to the root, size), sorted by path.
fn listing(root: &ProjectRoot, options: &ResourceOptions) -> Vec<(String, u64)> {
    let start = Inside::root();
    let walk = Walk {
        root,
        start: &start,
        filters: true,
        max_depth: options.max_walk_depth,
        max_ignore_file_bytes: options.max_read_bytes,
        skip_hidden: true,
    };
    let mut found = Vec::new();
    if options.max_listed == 0 {
        return found;
    }
    walk.run(&mut |entry| {
        if entry.file_type.is_file() {
            if let Some(relative) = entry.inside.path().to_str() {
                let size = entry.parent.symlink_metadata(entry.name).map(|m| m.len()).unwrap_or(0);
                found.push((relative.to_owned(), size));
            }
        }
        if found.len() >= options.max_listed {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    found.sort();
    found
}

/// Why a project file was not read: not there (`-32002`), not readable as asked (`-32602`:
/// outside the project, a directory…), or a failure (`-32603`).
#[derive(Debug)]
enum Refusal {
    NotFound,
    Invalid(String),
    Failed(String),
}

/// Reads project files for the template and for declared `file` resources.
#[derive(Debug)]
pub(super) struct Reader {
    pub(super) root: ProjectRoot,
    pub(super) max_bytes: u64,
    pub(super) filter: Arc<ToolFilter>,
}

impl Reader {
    /// Reads the project file `path` as the resource `uri` (of type `mime`, else by its
    /// extension), on the blocking pool.
    pub(super) async fn read_blocking(
        self: Arc<Self>,
        uri: String,
        path: String,
        mime: Option<String>,
    ) -> Result<ReadResourceResult, ToolError> {
        let read_uri = uri.clone();
        let outcome = actix_web::rt::task::spawn_blocking(move || self.read(&read_uri, &path, mime.as_deref())).await;
        match outcome {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(Refusal::NotFound)) => Err(ToolError::Protocol(ProtocolError::ResourceNotFound { uri })),
            Ok(Err(Refusal::Invalid(message))) => Err(ToolError::Protocol(ProtocolError::InvalidParams(message))),
            Ok(Err(Refusal::Failed(message))) => Err(ToolError::Failed(message)),
            Err(e) => Err(ToolError::failed(format!("the file task failed: {e}"))),
        }
    }

    /// Reads the project file `path` (judged like the file tools) as the resource `uri`.
    fn read(&self, uri: &str, path: &str, mime: Option<&str>) -> Result<ReadResourceResult, Refusal> {
        let refused = |e: PathError| match e {
            PathError::NotFound { .. } => Refusal::NotFound,
            other => Refusal::Invalid(other.to_string()),
        };
        let inside = self.root.existing(path).map_err(refused)?;
        let shown = inside.shown();
        let io_error = |e: std::io::Error| {
            if is_escape(&e) {
                refused(PathError::Outside { path: path.to_owned() })
            } else if e.kind() == std::io::ErrorKind::NotFound {
                Refusal::NotFound
            } else {
                Refusal::Failed(format!("cannot read {shown:?}: {e}"))
            }
        };
        let check = |meta: &cap_std::fs::Metadata| {
            if meta.is_dir() {
                Err(Refusal::Invalid(format!("{shown:?} is a directory")))
            } else if !meta.is_file() {
                Err(Refusal::Invalid(format!("{shown:?} is not a regular file")))
            } else if meta.len() > self.max_bytes {
                Err(Refusal::Failed(format!(
                    "{shown:?} is {} bytes, over the resource limit of {} bytes",
                    meta.len(),
                    self.max_bytes
                )))
            } else {
                Ok(())
            }
        };
        let dir = self.root.dir();
        check(&dir.metadata(inside.path()).map_err(io_error)?)?;
        // Non-blocking: a FIFO swapped in after the check does not block; checked again on the
        // handle, which is what is read.
        let file = dir.open_with(inside.path(), OpenOptions::new().read(true).nonblock(true)).map_err(io_error)?;
        let meta = file.metadata().map_err(io_error)?;
        check(&meta)?;
        self.root.refuse_opened(path, &meta).map_err(refused)?;
        let mut bytes = Vec::new();
        file.into_std().take(self.max_bytes + 1).read_to_end(&mut bytes).map_err(io_error)?;
        if bytes.len() as u64 > self.max_bytes {
            return Err(Refusal::Failed(format!(
                "{shown:?} grew over the resource limit of {} bytes while it was read",
                self.max_bytes
            )));
        }
        Ok(contents(uri, mime.or_else(|| mime_type(&shown)), bytes))
    }
}
