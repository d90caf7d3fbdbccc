#!/usr/bin/env bash
# Every application under Examples/ is a package of its own on PartitionSync's public API:
# build it, run its tests (and its browser tests, scripts/test-web.sh, where it has a web app;
# they need Clients/js/scripts/install.sh), and start its server with the one command its README gives (the
# first `swift run` of its "Run it" block), on an embedded database in a temporary
# directory and a free port, until /ready answers; then stop it with SIGTERM.
# The examples share one build folder: each depends on this package, which is then compiled
# once for all of them, not once per example (scripts/build-examples.sh, which also checks that
# they build without a warning).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scratch="$root/.build-examples"

scripts/build-examples.sh
for example in Examples/*/; do
    name=$(basename "$example")
    echo "== example $name: swift test"
    (cd "$example" && swift test --scratch-path "$scratch")
    if [ -x "$example/scripts/test-web.sh" ]; then
        echo "== example $name: scripts/test-web.sh (its web app in headless Chromium)"
        COUCHCHAT_SCRATCH="$scratch" TOUCHWIKI_SCRATCH="$scratch" "$example/scripts/test-web.sh"
    fi

    command=$(awk '/^## Run it/{section=1} section && /^```sh/{block=1; next} block && /^```/{exit} block' "$example/README.md" \
        | sed -E 's/[[:space:]]+#.*$//' | grep -E '^swift run ' | head -1)
    [ -n "$command" ] || { echo "$example/README.md has no 'swift run' in its Run it block" >&2; exit 1; }
    # shellcheck disable=SC2086  # the README's command, split into its words
    scripts/serve-until-ready.sh "$example" "example $name" ${command/#swift run /swift run --scratch-path $scratch }
done
cd "$root"
