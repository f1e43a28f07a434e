//! [`FileStore`]: the [`CredentialStore`] of people and of the gateway — one JSON file,
//! `$XDG_CONFIG_HOME/mcpd/credentials.json` (else `$HOME/.config/mcpd/credentials.json`) unless
//! `--credentials FILE` moves it.
//!
//! # The file
//!
//! `{"mcpdCredentials": 1, "entries": [Credentials, …]}`, one entry per (resource, issuer).
//! Created with mode `0600` (its directory `0700` when missing) and replaced atomically: the new
//! content goes to a temporary file in the same directory, opened `0600` from the start, which
//! is then renamed over the old one, so a reader sees the old file or the new one, never half of
//! either. A file that is not JSON, is JSON of another shape, or is larger than the limit
//! (default [`MAX_CREDENTIALS_FILE_BYTES`]) is an exact error naming the file, and is never
//! overwritten. Errors name the file and where the JSON breaks, never its content.
//!
//! # Several processes
//!
//! Every save and remove re-reads the file just before writing it and changes only its own
//! entries, so processes sharing the file (a gateway, `mcpd call`, `mcpd login`) keep each
//! other's entries; when two write the same (resource, issuer), the last writer wins. Two
//! writes in the same instant may still lose the other's change (there is no lock across
//! processes); within one process writes are serialized.
//!
//! Nothing read from the file is ever logged.

use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::{CredentialStore, Credentials};

/// The largest credentials file read or written, in bytes (1 MiB: thousands of entries).
pub const MAX_CREDENTIALS_FILE_BYTES: u64 = 1024 * 1024;

/// The format version this mcpd reads and writes.
const FORMAT: u32 = 1;

/// The file as stored.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Document {
    /// The format marker and version.
    mcpd_credentials: u32,
    entries: Vec<Credentials>,
}

/// Credentials in one JSON file (see the module docs).
#[derive(Debug)]
pub struct FileStore {
    path: PathBuf,
    max_bytes: u64,
    /// Serializes this process's read-modify-write cycles.
    writing: Mutex<()>,
}

/// The default credentials file from the environment's values of `XDG_CONFIG_HOME` and `HOME`:
/// `$XDG_CONFIG_HOME/mcpd/credentials.json` when that is an absolute path (the XDG rule), else
/// `$HOME/.config/mcpd/credentials.json`; `None` when neither is usable.
pub fn default_credentials_path(xdg_config_home: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    let config = match xdg_config_home.filter(|p| p.is_absolute()) {
        Some(xdg) => xdg.to_path_buf(),
        None => home.filter(|p| p.is_absolute())?.join(".config"),
    };
    Some(config.join("mcpd").join("credentials.json"))
}

impl FileStore {
    /// A store in `path`. Nothing is read or created until it is used.
    pub fn new(path: impl Into<PathBuf>) -> FileStore {
        FileStore { path: path.into(), max_bytes: MAX_CREDENTIALS_FILE_BYTES, writing: Mutex::new(()) }
    }

