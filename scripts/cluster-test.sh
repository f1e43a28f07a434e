#!/usr/bin/env bash
# Cluster mode end to end (README "Running several instances"; scripts/test.sh runs it): the
# official conformance suite's required server scenarios of both revisions — 2025-11-25
# (streamable-HTTP sessions) and 2026-07-28 (stateless) — through nginx, round-robin over three
# examples/everything instances sharing one Redis (scripts/cluster.sh).
#
# Checks, each one test in the closing line:
#   1. shared: 3 instances with --redis: every required 2025-11-25 scenario passes (30/30),
#      although a session's requests (its initialize, calls, the answers to the server's
#      elicitation and sampling requests, the GET that resumes a closed SSE stream) land on
#      different instances (the sessions are shared through Redis);
#   2. shared: every required 2026-07-28 scenario passes (37/37), the multi-round-trip
#      (input-required-result-*) ones included although their rounds land on different
#      instances;
#   3. shared: every tasks-* scenario passes (held to conformance.sh's tasks bar), although a
#      task's creation, polls, input answers and cancel land on different instances (the task
#      store is shared through Redis);
#   4. to 6. one instance killed (by PID) behind the same nginx: 1 to 3 again;
#   7. control: the same cluster without --redis fails at least one required 2025-11-25
#      scenario with "Session not found" (a session created on one instance is unknown to the
#      others) — so check 1 proves the shared sessions, not luck of the balancing;
#   8. control: and at least one input-required-result-* scenario (each instance seals with its
#      own key: a round sent to another instance is "requestState failed its integrity check",
#      which the suite quotes in some scenarios only) — so check 2 proves the shared key;
#   9. control: and at least one tasks-* scenario (a task created on one instance is "not found"
#      on another) — so check 3 proves the shared task store.
#
# Skipped (one line saying why, "cluster: 0 passed, 0 failed, 9 skipped") when redis-server or
# nginx is not installed; .ci/run installs both.
# Last line of stdout: "cluster: N passed, M failed, K skipped".
# Environment: MCPD_CACHE as scripts/conformance.sh. Each run's results go to a fresh temporary
# directory (named in the log), removed when every check passed and kept for reading otherwise.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CHECKS=9
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

# Runs the suite's server scenarios of both revisions against URL into NAME/ (TASKS=0: the
# tasks-* scenarios not held, as conformance.sh's MCPD_CONFORMANCE_TASKS); prints its result lines.
suite() { # NAME [TASKS]
    MCPD_CONFORMANCE_URL="$URL" MCPD_CONFORMANCE_REVISIONS="2025-11-25 2026-07-28" MCPD_CONFORMANCE_LEGS=server \
        MCPD_CONFORMANCE_TASKS="${2:-1}" MCPD_CONFORMANCE_OUT="$OUT/$1" \
        bash "$REPO/scripts/conformance.sh" >"$OUT/$1.out" 2>"$OUT/$1.log" || true
    grep -E '^conformance 20[0-9-]+( tasks extension)?:|FAILED \((required|tasks)\)' "$OUT/$1.out" ||
        echo "(no result line; see $OUT/$1.out, $OUT/$1.log)"
}
all_required() { # NAME REVISION
    grep -qE "^conformance $2: ([0-9]+)/\\1 required scenarios passed" "$OUT/$1.out"
}
# The result lines of REVISION in run NAME: its count line and the FAILED lines after it.
revision_lines() { # NAME REVISION
    awk -v rev="$2" '/^conformance / { on = ($2 == rev ":") } /^---/ { on = 0 } on' "$OUT/$1.out"
}
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

# The verdicts of run NAME: every required 2025-11-25 scenario passed (WHY_SESSIONS), every
# required 2026-07-28 one (WHY_REQUIRED), every tasks-* one (WHY_TASKS).
held() { # NAME WHY_SESSIONS WHY_REQUIRED WHY_TASKS
    local ok
    ok=0; all_required "$1" 2025-11-25 || ok=1
    verdict "$ok" "every required 2025-11-25 scenario passed $2"
    ok=0; all_required "$1" 2026-07-28 || ok=1
    verdict "$ok" "every required 2026-07-28 scenario passed $3"
    ok=0; all_tasks "$1" || ok=1
    verdict "$ok" "every tasks-* scenario passed $4"
}

# 1 to 6: shared sessions, keys and tasks, then one instance killed.
if start_cluster shared; then
    echo "--- 3 instances with --redis behind nginx (round-robin): $URL ---"
    suite shared
    held shared "through 3 instances sharing sessions" "through 3 instances sharing requestState keys" \
        "through 3 instances sharing the task store"
    victim="$(sed -n 's/^cluster: instance 2 pid \([0-9]*\) .*/\1/p' "$OUT/shared.cluster")"
    kill "$victim"
    echo "--- instance 2 (pid $victim) killed ---"
    suite killed
    held killed "with one instance dead" "with one instance dead" "with one instance dead"
    stop_cluster
else
    verdict 1 "the cluster with --redis started"
    for _ in 2 3 4 5 6; do verdict 1 "(not run: no cluster)"; done
fi

# 7 to 9: the control, without --redis.
if start_cluster control --no-redis; then
    echo "--- control: 3 instances without --redis: $URL ---"
    suite control 0
    ok=1
    revision_lines control 2025-11-25 >"$OUT/control.2025-11-25.out"
    grep -qiE 'FAILED \(required\) .*session not found' "$OUT/control.2025-11-25.out" && ok=0
    verdict "$ok" "without --redis a 2025-11-25 scenario fails (\"Session not found\": the session lives on another instance)"
    ok=1
    # Which rounds land on another instance depends on which of nginx's two workers took each
    # connection, and the suite names the server's error ("requestState failed its integrity
    # check") only in some scenarios' checks: any required multi-round-trip scenario failing here,
    # where all of them pass in the shared run (2.), is the control's evidence.
    grep -qE 'FAILED \(required\) input-required-result-' "$OUT/control.out" && ok=0
    verdict "$ok" "without --redis a multi-round-trip scenario fails (requestState sealed by another instance)"
    ok=1
    grep -qE '^conformance 2026-07-28: .* failed: (.* )?tasks-' "$OUT/control.out" && ok=0
    verdict "$ok" "without --redis a tasks-* scenario fails (the task lives on another instance)"
    stop_cluster
else
    verdict 1 "the cluster without --redis started"
    for _ in 2 3; do verdict 1 "(not run: no cluster)"; done
fi

echo "cluster: $passed passed, $failed failed, 0 skipped"
if [ "$failed" = 0 ]; then
    case "$OUT" in "${TMPDIR:-/tmp}"/tmp.?*) rm -rf -- "$OUT" ;; esac # this run's own mktemp directory
else
    log "results kept in $OUT"
fi
[ "$failed" = 0 ]
