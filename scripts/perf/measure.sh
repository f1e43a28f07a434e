#!/bin/bash
# Server CPU per request under wrk, from /proc/PID/stat (utime+stime) around a fixed-duration run.
#
# usage: scripts/perf/measure.sh MODE WIRE PORT SECONDS [REPEATS]
#   MODE: bare | http (target/release/examples/perf_server MODE PORT), WIRE: stateless | legacy
#   (bare answers the stateless body, as in benches/load/). Server pinned to core 1, wrk to core 0.
# Build first: cargo build --release --example perf_server (or set PERF_SERVER to another build of it)
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin="${PERF_SERVER:-$here/../../target/release/examples/perf_server}"
mode=$1; wire=$2; port=$3; secs=$4; reps=${5:-3}
log=$(mktemp)
taskset -c 1 "$bin" "$mode" "$port" > "$log" 2>&1 &
pid=$!
for _ in $(seq 50); do grep -q " on " "$log" && break; sleep 0.1; done
ticks() { awk '{print $14+$15}' "/proc/$pid/stat"; }
taskset -c 0 wrk -t1 -c32 -d1s -s "$here/$wire.lua" "http://127.0.0.1:$port/mcp" > /dev/null
for _ in $(seq "$reps"); do
  t0=$(ticks)
  out=$(taskset -c 0 wrk -t1 -c32 -d"${secs}s" -s "$here/$wire.lua" "http://127.0.0.1:$port/mcp")
  t1=$(ticks)
  reqs=$(echo "$out" | awk '/requests in/{print $1}')
  non2xx=$(echo "$out" | awk '/Non-2xx/{print $NF}')
  rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
  echo "$mode/$wire: $(awk -v a="$t0" -v b="$t1" -v n="$reqs" 'BEGIN{printf "%.2f us/req", (b-a)*10000.0/n}') req/s=$rps non2xx=${non2xx:-0}"
done
kill "$pid"; wait "$pid" 2>/dev/null
rm -f "$log"
