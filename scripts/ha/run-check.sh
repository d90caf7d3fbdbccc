#!/usr/bin/env bash
# scripts/ha/run-check.sh NAME SCRIPT [--keep]: runs one of the single-server HA checks
# (check-lost-tail.sh, check-replicas.sh) the same way: the HA tools installed
# (scripts/install-ha-tools.sh), `psync serve` from $PSYNC_BIN (default .build/debug/psync), the
# check's Python SCRIPT with a temporary folder, which is removed after a pass unless --keep and
# kept, and named, after a failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
name=$1 script=$2
shift 2
keep=0
psync=${PSYNC_BIN:-$root/.build/debug/psync}
while [ $# -gt 0 ]; do
    case $1 in
        --keep) keep=1; shift ;;
        *) echo "usage: scripts/ha/$name.sh [--keep]" >&2; exit 2 ;;
    esac
done
[ -x "$psync" ] || { echo "no psync at $psync (build it, or set PSYNC_BIN)" >&2; exit 1; }

bash "$root/scripts/install-ha-tools.sh" >/dev/null
dir=$(mktemp -d "/tmp/psync-$name-XXXXXX")
ok=0
cleanup() {
    if [ "$ok" -eq 1 ] && [ "$keep" -eq 0 ]; then rm -rf "$dir"; elif [ "$ok" -eq 1 ]; then echo "kept $dir"; else echo "$name: FAILED; logs kept in $dir/logs" >&2; fi
}
trap cleanup EXIT
PSYNC_BCRYPT_COST=4 "$root/.build-ha-venv/bin/python" "$here/$script" "$dir" --psync "$psync"
ok=1
