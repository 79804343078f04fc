#!/usr/bin/env bash
# The JavaScript client for the JS parity test (tests/server/test_langgraph_js_parity.py): installs
# tests/server/parity/js/node_modules with `npm ci` (package.json pins @langchain/langgraph-sdk,
# package-lock.json its dependencies). Needs node 18+ (global fetch) and npm; installs Debian's nodejs
# and npm when they are missing. Idempotent. The test fails (it never skips) when node or the SDK
# is missing, so a failed install here shows up there.
#
# Run it (do not source it): `bash .ci/js-setup.sh`.
set -u

_js_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/server/parity/js"
_js_log() { echo "[js-setup] $*"; }

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  _js_log "installing nodejs and npm from Debian"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null 2>&1 || true
  apt-get install -y -qq nodejs npm >/dev/null 2>&1 || _js_log "nodejs/npm install failed; the JS parity test will fail"
fi
if ! command -v node >/dev/null 2>&1; then
  exit 0
fi
_js_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$_js_major" -lt 18 ]; then
  _js_log "node $(node --version) is older than 18 (no global fetch); the JS parity test will fail"
fi
_js_pinned=$(node -p 'require(process.argv[1]).dependencies["@langchain/langgraph-sdk"]' "$_js_dir/package.json")
_js_have=$(node -p 'require(process.argv[1]).version' "$_js_dir/node_modules/@langchain/langgraph-sdk/package.json" 2>/dev/null || true)
if [ "$_js_have" = "$_js_pinned" ]; then
  _js_log "@langchain/langgraph-sdk $_js_have already installed"
elif (cd "$_js_dir" && npm ci --no-audit --no-fund --loglevel=error >/tmp/js-setup.log 2>&1); then
  _js_log "installed @langchain/langgraph-sdk $_js_pinned with node $(node --version)"
else
  tail -n 5 /tmp/js-setup.log
  _js_log "npm ci failed (log: /tmp/js-setup.log); the JS parity test will fail"
fi
exit 0
