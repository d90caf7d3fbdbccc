#!/usr/bin/env bash
# scripts/serve-until-ready.sh DIR NAME COMMAND...: starts a server command (a `swift run` of
# an application's server) in DIR on a free port and an embedded database in a new temporary
# folder, waits (at most two minutes) until /ready answers, then stops it with SIGTERM and
# requires a clean exit. Shared by scripts/check-examples.sh and scripts/check-apps-guide.sh.
set -euo pipefail
dir=$1 name=$2
shift 2
data=$(mktemp -d /tmp/psync-serve-XXXXXX)
chmod 755 "$data"   # the embedded cluster runs as the postgres user when this runs as root
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
echo "== $name: $* (port $port, data in $data)"
(cd "$dir" && PSYNC_PORT=$port PSYNC_DATA_DIR=$data/postgres exec "$@") >"$data/server.log" 2>&1 &
server=$!
ready=0
for _ in $(seq 1 600); do
    if curl -sf "http://127.0.0.1:$port/ready" >/dev/null; then ready=1; break; fi
    kill -0 "$server" 2>/dev/null || break
    sleep 0.2
done
kill -TERM "$server" 2>/dev/null || true
status=0
wait "$server" || status=$?
if [ "$ready" -ne 1 ] || [ "$status" -ne 0 ]; then
    [ "$ready" -ne 1 ] && echo "$name's server did not become ready:" >&2 || echo "$name's server exited $status on SIGTERM:" >&2
    tail -40 "$data/server.log" >&2
    exit 1
fi
echo "$name: its server started on an embedded database and stopped on SIGTERM"
rm -rf "$data"
