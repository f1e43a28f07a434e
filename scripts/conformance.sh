#!/usr/bin/env bash
# Official MCP conformance suite against the `everything` example (README "Conformance").
#
# 1. Installs pinned Node 22 (npm package node@$NODE_VERSION) and the pinned suite
#    (@modelcontextprotocol/conformance@$CONFORMANCE_VERSION) into ${MCPD_CACHE:-<repo>/.cache}/node22
#    and .../conformance; npm is skipped when both are already installed at those versions.
# 2. Builds examples/everything.rs and starts it on a free loopback port (-p 0; the real URL
#    is read from its "mcpd: listening on URL" line); it is killed on exit.
# 3. Runs `conformance server --requirements REV` for 2025-11-25 and 2026-07-28, each into its
#    own directory under ${MCPD_CONFORMANCE_OUT:-<repo>/target/conformance} (log: REV.log).
# 4. Counts required / unscored scenarios from the checks.json files and the suite's own
#    requirements/REV.yaml. A scenario passed iff it has >= 1 check and no FAILURE check.
# 5. Fails if either suite run exits non-zero (or times out), if any required scenario did not
#    pass (missing results count as not passed), or if a requirements file does not list the
#    expected number of required server scenarios (30 / 37). No expected-failures baseline.
# 6. Last line of stdout: "conformance: N passed, M failed" (required scenarios, both revisions).
#
# Environment:
#   MCPD_CACHE                  cache root (default <repo>/.cache), shared with setup-python.sh
#   MCPD_CONFORMANCE_OUT        results root (default <repo>/target/conformance; wiped per run)
#   MCPD_CONFORMANCE_URL        test this URL instead; the fixture is then neither built nor started
#   MCPD_CONFORMANCE_TIMEOUT    seconds allowed per suite run (default 600)
# npm, cargo and fixture output go to stderr / log files; results go to stdout.
set -euo pipefail

NODE_VERSION="22.23.3"
CONFORMANCE_VERSION="0.2.0-alpha.12"
REVISIONS=(2025-11-25 2026-07-28)
declare -A EXPECTED_REQUIRED=([2025-11-25]=30 [2026-07-28]=37)

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MCPD_CACHE:-$REPO/.cache}"
NODE_DIR="$CACHE/node22"
CONF_DIR="$CACHE/conformance"
NODE="$NODE_DIR/node_modules/.bin/node"
CONF_PKG="$CONF_DIR/node_modules/@modelcontextprotocol/conformance"
CONF_BIN="$CONF_PKG/dist/index.js"
OUT="${MCPD_CONFORMANCE_OUT:-$REPO/target/conformance}"
RUN_TIMEOUT="${MCPD_CONFORMANCE_TIMEOUT:-600}"

