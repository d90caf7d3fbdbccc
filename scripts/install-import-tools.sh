#!/usr/bin/env bash
# The Python tools of `psync import`'s tests: PyMongo (its `bson` package), pinned, in a
# virtual environment at .build-import-venv/. Then:
#   .build-import-venv/bin/python scripts/generate_rchat_export.py --seed 42 --out /tmp/rchat-export
#   .build-import-venv/bin/python scripts/generate_import_vectors.py
# Neither is needed to run the tests: their outputs are committed under
# Tests/SyncImportTests/Fixtures/.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.build-import-venv
if [ ! -x "$venv/bin/python" ]; then python3 -m venv "$venv"; fi
"$venv/bin/pip" install -q --disable-pip-version-check 'pymongo==4.20.1'
"$venv/bin/python" -c 'import pymongo; print("pymongo", pymongo.version, "in", "'"$venv"'")'
