#!/usr/bin/env python3
"""Streamable-HTTP *session* interop client for mcpd, built on the official Python MCP SDK.

Requires Python >= 3.11 and `mcp==2.3.0` (see scripts/setup-python.sh); uses only the
stdlib, `mcp`, and the SDK's own dependencies (anyio, httpx2, mcp_types).

Usage:
    py_session_client.py <url>

Flow (against a server with sessions, e.g. `examples/everything.rs`):
  1. connect in legacy mode: the `initialize` handshake, answered with an `Mcp-Session-Id`;
     the client offers an elicitation callback, so it declares the elicitation capability;
  2. tools/call `test_tool_with_progress` with a progress callback (the SDK uses the
     request id as the progress token and routes `notifications/progress` to the callback);
  3. tools/call `test_elicitation` {"message": "Who are you?"}; the server sends
     `elicitation/create`, the callback accepts with {"username": "py-user", ...};
  4. leave the client context, which makes the SDK DELETE its session.

The SDK does not expose the session id or the progress token it mints, so the script reads
both off the wire with httpx2 event hooks (the id from the `Mcp-Session-Id` response header,
the token from the `tools/call` request body) and also records the DELETE it sends.

Writes exactly one JSON line to stdout:

    {"sessionId": str | null, "protocolVersion": str,
     "progressToken": <token sent on the wire> | null,
     "progress": [[progress, total, message], ...], "progressResult": <tool result text>,
     "elicitationResult": <tool result text>, "elicitationRequests": int,
     "elicitationCapability": bool, "delete": {"sessionId": str | null, "status": int | null} | null}

Everything else (SDK logs, tracebacks) goes to stderr. Exit 0 on success, 1 on any failure
(including the 60 s overall timeout), 2 on bad usage.
"""

from __future__ import annotations

import contextlib
import json
import sys
import traceback
from typing import Any

OVERALL_TIMEOUT_S = 60.0
ELICITATION_ANSWER = {"username": "py-user", "email": "py@example.com"}


def result_text(result: Any) -> str:
    """The text of a CallToolResult's text blocks; raises when the tool reported an error."""
    if getattr(result, "is_error", False):
        raise RuntimeError(f"tool returned an error: {result!r}")
    return "".join(getattr(block, "text", "") for block in result.content)


async def run(url: str) -> dict[str, Any]:
    import anyio
    import httpx2  # the SDK's HTTP stack in v2 (fork of httpx); a dependency of `mcp`
    from mcp import types
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    wire: dict[str, Any] = {
        "sessionId": None,
        "progressToken": None,
        "elicitationCapability": False,
        "delete": None,
    }

    async def on_request(request: httpx2.Request) -> None:
        if request.method == "DELETE":
            wire["delete"] = {"sessionId": request.headers.get("mcp-session-id"), "status": None}
            return
        if request.method != "POST":
            return
        try:
            body = json.loads(request.content or b"null")
        except (ValueError, httpx2.RequestNotRead):
            return
        if not isinstance(body, dict):
            return
        params = body.get("params") or {}
        if body.get("method") == "initialize":
            wire["elicitationCapability"] = "elicitation" in (params.get("capabilities") or {})
        elif body.get("method") == "tools/call" and params.get("name") == "test_tool_with_progress":
            wire["progressToken"] = (params.get("_meta") or {}).get("progressToken")

    async def on_response(response: httpx2.Response) -> None:
        if response.request.method == "DELETE" and wire["delete"] is not None:
            wire["delete"]["status"] = response.status_code
        elif wire["sessionId"] is None and (sid := response.headers.get("mcp-session-id")):
            wire["sessionId"] = sid

    progress: list[list[Any]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append([value, total, message])

    elicitations: list[Any] = []

    async def on_elicitation(_context: Any, params: Any) -> types.ElicitResult:
        elicitations.append(params)
        return types.ElicitResult(action="accept", content=dict(ELICITATION_ANSWER))

    out: dict[str, Any] = {}
    async with contextlib.AsyncExitStack() as stack:
        http = await stack.enter_async_context(
            httpx2.AsyncClient(
                timeout=httpx2.Timeout(OVERALL_TIMEOUT_S),
                event_hooks={"request": [on_request], "response": [on_response]},
            )
        )
        transport = streamable_http_client(url, http_client=http, terminate_on_close=True)
        async with Client(
            transport,
            mode="legacy",
            cache=None,
            read_timeout_seconds=OVERALL_TIMEOUT_S,
            elicitation_callback=on_elicitation,
        ) as client:
            out["protocolVersion"] = client.protocol_version

            result = await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
            out["progressResult"] = result_text(result)
            # Progress callbacks run as spawned tasks; give any still queued a moment to land.
            with anyio.move_on_after(2.0):
                while len(progress) < 3:
                    await anyio.sleep(0.02)

            result = await client.call_tool("test_elicitation", {"message": "Who are you?"})
            out["elicitationResult"] = result_text(result)
        # Leaving the Client context closed the transport, which sent DELETE for the session.

    return {
        "sessionId": wire["sessionId"],
        "protocolVersion": out["protocolVersion"],
        "progressToken": wire["progressToken"],
        "progress": progress,
        "progressResult": out["progressResult"],
        "elicitationResult": out["elicitationResult"],
        "elicitationRequests": len(elicitations),
        "elicitationCapability": wire["elicitationCapability"],
        "delete": wire["delete"],
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0].startswith("-"):
        sys.stderr.write("usage: py_session_client.py <url>\n")
        return 2
    url = argv[0]

    import anyio

    # Nothing but the final JSON line may reach stdout.
    real_stdout = sys.stdout
    try:
        with contextlib.redirect_stdout(sys.stderr):

            async def bounded() -> dict[str, Any]:
                with anyio.fail_after(OVERALL_TIMEOUT_S):
                    return await run(url)

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
