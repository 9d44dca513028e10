# bench/pinned.sh — sourced by templates.sh and traces.sh: brunt pinned to
# one CPU against `brunt demo-target` pinned to another, run after run.
# The sourcing script sets NAME (its cache folder) before sourcing, hands
# each argument pair to `pinned_opt` (1 = not ours), then calls
# `pinned_setup` (checks, builds brunt if needed, starts the demo target:
# $port, $WORK), `pinned_round` once per run and `pinned_median` at the end.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)
WORK="$BENCH_DIR/.cache/$NAME/$(date +%Y%m%d-%H%M%S)"
ROUNDS=3 DURATION=10 VUS=50 GEN_CPU=0 SERVER_CPU=1 BRUNT_BIN=""
die() { echo "$NAME.sh: $*" >&2; exit 2; }

# An option every pinned bench takes: `pinned_opt OPT VALUE` sets it.
pinned_opt() {
  case "$1" in
    --rounds) ROUNDS=${2:?} ;;
    --duration) DURATION=${2:?} ;;
    --vus) VUS=${2:?} ;;
    --brunt) BRUNT_BIN=${2:?} ;;
    --gen-cpu) GEN_CPU=${2:?} ;;
    --server-cpu) SERVER_CPU=${2:?} ;;
    *) return 1 ;;
  esac
}

pinned_setup() {
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
}

# `pinned_run KIND ROUND [BIN]`: $WORK/profiles/KIND.yaml run by BIN (default
# $BRUNT_BIN) → "requests cpu_s", or FAILED.
pinned_run() {
  local kind=$1 round=$2 bin=${3:-$BRUNT_BIN} out="$WORK/runs/$1-$2" tf="$WORK/time-$1-$2"
  taskset -c "$GEN_CPU" /usr/bin/time -f '%U %S' -o "$tf" \
    "$bin" run --quiet "$WORK/profiles/$kind.yaml" --target "http://127.0.0.1:$port" --out "$out" \
    >"$WORK/$kind-$round.log" 2>&1
  local rc=$? req
  [ $rc -eq 0 ] || [ $rc -eq 99 ] || { echo "FAILED"; return; }
  req=$(jq -r '.totals.requests' "$out/summary.json")
  awk -v r="$req" '{printf "%d %.3f\n", r, $1 + $2}' "$tf"
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# Each kind's runs: req/s and req/CPU-s, space-separated.
declare -A rps cpu

# `pinned_round KIND ROUND [BIN]`: one run, said and added to rps and cpu.
pinned_round() {
  local r n c
  r=$(pinned_run "$@")
  [ "$r" = FAILED ] && die "$1 round $2 failed, see $WORK/$1-$2.log"
  read -r n c <<<"$r"
  echo "  round $2 $1: $n requests, $c CPU-s"
  rps[$1]+="$(awk -v n="$n" -v d="$DURATION" 'BEGIN{printf "%.1f", n / d}') "
  cpu[$1]+="$(awk -v n="$n" -v c="$c" 'BEGIN{printf "%.1f", (c > 0) ? n / c : 0}') "
}

# `pinned_median rps|cpu KIND`: the median over KIND's runs.
pinned_median() {
  local -n runs=$1
  tr ' ' '\n' <<<"${runs[$2]}" | grep . | median
}
