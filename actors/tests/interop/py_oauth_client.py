#!/usr/bin/env python3
"""The official Python MCP SDK's OAuth client against mcpd as a protected resource.

Requires `mcp==2.3.0` (scripts/setup-python.sh). Usage:

    py_oauth_client.py <mcp-url>

`mcp.client.auth.OAuthClientProvider` does everything the MCP authorization spec asks of a
client: on mcpd's 401 it reads the protected-resource metadata, discovers the authorization
server, registers dynamically, and runs the authorization-code flow with PKCE and the resource
indicator. Its redirect handler here plays the person with a browser: it follows the
authorization URL with cookies (the test authorization server approves at once) until the
redirect URI, and hands the code back. Then it lists the tools and calls `echo`.

Writes one JSON line: {"tools": [...], "echo": <CallToolResult>, "hops": n}. Exit 0 on success,
1 on any failure (30 s overall), 2 on bad usage.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any
from urllib.parse import parse_qs, urljoin, urlparse

OVERALL_TIMEOUT_S = 30.0
# Never served: the redirect handler stops when a redirect points here.
REDIRECT_URI = "http://127.0.0.1:9/callback"
MAX_HOPS = 10


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens = None
        self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens) -> None:
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info) -> None:
        self.client_info = client_info


async def run(url: str) -> dict[str, Any]:
    import httpx2
    from mcp.client import Client
    from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import OAuthClientMetadata

    found: dict[str, Any] = {}

    async def redirect_handler(authorization_url: str) -> None:
        # A browser: cookies kept, redirects followed by hand until the redirect URI.
        async with httpx2.AsyncClient(follow_redirects=False, timeout=OVERALL_TIMEOUT_S) as browser:
            target = authorization_url
            for hop in range(MAX_HOPS):
                if target.startswith(REDIRECT_URI):
                    query = parse_qs(urlparse(target).query)
                    found["result"] = {k: v[0] for k, v in query.items()}
                    found["hops"] = hop
                    return
                response = await browser.get(target)
                location = response.headers.get("location")
                if response.status_code not in (301, 302, 303, 307, 308) or not location:
                    raise RuntimeError(f"authorization stopped at {target}: HTTP {response.status_code} {response.text[:300]}")
                target = urljoin(target, location)
            raise RuntimeError(f"no redirect to {REDIRECT_URI} within {MAX_HOPS} hops")

    async def callback_handler() -> AuthorizationCodeResult:
        result = found.get("result") or {}
        if "error" in result:
            raise RuntimeError(f"authorization refused: {result}")
        return AuthorizationCodeResult(code=result["code"], state=result.get("state"), iss=result.get("iss"))

    metadata = OAuthClientMetadata(
        client_name="mcpd interop (python sdk)",
        redirect_uris=[REDIRECT_URI],
        grant_types=["authorization_code"],
        response_types=["code"],
        token_endpoint_auth_method="client_secret_post",
    )
    auth = OAuthClientProvider(url, metadata, MemoryStorage(), redirect_handler, callback_handler)
    async with contextlib.AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(auth=auth, timeout=httpx2.Timeout(OVERALL_TIMEOUT_S)))
        client = await stack.enter_async_context(
            Client(streamable_http_client(url, http_client=http), mode="legacy", cache=None, read_timeout_seconds=OVERALL_TIMEOUT_S)
        )
        page = await client.session.list_tools()
        echo = await client.session.call_tool("echo", {"text": "authorized"})
        return {
            "tools": [t.name for t in page.tools],
            "echo": echo.model_dump(mode="json", by_alias=True, exclude_none=True),
            "hops": found.get("hops"),
        }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: py_oauth_client.py <mcp-url>\n")
        return 2
    import json_run

    return json_run.main_result(lambda: run(argv[0]), OVERALL_TIMEOUT_S)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
