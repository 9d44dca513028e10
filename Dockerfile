# The brunt image: what `brunt k8s` runs as the shards of an Indexed Job.
#   docker build -t registry.example.com/brunt:0.1 . && docker push registry.example.com/brunt:0.1
#
# Builder and runtime are both Debian bookworm, so the binary finds the glibc
# (and libssl3, for the SSH collector) it was linked against; a builder on a
# newer Debian would link a glibc bookworm-slim does not have.
FROM rust:1.95-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends libssl-dev pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# Cache mounts keep the registry and the compiled dependencies between builds
# (BuildKit, the default builder); the binary is copied out of the cache.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin brunt \
 && cp target/release/brunt /usr/local/bin/brunt

FROM debian:bookworm-slim
# ca-certificates: https targets · libssl3: the SSH collector (libssh2) ·
# openssh-client: the system-ssh transport. tar (in the base) serves `kubectl cp`.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates libssl3 openssh-client \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 10001 --create-home --shell /usr/sbin/nologin brunt
COPY --from=build /usr/local/bin/brunt /usr/local/bin/brunt
USER 10001
WORKDIR /home/brunt
ENTRYPOINT ["brunt"]
CMD ["--help"]
