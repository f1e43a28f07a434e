#!/bin/bash
# The gateway's hop against the cheapest hop there is: throughput of stateless `tools/call echo`
# (wrk, 16 connections) straight to a remote `mcpd serve`, through nginx (one worker, keep-alive
# to the remote, a plain reverse proxy that parses nothing), and through an mcpd gateway (one
# worker) — same machine, same run, ratios to direct. A hop costs the machine one more server
# exchange and one more client exchange whatever does it; nginx shows what that costs here.
#
# usage: scripts/perf/hop-vs-nginx.sh BASE_PORT [SECONDS] [ROUNDS]   (uses BASE_PORT..BASE_PORT+2)
# Build first: cargo build --release -p mcpd-actors --bin mcpd (or set MCPD_BIN). Needs wrk, nginx.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/nginx.sh"
bin="${MCPD_BIN:-$here/../../target/release/mcpd}"
base=$1; secs=${2:-4}; rounds=${3:-3}
remote=$base; gateway=$((base + 1)); proxy=$((base + 2))
work=$(mktemp -d)
printf '{"mcpServers": {"remote": {"url": "http://127.0.0.1:%s/mcp"}}}\n' "$remote" > "$work/servers.json"
sed 's/"echo"/"remote__echo"/g' "$here/stateless.lua" > "$work/gateway.lua"
nginx_config "$work" "$proxy $remote" > "$work/nginx.conf"
pids=()
cleanup() { # the processes this script started, then its own mktemp directory (nginx writes
  # subdirectories there), removed only when it is that directory
  kill "${pids[@]}" 2> /dev/null; sleep 0.3
  case "$work" in "${TMPDIR:-/tmp}"/tmp.?*) rm -rf -- "$work" ;; esac
}
trap cleanup EXIT
"$bin" serve -p "$remote" --workers 1 --no-file-tools --no-file-resources > "$work/remote.log" 2>&1 & pids+=($!)
sleep 0.5
"$bin" serve -p "$gateway" --workers 1 --no-file-tools --no-file-resources --servers "$work/servers.json" \
  > "$work/gateway.log" 2>&1 & pids+=($!)
nginx -c "$work/nginx.conf" -p "$work" > "$work/nginx.log" 2>&1 & pids+=($!)
sleep 2
rps() { # URL SECONDS SCRIPT: answered requests per second (2xx only; any other is reported)
  wrk -t1 -c16 -d"${2}s" -s "$3" "$1" | awk '/requests in/{n=$1; t=$4+0} /Non-2xx/{bad=$NF}
    END{ if (bad) print "non-2xx: " bad > "/dev/stderr"; print (n - bad) / t }'
}
direct="http://127.0.0.1:$remote/mcp"; via_nginx="http://127.0.0.1:$proxy/mcp"; via_gateway="http://127.0.0.1:$gateway/mcp"
for url in "$direct" "$via_nginx"; do rps "$url" 1 "$here/stateless.lua" > /dev/null; done
rps "$via_gateway" 1 "$work/gateway.lua" > /dev/null
for _ in $(seq "$rounds"); do
  d=$(rps "$direct" "$secs" "$here/stateless.lua")
  n=$(rps "$via_nginx" "$secs" "$here/stateless.lua")
  g=$(rps "$via_gateway" "$secs" "$work/gateway.lua")
  awk -v d="$d" -v n="$n" -v g="$g" 'BEGIN{
    printf "direct %.0f req/s, through nginx %.0f (%.2fx), through the mcpd gateway %.0f (%.2fx)\n", d, n, n/d, g, g/d }'
done
