#!/usr/bin/env bash
# Smoke run of the benchmarks (`psync-bench --quick`): asserts only that every scenario
# completes and prints one valid JSON object; figures are never asserted.
set -euo pipefail
cd "$(dirname "$0")/.."

bin="${PSYNC_BENCH_BIN:-.build/debug/psync-bench}"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
"$bin" --quick >"$out"
python3 - "$out" <<'PY'
import json, sys
lines = [line for line in open(sys.argv[1]) if line.strip()]
results = [json.loads(line) for line in lines]
for result in results:
    assert isinstance(result, dict), result
    print("bench smoke:", result["scenario"], "ok")
expected = {"ingest", "latency", "fanout", "bootstrap", "connections"}
got = {result["scenario"] for result in results}
assert got == expected, f"scenarios {sorted(got)}, expected {sorted(expected)}"
ingest = next(result for result in results if result["scenario"] == "ingest")
assert "messagesPerSecond" in ingest["ceiling"], "ingest ran without its ceiling (the relay)"
PY
