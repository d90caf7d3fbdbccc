#!/usr/bin/env bash
# The tests under a sanitizer, as postgres-nio's CI runs its own: the thread sanitizer by
# default (data races, and use of a task's state after it was freed), or the address sanitizer
# (`scripts/check-sanitizers.sh address`). A separate build folder (.build-<sanitizer>); the
# server processes the tests start are built with the same sanitizer. Too slow for every CI run
# (a build of its own and tests several times slower): `.ci/run` runs it with
# PSYNC_SANITIZERS=1, and each issue touching concurrency runs it before it is closed.
# Extra arguments go to `swift test` (e.g. `--filter FaultInjectionTests`).
# The thread sanitizer does not see Synchronization.Mutex's futex calls (Swift 6.3.1, Linux) and
# would report every access to Mutex-guarded state as a race; its build is compiled with
# -DPSYNC_TSAN, under which the project's one lock type (`Locked`, Sources/Locking) is an NSLock
# the sanitizer understands. A report is a real race, or a lock that is not `Locked`.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizer=${1:-thread}
shift || true
scratch=".build-$sanitizer"
echo "== swift build --sanitize=$sanitizer ($scratch)"
flags=()
if [ "$sanitizer" = thread ]; then flags=(-Xswiftc -DPSYNC_TSAN); fi
swift build --build-tests --sanitize="$sanitizer" --scratch-path "$scratch" "${flags[@]}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1 second_deadlock_stack=1}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1 detect_leaks=0}"
echo "== swift test --sanitize=$sanitizer"
swift test --skip-build --sanitize="$sanitizer" --scratch-path "$scratch" "${flags[@]}" "$@"
