#!/bin/bash
# The client side's user-space instructions and mallocs per call, deterministic (callgrind): runs
# target/release/examples/perf_client (KIND client or raw) under callgrind twice, with N and 2N
# counted calls after the same warm-up, against a perf_server started here, and prints the
# difference divided by N — start-up, negotiation and warm-up cancel out.
#
# usage: scripts/perf/client-callgrind.sh KIND PORT N
# Build first: cargo build --release --example perf_client --example perf_server
# (or set PERF_CLIENT / PERF_SERVER to other builds of them).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/counts.sh"
client="${PERF_CLIENT:-$here/../../target/release/examples/perf_client}"
server="${PERF_SERVER:-$here/../../target/release/examples/perf_server}"
kind=$1; port=$2; n=$3
work=$(mktemp -d)
"$server" http "$port" > "$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -q " on " "$work/server.log" && break; sleep 0.1; done
url="http://127.0.0.1:$port/mcp"
valgrind --tool=callgrind --callgrind-out-file="$work/one" --dump-instr=no "$client" "$url" "$n" "$kind" > /dev/null 2>&1
valgrind --tool=callgrind --callgrind-out-file="$work/two" --dump-instr=no "$client" "$url" "$((2 * n))" "$kind" > /dev/null 2>&1
kill "$server_pid"; wait "$server_pid" 2>/dev/null
read -r i1 m1 < <(counts "$work/one")
read -r i2 m2 < <(counts "$work/two")
echo "client/$kind: $(( (i2 - i1) / n )) instructions/call, $(awk -v a="$m1" -v b="$m2" -v n="$n" 'BEGIN{printf "%.1f", (b - a) / n}') mallocs/call (profiles in $work: one = N calls, two = 2N)"
