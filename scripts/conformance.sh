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
#    The tasks extension's scenarios (tasks-*, unscored at 2026-07-28 as an extension) are held
#    to a bar of their own: each must have run, with >= 1 SUCCESS check and no FAILURE — except
#    tasks-status-notifications, whose checks are all SKIPPED in the suite itself; it must run
#    without FAILURE and is counted (and named) separately. The suite lists EXPECTED_TASKS of them.
# 6. Client leg: builds examples/conformance_client.rs and runs, for each revision,
#    `conformance client --command BIN --scenario S --spec-version REV -o DIR` for every client
#    scenario requirements/REV.yaml requires — auth/* included (the OAuth flow of the client
#    library, with a headless user agent) — 18 at 2025-11-25 and 32 at 2026-07-28 (14 / 25 of
#    them auth/*), plus the extras json-schema-2020-12-preservation (not_scored there:
#    added-after-release), auth/client-credentials-basic and auth/client-credentials-jwt
#    (not_scored: extension; run with --force, as the suite skips extensions at a dated
#    revision), held to the same bar. One scenario at a time (`--requirements` would run them in
#    parallel). A client scenario passed iff >= 1 check ran (SUCCESS or FAILURE, what the
#    suite's "Passed: x/y" counts), none is FAILURE, the client neither timed out nor exited
#    non-zero (unless the scenario allows it: the auth/* ones where the client must refuse to go
#    on), and the suite's exit code is 0 or explained by WARNING checks. A client that does
#    nothing gets "Passed: 0/0" and exit 0 from the suite: that counts as failed. Fails on any
#    failed scenario, or when a requirements file does not list the expected number of required
#    client scenarios.
# 7. Last line of stdout: "conformance: N passed, M failed" (both revisions: the server leg's
#    required scenarios and tasks-* scenarios, the client leg's required scenarios and extras).
#
# Environment:
#   MCPD_CACHE                  cache root (default <repo>/.cache), shared with setup-python.sh
#   MCPD_CONFORMANCE_OUT        results root (default <repo>/target/conformance; this script's results in it are
#                               replaced per run)
#   MCPD_CONFORMANCE_CLIENT_OUT client-leg results root (default <repo>/target/conformance-client)
#   MCPD_CONFORMANCE_URL        test this URL instead; the fixture is then neither built nor started
#                               (the client leg runs regardless: it needs only the suite's mocks)
#   MCPD_CONFORMANCE_TIMEOUT    seconds allowed per suite run (default 600; 120 per client scenario)
#   MCPD_CONFORMANCE_REVISIONS  the revisions to run, space-separated (default: both)
#   MCPD_CONFORMANCE_LEGS       "server" runs the server leg only (scripts/cluster-test.sh); default both
#   MCPD_CONFORMANCE_TASKS      0: the tasks-* scenarios are run and listed as unscored, not held to
#                               their bar nor counted (scripts/cluster-test.sh's control without Redis); default 1
# npm, cargo and fixture output go to stderr / log files; results go to stdout.
set -euo pipefail

NODE_VERSION="22.23.3"
CONFORMANCE_VERSION="0.2.0-alpha.12"
REVISIONS=(2025-11-25 2026-07-28)
if [ -n "${MCPD_CONFORMANCE_REVISIONS:-}" ]; then
    read -r -a REVISIONS <<<"$MCPD_CONFORMANCE_REVISIONS"
