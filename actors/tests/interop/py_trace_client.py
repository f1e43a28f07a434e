"""Call tools over Streamable HTTP with the official Python SDK (mcp==2.3.0) from inside a
caller's span: the span context TRACE_ID/SPAN_ID (hex, sampled) is made the current one, and the
SDK's own SEP-414 propagation (OpenTelemetry's W3C propagator, `inject` into `params._meta`)
puts it into each request it sends. With only the OpenTelemetry API installed the SDK's spans
are non-recording: what it injects is the caller's context as given.

    {"calls": [{"tool": name, "result": <CallToolResult> | "error": {...}}, ...],
     "elicitations": [<the _meta of each elicitation/create the server sent>, ...]}

An elicitation the server asks for is accepted with {"username": "u", "email": "e@example.com"}.

Usage: py_trace_client.py URL TRACE_ID SPAN_ID TOOL=ARGS_JSON [TOOL=ARGS_JSON ...]
Exit 0 on success, 1 on failure (30 s overall limit), 2 on bad usage.
"""

from __future__ import annotations

import json
import sys
from typing import Any

TIMEOUT_S = 30.0


async def run(url: str, trace_id: str, span_id: str, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    import json_run
    from mcp.shared.exceptions import MCPError
    from mcp_types import ElicitResult

    caller = NonRecordingSpan(
        SpanContext(
            trace_id=int(trace_id, 16),
            span_id=int(span_id, 16),
            is_remote=False,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
    )
    elicitations: list[Any] = []

    async def on_elicitation(_context: Any, params: Any) -> ElicitResult:
        elicitations.append(params.model_dump(mode="json", by_alias=True).get("_meta"))
        return ElicitResult(action="accept", content={"username": "u", "email": "e@example.com"})

    stack, client = await json_run.http_session(url, TIMEOUT_S, elicitation_callback=on_elicitation)
    async with stack:
        results = []
        with trace.use_span(caller, end_on_exit=False):
            for name, args in calls:
                try:
                    result = await client.session.call_tool(name, args)
                    dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
                    results.append({"tool": name, "result": dumped})
                except MCPError as e:
                    results.append({"tool": name, "error": {"code": e.error.code, "message": e.error.message}})
        return {"calls": results, "elicitations": elicitations}


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        sys.stderr.write(__doc__ or "")
        return 2
    calls = []
    for spec in argv[3:]:
        name, _, args = spec.partition("=")
        calls.append((name, json.loads(args or "{}")))
    import json_run

    return json_run.main_result(lambda: run(argv[0], argv[1], argv[2], calls), timeout_s=TIMEOUT_S)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
