#!/usr/bin/env bash
# Follows docs/APPS.md's first application ("A first application, from an empty directory")
# literally, in a new temporary directory: PartitionSync's checkout beside it (this repository,
# linked as `PartitionSync`), every `<!-- guide: run -->` block run in order in one shell,
# every `<!-- file: <path> -->` block written whole at its path, so `swift test` builds and
# runs the tests the guide wrote; then the `<!-- guide: server -->` command starts the server
# on an embedded database and a free port until /ready answers, and SIGTERM stops it
# (scripts/serve-until-ready.sh).
# SwiftPM's build folder is shared with the examples' (.build-examples, scripts/check-examples.sh)
# through PSYNC_GUIDE_SCRATCH, so PartitionSync's own modules are not compiled once more.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scratch="${PSYNC_GUIDE_SCRATCH:-$root/.build-examples}"
work=$(mktemp -d /tmp/psync-apps-guide-XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
ln -s "$root" "$work/PartitionSync"

# The guide as one shell script: its commands, and its files written with quoted here-documents.
python3 - "$root/docs/APPS.md" "$scratch" >"$work/guide.sh" 3>"$work/server-command" <<'PY'
import os, re, shlex, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
scratch = sys.argv[2]
out, server, marker, i = ["set -euxo pipefail"], None, None, 0
def swift(command):
    # The guide's `swift test` / `swift run`, in the shared build folder.
    return re.sub(r"^swift (test|run|build)\b", lambda m: f"swift {m.group(1)} --scratch-path {shlex.quote(scratch)}", command)
while i < len(lines):
    line = lines[i].strip()
    m = re.match(r"<!--\s*(guide|file):\s*(.+?)\s*-->$", line)
    if m:
        marker = m.groups()
    elif line.startswith("```") and marker:
        body = []
        i += 1
        while not lines[i].strip().startswith("```"):
            body.append(lines[i]); i += 1
        kind, value = marker
        if kind == "file":
            assert "GUIDE_EOF" not in body and not value.startswith("/") and ".." not in value, value
            out.append(f"mkdir -p {shlex.quote(os.path.dirname(value) or '.')}")
            out.append(f"cat > {shlex.quote(value)} <<'GUIDE_EOF'")
            out.extend(body)
            out.append("GUIDE_EOF")
        elif value == "run":
            out.extend(swift(c) for c in body)
        elif value == "server":
            assert server is None and len(body) == 1, "one server command"
            server = swift(body[0])
            out.append("pwd > \"$GUIDE_APP_DIR_FILE\"")
        marker = None
    elif line:
        marker = None
    i += 1
assert server, "the guide has no <!-- guide: server --> block"
print("\n".join(out))
os.write(3, (server + "\n").encode())
PY

echo "== docs/APPS.md's first application, followed in $work"
(cd "$work" && GUIDE_APP_DIR_FILE="$work/app-dir" bash "$work/guide.sh")

command=$(cat "$work/server-command")
app=$(cat "$work/app-dir")
# shellcheck disable=SC2086  # the guide's command, split into its words
"$root/scripts/serve-until-ready.sh" "$app" "the guide's server" $command
echo "docs/APPS.md's first application: built, its tests passed, its server started and stopped on SIGTERM"
