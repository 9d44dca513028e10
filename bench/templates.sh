#!/usr/bin/env bash
# bench/templates.sh — what templates cost: brunt's requests per CPU-second
# with a static request versus the same request templated (two random
# fields + one feeder column), closed loop, 50 VUs on one load worker.
#
# `brunt demo-target` serves /fast on 127.0.0.1 pinned to --server-cpu; brunt
# runs pinned to --gen-cpu under GNU time. The two profiles alternate over R
# rounds (order flipped every round); each figure is the median over rounds:
#   req/s      .totals.requests of summary.json / duration
#   req/CPU-s  requests / (user + sys) seconds of the brunt process
# and the templated/static ratio of req/CPU-s (1.00 = templates are free).
#
# Usage: bench/templates.sh [--rounds R] [--duration SECS] [--vus N]
#          [--brunt PATH] [--gen-cpu N] [--server-cpu N]
# Needs: taskset, GNU time (/usr/bin/time), jq. brunt: --brunt, else
# target/release/brunt (built with cargo build --release if missing).
# Runs and logs stay in bench/.cache/templates/.

set -u -o pipefail
NAME=templates
. "$(dirname "${BASH_SOURCE[0]}")/pinned.sh"
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) pinned_opt "$1" "${2:-}" || die "unknown option $1"; shift ;;
  esac
  shift
done
pinned_setup

# The profiles with this run's VUs and duration; the feeder path is made absolute.
for kind in static dynamic; do
  sed -e "s/vus: [0-9]*/vus: $VUS/" -e "s/duration: [0-9]*s/duration: ${DURATION}s/" \
      -e "s#file: ../../profiles/data/users.csv#file: $REPO_DIR/profiles/data/users.csv#" \
      "$BENCH_DIR/profiles/templates-$kind.yaml" >"$WORK/profiles/$kind.yaml"
done

echo "demo-target on CPU $SERVER_CPU, brunt on CPU $GEN_CPU; $ROUNDS rounds × ${DURATION}s, $VUS VUs"
for round in $(seq "$ROUNDS"); do
  order="static dynamic"; [ $((round % 2)) -eq 0 ] && order="dynamic static"
  for kind in $order; do
    pinned_round "$kind" "$round"
  done
done
printf '%-8s %10s %12s\n' profile req/s req/CPU-s
for kind in static dynamic; do
  m_c=$(pinned_median cpu "$kind")
  printf '%-8s %10.0f %12.0f\n' "$kind" "$(pinned_median rps "$kind")" "$m_c"
  eval "med_$kind=$m_c"
done
awk -v s="$med_static" -v d="$med_dynamic" 'BEGIN{printf "templated / static req/CPU-s: %.2f\n", (s > 0) ? d / s : 0}'
