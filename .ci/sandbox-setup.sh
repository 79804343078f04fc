#!/usr/bin/env bash
# Prepare the isolating sandbox providers for the test suite. Idempotent; never fails hard:
# whatever cannot be set up is reported, and the affected tests skip loudly with the reason.
#
#   1. apt-get install bubblewrap docker.io (only what is missing)
#   2. start dockerd in the background with --bridge=none --iptables=false when no engine
#      answers (its default bridge would take an address range that must not be used here)
#      and wait for it, bounded
#   3. build the sandbox image from local packages (scripts/build_sandbox_image.sh: Debian
#      packages plus the analysis stack's PyPI wheels; 1.5-3 min when its recipe changed)
#
# Run it (do not source it): `bash .ci/sandbox-setup.sh`. DOCKERD_WAIT_S bounds the wait (default 60).
set -u

_sb_here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_sb_log() { echo "[sandbox-setup] $*"; }

_sb_install() {
  local missing=()
  command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  if [[ ${#missing[@]} -eq 0 ]]; then
    _sb_log "bubblewrap and docker.io already installed"
    return 0
  fi
  if [[ $(id -u) -ne 0 ]]; then
    _sb_log "not root: cannot install ${missing[*]}; those providers' tests will skip"
    return 0
  fi
  _sb_log "installing ${missing[*]}"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } \
      >/tmp/sandbox-setup-apt.log 2>&1; then
    tail -n 5 /tmp/sandbox-setup-apt.log
    _sb_log "apt-get install ${missing[*]} failed (log: /tmp/sandbox-setup-apt.log)"
  fi
}

_sb_dockerd() {
  if docker info >/dev/null 2>&1; then
    _sb_log "a Docker engine is already running"
    return 0
  fi
  if ! command -v dockerd >/dev/null 2>&1; then
    _sb_log "dockerd not installed; docker sandbox tests will skip"
    return 1
  fi
  if [[ $(id -u) -ne 0 ]]; then
    _sb_log "not root: cannot start dockerd; docker sandbox tests will skip"
    return 1
  fi
  _sb_log "starting dockerd --bridge=none --iptables=false (log: /tmp/dockerd.log)"
  nohup dockerd --bridge=none --iptables=false --ip6tables=false >/tmp/dockerd.log 2>&1 &
  local waited=0 limit="${DOCKERD_WAIT_S:-60}"
  until docker info >/dev/null 2>&1; do
    if [[ $waited -ge $limit ]]; then
      tail -n 15 /tmp/dockerd.log
      _sb_log "dockerd did not answer within ${limit}s; docker sandbox tests will skip"
      return 1
    fi
    sleep 1
    waited=$((waited + 1))
  done
  _sb_log "dockerd answers after ${waited}s"
}

_sb_image() {
  if "$_sb_here/scripts/build_sandbox_image.sh"; then
    _sb_log "sandbox image ready"
  else
    _sb_log "building the sandbox image failed; docker sandbox tests will skip"
  fi
}

_sb_install
if command -v bwrap >/dev/null 2>&1; then
  _sb_log "bubblewrap: $(bwrap --version 2>&1)"
else
  _sb_log "bubblewrap missing; bubblewrap sandbox tests will skip"
fi
if _sb_dockerd; then
  _sb_image
fi
true
