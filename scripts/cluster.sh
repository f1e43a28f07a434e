#!/usr/bin/env bash
# Several mcpd instances behind nginx on one machine, for trying cluster mode (README "Running
# several instances") and for scripts/cluster-test.sh.
#
#   scripts/cluster.sh [-n N] [-p PORT] [--no-redis] [--mcpd] [-- ARGS...]
#
# Starts, each as a child of this script with its files in one mktemp directory:
#   - redis-server (its own config: loopback, a free port, no persistence);
#   - N instances (default 3) on free loopback ports, each with --redis URL: the conformance
#     fixture examples/everything, or with --mcpd `mcpd serve -p 0 --redis URL ARGS...`;
#   - nginx (round-robin over the instances, deploy/nginx.conf with this run's ports; its own
#     prefix, pid and logs in the temp directory, running as the current user) on PORT
#     (default: a free one).
# --no-redis starts the instances without --redis (and no redis-server): the control case,
# where multi-round-trip requests fail when their rounds land on different instances.
#
# stdout (one line each, for scripts to read):
#   cluster: instance I pid PID url URL
#   cluster: redis URL pid PID            (not with --no-redis)
#   cluster: ready URL (nginx pid PID)
# Then it waits; on SIGINT/SIGTERM (or when any child exits) it stops every child by PID and
# removes its temp directory.
#
# Environment: MCPD_CLUSTER_BIN, an already built everything example or mcpd binary (default:
# built with cargo); CARGO_TARGET_DIR as cargo's.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
N=3
PORT=""
REDIS=1
MCPD=0
EXTRA=()
while [ $# -gt 0 ]; do
    case "$1" in
        -n) N="$2"; shift 2 ;;
        -p) PORT="$2"; shift 2 ;;
        --no-redis) REDIS=0; shift ;;
        --mcpd) MCPD=1; shift ;;
        --) shift; EXTRA=("$@"); break ;;
        *) echo "usage: cluster.sh [-n N] [-p PORT] [--no-redis] [--mcpd] [-- ARGS...]" >&2; exit 2 ;;
    esac
done
case "$N" in '' | *[!0-9]* | 0) echo "cluster.sh: -n needs a positive number" >&2; exit 2 ;; esac

log() { echo "cluster.sh: $*" >&2; }
export PATH="$PATH:/usr/sbin:/sbin" # Debian installs nginx in /usr/sbin, outside a user's PATH
die() { log "$*"; exit 1; }
for tool in nginx python3; do command -v "$tool" >/dev/null || die "$tool is not installed"; done
[ "$REDIS" = 0 ] || command -v redis-server >/dev/null || die "redis-server is not installed"

TMP="$(mktemp -d)"
PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    # Only the directory mktemp made above, and only inside the system temp directory.
    case "$TMP" in
        "${TMPDIR:-/tmp}"/tmp.?*) rm -rf -- "$TMP" ;;
        *) log "left $TMP in place (not under ${TMPDIR:-/tmp})" ;;
    esac
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits (10 s at most) until PID's log FILE has a line matching the sed script SED; prints the match.
wait_for() { # PID FILE SED WHAT
    local found=""
    for _ in $(seq 100); do
        found="$(sed -n "$3" "$2" 2>/dev/null | head -n 1 || true)"
        [ -n "$found" ] && { echo "$found"; return 0; }
        kill -0 "$1" 2>/dev/null || { cat "$2" >&2; die "$4 exited before it was ready"; }
        sleep 0.1
    done
    cat "$2" >&2
    die "$4 was not ready within 10 s"
}

# ---- the binary ------------------------------------------------------------------------------
BIN="${MCPD_CLUSTER_BIN:-}"
if [ -z "$BIN" ]; then
    TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
    if [ "$MCPD" = 1 ]; then
        (cd "$REPO" && cargo build -p mcpd-actors --bin mcpd >&2)
        BIN="$TARGET/debug/mcpd"
    else
        (cd "$REPO" && cargo build -p mcpd --example everything >&2)
        BIN="$TARGET/debug/examples/everything"
    fi
fi
[ -x "$BIN" ] || die "no executable $BIN"

