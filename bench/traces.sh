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
NAME=traces
. "$(dirname "${BASH_SOURCE[0]}")/pinned.sh"
BASE_BIN=""
while [ $# -gt 0 ]; do
  case "$1" in
    --base) BASE_BIN=${2:?} ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) pinned_opt "$1" "${2:-}" || die "unknown option $1" ;;
  esac
  shift 2
done
[ -z "$BASE_BIN" ] || [ -x "$BASE_BIN" ] || die "no brunt at $BASE_BIN"
pinned_setup

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

echo "demo-target on CPU $SERVER_CPU, brunt on CPU $GEN_CPU; $ROUNDS rounds × ${DURATION}s, $VUS VUs"
read -r -a order <<<"$kinds"
for round in $(seq "$ROUNDS"); do
  for kind in "${order[@]}"; do
    bin=$BRUNT_BIN; [ "$kind" = base ] && bin=$BASE_BIN
    pinned_round "$kind" "$round" "$bin"
  done
  order=("${order[@]:1}" "${order[0]}")
done
printf '%-8s %10s %12s %8s\n' variant req/s req/CPU-s vs-none
m_none=$(pinned_median cpu none)
for kind in $kinds; do
  m_c=$(pinned_median cpu "$kind")
  name=$kind; case $kind in none|base) ;; *) name="$kind%" ;; esac
  printf '%-8s %10.0f %12.0f %8.2f\n' "$name" "$(pinned_median rps "$kind")" "$m_c" \
    "$(awk -v a="$m_c" -v b="$m_none" 'BEGIN{print (b > 0) ? a / b : 0}')"
done
