#!/bin/sh
# Checks CouchChat's web app (Sources/CouchChat/Web): its types (`tsc --checkJs`, against the
# SDK's sources), then end to end (Tests/web): builds `couchchat-server` and `couchchat` into
# the examples' shared build folder (../../.build-examples, or COUCHCHAT_SCRATCH) and drives
# the app in headless Chromium against a real server on a free loopback port, beside the
# terminal client. Ends with `N passed, N failed`; exits non-zero on any failure.
# Needs tsc, chromium, chromium-driver and selenium: ../../Clients/js/scripts/install.sh; it
# installs aiosmtpd itself (../../scripts/install-test-tools.sh).
# `scripts/test-web.sh photos` runs the browser tests whose name contains `photos`.
set -u
cd "$(dirname "$0")/.."
scratch=${COUCHCHAT_SCRATCH:-$(cd ../.. && pwd)/.build-examples}
passed=0
failed=0

echo "== tsc --checkJs (the web app)"
if tsc -p Tests/web/tsconfig.json; then passed=$((passed + 1)); echo "PASS tsc"; else failed=$((failed + 1)); echo "FAIL tsc"; fi

echo "== test tools (the SMTP sink of the verification test)"
../../scripts/install-test-tools.sh

echo "== build couchchat-server and couchchat ($scratch)"
for product in couchchat-server couchchat; do
    if ! swift build --scratch-path "$scratch" --product "$product"; then
        echo "$passed passed, $((failed + 1)) failed"
        exit 1
    fi
done
bin=$(swift build --scratch-path "$scratch" --show-bin-path)

echo "== browser tests (headless Chromium, real couchchat-server)"
log=$(mktemp /tmp/couchchat-web-XXXXXX)
COUCHCHAT_SERVER_BIN="$bin/couchchat-server" COUCHCHAT_BIN="$bin/couchchat" python3 Tests/web/run_tests.py "$@" 2>&1 | tee "$log"
browser_pass=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$log" | tail -1)
browser_fail=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$log" | tail -1)
rm -f "$log"
passed=$((passed + ${browser_pass:-0}))
failed=$((failed + ${browser_fail:-1}))

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
