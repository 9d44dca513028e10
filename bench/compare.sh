#!/usr/bin/env bash
# bench/compare.sh — brunt side by side with wrk and oha against one fast
# local server, and a memory check of a long brunt run.
#
# Throughput mode (default):
#   nginx with ONE worker on 127.0.0.1 (its own config, pid and log files in a
#   scratch directory — the system config is never read) serves a small static
#   response, pinned to CPU 1; each generator is pinned to CPU 0 and runs
#   closed-loop at a fixed connection count for D seconds. The tools are
#   interleaved over R rounds (the order rotates every round) and each figure
#   is the median over the rounds:
#     req/s        requests completed / run time
#     req/CPU-s    requests / CPU seconds (user + sys, children included) of the
#                  generator, from /usr/bin/time — the cost of a request
#     peak RSS     maximum resident set of the generator (/usr/bin/time %M)
#     srv CPU      nginx's CPU use during the run: near 100% means the server,
#                  not the generator, capped req/s (req/CPU-s stays comparable)
#   plus each tool's ratio to wrk.
#   Tool `brunt-tmpl` is brunt with bench/profiles/max-templated.yaml: max.yaml
#   with two random fields (query `id`, header `X-Session`) and one feeder
#   column (query `user`, from a 1000-row CSV generated into the run
#   directory), rendered per request; nginx answers every path the same. With
#   both brunt and brunt-tmpl in --tools, the summary also prints the
#   templated/static req/CPU-s ratio (median, and per round) and the extra
#   generator CPU per request, PASS when at most --tmpl-limit % (15); with
#   brunt and wrk, static brunt's req/CPU-s ratio to wrk, PASS when at least
#   --static-floor (1.00: the HTTP/1.1 codec measures 1.04–1.09× on the 2-core dev machine; lower it on a busy one).
#   HTTP/2 (tools brunt-h2, h2load, oha-h2): the same nginx also serves h2c
#   (HTTP/2 with prior knowledge, cleartext: the protocol's cost without
#   TLS's) on a second port; each tool runs --h2-connections connections ×
#   --h2-streams concurrent streams (brunt-h2: bench/profiles/max-h2.yaml,
#   that many closed-loop VUs, --h2-streams per connection; h2load -c -m;
#   oha --http2 -c -p), and their req/CPU-s ratios to h2load are printed
#   (×h2load), with brunt-h2's checked against --h2-floor (1.00).
#   gRPC (tools brunt-grpc, h2load-grpc; ghz is in none of the registries
#   this project installs from): unary calls of profiles/load_test.proto's
#   brunt.test.Load/Unary over the same h2c listener, which answers them in
#   gRPC's trailers-only form (grpc-status 0 in the headers); brunt-grpc runs
#   bench/profiles/max-grpc.yaml (the message encoded from the .proto),
#   h2load-grpc posts the same 12-byte framed message (-d, content-type
#   application/grpc, te: trailers), at the HTTP/2 tools' connections ×
#   streams; ×ref is against h2load-grpc.
#   Exit 0 when every run worked and every printed check passed, else 1.
#
# Memory mode (--memory): a long open-model brunt run against the demo target
#   (`brunt demo-target`), sampling brunt's RSS once a second and reporting it
#   after ~1 M and ~10 M requests (at --mem-rate; checkpoints are times
#   count/rate after the start, checked afterwards against the summary's
#   request count). Exit 0 when RSS stayed flat, 1 when it grew.
#   --mem-http 2 runs the brunt profile over HTTP/2 (h2c with prior knowledge:
#   the demo target and the nginx target both speak it; `--set target.http=2`).
#   --mem-profile templated runs bench/profiles/memory-templated.yaml instead
#   of memory.yaml: the same load with brunt-tmpl's template fields (two random
#   fields, one feeder column), so RSS is checked over templated requests.
#
# How brunt is driven:
#   - `brunt run PROFILE --target URL --out DIR` runs bench/profiles/max.yaml,
#     max-templated.yaml, memory.yaml or memory-templated.yaml, whose `vus:`,
#     `rate:` and `duration:` values this script rewrites (the copies go into
#     the run directory, beside the generated feeder bench-users.csv);
#   - DIR/summary.json holds the number of completed requests at
#     `.totals.requests` (brunt's req/s here = that count / D);
#   - `brunt demo-target --listen 127.0.0.1:PORT` serves `/fast`;
#   - exit code 0 (or 99, a failed budget) means the run happened.
#   A brunt that is missing, fails or writes no usable summary is reported as
#   FAILED with the reason; the other tools' figures are still printed.
#
# Tools: wrk, h2load and nginx from apt (`apt-get install wrk nghttp2-client nginx-light`), jq,
#   taskset and GNU time (`apt-get install jq util-linux time`); oha is
#   installed once by this script into bench/.cache/oha (cargo install oha
#   --locked, ~12 min on 2 cores; --no-install to refuse); brunt is taken from
#   --brunt, else built with `cargo build --release`.
#
# Usage: bench/compare.sh [--quick] [--rounds R] [--duration SECS]
#          [--connections N] [--tools brunt,brunt-tmpl,wrk,oha,brunt-h2,h2load,oha-h2,brunt-grpc,h2load-grpc] [--brunt PATH]
#          [--h2-connections N] [--h2-streams M] [--h2-floor RATIO]
#          [--oha PATH] [--no-install] [--no-build] [--gen-cpu N] [--server-cpu N]
#          [--tmpl-limit PCT] [--static-floor RATIO]
#        bench/compare.sh --memory [--mem-rate N] [--mem-counts 1000000,10000000]
#          [--mem-tool brunt|oha] [--mem-profile static|templated] [--mem-http 1.1|2]
#          [--mem-target demo|nginx] [--mem-tolerance PCT]
#
# Results (per-run TSV, logs, run directories) stay in bench/.cache/runs/.

