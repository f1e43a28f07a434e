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
total=$(callgrind_annotate "$profile" 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')
# Calls to malloc: the `calls=` line after each call record whose callee (cfn) is malloc. Callgrind
# names a function once, as `(id) name` in an fn= or cfn= line, and later by `(id)` alone.
mallocs=$(awk '
  function name(spec) {
    if (match(spec, /^\([0-9]+\) /)) { names[substr(spec, 2, RLENGTH - 3)] = substr(spec, RLENGTH + 1) }
    if (match(spec, /^\([0-9]+\)/)) { return names[substr(spec, 2, RLENGTH - 2)] }
    return spec
  }
  /^fn=/ { name(substr($0, 4)); next }
  /^cfn=/ { is_malloc = (name(substr($0, 5)) == "malloc"); next }
  /^calls=/ { if (is_malloc) { split($0, a, /[= ]/); sum += a[2] } is_malloc = 0 }
  END { print sum + 0 }' "$profile")
echo "$mode/$wire: $((total / n)) instructions/request, $(awk -v m="$mallocs" -v n="$n" 'BEGIN{printf "%.1f", m / n}') mallocs/request ($profile)"
