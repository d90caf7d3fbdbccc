#!/usr/bin/env bash
# scripts/ha/check-balancer.sh [--base-port N] [--keep]: the load-balancer check of issue 31.
# Starts a plain PostgreSQL, three `psync serve` instances ($PSYNC_BIN, default
# .build/debug/psync) and HAProxy in front of them (scripts/ha/balancer.py) in a temporary
# folder, then runs scripts/ha/check_balancer.py through HAProxy only: sessions spread over the
# instances, presence and revocation across instances, SIGKILL of an instance under a writer
# (every client resumes from its cursor and receives every message exactly once), a restart,
# a graceful stop (drain, SIGTERM, status 0) and SIGTERM of the rest (status 0). Prints the
# figures. Stops everything, also on failure, and removes the folder (kept on failure or with
# --keep, for its logs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
base_port=${PSYNC_LB_BASE_PORT:-27400} keep=0
psync=${PSYNC_BIN:-$root/.build/debug/psync}
while [ $# -gt 0 ]; do
    case $1 in
        --base-port) base_port=$2; shift 2 ;;
        --keep) keep=1; shift ;;
        *) echo "usage: $0 [--base-port N] [--keep]" >&2; exit 2 ;;
    esac
done
[ -x "$psync" ] || { echo "no psync at $psync (build it, or set PSYNC_BIN)" >&2; exit 1; }

bash "$root/scripts/install-ha-tools.sh" >/dev/null
dir=$(mktemp -d /tmp/psync-lb-check-XXXXXX)
ok=0
cleanup() {
    python3 "$here/balancer.py" stop "$dir" >/dev/null 2>&1 || true
    if [ "$ok" -eq 1 ] && [ "$keep" -eq 0 ]; then rm -rf "$dir"; elif [ "$ok" -eq 1 ]; then echo "kept $dir"; else echo "check-balancer: FAILED; logs kept in $dir/logs" >&2; fi
}
trap cleanup EXIT

started=$(date +%s.%N)
echo "== three instances of $psync behind HAProxy in $dir (base port $base_port)"
# A presence lease of 6 s (15 by default) keeps the wait for a killed instance's users short.
# Every client reaches the servers from HAProxy's address, which psync takes for the client's:
# the per-address registration limit would stop the check's 24 registrations at 10.
PSYNC_BCRYPT_COST=4 python3 "$here/balancer.py" start "$dir" --instances 3 --base-port "$base_port" --psync "$psync" \
    -- --presence-lease 6 --registrations-per-address 1000 >/dev/null
"$root/.build-ha-venv/bin/python" "$here/check_balancer.py" "$dir"
echo "check-balancer: $(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s including the start"
ok=1
