#!/bin/bash
# The instructions and mallocs of one span, deterministic (callgrind, every thread counted: the
# export thread's encoding and sending included): runs target/release/examples/telemetry_cost
# with N and 2N spans after the same warm-up and prints the difference divided by N.
#
# usage: scripts/perf/telemetry-callgrind.sh MODE N   (MODE: off, on, ratio)
# Build first: cargo build --release --example telemetry_cost (or set TELEMETRY_COST).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/counts.sh"
cost="${TELEMETRY_COST:-${CARGO_TARGET_DIR:-$here/../../target}/release/examples/telemetry_cost}"
mode=$1; n=$2
work=$(mktemp -d)
valgrind --tool=callgrind --callgrind-out-file="$work/one" --dump-instr=no "$cost" "$n" "$mode" > /dev/null 2>&1
valgrind --tool=callgrind --callgrind-out-file="$work/two" --dump-instr=no "$cost" "$((2 * n))" "$mode" > /dev/null 2>&1
read -r i1 m1 < <(counts "$work/one")
read -r i2 m2 < <(counts "$work/two")
echo "telemetry/$mode: $(( (i2 - i1) / n )) instructions/span, $(awk -v a="$m1" -v b="$m2" -v n="$n" 'BEGIN{printf "%.1f", (b - a) / n}') mallocs/span (profiles in $work: one = N spans, two = 2N)"
