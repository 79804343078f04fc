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
uv pip install --quiet -e ".[test,embedded]"

# Services the suite uses: each script is idempotent and says what it did.
for setup in .ci/sandbox-setup.sh .ci/server-setup.sh .ci/browser-setup.sh .ci/embedded-setup.sh; do
  if [ -f "$setup" ]; then
    echo "== $setup"
    bash "$setup" || echo "!! $setup failed; the tests that need it will say so"
  fi
done
[ -f .ci/env ] && . .ci/env

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
