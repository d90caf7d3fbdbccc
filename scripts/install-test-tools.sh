#!/bin/sh
# Installs what the Swift tests start beside the server, idempotently and pinned: aiosmtpd,
# the SMTP server that receives the verification mail in the identity tests
# (scripts/smtp-sink.py). PostgreSQL's server binaries come from the machine (README.md).
set -eu

AIOSMTPD_VERSION=1.4.6

if ! python3 -c "import aiosmtpd, sys; sys.exit(0 if aiosmtpd.__version__ == '$AIOSMTPD_VERSION' else 1)" 2>/dev/null; then
    python3 -m pip install --quiet "aiosmtpd==$AIOSMTPD_VERSION"
fi
python3 -c "import aiosmtpd; print('aiosmtpd', aiosmtpd.__version__)"
