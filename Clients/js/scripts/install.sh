#!/bin/sh
# Installs what the JavaScript SDK's checks need, idempotently: TypeScript (for
# `tsc --checkJs`, Debian's node-typescript), headless Chromium and its WebDriver (Debian's
# chromium and chromium-driver), and Selenium for Python (pinned) to drive them.
# The SDK itself needs nothing installed: it is plain ES modules.
set -eu

SELENIUM_VERSION=4.27.1

need=""
command -v tsc >/dev/null 2>&1 || need="$need node-typescript"
command -v chromium >/dev/null 2>&1 || need="$need chromium"
command -v chromedriver >/dev/null 2>&1 || need="$need chromium-driver"
if [ -n "$need" ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    # shellcheck disable=SC2086
    apt-get install -y --no-install-recommends $need
fi

if ! python3 -c "import selenium, sys; sys.exit(0 if selenium.__version__ == '$SELENIUM_VERSION' else 1)" 2>/dev/null; then
    python3 -m pip install --quiet "selenium==$SELENIUM_VERSION"
fi

tsc --version
chromium --version
chromedriver --version
python3 -c "import selenium; print('selenium', selenium.__version__)"
