#!/usr/bin/env bash
# scripts/check-no-warnings.sh LOG: fails, listing them, if a build's output (LOG) holds compiler
# warnings about the project's own code (Sources, Tests, Examples); warnings about
# dependencies, under .build*/checkouts, are not ours to fix. CI builds from a clean clone, so
# every file is compiled and every warning shows.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
warnings=$(grep -E "^$root/(Sources|Tests|Examples/[^/]+/(Sources|Tests))/[^:]+:[0-9]+:[0-9]+: warning:" "$1" | sort -u || true)
if [ -n "$warnings" ]; then
    echo "$warnings" >&2
    echo "compiler warnings in the project's own code (above): fix them" >&2
    exit 1
fi
echo "no compiler warnings in the project's own code"
