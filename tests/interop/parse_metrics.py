#!/usr/bin/env python3
"""Parse mcpd's `/metrics` body with the reference parsers of the Prometheus Python client.

Requires `prometheus-client==0.26.0` (see scripts/setup-python.sh).

Usage:
    parse_metrics.py < metrics.txt

Reads the exposition from stdin and parses it twice:
  * as OpenMetrics 1.0 (`prometheus_client.openmetrics.parser.text_string_to_metric_families`),
  * as the Prometheus text format 0.0.4 (`prometheus_client.parser.text_string_to_metric_families`).

Both parsers are lazy generators, so every family is drained to surface errors.

On success writes one JSON line to stdout, built from the OpenMetrics parse:

    {family_name: {"type": str, "samples": [[sample_name, {label: value}, value], ...]}, ...}

Exit 0 when both parses succeed; then each way in which the Prometheus text parse reads the
body differently from the OpenMetrics parse (e.g. an OpenMetrics counter family `x` whose
samples are `x_total`) is written to stderr as a line `prometheus-vs-openmetrics: ...`.
Otherwise exit 1 after writing, for each parser that failed, a line
`<parser>: <ExceptionType>: <message>` to stderr (followed by the traceback), where <parser> is
`openmetrics` or `prometheus`; exit 2 on bad usage.
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


def differences(openmetrics: list[Any], prometheus: list[Any]) -> list[str]:
    """How the Prometheus text parse reads the same body differently from the OpenMetrics parse."""
    om = {f.name: f for f in openmetrics}
    out: list[str] = []
    by_name: dict[str, list[Any]] = {}
    for family in prometheus:
        by_name.setdefault(family.name, []).append(family)
    for name, family in om.items():
        matches = by_name.get(name, [])
        if not matches:
            out.append(f"family {name} ({family.type}) is missing")
            continue
        types = sorted({f.type for f in matches})
        samples = sum(len(f.samples) for f in matches)
        if types != [family.type] or samples != len(family.samples) or len(matches) != 1:
            out.append(
                f"family {name}: OpenMetrics reads 1 {family.type} family with {len(family.samples)} sample(s), "
                f"Prometheus reads {len(matches)} {'/'.join(types)} family(ies) with {samples} sample(s)"
            )
    for name, families in by_name.items():
        if name not in om:
            types = "/".join(sorted({f.type for f in families}))
            samples = sum(len(f.samples) for f in families)
            out.append(f"extra family {name}: {len(families)} {types} family(ies) with {samples} sample(s)")
    return out


def main(argv: list[str]) -> int:
    if argv:
        sys.stderr.write("usage: parse_metrics.py < metrics.txt\n")
        return 2
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
    from prometheus_client.parser import text_string_to_metric_families as parse_prometheus

    text = sys.stdin.read()
    parsed: dict[str, list[Any]] = {}
    for name, parse in (("openmetrics", parse_openmetrics), ("prometheus", parse_prometheus)):
        try:
            parsed[name] = list(parse(text))
        except Exception as e:  # noqa: BLE001 - any parser error is the report
            sys.stderr.write(f"{name}: {type(e).__name__}: {e}\n")
            traceback.print_exc(file=sys.stderr)
    if len(parsed) != 2:
        return 1
    # Both accepted the body; say (on stderr, for the record) where their readings differ.
    for line in differences(parsed["openmetrics"], parsed["prometheus"]):
        sys.stderr.write(f"prometheus-vs-openmetrics: {line}\n")
    sys.stdout.write(json.dumps(summarize(parsed["openmetrics"])) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
