#!/usr/bin/env bash
# Checks that docs/openapi.yaml describes what the server really does: validates the document,
# then runs schemathesis against a real server (embedded PostgreSQL in a temporary directory)
# with a fixed seed. Needs the debug build (`swift build`) and PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install -q --disable-pip-version-check 'schemathesis==4.32.5' 'openapi-spec-validator==0.9.0' 2>/dev/null \
  || python3 -m pip install -q --disable-pip-version-check schemathesis openapi-spec-validator
python3 - <<'PY'
import yaml
from openapi_spec_validator import validate
validate(yaml.safe_load(open("docs/openapi.yaml")))
print("openapi.yaml: valid OpenAPI 3.1")
PY

work=$(mktemp -d /tmp/psync-openapi-XXXXXX)
chmod 755 "$work"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
PSYNC_BCRYPT_COST=4 LOG_LEVEL=error .build/debug/psync serve --port "$port" --data-dir "$work/pg" > "$work/server.log" 2>&1 &
server=$!
cleanup() { kill -INT "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

for _ in $(seq 1 150); do curl -sf "http://127.0.0.1:$port/ready" >/dev/null && break; sleep 0.2; done
token=$(curl -sf -X POST "http://127.0.0.1:$port/v1/auth/register" -d '{"email":"openapi@example.com","password":"correct horse"}' \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["accessToken"])')
schemathesis --config-file scripts/schemathesis.toml run docs/openapi.yaml --url "http://127.0.0.1:$port" -H "Authorization: Bearer $token" \
  --max-examples 25 --seed 20261122 --no-color
