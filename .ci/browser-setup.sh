#!/usr/bin/env bash
# Prepare the browser tests (tests/browser, marker `browser`). Idempotent; never fails hard:
# whatever cannot be set up is reported, and the browser tests skip loudly with the reason.
#
#   1. apt-get install chromium (Debian's build; Playwright never downloads a browser here)
#   2. pip install playwright and jupyterlab into the test interpreter (no `playwright install`)
#
# Run it (do not source it): `bash .ci/browser-setup.sh`. PYTHON selects the interpreter
# (default: .venv/bin/python when present, else python3).
set -u

_br_here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_br_log() { echo "[browser-setup] $*"; }

if [[ -x /usr/bin/chromium ]]; then
  _br_log "chromium already installed: $(/usr/bin/chromium --version 2>/dev/null | head -1)"
elif [[ $(id -u) -ne 0 ]]; then
  _br_log "not root: cannot install chromium; the browser tests will skip"
elif ! command -v apt-get >/dev/null 2>&1; then
  _br_log "no apt-get: cannot install chromium; the browser tests will skip"
else
  _br_log "installing chromium with apt-get"
  if { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/tmp/browser-setup-apt.log 2>&1; then
    _br_log "installed: $(/usr/bin/chromium --version 2>/dev/null | head -1)"
  else
    _br_log "apt-get install chromium failed (see /tmp/browser-setup-apt.log); the browser tests will skip"
  fi
fi

_br_python="${PYTHON:-}"
if [[ -z "$_br_python" ]]; then
  if [[ -x "$_br_here/.venv/bin/python" ]]; then _br_python="$_br_here/.venv/bin/python"; else _br_python=python3; fi
fi
if "$_br_python" -c "import playwright.sync_api, jupyterlab" >/dev/null 2>&1; then
  _br_log "playwright and jupyterlab already importable from $_br_python"
else
  _br_log "installing playwright and jupyterlab for $_br_python (the browser is Debian's, not downloaded)"
  if command -v uv >/dev/null 2>&1 && [[ "$_br_python" == "$_br_here/.venv/bin/python" ]]; then
    VIRTUAL_ENV="$_br_here/.venv" uv pip install -q playwright jupyterlab || _br_log "uv pip install failed"
  else
    "$_br_python" -m pip install -q playwright jupyterlab || _br_log "pip install failed"
  fi
fi
"$_br_python" -c "import playwright.sync_api, jupyterlab; print('[browser-setup] ready: playwright and jupyterlab', jupyterlab.__version__)" \
  || _br_log "playwright or jupyterlab missing; the browser tests will skip"
exit 0
