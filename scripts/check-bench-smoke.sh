#!/usr/bin/env bash
# Smoke run of the benchmarks, by README.md's own commands (its "Benchmarks" block: the build
# of the server and `psync-bench --quick`), run as written but in the debug configuration CI
# has already built. Asserts that every scenario completes and prints one valid JSON object
# (figures are never asserted), and that psync-bench without a psync server says in one
# sentence what to build; and that bootstrap --replica reads pages from its replica.
set -euo pipefail
cd "$(dirname "$0")/.."

out="$(mktemp)"
err="$(mktemp)"
trap 'rm -f "$out" "$err"' EXIT

mapfile -t commands < <(awk '/^## Benchmarks/{section=1} section && /^```sh/{block=1; next} block && /^```/{exit} block' README.md \
    | sed -E 's/[[:space:]]+#.*$//; s/ -c release//' | grep -E '^swift (build|run) ' | grep -Ev 'psync-bench [a-z]')
[ "${#commands[@]}" -ge 2 ] || { echo "README.md's Benchmarks block has no build and --quick commands" >&2; exit 1; }
for command in "${commands[@]}"; do
    echo "== README: $command"
    if [[ "$command" == *psync-bench* ]]; then
        bash -c "$command" >"$out"
    else
        bash -c "$command"
    fi
done
python3 - "$out" <<'PY'
import json, sys
lines = [line for line in open(sys.argv[1]) if line.startswith("{")]  # `swift run` may print its build first
results = [json.loads(line) for line in lines]
for result in results:
    assert isinstance(result, dict), result
    print("bench smoke:", result["scenario"], "ok")
expected = {"ingest", "latency", "fanout", "bootstrap", "connections", "blobs", "import"}
got = {result["scenario"] for result in results}
assert got == expected, f"scenarios {sorted(got)}, expected {sorted(expected)}"
ingest = next(result for result in results if result["scenario"] == "ingest")
assert "messagesPerSecond" in ingest["ceiling"], "ingest ran without its ceiling (the relay)"
imported = next(result for result in results if result["scenario"] == "import")
assert imported["documentsPerSecond"] > 0 and imported["floor"]["copyRowsPerSecond"] > 0, "import ran without its floor (COPY)"
PY

# Without its server, psync-bench exits 2 with one sentence naming the build command.
status=0
.build/debug/psync-bench --quick --psync /nonexistent/psync 2>"$err" >/dev/null || status=$?
[ "$status" -eq 2 ] || { echo "psync-bench without psync exited $status, expected 2" >&2; cat "$err" >&2; exit 1; }
[ "$(wc -l <"$err")" -eq 1 ] && grep -q 'swift build' "$err" || { echo "unclear message:" >&2; cat "$err" >&2; exit 1; }
echo "bench smoke: a missing psync is reported in one sentence: $(cat "$err")"

# With a streaming replica of the embedded cluster (--replica): the bootstrap's pages come from it.
.build/debug/psync-bench bootstrap --quick --replica >"$out"
python3 - "$out" <<'PY'
import json, sys
result = json.loads(next(line for line in open(sys.argv[1]) if line.startswith("{")))
replica = result["replica"]
assert result["complete"] and replica["pagesFromReplica"] > 0, f"no page came from the replica: {replica}"
print("bench smoke: bootstrap --replica ok:", json.dumps(replica))
PY
