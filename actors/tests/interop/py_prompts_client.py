#!/usr/bin/env python3
"""Declared prompts and server metadata of `mcpd serve`, through the official Python MCP SDK.

Requires Python >= 3.11 and `mcp==2.3.0` (see scripts/setup-python.sh).

Usage:
    py_prompts_client.py [--mode legacy|auto] stdio <command> [args...]
    py_prompts_client.py [--mode legacy|auto] http <url>

Flow: connect, prompts/list, prompts/get "review" {"path": "notes.md", "focus": "bugs"},
prompts/get "recent" {"count": "2"}, completion/complete of review's "focus" with "b". Writes
exactly one JSON line to stdout:

    {"protocolVersion": ..., "serverInfo": {...}, "prompts": [<Prompt>...],
     "review": <GetPromptResult>, "recent": <GetPromptResult>, "completion": <CompleteResult>}

Everything else goes to stderr. Exit 0 on success, 1 on any failure (including the 30 s
overall timeout), 2 on bad usage.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

OVERALL_TIMEOUT_S = 30.0


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def parse_argv(argv: list[str]) -> dict[str, Any] | None:
    mode = "legacy"
    if len(argv) >= 2 and argv[0] == "--mode":
        mode, argv = argv[1], argv[2:]
    if mode not in ("legacy", "auto") or len(argv) < 2 or argv[0] not in ("stdio", "http"):
        return None
    if argv[0] == "stdio":
        return {"kind": "stdio", "mode": mode, "command": argv[1], "args": argv[2:]}
    return {"kind": "http", "mode": mode, "url": argv[1]}


async def run(cfg: dict[str, Any]) -> dict[str, Any]:
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp_types import PromptReference

    async with contextlib.AsyncExitStack() as stack:
        if cfg["kind"] == "stdio":
            params = StdioServerParameters(command=cfg["command"], args=cfg["args"], env=dict(os.environ))
            transport = stdio_client(params, errlog=sys.stderr)
        else:
            import httpx2

            http = await stack.enter_async_context(httpx2.AsyncClient(timeout=httpx2.Timeout(OVERALL_TIMEOUT_S)))
            transport = streamable_http_client(cfg["url"], http_client=http)
        client = await stack.enter_async_context(
            Client(transport, mode=cfg["mode"], cache=None, read_timeout_seconds=OVERALL_TIMEOUT_S)
        )
        session = client.session
        info = client.server_info
        out: dict[str, Any] = {
            "protocolVersion": client.protocol_version,
            "serverInfo": dump(info) if info is not None else None,
        }
        listed = await session.list_prompts()
        out["prompts"] = [dump(p) for p in listed.prompts]
        out["review"] = dump(await session.get_prompt("review", {"path": "notes.md", "focus": "bugs"}))
        out["recent"] = dump(await session.get_prompt("recent", {"count": "2"}))
        completion = await session.complete(PromptReference(name="review"), {"name": "focus", "value": "b"})
        out["completion"] = dump(completion)
        return out


def main(argv: list[str]) -> int:
    cfg = parse_argv(argv)
    if cfg is None:
        sys.stderr.write(__doc__ or "")
        return 2
    import json_run

    return json_run.main_result(lambda: run(cfg), OVERALL_TIMEOUT_S)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
