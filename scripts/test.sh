#!/usr/bin/env bash
# The project's test command (README "Quick start"; .ci/run runs exactly this).
# Provisions the independent interop peers (the official Python MCP SDK and the npm reference
# server, pinned), then checks formatting, lints and the API docs (no rustdoc warning), runs
# every test of both crates, then the official MCP conformance suite (scripts/conformance.sh)
# and the cluster-mode checks (scripts/cluster-test.sh). The last line sums them:
# "N passed, M failed, K skipped".
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step's wall time, printed as it ends and summed up at the end (the CI's breakdown).
STEP_START=$SECONDS
STEPS=""
step() {
    local took=$((SECONDS - STEP_START))
    STEPS="$STEPS$(printf '%-28s %5ss' "$1" "$took")\n"
    echo "test.sh: $1 took ${took}s" >&2
    STEP_START=$SECONDS
}

MCPD_TEST_PYTHON="$(bash scripts/setup-python.sh | tail -n 1)"
export MCPD_TEST_PYTHON
bash scripts/setup-node.sh >/dev/null # the npm reference server for the client interop tests
bash scripts/setup-oidc.sh >/dev/null # the authorization server (oidc-provider) for the resource-server tests
step "provisioning (Python, Node)"

cargo fmt --all -- --check
python3 scripts/check_structure.py
step "fmt, structure"
cargo clippy --all-targets -- -D warnings
step "clippy"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace
step "doc"
mkdir -p target
cargo test --workspace 2>&1 | tee target/test-output.log
# cargo prints one summary per test binary: add them up.
read -r cargo_passed cargo_failed cargo_skipped < <(
    awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i) ~ /^passed;?$/) p += $(i-1); if ($(i) ~ /^failed;?$/) f += $(i-1); if ($(i) ~ /^ignored;?$/) s += $(i-1) } }
         END { printf "%d %d %d\n", p, f, s }' target/test-output.log)
echo "cargo test: $cargo_passed passed, $cargo_failed failed, $cargo_skipped skipped"
step "cargo test (build and run)"
# The short soak (docs/operations.md), on the tests' build (no release build of its own): exits
# non-zero when a target is missed.
cargo bench --profile dev --bench soak -- --seconds 30
step "soak (build and 30 s)"

# The official MCP conformance suite against examples/everything.rs (docs/operations.md);
# it exits non-zero (and so ends this script) unless every required scenario passed.
bash scripts/conformance.sh | tee target/conformance-output.log
conf_counts="$(sed -n 's/^conformance: \([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\1 \2/p' target/conformance-output.log | tail -n 1)"
[ -n "$conf_counts" ] || { echo "test.sh: no 'conformance: N passed, M failed' line from scripts/conformance.sh" >&2; exit 1; }
read -r conf_passed conf_failed <<<"$conf_counts"
step "conformance"

# Cluster mode (docs/clusters.md): the required stateless scenarios through
# nginx over three instances sharing Redis, again with one killed, and the control without Redis.
# Skipped (and counted so) without redis-server or nginx; exits non-zero when a check failed.
bash scripts/cluster-test.sh | tee target/cluster-output.log
cluster_counts="$(sed -n 's/^cluster: \([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed, \([0-9][0-9]*\) skipped$/\1 \2 \3/p' target/cluster-output.log | tail -n 1)"
[ -n "$cluster_counts" ] || { echo "test.sh: no 'cluster: N passed, M failed, K skipped' line from scripts/cluster-test.sh" >&2; exit 1; }
read -r cluster_passed cluster_failed cluster_skipped <<<"$cluster_counts"
step "cluster"
printf 'test.sh: where the time went\n%b' "$STEPS" >&2

# One closing line for the whole run: cargo tests, required conformance scenarios, cluster checks.
echo "$((cargo_passed + conf_passed + cluster_passed)) passed, $((cargo_failed + conf_failed + cluster_failed)) failed, $((cargo_skipped + cluster_skipped)) skipped"
