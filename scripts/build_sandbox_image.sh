#!/usr/bin/env bash
# Build the deerflow-nb sandbox image from local packages only; nothing is pulled.
#
#   scripts/build_sandbox_image.sh [--force] [--tag NAME]
#
# 1. debootstrap makes a minimal Debian bookworm root (bash, coreutils, util-linux,
#    procps, python3) from the Debian mirror apt already uses (DEBIAN_MIRROR overrides).
# 2. pip (the host's, with its configured index) installs the analysis stack below as
#    binary wheels built for the root's Python and glibc into /usr/local/lib/python3.X/
#    dist-packages; tests/ folders are dropped and everything is byte-compiled. The root
#    is cached as a tarball in $DEERFLOW_SANDBOX_CACHE (default /var/cache/deerflow-nb).
# 3. docker/sandbox/Dockerfile (FROM scratch + ADD rootfs.tar) turns it into an image.
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
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "build_sandbox_image: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

log() { echo "[build_sandbox_image] $*"; }

# What the agent's computation path imports. Exact pins: the recipe hash covers this list,
# so changing it rebuilds the image; their dependencies resolve at build time.
ANALYSIS_PACKAGES=(
  numpy==2.4.6
  pandas==3.1.1
  scipy==1.17.1
  scikit-learn==1.9.1
  matplotlib==3.11.2
  openpyxl==3.1.5
  tabulate==0.10.0
  pyarrow==26.0.1
)

# A pip that runs on the host (any Python: the wheels are chosen for the image's).
host_pip() {
  local py
  for py in python3 /usr/bin/python3; do
    if command -v "$py" >/dev/null && "$py" -m pip --version >/dev/null 2>&1; then
      "$py" -m pip "$@"
      return
    fi
  done
  log "no pip on the host: installing python3-pip (Debian package)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-pip >/dev/null
  /usr/bin/python3 -m pip "$@"
}

# Install ANALYSIS_PACKAGES into the root file system $1 as wheels for its own Python.
install_analysis_stack() {
  local root="$1" pyver glibc arch site minor
  read -r pyver glibc < <(chroot "$root" /usr/bin/python3 -c \
    'import os, sys; print("%d.%d" % sys.version_info[:2], os.confstr("CS_GNU_LIBC_VERSION").split()[1])') || true
  [[ -n "${glibc:-}" ]] || { log "cannot run the root's python3 (chroot)"; return 1; }
  arch="$(uname -m)"
  site="/usr/local/lib/python$pyver/dist-packages"
  # Every manylinux tag the root's glibc accepts (manylinux_2_17 = manylinux2014).
  local platforms=(--platform "manylinux2014_$arch")
  for ((minor = ${glibc#*.}; minor >= 17; minor--)); do
    platforms+=(--platform "manylinux_2_${minor}_$arch")
  done
  log "pip: ${ANALYSIS_PACKAGES[*]} (cp${pyver/./}, glibc $glibc, $arch)"
  PIP_DISABLE_PIP_VERSION_CHECK=1 host_pip install --quiet --target "$root$site" --no-compile \
    --only-binary=:all: --implementation cp --python-version "$pyver" --abi "cp${pyver/./}" \
    "${platforms[@]}" "${ANALYSIS_PACKAGES[@]}" >"$work/pip.log" 2>&1 \
    || { tail -n 20 "$work/pip.log"; log "pip install of the analysis stack failed"; return 1; }
  # Console scripts point at the host's Python; tests, headers and Cython sources are never
  # used, nor are pyarrow's network parts (Flight RPC, S3: the sandbox has no network; pyarrow
  # reports them as not built).
  rm -rf "$root$site/bin"
  find "$root$site" -depth -type d -name tests -exec rm -rf {} +
  rm -rf "$root$site/pyarrow/include" "$root$site/pyarrow/src"
  rm -f "$root$site"/pyarrow/{libarrow_flight,libarrow_python_flight,libarrow_s3}.so* \
    "$root$site"/pyarrow/{_flight,_s3fs,_pyarrow_cpp_tests}.cpython-*.so
  find "$root$site" \( -name '*.pyx' -o -name '*.pxd' -o -name '*.pxi' -o -name '*.h' \
    -o -name '*.hpp' -o -name '*.cpp' \) -type f -delete
  # The sandbox's root is read-only: ship the bytecode, or every import compiles again.
  chroot "$root" /usr/bin/python3 -m compileall -q "$site" >"$work/compileall.log" 2>&1 \
    || { tail -n 5 "$work/compileall.log"; log "warning: some modules were not byte-compiled"; }
  env -i PATH=/usr/bin:/bin HOME=/tmp MPLCONFIGDIR=/tmp/mpl PYTHONDONTWRITEBYTECODE=1 \
    "$(command -v chroot)" "$root" /usr/bin/python3 -c 'import numpy, pandas, scipy, sklearn, matplotlib, openpyxl, pyarrow, tabulate' \
    || { log "the analysis stack does not import in the image's Python"; return 1; }
  rm -rf "$root/tmp/mpl"
}

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
  log "debootstrap bookworm from $mirror (about a minute), then the analysis stack"
  debootstrap --variant=minbase --include=python3,procps bookworm "$work/root" "$mirror" \
    >"$work/debootstrap.log" 2>&1 || { tail -n 20 "$work/debootstrap.log"; log "debootstrap failed"; exit 1; }
  install_analysis_stack "$work/root" || exit 1
  # Trim what a sandbox never needs.
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
  # Tarballs of earlier recipes are never used again (about 600 MB each).
  find "$cache" -maxdepth 1 -name 'rootfs-bookworm-*.tar' ! -name "${rootfs_tar##*/}" -delete
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
previous="$(docker image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)"
# The classic builder needs no BuildKit plugin and never contacts a registry for FROM scratch.
DOCKER_BUILDKIT=0 docker build -q --build-arg "RECIPE=$recipe" -t "$tag" "$ctx" >/dev/null
if [[ -n "$previous" && "$previous" != "$(docker image inspect -f '{{.Id}}' "$tag")" ]]; then
  # The image this tag named before, unless another tag or a container still uses it.
  docker rmi "$previous" >/dev/null 2>&1 || true
fi
log "built $tag ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}'))"
