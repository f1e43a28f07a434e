#!/usr/bin/env bash
# The project's test command (README "Run the tests"; .ci/run runs exactly this).
# Provisions the independent interop peers (the official Python MCP SDK, pinned), then checks
# formatting and lints and runs every test of both crates.
set -euo pipefail
cd "$(dirname "$0")/.."

MCPD_TEST_PYTHON="$(bash scripts/setup-python.sh | tail -n 1)"
export MCPD_TEST_PYTHON

cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
mkdir -p target
cargo test --workspace 2>&1 | tee target/test-output.log
# One closing line for the whole run (cargo prints one summary per test binary).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i) ~ /^passed;?$/) p += $(i-1); if ($(i) ~ /^failed;?$/) f += $(i-1); if ($(i) ~ /^ignored;?$/) s += $(i-1) } }
     END { printf "%d passed, %d failed, %d skipped\n", p, f, s }' target/test-output.log
