#!/usr/bin/env bash
# Cluster mode end to end (README "Running several instances"; scripts/test.sh runs it): the
# official conformance suite's required 2026-07-28 (stateless) server scenarios through nginx,
# round-robin over three examples/everything instances sharing one Redis (scripts/cluster.sh).
#
# Checks, each one test in the closing line:
#   1. shared: 3 instances with --redis: every required scenario passes (37/37), the
#      multi-round-trip (input-required-result-*) ones included although their rounds land on
#      different instances;
#   2. shared: every tasks-* scenario passes (held to conformance.sh's tasks bar), although a
#      task's creation, polls, input answers and cancel land on different instances (the task
#      store is shared through Redis);
#   3. and 4. one instance killed (by PID) behind the same nginx: 1 and 2 again;
#   5. control: the same cluster without --redis fails at least one input-required-result-*
#      scenario with "requestState failed its integrity check" (each instance seals with its own
#      key) — so check 1 proves the shared key, not luck of the balancing;
#   6. control: and at least one tasks-* scenario fails there (a task created on one instance is
#      "not found" on another) — so check 2 proves the shared task store.
# The 2025-11-25 revision is not run (sessions are not shared yet).
#
# Skipped (one line saying why, "cluster: 0 passed, 0 failed, 6 skipped") when redis-server or
# nginx is not installed; .ci/run installs both.
# Last line of stdout: "cluster: N passed, M failed, K skipped".
# Environment: MCPD_CACHE as scripts/conformance.sh. Each run's results go to a fresh temporary
# directory (named in the log), removed when every check passed and kept for reading otherwise.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CHECKS=6
export PATH="$PATH:/usr/sbin:/sbin" # Debian installs nginx in /usr/sbin, outside a user's PATH
log() { echo "cluster-test.sh: $*" >&2; }

missing=()
for tool in redis-server nginx; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "cluster-test.sh: SKIPPED: ${missing[*]} not installed (.ci/run installs redis-server and nginx)"
    echo "cluster: 0 passed, 0 failed, $CHECKS skipped"
    exit 0
fi

OUT="$(mktemp -d)"
log "results in $OUT"

log "cargo build -p mcpd --example everything"
(cd "$REPO" && cargo build -p mcpd --example everything >&2)
export MCPD_CLUSTER_BIN="${CARGO_TARGET_DIR:-$REPO/target}/debug/examples/everything"

CLUSTER_PID=""
stop_cluster() {
    [ -n "$CLUSTER_PID" ] || return 0
    kill "$CLUSTER_PID" 2>/dev/null || true # cluster.sh stops its children by PID
    wait "$CLUSTER_PID" 2>/dev/null || true
    CLUSTER_PID=""
}
trap stop_cluster EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Starts scripts/cluster.sh ARGS with its stdout in NAME.cluster; sets CLUSTER_PID and URL.
start_cluster() { # NAME ARGS...
    local name="$1"
    shift
    bash "$REPO/scripts/cluster.sh" "$@" >"$OUT/$name.cluster" 2>"$OUT/$name.cluster.log" &
    CLUSTER_PID=$!
    URL=""
    for _ in $(seq 600); do # 60 s
        URL="$(sed -n 's/^cluster: ready \(http:[^ ]*\).*/\1/p' "$OUT/$name.cluster" 2>/dev/null || true)"
        [ -n "$URL" ] && return 0
        kill -0 "$CLUSTER_PID" 2>/dev/null || break
        sleep 0.1
    done
    cat "$OUT/$name.cluster.log" >&2
    log "the cluster ($name) did not start"
    return 1
}

# Runs the suite's 2026-07-28 server scenarios against URL into NAME/ (TASKS=0: the tasks-*
# scenarios not held, as conformance.sh's MCPD_CONFORMANCE_TASKS); prints its result lines.
suite() { # NAME [TASKS]
    MCPD_CONFORMANCE_URL="$URL" MCPD_CONFORMANCE_REVISIONS=2026-07-28 MCPD_CONFORMANCE_LEGS=server \
        MCPD_CONFORMANCE_TASKS="${2:-1}" MCPD_CONFORMANCE_OUT="$OUT/$1" \
        bash "$REPO/scripts/conformance.sh" >"$OUT/$1.out" 2>"$OUT/$1.log" || true
    grep -E '^conformance 2026-07-28( tasks extension)?:|FAILED \((required|tasks)\)' "$OUT/$1.out" ||
        echo "(no result line; see $OUT/$1.out, $OUT/$1.log)"
}
all_required() { grep -qE '^conformance 2026-07-28: ([0-9]+)/\1 required scenarios passed' "$OUT/$1.out"; }
# Every tasks-* scenario passed, tasks-status-notifications (all SKIPPED in the suite) without FAILURE.
all_tasks() {
    grep -qE '^conformance 2026-07-28 tasks extension: ([1-9][0-9]*)/\1 tasks-\* scenarios passed.*ran, no FAILURE' "$OUT/$1.out" &&
        ! grep -q 'FAILED (tasks)' "$OUT/$1.out"
}

passed=0
failed=0
verdict() { # OK DESCRIPTION
    if [ "$1" = 0 ]; then
        echo "ok: $2"
        passed=$((passed + 1))
    else
        echo "FAILED: $2"
        failed=$((failed + 1))
    fi
}

# The verdicts of run NAME: every required scenario passed (WHY_REQUIRED), every tasks-* one
# passed (WHY_TASKS).
held() {
    local ok
    ok=0; all_required "$1" || ok=1
    verdict "$ok" "every required 2026-07-28 scenario passed $2"
    ok=0; all_tasks "$1" || ok=1
    verdict "$ok" "every tasks-* scenario passed $3"
}

# 1 to 4: shared keys and tasks, then one instance killed.
if start_cluster shared; then
    echo "--- 3 instances with --redis behind nginx (round-robin): $URL ---"
    suite shared
    held shared "through 3 instances sharing requestState keys" "through 3 instances sharing the task store"
    victim="$(sed -n 's/^cluster: instance 2 pid \([0-9]*\) .*/\1/p' "$OUT/shared.cluster")"
    kill "$victim"
    echo "--- instance 2 (pid $victim) killed ---"
    suite killed
    held killed "with one instance dead" "with one instance dead"
    stop_cluster
else
    verdict 1 "the cluster with --redis started"
    for _ in 2 3 4; do verdict 1 "(not run: no cluster)"; done
fi

# 3: the control, without --redis.
if start_cluster control --no-redis; then
    echo "--- control: 3 instances without --redis: $URL ---"
    suite control 0
    ok=1
    grep -qE 'FAILED \(required\) input-required-result-.*requestState failed its integrity check' "$OUT/control.out" && ok=0
    verdict "$ok" "without --redis a multi-round-trip scenario fails (requestState sealed by another instance)"
    ok=1
    grep -qE '^conformance 2026-07-28: .* failed: (.* )?tasks-' "$OUT/control.out" && ok=0
    verdict "$ok" "without --redis a tasks-* scenario fails (the task lives on another instance)"
    stop_cluster
else
    verdict 1 "the cluster without --redis started"
    verdict 1 "(not run: no cluster)"
fi

echo "cluster: $passed passed, $failed failed, 0 skipped"
if [ "$failed" = 0 ]; then
    case "$OUT" in "${TMPDIR:-/tmp}"/tmp.?*) rm -rf -- "$OUT" ;; esac # this run's own mktemp directory
else
    log "results kept in $OUT"
fi
[ "$failed" = 0 ]