fi
LEGS="${MCPD_CONFORMANCE_LEGS:-both}"
case "$LEGS" in server | both) ;; *) echo "conformance.sh: MCPD_CONFORMANCE_LEGS must be server or both" >&2; exit 2 ;; esac
declare -A EXPECTED_REQUIRED=([2025-11-25]=30 [2026-07-28]=37)
# The tasks extension's server scenarios at 2026-07-28 (unscored there), required here.
declare -A EXPECTED_TASKS=([2025-11-25]=0 [2026-07-28]=10)
TASKS_SKIPPED_ONLY="tasks-status-notifications" # all of its checks are SKIPPED in the suite
# Client leg: every required client scenario (auth/* included), plus CLIENT_EXTRA (run with --force).
CLIENT_EXTRA=(json-schema-2020-12-preservation auth/client-credentials-basic auth/client-credentials-jwt)
declare -A EXPECTED_CLIENT=([2025-11-25]=18 [2026-07-28]=32)

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MCPD_CACHE:-$REPO/.cache}"
NODE_DIR="$CACHE/node22"
CONF_DIR="$CACHE/conformance"
NODE="$NODE_DIR/node_modules/.bin/node"
CONF_PKG="$CONF_DIR/node_modules/@modelcontextprotocol/conformance"
CONF_BIN="$CONF_PKG/dist/index.js"
OUT="${MCPD_CONFORMANCE_OUT:-$REPO/target/conformance}"
RUN_TIMEOUT="${MCPD_CONFORMANCE_TIMEOUT:-600}"
CLIENT_OUT="${MCPD_CONFORMANCE_CLIENT_OUT:-$REPO/target/conformance-client}"
CLIENT_RUN_TIMEOUT=120 # one client scenario (the suite itself kills the client after 30 s)

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

# Remove only what this script wrote there (never the roots: they may be any path): its files,
# and a results directory only when it carries the mark this script leaves in the ones it makes
# or lies in the default roots under target/, which only this script writes (a directory of that
# name elsewhere that is not ours stops the run instead).
RESULTS_MARK=.written-by-mcpd-conformance
fresh_results_dir() { # DIR: an empty results directory of this script's, marked
    if [ -e "$1" ]; then
        case "$1" in
            "$REPO/target/conformance/"* | "$REPO/target/conformance-client/"*) ;;
            *) [ -f "$1/$RESULTS_MARK" ] || die "$1 exists and was not made by conformance.sh: move it away" ;;
        esac
        rm -rf -- "$1"
    fi
    mkdir -p "$1" && : >"$1/$RESULTS_MARK"
}
mkdir -p "$OUT" "$CLIENT_OUT"
for rev in "${REVISIONS[@]}"; do
    rm -f -- "$OUT/$rev.log" "$OUT/$rev.counts" "$CLIENT_OUT/$rev.counts"
    fresh_results_dir "$OUT/$rev"
    fresh_results_dir "$CLIENT_OUT/$rev"
done
rm -f -- "$OUT/fixture.log"

# ---- 2. the fixture ---------------------------------------------------------------------
# Builds examples/NAME.rs and prints its executable: cargo's JSON messages on stdout name it
# (honours CARGO_TARGET_DIR, build.target-dir, ...).
build_example() {
    log "cargo build --example $1"
    (cd "$REPO" && cargo build --example "$1" --message-format=json-render-diagnostics) |
        "$NODE" -e '
            let bin = "";
            for (const line of require("fs").readFileSync(0, "utf8").split("\n")) {
                let m; try { m = JSON.parse(line); } catch { continue; }
                if (m.reason === "compiler-artifact" && m.target && m.target.name === process.argv[1] &&
                    m.target.kind.includes("example") && m.executable) bin = m.executable;
            }
            process.stdout.write(bin);' "$1"
}

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

# The client leg's executable (built first: nothing is running yet). The suite splits --command
# on spaces, so its path must have none.
if [ "$LEGS" = both ]; then
    CLIENT_BIN="$(build_example conformance_client)"
    [ -n "$CLIENT_BIN" ] && [ -x "$CLIENT_BIN" ] || die "cargo build did not report the conformance_client example's executable"
    case "$CLIENT_BIN" in *[[:space:]]*) die "the suite splits --command on spaces; move the target directory: $CLIENT_BIN" ;; esac
fi

if [ -n "${MCPD_CONFORMANCE_URL:-}" ]; then
    URL="$MCPD_CONFORMANCE_URL"
    log "MCPD_CONFORMANCE_URL set: testing $URL (fixture not built or started)"
