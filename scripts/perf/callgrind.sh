#!/bin/bash
# User-space instructions and mallocs per request, deterministic (valgrind --tool=callgrind): warm
# up with 300 requests, zero the counters, send N, dump. Prints Ir/request and malloc calls/request;
# the profile is left in OUT.PID.1 (callgrind_annotate it).
#
# usage: scripts/perf/callgrind.sh MODE WIRE PORT N OUT
#   MODE: bare | http, WIRE: stateless | legacy (as scripts/perf/measure.sh).
# Build first: cargo build --release --example perf_server (or set PERF_SERVER to another build of it)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/counts.sh"
bin="${PERF_SERVER:-$here/../../target/release/examples/perf_server}"
mode=$1; wire=$2; port=$3; n=$4; out=$5
log=$(mktemp)
valgrind --tool=callgrind --callgrind-out-file="$out.%p" --dump-instr=no "$bin" "$mode" "$port" > "$log" 2>&1 &
pid=$!
for _ in $(seq 300); do grep -q " on " "$log" && break; sleep 0.1; done
python3 "$here/drive.py" "$wire" "$port" 300 > /dev/null
callgrind_control -z "$pid" > /dev/null 2>&1
python3 "$here/drive.py" "$wire" "$port" "$n" > /dev/null
callgrind_control -d "$pid" > /dev/null 2>&1
sleep 1
kill "$pid"; wait "$pid" 2>/dev/null
rm -f "$log"
profile="$out.$pid.1"
read -r total mallocs < <(counts "$profile")
echo "$mode/$wire: $((total / n)) instructions/request, $(awk -v m="$mallocs" -v n="$n" 'BEGIN{printf "%.1f", m / n}') mallocs/request ($profile)"