# ---- redis -----------------------------------------------------------------------------------
REDIS_ARGS=()
if [ "$REDIS" = 1 ]; then
    redis_port="$(free_port)"
    cat >"$TMP/redis.conf" <<EOF
bind 127.0.0.1
port $redis_port
protected-mode yes
daemonize no
dir $TMP
logfile $TMP/redis.log
save ""
appendonly no
EOF
    redis-server "$TMP/redis.conf" &
    redis_pid=$!
    PIDS+=("$redis_pid")
    wait_for "$redis_pid" "$TMP/redis.log" '/Ready to accept connections/p' "redis-server" >/dev/null
    REDIS_URL="redis://127.0.0.1:$redis_port/"
    REDIS_ARGS=(--redis "$REDIS_URL")
fi

# ---- the instances ---------------------------------------------------------------------------
UPSTREAMS=()
for i in $(seq "$N"); do
    if [ "$MCPD" = 1 ]; then
        "$BIN" serve -p 0 "${REDIS_ARGS[@]}" "${EXTRA[@]}" 2>"$TMP/instance-$i.log" >/dev/null </dev/null &
    else
        "$BIN" -p 0 "${REDIS_ARGS[@]}" 2>"$TMP/instance-$i.log" >/dev/null </dev/null &
    fi
    pid=$!
    PIDS+=("$pid")
    url="$(wait_for "$pid" "$TMP/instance-$i.log" 's/^mcpd: listening on \(http:[^ ]*\).*/\1/p' "instance $i")"
    hostport="${url#http://}"
    UPSTREAMS+=("${hostport%%/*}")
    echo "cluster: instance $i pid $pid url $url"
done
[ "$REDIS" = 0 ] || echo "cluster: redis $REDIS_URL pid $redis_pid"

# ---- nginx: deploy/nginx.conf with this run's ports --------------------------------------------
[ -n "$PORT" ] || PORT="$(free_port)"
servers=""
for upstream in "${UPSTREAMS[@]}"; do servers+="    server $upstream max_fails=1 fail_timeout=10s;\n"; done
mkdir -p "$TMP/nginx/logs"
# The site file: listen on PORT, and the upstream's servers replaced by this run's instances.
sed -e "s/^\( *listen \)127\.0\.0\.1:[0-9]*;/\1127.0.0.1:$PORT;/" \
    -e "/^ *server 127\.0\.0\.1:[0-9]*/d" \
    -e "s/^\( *keepalive [0-9]*;\)/$servers\1/" \
    "$REPO/deploy/nginx.conf" >"$TMP/nginx/mcpd.conf"
cat >"$TMP/nginx/nginx.conf" <<EOF
# Runs as the user who started it (the user directive matters only when that is root).
user $(id -un) $(id -gn);
daemon off;
worker_processes 2;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/logs/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $TMP/nginx/client_body;
    proxy_temp_path $TMP/nginx/proxy;
    fastcgi_temp_path $TMP/nginx/fastcgi;
    uwsgi_temp_path $TMP/nginx/uwsgi;
    scgi_temp_path $TMP/nginx/scgi;
    include $TMP/nginx/mcpd.conf;
}
EOF
nginx -t -q -p "$TMP/nginx" -e "$TMP/nginx/logs/error.log" -c "$TMP/nginx/nginx.conf" ||
    die "nginx rejected its configuration ($TMP/nginx/nginx.conf)"
nginx -p "$TMP/nginx" -e "$TMP/nginx/logs/error.log" -c "$TMP/nginx/nginx.conf" &
nginx_pid=$!
PIDS+=("$nginx_pid")
for _ in $(seq 100); do
    python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$PORT" 2>/dev/null && break
    kill -0 "$nginx_pid" 2>/dev/null || { cat "$TMP/nginx/logs/error.log" >&2; die "nginx exited"; }
    sleep 0.1
done
echo "cluster: ready http://127.0.0.1:$PORT/mcp (nginx pid $nginx_pid)"

# Until a signal, or until a child exits (an instance killed on purpose does not stop the rest:
# only nginx's or redis's exit does).
while kill -0 "$nginx_pid" 2>/dev/null && { [ "$REDIS" = 0 ] || kill -0 "$redis_pid" 2>/dev/null; }; do
    sleep 0.5
done
log "nginx or redis-server exited; stopping"
