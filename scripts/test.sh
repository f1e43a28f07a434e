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
cargo test --workspace
