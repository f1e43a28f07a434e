#!/usr/bin/env python3
"""One streamable-HTTP *session* spread over several mcpd instances, with the official Python SDK.

Requires Python >= 3.11 and `mcp==2.3.0` (see scripts/setup-python.sh); uses only the stdlib,
`mcp` and the SDK's own dependencies (anyio, httpx2, mcp_types).

Usage:
    py_cluster_session_client.py <url> <port-a> <port-b> <port-c>

The SDK talks to <url>, but its httpx2 client has a transport that sends every request to one of
three instances (all on 127.0.0.1) chosen by what the request is, so the test knows where each
step lands (A, B, C: the three ports):

    POST initialize                         A   (the session is created there)
    POST notifications/initialized          B
    POST tools/list                         B
    POST tools/call test_elicitation        C   (its SSE stream carries elicitation/create)
    POST the elicitation answer (response)  A   (the tool waits for it on C)
    POST tools/call test_reconnection       B   (the tool closes its SSE stream mid-call)
    GET  (any: the standalone stream, and
          the resumption with Last-Event-ID) C  (the call's result comes from B's stream)
    DELETE                                  A
    anything else                           round-robin A, B, C

After the SDK's session ends (its DELETE went to A), a POST tools/list naming the deleted
session is sent to B and to C, again every 50 ms for up to 2 s until it is answered 404 (an
instance ends its copy when the DELETE's bus message reaches it): the last statuses are reported
(404 on both when the deletion is shared).

Writes exactly one JSON line to stdout:

    {"ports": {"A": int, "B": int, "C": int}, "sessionId": str | null, "protocolVersion": str,
     "served": [{"port": int, "what": str, "status": int, "lastEventId": str | null}, ...],
     "tools": [str, ...], "elicitations": [str, ...] (the messages the callback saw),
     "elicitationResult": str, "reconnectionResult": str,
     "afterDelete": {"B": int, "C": int}}

Everything else (SDK logs, tracebacks, one line per request: the port that served it) goes to
stderr. Exit 0 on success, 1 on any failure (including the 60 s overall timeout), 2 on bad usage.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
from typing import Any

OVERALL_TIMEOUT_S = 60.0
BUS_DELIVERY_S = 2.0  # how long a DELETE may take to end the other instances' copies
ELICITATION_MESSAGE = "Which instance are you on?"
ELICITATION_ANSWER = {"username": "cluster-user", "email": "cluster@example.com"}


def result_text(result: Any) -> str:
    """The text of a CallToolResult's text blocks; raises when the tool reported an error."""
    if getattr(result, "is_error", False):
        raise RuntimeError(f"tool returned an error: {result!r}")
    return "".join(getattr(block, "text", "") for block in result.content)


def classify(method: str, body: Any) -> str:
    """What a request is, as the routing table names it."""
    if method != "POST":
        return method
    if not isinstance(body, dict):
        return "POST (batch or unreadable)"
    if "method" not in body:
        return "response"
    name = body["method"]
    if name == "tools/call":
        return f"tools/call {(body.get('params') or {}).get('name')}"
    return name


# What goes where (indexes into the three ports A, B, C); see the module doc.
ROUTES = {
    "initialize": 0,
    "notifications/initialized": 1,
    "tools/list": 1,
    "tools/call test_elicitation": 2,
    "response": 0,
    "tools/call test_reconnection": 1,
    "GET": 2,
    "DELETE": 0,
}


