#!/usr/bin/env bash
# Idempotently create a Python venv with the official MCP SDK (mcp==2.3.0) for the
# interop tests (tests/interop/py_client.py). Prints the venv's python path as the
# last line of stdout. Venv location: ${MCPD_CACHE:-<repo>/.cache}/venv.
set -euo pipefail

MCP_VERSION="2.3.0"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MCPD_CACHE:-$REPO/.cache}"
VENV="$CACHE/venv"
PY="$VENV/bin/python"

have_mcp() {
    [ -x "$PY" ] && "$PY" -c "import importlib.metadata as m, mcp, sys; sys.exit(m.version('mcp') != '$MCP_VERSION')" >/dev/null 2>&1
}

if ! have_mcp; then
    if [ ! -x "$PY" ]; then
        mkdir -p "$CACHE"
        "${PYTHON:-python3}" -m venv "$VENV" >&2
    fi
    "$PY" -m pip install --quiet --disable-pip-version-check "mcp==$MCP_VERSION" >&2
    have_mcp || { echo "setup-python.sh: mcp==$MCP_VERSION not importable after install" >&2; exit 1; }
fi

echo "$PY"
