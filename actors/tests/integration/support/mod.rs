//! What the test modules share: servers and clients to test against, child processes and the
//! interop peers, and bounded waiting.

pub(crate) mod arrivals;
pub(crate) mod eventually;
pub(crate) mod interop_servers;
pub(crate) mod mock_http;
pub(crate) mod process;
pub(crate) mod python;
pub(crate) mod server;
pub(crate) mod sse;

use std::path::{Path, PathBuf};

/// The workspace root, where `scripts/` lives (this crate belongs to `actors/`).
pub(crate) fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("actors/ is inside the workspace")
}

/// A script of the interop peers, `actors/tests/interop/<name>`.
pub(crate) fn interop_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop").join(name)
}
