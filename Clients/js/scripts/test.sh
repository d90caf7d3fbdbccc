#!/bin/sh
# Runs every check of the JavaScript SDK: the types (tsc --checkJs, of the SDK and of the
# JavaScript blocks of docs/CLIENT.md), the pure logic and the client loop under `node --test`
# (no browser), then the browser tests in headless Chromium (docs/CLIENT.md's example among them)
# against a real `psync serve` (PSYNC_BIN, default the debug build, .build/debug/psync) started on a free
# loopback port. Ends with `N passed, N failed`; exits non-zero on any failure.
# Install what it needs first: scripts/install.sh
set -u
cd "$(dirname "$0")/.."
passed=0
failed=0

echo "== tsc --checkJs"
if tsc -p tsconfig.json; then passed=$((passed + 1)); echo "PASS tsc"; else failed=$((failed + 1)); echo "FAIL tsc"; fi

echo "== docs/CLIENT.md's JavaScript, taken out and type-checked (the browser tests run it)"
if node test/docs/extract.mjs && tsc -p test/docs/tsconfig.json; then
    passed=$((passed + 1)); echo "PASS tsc docs/CLIENT.md"
else
    failed=$((failed + 1)); echo "FAIL tsc docs/CLIENT.md"
fi

echo "== node --test"
node --test test/unit/ > /tmp/psync-js-unit.$$ 2>&1
unit_rc=$?
grep -E '^# (Subtest|pass|fail)|^not ok|PSYNC_SEED' /tmp/psync-js-unit.$$ | grep -v '^# Subtest' 
unit_pass=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' /tmp/psync-js-unit.$$ | tail -1)
unit_fail=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' /tmp/psync-js-unit.$$ | tail -1)
if [ "$unit_rc" -ne 0 ]; then grep -B2 -A30 '^not ok' /tmp/psync-js-unit.$$ | head -80; fi
rm -f /tmp/psync-js-unit.$$
passed=$((passed + ${unit_pass:-0}))
failed=$((failed + ${unit_fail:-0}))
if [ "$unit_rc" -ne 0 ] && [ "${unit_fail:-0}" -eq 0 ]; then failed=$((failed + 1)); fi

echo "== browser tests (headless Chromium, real psync serve at ${PSYNC_BIN:-.build/debug/psync})"
python3 test/browser/run_tests.py "$@" > /tmp/psync-js-browser.$$ 2>&1
browser_rc=$?
cat /tmp/psync-js-browser.$$
browser_pass=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' /tmp/psync-js-browser.$$ | tail -1)
browser_fail=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' /tmp/psync-js-browser.$$ | tail -1)
rm -f /tmp/psync-js-browser.$$
passed=$((passed + ${browser_pass:-0}))
failed=$((failed + ${browser_fail:-0}))
if [ "$browser_rc" -ne 0 ] && [ "${browser_fail:-0}" -eq 0 ]; then failed=$((failed + 1)); fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
