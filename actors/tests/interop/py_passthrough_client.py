"""Gateway pass-through with the official Python SDK (mcp==2.3.0) as the downstream client of
`mcpd --servers` over npm server-everything (stdio). Two sessions:

1. with an elicitation callback: calls `<prefix>trigger-long-running-operation` with a progress
   callback, then `<prefix>trigger-elicitation-request`, answering the elicitation with a name;
2. without the elicitation capability: calls `<prefix>trigger-elicitation-request` again.

Prints one JSON line:

    {"progress": [[progress, total, message], ...], "long": <result>,
     "elicitations": [<params>...], "elicited": <result>, "refused": <result> | {"error": ...}}

Usage: py_passthrough_client.py <url> <prefix>
Exit 0 on success, 1 on failure (60 s overall limit), 2 on bad usage.
"""

from __future__ import annotations

import sys
from typing import Any

TIMEOUT_S = 60.0


async def session(url: str, **callbacks: Any):
    import json_run

    return await json_run.http_session(url, TIMEOUT_S, **callbacks)


def dump(result: Any) -> dict[str, Any]:
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def call(client: Any, name: str, args: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    from mcp.shared.exceptions import MCPError

    try:
        return dump(await client.session.call_tool(name, args, **kwargs))
    except MCPError as e:
        return {"error": {"code": e.error.code, "message": e.error.message}}


async def run(url: str, prefix: str) -> dict[str, Any]:
    import mcp_types as types

    elicitations: list[dict[str, Any]] = []

    async def on_elicit(_context: Any, params: Any) -> Any:
        elicitations.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        return types.ElicitResult(action="accept", content={"name": "Ada Lovelace", "check": True})

    progress: list[list[Any]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append([value, total, message])

    out: dict[str, Any] = {}
    stack, client = await session(url, elicitation_callback=on_elicit)
    async with stack:
        out["long"] = await call(
            client, f"{prefix}trigger-long-running-operation", {"duration": 1, "steps": 3}, progress_callback=on_progress
        )
        out["progress"] = progress
        out["elicited"] = await call(client, f"{prefix}trigger-elicitation-request", {})
        out["elicitations"] = elicitations
    stack, client = await session(url)
    async with stack:
        out["refused"] = await call(client, f"{prefix}trigger-elicitation-request", {})
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write(__doc__ or "")
        return 2
    import json_run

    return json_run.main_result(lambda: run(argv[0], argv[1]), timeout_s=TIMEOUT_S)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
