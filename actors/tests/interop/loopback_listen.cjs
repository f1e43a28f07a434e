// Preloaded with `node --require <this file> <server.js> ...` by actors/tests/integration/client_interop.rs
// (see actors/tests/integration/support/interop_servers.rs).
//
// Third-party servers such as @modelcontextprotocol/server-everything call `app.listen(PORT)`,
// which binds every interface. This preload makes every TCP `listen` of the process bind
// 127.0.0.1 instead (keeping the requested port; PORT=0 picks a free one) and, once the socket
// is bound, prints on stderr
//
//     LISTENING http://127.0.0.1:<port>/mcp
//
// so the test learns the real port without a race. It also prints one line per HTTP request,
//
//     REQUEST {"method":"POST","path":"/mcp","mcpSessionId":...,"mcpProtocolVersion":...,"mcpMethod":...}
//
// (header values or null), so the test can see which wire the client chose. Unix-socket and
// handle listens are passed through unchanged.
"use strict";

const net = require("node:net");
const http = require("node:http");

const originalListen = net.Server.prototype.listen;

function header(req, name) {
  const value = req.headers[name];
  return value === undefined ? null : String(value);
}

net.Server.prototype.listen = function listenOnLoopback(...args) {
  const callback = typeof args[args.length - 1] === "function" ? args.pop() : undefined;
  const tail = callback ? [callback] : [];
  const first = args[0];
  let options;
  if (first !== null && typeof first === "object") {
    if (first.path !== undefined || first.fd !== undefined || "_handle" in first) {
      return originalListen.call(this, ...args, ...tail);
    }
    options = { ...first };
  } else if (first === undefined || typeof first === "number" || /^\d+$/.test(String(first))) {
    options = { port: first === undefined ? 0 : Number(first) };
  } else {
    // A pipe path: not TCP, leave it alone.
    return originalListen.call(this, ...args, ...tail);
  }
  options.host = "127.0.0.1";
  delete options.ipv6Only;
  if (this instanceof http.Server) {
    this.on("request", (req) => {
      const entry = {
        method: req.method,
        path: req.url,
        mcpSessionId: header(req, "mcp-session-id"),
        mcpProtocolVersion: header(req, "mcp-protocol-version"),
        mcpMethod: header(req, "mcp-method"),
      };
      process.stderr.write(`REQUEST ${JSON.stringify(entry)}\n`);
    });
  }
  this.once("listening", () => {
    const address = this.address();
    if (address && typeof address === "object") {
      process.stderr.write(`LISTENING http://127.0.0.1:${address.port}/mcp\n`);
    }
  });
  return originalListen.call(this, options, ...tail);
};
