#!/bin/sh
# Checks TouchWiki's web app (Sources/TouchWiki/Web): its types (`tsc --checkJs`, against the
# SDK's sources), its Markdown parser under `node --test` (Tests/web/markdown.test.mjs), then
# end to end (Tests/web/run_tests.py): builds `touchwiki-server` and `touchwiki` into the
# examples' shared build folder (../../.build-examples, or TOUCHWIKI_SCRATCH) and drives the
# app in headless Chromium against a real server on a free loopback port, beside the terminal
# client. Ends with `N passed, N failed`; exits non-zero on any failure.
# Needs tsc, node, chromium, chromium-driver and selenium: ../../Clients/js/scripts/install.sh;
# it installs aiosmtpd itself (../../scripts/install-test-tools.sh).
# `scripts/test-web.sh hostile` runs the browser tests whose name contains `hostile`.
set -u
cd "$(dirname "$0")/.."
scratch=${TOUCHWIKI_SCRATCH:-$(cd ../.. && pwd)/.build-examples}
passed=0
failed=0

echo "== tsc --checkJs (the web app)"
if tsc -p Tests/web/tsconfig.json; then passed=$((passed + 1)); echo "PASS tsc"; else failed=$((failed + 1)); echo "FAIL tsc"; fi

echo "== node --test (the Markdown parser)"
unit=$(mktemp /tmp/touchwiki-unit-XXXXXX)
node --test Tests/web/ > "$unit" 2>&1
unit_rc=$?
grep -E '^# (pass|fail)|^not ok' "$unit"
if [ "$unit_rc" -ne 0 ]; then grep -A30 '^not ok' "$unit" | head -60; fi
unit_pass=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$unit" | tail -1)
unit_fail=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$unit" | tail -1)
rm -f "$unit"
passed=$((passed + ${unit_pass:-0}))
failed=$((failed + ${unit_fail:-0}))
if [ "$unit_rc" -ne 0 ] && [ "${unit_fail:-0}" -eq 0 ]; then failed=$((failed + 1)); fi

echo "== test tools (the SMTP sink of the verification test)"
../../scripts/install-test-tools.sh

echo "== build touchwiki-server and touchwiki ($scratch)"
for product in touchwiki-server touchwiki; do
    if ! swift build --scratch-path "$scratch" --product "$product"; then
        echo "$passed passed, $((failed + 1)) failed"
        exit 1
    fi
done
bin=$(swift build --scratch-path "$scratch" --show-bin-path)

echo "== browser tests (headless Chromium, real touchwiki-server)"
log=$(mktemp /tmp/touchwiki-web-XXXXXX)
TOUCHWIKI_SERVER_BIN="$bin/touchwiki-server" TOUCHWIKI_BIN="$bin/touchwiki" python3 Tests/web/run_tests.py "$@" 2>&1 | tee "$log"
browser_pass=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$log" | tail -1)
browser_fail=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$log" | tail -1)
rm -f "$log"
passed=$((passed + ${browser_pass:-0}))
failed=$((failed + ${browser_fail:-1}))

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
