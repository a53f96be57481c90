#!/usr/bin/env bash
# .ci/docker-setup.sh -- make a working Docker engine and a local Python base
# image available (dev machines and CI; no container registry is reachable).
#
# Idempotent: every step checks whether its result already exists.
#   1. docker engine   : apt-get install docker.io debootstrap, start dockerd
#                        in the background (no systemd here), wait for it.
#   2. base image      : docker pull python:3.11-slim (fails fast offline) or
#                        debootstrap Debian bookworm (minbase + python3) and
#                        `docker import` it. The rootfs tarball is cached under
#                        $TRAILFORGE_DOCKER_CACHE_DIR, so a rerun only re-imports.
#   3. verify run      : run python3 in a locked-down container.
#   4. verify build    : `docker build` that pip-installs a package from PyPI
#                        into a venv inside the image (through the TLS proxy).
#
# Environment knobs:
#   TRAILFORGE_BASE_IMAGE      image tag            (trailforge/python-base:bookworm)
#   TRAILFORGE_DEBIAN_MIRROR   debootstrap mirror   (first URI of /etc/apt/sources*, else http://deb.debian.org/debian)
#   TRAILFORGE_DOCKER_CACHE_DIR       tarball cache        (/var/cache/trailforge)
#   TRAILFORGE_DOCKERD_FLAGS   extra dockerd flags; if unset, plain `dockerd` is
#                              tried first, then fallbacks (--iptables=false, vfs)
#   TRAILFORGE_BUILD_NETWORK   network for `docker build` (auto: default bridge,
#                              falls back to host)
#   TRAILFORGE_SKIP_BUILD_TEST=1  skip step 4
#   TRAILFORGE_REBUILD_BASE=1     rebuild the base image even if it exists
set -euo pipefail

IMAGE="${TRAILFORGE_BASE_IMAGE:-trailforge/python-base:bookworm}"
CACHE_DIR="${TRAILFORGE_DOCKER_CACHE_DIR:-/var/cache/trailforge}"
SUITE=bookworm
INCLUDE="python3,python3-venv,python3-pip,ca-certificates"
DOCKERD_LOG=/tmp/dockerd.log
CA_BUNDLE="${TRAILFORGE_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
# Bump this when the rootfs recipe below changes, to invalidate the cache.
RECIPE_VERSION=1

# Use the Debian docker.io client if present (matches the daemon's API);
# /usr/local/bin/docker may be a newer client without the buildx plugin.
if [[ -x /usr/bin/docker ]]; then DOCKER=/usr/bin/docker; else DOCKER=docker; fi
export DOCKER_BUILDKIT=0   # legacy builder: no buildx plugin / BuildKit needed

log() { printf '[docker-setup] %s\n' "$*" >&2; }
die() { printf '[docker-setup] ERROR: %s\n' "$*" >&2; exit 1; }

