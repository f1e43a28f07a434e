#!/bin/bash
# Cluster mode's cost: CPU per request of one `mcpd serve -s` in memory mode, of three
# `mcpd serve -s` (no Redis) behind nginx round-robin, and of three `mcpd serve -s --redis`
# behind nginx — same machine, same run, loaded by wrk with `tools/call echo`:
#   - stateless (2026-07-28, stateless.lua, -t1 -c16): one instance, three without Redis, three
#     with Redis; then at equal load per instance: one instance behind nginx at -c16 against
#     three with Redis behind nginx at -c48 (16 connections each), so each process batches
#     as much as the single one does; and one instance with Redis behind nginx against the same
#     without Redis (what cluster mode costs a process, with no spreading);
#   - in a session (2025-11-25, session.lua, -t8 -c8: a session per connection, initialized by
#     the connection's first request): one instance vs three with Redis (without Redis a session
#     is unknown to two instances of three, so there is no such mode to compare), and stateless
#     at that concurrency (-t8 -c8) on both as the reference.
# Prints the mcpd processes' CPU per request in each mode, the ratios to the single instance,
# and nginx's and Redis's share (/proc utime+stime; nginx's worker included); one line per mode
# and round.
#
# usage: scripts/perf/cluster-cpu.sh BASE_PORT [SECONDS] [ROUNDS]   (uses BASE_PORT..BASE_PORT+12)
# Build first: cargo build --release -p mcpd-actors --bin mcpd (or set MCPD_BIN). Needs wrk,
# redis-server, nginx.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/nginx.sh"
bin="${MCPD_BIN:-$here/../../target/release/mcpd}"
base=$1; secs=${2:-5}; rounds=${3:-3}
single=$base; redis=$((base + 1)); proxy=$((base + 2))
work=$(mktemp -d)
pids=()
cleanup() { # the processes this script started, then its own mktemp directory (nginx and Redis
  # write subdirectories there), removed only when it is that directory
  kill "${pids[@]}" 2> /dev/null; sleep 0.5
  case "$work" in "${TMPDIR:-/tmp}"/tmp.?*) rm -rf -- "$work" ;; esac
}
trap cleanup EXIT
redis-server --port "$redis" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" > "$work/redis.log" 2>&1 &
redis_pid=$!; pids+=("$redis_pid")
serve() { # PORT ARGS...: one mcpd, its pid in $pid
  local port=$1; shift
  "$bin" serve -s -p "$port" --workers 1 --no-file-tools --no-file-resources "$@" > "$work/mcpd-$port.log" 2>&1 &
  pid=$!; pids+=("$pid")
}
serve "$single"; single_pid=$pid
plain=(); clustered=()
for i in 3 4 5; do
  serve $((base + i)); plain+=("$pid")
  serve $((base + i + 3)) --redis "redis://127.0.0.1:$redis/"; clustered+=("$pid")
done
plain_proxy=$((base + 9)); single_proxy=$((base + 10)); single_redis_proxy=$((base + 12))
serve $((base + 11)) --redis "redis://127.0.0.1:$redis/"; single_redis_pid=$pid
nginx_config "$work" "$plain_proxy $((base + 3)) $((base + 4)) $((base + 5))" \
  "$proxy $((base + 6)) $((base + 7)) $((base + 8))" "$single_proxy $single" \
  "$single_redis_proxy $((base + 11))" > "$work/nginx.conf"
nginx -c "$work/nginx.conf" -p "$work" > "$work/nginx.log" 2>&1 & nginx_pid=$!; pids+=("$nginx_pid")
for _ in $(seq 100); do
  up=1
  for port in "$proxy" "$plain_proxy" "$single" "$single_proxy" "$single_redis_proxy"; do
    curl -sf "http://127.0.0.1:$port/status" > /dev/null || { up=0; break; }
  done
  [ "$up" = 1 ] && break
  sleep 0.1
