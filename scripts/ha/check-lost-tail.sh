#!/usr/bin/env bash
# scripts/ha/check-lost-tail.sh [--keep]: the lost-tail check of issue 31 (docs/SCALING.md,
# "An asynchronous failover's lost tail"). A plain PostgreSQL and one `psync serve`
# ($PSYNC_BIN, default .build/debug/psync) in a temporary folder; acknowledged messages are
# lost by starting a copy of PostgreSQL's earlier files on a new timeline, as promoting an
# asynchronous standby does, while the server runs (scripts/ha/check_lost_tail.py says what is
# checked). Removes the folder unless the check failed or --keep.
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
dir=$(mktemp -d /tmp/psync-lost-tail-XXXXXX)
ok=0
cleanup() {
    if [ "$ok" -eq 1 ] && [ "$keep" -eq 0 ]; then rm -rf "$dir"; elif [ "$ok" -eq 1 ]; then echo "kept $dir"; else echo "check-lost-tail: FAILED; logs kept in $dir/logs" >&2; fi
}
trap cleanup EXIT
PSYNC_BCRYPT_COST=4 "$root/.build-ha-venv/bin/python" "$here/check_lost_tail.py" "$dir" --psync "$psync"
ok=1
