#!/usr/bin/env bash
# The web console in a real browser: headless Chromium (Debian's `chromium` and
# `chromium-driver`, installed here when missing) driven by Selenium, against a real `psync
# serve` (the debug build: run `swift build` first) with real data. Screenshots of each view
# go to console-screenshots/ (docs/console/ keeps the ones README.md shows).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    echo "installing chromium and chromium-driver (Debian packages)"
    apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null
fi
venv=.build-console-venv
if [ ! -x "$venv/bin/python" ]; then python3 -m venv "$venv"; fi
"$venv/bin/pip" install -q --disable-pip-version-check 'selenium==4.27.1' 'websockets==13.1'
"$venv/bin/python" Tests/Console/console_test.py "${1:-console-screenshots}"