    /// The same, with another size limit.
    pub fn with_max_bytes(self, max_bytes: u64) -> FileStore {
        FileStore { max_bytes, ..self }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every entry in the file (none when it does not exist).
    ///
    /// # Errors
    /// The file cannot be read, is too large, or is not an mcpd credentials file.
    pub fn entries(&self) -> Result<Vec<Credentials>, String> {
        self.read()
    }

    fn read(&self) -> Result<Vec<Credentials>, String> {
        let shown = self.path.display();
        let file = match fs::File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(format!("cannot read the credentials file {shown}: {e}")),
        };
        let mut bytes = Vec::new();
        file.take(self.max_bytes + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read the credentials file {shown}: {e}"))?;
        if bytes.len() as u64 > self.max_bytes {
            return Err(format!(
                "the credentials file {shown} is larger than {} bytes: it is not one mcpd wrote; move it away or use --credentials FILE",
                self.max_bytes
            ));
        }
        let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "the credentials file {shown} is corrupt (not JSON: the error is at line {} column {}); fix or remove it",
                e.line(),
                e.column()
            )
        })?;
        let foreign = || {
            format!(
                "{shown} is not an mcpd credentials file (expected {{\"mcpdCredentials\": {FORMAT}, \"entries\": [...]}}); move it away or use --credentials FILE"
            )
        };
        match value.get("mcpdCredentials").and_then(serde_json::Value::as_u64) {
            Some(version) if version == u64::from(FORMAT) => {}
            Some(version) => {
                return Err(format!(
                    "the credentials file {shown} has format {version}, this mcpd reads format {FORMAT}"
                ))
            }
            None => return Err(foreign()),
        }
        // Data errors are reported by position only: serde's messages may quote values.
        let document: Document = serde_json::from_value(value).map_err(|_| foreign())?;
        Ok(document.entries)
    }

    /// Replaces the file with `entries`, atomically (see the module docs).
    fn write(&self, entries: Vec<Credentials>) -> Result<(), String> {
        let shown = self.path.display();
        let document = Document { mcpd_credentials: FORMAT, entries };
        let mut bytes = serde_json::to_vec_pretty(&document).map_err(|e| format!("cannot encode credentials: {e}"))?;
        bytes.push(b'\n');
        if bytes.len() as u64 > self.max_bytes {
            return Err(format!(
                "the credentials file {shown} would be larger than {} bytes; run mcpd logout for servers you no longer use",
                self.max_bytes
            ));
        }
        let parent = match self.path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !parent.exists() {
            create_private_dir(&parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        let name = self.path.file_name().and_then(|n| n.to_str()).unwrap_or("credentials.json");
        let temp = parent.join(format!(".{name}.{}.{}.tmp", std::process::id(), nonce()));
        let written = write_private(&temp, &bytes).and_then(|()| fs::rename(&temp, &self.path));
        if let Err(e) = written {
            let _ = fs::remove_file(&temp);
            return Err(format!("cannot write the credentials file {shown}: {e}"));
        }
        Ok(())
    }

    /// Reads, changes and writes the file under this process's lock.
    fn update<T>(&self, change: impl FnOnce(&mut Vec<Credentials>) -> (T, bool)) -> Result<T, String> {
        let _writing = self.writing.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut entries = self.read()?;
        let (outcome, changed) = change(&mut entries);
        if changed {
            self.write(entries)?;
        }
        Ok(outcome)
    }
}

impl CredentialStore for FileStore {
    fn load(&self, resource: &str, issuer: &str) -> Option<Credentials> {
        match self.read() {
            Ok(entries) => entries.into_iter().find(|c| c.resource == resource && c.issuer == issuer),
            Err(e) => {
                // The message names the file and a position, never its content.
                log::error!("{e}");
                None
            }
        }
    }

    fn save(&self, credentials: &Credentials) -> Result<(), String> {
        self.update(|entries| {
            match entries.iter_mut().find(|c| c.resource == credentials.resource && c.issuer == credentials.issuer) {
                Some(held) => *held = credentials.clone(),
                None => entries.push(credentials.clone()),
            }
            ((), true)
        })
    }

    fn remove(&self, resource: &str) -> Result<usize, String> {
        self.update(|entries| {
            let before = entries.len();
            entries.retain(|c| c.resource != resource);
            let removed = before - entries.len();
            (removed, removed > 0)
        })
    }
}

/// Creates `dir` (and missing parents) with mode 0700.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Writes `bytes` to the new file `path`, created with mode 0600, and flushes it to disk.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// A random number for temporary file names (another writer's name never collides).
fn nonce() -> u64 {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    u64::from_le_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_path_follows_xdg_then_home() {
        let xdg = Path::new("/x/config");
        let home = Path::new("/home/u");
        assert_eq!(
            default_credentials_path(Some(xdg), Some(home)),
            Some(PathBuf::from("/x/config/mcpd/credentials.json"))
        );
        assert_eq!(
            default_credentials_path(None, Some(home)),
            Some(PathBuf::from("/home/u/.config/mcpd/credentials.json"))
        );
        assert_eq!(
            default_credentials_path(Some(Path::new("relative")), Some(home)),
            Some(PathBuf::from("/home/u/.config/mcpd/credentials.json")),
            "a relative XDG_CONFIG_HOME is ignored"
        );
        assert_eq!(default_credentials_path(None, None), None);
        assert_eq!(default_credentials_path(None, Some(Path::new(""))), None);
    }

    #[test]
    fn a_missing_file_is_empty_and_is_not_created_by_reading_or_removing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("credentials.json");
        let store = FileStore::new(&path);
        assert_eq!(store.load("https://r/mcp", "https://as"), None);
        assert_eq!(store.remove("https://r/mcp"), Ok(0));
        assert!(!path.exists() && !path.parent().unwrap().exists());
    }

    #[test]
    fn format_errors_name_the_file_and_never_its_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        let store = FileStore::new(&path);
        let shown = path.display();
        fs::write(&path, r#"{"mcpdCredentials": 2, "entries": []}"#).unwrap();
        assert_eq!(
            store.entries().unwrap_err(),
            format!("the credentials file {shown} has format 2, this mcpd reads format 1")
        );
        fs::write(&path, r#"{"mcpdCredentials": 1, "entries": [{"resource": "secret-ish"}]}"#).unwrap();
        let message = store.entries().unwrap_err();
        assert!(message.starts_with(&format!("{shown} is not an mcpd credentials file")), "{message}");
        assert!(!message.contains("secret-ish"), "{message}");
    }
}
