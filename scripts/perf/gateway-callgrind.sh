#!/bin/bash
# Where a gateway call's CPU goes, deterministic (valgrind --tool=callgrind on two processes): a
# remote `mcpd serve` and a gateway `mcpd serve --servers` to it, each under callgrind; warm up
# with 300 calls of `remote__echo` through the gateway, zero both counters, send N, dump both.
# Prints user-space instructions and mallocs per call in each process and the gateway/remote
# ratio; the profiles are left in
# OUT.gateway.PID.1 and OUT.remote.PID.1 (callgrind_annotate them).
#
# usage: scripts/perf/gateway-callgrind.sh WIRE GATEWAY_PORT REMOTE_PORT N OUT
#   WIRE: stateless | legacy (the wire of the calls to the gateway; the gateway picks its own
#   to the remote). Build first: cargo build --release -p mcpd-actors --bin mcpd (or set MCPD_BIN).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/counts.sh"
bin="${MCPD_BIN:-$here/../../target/release/mcpd}"
wire=$1; gport=$2; rport=$3; n=$4; out=$5
work=$(mktemp -d)
servers="$work/servers.json"
printf '{"mcpServers": {"remote": {"url": "http://127.0.0.1:%s/mcp"}}}\n' "$rport" > "$servers"
start() { # NAME PORT ARGS...: starts one mcpd under callgrind; its pid in $pid
  local name=$1 port=$2; shift 2
  valgrind --tool=callgrind --callgrind-out-file="$out.$name.%p" --dump-instr=no \
    "$bin" serve -p "$port" --no-file-tools --no-file-resources "$@" > "$work/$name.log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    python3 - "$port" <<'PY' 2>/dev/null && return 0
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=2); c.request("GET", "/status"); c.getresponse()
PY
    sleep 0.2
  done
  echo "$name did not start: $(cat "$work/$name.log")" >&2; return 1
}
start remote "$rport" || exit 1; remote=$pid
start gateway "$gport" --servers "$servers" || { kill "$remote"; exit 1; }; gateway=$pid
for _ in $(seq 300); do # the gateway lists the remote's tools in the background
  python3 "$here/drive.py" "$wire" "$gport" 1 remote__echo > /dev/null 2>&1 && break; sleep 0.2
done
python3 "$here/drive.py" "$wire" "$gport" 300 remote__echo > /dev/null
callgrind_control -z "$remote" > /dev/null 2>&1; callgrind_control -z "$gateway" > /dev/null 2>&1
python3 "$here/drive.py" "$wire" "$gport" "$n" remote__echo > /dev/null
callgrind_control -d "$gateway" > /dev/null 2>&1; callgrind_control -d "$remote" > /dev/null 2>&1
sleep 1
kill "$gateway" "$remote"; wait "$gateway" "$remote" 2>/dev/null
rm -f "$servers" "$work/remote.log" "$work/gateway.log"; rmdir "$work"
read -r g_total g_mallocs < <(counts "$out.gateway.$gateway.1")
read -r r_total r_mallocs < <(counts "$out.remote.$remote.1")
per() { awk -v a="$1" -v n="$n" 'BEGIN{printf "%.1f", a / n}'; }
echo "gateway/$wire: $((g_total / n)) instructions/call, $(per "$g_mallocs") mallocs/call ($out.gateway.$gateway.1)"
echo "remote: $((r_total / n)) instructions/call, $(per "$r_mallocs") mallocs/call ($out.remote.$remote.1)"
echo "gateway/remote: $(awk -v g="$g_total" -v r="$r_total" 'BEGIN{printf "%.2f", g / r}')x instructions"
