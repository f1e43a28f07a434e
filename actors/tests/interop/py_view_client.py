"""One endpoint of mcpd (the whole gateway's `/mcp` or a virtual server's `/mcp/<name>`) as the
official Python SDK (mcp==2.3.0) sees it, in one session (initialize handshake): every tool (name,
description, `_meta`), prompt, resource and resource template it lists, then the calls and reads
of the plan.

The plan is one JSON argument:

    {"calls": [[tool, {args}], ...], "reads": [uri, ...]}

Prints one JSON line:

    {"tools": [{"name", "description", "_meta"}...], "prompts": [names...],
     "resources": [{"uri", "mimeType"}...], "templates": [uriTemplates...],
     "calls": [<CallToolResult> | {"error": ...}], "reads": [<ReadResourceResult> | {"error": ...}]}

With MCPD_TEST_KEY set, every request carries it as `Authorization: Bearer`.
Usage: py_view_client.py <url> <plan>
Exit 0 on success, 1 on failure (60 s overall limit), 2 on bad usage.
"""

from __future__ import annotations

import json
import sys
from typing import Any

TIMEOUT_S = 60.0


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def attempt(work: Any) -> Any:
    from mcp.shared.exceptions import MCPError

    try:
        return dump(await work)
    except MCPError as e:
        return {"error": {"code": e.error.code, "message": e.error.message}}


async def all_pages(list_page: Any, member: str) -> list[Any]:
    from mcp_types import PaginatedRequestParams

    items: list[Any] = []
    cursor = None
    for _ in range(100):
        page = await list_page(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        items.extend(getattr(page, member))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


async def run(url: str, plan: dict[str, Any]) -> dict[str, Any]:
    import json_run

    out: dict[str, Any] = {}
    stack, client = await json_run.http_session(url, TIMEOUT_S)
    async with stack:
        session = client.session
        tools = await all_pages(session.list_tools, "tools")
        out["tools"] = [
            {"name": t.name, "description": t.description, "_meta": dump(t).get("_meta")} for t in tools
        ]
        out["prompts"] = [p.name for p in await all_pages(session.list_prompts, "prompts")]
        resources = await all_pages(session.list_resources, "resources")
        out["resources"] = [{"uri": str(r.uri), "mimeType": r.mime_type} for r in resources]
        templates = await all_pages(session.list_resource_templates, "resource_templates")
        out["templates"] = [t.uri_template for t in templates]
        out["calls"] = [await attempt(session.call_tool(name, args)) for name, args in plan.get("calls", [])]
        out["reads"] = [await attempt(session.read_resource(uri)) for uri in plan.get("reads", [])]
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write(__doc__ or "")
        return 2
    try:
        plan = json.loads(argv[1])
    except ValueError as e:
        sys.stderr.write(f"bad plan: {e}\n")
        return 2
    import json_run

    return json_run.main_result(lambda: run(argv[0], plan), TIMEOUT_S)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
