"""What the interop client scripts share: run one coroutine under an overall deadline with
everything it prints sent to stderr, then write its result as one JSON line on the real stdout.

    sys.exit(json_run.main_result(lambda: run(url), timeout_s=30.0))

Returns the exit code: 0 with the JSON line written, 1 (traceback on stderr) when the coroutine
failed or ran out of time.
"""

from __future__ import annotations

import contextlib
import json
import sys
import traceback
from typing import Any, Awaitable, Callable


def main_result(work: Callable[[], Awaitable[Any]], timeout_s: float) -> int:
    import anyio

    real_stdout = sys.stdout
    try:
        with contextlib.redirect_stdout(sys.stderr):

            async def bounded() -> Any:
                with anyio.fail_after(timeout_s):
                    return await work()

            result = anyio.run(bounded)
    except BaseException:  # noqa: BLE001 - includes ExceptionGroup / TimeoutError
        traceback.print_exc(file=sys.stderr)
        return 1
    real_stdout.write(json.dumps(result) + "\n")
    real_stdout.flush()
    return 0


async def http_session(url: str, timeout_s: float, **options: Any) -> tuple[contextlib.AsyncExitStack, Any]:
    """An MCP client over Streamable HTTP with the initialize handshake (`mode="legacy"` unless
    `options` has another `mode`, no response cache), `options` (callbacks such as `message_handler`) passed to `Client`: the exit
    stack that closes it, and the client. With `MCPD_TEST_KEY` set, every request carries it as
    `Authorization: Bearer`."""
    import os

    import httpx2
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    stack = contextlib.AsyncExitStack()
    key = os.environ.get("MCPD_TEST_KEY")
    headers = {"Authorization": f"Bearer {key}"} if key else None
    http = await stack.enter_async_context(httpx2.AsyncClient(timeout=httpx2.Timeout(timeout_s), headers=headers))
    client = await stack.enter_async_context(
        Client(
            streamable_http_client(url, http_client=http),
            mode=options.pop("mode", "legacy"),
            cache=None,
            read_timeout_seconds=timeout_s,
            **options,
        )
    )
    return stack, client
