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
# Two figures per round:
#   direct      CPU of the exporter's and the Prometheus source's threads
#               (brunt-metrics, brunt-remote-write, brunt-prometheus, from
#               /proc/PID/task/*/schedstat polled every 0.5 s) plus what the recorder
#               thread spent more than in the plain run, over the plain run's
#               whole CPU (user + sys, /usr/bin/time) — the cost itself;
#   end to end  CPU per answered request, exported/plain − 1: the same cost
#               plus the noise of a shared machine.
# Exit 0 when the median direct overhead is below --limit % (2), else 1.
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
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] && echo "kept $WORK" || rm -rf "$WORK"; }
trap cleanup EXIT  # KEEP=1 keeps the scratch directory
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

# Per-thread CPU time (ns) of a running brunt, polled until it
# exits: the last value seen per thread, summed by thread name.
poll_threads() { # pid out
    local pid=$1 out=$2
    : >"$out"
    while kill -0 "$pid" 2>/dev/null; do
        for t in /proc/"$pid"/task/*; do
            [ -r "$t/stat" ] || continue
            local name; name=$(cat "$t/comm" 2>/dev/null) || continue
            # schedstat's first field: ns on CPU (stat's ticks are 10 ms, too coarse here).
            local ns; ns=$(cut -d' ' -f1 "$t/schedstat" 2>/dev/null) || continue
            echo "${t##*/} $name $ns" >>"$out"
        done
        sleep 0.5
    done
}
ns_of() { # file name-regex → ns summed over threads (last value per thread)
    awk -v re="$2" '{ last[$1] = $3; name[$1] = $2 } END { s = 0; for (t in last) if (name[t] ~ re) s += last[t]; print s }' "$1"
}

run() { # variant round → "cpu_s requests export_s recorder_s"
    local v=$1 out="$WORK/run-$1-$2" extra=()
    [ "$v" = exported ] && extra=(--metrics-listen "127.0.0.1:$BP" --remote-write "http://127.0.0.1:$PP/api/v1/write" --metrics-linger 3s)
    /usr/bin/time -f "%U %S" -o "$WORK/time" "$BRUNT" run "$WORK/$v.yaml" --out "$out" --quiet "${extra[@]}" >/dev/null 2>"$WORK/stderr-$v-$2" &
    local tpid=$!
    local bpid=""
    for _ in $(seq 1 50); do bpid=$(pgrep -P "$tpid" | head -1) && [ -n "$bpid" ] && break; sleep 0.1; done
    poll_threads "$bpid" "$WORK/threads-$v-$2"
    wait "$tpid" || true
    local cpu; cpu=$(awk '{print $1 + $2}' "$WORK/time" | tail -1)
    local n; n=$(jq '.totals.requests' "$out/summary.json")
    local ex; ex=$(ns_of "$WORK/threads-$v-$2" '^brunt-(metrics|remote-wr|prometheu)')
    local rec; rec=$(ns_of "$WORK/threads-$v-$2" '^brunt-recorder')
    echo "$cpu $n $(awk -v t="$ex" 'BEGIN { printf "%.4f", t / 1e9 }') $(awk -v t="$rec" 'BEGIN { printf "%.4f", t / 1e9 }')"
}
printf "%-6s %-9s %8s %9s %11s %10s %11s\n" round variant cpu_s requests "µs CPU/req" export_s recorder_s
RATIOS=() DIRECT=()
for r in $(seq 1 "$ROUNDS"); do
    order=(plain exported); [ $((r % 2)) = 0 ] && order=(exported plain)
    declare -A per=() rec=() tot=()
    for v in "${order[@]}"; do
        read -r cpu n ex rc < <(run "$v" "$r")
        us=$(awk -v c="$cpu" -v n="$n" 'BEGIN { if (n > 0) printf "%.3f", c * 1e6 / n; else print "nan" }')
        per[$v]=$us rec[$v]=$rc tot[$v]=$cpu
        [ "$v" = exported ] && exs=$ex
        printf "%-6s %-9s %8s %9s %11s %10s %11s\n" "$r" "$v" "$cpu" "$n" "$us" "$ex" "$rc"
        grep -q "remote-write" "$WORK/stderr-$v-$r" && echo "  ($v: $(head -2 "$WORK/stderr-$v-$r"))"
    done
    RATIOS+=("$(awk -v a="${per[plain]}" -v b="${per[exported]}" 'BEGIN { printf "%.2f", (b / a - 1) * 100 }')")
    # Direct: the exporter's and the source's threads, plus what the recorder
    # spent more, over the plain run's whole CPU.
    DIRECT+=("$(awk -v e="$exs" -v r1="${rec[exported]}" -v r0="${rec[plain]}" -v t="${tot[plain]}" 'BEGIN { d = r1 - r0; if (d < 0) d = 0; printf "%.2f", (e + d) / t * 100 }')")
    unset per rec tot
done
median() { printf "%s\n" "$@" | sort -g | awk '{a[NR]=$1} END { print a[int((NR + 1) / 2)] }'; }
med=$(median "${DIRECT[@]}")
e2e=$(median "${RATIOS[@]}")
series=$(curl -fsS "http://127.0.0.1:$PP/api/v1/query" --data-urlencode 'query=count({__name__=~"brunt_.*"})' | jq -r '.data.result[0].value[1] // 0')
echo "direct overhead (exporter + source threads + extra recorder CPU, % of the plain run's CPU) per round: ${DIRECT[*]}; median $med % (limit $LIMIT %)"
echo "end to end (CPU per request, exported/plain - 1, noisy on a shared machine) per round: ${RATIOS[*]}; median $e2e %"
echo "brunt series in Prometheus: $series"
awk -v m="$med" -v l="$LIMIT" 'BEGIN { exit !(m == m + 0 && m < l) }' && { echo "PASS"; exit 0; } || { echo "FAIL"; exit 1; }
