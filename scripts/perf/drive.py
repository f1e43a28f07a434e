"""Sends N keep-alive POST /mcp requests of one wire (stateless | legacy) to 127.0.0.1:PORT and checks
each answer. usage: drive.py WIRE PORT N [TOOL] (TOOL: an echo tool's name, default echo;
MCPD_PERF_TOKEN set: sent as a bearer token; MCPD_PERF_CAPS set: the client capabilities a
stateless request declares, as JSON text, instead of {})

Each request goes out in one write, head and body together, as HTTP clients such as awc, undici
or curl send a small request (Python's http.client writes them apart, which costs the server an
extra read and parse attempt per request and would be counted against it)."""
import os, socket, sys
kind, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
tool = sys.argv[4] if len(sys.argv) > 4 else "echo"
STATELESS = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"%s","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":%s}}}' % (tool, os.environ.get("MCPD_PERF_CAPS", "{}"))
LEGACY = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"%s","arguments":{"text":"hello"}}}' % tool
h = {"Host": "127.0.0.1:%d" % port, "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
if kind == "legacy":
    body = LEGACY; h["MCP-Protocol-Version"] = "2025-11-25"
else:
    body = STATELESS; h.update({"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool})
if os.environ.get("MCPD_PERF_TOKEN"):
    h["Authorization"] = "Bearer " + os.environ["MCPD_PERF_TOKEN"]
h["Content-Length"] = str(len(body.encode()))
request = ("POST /mcp HTTP/1.1\r\n" + "".join("%s: %s\r\n" % kv for kv in h.items()) + "\r\n" + body).encode()
s = socket.create_connection(("127.0.0.1", port), timeout=30)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
buf = b""
def response():
    """One response: status and body (Content-Length framed; chunked is not expected)."""
    global buf
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536); assert chunk, "connection closed"; buf += chunk
    head, buf = buf.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    length = next((int(l.split(b":", 1)[1]) for l in lines[1:] if l.lower().startswith(b"content-length:")), None)
    assert length is not None, head
    while len(buf) < length:
        chunk = s.recv(65536); assert chunk, "connection closed"; buf += chunk
    data, buf = buf[:length], buf[length:]
    return status, data
last = b""
for i in range(n):
    s.sendall(request)
    status, last = response()
    assert status == 200 and b'"text":"hello"' in last, (status, last)
print(last.decode())
