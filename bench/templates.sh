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
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)
WORK="$BENCH_DIR/.cache/templates/$(date +%Y%m%d-%H%M%S)"
ROUNDS=3 DURATION=10 VUS=50 GEN_CPU=0 SERVER_CPU=1 BRUNT_BIN=""
die() { echo "templates.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=${2:?}; shift ;;
    --duration) DURATION=${2:?}; shift ;;
    --vus) VUS=${2:?}; shift ;;
    --brunt) BRUNT_BIN=${2:?}; shift ;;
    --gen-cpu) GEN_CPU=${2:?}; shift ;;
    --server-cpu) SERVER_CPU=${2:?}; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
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
mkdir -p "$WORK/profiles"

port=$((20000 + RANDOM % 20000))
taskset -c "$SERVER_CPU" "$BRUNT_BIN" demo-target --listen "127.0.0.1:$port" >"$WORK/demo-target.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null' EXIT
for _ in $(seq 50); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done

# The profiles with this run's VUs and duration; the feeder path is made absolute.
for kind in static dynamic; do
  sed -e "s/vus: [0-9]*/vus: $VUS/" -e "s/duration: [0-9]*s/duration: ${DURATION}s/" \
      -e "s#file: ../../profiles/data/users.csv#file: $REPO_DIR/profiles/data/users.csv#" \
      "$BENCH_DIR/profiles/templates-$kind.yaml" >"$WORK/profiles/$kind.yaml"
done

# kind round → "requests cpu_s"
one() {
  local kind=$1 round=$2 out="$WORK/runs/$1-$2" tf="$WORK/time-$1-$2"
  taskset -c "$GEN_CPU" /usr/bin/time -f '%U %S' -o "$tf" \
    "$BRUNT_BIN" run --quiet "$WORK/profiles/$kind.yaml" --target "http://127.0.0.1:$port" --out "$out" \
    >"$WORK/$kind-$round.log" 2>&1
  local rc=$? req
  [ $rc -eq 0 ] || [ $rc -eq 99 ] || { echo "FAILED"; return; }
  req=$(jq -r '.totals.requests' "$out/summary.json")
  awk -v r="$req" '{printf "%d %.3f\n", r, $1 + $2}' "$tf"
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

declare -A rps cpu
echo "demo-target on CPU $SERVER_CPU, brunt on CPU $GEN_CPU; $ROUNDS rounds × ${DURATION}s, $VUS VUs"
for round in $(seq "$ROUNDS"); do
  order="static dynamic"; [ $((round % 2)) -eq 0 ] && order="dynamic static"
  for kind in $order; do
    r=$(one "$kind" "$round")
    [ "$r" = FAILED ] && die "$kind round $round failed, see $WORK/$kind-$round.log"
    read -r n c <<<"$r"
    echo "  round $round $kind: $n requests, $c CPU-s"
    rps[$kind]+="$(awk -v n="$n" -v d="$DURATION" 'BEGIN{printf "%.1f", n / d}') "
    cpu[$kind]+="$(awk -v n="$n" -v c="$c" 'BEGIN{printf "%.1f", (c > 0) ? n / c : 0}') "
  done
done
printf '%-8s %10s %12s\n' profile req/s req/CPU-s
for kind in static dynamic; do
  m_r=$(tr ' ' '\n' <<<"${rps[$kind]}" | grep . | median)
  m_c=$(tr ' ' '\n' <<<"${cpu[$kind]}" | grep . | median)
  printf '%-8s %10.0f %12.0f\n' "$kind" "$m_r" "$m_c"
  eval "med_$kind=$m_c"
done
awk -v s="$med_static" -v d="$med_dynamic" 'BEGIN{printf "templated / static req/CPU-s: %.2f\n", (s > 0) ? d / s : 0}'
