#!/usr/bin/env bash
# The reference LangGraph server for the HTTP parity test (tests/server/test_langgraph_parity.py):
# a separate virtual environment, .venv-langgraph/, with `langgraph-cli[inmem]` from PyPI (the
# `langgraph dev` server) and this package (its scripted test models), so the project's own
# .venv keeps its pinned LangGraph versions. Idempotent. Prints
# `export DEERFLOW_LANGGRAPH_DEV=<path of the langgraph executable>` when it is ready; the parity
# test fails (it does not skip) under CI when that is missing.
#
# Run it (do not source it): `bash .ci/langgraph-setup.sh`.
set -u

_lg_here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_lg_venv="$_lg_here/.venv-langgraph"
_lg_log() { echo "[langgraph-setup] $*"; }

if [[ -x "$_lg_venv/bin/langgraph" ]] && "$_lg_venv/bin/python" -c "import langgraph_api, deerflow_nb.testing" >/dev/null 2>&1; then
  _lg_log "langgraph-cli[inmem] already installed in $_lg_venv"
else
  _lg_py="${PYTHON:-python3}"
  if ! command -v uv >/dev/null 2>&1; then
    "$_lg_py" -m pip install --quiet uv || _lg_log "pip install uv failed"
  fi
  [[ -x "$_lg_venv/bin/python" ]] || uv venv --quiet --python "$_lg_py" "$_lg_venv"
  _lg_log "installing langgraph-cli[inmem] and deerflow-nb into $_lg_venv"
  if ! VIRTUAL_ENV="$_lg_venv" uv pip install --quiet "langgraph-cli[inmem]" -e "$_lg_here" >/tmp/langgraph-setup.log 2>&1; then
    tail -n 5 /tmp/langgraph-setup.log
    _lg_log "install failed (log: /tmp/langgraph-setup.log); the parity test will fail"
  fi
fi
if [[ -x "$_lg_venv/bin/langgraph" ]]; then
  _lg_log "ready: $("$_lg_venv/bin/python" -c 'import importlib.metadata as m; print("langgraph-api", m.version("langgraph-api"), "langgraph-cli", m.version("langgraph-cli"))' 2>/dev/null)"
  echo "export DEERFLOW_LANGGRAPH_DEV=$_lg_venv/bin/langgraph"
fi
exit 0
