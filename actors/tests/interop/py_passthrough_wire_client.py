"""Gateway pass-through on either wire, with the official Python SDK (mcp==2.3.0) as the downstream
client of `mcpd --servers` whose remotes are `ev` (the `everything` conformance fixture over
HTTP), `slow` (another mcpd whose declared tool `slow` appends its process id to a file, then
sleeps two minutes) and, in a session, `everything` (npm server-everything over stdio).

Mode `legacy` (a session, initialize handshake):
  1. sets its log level to `debug` and calls `everything__toggle-simulated-logging` and
     `ev__test_tool_with_logging`, recording the log messages its logging callback hears;
  2. starts `slow__slow`, waits until the remote's command wrote its process id, cancels the
     call (the SDK sends `notifications/cancelled`) and, with the session still open, waits
     (at most 15 s) until that process is gone; then calls `ev__test_tool_with_logging` again
     to show the session still works.

Mode `2026-07-28` (the stateless wire, no session, log level `debug` opted in per request):
  1. calls `ev__test_tool_with_logging`, recording the log messages;
  2. calls `ev__test_input_required_result_elicitation` driving the round itself: the first
     answer (`input_required`) and the retry with its answer (`inputResponses` + `requestState`);
  3. cancels `slow__slow` as above (on this wire the SDK closes the request's stream).

Prints one JSON line:

    {"logs": [{"level", "logger", "data"}...], "logged": <result>,
     "cancel": {"pid": int, "gone": bool, "error": str}, "after": <result>,
     "round": <first answer>, "final": <result>}          (round and final: 2026-07-28 only)

Usage: py_passthrough_wire_client.py <url> <legacy|2026-07-28> <pid file>
Exit 0 on success, 1 on failure (60 s overall limit), 2 on bad usage.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

TIMEOUT_S = 60.0
#: How long the remote's cancelled command may take to be gone.
GONE_S = 15.0


def dump(result: Any) -> dict[str, Any]:
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


def last_pid(pid_file: Path, after: int) -> int | None:
    """The last process id in `pid_file` once it holds more than `after` lines."""
    try:
        lines = pid_file.read_text().split()
    except FileNotFoundError:
        return None
    return int(lines[-1]) if len(lines) > after else None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def cancel_slow(client: Any, pid_file: Path) -> dict[str, Any]:
    """Starts `slow__slow`, cancels it once the remote's command runs, and waits until the
    command is gone."""
    import anyio

    before = len(pid_file.read_text().split()) if pid_file.exists() else 0
    out: dict[str, Any] = {}

    async def slow() -> None:
        try:
            out["result"] = dump(await client.call_tool("slow__slow", {}))
        except Exception as e:  # noqa: BLE001 - reported, the test judges it
            out["error"] = repr(e)

    async with anyio.create_task_group() as tg:
        tg.start_soon(slow)
        with anyio.fail_after(20):
            while (pid := last_pid(pid_file, before)) is None:
                await anyio.sleep(0.05)
        out["pid"] = pid
        tg.cancel_scope.cancel()
    out["gone"] = False
    with anyio.move_on_after(GONE_S):
        while alive(pid):
            await anyio.sleep(0.05)
        out["gone"] = True
    return out


async def run(url: str, mode: str, pid_file: Path) -> dict[str, Any]:
    import json_run
    import mcp_types as types

    logs: list[dict[str, Any]] = []

    async def on_log(params: Any) -> None:
        logs.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))

    asked: list[dict[str, Any]] = []

    async def on_elicit(_context: Any, params: Any) -> Any:
        asked.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    out: dict[str, Any] = {}
    options: dict[str, Any] = {"logging_callback": on_log, "elicitation_callback": on_elicit}
    if mode == "legacy":
        stack, client = await json_run.http_session(url, TIMEOUT_S, **options)
    else:
        stack, client = await json_run.http_session(url, TIMEOUT_S, mode=mode, log_level="debug", **options)
    async with stack:
        if mode == "legacy":
            await client.set_logging_level("debug")
            out["toggled"] = dump(await client.call_tool("everything__toggle-simulated-logging", {}))
        out["logged"] = dump(await client.call_tool("ev__test_tool_with_logging", {}))
        out["logs"] = list(logs)
        if mode != "legacy":
            first = await client.session.call_tool(
                "ev__test_input_required_result_elicitation", {}, allow_input_required=True
            )
            out["round"] = dump(first)
            # The answer this client's person gives (the callback is for the SDK's own loop).
            responses = {
                key: types.ElicitResult(action="accept", content={"name": "Ada Lovelace"})
                for key in (getattr(first, "input_requests", None) or {})
            }
            final = await client.session.call_tool(
                "ev__test_input_required_result_elicitation",
                {},
                input_responses=responses,
                request_state=getattr(first, "request_state", None),
                allow_input_required=True,
            )
            out["final"] = dump(final)
            out["asked"] = asked
        out["cancel"] = await cancel_slow(client, pid_file)
        out["after"] = dump(await client.call_tool("ev__test_tool_with_logging", {}))
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in ("legacy", "2026-07-28"):
        sys.stderr.write(__doc__ or "")
        return 2
    import json_run

    return json_run.main_result(lambda: run(argv[0], argv[1], Path(argv[2])), timeout_s=TIMEOUT_S)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
