-- Session-mode tools/call echo (2025-11-25 streamable HTTP), for scripts/perf/cluster-cpu.sh.
-- A session per connection: run wrk with as many threads as connections (-tN -cN), so each
-- thread (its own Lua state) has one connection, whose first request is `initialize` (the
-- answer's Mcp-Session-Id is kept), the second `notifications/initialized`, and every other a
-- `tools/call echo` in that session. A 404 (the session is gone) makes the next request
-- initialize again.
local version = "2025-11-25"
local session = nil
local initialized = false

local function headers(extra)
  local h = {
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream",
  }
  if session then
    h["Mcp-Session-Id"] = session
    h["MCP-Protocol-Version"] = version
  end
  return h
end

local initialize = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"' .. version
  .. '","capabilities":{},"clientInfo":{"name":"wrk","version":"1"}}}'
local notified = '{"jsonrpc":"2.0","method":"notifications/initialized"}'
local call = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'

function request()
  if session == nil then
    return wrk.format("POST", wrk.path, headers(), initialize)
  elseif not initialized then
    initialized = true
    return wrk.format("POST", wrk.path, headers(), notified)
  end
  return wrk.format("POST", wrk.path, headers(), call)
end

function response(status, response_headers, body)
  if session == nil then
    for name, value in pairs(response_headers) do
      if string.lower(name) == "mcp-session-id" then
        session = value
      end
    end
  elseif status == 404 then
    session = nil
    initialized = false
  end
end
