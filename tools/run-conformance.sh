#!/usr/bin/env bash
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
#
# Measure Berth's placement against the shared conformance material.
#
#   tools/run-conformance.sh [sqlite|mysql|postgresql] [runner options...]
#   tools/run-conformance.sh mysql --only traits resource-provider -v
#
# Starts four berth-placement-api servers on fresh databases of the chosen
# kind (legacy policy defaults; enforce_new_defaults=True; an open policy
# file; CORS), runs ../shared/conformance/placement/run against them, prints
# its summary and stops everything. A developer's tool, not part of CI; it
# never copies the conformance files into the repository.
#
# Environment:
#   CONFORMANCE_RUNNER   the runner (default: ../shared/conformance/placement/run)
#   BERTH_PLACEMENT_API  the server binary (default: .venv/bin/berth-placement-api)
#   CONFORMANCE_VENV     the runner's virtualenv (default /tmp/berth-conformance-venv)
#   CONFORMANCE_JSON     per-test results (default /tmp/berth-conformance-KIND.json)
#   KEEP=1               keep the work directory (configs, server logs)
set -euo pipefail

KIND=${1:-sqlite}
[ $# -gt 0 ] && shift
case "$KIND" in
  sqlite|mysql|postgresql) ;;
  *) echo "usage: $0 [sqlite|mysql|postgresql] [runner options...]" >&2
     exit 2 ;;
esac

ROOT=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
RUNNER=${CONFORMANCE_RUNNER:-$ROOT/../shared/conformance/placement/run}
[ -x "$RUNNER" ] || { echo "no conformance runner at $RUNNER" >&2; exit 2; }
API=${BERTH_PLACEMENT_API:-$ROOT/.venv/bin/berth-placement-api}
[ -x "$API" ] || API=$(command -v berth-placement-api) || {
  echo "berth-placement-api not found; set BERTH_PLACEMENT_API" >&2; exit 2; }
PYTHON=$(dirname "$API")/python
export CONFORMANCE_VENV=${CONFORMANCE_VENV:-/tmp/berth-conformance-venv}
JSON=${CONFORMANCE_JSON:-/tmp/berth-conformance-$KIND.json}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/berth-conformance.XXXXXX")
SUFFIX=$(basename "$WORK" | tr -dc 'a-zA-Z0-9' | tr 'A-Z' 'a-z')
MODES=(plain secure open cors)
PIDS=()
DATABASES=()

cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  local db
  for db in "${DATABASES[@]}"; do
    case "$KIND" in
      mysql) mysql -uroot -h127.0.0.1 -e "DROP DATABASE IF EXISTS $db" ;;
      postgresql) psql -q -h 127.0.0.1 -U postgres -c \
                    "DROP DATABASE IF EXISTS $db WITH (FORCE)" ;;
    esac
  done
  if [ "${KEEP:-0}" = 1 ]; then
    echo "work directory kept: $WORK"
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT

# create_database MODE: print the connection URL of a fresh database.
create_database() {
  local db="berth_conf_${SUFFIX}_$1"
  case "$KIND" in
    sqlite) echo "sqlite:///$WORK/$1.sqlite"; return ;;
    mysql)
      mysql -uroot -h127.0.0.1 -e "CREATE DATABASE $db CHARACTER SET utf8mb4"
      echo "mysql+pymysql://root@127.0.0.1/$db?charset=utf8mb4" ;;
    postgresql)
      psql -q -h 127.0.0.1 -U postgres -c "CREATE DATABASE $db"
      echo "postgresql+psycopg2://postgres@127.0.0.1/$db" ;;
  esac
}

# The open policy: every rule but admin_api allowed to anybody ('@').
"$PYTHON" - "$WORK/open-policy.yaml" <<'PY'
import sys
from services.placement import policies
with open(sys.argv[1], 'w') as f:
    for rule in policies.list_rules():
        if rule.name != 'admin_api':
            f.write('"%s": "@"\n' % rule.name)
PY

free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

declare -A URL
for mode in "${MODES[@]}"; do
  conf="$WORK/$mode.conf"
  url=$(create_database "$mode")
  # NOTE: create_database runs in a subshell; record its name here.
  [ "$KIND" = sqlite ] || DATABASES+=("berth_conf_${SUFFIX}_$mode")
  {
    printf '[api]\nauth_strategy = noauth2\n'
    printf '[placement_database]\nconnection = %s\nsync_on_startup = True\n' "$url"
    printf '[oslo_policy]\n'
    case "$mode" in
      secure) printf 'enforce_new_defaults = True\n' ;;
      open) printf 'enforce_new_defaults = False\npolicy_file = %s\n' \
                   "$WORK/open-policy.yaml" ;;
      *) printf 'enforce_new_defaults = False\n' ;;
    esac
    if [ "$mode" = cors ]; then
      printf '[cors]\nallowed_origin = http://valid.example.com\n'
      printf 'allow_headers = openstack-api-version\n'
    fi
  } > "$conf"
  port=$(free_port)
  "$API" --config-file "$conf" --port "$port" > "$WORK/$mode.log" 2>&1 &
  PIDS+=($!)
  URL[$mode]="http://127.0.0.1:$port"
done

for mode in "${MODES[@]}"; do
  deadline=$((SECONDS + 90))
  until curl -sf -o /dev/null "${URL[$mode]}/"; do
    if (( SECONDS >= deadline )); then
      echo "server '$mode' did not start; its log:" >&2
      tail -n 30 "$WORK/$mode.log" >&2
      exit 1
    fi
    sleep 0.5
  done
done
echo "servers ($KIND): plain ${URL[plain]} secure ${URL[secure]}" \
     "open ${URL[open]} cors ${URL[cors]}"

set +e
"$RUNNER" --url "${URL[plain]}" --url-secure "${URL[secure]}" \
  --url-open "${URL[open]}" --url-cors "${URL[cors]}" \
  --json "$JSON" "$@" | tee "$WORK/runner.out"
status=${PIPESTATUS[0]}
set -e
echo
echo "== summary ($KIND) =="
grep -E '^(files run:|NOT RUN)' "$WORK/runner.out" || true
echo "per-test results: $JSON"
exit "$status"
