#!/usr/bin/env bash
# make container-test: build the Docker image with podman and run it for real on this machine.
#
#   1. base image: localhost/mha-base from Debian packages (debootstrap), because no image registry
#      is reachable here; built once and then reused (podman rmi localhost/mha-base to rebuild);
#   2. the image from ./Dockerfile with --build-arg BASE_IMAGE=localhost/mha-base;
#   3. container 1, as deployed (port published on a free loopback port): /_stcore/health says ok,
#      the image's own HEALTHCHECK passes, the server does not run as root, and headless Chromium
#      renders the page (weights heatmap, no exception) -> artifacts/container.png;
#   4. container 2, offline (--network none) with a Python audit hook (tests/deploy/container/netaudit):
#      the same browser check through the container's network namespace, and no socket
#      connect/sendto or name lookup outside loopback from any Python process in the container.
#   5. a live class (issue 10): a Redis container (tests/deploy/container/redis.Containerfile, Debian's
#      redis-server on the same base) and two app containers with REDIS_URL pointing at it and a
#      teacher key (MHA_TEACHER_KEY, given at run time: the image has none); the page refuses a
#      wrong key, then a teacher's room started on app A with the right one is followed by a student
#      on app B, and survives Redis being stopped for 10 s (tests/deploy/container/class_check.py).
#
# CONTAINER_TEST_BUILD_ONLY=1 stops after steps 1 and 2 (and the Redis image of step 5): .ci/run builds
# the images at the lowest CPU priority while the suite runs, then runs the whole test on them.
#
# Without podman, runc, root, Chromium or Playwright it prints why and exits 0 (skip), unless
# REQUIRE_CONTAINER=1 (CI), where that is a failure. Podman quirks on this kind of machine (see
# shared ENVIRONMENT.md): --runtime runc (crun fails on this kernel's cgroups) and explicit ulimits
# (podman's defaults are refused).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

