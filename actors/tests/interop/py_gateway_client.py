"""Drive an MCP server over HTTP with the official Python SDK (mcp==2.3.0): list its tools, then
call each `TOOL=ARGS_JSON` given, in order. Prints one JSON line:

    {"tools": [names...], "calls": [{"tool": name, "result": <CallToolResult> | "error": {...}}, ...]}

Usage: py_gateway_client.py <url> TOOL=ARGS_JSON [TOOL=ARGS_JSON ...]
With MCPD_TEST_KEY set, every request carries it as X-API-Key.
Exit 0 on success, 1 on failure (30 s overall limit), 2 on bad usage.
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Any

TIMEOUT_S = 30.0


async def run(url: str, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    import httpx2
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    async with contextlib.AsyncExitStack() as stack:
        import os

        key = os.environ.get("MCPD_TEST_KEY")
        headers = {"X-API-Key": key} if key else None
        http = await stack.enter_async_context(
            httpx2.AsyncClient(timeout=httpx2.Timeout(TIMEOUT_S), headers=headers)
        )
        client = await stack.enter_async_context(
            Client(streamable_http_client(url, http_client=http), mode="legacy", cache=None, read_timeout_seconds=TIMEOUT_S)
        )
        names: list[str] = []
        cursor = None
        while True:
            from mcp_types import PaginatedRequestParams

            page = await client.session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
            names.extend(tool.name for tool in page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        results = []
        for name, args in calls:
            try:
                result = await client.session.call_tool(name, args)
                results.append({"tool": name, "result": result.model_dump(mode="json", by_alias=True, exclude_none=True)})
            except MCPError as e:
                results.append({"tool": name, "error": {"code": e.error.code, "message": e.error.message}})
        return {"tools": names, "calls": results}


def main(argv: list[str]) -> int:
    if len(argv) < 1:
        sys.stderr.write(__doc__ or "")
        return 2
    try:
        calls = []
        for spec in argv[1:]:
            name, _, args = spec.partition("=")
            calls.append((name, json.loads(args or "{}")))
    except ValueError as e:
        sys.stderr.write(f"bad call spec: {e}\n")
        return 2
    import json_run

    return json_run.main_result(lambda: run(argv[0], calls), timeout_s=TIMEOUT_S)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