set -u -o pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)
CACHE_DIR="$BENCH_DIR/.cache"

ROUNDS=3
DURATION=10
CONNECTIONS=50
TOOLS="brunt,wrk,oha"
BRUNT_BIN=""
OHA_BIN=""
NO_INSTALL=0
NO_BUILD=0
GEN_CPU=0
SERVER_CPU=1
MODE=compare
MEM_RATE=20000
MEM_COUNTS="1000000,10000000"
MEM_TOOL=brunt
MEM_TARGET=demo
MEM_TOLERANCE=10
MEM_PROFILE=static
MEM_HTTP=1.1
TMPL_LIMIT=15
STATIC_FLOOR=1.00
FEEDER_ROWS=1000
H2_CONNECTIONS=10
H2_STREAMS=10
H2_FLOOR=1.00

die() {
    echo "compare.sh: $*" >&2
    exit 2
}

usage() {
    sed -n '2,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
    exit "${1:-0}"
}

need_arg() { [ $# -ge 2 ] && [ -n "$2" ] || die "$1 needs a value"; }

while [ $# -gt 0 ]; do
    case "$1" in
    --quick) ROUNDS=1 DURATION=3 ;;
    --rounds) need_arg "$@"; ROUNDS=$2; shift ;;
    --duration) need_arg "$@"; DURATION=$2; shift ;;
    --connections) need_arg "$@"; CONNECTIONS=$2; shift ;;
    --tools) need_arg "$@"; TOOLS=$2; shift ;;
    --brunt) need_arg "$@"; BRUNT_BIN=$2; shift ;;
    --oha) need_arg "$@"; OHA_BIN=$2; shift ;;
    --no-install) NO_INSTALL=1 ;;
    --no-build) NO_BUILD=1 ;;
    --gen-cpu) need_arg "$@"; GEN_CPU=$2; shift ;;
    --server-cpu) need_arg "$@"; SERVER_CPU=$2; shift ;;
    --memory) MODE=memory ;;
    --mem-rate) need_arg "$@"; MEM_RATE=$2; shift ;;
    --mem-counts) need_arg "$@"; MEM_COUNTS=$2; shift ;;
    --mem-tool) need_arg "$@"; MEM_TOOL=$2; shift ;;
    --mem-target) need_arg "$@"; MEM_TARGET=$2; shift ;;
    --mem-tolerance) need_arg "$@"; MEM_TOLERANCE=$2; shift ;;
    --mem-profile) need_arg "$@"; MEM_PROFILE=$2; shift ;;
    --mem-http) need_arg "$@"; MEM_HTTP=$2; shift ;;
    --tmpl-limit) need_arg "$@"; TMPL_LIMIT=$2; shift ;;
    --static-floor) need_arg "$@"; STATIC_FLOOR=$2; shift ;;
    --h2-connections) need_arg "$@"; H2_CONNECTIONS=$2; shift ;;
    --h2-streams) need_arg "$@"; H2_STREAMS=$2; shift ;;
    --h2-floor) need_arg "$@"; H2_FLOOR=$2; shift ;;
    -h | --help) usage 0 ;;
    *) echo "compare.sh: unknown option $1" >&2; usage 2 ;;
    esac
    shift
done

is_uint() { case "$1" in '' | *[!0-9]*) return 1 ;; *) return 0 ;; esac; }
for v in ROUNDS DURATION CONNECTIONS GEN_CPU SERVER_CPU MEM_RATE MEM_TOLERANCE TMPL_LIMIT H2_CONNECTIONS H2_STREAMS; do
    is_uint "${!v}" || die "$v must be a whole number, got '${!v}'"
done
[ "$ROUNDS" -ge 1 ] && [ "$DURATION" -ge 1 ] && [ "$CONNECTIONS" -ge 1 ] && [ "$MEM_RATE" -ge 1 ] ||
    die "rounds, duration, connections and mem-rate must be at least 1"
