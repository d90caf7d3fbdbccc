#!/usr/bin/env bash
# scripts/ha/check-lost-tail.sh [--keep]: the lost-tail check of issue 31 (docs/SCALING.md,
# "An asynchronous failover's lost tail"). A plain PostgreSQL and one `psync serve`
# ($PSYNC_BIN, default .build/debug/psync) in a temporary folder; acknowledged messages are
# lost by starting a copy of PostgreSQL's earlier files on a new timeline, as promoting an
# asynchronous standby does, while the server runs (scripts/ha/check_lost_tail.py says what is
# checked). Removes the folder unless the check failed or --keep.
exec "$(dirname "$0")/run-check.sh" check-lost-tail check_lost_tail.py "$@"
