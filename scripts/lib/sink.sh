# Shared by scripts/bench and scripts/bench-run (sourced, not run): the tools
# the benchmarks need, and a local HTTP/2 + TLS sink that answers every
# notification 200 the way APNs does, for h2load and Herald to be measured on.

# bench_need TOOL:PACKAGE… — installs the Debian packages of missing tools (root only).
bench_need() {
  local need=() spec tool
  for spec in "$@"; do
    tool=${spec%%:*}
    if [ "${tool#/}" != "$tool" ]; then [ -x "$tool" ] && continue
    else command -v "$tool" >/dev/null 2>&1 && continue; fi
    [ "$tool" = nginx ] && [ -x /usr/sbin/nginx ] && continue
    need+=("${spec#*:}")
  done
  [ ${#need[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing: ${need[*]} (install them, or run as root)" >&2
    exit 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
}

bench_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# sink_start DIR — a one-worker nginx on 127.0.0.1 that reads each request body
# and answers 200 (proxying /3/device/ to a second local server that returns
# 200). Sets SINK_PORT and SINK_CERT; sink_stop DIR ends it.
sink_start() {
  local dir=$1 backend user_line=""
  mkdir -p "$dir/tmp"
  chmod 755 "$dir"
  SINK_PORT=$(bench_free_port)
  backend=$(bench_free_port)
  SINK_CERT=$dir/cert.pem
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$dir/key.pem" -out "$SINK_CERT" -days 2 -subj "/CN=localhost" \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" >/dev/null 2>&1
  [ "$(id -u)" -eq 0 ] && user_line="user root;"
  cat > "$dir/nginx.conf" <<CONF
$user_line
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir/tmp/body;
  proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi;
  uwsgi_temp_path $dir/tmp/uwsgi;
  scgi_temp_path $dir/tmp/scgi;
  keepalive_requests 100000000;
  keepalive_timeout 120s;
  client_body_buffer_size 16k;
  client_max_body_size 8k;
  # As many idle upstream connections kept as streams may be in flight
  # (http2_max_concurrent_streams): with 64, every request beyond the 64th
  # in flight opened and closed a TCP connection to the backend. Measured
  # with 200 in flight (a 200,000-device run): nginx's CPU per notification
  # 38 µs with 64, 23 µs with 1024; h2load's rate did not change.
  upstream sink { server 127.0.0.1:$backend; keepalive 1024; keepalive_requests 100000000; }
  server {
    listen 127.0.0.1:$SINK_PORT ssl http2;
    ssl_certificate $SINK_CERT;
    ssl_certificate_key $dir/key.pem;
    http2_max_concurrent_streams 1000;
    location /3/device/ {
      proxy_pass http://sink;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
  server {
    listen 127.0.0.1:$backend;
    location / { return 200; }
  }
}
CONF
  "$(command -v nginx || echo /usr/sbin/nginx)" -p "$dir" -c "$dir/nginx.conf"
  for _ in $(seq 1 50); do
    [ -f "$dir/nginx.pid" ] && break
    sleep 0.1
  done
}

# sink_cpu DIR — CPU seconds the sink's nginx has used so far (its master and
# worker), to give the sink's cost a notification beside h2load's.
sink_cpu() {
  local master ticks=0 pid
  master=$(cat "$1/nginx.pid")
  for pid in "$master" $(pgrep -P "$master"); do
    ticks=$((ticks + $(sed 's/.*) //' "/proc/$pid/stat" | awk '{ print $12 + $13 }')))
  done
  awk -v t="$ticks" -v k="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", t / k }'
}

sink_stop() {
  if [ -f "$1/nginx.pid" ]; then
    kill "$(cat "$1/nginx.pid")" 2>/dev/null || true
    sleep 0.3
  fi
}

# A ~300-byte body and APNs-like headers (a 200-character bearer token like an ES256 JWT) for h2load.
bench_h2load_body() {
  python3 - "$1" <<'PY'
import sys
head = '{"aps":{"alert":{"title":"Flash sale","body":"'
tail = '"},"sound":"default"},"herald":{"c":42}}'
open(sys.argv[1], "w").write(head + "x" * (300 - len(head) - len(tail)) + tail)
PY
}
BENCH_TOKEN="$(printf 'ab%.0s' $(seq 1 32))"
BENCH_JWT="eyJhbGciOiJFUzI1NiIsImtpZCI6IkJFTkNIS0VZMDEifQ.eyJpc3MiOiJCRU5DSFRFQU0xIiwiaWF0IjoxNzYzODAwMDAwfQ.$(printf 'A%.0s' $(seq 1 86))"

# bench_h2load BODY N STREAMS CONNECTIONS TIMEFILE OUTFILE — h2load against the sink.
bench_h2load() {
  /usr/bin/time -f "%e %U %S %M" -o "$5" \
    h2load -n "$2" -c "$4" -m "$3" -d "$1" \
      -H "authorization: bearer $BENCH_JWT" -H "apns-topic: com.example.herald" -H "apns-push-type: alert" \
      -H "apns-priority: 10" -H "apns-expiration: 1900000000" -H "apns-collapse-id: campaign-42" \
      -H "apns-id: 0b9e4c5e-6c1a-4f53-9d0f-3b8a2d1e7f10" -H "content-type: application/json" \
      "https://127.0.0.1:$SINK_PORT/3/device/$BENCH_TOKEN" > "$6" 2>&1 || true
}
