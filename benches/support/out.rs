//! Where every bench writes its figures: `MCPD_BENCH_OUT`, else `$CARGO_TARGET_DIR/bench`,
//! else `target/bench` of the workspace.

use std::path::PathBuf;

/// The directory for `<bench>.json` and `<bench>.svg`.
pub(crate) fn output_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("MCPD_BENCH_OUT") {
        return PathBuf::from(dir);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("bench")
}