SCRIPT_T0=$(date +%s.%N)
SUMMARY=()
step_start() { STEP_NAME="$1"; STEP_T0=$(date +%s.%N); log "== $STEP_NAME"; }
step_end() {  # $1 = short result text
  local dt
  dt=$(awk -v a="$STEP_T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
  SUMMARY+=("$(printf '%-16s %7ss  %s' "$STEP_NAME" "$dt" "$1")")
  printf '[docker-setup] TIMING %-16s %7ss  %s\n' "$STEP_NAME" "$dt" "$1"
}

docker_ok() { timeout 20 "$DOCKER" info >/dev/null 2>&1; }

# ---------------------------------------------------------------- 1. engine
step_start install
if docker_ok; then
  step_end "skipped (docker info already works)"
else
  missing=()
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
  if ((${#missing[@]})); then
    [[ $(id -u) -eq 0 ]] || die "need root to apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/tmp/docker-setup-apt.log 2>&1 \
      || { tail -20 /tmp/docker-setup-apt.log >&2; die "apt-get update failed"; }
    apt-get install -y -qq -o Dpkg::Use-Pty=0 --no-install-recommends \
      docker.io debootstrap >>/tmp/docker-setup-apt.log 2>&1 \
      || { tail -20 /tmp/docker-setup-apt.log >&2; die "apt-get install failed"; }
    [[ -x /usr/bin/docker ]] && DOCKER=/usr/bin/docker
    step_end "installed ${missing[*]}"
  else
    step_end "skipped (dockerd and debootstrap present)"
  fi
fi

start_dockerd() {  # $@ = extra flags; returns 0 once `docker info` works
  if [[ -f /var/run/docker.pid ]] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
    rm -f /var/run/docker.pid   # stale pid file from a dead daemon
  fi
  log "starting: dockerd${*:+ $*} (log: $DOCKERD_LOG)"
  setsid nohup dockerd "$@" >"$DOCKERD_LOG" 2>&1 </dev/null &
  local pid=$! i
  for ((i = 0; i < 60; i++)); do
    if docker_ok; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      log "dockerd exited; last log lines:"; tail -5 "$DOCKERD_LOG" >&2
      return 1
    fi
    sleep 1
  done
  log "dockerd did not answer within 60s; last log lines:"; tail -5 "$DOCKERD_LOG" >&2
  kill "$pid" 2>/dev/null || true; sleep 2
  return 1
}

step_start daemon
if docker_ok; then
  step_end "skipped (already running)"
else
  if [[ -n "${TRAILFORGE_DOCKERD_FLAGS+x}" ]]; then
    # shellcheck disable=SC2206
    candidates=("${TRAILFORGE_DOCKERD_FLAGS}")
  else
    candidates=("" "--iptables=false" "--iptables=false --storage-driver=vfs")
  fi
  started=""
  for flags in "${candidates[@]}"; do
    # shellcheck disable=SC2086
    if start_dockerd $flags; then started="dockerd${flags:+ $flags}"; break; fi
  done
  [[ -n "$started" ]] || die "could not start dockerd (see $DOCKERD_LOG)"
  step_end "started: $started (pid $(cat /var/run/docker.pid 2>/dev/null || echo ?))"
fi

# ------------------------------------------------------------ 2. base image
pick_mirror() {
  if [[ -n "${TRAILFORGE_DEBIAN_MIRROR:-}" ]]; then echo "$TRAILFORGE_DEBIAN_MIRROR"; return; fi
  local m
  # deb822 (*.sources) "URIs:" lines, or one-line "deb URI suite ..." entries;
  # skip security / non-Debian repos.
  m=$( { grep -hsE '^[[:space:]]*URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}';
         grep -hsE '^[[:space:]]*deb[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
           | sed -E 's/\[[^]]*\]//' | awk '{print $2}'; } \
       | grep -E '/debian/?$' | grep -v security | head -n1 || true)
  echo "${m:-http://deb.debian.org/debian}"
}

image_exists() { "$DOCKER" image inspect "$IMAGE" >/dev/null 2>&1; }

IMPORT_CHANGES=(
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
  --change 'ENV LANG=C.UTF-8'
  --change 'ENV PYTHONDONTWRITEBYTECODE=1'
  --change 'CMD ["python3"]'
)

step_start base-image
old_id=$("$DOCKER" image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)
if image_exists && [[ "${TRAILFORGE_REBUILD_BASE:-0}" != 1 ]]; then
  step_end "skipped ($IMAGE exists)"
else
  how=""
  # 2a. registry pull (fails in ~0s here: no registry reachable)
  if timeout 60 "$DOCKER" pull -q python:3.11-slim >/tmp/docker-setup-pull.log 2>&1; then
    "$DOCKER" tag python:3.11-slim "$IMAGE"
    how="pulled python:3.11-slim"
  else
    log "docker pull failed: $(tail -1 /tmp/docker-setup-pull.log)"
    MIRROR=$(pick_mirror)
    key=$(printf '%s|%s|%s|%s|%s' "$SUITE" "$INCLUDE" "$MIRROR" "$RECIPE_VERSION" "$(uname -m)" | sha256sum | cut -c1-12)
    TARBALL="$CACHE_DIR/rootfs-$SUITE-python-$key.tar"
    mkdir -p "$CACHE_DIR"
    if [[ -s "$TARBALL" ]]; then
      log "using cached rootfs $TARBALL"
      how="cached rootfs"
    else
      command -v debootstrap >/dev/null 2>&1 || die "debootstrap missing (apt-get install debootstrap)"
      t0=$(date +%s)
      mkdir -p "$CACHE_DIR/debs"
      ROOT=$(mktemp -d "$CACHE_DIR/rootfs.XXXXXX")
      trap 'rm -rf "$ROOT"' EXIT
      log "debootstrap $SUITE from $MIRROR into $ROOT"
      debootstrap --variant=minbase --include="$INCLUDE" \
        --cache-dir="$CACHE_DIR/debs" "$SUITE" "$ROOT" "$MIRROR" \
        >/tmp/docker-setup-debootstrap.log 2>&1 \
        || { tail -20 /tmp/docker-setup-debootstrap.log >&2; die "debootstrap failed (log: /tmp/docker-setup-debootstrap.log)"; }
      # Slim down + container-friendly defaults (like the official debian image).
      rm -rf "$ROOT"/var/cache/apt/*.bin "$ROOT"/var/cache/apt/archives/*.deb \
             "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/log/* "$ROOT"/tmp/* \
             "$ROOT"/usr/share/doc/* "$ROOT"/usr/share/man/* "$ROOT"/usr/share/info/* \
             "$ROOT"/usr/share/locale/*
      find "$ROOT" -name __pycache__ -type d -prune -exec rm -rf {} +
      printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
        >"$ROOT"/etc/apt/apt.conf.d/90trailforge-no-recommends
      printf 'deb %s %s main\ndeb %s %s-updates main\n' "$MIRROR" "$SUITE" "$MIRROR" "$SUITE" \
        >"$ROOT"/etc/apt/sources.list
      : >"$ROOT"/etc/resolv.conf
      echo trailforge >"$ROOT"/etc/hostname
      tar --numeric-owner --xattrs -C "$ROOT" -cf "$TARBALL.tmp" .
      mv -f "$TARBALL.tmp" "$TARBALL"
      rm -rf "$ROOT"; trap - EXIT
      log "TIMING debootstrap $(( $(date +%s) - t0 ))s (mirror $MIRROR)"
      how="debootstrap from $MIRROR"
    fi
    t0=$(date +%s)
    "$DOCKER" import "${IMPORT_CHANGES[@]}" \
      --message "trailforge debootstrap $SUITE minbase + $INCLUDE" \
      "$TARBALL" "$IMAGE" >/dev/null
    log "TIMING import $(( $(date +%s) - t0 ))s"
  fi
  # drop the previous (now untagged) image on a forced rebuild
  if [[ -n "$old_id" && "$old_id" != "$("$DOCKER" image inspect -f '{{.Id}}' "$IMAGE")" ]]; then
    "$DOCKER" rmi "$old_id" >/dev/null 2>&1 || true
  fi
  step_end "$how -> $IMAGE ($("$DOCKER" image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
fi

# ------------------------------------------------------------ 3. verify run
step_start verify-run
ver=$("$DOCKER" run --rm --network none --read-only --tmpfs /tmp \
        --user 65534:65534 --cap-drop ALL --security-opt no-new-privileges \
        "$IMAGE" python3 -c "import sys; print(sys.version.split()[0])") \
  || die "locked-down 'docker run $IMAGE python3' failed"
step_end "python $ver"

# ---------------------------------------------------------- 4. verify build
# pip inside the build reaches PyPI the way the host does: same CA bundle
# (TLS-intercepting proxy), same proxy / index env vars if set.
if [[ "${TRAILFORGE_SKIP_BUILD_TEST:-0}" == 1 ]]; then
  SUMMARY+=("verify-build     skipped (TRAILFORGE_SKIP_BUILD_TEST=1)")
else
  step_start verify-build
  CTX=$(mktemp -d /tmp/trailforge-buildtest.XXXXXX)
  trap 'rm -rf "$CTX"' EXIT
  cp "$CA_BUNDLE" "$CTX/ca-bundle.crt"
  cat >"$CTX/Dockerfile" <<EOF
FROM $IMAGE
COPY ca-bundle.crt /etc/ssl/certs/trailforge-ca-bundle.crt
ENV PIP_CERT=/etc/ssl/certs/trailforge-ca-bundle.crt \\
    REQUESTS_CA_BUNDLE=/etc/ssl/certs/trailforge-ca-bundle.crt \\
    SSL_CERT_FILE=/etc/ssl/certs/trailforge-ca-bundle.crt \\
    PIP_DISABLE_PIP_VERSION_CHECK=1 \\
    PIP_NO_CACHE_DIR=1 \\
    PIP_DEFAULT_TIMEOUT=120
ARG HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy PIP_INDEX_URL
RUN python3 -m venv /opt/venv \\
 && /opt/venv/bin/pip install -q six \\
 && /opt/venv/bin/python -c "import six; print('six', six.__version__)"
EOF
  build_args=()
  for v in HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy PIP_INDEX_URL; do
    [[ -n "${!v:-}" ]] && build_args+=(--build-arg "$v=${!v}")
  done
  # Host-only settings (file:// indexes, /opt/wheels find-links, constraints)
  # are NOT passed: those paths do not exist inside the image.
  tag="trailforge/buildtest:tmp"
  try_build() {  # $1 = network mode ("" = default bridge)
    "$DOCKER" build -q --rm --force-rm ${1:+--network "$1"} "${build_args[@]}" \
      -t "$tag" "$CTX" >/tmp/docker-setup-build.log 2>&1
  }
  net="${TRAILFORGE_BUILD_NETWORK:-}"
  if try_build "$net"; then
    used="${net:-default bridge}"
  elif [[ -z "$net" ]] && { log "build on bridge network failed; retrying with --network host"; try_build host; }; then
    used="host"
  else
    tail -20 /tmp/docker-setup-build.log >&2
    die "test docker build failed (log: /tmp/docker-setup-build.log)"
  fi
  out=$("$DOCKER" run --rm --network none "$tag" /opt/venv/bin/python -c "import six; print(six.__version__)")
  "$DOCKER" rmi -f "$tag" >/dev/null 2>&1 || true
  rm -rf "$CTX"; trap - EXIT
  step_end "pip install six==$out ok (network: $used)"
fi

total=$(awk -v a="$SCRIPT_T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
log "summary (total ${total}s):"
for line in "${SUMMARY[@]}"; do log "  $line"; done
log "image: $IMAGE   daemon log: $DOCKERD_LOG"
