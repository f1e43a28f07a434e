#!/bin/bash
# Instructions and mallocs per stateless tools/call of the whole server with telemetry, as
# scripts/perf/callgrind.sh measures them (perf_server http, drive.py stateless), in one of three
# configurations: off (nothing configured), on (every span sampled, exported in protobuf with the
# metrics to a collector stand-in answering 200), ratio (parentbased_traceidratio 0.01, the
# callers' requests carrying no context). Spans go out in batches of 100 (a full batch is sent at
# once), so what the export thread does for the measured requests is in the count, but for the
# last batch's less than 100.
#
# usage: scripts/perf/telemetry-server.sh MODE PORT N OUT   (MODE: off, on, ratio)
# Build first: cargo build --release --example perf_server (or set PERF_SERVER to another build).
set -u
here=$(cd "$(dirname "$0")" && pwd)
mode=$1; port=$2; n=$3; out=$4
sink_port=$((port + 1))
python3 - "$sink_port" <<'PY' &
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"{}")
    def log_message(self, *_):
        pass
server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink)
server.daemon_threads = True
server.serve_forever()
PY
sink=$!
trap 'kill "$sink" 2>/dev/null' EXIT
case "$mode" in
  off) ;;
  on) export OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$sink_port" OTEL_BSP_MAX_EXPORT_BATCH_SIZE=100 ;;
  ratio) export OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$sink_port" OTEL_BSP_MAX_EXPORT_BATCH_SIZE=100 \
           OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_TRACES_SAMPLER_ARG=0.01 ;;
  *) echo "MODE is off, on or ratio" >&2; exit 2 ;;
esac
"$here/callgrind.sh" http stateless "$port" "$n" "$out" | sed "s|^http/stateless|telemetry $mode: http/stateless|"
