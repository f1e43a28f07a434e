#!/usr/bin/env bash
# Idempotently create a Python venv with the official MCP SDK (mcp==2.3.0) for the
# interop tests (actors/tests/interop/py_client.py, py_session_client.py) and the reference
# Prometheus/OpenMetrics parser (prometheus-client, actors/tests/interop/parse_metrics.py) and the
# official OTLP protobuf definitions (opentelemetry-proto, actors/tests/interop/otlp_receiver.py).
# Prints the venv's python path as the last line of stdout.
# Venv location: ${MCPD_CACHE:-<repo>/.cache}/venv.
set -euo pipefail

MCP_VERSION="2.3.0"
PROMETHEUS_CLIENT_VERSION="0.26.0"
OTEL_PROTO_VERSION="1.45.2"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MCPD_CACHE:-$REPO/.cache}"
VENV="$CACHE/venv"
PY="$VENV/bin/python"

have_deps() {
    [ -x "$PY" ] && "$PY" -c "
import importlib.metadata as m, sys
import mcp, mcp.client, prometheus_client.parser, prometheus_client.openmetrics.parser
import opentelemetry.proto.collector.trace.v1.trace_service_pb2
sys.exit(m.version('mcp') != '$MCP_VERSION' or m.version('prometheus-client') != '$PROMETHEUS_CLIENT_VERSION'
         or m.version('opentelemetry-proto') != '$OTEL_PROTO_VERSION')
" >/dev/null 2>&1
}

if ! have_deps; then
    # A venv whose interpreter no longer runs (its base Python was removed) is rebuilt.
    # Only a directory that is a venv (it has pyvenv.cfg) is removed; anything else stops here.
    if [ -e "$VENV" ] && ! "$PY" -c "import contextlib, venv" >/dev/null 2>&1; then
        if [ ! -f "$VENV/pyvenv.cfg" ]; then
            echo "setup-python.sh: $VENV is not a Python venv; move it away" >&2
            exit 1
        fi
        echo "setup-python.sh: $VENV is broken; recreating it" >&2
        rm -rf -- "$VENV"
    fi
    if [ ! -x "$PY" ]; then
        mkdir -p "$CACHE"
        "${PYTHON:-python3}" -m venv "$VENV" >&2
    fi
    "$PY" -m pip install --quiet --disable-pip-version-check \
        "mcp==$MCP_VERSION" "prometheus-client==$PROMETHEUS_CLIENT_VERSION" \
        "opentelemetry-proto==$OTEL_PROTO_VERSION" >&2
    have_deps || {
        echo "setup-python.sh: mcp==$MCP_VERSION, prometheus-client==$PROMETHEUS_CLIENT_VERSION or opentelemetry-proto==$OTEL_PROTO_VERSION not importable after install" >&2
        exit 1
    }
fi

echo "$PY"
