#!/usr/bin/env python3
"""Reads project-file resources of mcpd with the official Python MCP SDK (mcp==2.3.0).

Usage:
    py_resource_client.py <uri> stdio <command> [args...]
    py_resource_client.py <uri> http <url>

Flow: connect (plain `initialize` handshake), resources/list (all pages),
resources/templates/list, resources/read <uri>. Writes exactly one JSON line to stdout:

    {"serverInfo": {...}, "resources": [uris...], "templates": [uriTemplates...],
     "read": <ReadResourceResult>}

Everything else goes to stderr. Exit 0 on success, 1 on any failure (30 s overall
timeout), 2 on bad usage.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

OVERALL_TIMEOUT_S = 30.0


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def run(uri: str, kind: str, target: str, extra: list[str]) -> dict[str, Any]:
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp_types import PaginatedRequestParams

    async with contextlib.AsyncExitStack() as stack:
        if kind == "stdio":
            params = StdioServerParameters(command=target, args=extra, env=dict(os.environ))
            transport = stdio_client(params, errlog=sys.stderr)
        else:
            import httpx2

            http = await stack.enter_async_context(httpx2.AsyncClient(timeout=httpx2.Timeout(OVERALL_TIMEOUT_S)))
            transport = streamable_http_client(target, http_client=http)
        client = await stack.enter_async_context(
            Client(transport, mode="legacy", cache=None, read_timeout_seconds=OVERALL_TIMEOUT_S)
        )
        session = client.session
        server_info = client.server_info
        out: dict[str, Any] = {"serverInfo": dump(server_info) if server_info is not None else None}
        uris: list[str] = []
        cursor: str | None = None
        for _ in range(100):
            page = await session.list_resources(params=None if cursor is None else PaginatedRequestParams(cursor=cursor))
            uris.extend(str(r.uri) for r in page.resources)
            cursor = page.next_cursor
            if not cursor:
                break
        out["resources"] = uris
        templates = await session.list_resource_templates()
        out["templates"] = [t.uri_template for t in templates.resource_templates]
        out["read"] = dump(await session.read_resource(uri))
        return out


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] not in ("stdio", "http"):
        sys.stderr.write(__doc__ or "")
        return 2
    uri, kind, target, extra = argv[0], argv[1], argv[2], argv[3:]
    import json_run

    return json_run.main_result(lambda: run(uri, kind, target, extra), OVERALL_TIMEOUT_S)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
