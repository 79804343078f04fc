#!/usr/bin/env bash
# Build the deerflow-nb sandbox image from local packages only; nothing is pulled.
#
#   scripts/build_sandbox_image.sh [--force] [--tag NAME]
#
# 1. debootstrap makes a minimal Debian bookworm root (bash, coreutils, util-linux,
#    procps, python3) from the Debian mirror apt already uses (DEBIAN_MIRROR overrides).
#    The tarball is cached in $DEERFLOW_SANDBOX_CACHE (default /var/cache/deerflow-nb).
# 2. docker/sandbox/Dockerfile (FROM scratch + ADD rootfs.tar) turns it into an image.
#
# The image is labelled with a hash of this script and the Dockerfile; when an image
# with the same recipe exists the build is skipped (--force rebuilds).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tag="${DEERFLOW_SANDBOX_IMAGE:-deerflow-nb-sandbox:latest}"
force=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --force) force=1 ;;
    --tag) tag="$2"; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "build_sandbox_image: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

log() { echo "[build_sandbox_image] $*"; }

command -v docker >/dev/null || { log "docker CLI not found"; exit 1; }
docker info >/dev/null 2>&1 || { log "no Docker engine answers (is dockerd running?)"; exit 1; }

recipe="$(cat "$0" "$here/docker/sandbox/Dockerfile" | sha256sum | cut -c1-16)"
if [[ $force -eq 0 ]]; then
  have="$(docker image inspect -f '{{ index .Config.Labels "org.deerflow-nb.recipe" }}' "$tag" 2>/dev/null || true)"
  if [[ "$have" == "$recipe" ]]; then
    log "image $tag is up to date (recipe $recipe); nothing to do"
    exit 0
  fi
fi

cache="${DEERFLOW_SANDBOX_CACHE:-/var/cache/deerflow-nb}"
mkdir -p "$cache"
rootfs_tar="$cache/rootfs-bookworm-$recipe.tar"

mirror="${DEBIAN_MIRROR:-}"
if [[ -z "$mirror" ]]; then
  # The first "URIs:" of a deb822 source, else the first "deb" line: the mirror apt uses.
  mirror="$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | head -n1 | awk '{print $2}' || true)"
  [[ -n "$mirror" ]] || mirror="$(grep -hs '^deb ' /etc/apt/sources.list | head -n1 | awk '{print $2}' || true)"
  [[ -n "$mirror" ]] || mirror="http://deb.debian.org/debian"
fi

if [[ ! -s "$rootfs_tar" ]]; then
  if ! command -v debootstrap >/dev/null; then
    log "installing debootstrap (Debian package)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  fi
  work="$(mktemp -d "$cache/rootfs.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  log "debootstrap bookworm from $mirror (about a minute)"
  debootstrap --variant=minbase --include=python3,procps bookworm "$work/root" "$mirror" \
    >"$work/debootstrap.log" 2>&1 || { tail -n 20 "$work/debootstrap.log"; log "debootstrap failed"; exit 1; }
  # Trim what a sandbox never needs; keeps the image around 150 MB.
  rm -rf "$work/root"/var/cache/apt/* "$work/root"/var/lib/apt/lists/* \
    "$work/root"/usr/share/doc/* "$work/root"/usr/share/man/* "$work/root"/usr/share/info/* \
    "$work/root"/var/log/* "$work/root"/debootstrap
  find "$work/root/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name 'C*' -exec rm -rf {} + 2>/dev/null || true
  mkdir -p "$work/root/mnt/user-data/workspace" "$work/root/mnt/user-data/uploads" \
    "$work/root/mnt/user-data/outputs" "$work/root/mnt/skills"
  echo "sandbox:x:1000:1000:deerflow-nb sandbox:/tmp:/bin/bash" >>"$work/root/etc/passwd"
  echo "sandbox:x:1000:" >>"$work/root/etc/group"
  tar -C "$work/root" --numeric-owner -cf "$rootfs_tar.part" .
  mv "$rootfs_tar.part" "$rootfs_tar"
  rm -rf "$work"
  trap - EXIT
  log "rootfs cached at $rootfs_tar ($(du -h "$rootfs_tar" | cut -f1))"
else
  log "using cached rootfs $rootfs_tar"
fi

ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
cp "$here/docker/sandbox/Dockerfile" "$ctx/Dockerfile"
# A hard link keeps the context cheap when the cache is on the same filesystem.
ln "$rootfs_tar" "$ctx/rootfs.tar" 2>/dev/null || cp "$rootfs_tar" "$ctx/rootfs.tar"
log "docker build -t $tag (recipe $recipe)"
# The classic builder needs no BuildKit plugin and never contacts a registry for FROM scratch.
DOCKER_BUILDKIT=0 docker build -q --build-arg "RECIPE=$recipe" -t "$tag" "$ctx" >/dev/null
log "built $tag ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}'))"
