#!/usr/bin/env bash
# Services for the server-extension tests: configurable-http-proxy (JupyterHub) and a local
# PostgreSQL on 127.0.0.1. Idempotent; prints DEERFLOW_TEST_POSTGRES_URL=... for the caller:
#   eval "$(bash .ci/server-setup.sh | grep '^export ')"
set -euo pipefail

PG_USER=deerflow
PG_PASSWORD=deerflow
PG_DB=deerflow_test
PG_PORT=${DEERFLOW_PG_PORT:-5432}

if ! command -v configurable-http-proxy >/dev/null 2>&1; then
  npm install -g configurable-http-proxy >/dev/null 2>&1 || echo "WARN: configurable-http-proxy install failed" >&2
fi

if ! command -v pg_ctlcluster >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null 2>&1 || true
  apt-get install -y -qq postgresql >/dev/null 2>&1 || echo "WARN: postgresql install failed" >&2
fi

if command -v pg_lsclusters >/dev/null 2>&1; then
  read -r PG_VERSION PG_CLUSTER _ < <(pg_lsclusters --no-header | head -n1) || true
  if [ -z "${PG_VERSION:-}" ]; then
    PG_VERSION=$(ls /usr/lib/postgresql | sort -n | tail -n1)
    PG_CLUSTER=main
    pg_createcluster "$PG_VERSION" "$PG_CLUSTER" -p "$PG_PORT" >/dev/null
  fi
  if ! pg_lsclusters --no-header | awk '{print $4}' | grep -q online; then
    pg_ctlcluster "$PG_VERSION" "$PG_CLUSTER" start || echo "WARN: could not start PostgreSQL" >&2
  fi
  PG_PORT=$(pg_lsclusters --no-header | head -n1 | awk '{print $3}')
  for _ in $(seq 1 30); do
    su postgres -c "pg_isready -q -h 127.0.0.1 -p $PG_PORT" && break
    sleep 1
  done
  # admin commands over the Unix socket (peer auth); the tests connect over TCP with a password
  psql_admin() { su postgres -c "psql -q -X -p $PG_PORT -tA -c \"$1\""; }
  if [ "$(psql_admin "SELECT 1 FROM pg_roles WHERE rolname='$PG_USER'")" != "1" ]; then
    psql_admin "CREATE ROLE $PG_USER LOGIN PASSWORD '$PG_PASSWORD' CREATEDB"
  fi
  if [ "$(psql_admin "SELECT 1 FROM pg_database WHERE datname='$PG_DB'")" != "1" ]; then
    su postgres -c "createdb -p $PG_PORT -O $PG_USER $PG_DB"
  fi
  echo "export DEERFLOW_TEST_POSTGRES_URL=postgresql+asyncpg://$PG_USER:$PG_PASSWORD@127.0.0.1:$PG_PORT/$PG_DB"
else
  echo "WARN: PostgreSQL unavailable; Postgres tests will skip" >&2
fi