BASE_IMAGE=${BASE_IMAGE:-localhost/mha-base}
IMAGE=${IMAGE:-localhost/mha-app:test}
DEBIAN_SUITE=${DEBIAN_SUITE:-bookworm}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
PYTHON=${CONTAINER_TEST_PYTHON:-$ROOT/.venv/bin/python}  # not $PYTHON: `make PYTHON=...` exports that
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
ARTIFACTS=$ROOT/artifacts
PODMAN_FLAGS=(--runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
WEB=mha-container-test-$$-web
OFFLINE=mha-container-test-$$-offline
REDIS=mha-container-test-$$-redis
APP_A=mha-container-test-$$-app-a
APP_B=mha-container-test-$$-app-b
REDIS_IMAGE=${REDIS_IMAGE:-localhost/mha-redis:test}
T0=$EPOCHREALTIME

log() { echo "container-test: $*"; }
fail() { echo "container-test: FAIL: $*" >&2; exit 1; }
skip() {
  if [[ ${REQUIRE_CONTAINER:-0} == 1 ]]; then
    fail "$1 (REQUIRE_CONTAINER=1, so this is not a skip)"
  fi
  echo "container-test: SKIP: $1"
  exit 0
}
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

# podman without systemd logs an error for every container whose image has a HEALTHCHECK (it cannot
# create the timer); `podman healthcheck run` still works. Show podman's stderr only on failure.
quiet_podman() {
  local err rc=0
  err=$(mktemp)
  podman "$@" 2>"$err" || rc=$?
  if ((rc)); then grep -v 'systemd connection' "$err" >&2 || true; fi
  rm -f "$err"
  return "$rc"
}

# ---- can this machine run the test at all? ----
[[ $(uname -s) == Linux ]] || skip "not Linux"
command -v podman >/dev/null 2>&1 || skip "podman not found (apt-get install podman runc debootstrap)"
[[ $(id -u) == 0 ]] || skip "needs root (rootful podman with runc; debootstrap builds the base as root)"
command -v runc >/dev/null 2>&1 || skip "runc not found (apt-get install runc; crun fails on this kernel)"
command -v nsenter >/dev/null 2>&1 || skip "nsenter not found (util-linux)"
podman info >/dev/null 2>&1 || skip "podman is installed but does not work: $(podman info 2>&1 | tail -1)"
if ! podman image exists "$BASE_IMAGE" && ! command -v debootstrap >/dev/null 2>&1; then
  skip "no $BASE_IMAGE image and no debootstrap to build it (apt-get install debootstrap)"
fi
[[ -x $CHROMIUM ]] || skip "no Chromium at $CHROMIUM (apt-get install chromium)"
"$PYTHON" -c "import playwright.sync_api" 2>/dev/null || skip "Playwright missing from $PYTHON (make venv)"

mkdir -p "$ARTIFACTS"
ROOTFS=
cleanup() {
  # One name per call: podman 4.3's `rm --force A B` with B missing removed neither and still exited 0.
  local name
  for name in "$WEB" "$OFFLINE" "$APP_A" "$APP_B" "$REDIS"; do
    if podman container exists "$name"; then quiet_podman rm --force --time 0 "$name" >/dev/null || true; fi
  done
  if [[ -n $ROOTFS ]]; then rm -rf "$ROOTFS"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- 1. the base image ----
BASE_SECONDS=cached
if podman image exists "$BASE_IMAGE"; then
  log "base image $BASE_IMAGE exists: debootstrap skipped (podman rmi $BASE_IMAGE to rebuild it)"
else
  log "building base image $BASE_IMAGE with debootstrap ($DEBIAN_SUITE; about a minute)"
  t=$EPOCHREALTIME
  ROOTFS=$(mktemp -d /var/tmp/mha-base.XXXXXX)
  debootstrap --variant=minbase --include=python3,python3-venv,curl "$DEBIAN_SUITE" "$ROOTFS" \
      "$DEBIAN_MIRROR" >"$ARTIFACTS/debootstrap.log" 2>&1 \
    || { tail -n 20 "$ARTIFACTS/debootstrap.log" >&2; fail "debootstrap failed (artifacts/debootstrap.log)"; }
  # Downloaded .debs and package lists are ~100 MB the image does not need; the host's resolver
  # and hostname must not be baked in (podman provides both at run time).
  rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
  : >"$ROOTFS/etc/resolv.conf"
  : >"$ROOTFS/etc/hostname"
  tar -C "$ROOTFS" -c . | podman import --quiet \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'CMD ["/bin/bash"]' - "$BASE_IMAGE" >/dev/null
  rm -rf "$ROOTFS"
  ROOTFS=
  BASE_SECONDS=$(since "$t")
  log "base image built in ${BASE_SECONDS} s"
fi

# ---- 2. the image ----
# --format docker keeps HEALTHCHECK (the OCI format has no field for it). The host's CA bundle goes
# in as an optional build secret for pip behind a TLS-inspecting proxy; no layer stores it.
build_args=(--format docker "${PODMAN_FLAGS[@]}" --network host --build-arg "BASE_IMAGE=$BASE_IMAGE")
if [[ -s $CA_BUNDLE ]]; then build_args+=(--secret "id=ca_bundle,src=$CA_BUNDLE"); fi
log "building $IMAGE from ./Dockerfile (log: artifacts/container-build.log)"
t=$EPOCHREALTIME
podman build "${build_args[@]}" -t "$IMAGE" . >"$ARTIFACTS/container-build.log" 2>&1 \
  || { tail -n 30 "$ARTIFACTS/container-build.log" >&2; fail "podman build failed (artifacts/container-build.log)"; }
BUILD_SECONDS=$(since "$t")
SIZE_BYTES=$(podman image inspect --format '{{.Size}}' "$IMAGE")
SIZE_MB=$(awk -v b="$SIZE_BYTES" 'BEGIN { printf "%.0f", b / 1e6 }')
log "image built in ${BUILD_SECONDS} s; size ${SIZE_MB} MB ($SIZE_BYTES bytes)"
[[ $(podman image inspect --format '{{.Config.User}}' "$IMAGE") == streamlit ]] \
  || fail "the image's USER is not 'streamlit'"

# The live class's Redis (step 5): Debian's redis-server on the same base.
if ! podman image exists "$REDIS_IMAGE"; then
  log "building $REDIS_IMAGE (Debian's redis-server on $BASE_IMAGE)"
  podman build --format docker "${PODMAN_FLAGS[@]}" --network host --build-arg "BASE_IMAGE=$BASE_IMAGE" \
      -f tests/deploy/container/redis.Containerfile -t "$REDIS_IMAGE" tests/deploy/container >"$ARTIFACTS/redis-build.log" 2>&1 \
    || { tail -n 30 "$ARTIFACTS/redis-build.log" >&2; fail "building the Redis image failed"; }
fi
if [[ ${CONTAINER_TEST_BUILD_ONLY:-0} == 1 ]]; then
  log "images built (CONTAINER_TEST_BUILD_ONLY=1: no container run) in $(since "$T0") s"
  exit 0
fi

wait_healthy() {  # container, seconds: the image's own HEALTHCHECK, run from inside the container
  local deadline=$((SECONDS + $2))
  until quiet_podman healthcheck run "$1" >/dev/null; do
    if [[ $(podman inspect --format '{{.State.Running}}' "$1") != true ]]; then
      podman logs "$1" >&2 || true
      fail "container $1 exited before it was healthy"
    fi
    ((SECONDS < deadline)) || { podman logs "$1" >&2 || true; fail "$1 not healthy within $2 s"; }
    sleep 1
  done
}

not_root() {  # container: neither `podman exec id -u` nor the server process (PID 1) is root
  local exec_uid pid1_uid
  exec_uid=$(podman exec "$1" id -u)
  pid1_uid=$(podman exec "$1" awk '/^Uid:/ { print $2 }' /proc/1/status)
  log "$1: podman exec id -u = $exec_uid; server process (PID 1) uid = $pid1_uid"
  [[ $exec_uid != 0 && $pid1_uid != 0 ]] || fail "the container runs as root"
}

# ---- 3. as deployed: published port ----
t=$EPOCHREALTIME
# Publish on a loopback port podman picks (no race for a free port, nothing exposed on the LAN).
if quiet_podman run --detach --name "$WEB" "${PODMAN_FLAGS[@]}" -p 127.0.0.1::8501 "$IMAGE" >/dev/null; then
  URL=http://$(podman port "$WEB" 8501/tcp | head -n 1)
else
  # Fallback where podman's bridge network does not work: the host's network on a free port.
  log "publishing a port failed; falling back to --network host"
  quiet_podman rm --force --time 0 "$WEB" >/dev/null 2>&1 || true
  port=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  quiet_podman run --detach --name "$WEB" "${PODMAN_FLAGS[@]}" --network host \
      --health-cmd "/opt/venv/bin/python -c \"import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:$port/_stcore/health', timeout=4).read() != b'ok')\"" \
      "$IMAGE" --server.address=127.0.0.1 "--server.port=$port" >/dev/null
  URL=http://127.0.0.1:$port
fi
log "container $WEB serving at $URL"
wait_healthy "$WEB" 60
health=$("$PYTHON" -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' \
  "$URL/_stcore/health")
[[ $health == ok ]] || fail "$URL/_stcore/health answered '$health', not 'ok'"
log "$URL/_stcore/health = $health; image HEALTHCHECK: healthy (after $(since "$t") s)"
not_root "$WEB"
"$PYTHON" tests/deploy/container/browser_check.py "$URL" "$ARTIFACTS/container.png" \
  || { podman logs "$WEB" >&2 || true; fail "browser check against $URL"; }
log "page rendered in headless Chromium; screenshot: artifacts/container.png"
quiet_podman rm --force --time 0 "$WEB" >/dev/null

# ---- 4. offline, with every Python network call audited ----
quiet_podman run --detach --name "$OFFLINE" "${PODMAN_FLAGS[@]}" --network none \
    -v "$ROOT/tests/deploy/container/netaudit:/netaudit:ro" -e PYTHONPATH=/app:/netaudit "$IMAGE" >/dev/null
wait_healthy "$OFFLINE" 60
log "container $OFFLINE (--network none) healthy (checked from inside with the image's HEALTHCHECK)"
pid=$(podman inspect --format '{{.State.Pid}}' "$OFFLINE")
# The browser joins the container's network namespace, where only its loopback exists.
nsenter --net="/proc/$pid/ns/net" -- "$PYTHON" tests/deploy/container/browser_check.py \
    http://127.0.0.1:8501 "$ARTIFACTS/container-offline.png" \
  || { podman logs "$OFFLINE" >&2 || true; fail "browser check inside the offline container's network"; }
audit=$(podman logs "$OFFLINE" 2>&1)
grep -q '^NETAUDIT active pid=1$' <<<"$audit" || { echo "$audit" >&2; fail "the network audit hook did not load"; }
if grep '^NETAUDIT outbound' <<<"$audit" >&2; then
  fail "the app tried to reach the network at run time (lines above)"
fi
log "offline: page rendered; no outbound connection or name lookup by the server (audit hook active)"
# The pretrained model is inside the image and runs offline (issue 9): weights, tokenizer, a trace.
model=$(podman exec "$OFFLINE" /opt/venv/bin/python -c "from mha_core.pretrained import load_minilm
t = load_minilm().trace('the cat sat on the mat'); print('MODEL', len(t.tokens), len(t.attentions))" 2>&1) \
  || { echo "$model" >&2; fail "the pretrained model does not load in the offline container"; }
grep -q '^MODEL 8 6$' <<<"$model" || { echo "$model" >&2; fail "the model's trace is not 8 word pieces x 6 layers"; }
if grep '^NETAUDIT outbound' <<<"$model" >&2; then fail "loading the model tried to reach the network"; fi
log "offline: the pretrained model loads and traces a sentence (8 word pieces, 6 layers)"
# The course's languages (issue 17): the image compiled every committed catalogue at build time.
languages=$(podman exec "$OFFLINE" /opt/venv/bin/python -c "from course.i18n import LANGUAGES, catalogue_compiled, translator
print('LANGUAGES', all(catalogue_compiled(c) for c in LANGUAGES if c != 'en'), translator('de')('Attention'))" 2>&1) \
  || { echo "$languages" >&2; fail "the course's languages do not load in the container"; }
grep -q '^LANGUAGES True Aufmerksamkeit$' <<<"$languages" \
  || { echo "$languages" >&2; fail "a language's catalogue is not compiled in the image"; }
log "offline: every language's catalogue is compiled in the image (German: Attention = Aufmerksamkeit)"
# The tiny decoder's runs (issue 18): trained at build time, readable by the server's user, loaded offline.
pretrained=$(podman exec "$OFFLINE" /opt/venv/bin/python -c "from mha_core import checkpoints
from mha_core.train import load_history
runs = [load_history(checkpoints.cached_files(c)[0]) for c in checkpoints.PRETRAINED.values()]
print('PRETRAINED', len(runs), len(checkpoints.PRETRAINED), all(not h.stopped for _, h in runs))" 2>&1) \
  || { echo "$pretrained" >&2; fail "the pretrained runs do not load in the container"; }
grep -Eq '^PRETRAINED ([0-9]+) \1 True$' <<<"$pretrained" \
  || { echo "$pretrained" >&2; fail "a pretrained run is missing from the image"; }
if grep '^NETAUDIT outbound' <<<"$pretrained" >&2; then fail "loading the pretrained runs tried to reach the network"; fi
log "offline: every pretrained run of the Learn page loads as the server's user ($(grep '^PRETRAINED' <<<"$pretrained"))"
quiet_podman rm --force --time 0 "$OFFLINE" >/dev/null

# ---- 5. a live class: two app containers sharing one Redis container ----
t=$EPOCHREALTIME
free_port() { "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_url() {  # url, seconds: the server's health endpoint answers ok
  local deadline=$((SECONDS + $2))
  until [[ $("$PYTHON" -c 'import sys, urllib.request
try: print(urllib.request.urlopen(sys.argv[1], timeout=2).read().decode())
except Exception: print("")' "$1/_stcore/health") == ok ]]; do
    ((SECONDS < deadline)) || fail "$1 not healthy within $2 s"
    sleep 1
  done
}
# The host's network (loopback ports picked here): container-to-container names need a DNS plugin
# this podman may not have, and the two apps must reach one Redis.
redis_port=$(free_port); port_a=$(free_port); port_b=$(free_port)
TEACHER_KEY=$("$PYTHON" -c 'import secrets; print(secrets.token_urlsafe(18))')
quiet_podman run --detach --name "$REDIS" "${PODMAN_FLAGS[@]}" --network host "$REDIS_IMAGE" \
    redis-server --port "$redis_port" --bind 127.0.0.1 --appendonly yes --dir /data >/dev/null
for app in "$APP_A:$port_a" "$APP_B:$port_b"; do
  quiet_podman run --detach --name "${app%%:*}" "${PODMAN_FLAGS[@]}" --network host \
      -e "REDIS_URL=redis://127.0.0.1:$redis_port/0" -e "MHA_TEACHER_KEY=$TEACHER_KEY" "$IMAGE" \
      --server.address=127.0.0.1 "--server.port=${app##*:}" >/dev/null
done
wait_url "http://127.0.0.1:$port_a" 60
wait_url "http://127.0.0.1:$port_b" 60
log "Redis container on port $redis_port; app A on $port_a, app B on $port_b (REDIS_URL to the Redis container)"
MHA_TEACHER_KEY=$TEACHER_KEY "$PYTHON" tests/deploy/container/class_check.py "http://127.0.0.1:$port_a" "http://127.0.0.1:$port_b" "$REDIS" \
    "$ARTIFACTS" >"$ARTIFACTS/container-class.json" \
  || { podman logs "$APP_A" 2>&1 | tail -n 20 >&2; podman logs "$APP_B" 2>&1 | tail -n 20 >&2;
       fail "the live class across two app containers and Redis"; }
rooms=$(podman exec "$REDIS" redis-cli -p "$redis_port" ZCARD mha:rooms)
[[ $rooms == 1 ]] || fail "Redis holds $rooms rooms after the class, not 1"
log "live class: $(cat "$ARTIFACTS/container-class.json"); the room is in Redis ($(since "$t") s)"
for name in "$APP_A" "$APP_B" "$REDIS"; do quiet_podman rm --force --time 0 "$name" >/dev/null; done

TOTAL_SECONDS=$(since "$T0")
cat >"$ARTIFACTS/container-test.txt" <<REPORT
base_build_seconds=$BASE_SECONDS
image_build_seconds=$BUILD_SECONDS
image_size_bytes=$SIZE_BYTES
total_seconds=$TOTAL_SECONDS
REPORT
log "PASS in ${TOTAL_SECONDS} s (base: ${BASE_SECONDS}; image build: ${BUILD_SECONDS} s; image: ${SIZE_MB} MB)"
