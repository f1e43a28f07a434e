#!/usr/bin/env bash
# Idempotently install the official MCP "everything" reference server
# (@modelcontextprotocol/server-everything, pinned, with its MCP TypeScript SDK pinned too) for
# the client interop tests (actors/tests/integration/client_interop.rs), using the machine's
# Node (>= 18; Node 20 is what the machines have) and npm.
#
# Install location: ${MCPD_CACHE:-<repo>/.cache}/server-everything (a private package.json
# there pins npm's prefix to it). npm is skipped when both pinned versions are already there.
# Prints the path of the entry to run as the last line of stdout; start it in Streamable HTTP
# mode with
#
#     PORT=0 node --require actors/tests/interop/loopback_listen.cjs <entry> streamableHttp
#
# (the server itself binds every interface on $PORT, default 3001; the preload makes it bind
# 127.0.0.1 and print the real port). npm output goes to stderr.
set -euo pipefail

SERVER_VERSION="2026.8.31"
# The SDK release server-everything@2026.8.31 resolves to (its range is ^1.30.0); installed at
# top level with --save-exact so npm dedupes onto it instead of taking whatever is newest.
SDK_VERSION="1.32.2"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MCPD_CACHE:-$REPO/.cache}"
DIR="$CACHE/server-everything"
NODE="${NODE:-node}"
PKG="$DIR/node_modules/@modelcontextprotocol/server-everything"
SDK_PKG="$DIR/node_modules/@modelcontextprotocol/sdk"
ENTRY="$PKG/dist/index.js"

log() { echo "setup-node.sh: $*" >&2; }

command -v "$NODE" >/dev/null 2>&1 || { log "node not found (set NODE or install Node >= 18)"; exit 1; }
command -v npm >/dev/null 2>&1 || { log "npm not found"; exit 1; }
major="$("$NODE" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$major" -lt 18 ]; then
    log "server-everything needs Node >= 18, found $("$NODE" --version 2>&1 || true)"
    exit 1
fi

version_of() { # package.json → its version, or nothing
    [ -f "$1/package.json" ] && "$NODE" -p "require(process.argv[1]).version" "$1/package.json" 2>/dev/null || true
}
installed() {
    [ -f "$ENTRY" ] && [ "$(version_of "$PKG")" = "$SERVER_VERSION" ] && [ "$(version_of "$SDK_PKG")" = "$SDK_VERSION" ]
}

if ! installed; then
    mkdir -p "$DIR"
    [ -f "$DIR/package.json" ] || printf '{ "name": "mcpd-server-everything", "private": true }\n' >"$DIR/package.json"
    log "npm install @modelcontextprotocol/server-everything@$SERVER_VERSION @modelcontextprotocol/sdk@$SDK_VERSION (into $DIR)"
    npm install --prefix "$DIR" --no-audit --no-fund --save-exact \
        "@modelcontextprotocol/server-everything@$SERVER_VERSION" "@modelcontextprotocol/sdk@$SDK_VERSION" >&2
    installed || {
        log "server-everything@$SERVER_VERSION (SDK $SDK_VERSION) not found in $DIR after npm install"
        exit 1
    }
fi

echo "$ENTRY"
