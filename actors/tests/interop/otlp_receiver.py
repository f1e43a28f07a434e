#!/usr/bin/env python3
"""A small OTLP/HTTP receiver for the telemetry tests.

Serves POST /v1/traces and /v1/metrics on 127.0.0.1 (port 0: the kernel picks one; the first
line of stdout is `PORT <n>`), decodes each body with the official protobuf definitions
(PyPI opentelemetry-proto) -- `application/x-protobuf` as is, `application/json` through the
OTLP JSON mapping (hex trace and span ids) -- and appends one JSON line per request to --out:
{"path", "format", "status", "request"} where request is the decoded message as a dict with
proto field names and ids in lowercase hex. A body that does not decode is recorded with
"error" and answered 400.

Options: --status N answers every request with N (e.g. 500); --delay S waits S seconds before
answering (a slow collector).
"""

import argparse
import base64
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

MESSAGES = {"/v1/traces": ExportTraceServiceRequest, "/v1/metrics": ExportMetricsServiceRequest}
ID_FIELDS_JSON = {"traceId", "spanId", "parentSpanId"}
ID_FIELDS = {"trace_id", "span_id", "parent_span_id"}


def walk(value, fix):
    if isinstance(value, dict):
        return {k: fix(k, walk(v, fix)) for k, v in value.items()}
    if isinstance(value, list):
        return [walk(v, fix) for v in value]
    return value


def hex_ids_to_base64(key, value):
    if key in ID_FIELDS_JSON and isinstance(value, str):
        return base64.b64encode(bytes.fromhex(value)).decode()
    return value


def base64_ids_to_hex(key, value):
    if key in ID_FIELDS and isinstance(value, str):
        return base64.b64decode(value).hex()
    return value


def decode(path, content_type, body):
    message = MESSAGES[path]()
    if content_type.startswith("application/json"):
        json_format.ParseDict(walk(json.loads(body), hex_ids_to_base64), message)
        kind = "json"
    else:
        message.ParseFromString(body)
        kind = "protobuf"
    as_dict = json_format.MessageToDict(message, preserving_proto_field_name=True)
    return kind, walk(as_dict, base64_ids_to_hex)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--status", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()
    lock = threading.Lock()
    out = open(args.out, "a", encoding="utf-8")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            record = {"path": self.path, "status": args.status,
                      "content_type": self.headers.get("Content-Type", ""),
                      "headers": {k.lower(): v for k, v in self.headers.items()}}
            status = args.status
            if self.path not in MESSAGES:
                status = 404
                record["error"] = "unknown path"
            else:
                try:
                    record["format"], record["request"] = decode(self.path, record["content_type"], body)
                except Exception as e:  # a body that does not decode is the test's finding
                    status = 400
                    record["error"] = f"{type(e).__name__}: {e}"
            record["status"] = status
            with lock:
                out.write(json.dumps(record) + "\n")
                out.flush()
            if args.delay:
                time.sleep(args.delay)
            answer = b"{}" if status == 200 else b'{"message":"refused"}'
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *_):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    # The test ends this process; closing stdin ends it too.
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
