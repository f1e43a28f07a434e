"""Opens N streamable-HTTP sessions (`initialize`, 2025-11-25) on 127.0.0.1:PORT over one
keep-alive connection and prints how many opened. usage: open_sessions.py PORT N"""

import http.client
import json
import sys

port, count = int(sys.argv[1]), int(sys.argv[2])
body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2025-11-25"}
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
opened = 0
for _ in range(count):
    conn.request("POST", "/mcp", body, headers)
    answer = conn.getresponse()
    answer.read()
    if answer.status == 200 and answer.getheader("mcp-session-id"):
        opened += 1
print(opened)
if opened != count:
    sys.exit(f"open_sessions.py: {count - opened} of {count} initialize requests opened no session")
