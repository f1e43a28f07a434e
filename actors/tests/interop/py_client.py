#!/usr/bin/env python3
"""Independent-peer interop client for mcpd, built on the official Python MCP SDK.

Requires Python >= 3.11 and `mcp==2.3.0` (see scripts/setup-python.sh); uses only
the stdlib, `mcp`, and the SDK's own dependencies (anyio, httpx2, mcp_types).

Usage:
    py_client.py [--mode legacy|auto] stdio <command> [args...]
    py_client.py [--mode legacy|auto] http <url> [--header K:V ...]

--mode legacy (default): plain `initialize` handshake (the client offers 2025-11-25).
--mode auto: the SDK's default v2 policy - probe `server/discover` first, fall back
    to `initialize` when the server rejects it.

Flow: connect, negotiate, tools/list (all pages), tools/call "echo"
{"text": "héllo from python"}, tools/call "no_such_tool". Writes exactly one
JSON line to stdout:

    {"protocolVersion": ..., "serverInfo": {...}, "tools": [names...],
     "echo": <CallToolResult>, "unknownTool": {"error": {"code", "message"}} | <CallToolResult>}

Everything else (SDK logs, server stderr, tracebacks) goes to stderr. Exit 0 on
success, 1 on any failure (including the 30 s overall timeout), 2 on bad usage.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from typing import Any

OVERALL_TIMEOUT_S = 30.0
ECHO_TEXT = "héllo from python"

USAGE = (
    "usage: py_client.py [--mode legacy|auto] stdio <command> [args...]\n"
    "       py_client.py [--mode legacy|auto] http <url> [--header K:V ...]\n"
)


class UsageError(Exception):
    pass


def parse_argv(argv: list[str]) -> dict[str, Any]:
    """Hand-rolled so that server args after the command are never interpreted."""
    mode = "legacy"
    i = 0
    while i < len(argv) and argv[i].startswith("--"):
        opt = argv[i]
        if opt == "--mode" and i + 1 < len(argv):
            mode = argv[i + 1]
            i += 2
        elif opt.startswith("--mode="):
            mode = opt.split("=", 1)[1]
            i += 1
        else:
            raise UsageError(f"unknown option {opt!r}")
    if mode not in ("legacy", "auto"):
        raise UsageError(f"--mode must be 'legacy' or 'auto', got {mode!r}")
    rest = argv[i:]
    if len(rest) < 2:
        raise UsageError("missing transport and target")
    kind, target, extra = rest[0], rest[1], rest[2:]
    if kind == "stdio":
        return {"kind": "stdio", "mode": mode, "command": target, "args": extra}
    if kind == "http":
        headers: dict[str, str] = {}
        j = 0
        while j < len(extra):
            a = extra[j]
            if a == "--header" and j + 1 < len(extra):
                hv = extra[j + 1]
                j += 2
            elif a.startswith("--header="):
                hv = a.split("=", 1)[1]
                j += 1
            else:
                raise UsageError(f"unexpected http argument {a!r}")
            if ":" not in hv:
                raise UsageError(f"header must be K:V, got {hv!r}")
            k, v = hv.split(":", 1)
            headers[k.strip()] = v.strip()
        return {"kind": "http", "mode": mode, "url": target, "headers": headers}
    raise UsageError(f"unknown transport {kind!r} (expected 'stdio' or 'http')")


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def run(cfg: dict[str, Any]) -> dict[str, Any]:
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError
    from mcp_types import PaginatedRequestParams

    async with contextlib.AsyncExitStack() as stack:
        if cfg["kind"] == "stdio":
            # The SDK passes only a small allowlist of env vars (HOME, PATH, ...) to the
            # child by default; forward the full environment so tests can configure the
            # server through env. The server's stderr is inherited (goes to our stderr).
            params = StdioServerParameters(command=cfg["command"], args=cfg["args"], env=dict(os.environ))
            transport = stdio_client(params, errlog=sys.stderr)
        else:
            import httpx2  # the SDK's HTTP stack in v2 (fork of httpx); a dependency of `mcp`

            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=cfg["headers"], timeout=httpx2.Timeout(OVERALL_TIMEOUT_S))
            )
            transport = streamable_http_client(cfg["url"], http_client=http)

        client = await stack.enter_async_context(
            Client(transport, mode=cfg["mode"], cache=None, read_timeout_seconds=OVERALL_TIMEOUT_S)
        )
        session = client.session

        server_info = client.server_info
        out: dict[str, Any] = {
            "protocolVersion": client.protocol_version,
            "serverInfo": dump(server_info) if server_info is not None else None,
        }

        names: list[str] = []
        cursor: str | None = None
        for _ in range(100):
            page = await session.list_tools(params=None if cursor is None else PaginatedRequestParams(cursor=cursor))
            names.extend(t.name for t in page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        out["tools"] = names

        echo = await session.call_tool("echo", {"text": ECHO_TEXT})
        out["echo"] = dump(echo)

        try:
            unknown = await session.call_tool("no_such_tool", {})
            out["unknownTool"] = dump(unknown)
        except MCPError as e:
            out["unknownTool"] = {"error": {"code": e.code, "message": e.message}}
        return out


def main(argv: list[str]) -> int:
    try:
        cfg = parse_argv(argv)
    except UsageError as e:
        sys.stderr.write(f"py_client.py: {e}\n{USAGE}")
        return 2

    import anyio

    # Nothing but the final JSON line may reach stdout: route any stray prints
    # (ours, the SDK's, or a logging handler's) to stderr while running.
    real_stdout = sys.stdout
    try:
        with contextlib.redirect_stdout(sys.stderr):

            async def bounded() -> dict[str, Any]:
                with anyio.fail_after(OVERALL_TIMEOUT_S):
                    return await run(cfg)

            result = anyio.run(bounded)
    except BaseException:  # noqa: BLE001 - includes ExceptionGroup / TimeoutError / KeyboardInterrupt
        traceback.print_exc(file=sys.stderr)
        sys.stderr.flush()
        return 1

    real_stdout.write(json.dumps(result) + "\n")
    real_stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
