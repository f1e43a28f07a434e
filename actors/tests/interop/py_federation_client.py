"""Gateway federation with the official Python SDK (mcp==2.3.0) as the downstream client of
`mcpd serve -s --servers FILE`: one session (initialize handshake) that lists the prompts,
resources and resource templates, gets and reads and completes what the plan says, then
subscribes to one URI, calls the tool that makes its remote send updates, and waits for the
first `notifications/resources/updated` of that URI.

The plan is one JSON argument:

    {"prompts": [[name, {args}], ...], "reads": [uri, ...],
     "completions": [["ref/prompt" | "ref/resource", name_or_uri, argument, value], ...],
     "subscribe": uri, "trigger": tool}

Prints one JSON line:

    {"prompts": [names...], "resources": [uris...], "templates": [uriTemplates...],
     "got": [<GetPromptResult> | {"error": ...}], "read": [<ReadResourceResult> | {"error": ...}],
     "completed": [<CompleteResult> | {"error": ...}], "subscribed": <EmptyResult>,
     "updated": [uris...]}

Usage: py_federation_client.py <url> <plan>
Exit 0 on success, 1 on failure (60 s overall limit), 2 on bad usage.
"""

from __future__ import annotations

import json
import sys
from typing import Any

TIMEOUT_S = 60.0
#: How long to wait for the remote's update (server-everything sends one at once, then every 5 s).
UPDATE_WAIT_S = 20.0


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
    import anyio
    import json_run
    import mcp_types as types

    updated: list[str] = []
    first_update = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updated.append(str(message.params.uri))
            if str(message.params.uri) == plan.get("subscribe"):
                first_update.set()

    out: dict[str, Any] = {}
    stack, client = await json_run.http_session(url, TIMEOUT_S, message_handler=on_message)
    async with stack:
        session = client.session
        out["prompts"] = [p.name for p in await all_pages(session.list_prompts, "prompts")]
        out["resources"] = [str(r.uri) for r in await all_pages(session.list_resources, "resources")]
        templates = await all_pages(session.list_resource_templates, "resource_templates")
        out["templates"] = [t.uri_template for t in templates]
        out["got"] = [await attempt(session.get_prompt(name, args)) for name, args in plan.get("prompts", [])]
        out["read"] = [await attempt(session.read_resource(uri)) for uri in plan.get("reads", [])]
        completed = []
        for kind, target, argument, value in plan.get("completions", []):
            if kind == "ref/prompt":
                ref: Any = types.PromptReference(name=target)
            else:
                ref = types.ResourceTemplateReference(uri=target)
            completed.append(await attempt(session.complete(ref, {"name": argument, "value": value})))
        out["completed"] = completed
        if plan.get("subscribe"):
            out["subscribed"] = await attempt(session.subscribe_resource(plan["subscribe"]))
            out["trigger"] = await attempt(session.call_tool(plan["trigger"], {}))
            with anyio.move_on_after(UPDATE_WAIT_S):
                await first_update.wait()
            out["updated"] = list(updated)
            # Stop the remote's updates for this gateway again.
            await attempt(session.call_tool(plan["trigger"], {}))
            await attempt(session.unsubscribe_resource(plan["subscribe"]))
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
