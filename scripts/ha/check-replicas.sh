#!/usr/bin/env bash
# scripts/ha/check-replicas.sh [--keep]: the replica-reads check of issue 31 (docs/SCALING.md,
# "Reads from replicas"). A plain PostgreSQL, a streaming replica of it (pg_basebackup) and one
# `psync serve` ($PSYNC_BIN, default .build/debug/psync) reading snapshots and catch-ups from
# the replica, in a temporary folder; the replica lags (replay paused), stops, and is promoted
# while the server runs (scripts/ha/check_replicas.py says what is checked). Removes the folder
# unless the check failed or --keep.
exec "$(dirname "$0")/run-check.sh" check-replicas check_replicas.py "$@"
