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