log() { echo "conformance.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# ---- 1. pinned Node 22 and the pinned suite ---------------------------------------------
node_ok() { [ -x "$NODE" ] && [ "$("$NODE" --version 2>/dev/null)" = "v$NODE_VERSION" ]; }
suite_ok() {
    node_ok && [ -f "$CONF_BIN" ] &&
        [ "$("$NODE" -p "require(process.argv[1]).version" "$CONF_PKG/package.json" 2>/dev/null)" = "$CONFORMANCE_VERSION" ]
}
npm_install() { # DIR SPEC: a private package.json pins npm's prefix to DIR (it never walks up)
    mkdir -p "$1"
    [ -f "$1/package.json" ] || printf '{ "name": "mcpd-%s", "private": true }\n' "$(basename "$1")" >"$1/package.json"
    log "npm install $2 (into $1)"
    npm install --prefix "$1" --no-audit --no-fund --save-exact "$2" >&2
}
if ! node_ok; then
    npm_install "$NODE_DIR" "node@$NODE_VERSION"
    node_ok || die "$NODE is not Node v$NODE_VERSION after npm install (got: $("$NODE" --version 2>&1 || true))"
fi
if ! suite_ok; then
    # The suite's bin runs under whatever `node` is first on PATH: install with Node 22 there.
    PATH="$NODE_DIR/node_modules/.bin:$PATH" npm_install "$CONF_DIR" "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION"
    suite_ok || die "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION not found in $CONF_DIR after npm install"
fi
export PATH="$NODE_DIR/node_modules/.bin:$PATH" # the suite may spawn `node` itself
for rev in "${REVISIONS[@]}"; do
    [ -f "$CONF_PKG/requirements/$rev.yaml" ] || die "missing $CONF_PKG/requirements/$rev.yaml"
done

# Remove only what this script writes there (never the directory itself: it may be any path).
for rev in "${REVISIONS[@]}"; do rm -rf -- "${OUT:?}/$rev" "${OUT:?}/$rev.log" "${OUT:?}/$rev.counts"; done
rm -f -- "${OUT:?}/fixture.log"
mkdir -p "$OUT"

# ---- 2. the fixture ---------------------------------------------------------------------
FIXTURE_PID=""
SUITE_PID=""
cleanup() {
    if [ -n "$SUITE_PID" ]; then # timeout(1) passes the TERM on to the suite
        kill "$SUITE_PID" 2>/dev/null || true
        wait "$SUITE_PID" 2>/dev/null || true
    fi
    if [ -n "$FIXTURE_PID" ] && kill -0 "$FIXTURE_PID" 2>/dev/null; then
        kill "$FIXTURE_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$FIXTURE_PID" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$FIXTURE_PID" 2>/dev/null || true
        wait "$FIXTURE_PID" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -n "${MCPD_CONFORMANCE_URL:-}" ]; then
    URL="$MCPD_CONFORMANCE_URL"
    log "MCPD_CONFORMANCE_URL set: testing $URL (fixture not built or started)"
else
    log "cargo build --example everything"
    # JSON messages on stdout name the built executable (honours CARGO_TARGET_DIR, build.target-dir, ...).
    FIXTURE_BIN="$(cd "$REPO" && cargo build --example everything --message-format=json-render-diagnostics |
        "$NODE" -e '
            let bin = "";
            for (const line of require("fs").readFileSync(0, "utf8").split("\n")) {
                let m; try { m = JSON.parse(line); } catch { continue; }
                if (m.reason === "compiler-artifact" && m.target && m.target.name === "everything" &&
                    m.target.kind.includes("example") && m.executable) bin = m.executable;
            }
            process.stdout.write(bin);')"
    [ -n "$FIXTURE_BIN" ] && [ -x "$FIXTURE_BIN" ] || die "cargo build did not report the everything example's executable"
    FIXTURE_LOG="$OUT/fixture.log"
    "$FIXTURE_BIN" -p 0 2>"$FIXTURE_LOG" >&2 &
    FIXTURE_PID=$!
    URL=""
    for _ in $(seq 300); do # 30 s
        URL="$(sed -n 's/^mcpd: listening on \(http:[^ ]*\).*/\1/p' "$FIXTURE_LOG" | head -n 1)"
        [ -n "$URL" ] && break
        kill -0 "$FIXTURE_PID" 2>/dev/null || { cat "$FIXTURE_LOG" >&2; die "fixture exited before listening"; }
        sleep 0.1
    done
    [ -n "$URL" ] || { cat "$FIXTURE_LOG" >&2; die "fixture printed no 'listening' line within 30 s"; }
    log "fixture $FIXTURE_BIN (pid $FIXTURE_PID) listening on $URL"
fi

# ---- 4. counting (scenario results vs requirements yaml) --------------------------------
# argv: REV REQUIREMENTS_YAML RESULTS_DIR EXPECTED_REQUIRED COUNTS_FILE
# Prints the revision's count line (+ details); writes "PASSED FAILED" (required) to COUNTS_FILE;
# exits 1 if a required scenario did not pass or the required count is not the expected one.
COUNT_JS='
const fs = require("fs"), path = require("path");
const [rev, yamlPath, dir, expectedStr, countsFile] = process.argv.slice(1);
const expected = Number(expectedStr);
const YAML = require("module").createRequire(path.resolve(yamlPath))("yaml");
const doc = YAML.parse(fs.readFileSync(yamlPath, "utf8")) || {};
if (!Array.isArray(doc.server)) throw new Error(`${yamlPath}: no "server" list`);
const required = doc.server.map(String);
const unscored = (doc.not_scored || []).filter(e => e && e.leg === "server").map(e => String(e.scenario));

// <dir>/server-<scenario>-<ISO time with [:.] -> ->/checks.json (scenario may contain "/").
// A scenario that errored leaves its directory without checks.json: it ran, with no checks.
const STAMP = /^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;
const results = new Map(); // scenario -> checks (array; empty when none were written)
const walk = d => {
    const rel = path.relative(dir, d).split(path.sep).join("/");
    const m = STAMP.exec(rel);
    if (m) {
        const checks = results.get(m[1]) || [];
        results.set(m[1], checks);
        const file = path.join(d, "checks.json");
        if (fs.existsSync(file)) {
            let parsed = null;
            try { parsed = JSON.parse(fs.readFileSync(file, "utf8")); } catch (err) {}
            if (Array.isArray(parsed)) checks.push(...parsed);
            else checks.push({ id: "checks.json", status: "FAILURE", errorMessage: `unreadable ${file}` });
        }
    }
    for (const e of fs.readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) walk(path.join(d, e.name));
};
if (fs.existsSync(dir)) walk(dir);

const verdict = name => {
    const checks = results.get(name);
    if (!checks) return { ok: false, why: "no results (scenario did not run)" };
    if (checks.length === 0) return { ok: false, why: `no checks recorded (scenario errored or wrote none; see ${rev}.log)` };
    const failures = checks.filter(c => c && c.status === "FAILURE");
    if (failures.length) return { ok: false, why: failures.map(c =>
        `${c.id}: ${String(c.errorMessage || "FAILURE").replace(/\s+/g, " ").slice(0, 200)}`).join("; ") };
    return { ok: true,
        skippedOnly: !checks.some(c => c && (c.status === "SUCCESS" || c.status === "WARNING")),
        warned: checks.some(c => c && c.status === "WARNING") };
};
const req = required.map(n => ({ name: n, ...verdict(n) }));
const uns = unscored.filter(n => results.has(n)).map(n => ({ name: n, ...verdict(n) }));
const reqPassed = req.filter(r => r.ok).length;
const unsPassed = uns.filter(r => r.ok), unsFailed = uns.filter(r => !r.ok);
let unsText = `${uns.length} unscored run: ${unsPassed.length} passed`;
if (unsFailed.length) unsText += `, ${unsFailed.length} failed: ${unsFailed.map(r => r.name).join(" ")}`;
console.log(`conformance ${rev}: ${reqPassed}/${required.length} required scenarios passed (${unsText})`);

const problems = [];
for (const r of req) if (!r.ok) console.log(`  FAILED (required) ${r.name}: ${r.why}`);
const countOk = required.length === expected;
if (!countOk) problems.push(`${path.basename(yamlPath)} lists ${required.length} required server scenarios, expected ${expected}`);
const skippedOnly = req.concat(uns).filter(r => r.ok && r.skippedOnly).map(r => r.name);
if (skippedOnly.length) console.log(`  note: passed with only SKIPPED/INFO checks: ${skippedOnly.join(" ")}`);
const warned = req.concat(uns).filter(r => r.ok && r.warned).map(r => r.name);
if (warned.length) console.log(`  note: passed with WARNING checks: ${warned.join(" ")}`);
const known = new Set(required.concat(unscored));
const extra = [...results.keys()].filter(n => !known.has(n));
if (extra.length) console.log(`  note: results for scenarios not in ${path.basename(yamlPath)}: ${extra.join(" ")}`);
for (const p of problems) console.log(`  ERROR: ${p}`);

// For the closing line: a required scenario listed but not passed is failed; a revision that
// fails a guard with nothing else failed still counts one failure, so the line never reads clean.
let failed = required.length - reqPassed + Math.max(0, expected - required.length);
if (!countOk && failed === 0) failed = 1;
fs.writeFileSync(countsFile, `${reqPassed} ${failed}\n`);
process.exit(reqPassed === required.length && countOk ? 0 : 1);
'

# ---- 3. run both requirement sets ---------------------------------------------------------
status=0
total_passed=0
total_failed=0
for rev in "${REVISIONS[@]}"; do
    rev_out="$OUT/$rev"
    rev_log="$OUT/$rev.log"
    log "conformance server --requirements $rev (log: $rev_log)"
    start=$SECONDS
    rc=0
    # In the background so that a signal to this script runs the trap at once (not after the run).
    timeout "$RUN_TIMEOUT" "$NODE" "$CONF_BIN" server --url "$URL" --requirements "$rev" -o "$rev_out" \
        >"$rev_log" 2>&1 </dev/null &
    SUITE_PID=$!
    wait "$SUITE_PID" || rc=$?
    SUITE_PID=""
    elapsed=$((SECONDS - start))
    echo "--- conformance $rev (suite exit code $rc, ${elapsed}s) ---"
    if grep -q '^=== SUMMARY ===' "$rev_log"; then
        sed -n '/^=== SUMMARY ===/,$p' "$rev_log"
    else
        echo "(no SUMMARY in $rev_log; its last lines:)"
        tail -n 30 "$rev_log"
    fi
    count_rc=0
    "$NODE" -e "$COUNT_JS" "$rev" "$CONF_PKG/requirements/$rev.yaml" "$rev_out" \
        "${EXPECTED_REQUIRED[$rev]}" "$OUT/$rev.counts" || count_rc=$?
    [ -s "$OUT/$rev.counts" ] || echo "0 ${EXPECTED_REQUIRED[$rev]}" >"$OUT/$rev.counts" # counter crashed
    read -r p f <"$OUT/$rev.counts"
    if [ "$rc" -ne 0 ]; then
        if [ "$rc" -eq 124 ]; then
            echo "  ERROR: suite run for $rev timed out after ${RUN_TIMEOUT}s"
        else
            echo "  ERROR: suite exited with code $rc for $rev"
        fi
        [ "$f" -gt 0 ] || f=1
        status=1
    fi
    [ "$count_rc" -eq 0 ] || status=1
    total_passed=$((total_passed + p))
    total_failed=$((total_failed + f))
done

echo "conformance: $total_passed passed, $total_failed failed"
exit "$status"
