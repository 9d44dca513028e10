#!/usr/bin/env bash
# bench/traces.sh — what `target.trace` costs: brunt's requests per
# CPU-second without it, with `sample: 0%` (the per-send draw only), 1 % and
# 100 % (a traceparent formatted and sent on every request), closed loop,
# 50 VUs on one load worker; with --base BIN, also BIN (e.g. a build from
# before `target.trace` existed) without it: the cost when absent.
#
# `brunt demo-target` serves /fast on 127.0.0.1 pinned to --server-cpu;
# brunt runs pinned to --gen-cpu under GNU time. The variants alternate over
# R rounds (order rotated every round); each figure is the median over rounds:
#   req/s      .totals.requests of summary.json / duration
#   req/CPU-s  requests / (user + sys) seconds of the brunt process
# and each variant's req/CPU-s over `none`'s (1.00 = free).
#
# Usage: bench/traces.sh [--rounds R] [--duration SECS] [--vus N]
#          [--brunt PATH] [--base PATH] [--gen-cpu N] [--server-cpu N]
# Needs: taskset, GNU time (/usr/bin/time), jq. brunt: --brunt, else
# target/release/brunt (built with cargo build --release if missing).
# Runs and logs stay in bench/.cache/traces/.

set -u -o pipefail
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)
WORK="$BENCH_DIR/.cache/traces/$(date +%Y%m%d-%H%M%S)"
ROUNDS=3 DURATION=10 VUS=50 GEN_CPU=0 SERVER_CPU=1 BRUNT_BIN="" BASE_BIN=""
die() { echo "traces.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=${2:?}; shift ;;
    --duration) DURATION=${2:?}; shift ;;
    --vus) VUS=${2:?}; shift ;;
    --brunt) BRUNT_BIN=${2:?}; shift ;;
    --base) BASE_BIN=${2:?}; shift ;;
    --gen-cpu) GEN_CPU=${2:?}; shift ;;
    --server-cpu) SERVER_CPU=${2:?}; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) die "unknown option $1" ;;
  esac
  shift
done
for v in ROUNDS DURATION VUS GEN_CPU SERVER_CPU; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "--${v,,} expects a whole number"
done
for t in taskset jq /usr/bin/time; do command -v "$t" >/dev/null || die "$t is missing"; done
if [ -z "$BRUNT_BIN" ]; then
  BRUNT_BIN="$REPO_DIR/target/release/brunt"
  [ -x "$BRUNT_BIN" ] || (cd "$REPO_DIR" && cargo build --release) || die "cargo build --release failed"
fi
[ -x "$BRUNT_BIN" ] || die "no brunt at $BRUNT_BIN"
[ -z "$BASE_BIN" ] || [ -x "$BASE_BIN" ] || die "no brunt at $BASE_BIN"
mkdir -p "$WORK/profiles"

port=$((20000 + RANDOM % 20000))
taskset -c "$SERVER_CPU" "$BRUNT_BIN" demo-target --listen "127.0.0.1:$port" >"$WORK/demo-target.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null' EXIT
for _ in $(seq 50); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done

# variant → its profile; "base" runs BASE_BIN on the untraced profile.
kinds="none 0 1 100"
[ -n "$BASE_BIN" ] && kinds="base $kinds"
for kind in $kinds; do
  case $kind in
    none|base) trace="" ;;
    *) trace=", trace: { sample: $kind% }" ;;
  esac
  sed -e "s/vus: [0-9]*/vus: $VUS/" -e "s/duration: [0-9]*s/duration: ${DURATION}s/" \
      -e "s#url: http://127.0.0.1:8080 }#url: http://127.0.0.1:8080$trace }#" \
      "$BENCH_DIR/profiles/traces.yaml" >"$WORK/profiles/$kind.yaml"
done

# kind round → "requests cpu_s"
one() {
  local kind=$1 round=$2 out="$WORK/runs/$1-$2" tf="$WORK/time-$1-$2" bin=$BRUNT_BIN
  [ "$kind" = base ] && bin=$BASE_BIN
  taskset -c "$GEN_CPU" /usr/bin/time -f '%U %S' -o "$tf" \
    "$bin" run --quiet "$WORK/profiles/$kind.yaml" --target "http://127.0.0.1:$port" --out "$out" \
    >"$WORK/$kind-$round.log" 2>&1
  local rc=$? req
  [ $rc -eq 0 ] || [ $rc -eq 99 ] || { echo "FAILED"; return; }
  req=$(jq -r '.totals.requests' "$out/summary.json")
  awk -v r="$req" '{printf "%d %.3f\n", r, $1 + $2}' "$tf"
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

declare -A rps cpu
echo "demo-target on CPU $SERVER_CPU, brunt on CPU $GEN_CPU; $ROUNDS rounds × ${DURATION}s, $VUS VUs"
read -r -a order <<<"$kinds"
for round in $(seq "$ROUNDS"); do
  for kind in "${order[@]}"; do
    r=$(one "$kind" "$round")
    [ "$r" = FAILED ] && die "$kind round $round failed, see $WORK/$kind-$round.log"
    read -r n c <<<"$r"
    echo "  round $round $kind: $n requests, $c CPU-s"
    rps[$kind]+="$(awk -v n="$n" -v d="$DURATION" 'BEGIN{printf "%.1f", n / d}') "
    cpu[$kind]+="$(awk -v n="$n" -v c="$c" 'BEGIN{printf "%.1f", (c > 0) ? n / c : 0}') "
  done
  order=("${order[@]:1}" "${order[0]}")
done
printf '%-8s %10s %12s %8s\n' variant req/s req/CPU-s vs-none
m_none=$(tr ' ' '\n' <<<"${cpu[none]}" | grep . | median)
for kind in $kinds; do
  m_r=$(tr ' ' '\n' <<<"${rps[$kind]}" | grep . | median)
  m_c=$(tr ' ' '\n' <<<"${cpu[$kind]}" | grep . | median)
  name=$kind; case $kind in none|base) ;; *) name="$kind%" ;; esac
  printf '%-8s %10.0f %12.0f %8.2f\n' "$name" "$m_r" "$m_c" "$(awk -v a="$m_c" -v b="$m_none" 'BEGIN{print (b > 0) ? a / b : 0}')"
done
