# Sourced by cluster-cpu.sh and hop-vs-nginx.sh: `nginx_config WORK PROXY...` prints an nginx.conf
# (one worker, in the foreground, pid and error log in WORK) with, for each PROXY — one word,
# "PORT SERVER_PORT...": a server on 127.0.0.1:PORT passing every request round-robin to the
# servers on those loopback ports over keep-alive HTTP/1.1 connections (at most 64 idle kept).
nginx_config() {
  local work=$1 proxy port name
  shift
  printf 'worker_processes 1; daemon off; pid %s/nginx.pid; error_log %s/error.log;\n' "$work" "$work"
  printf 'events { worker_connections 1024; }\nhttp {\n  access_log off;\n'
  for proxy in "$@"; do
    set -- $proxy
    port=$1 name=up$1
    shift
    printf '  upstream %s {' "$name"; printf ' server 127.0.0.1:%s;' "$@"; printf ' keepalive 64; }\n'
    printf '  server { listen 127.0.0.1:%s; location / { proxy_pass http://%s; proxy_http_version 1.1;\n' "$port" "$name"
    printf '    proxy_set_header Connection ""; proxy_set_header Host $http_host; proxy_buffering off; } }\n'
  done
  printf '}\n'
}
