"""A long-lived MCP client session over streamable HTTP, built on the official Python SDK
(mcp==2.3.0), driven line by line: the test sends one JSON command per line on stdin and reads
one JSON answer per line on stdout, while the session stays open and counts the server's
`notifications/tools/list_changed`.

Commands (one JSON object per line):

    {"op": "list"}                          -> {"tools": [names...], "listChanged": n}
    {"op": "call", "tool": T, "arguments": {...}}
                                            -> {"result": <CallToolResult>} | {"error": {"code", "message"}}
    {"op": "wait_list_changed", "after": n, "timeout": s}
                                            -> {"listChanged": m, "timedOut": bool}  (m > n unless timed out)
    {"op": "quit"}                          -> {"bye": true}, then the session ends (DELETE)

Usage: py_reload_client.py <url>     (with MCPD_TEST_KEY set, sent as `Authorization: Bearer`)
Prints {"ready": true} once the session is initialized. Everything else (SDK logs, tracebacks)
goes to stderr. Exit 0 on a clean quit, 1 on failure (each command is bounded; the whole run
has a 300 s limit), 2 on bad usage.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any

COMMAND_TIMEOUT_S = 30.0
OVERALL_TIMEOUT_S = 300.0


def emit(value: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


async def run(url: str) -> None:
    import anyio
    import json_run
    from mcp.shared.exceptions import MCPError
    from mcp_types import PaginatedRequestParams

    changed = {"count": 0}
    heard = anyio.Event()
    state = {"event": heard}

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed["count"] += 1
            state["event"].set()
            state["event"] = anyio.Event()

    stack, client = await json_run.http_session(url, COMMAND_TIMEOUT_S, message_handler=on_message)
    async with stack:
        emit({"ready": True})
        while True:
            line = await anyio.to_thread.run_sync(sys.stdin.readline)
            if not line:
                return
            command = json.loads(line)
            op = command.get("op")
            with anyio.fail_after(COMMAND_TIMEOUT_S):
                if op == "list":
                    names: list[str] = []
                    cursor = None
                    while True:
                        params = PaginatedRequestParams(cursor=cursor) if cursor else None
                        page = await client.session.list_tools(params=params)
                        names.extend(tool.name for tool in page.tools)
                        cursor = page.next_cursor
                        if not cursor:
                            break
                    emit({"tools": names, "listChanged": changed["count"]})
                elif op == "call":
                    try:
                        result = await client.session.call_tool(command["tool"], command.get("arguments") or {})
                        emit({"result": result.model_dump(mode="json", by_alias=True, exclude_none=True)})
                    except MCPError as e:
                        emit({"error": {"code": e.error.code, "message": e.error.message}})
                elif op == "wait_list_changed":
                    after = int(command.get("after", 0))
                    timeout = min(float(command.get("timeout", 10.0)), COMMAND_TIMEOUT_S - 1)
                    with anyio.move_on_after(timeout):
                        while changed["count"] <= after:
                            await state["event"].wait()
                    emit({"listChanged": changed["count"], "timedOut": changed["count"] <= after})
                elif op == "quit":
                    emit({"bye": True})
                    return
                else:
                    emit({"badCommand": command})


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write(__doc__ or "")
        return 2
    import anyio

    async def bounded() -> None:
        with anyio.fail_after(OVERALL_TIMEOUT_S):
            await run(argv[0])

    try:
        anyio.run(bounded)
    except BaseException:  # noqa: BLE001 - report everything
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
