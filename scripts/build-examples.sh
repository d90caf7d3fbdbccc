#!/usr/bin/env bash
# Builds every application under Examples/ with its tests, in the examples' shared build folder
# (.build-examples: each depends on this package, which is then compiled once for all of them),
# and checks that none of it warns. scripts/check-examples.sh runs it first (a no-op once they
# are built); .ci/run also starts it early, at low priority, beside the root package's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scratch="$root/.build-examples"
for example in Examples/*/; do
    name=$(basename "$example")
    echo "== example $name: swift build --build-tests"
    build_log=$(mktemp)
    (cd "$example" && swift build --build-tests --scratch-path "$scratch") 2>&1 | tee "$build_log"
    scripts/check-no-warnings.sh "$build_log"
    rm -f "$build_log"
done
