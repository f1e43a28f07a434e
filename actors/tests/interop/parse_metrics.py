#!/usr/bin/env python3
"""Parse mcpd's `/metrics` body with the reference parsers of the Prometheus Python client.

Requires `prometheus-client==0.26.0` (see scripts/setup-python.sh).

Usage:
    parse_metrics.py openmetrics < metrics.txt   # OpenMetrics 1.0 parser
    parse_metrics.py prometheus < metrics.txt    # Prometheus text format 0.0.4 parser

Parses the exposition on stdin with the chosen parser (the parsers are lazy generators, so every
family is drained to surface errors) and writes one JSON line to stdout:

    {family_name: {"type": str, "samples": [[sample_name, {label: value}, value], ...]}, ...}

Exit 1 with `<parser>: <ExceptionType>: <message>` and the traceback on stderr when the parser
rejects the body; exit 2 on bad usage.
"""

from __future__ import annotations

import json
import math
import sys
import traceback
from typing import Any


def jsonable(value: float) -> Any:
    """JSON has no NaN or infinities: spell them as the exposition does."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return value


def summarize(families: list[Any]) -> dict[str, Any]:
    return {
        family.name: {
            "type": family.type,
            "samples": [[s.name, dict(s.labels), jsonable(s.value)] for s in family.samples],
        }
        for family in families
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("openmetrics", "prometheus"):
        sys.stderr.write("usage: parse_metrics.py openmetrics|prometheus < metrics.txt\n")
        return 2
    if argv[0] == "openmetrics":
        from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse
    else:
        from prometheus_client.parser import text_string_to_metric_families as parse

    text = sys.stdin.read()
    try:
        families = list(parse(text))
    except Exception as e:  # noqa: BLE001 - any parser error is the report
        sys.stderr.write(f"{argv[0]}: {type(e).__name__}: {e}\n")
        traceback.print_exc(file=sys.stderr)
        return 1
    sys.stdout.write(json.dumps(summarize(families)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