else
    FIXTURE_BIN="$(build_example everything)"
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
# argv: REV REQUIREMENTS_YAML RESULTS_DIR EXPECTED_REQUIRED COUNTS_FILE EXPECTED_TASKS SKIPPED_ONLY
# Prints the revision's count line (+ details); writes "PASSED FAILED" (required) to COUNTS_FILE;
# exits 1 if a required scenario did not pass or the required count is not the expected one.
COUNT_JS='
const fs = require("fs"), path = require("path");
const [rev, yamlPath, dir, expectedStr, countsFile, expectedTasksStr, skippedOnlyName] = process.argv.slice(1);
const expected = Number(expectedStr);
const holdTasks = expectedTasksStr !== "-"; // "-": tasks-* reported, not held (MCPD_CONFORMANCE_TASKS=0)
const expectedTasks = Number(expectedTasksStr);
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

// The tasks extension: unscored in the suite, required here (see the header).
const taskNames = unscored.filter(n => n.startsWith("tasks-"));
const taskRows = taskNames.map(n => {
    const v = verdict(n);
    if (!v.ok || n === skippedOnlyName) return { name: n, ...v };
    const successes = results.get(n).filter(c => c && c.status === "SUCCESS").length;
    return successes > 0 ? { name: n, ...v } : { name: n, ok: false, why: "no SUCCESS check" };
});
const taskMain = taskRows.filter(r => r.name !== skippedOnlyName), taskSkip = taskRows.filter(r => r.name === skippedOnlyName);
if (holdTasks && (taskNames.length || expectedTasks)) {
    const mainPassed = taskMain.filter(r => r.ok).length;
    let line = `conformance ${rev} tasks extension: ${mainPassed}/${taskMain.length} tasks-* scenarios passed (>= 1 SUCCESS, no FAILURE)`;
    for (const r of taskSkip) line += `; ${r.name} (all checks SKIPPED in the suite): ${r.ok ? "ran, no FAILURE" : "FAILED"}`;
    console.log(line);
    for (const r of taskRows) if (!r.ok) console.log(`  FAILED (tasks) ${r.name}: ${r.why}`);
}
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
const tasksCountOk = !holdTasks || taskNames.length === expectedTasks;
if (!tasksCountOk) problems.push(`${path.basename(yamlPath)} lists ${taskNames.length} tasks-* server scenarios, expected ${expectedTasks}`);
const tasksFailed = holdTasks ? taskRows.filter(r => !r.ok).length : 0;
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
let failed = required.length - reqPassed + Math.max(0, expected - required.length) + tasksFailed;
if ((!countOk || !tasksCountOk) && failed === 0) failed = 1;
const passed = reqPassed + (holdTasks ? taskRows.filter(r => r.ok).length : 0);
fs.writeFileSync(countsFile, `${passed} ${failed}\n`);
process.exit(reqPassed === required.length && countOk && tasksCountOk && tasksFailed === 0 ? 0 : 1);
'

# Client leg. argv: REQUIREMENTS_YAML — prints the yaml's required client scenarios, one a line.
CLIENT_LIST_JS='
const fs = require("fs"), path = require("path");
const [yamlPath] = process.argv.slice(1);
const YAML = require("module").createRequire(path.resolve(yamlPath))("yaml");
const doc = YAML.parse(fs.readFileSync(yamlPath, "utf8")) || {};
if (!Array.isArray(doc.client)) throw new Error(`${yamlPath}: no "client" list`);
for (const n of doc.client.map(String)) console.log(n);
'

# argv: REV REQUIREMENTS_YAML RESULTS_DIR EXPECTED COUNTS_FILE SCENARIO...
# RESULTS_DIR holds, per scenario S (with "/" as "__"), S.rc (the suite's exit code), S.log (its
# output) and the suite's S-<time>/{checks,stdout,stderr}.json|txt. The SCENARIOs are the yaml's
# required ones, then the extras. Prints the count line (+ details); writes "PASSED FAILED" (every
# scenario run) to COUNTS_FILE; exits 1 unless all passed and the yaml requires EXPECTED.
CLIENT_COUNT_JS='
const fs = require("fs"), path = require("path");
const [rev, yamlPath, dir, expectedStr, countsFile, ...scenarios] = process.argv.slice(1);
const expected = Number(expectedStr);
const YAML = require("module").createRequire(path.resolve(yamlPath))("yaml");
const doc = YAML.parse(fs.readFileSync(yamlPath, "utf8")) || {};
const required = new Set((doc.client || []).map(String));
const authRequired = [...required].filter(n => n.startsWith("auth/")).length;