done
for p in "${pids[@]}"; do
  kill -0 "$p" 2> /dev/null || { echo "a process did not start:" >&2; tail -n 3 "$work"/*.log >&2; exit 1; }
done
ticks() { local sum=0 p; for p in "$@"; do sum=$((sum + $(awk '{print $14+$15}' "/proc/$p/stat"))); done; echo "$sum"; }
nginx_all() { echo "$nginx_pid" $(ps -o pid= --ppid "$nginx_pid"); }
load() { # URL SECONDS SCRIPT WRK_ARGS...: the number of requests answered 2xx (non-2xx ones are
  # reported)
  local url=$1 secs=$2 script=$3; shift 3
  wrk "$@" -d"${secs}s" -s "$here/$script" "$url" | awk '/requests in/{n=$1} /Non-2xx/{bad=$NF}
    END{ if (bad) print "non-2xx: " bad > "/dev/stderr"; print n - bad }'
}
stateless_load() { load "$1" "$2" stateless.lua -t1 -c16; } # URL SECONDS
session_load() { load "$1" "$2" session.lua -t8 -c8; } # URL SECONDS
stateless8_load() { load "$1" "$2" stateless.lua -t8 -c8; } # URL SECONDS: session_load's concurrency
stateless48_load() { load "$1" "$2" stateless.lua -t1 -c48; } # URL SECONDS: 16 per instance of three
for url in "$single" "$single_proxy" "$single_redis_proxy" "$plain_proxy" "$proxy"; do stateless_load "http://127.0.0.1:$url/mcp" 1 > /dev/null; done
for url in "$single" "$single_proxy" "$single_redis_proxy" "$proxy"; do session_load "http://127.0.0.1:$url/mcp" 1 > /dev/null; done
per_request() { awk -v t="$1" -v n="$2" 'BEGIN{printf "%.1f", t * 10000 / n}'; }  # 10 ms ticks -> us
for _ in $(seq "$rounds"); do
  t0=$(ticks "$single_pid"); n=$(stateless_load "http://127.0.0.1:$single/mcp" "$secs"); t1=$(ticks "$single_pid")
  one=$(per_request $((t1 - t0)) "$n")
  t0=$(ticks "${plain[@]}"); x0=$(ticks $(nginx_all)); n=$(stateless_load "http://127.0.0.1:$plain_proxy/mcp" "$secs")
  t1=$(ticks "${plain[@]}"); x1=$(ticks $(nginx_all))
  three=$(per_request $((t1 - t0)) "$n"); three_nginx=$(per_request $((x1 - x0)) "$n")
  t0=$(ticks "${clustered[@]}"); x0=$(ticks $(nginx_all)); r0=$(ticks "$redis_pid")
  n=$(stateless_load "http://127.0.0.1:$proxy/mcp" "$secs")
  t1=$(ticks "${clustered[@]}"); x1=$(ticks $(nginx_all)); r1=$(ticks "$redis_pid")
  redis_mode=$(per_request $((t1 - t0)) "$n"); redis_nginx=$(per_request $((x1 - x0)) "$n")
  redis_own=$(per_request $((r1 - r0)) "$n")
  awk -v a="$one" -v b="$three" -v c="$redis_mode" -v bn="$three_nginx" -v cn="$redis_nginx" -v r="$redis_own" 'BEGIN{
    printf "mcpd CPU us/req: one instance %.1f; 3 behind nginx %.1f (%.2fx, nginx %.1f); 3 --redis behind nginx %.1f (%.2fx of one, %.2fx of 3 without Redis; nginx %.1f, redis %.1f)\n",
      a, b, b / a, bn, c, c / a, c / b, cn, r }'
  # Equal load per instance: each of the three gets the connections the single one gets, and
  # the single one is reached through nginx too, so the two differ only in Redis and in the
  # number of processes.
  t0=$(ticks "$single_pid"); n=$(stateless_load "http://127.0.0.1:$single_proxy/mcp" "$secs"); t1=$(ticks "$single_pid")
  one=$(per_request $((t1 - t0)) "$n")
  t0=$(ticks "${clustered[@]}"); r0=$(ticks "$redis_pid"); n=$(stateless48_load "http://127.0.0.1:$proxy/mcp" "$secs")
  t1=$(ticks "${clustered[@]}"); r1=$(ticks "$redis_pid")
  redis_mode=$(per_request $((t1 - t0)) "$n"); redis_own=$(per_request $((r1 - r0)) "$n")
  awk -v a="$one" -v c="$redis_mode" -v r="$redis_own" 'BEGIN{
    printf "equal load per instance, mcpd CPU us/req: one behind nginx (-c16) %.1f; 3 --redis behind nginx (-c48) %.1f (%.2fx of one; redis %.1f)\n",
      a, c, c / a, r }'
  # One process either way, both behind nginx: what cluster mode itself costs per request.
  for mode in stateless session; do
    t0=$(ticks "$single_pid"); n=$(${mode}_load "http://127.0.0.1:$single_proxy/mcp" "$secs"); t1=$(ticks "$single_pid")
    one=$(per_request $((t1 - t0)) "$n")
    t0=$(ticks "$single_redis_pid"); r0=$(ticks "$redis_pid"); n=$(${mode}_load "http://127.0.0.1:$single_redis_proxy/mcp" "$secs")
    t1=$(ticks "$single_redis_pid"); r1=$(ticks "$redis_pid")
    redis_mode=$(per_request $((t1 - t0)) "$n"); redis_own=$(per_request $((r1 - r0)) "$n")
    awk -v m="$mode" -v a="$one" -v c="$redis_mode" -v r="$redis_own" 'BEGIN{
      printf "%s, one instance behind nginx, mcpd CPU us/req: memory mode %.1f; --redis %.1f (%.2fx; redis %.1f)\n",
        m, a, c, c / a, r }'
  done
  # Session mode, with stateless calls at the same concurrency (-t8 -c8) as the reference: what
  # the cluster adds to sessions beyond spreading the load is the ratio of the two ratios.
  for mode in session stateless8; do
    t0=$(ticks "$single_pid"); n=$(${mode}_load "http://127.0.0.1:$single/mcp" "$secs"); t1=$(ticks "$single_pid")
    one=$(per_request $((t1 - t0)) "$n")
    t0=$(ticks "${clustered[@]}"); x0=$(ticks $(nginx_all)); r0=$(ticks "$redis_pid")
    n=$(${mode}_load "http://127.0.0.1:$proxy/mcp" "$secs")
    t1=$(ticks "${clustered[@]}"); x1=$(ticks $(nginx_all)); r1=$(ticks "$redis_pid")
    redis_mode=$(per_request $((t1 - t0)) "$n"); redis_nginx=$(per_request $((x1 - x0)) "$n")
    redis_own=$(per_request $((r1 - r0)) "$n")
    [ "$mode" = session ] && label="session mode" || label="stateless -t8 -c8"
    awk -v m="$label" -v a="$one" -v c="$redis_mode" -v cn="$redis_nginx" -v r="$redis_own" 'BEGIN{
      printf "%s, mcpd CPU us/req: one instance %.1f; 3 --redis behind nginx %.1f (%.2fx of one; nginx %.1f, redis %.1f)\n",
        m, a, c, c / a, cn, r }'
  done
done
