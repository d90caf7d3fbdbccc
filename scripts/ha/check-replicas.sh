#!/usr/bin/env bash
# scripts/ha/check-replicas.sh [--keep]: the replica-reads check of issue 31 (docs/SCALING.md,
# "Reads from replicas"). A plain PostgreSQL, a streaming replica of it (pg_basebackup) and one
# `psync serve` ($PSYNC_BIN, default .build/debug/psync) reading snapshots and catch-ups from
# the replica, in a temporary folder; the replica lags (replay paused), stops, and is promoted
# while the server runs (scripts/ha/check_replicas.py says what is checked). Removes the folder
# unless the check failed or --keep.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
keep=0
psync=${PSYNC_BIN:-$root/.build/debug/psync}
while [ $# -gt 0 ]; do
    case $1 in
        --keep) keep=1; shift ;;
        *) echo "usage: $0 [--keep]" >&2; exit 2 ;;
    esac
done
[ -x "$psync" ] || { echo "no psync at $psync (build it, or set PSYNC_BIN)" >&2; exit 1; }

bash "$root/scripts/install-ha-tools.sh" >/dev/null
dir=$(mktemp -d /tmp/psync-replicas-XXXXXX)
ok=0
cleanup() {
    if [ "$ok" -eq 1 ] && [ "$keep" -eq 0 ]; then rm -rf "$dir"; elif [ "$ok" -eq 1 ]; then echo "kept $dir"; else echo "check-replicas: FAILED; logs kept in $dir/logs" >&2; fi
}
trap cleanup EXIT
PSYNC_BCRYPT_COST=4 "$root/.build-ha-venv/bin/python" "$here/check_replicas.py" "$dir" --psync "$psync"
ok=1