IFS=, read -r -a MEM_CHECKPOINTS <<<"$MEM_COUNTS"
for c in "${MEM_CHECKPOINTS[@]}"; do is_uint "$c" && [ "$c" -ge 1 ] || die "bad --mem-counts '$MEM_COUNTS'"; done
case "$MEM_TOOL" in brunt | oha) ;; *) die "--mem-tool is brunt or oha" ;; esac
case "$MEM_TARGET" in demo | nginx) ;; *) die "--mem-target is demo or nginx" ;; esac
case "$MEM_PROFILE" in static | templated) ;; *) die "--mem-profile is static or templated" ;; esac
[ "$MEM_PROFILE" = static ] || [ "$MEM_TOOL" = brunt ] || die "--mem-profile templated needs --mem-tool brunt"
case "$MEM_HTTP" in 1.1 | 2) ;; *) die "--mem-http is 1.1 or 2" ;; esac
[ "$MEM_HTTP" = 1.1 ] || [ "$MEM_TOOL" = brunt ] || die "--mem-http 2 needs --mem-tool brunt"
[[ $STATIC_FLOOR =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--static-floor must be a number like 0.80, got '$STATIC_FLOOR'"
[[ $H2_FLOOR =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--h2-floor must be a number like 1.00, got '$H2_FLOOR'"
[ "$H2_CONNECTIONS" -ge 1 ] && [ "$H2_STREAMS" -ge 1 ] || die "--h2-connections and --h2-streams must be at least 1"
IFS=, read -r -a TOOL_LIST <<<"$TOOLS"
for t in "${TOOL_LIST[@]}"; do
    case "$t" in brunt | brunt-tmpl | wrk | oha | brunt-h2 | h2load | oha-h2 | brunt-grpc | h2load-grpc) ;; *) die "unknown tool '$t' (brunt, brunt-tmpl, wrk, oha, brunt-h2, h2load, oha-h2, brunt-grpc, h2load-grpc)" ;; esac
done
NCPU=$(nproc)
[ "$GEN_CPU" -lt "$NCPU" ] && [ "$SERVER_CPU" -lt "$NCPU" ] || die "this machine has CPUs 0..$((NCPU - 1))"
[ "$GEN_CPU" -ne "$SERVER_CPU" ] || echo "warning: generator and server share CPU $GEN_CPU" >&2

# ---------------------------------------------------------------- tools

# Missing system tools: say what to install, then stop.
require() { # command, install hint
    command -v "$1" >/dev/null 2>&1 && return 0
    echo "compare.sh: '$1' is missing — install it with: $2" >&2
    exit 2
}
require taskset "apt-get install util-linux"
require jq "apt-get install jq"
require timeout "apt-get install coreutils"
require ss "apt-get install iproute2"
[ -x /usr/bin/time ] || { echo "compare.sh: GNU time (/usr/bin/time) is missing — install it with: apt-get install time" >&2; exit 2; }

NGINX=$(command -v nginx || echo /usr/sbin/nginx)

uses() { # tool: is it part of this run?
    if [ "$MODE" = memory ]; then
        [ "$1" = "$MEM_TOOL" ] || { [ "$1" = nginx ] && [ "$MEM_TARGET" = nginx ]; } ||
            { [ "$1" = brunt ] && [ "$MEM_TARGET" = demo ]; }
        return
    fi
    [ "$1" = nginx ] && return 0
    local t
    for t in "${TOOL_LIST[@]}"; do
        [ "$t" = "$1" ] && return 0
        # brunt-tmpl, brunt-h2 and brunt-grpc are the brunt binary with another
        # profile; oha-h2 is oha; h2load-grpc is h2load.
        [ "$1" = brunt ] && { [ "$t" = brunt-tmpl ] || [ "$t" = brunt-h2 ] || [ "$t" = brunt-grpc ]; } && return 0
        [ "$1" = oha ] && [ "$t" = oha-h2 ] && return 0
        [ "$1" = h2load ] && [ "$t" = h2load-grpc ] && return 0
    done
    return 1
}

if uses nginx; then
    [ -x "$NGINX" ] || { echo "compare.sh: nginx is missing — install it with: apt-get install nginx-light" >&2; exit 2; }
fi
if uses wrk; then require wrk "apt-get install wrk"; fi
if uses h2load; then require h2load "apt-get install nghttp2-client"; fi

# oha: from --oha, else the cache, else installed into the cache (once).
if uses oha; then
    if [ -z "$OHA_BIN" ]; then
        OHA_BIN="$CACHE_DIR/oha/bin/oha"
        if [ ! -x "$OHA_BIN" ]; then
            if [ "$NO_INSTALL" = 1 ]; then
                echo "compare.sh: oha is missing — install it with: cargo install oha --locked --root $CACHE_DIR/oha (≈12 min), or pass --oha PATH" >&2
                exit 2
            fi
            require cargo "https://rustup.rs"
            echo "installing oha into $CACHE_DIR/oha (once, ≈12 min on 2 cores) ..." >&2
            mkdir -p "$CACHE_DIR"
            if ! CARGO_TARGET_DIR="$CACHE_DIR/oha-build" nice -n 19 cargo install oha --locked --root "$CACHE_DIR/oha" \
                >"$CACHE_DIR/oha-install.log" 2>&1; then
                echo "compare.sh: installing oha failed, see $CACHE_DIR/oha-install.log" >&2
                exit 2
            fi
            rm -rf "$CACHE_DIR/oha-build" # 600+ MB of build files, not needed once installed
        fi
    fi
    [ -x "$OHA_BIN" ] || { echo "compare.sh: oha not executable at $OHA_BIN" >&2; exit 2; }
fi

# brunt: a failure here is reported, not fatal, in throughput mode.
BRUNT_PROBLEM=""
if uses brunt; then
    if [ -z "$BRUNT_BIN" ]; then
        BRUNT_BIN="${CARGO_TARGET_DIR:-$REPO_DIR/target}/release/brunt"
        if [ "$NO_BUILD" = 0 ]; then
            if command -v cargo >/dev/null 2>&1; then
                echo "building brunt (cargo build --release) ..." >&2
                (cd "$REPO_DIR" && cargo build --release --quiet --bin brunt) >&2 ||
                    BRUNT_PROBLEM="cargo build --release failed"
            else
                BRUNT_PROBLEM="cargo not found to build brunt (https://rustup.rs), pass --brunt PATH"
            fi
        fi
    fi
    if [ -z "$BRUNT_PROBLEM" ] && [ ! -x "$BRUNT_BIN" ]; then
        BRUNT_PROBLEM="no brunt binary at $BRUNT_BIN (build it with cargo build --release or pass --brunt PATH)"
    fi
    if [ -n "$BRUNT_PROBLEM" ] && [ "$MODE" = memory ]; then
        echo "compare.sh: $BRUNT_PROBLEM" >&2
        exit 2
    fi
fi

# ---------------------------------------------------------------- scratch and cleanup

WORK="$CACHE_DIR/runs/$(date +%Y%m%d-%H%M%S)-$MODE"
mkdir -p "$WORK" || die "cannot create $WORK"
STARTED_PIDS=()

cleanup() {
    local p
    for p in "${STARTED_PIDS[@]}"; do
        kill "$p" 2>/dev/null
    done
    stop_nginx
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The feeder of the templated profiles: FEEDER_ROWS rows of id,name, written
# beside the profile copies in the run directory (feeder paths are relative to
# the profile). Names vary in length a little, like real data.
make_feeder() {
    [ -s "$WORK/bench-users.csv" ] && return 0
    awk -v n="$FEEDER_ROWS" 'BEGIN {
        print "id,name";
        for (i = 1; i <= n; i++) printf "%d,user-%0*d\n", i, 3 + i % 5, i }' >"$WORK/bench-users.csv"
}

# A port below the ephemeral range (32768+ on Linux), so no outgoing
# connection takes it between this check and the bind, and that no socket in
# any state (listening, connected, TIME-WAIT) uses.
free_port() {
    local i p
    for i in $(seq 1 50); do
        p=$((20000 + RANDOM % 12000))
        if [ -z "$(ss -Htan "( sport = :$p )" 2>/dev/null)" ]; then
            echo "$p"
            return 0
        fi
    done
    die "no free port found in 50 tries"
}

wait_listening() { # port, pid: bounded wait (10 s) for the port to accept
    local i
    for i in $(seq 1 100); do
        [ -n "$(ss -Htln "( sport = :$1 )" 2>/dev/null)" ] && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

NGINX_DIR="$WORK/nginx"
NGINX_PID=""
start_nginx() { # port, h2c port
    mkdir -p "$NGINX_DIR/tmp"
    cat >"$NGINX_DIR/nginx.conf" <<EOF
# One worker, only files under this scratch directory.
worker_processes 1;
daemon off;
master_process on;
pid $NGINX_DIR/nginx.pid;
error_log $NGINX_DIR/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    # Load generators keep their connections: don't close them after 1000 requests.
    keepalive_requests 100000000;
    keepalive_timeout 300s;
    client_body_temp_path $NGINX_DIR/tmp/body;
    proxy_temp_path $NGINX_DIR/tmp/proxy;
    fastcgi_temp_path $NGINX_DIR/tmp/fastcgi;
    uwsgi_temp_path $NGINX_DIR/tmp/uwsgi;
    scgi_temp_path $NGINX_DIR/tmp/scgi;
    server {
        listen 127.0.0.1:$1;
        location / { default_type text/plain; return 200 "ok\n"; }
    }
    # HTTP/2 with prior knowledge (h2c) for the HTTP/2 tools.
    server {
        listen 127.0.0.1:$2 http2;
        http2_max_concurrent_streams 1024;
        location / { default_type text/plain; return 200 "ok\n"; }
        # gRPC's trailers-only answer: status OK in the headers, no message.
        location /brunt.test.Load/ {
            default_type application/grpc;
            add_header grpc-status 0;
            return 200 "";
        }
    }
}
EOF
    taskset -c "$SERVER_CPU" "$NGINX" -p "$NGINX_DIR" -c "$NGINX_DIR/nginx.conf" -e "$NGINX_DIR/error.log" \
        >"$NGINX_DIR/stdout.log" 2>&1 &
    NGINX_PID=$!
    if ! wait_listening "$1" "$NGINX_PID" || ! wait_listening "$2" "$NGINX_PID"; then
        echo "compare.sh: nginx did not start; $NGINX_DIR/error.log says:" >&2
        cat "$NGINX_DIR/error.log" "$NGINX_DIR/stdout.log" >&2 2>/dev/null
        exit 1
    fi
}
stop_nginx() {
    [ -n "$NGINX_PID" ] || return 0
    kill -QUIT "$NGINX_PID" 2>/dev/null
    local i
    for i in $(seq 1 50); do kill -0 "$NGINX_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$NGINX_PID" 2>/dev/null
    NGINX_PID=""
}

# CPU ticks (utime + stime) of nginx's master and workers.
CLK_TCK=$(getconf CLK_TCK)
nginx_ticks() {
    local total=0 p f
    for p in $NGINX_PID $(pgrep -P "$NGINX_PID" 2>/dev/null); do
        f=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null) || continue
        set -- $f
        total=$((total + ${12} + ${13}))
    done
    echo "$total"
}

# ---------------------------------------------------------------- one measured run

# run_tool TOOL ROUND URL → one TSV row on stdout:
# tool round ok|FAILED requests seconds cpu_s rss_kb srv_cpu_pct note
run_tool() {
    local tool=$1 round=$2 url=$3
    local tag="$tool-r$round" out="$WORK/$tool-r$round.out" tf="$WORK/$tool-r$round.time"
    local limit=$((DURATION + 60))
    local -a cmd
    case "$tool" in
    wrk) cmd=(wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" "$url/") ;;
    oha) cmd=("$OHA_BIN" -z "${DURATION}s" -c "$CONNECTIONS" --no-tui --output-format json "$url/") ;;
    h2load) cmd=(h2load -t1 -c"$H2_CONNECTIONS" -m"$H2_STREAMS" -D"$DURATION" "$H2_URL/") ;;
    h2load-grpc)
        # Ping { name: "bench" }, framed: no compression, length 7.
        printf '\x00\x00\x00\x00\x07\x0a\x05bench' >"$WORK/ping.bin"
        cmd=(h2load -t1 -c"$H2_CONNECTIONS" -m"$H2_STREAMS" -D"$DURATION" -d "$WORK/ping.bin"
            -H 'content-type: application/grpc' -H 'te: trailers' "$H2_URL/brunt.test.Load/Unary")
        ;;
    oha-h2) cmd=("$OHA_BIN" --http2 -z "${DURATION}s" -c "$H2_CONNECTIONS" -p "$H2_STREAMS" --no-tui --output-format json "$H2_URL/") ;;
    brunt-h2 | brunt-grpc)
        if [ -n "$BRUNT_PROBLEM" ]; then
            printf '%s\t%s\tFAILED\t\t\t\t\t\t%s\n' "$tool" "$round" "$BRUNT_PROBLEM"
            return
        fi
        local prof=max-h2
        [ "$tool" = brunt-grpc ] && prof=max-grpc
        sed -e "s/vus: *[0-9][0-9]*/vus: $((H2_CONNECTIONS * H2_STREAMS))/" \
            -e "s/streams_per_connection: *[0-9][0-9]*/streams_per_connection: $H2_STREAMS/" \
            -e "s/duration: *[0-9][0-9a-z ]*/duration: ${DURATION}s /" \
            -e "s|\.\./\.\./profiles/|$REPO_DIR/profiles/|" \
            "$BENCH_DIR/profiles/$prof.yaml" >"$WORK/$prof.yaml"
        cmd=("$BRUNT_BIN" run "$WORK/$prof.yaml" --target "$H2_URL" --out "$WORK/$tag")
        ;;
    brunt | brunt-tmpl)
        if [ -n "$BRUNT_PROBLEM" ]; then
            printf '%s\t%s\tFAILED\t\t\t\t\t\t%s\n' "$tool" "$round" "$BRUNT_PROBLEM"
            return
        fi
        local prof=max
        if [ "$tool" = brunt-tmpl ]; then
            prof=max-templated
            make_feeder
        fi
        sed -e "s/vus: *[0-9][0-9]*/vus: $CONNECTIONS/" -e "s/duration: *[0-9][0-9a-z ]*/duration: ${DURATION}s /" \
            "$BENCH_DIR/profiles/$prof.yaml" >"$WORK/$prof.yaml"
        cmd=("$BRUNT_BIN" run "$WORK/$prof.yaml" --target "$url" --out "$WORK/$tag")
        ;;
    esac
    local t0 t1 rc
    t0=$(nginx_ticks)
    taskset -c "$GEN_CPU" /usr/bin/time -f '%e %U %S %M' -o "$tf" \
        timeout --kill-after=5 "$limit" "${cmd[@]}" >"$out" 2>&1 </dev/null
    rc=$?
    t1=$(nginx_ticks)
    local fail="" requests="" secs="" note=""
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        fail="did not finish within ${limit}s"
    fi
    case "$tool" in
    wrk)
        [ -n "$fail" ] || [ "$rc" -eq 0 ] || fail="exit $rc"
        requests=$(awk '/ requests in /{print $1; exit}' "$out")
        secs=$(awk '/ requests in /{sub(/s,$/, "", $4); print $4; exit}' "$out")
        local errs
        errs=$(awk '/Socket errors|Non-2xx/{printf "%s; ", $0}' "$out")
        [ -z "$errs" ] || note="$errs"
        ;;
    h2load | h2load-grpc)
        [ -n "$fail" ] || [ "$rc" -eq 0 ] || fail="exit $rc"
        # "requests: N total, N started, N done, N succeeded, …" and "finished in 10.00s, …"
        requests=$(awk '/^requests:/{print $6; exit}' "$out")
        secs=$(awk '/^finished in/{sub(/s,$/, "", $3); print $3; exit}' "$out")
        local failed
        failed=$(awk '/^requests:/{print $10; exit}' "$out")
        [ "${failed:-0}" = 0 ] || note="$failed failed"
        ;;
    oha | oha-h2)
        [ -n "$fail" ] || [ "$rc" -eq 0 ] || fail="exit $rc"
        if [ -z "$fail" ]; then
            requests=$(jq -r '([.statusCodeDistribution[]?] | add // 0) + ([.errorDistribution[]?] | add // 0)' "$out" 2>/dev/null)
            secs=$(jq -r '.summary.total' "$out" 2>/dev/null)
        fi
        ;;
    brunt | brunt-tmpl | brunt-h2 | brunt-grpc)
        [ -n "$fail" ] || [ "$rc" -eq 0 ] || [ "$rc" -eq 99 ] || fail="brunt exit $rc: $(tail -n 3 "$out" | tr '\n\t' '  ')"
        if [ -z "$fail" ]; then
            if [ ! -s "$WORK/$tag/summary.json" ]; then
                fail="no $WORK/$tag/summary.json (brunt exit $rc)"
            else
                requests=$(jq -r '.totals.requests // empty' "$WORK/$tag/summary.json" 2>/dev/null)
                [ -n "$requests" ] || fail="summary.json has no .totals.requests"
                secs=$DURATION
            fi
        fi
        ;;
    esac
    if [ -z "$fail" ] && ! is_uint "${requests%.*}"; then
        fail="could not read the request count from $out"
    fi
    if [ -z "$fail" ] && [ "${requests%.*}" -eq 0 ]; then
        fail="0 requests completed"
    fi
    if [ -n "$fail" ]; then
        printf '%s\t%s\tFAILED\t\t\t\t\t\t%s (output: %s)\n' "$tool" "$round" "$fail" "$out"
        return
    fi
    local wall user sys rss
    read -r wall user sys rss <"$tf" || true
    local cpu srv
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN{printf "%.3f", u + s}')
    srv=$(awk -v a="$t0" -v b="$t1" -v hz="$CLK_TCK" -v w="$wall" 'BEGIN{ if (w > 0) printf "%.0f", 100 * (b - a) / hz / w; else print "" }')
    printf '%s\t%s\tok\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "$round" "$requests" "$secs" "$cpu" "$rss" "$srv" "$note"
}