async def run(url: str, ports: list[int]) -> dict[str, Any]:
    import anyio
    import httpx2  # the SDK's HTTP stack in v2 (fork of httpx); a dependency of `mcp`
    from mcp import types
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    served: list[dict[str, Any]] = []
    others = itertools.cycle(range(len(ports)))

    class Rotating(httpx2.AsyncBaseTransport):
        """Sends each request to the instance ROUTES names for it (its port rewritten)."""

        def __init__(self) -> None:
            self.inner = httpx2.AsyncHTTPTransport()

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            body: Any = None
            if request.method == "POST":
                try:
                    body = json.loads(request.content or b"null")
                except (ValueError, httpx2.RequestNotRead):
                    body = None
            what = classify(request.method, body)
            port = ports[ROUTES[what] if what in ROUTES else next(others)]
            request.url = request.url.copy_with(port=port)
            request.headers["host"] = f"127.0.0.1:{port}"
            last_event_id = request.headers.get("last-event-id")
            entry = {"port": port, "what": what, "status": None, "lastEventId": last_event_id}
            served.append(entry)
            response = await self.inner.handle_async_request(request)
            entry["status"] = response.status_code
            shown = f" Last-Event-ID {last_event_id}" if last_event_id else ""
            sys.stderr.write(f"py_cluster_session_client: {what}{shown} -> port {port}: {response.status_code}\n")
            return response

        async def aclose(self) -> None:
            await self.inner.aclose()

    wire: dict[str, Any] = {"sessionId": None}

    async def on_response(response: httpx2.Response) -> None:
        if wire["sessionId"] is None and (sid := response.headers.get("mcp-session-id")):
            wire["sessionId"] = sid

    elicitations: list[str] = []

    async def on_elicitation(_context: Any, params: Any) -> types.ElicitResult:
        elicitations.append(getattr(params, "message", repr(params)))
        return types.ElicitResult(action="accept", content=dict(ELICITATION_ANSWER))

    out: dict[str, Any] = {}
    async with contextlib.AsyncExitStack() as stack:
        http = await stack.enter_async_context(
            httpx2.AsyncClient(
                transport=Rotating(),
                timeout=httpx2.Timeout(OVERALL_TIMEOUT_S),
                event_hooks={"response": [on_response]},
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
            listed = await client.list_tools()
            out["tools"] = [tool.name for tool in listed.tools]
            result = await client.call_tool("test_elicitation", {"message": ELICITATION_MESSAGE})
            out["elicitationResult"] = result_text(result)
            result = await client.call_tool("test_reconnection", {})
            out["reconnectionResult"] = result_text(result)
        # Leaving the Client context closed the transport, which sent DELETE (to A).

    # The deleted session, named on the other two instances (a client of its own: no routing).
    after: dict[str, int] = {}
    if wire["sessionId"] is not None:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(OVERALL_TIMEOUT_S)) as plain:
            for name, port in (("B", ports[1]), ("C", ports[2])):
                # An instance that adopted the session ends its copy when the DELETE's bus
                # message reaches it (milliseconds): asked again until it answers 404.
                with anyio.move_on_after(BUS_DELIVERY_S):
                    while after.get(name) != 404:
                        if name in after:
                            await anyio.sleep(0.05)
                        response = await plain.post(
                            f"http://127.0.0.1:{port}/mcp",
                            headers={
                                "content-type": "application/json",
                                "accept": "application/json, text/event-stream",
                                "mcp-session-id": wire["sessionId"],
                                "mcp-protocol-version": out["protocolVersion"],
                            },
                            content=json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tools/list"}),
                        )
                        after[name] = response.status_code

    return {
        "ports": {"A": ports[0], "B": ports[1], "C": ports[2]},
        "sessionId": wire["sessionId"],
        "protocolVersion": out["protocolVersion"],
        "served": served,
        "tools": out["tools"],
        "elicitations": elicitations,
        "elicitationResult": out["elicitationResult"],
        "reconnectionResult": out["reconnectionResult"],
        "afterDelete": after,
    }


def main(argv: list[str]) -> int:
    if len(argv) != 4 or argv[0].startswith("-") or not all(a.isdigit() for a in argv[1:]):
        sys.stderr.write("usage: py_cluster_session_client.py <url> <port-a> <port-b> <port-c>\n")
        return 2
    url, ports = argv[0], [int(a) for a in argv[1:]]

    import json_run

    # Nothing but the final JSON line reaches stdout.
    return json_run.main_result(lambda: run(url, ports), timeout_s=OVERALL_TIMEOUT_S)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
