"""Sends N keep-alive POST /mcp requests of one wire (stateless | legacy) to 127.0.0.1:PORT and checks
each answer. usage: drive.py WIRE PORT N [TOOL] (TOOL: an echo tool's name, default echo;
MCPD_PERF_TOKEN set: sent as a bearer token)"""
import http.client, os, sys
kind, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
tool = sys.argv[4] if len(sys.argv) > 4 else "echo"
STATELESS = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"%s","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}' % tool
LEGACY = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"%s","arguments":{"text":"hello"}}}' % tool
h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
if kind == "legacy":
    body = LEGACY; h["MCP-Protocol-Version"] = "2025-11-25"
else:
    body = STATELESS; h.update({"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool})
if os.environ.get("MCPD_PERF_TOKEN"):
    h["Authorization"] = "Bearer " + os.environ["MCPD_PERF_TOKEN"]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
last = b""
for i in range(n):
    c.request("POST", "/mcp", body=body, headers=h)
    r = c.getresponse(); last = r.read()
    assert r.status == 200 and b'"text":"hello"' in last, (r.status, last)
print(last.decode())