median() { # numbers on stdin → median
    sort -g | awk '{v[NR] = $1} END { if (NR == 0) exit; if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ---------------------------------------------------------------- throughput mode

compare_mode() {
    local port url h2port
    port=$(free_port)
    h2port=$(free_port)
    url="http://127.0.0.1:$port"
    H2_URL="http://127.0.0.1:$h2port"
    start_nginx "$port" "$h2port"
    # Sanity check: the server answers before anything is measured.
    if ! timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && printf 'GET / HTTP/1.0\r\n\r\n' >&3 && head -c 12 <&3 | grep -q 200"; then
        echo "compare.sh: nginx on $url does not answer 200" >&2
        exit 1
    fi
    echo "nginx (1 worker, CPU $SERVER_CPU) on $url; generators on CPU $GEN_CPU;" \
        "$ROUNDS round(s) × ${DURATION}s, $CONNECTIONS connections (HTTP/2: h2c on $H2_URL, $H2_CONNECTIONS connections × $H2_STREAMS streams); tools: ${TOOL_LIST[*]}"
    local results="$WORK/results.tsv" round i n=${#TOOL_LIST[@]} tool row
    printf 'tool\tround\tstatus\trequests\tseconds\tcpu_s\trss_kb\tsrv_cpu_pct\tnote\n' >"$results"
    for round in $(seq 1 "$ROUNDS"); do
        for i in $(seq 0 $((n - 1))); do
            # Rotate the order each round so no tool always runs first (warm caches, thermal state).
            tool=${TOOL_LIST[$(((i + round - 1) % n))]}
            row=$(run_tool "$tool" "$round" "$url")
            printf '%s\n' "$row" >>"$results"
            printf '  round %s %-10s %s\n' "$round" "$tool" "$(echo "$row" | awk -F'\t' '$3 == "ok" {printf "%d requests, %.1f CPU-s, %d MB, nginx %s%%", $4, $6, $7 / 1024, $8; next} {print "FAILED: " $9}')"
        done
    done
    print_table "$results"
}

print_table() {
    local results=$1 tool ok total rps rpc rss srv wrk_rps="" wrk_rpc="" h2_rps="" h2_rpc="" g_rps="" g_rpc="" ref_rps ref_rpc
    # The references' medians first, for the ratios: wrk for HTTP/1.1, h2load for HTTP/2.
    wrk_rps=$(awk -F'\t' '$1 == "wrk" && $3 == "ok" {print $4 / $5}' "$results" | median)
    wrk_rpc=$(awk -F'\t' '$1 == "wrk" && $3 == "ok" {print $4 / $6}' "$results" | median)
    h2_rps=$(awk -F'\t' '$1 == "h2load" && $3 == "ok" {print $4 / $5}' "$results" | median)
    h2_rpc=$(awk -F'\t' '$1 == "h2load" && $3 == "ok" {print $4 / $6}' "$results" | median)
    g_rps=$(awk -F'\t' '$1 == "h2load-grpc" && $3 == "ok" {print $4 / $5}' "$results" | median)
    g_rpc=$(awk -F'\t' '$1 == "h2load-grpc" && $3 == "ok" {print $4 / $6}' "$results" | median)
    echo
    printf '%-11s %5s %12s %12s %9s %11s %9s %8s\n' tool runs req/s req/CPU-s "×ref r/s" "×ref r/CPU" "RSS MB" "srv CPU"
    local status=0
    for tool in "${TOOL_LIST[@]}"; do
        total=$(awk -F'\t' -v t="$tool" '$1 == t' "$results" | wc -l)
        ok=$(awk -F'\t' -v t="$tool" '$1 == t && $3 == "ok"' "$results" | wc -l)
        if [ "$ok" -eq 0 ]; then
            printf '%-11s %5s FAILED: %s\n' "$tool" "0/$total" \
                "$(awk -F'\t' -v t="$tool" '$1 == t && $3 == "FAILED" {print $9; exit}' "$results")"
            status=1
            continue
        fi
        rps=$(awk -F'\t' -v t="$tool" '$1 == t && $3 == "ok" {print $4 / $5}' "$results" | median)
        rpc=$(awk -F'\t' -v t="$tool" '$1 == t && $3 == "ok" {print $4 / $6}' "$results" | median)
        rss=$(awk -F'\t' -v t="$tool" '$1 == t && $3 == "ok" {print $7 / 1024}' "$results" | median)
        srv=$(awk -F'\t' -v t="$tool" '$1 == t && $3 == "ok" {print $8}' "$results" | median)
        case "$tool" in
        brunt-h2 | h2load | oha-h2) ref_rps=$h2_rps ref_rpc=$h2_rpc ;;
        brunt-grpc | h2load-grpc) ref_rps=$g_rps ref_rpc=$g_rpc ;;
        *) ref_rps=$wrk_rps ref_rpc=$wrk_rpc ;;
        esac
        awk -v t="$tool" -v runs="$ok/$total" -v rps="$rps" -v rpc="$rpc" -v rss="$rss" -v srv="$srv" \
            -v wr="$ref_rps" -v wc="$ref_rpc" 'BEGIN {
                xr = (wr > 0) ? sprintf("%.2f", rps / wr) : "-";
                xc = (wc > 0) ? sprintf("%.2f", rpc / wc) : "-";
                printf "%-11s %5s %12.0f %12.0f %9s %11s %9.1f %7s%%\n", t, runs, rps, rpc, xr, xc, rss, srv }'
        [ "$ok" -eq "$total" ] || status=1
    done
    echo
    echo "medians over $ROUNDS round(s); ×ref: against wrk (HTTP/1.1 tools), h2load (HTTP/2 tools), h2load-grpc (gRPC tools); per-run rows: $results"
    print_checks "$results" || status=1
    return $status
}

