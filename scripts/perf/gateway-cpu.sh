#!/bin/bash
# CPU per gateway call, in the gateway and in the remote
# measured natively in one run: a remote `mcpd serve` and a gateway
# `mcpd serve --servers` to it, loaded by wrk with stateless `tools/call remote__echo` through
# the gateway; utime+stime of each process from /proc/PID/stat around each run (kernel time
# included, which callgrind does not see). Prints CPU us per call of each and their ratio.
#
# usage: scripts/perf/gateway-cpu.sh GATEWAY_PORT REMOTE_PORT SECONDS [REPEATS] [CONNECTIONS]
# Build first: cargo build --release -p mcpd-actors --bin mcpd (or set MCPD_BIN). Needs wrk.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin="${MCPD_BIN:-$here/../../target/release/mcpd}"
gport=$1; rport=$2; secs=$3; reps=${4:-3}; conns=${5:-8}
work=$(mktemp -d)
printf '{"mcpServers": {"remote": {"url": "http://127.0.0.1:%s/mcp"}}}\n' "$rport" > "$work/servers.json"
sed 's/"echo"/"remote__echo"/g' "$here/stateless.lua" > "$work/gateway.lua"
start() { # NAME PORT ARGS...: its pid in $pid
  local name=$1 port=$2; shift 2
  "$bin" serve -p "$port" --no-file-tools --no-file-resources "$@" > "$work/$name.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/status" > /dev/null && return 0; sleep 0.1
  done
  echo "$name did not start: $(cat "$work/$name.log")" >&2; return 1
}
start remote "$rport" || exit 1; remote=$pid
start gateway "$gport" --servers "$work/servers.json" || { kill "$remote"; exit 1; }; gateway=$pid
for _ in $(seq 100); do
  python3 "$here/drive.py" stateless "$gport" 1 remote__echo > /dev/null 2>&1 && break; sleep 0.2
done
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
wrk -t1 -c"$conns" -d2s -s "$work/gateway.lua" "http://127.0.0.1:$gport/mcp" > /dev/null
for _ in $(seq "$reps"); do
  g0=$(ticks "$gateway"); r0=$(ticks "$remote")
  out=$(wrk -t1 -c"$conns" -d"${secs}s" -s "$work/gateway.lua" "http://127.0.0.1:$gport/mcp")
  g1=$(ticks "$gateway"); r1=$(ticks "$remote")
  reqs=$(echo "$out" | awk '/requests in/{print $1}')
  non2xx=$(echo "$out" | awk '/Non-2xx/{print $NF}')
  awk -v g="$((g1 - g0))" -v r="$((r1 - r0))" -v n="$reqs" -v bad="${non2xx:-0}" 'BEGIN{
    printf "gateway %.1f us/call, remote %.1f us/call, gateway/remote %.2fx (%d calls, non-2xx %s)\n",
      g * 10000.0 / n, r * 10000.0 / n, g / r, n, bad }'
done
kill "$gateway" "$remote"; wait "$gateway" "$remote" 2>/dev/null
rm -f "$work/servers.json" "$work/gateway.lua" "$work/remote.log" "$work/gateway.log"; rmdir "$work"