const STAMP = /^(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;
const results = new Map(); // scenario -> newest result directory
const walk = d => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        if (!e.isDirectory()) continue;
        const full = path.join(d, e.name);
        const m = STAMP.exec(path.relative(dir, full).split(path.sep).join("/"));
        if (m) { if (!results.has(m[1]) || results.get(m[1]) < full) results.set(m[1], full); }
        else walk(full);
    }
};
if (fs.existsSync(dir)) walk(dir);
const read = f => { try { return fs.readFileSync(f, "utf8"); } catch { return null; } };
const clip = t => String(t).replace(/\s+/g, " ").trim().slice(0, 200);

const verdict = name => {
    const slug = name.replace(/\//g, "__");
    const rcText = read(path.join(dir, `${slug}.rc`));
    if (rcText === null) return { ok: false, why: "did not run" };
    const rc = Number(rcText.trim());
    const logName = path.join(path.basename(dir), `${slug}.log`);
    const log = read(path.join(dir, `${slug}.log`)) || "";
    if (rc === 124) return { ok: false, why: `the suite run timed out (see ${logName})` };
    const resultDir = results.get(name);
    if (!resultDir) return { ok: false, why: `no results (suite exit code ${rc}; see ${logName})` };
    const text = read(path.join(resultDir, "checks.json"));
    if (text === null) {
        const skipped = /SKIPPED: scenario/.test(log) ? "the suite skipped it at this revision; " : "";
        return { ok: false, why: `no checks recorded (${skipped}suite exit code ${rc}; see ${logName})` };
    }
    let checks;
    try { checks = JSON.parse(text); } catch { checks = null; }
    if (!Array.isArray(checks)) return { ok: false, why: `unreadable ${path.join(resultDir, "checks.json")}` };
    const status = s => checks.filter(c => c && c.status === s);
    const failures = status("FAILURE"), warnings = status("WARNING"), successes = status("SUCCESS");
    const problems = [];
    if (failures.length) {
        const shown = failures.slice(0, 3).map(c => `${c.id}: ${clip(c.errorMessage || c.description || "FAILURE")}`);
        if (failures.length > 3) shown.push(`(+${failures.length - 3} more FAILURE checks)`);
        problems.push(shown.join("; "));
    }
    if (successes.length + failures.length === 0) problems.push("no check ran (Passed: 0/0): the client exercised nothing");
    const stderrLine = (read(path.join(resultDir, "stderr.txt")) || "").split("\n").map(l => l.trim()).filter(Boolean).pop();
    if (/CLIENT TIMED OUT/.test(log)) problems.push("the client timed out");
    else if (/CLIENT EXITED WITH ERROR/.test(log)) {
        const code = (/CLIENT EXITED WITH ERROR \(code (-?\d+)\)/.exec(log) || [])[1];
        problems.push(`the client exited with code ${code}${stderrLine ? `: ${clip(stderrLine)}` : ""}`);
    }
    if (rc !== 0 && !(rc === 1 && (warnings.length || problems.length))) problems.push(`suite exit code ${rc} (see ${logName})`);
    if (problems.length) return { ok: false, why: problems.join("; ") };
    return { ok: true, warned: warnings.map(c => c.id) };
};
const rows = scenarios.map(n => ({ name: n, extra: !required.has(n), ...verdict(n) }));
const req = rows.filter(r => !r.extra), extras = rows.filter(r => r.extra);
const passed = rows.filter(r => r.ok).length, reqPassed = req.filter(r => r.ok).length;
console.log(`conformance client ${rev}: ${reqPassed}/${req.length} required scenarios passed (${authRequired} of them auth/*), ` +
    `extras: ${extras.filter(r => r.ok).length}/${extras.length} passed`);
for (const r of rows) if (!r.ok) console.log(`  FAILED (${r.extra ? "extra" : "required"}) ${r.name}: ${r.why}`);
const warned = rows.filter(r => r.ok && r.warned.length);
if (warned.length) console.log(`  note: passed with WARNING checks: ${warned.map(r => `${r.name} (${r.warned.join(", ")})`).join(" ")}`);
const countOk = req.length === expected;
if (!countOk) console.log(`  ERROR: ${path.basename(yamlPath)} requires ${req.length} client scenarios at ${rev}, expected ${expected}`);
let failed = rows.length - passed + Math.max(0, expected - req.length);
if (!countOk && failed === 0) failed = 1;
fs.writeFileSync(countsFile, `${passed} ${failed}\n`);
process.exit(passed === rows.length && countOk ? 0 : 1);
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
    tasks_bar="${EXPECTED_TASKS[$rev]}"
    [ "${MCPD_CONFORMANCE_TASKS:-1}" = 1 ] || tasks_bar=-
    "$NODE" -e "$COUNT_JS" "$rev" "$CONF_PKG/requirements/$rev.yaml" "$rev_out" \
        "${EXPECTED_REQUIRED[$rev]}" "$OUT/$rev.counts" "$tasks_bar" "$TASKS_SKIPPED_ONLY" || count_rc=$?
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

# ---- 5. the client leg: examples/conformance_client.rs against the suite's mock servers --------
[ "$LEGS" = both ] || REVISIONS=() # no client leg
for rev in "${REVISIONS[@]}"; do
    rev_out="$CLIENT_OUT/$rev"
    mapfile -t scenarios < <("$NODE" -e "$CLIENT_LIST_JS" "$CONF_PKG/requirements/$rev.yaml")
    [ "${#scenarios[@]}" -gt 0 ] || die "no client scenarios in $CONF_PKG/requirements/$rev.yaml"
    declare -A extra=()
    for e in "${CLIENT_EXTRA[@]}"; do
        case " ${scenarios[*]} " in *" $e "*) ;; *) scenarios+=("$e"); extra[$e]=1 ;; esac
    done
    log "conformance client --spec-version $rev: ${scenarios[*]} (results: $rev_out)"
    start=$SECONDS
    echo "--- conformance client $rev ---"
    for scenario in "${scenarios[@]}"; do
        slug="${scenario//\//__}"
        rc=0
        force=()
        [ -z "${extra[$scenario]:-}" ] || force=(--force) # extensions are skipped at a dated revision
        # One scenario at a time, at this revision's wire.
        timeout "$CLIENT_RUN_TIMEOUT" "$NODE" "$CONF_BIN" client --command "$CLIENT_BIN" --scenario "$scenario" \
            --spec-version "$rev" "${force[@]}" -o "$rev_out" >"$rev_out/$slug.log" 2>&1 </dev/null &
        SUITE_PID=$!
        wait "$SUITE_PID" || rc=$?
        SUITE_PID=""
        echo "$rc" >"$rev_out/$slug.rc"
        echo "$scenario: $(grep -m 1 '^Passed: ' "$rev_out/$slug.log" || echo 'no result line') (suite exit code $rc)"
    done
    echo "(${#scenarios[@]} scenarios, $((SECONDS - start))s)"
    count_rc=0
    "$NODE" -e "$CLIENT_COUNT_JS" "$rev" "$CONF_PKG/requirements/$rev.yaml" "$rev_out" \
        "${EXPECTED_CLIENT[$rev]}" "$CLIENT_OUT/$rev.counts" "${scenarios[@]}" || count_rc=$?
    [ -s "$CLIENT_OUT/$rev.counts" ] || echo "0 ${EXPECTED_CLIENT[$rev]}" >"$CLIENT_OUT/$rev.counts" # counter crashed
    read -r p f <"$CLIENT_OUT/$rev.counts"
    [ "$count_rc" -eq 0 ] || status=1
    total_passed=$((total_passed + p))
    total_failed=$((total_failed + f))
done

echo "conformance: $total_passed passed, $total_failed failed"
exit "$status"