# The issue-10 checks, when their tools were part of the run:
#   templated/static: brunt-tmpl's median req/CPU-s over brunt's (and per round,
#     as the rounds interleave the two); the extra CPU per request is
#     static/templated − 1, PASS when at most TMPL_LIMIT %.
#   static ×wrk: brunt's median req/CPU-s over wrk's, PASS when at least
#     STATIC_FLOOR.
print_checks() {
    local results=$1 rc=0 s t w per
    rpc_of() { awk -F'\t' -v t="$1" '$1 == t && $3 == "ok" {print $4 / $6}' "$results" | median; }
    s=$(rpc_of brunt)
    t=$(rpc_of brunt-tmpl)
    w=$(rpc_of wrk)
    in_list() { local x; for x in "${TOOL_LIST[@]}"; do [ "$x" = "$1" ] && return 0; done; return 1; }
    if in_list brunt && in_list brunt-tmpl && [ -n "$s" ] && [ -n "$t" ]; then
        per=$(awk -F'\t' '$3 == "ok" && ($1 == "brunt" || $1 == "brunt-tmpl") {v[$1, $2] = $4 / $6; r[$2] = 1}
            END { for (k in r) if ((("brunt", k) in v) && (("brunt-tmpl", k) in v)) printf "%s %.2f\n", k, v["brunt-tmpl", k] / v["brunt", k] }' \
            "$results" | sort -n | awk '{printf "%s%s", sep, $2; sep = ", "}')
        per="$per; median $(tr ',' '\n' <<<"$per" | median)"
        awk -v s="$s" -v t="$t" -v lim="$TMPL_LIMIT" -v per="$per" 'BEGIN {
            extra = 100 * (s / t - 1);
            ok = (extra <= lim);
            printf "templated/static req/CPU-s: %.3f (per round %s) — %+.1f%% generator CPU per request: %s (limit +%d%%)\n",
                t / s, per, extra, ok ? "PASS" : "FAIL", lim;
            exit !ok }' || rc=1
    elif in_list brunt && in_list brunt-tmpl; then
        echo "templated/static req/CPU-s: no figure (needs ok runs of both brunt and brunt-tmpl)"
        rc=1
    fi
    if in_list brunt-tmpl && [ -n "$t" ] && [ -n "$w" ]; then
        awk -v t="$t" -v w="$w" 'BEGIN { printf "templated ×wrk req/CPU-s: %.2f\n", t / w }'
    fi
    if in_list brunt && in_list wrk && [ -n "$s" ] && [ -n "$w" ]; then
        awk -v s="$s" -v w="$w" -v floor="$STATIC_FLOOR" 'BEGIN {
            ok = (s / w >= floor);
            printf "static ×wrk req/CPU-s: %.3f: %s (at least %.2f)\n",
                s / w, ok ? "PASS" : "FAIL", floor;
            exit !ok }' || rc=1
    fi
    local b2 h2
    b2=$(rpc_of brunt-h2)
    h2=$(rpc_of h2load)
    if in_list brunt-h2 && in_list h2load && [ -n "$b2" ] && [ -n "$h2" ]; then
        awk -v s="$b2" -v w="$h2" -v floor="$H2_FLOOR" 'BEGIN {
            ok = (s / w >= floor);
            printf "HTTP/2 ×h2load req/CPU-s: %.3f: %s (at least %.2f)\n", s / w, ok ? "PASS" : "FAIL", floor;
            exit !ok }' || rc=1
    fi
    return $rc
}

