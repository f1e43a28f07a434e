#!/usr/bin/env python3
"""A small MCP server on Python's standard http.server, answering in one HTTP framing a real
server may use, for the client's and the gateway's connection tests.

Usage: http_variants_server.py MODE WIRE

MODE:
    http10        HTTP/1.0 with Content-Length; the connection closes after each answer
                  (http.server's default)
    http10-eof    HTTP/1.0 without Content-Length: the body ends when the connection closes
    http11-close  HTTP/1.1 with Content-Length and `Connection: close`, then closes
    http11-idle   HTTP/1.1 keep-alive; a connection idle for 150 ms is dropped
    chunked       HTTP/1.1 keep-alive, `Transfer-Encoding: chunked` in several chunks, with
                  trailers
    gzip          HTTP/1.1 keep-alive, `Content-Encoding: gzip` with Content-Length

WIRE:
    handshake     2025-06-18 (`initialize`; `server/discover` is -32601)
    stateless     2026-07-28 (`server/discover` offers it)

Tools: `echo` (returns its `text` argument). Prints `listening on PORT` once bound to a free
loopback port, then serves until killed.
"""

from __future__ import annotations

import gzip
import http.server
import json
import sys

MODES = ("http10", "http10-eof", "http11-close", "http11-idle", "chunked", "gzip")


def answer(message: dict, stateless: bool) -> dict:
    method = message.get("method")
    result: dict
    if method == "server/discover" and stateless:
        result = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                  "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "py-variants", "version": "1"}}}
    elif method == "initialize" and not stateless:
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "py-variants", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "echo", "description": "Echoes its text.",
                             "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]}
    elif method == "tools/call":
        text = (message.get("params") or {}).get("arguments", {}).get("text", "")
        result = {"content": [{"type": "text", "text": text}]}
    else:
        return {"jsonrpc": "2.0", "id": message.get("id"), "error": {"code": -32601, "message": f"no {method}"}}
    if stateless:
        result["resultType"] = "complete"
    return {"jsonrpc": "2.0", "id": message.get("id"), "result": result}


def handler(mode: str, stateless: bool) -> type:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0" if mode.startswith("http10") else "HTTP/1.1"
        # http11-idle: a keep-alive connection that brings no request within 150 ms is closed.
        timeout = 0.15 if mode == "http11-idle" else None

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            message = json.loads(self.rfile.read(length))
            if "id" not in message:
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = json.dumps(answer(message, stateless)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if mode == "http10-eof":
                self.end_headers()
                self.wfile.write(body)
                self.close_connection = True
            elif mode == "http11-close":
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)
                self.close_connection = True
            elif mode == "chunked":
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Trailer", "X-Checksum")
                self.end_headers()
                for at in range(0, len(body), 7):
                    piece = body[at:at + 7]
                    self.wfile.write(b"%x;ext=1\r\n%s\r\n" % (len(piece), piece))
                self.wfile.write(b"0\r\nX-Checksum: %d\r\n\r\n" % len(body))
            elif mode == "gzip":
                packed = gzip.compress(body)
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(packed)))
                self.end_headers()
                self.wfile.write(packed)
            else:
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            self.wfile.flush()

        def do_GET(self) -> None:
            self.send_response(405)
            self.send_header("Allow", "POST")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_DELETE(self) -> None:
            self.do_GET()

        def log_message(self, *args: object) -> None:
            pass

    return Handler


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in MODES or argv[1] not in ("handshake", "stateless"):
        sys.stderr.write(__doc__ or "")
        return 2
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler(argv[0], argv[1] == "stateless"))
    server.daemon_threads = True
    print(f"listening on {server.server_address[1]}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
