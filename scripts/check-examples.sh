#!/usr/bin/env bash
# Every application under Examples/ is a package of its own on PartitionSync's public API:
# build it, run its tests (and its browser tests, scripts/test-web.sh, where it has a web app;
# they need Clients/js/scripts/install.sh), and start its server with the one command its README gives (the
# first `swift run` of its "Run it" block), on an embedded database in a temporary
# directory and a free port, until /ready answers; then stop it with SIGTERM.
# The examples share one build folder: each depends on this package, which is then compiled
# once for all of them, not once per example.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scratch="$root/.build-examples"

for example in Examples/*/; do
    name=$(basename "$example")
    echo "== example $name: swift build --build-tests && swift test"
    (cd "$example" && swift build --build-tests --scratch-path "$scratch" && swift test --scratch-path "$scratch")
    if [ -x "$example/scripts/test-web.sh" ]; then
        echo "== example $name: scripts/test-web.sh (its web app in headless Chromium)"
        COUCHCHAT_SCRATCH="$scratch" TOUCHWIKI_SCRATCH="$scratch" "$example/scripts/test-web.sh"
    fi

    command=$(awk '/^## Run it/{section=1} section && /^```sh/{block=1; next} block && /^```/{exit} block' "$example/README.md" \
        | sed -E 's/[[:space:]]+#.*$//' | grep -E '^swift run ' | head -1)
    [ -n "$command" ] || { echo "$example/README.md has no 'swift run' in its Run it block" >&2; exit 1; }
    data=$(mktemp -d /tmp/psync-example-XXXXXX)
    chmod 755 "$data"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    echo "== example $name: $command (port $port, data in $data)"
    (cd "$example" && PSYNC_PORT=$port PSYNC_DATA_DIR=$data/postgres exec ${command/#swift run /swift run --scratch-path $scratch }) >"$data/server.log" 2>&1 &
    server=$!
    ready=0
    for _ in $(seq 1 600); do
        if curl -sf "http://127.0.0.1:$port/ready" >/dev/null; then ready=1; break; fi
        kill -0 "$server" 2>/dev/null || break
        sleep 0.2
    done
    kill -TERM "$server" 2>/dev/null || true
    wait "$server" || true
    if [ "$ready" -ne 1 ]; then
        echo "$name's server did not become ready:" >&2
        tail -40 "$data/server.log" >&2
        exit 1
    fi
    echo "example $name: its server started on the embedded database and stopped on SIGTERM"
    rm -rf "$data"
done
cd "$root"
