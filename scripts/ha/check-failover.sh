#!/usr/bin/env bash
# scripts/ha/check-failover.sh [--sync | --async] [--long | --faults N] [--seed N] [--base-port N] [TRIAL OPTION...]
# The failover trial (scripts/ha/trial.py) as a check: three PostgreSQL nodes under Patroni and
# etcd, HAProxy, two `psync serve` instances, writers and subscribers, faults of the primary from
# a seeded schedule, then the checks (acknowledged = stored once, every upload answered, unread
# counts exact, subscribers converged, no trigger stuck, SIGTERM stops each instance) and, with
# asynchronous replication, the lost-tail scenario.
#
# Without --sync or --async it runs both, one after the other: first Patroni's synchronous_mode,
# then asynchronous replication. The short version (the default) has 3 faults per trial; --long
# has 20, 10 of them SIGKILLs of the primary's postmaster; --faults N any number (CI runs 1: a
# SIGKILL of the primary). Each trial prints its seed;
# pass it back with --seed to replay the same schedule. Other options go to trial.py as they are.
#
# The server is $PSYNC_BIN, else .build/release/psync, else .build/debug/psync. Tools come from
# scripts/install-ha-tools.sh. Each trial's folder (report, raw timings, every log) is removed
# after a pass and kept, and named, after a failure. Exit status: 0 when every trial passed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
modes=() faults=3 extra=()
while [ $# -gt 0 ]; do
    case $1 in
        --sync) modes+=(sync); shift ;;
        --async) modes+=(async); shift ;;
        --long) faults=20; shift ;;
        --faults) faults=$2; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) extra+=("$1"); shift ;;
    esac
done
[ ${#modes[@]} -gt 0 ] || modes=(sync async)

psync=${PSYNC_BIN:-}
if [ -z "$psync" ]; then
    for candidate in "$root/.build/release/psync" "$root/.build/debug/psync"; do
        if [ -x "$candidate" ]; then psync=$candidate; break; fi
    done
fi
if [ -z "$psync" ] || [ ! -x "$psync" ]; then
    echo "check-failover: no psync binary (set PSYNC_BIN, or swift build --product psync)" >&2
    exit 2
fi

bash "$root/scripts/install-ha-tools.sh" >/dev/null

status=0 results=()
for mode in "${modes[@]}"; do
    flags=(--psync "$psync" --faults "$faults")
    [ "$mode" = sync ] && flags+=(--sync)
    echo "== failover trial, $mode replication, $faults faults"
    rc=0
    "$root/.build-ha-venv/bin/python" "$here/trial.py" "${flags[@]}" "${extra[@]}" || rc=$?
    results+=("$mode: $([ "$rc" -eq 0 ] && echo ok || echo "FAILED (status $rc)")")
    [ "$rc" -eq 0 ] || status=1
done
echo "== check-failover"
printf '%s\n' "${results[@]}"
exit "$status"
