#!/usr/bin/env bash
# The tests under a sanitizer, as postgres-nio's CI runs its own: the thread sanitizer by
# default (data races, and use of a task's state after it was freed), or the address sanitizer
# (`scripts/check-sanitizers.sh address`). A separate build folder (.build-<sanitizer>); the
# server processes the tests start are built with the same sanitizer. Too slow for every CI run
# (a build of its own and tests several times slower): `.ci/run` runs it with
# PSYNC_SANITIZERS=1, and each issue touching concurrency runs it before it is closed.
# Extra arguments go to `swift test` (e.g. `--filter FaultInjectionTests`).
# Known limit (Swift 6.3.1, Linux): Synchronization.Mutex locks with futex system calls that
# the thread sanitizer does not see, so it reports accesses to Mutex-guarded state as races
# (four threads adding 10,000 times each under a Mutex: "Swift access race" reported, and the
# sum right; under NSLock, no report). Read the reports for state not behind a Mutex.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizer=${1:-thread}
shift || true
scratch=".build-$sanitizer"
echo "== swift build --sanitize=$sanitizer ($scratch)"
swift build --build-tests --sanitize="$sanitizer" --scratch-path "$scratch"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1 second_deadlock_stack=1}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1 detect_leaks=0}"
echo "== swift test --sanitize=$sanitizer"
swift test --skip-build --sanitize="$sanitizer" --scratch-path "$scratch" "$@"
