#!/usr/bin/env bash
# bench/prometheus-overhead.sh — what exporting to Prometheus and a 1-s
# Prometheus query cost the generator, at 20 k req/s (issue 15: < 2 %).
#
# nginx (one worker, scratch config) serves a small response on 127.0.0.1;
# a Prometheus (remote-write receiver on, scraping brunt's endpoint every 1 s)
# and a node exporter run alongside. brunt runs an open-model constant load
# (--rate, default 20000/s, for --duration, default 15 s), R rounds of two
# variants, interleaved:
#   plain     no export, no Prometheus source
#   exported  --metrics-listen + --remote-write (pull and push at once) and
#             collectors.prometheus with the prometheus-node set every 1 s
# Each figure is the generator's CPU (user + sys, /usr/bin/time) per request
# answered (summary.json); the overhead is the median exported/plain − 1.
# Exit 0 when the median overhead is below --limit % (2), else 1.
# Tools: nginx, prometheus, prometheus-node-exporter (apt), jq, GNU time.
# Usage: bench/prometheus-overhead.sh [--rounds R] [--rate N] [--duration S] [--limit PCT]
set -euo pipefail
ROUNDS=3 RATE=20000 DURATION=15 LIMIT=2
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS=$2; shift 2 ;;
        --rate) RATE=$2; shift 2 ;;
        --duration) DURATION=$2; shift 2 ;;
        --limit) LIMIT=$2; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
for t in nginx prometheus prometheus-node-exporter jq; do
    command -v "$t" >/dev/null || [ -x "/usr/sbin/$t" ] ||
        { echo "prometheus-overhead.sh: $t is missing — apt-get install nginx-light prometheus prometheus-node-exporter jq" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "prometheus-overhead.sh: GNU time is missing — apt-get install time" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BRUNT=${BRUNT:-$ROOT/target/release/brunt}
[ -x "$BRUNT" ] || { echo "build first: cargo build --release" >&2; exit 2; }
WORK=$(mktemp -d /tmp/brunt-prom-bench.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 1 100); do curl -fsS -o /dev/null "$1" 2>/dev/null && return 0; sleep 0.2; done; echo "not ready: $1" >&2; exit 1; }

NG=$(free_port); BP=$(free_port); PP=$(free_port); NP=$(free_port)
mkdir -p "$WORK/nginx/tmp"
cat >"$WORK/nginx/nginx.conf" <<EOF
worker_processes 1; daemon off; master_process on;
pid $WORK/nginx/nginx.pid; error_log $WORK/nginx/error.log warn;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 100000000; keepalive_timeout 300s;
  client_body_temp_path $WORK/nginx/tmp/b; proxy_temp_path $WORK/nginx/tmp/p;
  fastcgi_temp_path $WORK/nginx/tmp/f; uwsgi_temp_path $WORK/nginx/tmp/u; scgi_temp_path $WORK/nginx/tmp/s;
  server { listen 127.0.0.1:$NG; location / { default_type text/plain; return 200 "ok\n"; } } }
EOF
nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log" >/dev/null 2>&1 & PIDS+=($!)
prometheus-node-exporter --web.listen-address=127.0.0.1:$NP >/dev/null 2>&1 & PIDS+=($!)
cat >"$WORK/prom.yml" <<EOF
global: { scrape_interval: 1s }
scrape_configs:
  - { job_name: brunt, static_configs: [ { targets: ["127.0.0.1:$BP"] } ] }
  - { job_name: node, static_configs: [ { targets: ["127.0.0.1:$NP"] } ] }
EOF
prometheus --config.file="$WORK/prom.yml" --storage.tsdb.path="$WORK/tsdb" \
    --web.listen-address=127.0.0.1:$PP --web.enable-remote-write-receiver >"$WORK/prom.log" 2>&1 & PIDS+=($!)
wait_http "http://127.0.0.1:$NG/"; wait_http "http://127.0.0.1:$PP/-/ready"

base="name: prom-bench
target: { url: \"http://127.0.0.1:$NG\", timeout: 5s }
requests: [ { path: / } ]
load: { model: open, connections: 64 }
shape: { constant: { rate: $RATE/s, duration: ${DURATION}s } }"
echo "$base" >"$WORK/plain.yaml"
cat >"$WORK/exported.yaml" <<EOF
$base
collectors:
  prometheus:
    url: http://127.0.0.1:$PP
    every: 1s
    instance: "127.0.0.1:$NP"
    window: 5s
    use: [prometheus-node]
EOF

run() { # variant round → "cpu_s requests"
    local v=$1 out="$WORK/run-$1-$2" extra=()
    [ "$v" = exported ] && extra=(--metrics-listen "127.0.0.1:$BP" --remote-write "http://127.0.0.1:$PP/api/v1/write" --metrics-linger 3s)
    /usr/bin/time -f "%U %S" -o "$WORK/time" "$BRUNT" run "$WORK/$v.yaml" --out "$out" --quiet "${extra[@]}" >/dev/null 2>"$WORK/stderr-$v-$2" || true
    local cpu; cpu=$(awk '{print $1 + $2}' "$WORK/time" | tail -1)
    local n; n=$(jq '.totals.requests' "$out/summary.json")
    local fails; fails=$(grep -c "remote-write" "$WORK/stderr-$v-$2" || true)
    echo "$cpu $n $fails"
}
printf "%-6s %-9s %10s %10s %14s\n" round variant cpu_s requests "µs CPU/req"
RATIOS=()
for r in $(seq 1 "$ROUNDS"); do
    order=(plain exported); [ $((r % 2)) = 0 ] && order=(exported plain)
    declare -A per=()
    for v in "${order[@]}"; do
        read -r cpu n fails < <(run "$v" "$r")
        us=$(awk -v c="$cpu" -v n="$n" 'BEGIN { printf "%.3f", n > 0 ? c * 1e6 / n : 0 }')
        per[$v]=$us
        printf "%-6s %-9s %10s %10s %14s\n" "$r" "$v" "$cpu" "$n" "$us"
        [ "$fails" = 0 ] || echo "  ($v: stderr mentions remote-write: $(cat "$WORK/stderr-$v-$r" | head -2))"
    done
    RATIOS+=("$(awk -v a="${per[plain]}" -v b="${per[exported]}" 'BEGIN { printf "%.2f", (b / a - 1) * 100 }')")
    unset per
done
med=$(printf "%s\n" "${RATIOS[@]}" | sort -g | awk '{a[NR]=$1} END { print a[int((NR + 1) / 2)] }')
series=$(curl -fsS "http://127.0.0.1:$PP/api/v1/query" --data-urlencode 'query=count({__name__=~"brunt_.*"})' | jq -r '.data.result[0].value[1] // 0')
echo "overhead per round (%): ${RATIOS[*]}; median $med % (limit $LIMIT %); brunt series in Prometheus: $series"
awk -v m="$med" -v l="$LIMIT" 'BEGIN { exit !(m < l) }' && { echo "PASS"; exit 0; } || { echo "FAIL"; exit 1; }