# ---------------------------------------------------------------- memory mode

rss_kb() { awk '/^VmRSS:/{print $2}' "/proc/$1/status" 2>/dev/null; }

memory_mode() {
    local port url target_pid max=0 c
    for c in "${MEM_CHECKPOINTS[@]}"; do [ "$c" -gt "$max" ] && max=$c; done
    # Run a little past the last checkpoint so it is sampled mid-run.
    local secs=$(((max + MEM_RATE - 1) / MEM_RATE + 5))
    port=$(free_port)
    url="http://127.0.0.1:$port"
    if [ "$MEM_TARGET" = nginx ]; then
        local h2port
        h2port=$(free_port)
        H2_URL="http://127.0.0.1:$h2port"
        start_nginx "$port" "$h2port"
        target_pid=$NGINX_PID
    else
        taskset -c "$SERVER_CPU" "$BRUNT_BIN" demo-target --listen "127.0.0.1:$port" >"$WORK/demo-target.log" 2>&1 &
        target_pid=$!
        STARTED_PIDS+=("$target_pid")
        wait_listening "$port" "$target_pid" || {
            echo "compare.sh: 'brunt demo-target --listen 127.0.0.1:$port' did not start; its output:" >&2
            cat "$WORK/demo-target.log" >&2
            exit 1
        }
    fi
    local -a cmd
    if [ "$MEM_TOOL" = brunt ]; then
        local prof=memory
        if [ "$MEM_PROFILE" = templated ]; then
            prof=memory-templated
            make_feeder
        fi
        sed -e "s|rate: *[0-9][0-9]*/s|rate: $MEM_RATE/s|" -e "s/duration: *[0-9][0-9a-z ]*/duration: ${secs}s /" \
            "$BENCH_DIR/profiles/$prof.yaml" >"$WORK/$prof.yaml"
        cmd=("$BRUNT_BIN" run "$WORK/$prof.yaml" --target "$url" --out "$WORK/brunt-memory" --set "target.http=$MEM_HTTP")
        if [ "$MEM_HTTP" = 2 ] && [ "$MEM_TARGET" = nginx ]; then
            # nginx's h2c listener (start_nginx's second port).
            cmd=("${cmd[@]/#$url/$H2_URL}")
        fi
    else
        # oha keeps every result in memory: useful to see the check catch growth.
        local path=/
        [ "$MEM_TARGET" = demo ] && path=/fast
        cmd=("$OHA_BIN" -n "$max" -q "$MEM_RATE" -c 50 --latency-correction --no-tui --output-format json "$url$path")
    fi
    local what=$MEM_TOOL
    [ "$MEM_TOOL" = brunt ] && what="brunt ($prof.yaml, HTTP/$MEM_HTTP)"
    echo "memory check: $what at $MEM_RATE req/s for ${secs}s against $MEM_TARGET ($url), checkpoints: ${MEM_CHECKPOINTS[*]} requests"
    taskset -c "$GEN_CPU" "${cmd[@]}" >"$WORK/$MEM_TOOL-memory.out" 2>&1 </dev/null &
    local gen=$!
    STARTED_PIDS+=("$gen")
    local start now el rss i=0 next samples="$WORK/rss.tsv" first="" last="" sorted
    sorted=$(printf '%s\n' "${MEM_CHECKPOINTS[@]}" | sort -n | tr '\n' ' ')
    read -r -a sorted <<<"$sorted"
    printf 'seconds\trss_kb\n' >"$samples"
    start=$(date +%s.%N)
    local limit=$((secs + 120)) tick
    for tick in $(seq 1 $((limit * 4))); do
        kill -0 "$gen" 2>/dev/null || break
        now=$(date +%s.%N)
        el=$(awk -v a="$start" -v b="$now" 'BEGIN{printf "%.1f", b - a}')
        rss=$(rss_kb "$gen")
        [ -n "$rss" ] || break
        [ $((tick % 4)) -eq 0 ] && printf '%s\t%s\n' "$el" "$rss" >>"$samples"
        if [ "$i" -lt "${#sorted[@]}" ]; then
            next=${sorted[$i]}
            if awk -v e="$el" -v n="$next" -v r="$MEM_RATE" 'BEGIN{exit !(e >= n / r)}'; then
                printf '  after ~%s requests (t=%ss): RSS %s MB\n' "$next" "$el" "$(awk -v k="$rss" 'BEGIN{printf "%.1f", k / 1024}')"
                [ -n "$first" ] || first=$rss
                last=$rss
                i=$((i + 1))
            fi
        fi
        sleep 0.25
    done
    if kill -0 "$gen" 2>/dev/null; then
        echo "compare.sh: $MEM_TOOL still running ${limit}s after start, stopping it" >&2
        kill "$gen" 2>/dev/null
    fi
    wait "$gen"
    local rc=$?
    if [ "$i" -lt "${#sorted[@]}" ]; then
        echo "compare.sh: $MEM_TOOL ended (exit $rc) before the ${sorted[$i]}-request checkpoint; output: $WORK/$MEM_TOOL-memory.out" >&2
        tail -n 5 "$WORK/$MEM_TOOL-memory.out" >&2
        exit 1
    fi
    # How many requests really went out (the checkpoints assume the asked rate).
    local sent="" want=$((MEM_RATE * secs))
    if [ "$MEM_TOOL" = brunt ]; then
        sent=$(jq -r '.totals.requests // empty' "$WORK/brunt-memory/summary.json" 2>/dev/null)
    else
        sent=$(jq -r '([.statusCodeDistribution[]?] | add // 0) + ([.errorDistribution[]?] | add // 0)' "$WORK/$MEM_TOOL-memory.out" 2>/dev/null)
        want=$max # oha -n stops at the last checkpoint
    fi
    if [ -n "$sent" ]; then
        awk -v s="$sent" -v want="$want" 'BEGIN{
            printf "  requests sent: %d of %d asked (%.1f%%)%s\n", s, want, 100 * s / want,
                (s < 0.95 * want) ? " — below the asked rate: checkpoints came early, lower --mem-rate" : "" }'
    else
        echo "  requests sent: unknown (no count in the output)"
    fi
    echo "  RSS samples: $samples"
    awk -v a="$first" -v b="$last" -v tol="$MEM_TOLERANCE" 'BEGIN{
        g = b - a; pct = (a > 0) ? 100 * g / a : 0;
        printf "  RSS %.1f MB → %.1f MB (%+.1f MB, %+.1f%%): %s\n", a / 1024, b / 1024, g / 1024, pct,
            (pct <= tol) ? "FLAT" : "GREW";
        exit (pct <= tol) ? 0 : 1 }'
}

if [ "$MODE" = memory ]; then
    memory_mode
else
    compare_mode
fi
