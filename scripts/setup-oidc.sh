#!/usr/bin/env bash
# Idempotently install the OpenID Foundation-certified authorization server `oidc-provider`
# (pinned) for the resource-server tests (actors/tests/integration/oauth_server.rs), which start
# it through actors/tests/interop/oidc_provider.mjs on 127.0.0.1.
#
# Install location: ${MCPD_CACHE:-<repo>/.cache}/oidc-provider (a private package.json there pins
# npm's prefix to it). npm is skipped when the pinned version is already there. oidc-provider 9
# is ESM and wants Node ^20.19 or >= 22.12; NODE (default: node on PATH) must be such a Node.
# Prints the path of oidc-provider's entry (lib/index.js) as the last line of stdout; the fixture
# imports it from OIDC_PROVIDER_ENTRY. npm output goes to stderr.
set -euo pipefail

VERSION="9.13.3"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MCPD_CACHE:-$REPO/.cache}"
DIR="$CACHE/oidc-provider"
NODE="${NODE:-node}"
PKG="$DIR/node_modules/oidc-provider"

log() { echo "setup-oidc.sh: $*" >&2; }

command -v "$NODE" >/dev/null 2>&1 || { log "node not found (set NODE)"; exit 1; }
command -v npm >/dev/null 2>&1 || { log "npm not found"; exit 1; }

version_of() { # package.json → its version, or nothing
    [ -f "$1/package.json" ] && "$NODE" -p "require(process.argv[1]).version" "$1/package.json" 2>/dev/null || true
}

if [ "$(version_of "$PKG")" != "$VERSION" ]; then
    mkdir -p "$DIR"
    [ -f "$DIR/package.json" ] || printf '{ "name": "mcpd-oidc-provider", "private": true }\n' >"$DIR/package.json"
    log "npm install oidc-provider@$VERSION (into $DIR)"
    npm install --prefix "$DIR" --no-audit --no-fund --save-exact "oidc-provider@$VERSION" >&2
    [ "$(version_of "$PKG")" = "$VERSION" ] || { log "oidc-provider@$VERSION not found in $DIR after npm install"; exit 1; }
fi

echo "$PKG/lib/index.js"
