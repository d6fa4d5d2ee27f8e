# syntax=docker/dockerfile:1
#
# toolgate over Streamable HTTP at :8765/mcp, with API keys from a mounted keys file.
#
#   docker build -t toolgate .
#   docker run --rm -p 8765:8765 \
#     -v "$PWD/toolgate-keys.json:/run/secrets/toolgate-keys:ro" toolgate
#
# See docs/guides/operators.md, "Docker". Not built in CI (the CI machine has no Docker).

# The builder and the runtime share a Debian release, so the binary finds the glibc it
# was linked against.
FROM rust:1.95-trixie AS build
WORKDIR /src
# Everything but what .dockerignore leaves out: Cargo.toml names the tests and benches,
# and the catalogue, prompts and resources folders are embedded into the binary.
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --profile dist --locked --bin toolgate \
    && install -m 0755 target/dist/toolgate /usr/local/bin/toolgate

FROM debian:trixie-slim
# One static-enough binary: the JavaScript workers are this same program
# (`toolgate __js-worker`), the catalogue is compiled in, and TLS to an https catalogue
# API checks certificates against the system's roots.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --home-dir /nonexistent --shell /usr/sbin/nologin toolgate
COPY --from=build /usr/local/bin/toolgate /usr/local/bin/toolgate
USER 10001:10001
# A keys file is required to listen on a non-loopback address (toolgate refuses to start
# without one unless TOOLGATE_ALLOW_ANONYMOUS=1). Mount it here, readable by uid 10001.
ENV TOOLGATE_KEYS_FILE=/run/secrets/toolgate-keys
EXPOSE 8765
CMD ["toolgate", "--http", "0.0.0.0:8765"]
