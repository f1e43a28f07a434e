#!/usr/bin/env python3
"""A FastMCP-style server built on the official Python MCP SDK, for mcpd's client interop tests
(actors/tests/integration/client_interop.rs).

Requires Python >= 3.11 and `mcp==2.3.0` (see scripts/setup-python.sh). In mcp 2.x the v1
`FastMCP` class is `mcp.server.mcpserver.MCPServer`; this script uses it with the Streamable
HTTP app in stateless JSON mode (`stateless_http=True, json_response=True`): no session ids,
every answer a single `application/json` body, never an SSE stream.

Usage:
    fastmcp_server.py <port>        (0: any free port)

Binds 127.0.0.1 only (the socket is bound here, before uvicorn starts, so port 0 works and
the real port is known), then prints to stdout

    LISTENING http://127.0.0.1:<port>/mcp

and serves until killed, printing one line per HTTP request it receives:

    REQUEST {"method": "POST", "path": "/mcp", "mcpSessionId": str | null,
             "mcpProtocolVersion": str | null, "mcpMethod": str | null}

(the same shape as loopback_listen.cjs), so the test can see which wire the
client chose. SDK and uvicorn logs go to stderr.

Tools:
  * add(a: int, b: int) -> int  the sum (text content "<a+b>" plus structured content);
  * fail()                      always raises `ToolError("deliberate failure")`, which the
                                SDK turns into a tool result with `isError: true` and that text.
"""

from __future__ import annotations

import json
import socket
import sys
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("fastmcp-interop", version="1.0.0", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
def fail() -> str:
    """Always fails."""
    # A ToolError's message reaches the client; any other exception is reported as the
    # generic "Error executing tool fail".
    raise ToolError("deliberate failure")


class LogRequests:
    """ASGI middleware: one `REQUEST {json}` line on stdout per HTTP request, then the app."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            entry = {
                "method": scope["method"],
                "path": scope["path"],
                "mcpSessionId": headers.get("mcp-session-id"),
                "mcpProtocolVersion": headers.get("mcp-protocol-version"),
                "mcpMethod": headers.get("mcp-method"),
            }
            print("REQUEST " + json.dumps(entry), flush=True)
        await self.app(scope, receive, send)


def main() -> int:
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        print("usage: fastmcp_server.py <port>", file=sys.stderr)
        return 2
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", int(sys.argv[1])))
    sock.listen(128)
    sock.set_inheritable(True)
    port = sock.getsockname()[1]
    app = server.streamable_http_app(stateless_http=True, json_response=True, host="127.0.0.1")
    config = uvicorn.Config(LogRequests(app), host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    print(f"LISTENING http://127.0.0.1:{port}/mcp", flush=True)
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
