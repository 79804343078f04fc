#!/usr/bin/env bash
# Install everything the test suite needs, start its services, run it.
#   ./scripts/test.sh              # the whole suite (what CI runs)
#   ./scripts/test.sh tests/agent  # extra arguments go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if ! command -v uv >/dev/null 2>&1; then
  "$PY" -m pip install --quiet uv
fi
[ -x .venv/bin/python ] || uv venv --quiet --python "$PY" .venv
export VIRTUAL_ENV="$PWD/.venv"
uv pip install --quiet --compile-bytecode -e ".[test,embedded]"

# Services the suite uses: each script is idempotent and says what it did. A line it prints as
# `export NAME=value` (e.g. DEERFLOW_TEST_POSTGRES_URL) is applied to the test environment.
for setup in .ci/sandbox-setup.sh .ci/server-setup.sh .ci/browser-setup.sh .ci/langgraph-setup.sh \
    .ci/js-setup.sh; do
  if [ -f "$setup" ]; then
    echo "== $setup"
    # to a file, not $(...): a daemon the script starts must not hold the pipe open
    log=$(mktemp)
    bash "$setup" >"$log" || echo "!! $setup failed; the tests that need it will say so"
    grep -v '^export ' "$log" || true
    eval "$(grep '^export [A-Za-z_][A-Za-z0-9_]*=' "$log" || true)"
    rm -f "$log"
  fi
done

echo "== ruff and mypy"
.venv/bin/ruff check deerflow_nb jupyter_ext tests benchmarks
.venv/bin/mypy

echo "== pytest"
set +e
.venv/bin/python -m pytest -p no:cacheprovider "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure"
  exit 1
fi
exit "$rc"
