#!/usr/bin/env python3
"""Runs README.md's commands in order, as a new user would on one machine: the server ("The two
commands"), "Try it" over HTTP with its blob, the two-terminal chat with rchat, and an admin API key
made beside the running server (which must keep serving). Each command line is run as written
in one shell, so variables carry from line to line; what differs from a person's terminals:

- `swift run psync serve` starts the server in the background (once; the later "unless it
  still runs" lines find it running), on a free port and a data folder of this run, and waits
  for /ready; `localhost:8080` in a command is that port, and rchat reaches it through
  RCHAT_SERVER;
- a `watch` (its own terminal in the README) runs in the background, the next command waits
  until it says it is watching, and the line the README says shows up in it is waited for in
  its output;
- rchat's homes (`/tmp/ann`, `/tmp/bob`) are folders of this run.

Every line of the walked sections must be known to this script (EXPECT, or one of the rules
above), so a README edit that adds a command fails here until it is walked too. The sections
CI checks elsewhere are not run again: `swift test` (.ci/run), Benchmarks
(scripts/check-bench-smoke.sh), the examples (scripts/check-examples.sh), Docker
(scripts/check-compose.sh).
"""
import os, re, shutil, socket, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WALKED = ["The two commands", "Try it", "Chat from two terminals", "The web console"]

# What each command line must print (a substring), by a prefix of the line.
EXPECT = {
    'R=$(curl -s -X POST localhost:8080/v1/auth/register': None,
    'echo "$R"': '"accessToken"',
    'TOKEN=$(echo "$R"': None,
    'for _ in $(seq 50); do curl -s "localhost:8080/v1/partitions/user%3D$ME/changes"': None,
    'curl -s -X POST "localhost:8080/v1/partitions/user%3D$ME/uploads"': '"ack"',
    'curl -s "localhost:8080/v1/partitions/user%3D$ME/changes"': '"Kim"',
    "echo 'a photo' > photo.jpg": None,
    'DIGEST=sha256:': None,
    'curl -s -X PUT "localhost:8080/v1/blobs/$DIGEST"': '"@blob"',
    'curl -s "localhost:8080/v1/blobs/$DIGEST?partition=user%3D$ME"': 'a photo',
    'swift build --product rchat': None,
    'export PATH=$PWD/.build/debug:$PATH': None,
    'RCHAT_HOME=/tmp/ann rchat register': None,
    'RCHAT_HOME=/tmp/bob rchat register': None,
    'RCHAT_HOME=/tmp/ann rchat create Team': None,
    'RCHAT_HOME=/tmp/ann rchat send Team "hello Bob"': 'Sent to Team',
    'RCHAT_HOME=/tmp/bob rchat read Team': 'hello Bob',
    'RCHAT_HOME=/tmp/bob rchat rooms': 'Team',
    'swift run psync apikey create --name admin': 'psk_',
}


def sections(text):
    """The README's `sh` blocks, each with the heading of its section."""
    heading, blocks, lines, i = None, [], text.split("\n"), 0
    while i < len(lines):
        if lines[i].startswith("## "):
            heading = lines[i][3:].strip()
        elif lines[i].strip() == "```sh":
            body, i = [], i + 1
            while lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            blocks.append((heading, body))
        i += 1
    return blocks


def logical_lines(body):
    """Lines joined where one ends with a backslash."""
    out, pending = [], ""
    for line in body:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
        else:
            out.append(pending + line)
            pending = ""
    return out


def main():
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    walked = [(h, b) for h, b in sections(readme) if h in WALKED]
    missing = set(WALKED) - {h for h, _ in walked}
    if missing:
        sys.exit(f"README.md has no sh block under: {sorted(missing)}")
    work = tempfile.mkdtemp(prefix="psync-readme-")
    os.chmod(work, 0o755)  # the embedded cluster runs as the postgres user when this runs as root
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    port_number = port.getsockname()[1]
    port.close()
    script = [
        "set -uo pipefail",
        f"W={work}",
        f"export PSYNC_PORT={port_number} PSYNC_DATA_DIR=$W/data RCHAT_SERVER=http://127.0.0.1:{port_number}",
        "SERVER=",
        "fail() { echo \"README walk: $*\" >&2; [ -n \"$SERVER\" ] && { tail -30 $W/server.log >&2; kill -TERM $SERVER; }; exit 1; }",
        "start_server() {",
        "  if [ -n \"$SERVER\" ] && kill -0 $SERVER 2>/dev/null; then echo '(the server runs already)'; return; fi",
        "  swift build --product psync >$W/build.log 2>&1 || fail \"swift build --product psync: $(tail -5 $W/build.log)\"",
        "  swift run psync serve >$W/server.log 2>&1 & SERVER=$!",
        "  for _ in $(seq 1 600); do curl -sf localhost:$PSYNC_PORT/ready >/dev/null && return; kill -0 $SERVER 2>/dev/null || break; sleep 0.2; done",
        "  fail 'the server did not become ready'",
        "}",
        # Waits (bounded) until a file holds a text.
        "wait_for() { for _ in $(seq 1 300); do grep -qF -- \"$2\" \"$1\" && return; sleep 0.1; done; fail \"$2 not in $1: $(cat $1)\"; }",
        "check() { grep -qF -- \"$2\" \"$1\" || fail \"line $3 printed no $2: $(cat $1)\"; }",
    ]
    count = 0
    watch_log = None
    for heading, body in walked:
        for line in logical_lines(body):
            if line.strip().startswith("#"):
                continue  # a comment line: what the command before it prints
            command = re.sub(r"\s+#.*$", "", line).strip()
            comment = line[len(line.split("#")[0]):] if "#" in line and not line.strip().startswith("#") else ""
            if not command:
                continue
            count += 1
            runnable = command.replace("localhost:8080", "localhost:$PSYNC_PORT").replace("RCHAT_HOME=/tmp/", "RCHAT_HOME=$W/")
            script.append(f"echo '$ {command.replace(chr(39), chr(39) + chr(92) + chr(39) + chr(39))}'")
            if command.startswith("swift run psync serve"):
                script.append("start_server")
                continue
            if " rchat watch " in command:
                watch_log = "$W/watch.log"
                script.append(f"{runnable} >{watch_log} 2>&1 & WATCH=$!")
                # As a person would, the next command waits until the watch is up.
                script.append(f"wait_for {watch_log} 'Watching as'")
                continue
            if command == "swift test":
                script.append(": 'run by .ci/run itself'")
                continue
            expected = [v for k, v in EXPECT.items() if command.startswith(k)]
            if not expected:
                sys.exit(f"README.md ({heading}): a command this walk does not know: {command}")
            out = f"$W/out.{count}"
            script.append(f"{{ {runnable} ; }} >{out} 2>&1 || fail \"line {count} exited $?: $(cat {out})\"")
            script.append(f"cat {out}")
            if expected[0]:
                script.append(f"check {out} '{expected[0]}' {count}")
            if "shows up in terminal" in comment:
                if not watch_log:
                    sys.exit("README.md: a line shows up in a watch that was not started")
                text = re.search(r'"([^"]+)"', command).group(1)
                script.append(f"wait_for {watch_log} '{text}'")
            if command.startswith("swift run psync apikey"):
                # The server beside it keeps its database and keeps serving (issue 34).
                script.append("curl -sf localhost:$PSYNC_PORT/ready >/dev/null || fail 'the server stopped serving after apikey create'")
    script += [
        "[ -n \"${WATCH:-}\" ] && kill $WATCH 2>/dev/null",
        "kill -TERM $SERVER; wait $SERVER; status=$?",
        "[ $status -eq 0 ] || fail \"the server exited $status on SIGTERM\"",
        f"echo 'README.md: {count} commands walked in order'",
    ]
    path = os.path.join(work, "walk.sh")
    open(path, "w").write("\n".join(script) + "\n")
    try:
        status = subprocess.run(["bash", path], cwd=ROOT).returncode
    finally:
        if os.path.exists(os.path.join(ROOT, "photo.jpg")):
            os.remove(os.path.join(ROOT, "photo.jpg"))
    if status == 0:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"README walk failed; its script and logs are in {work}", file=sys.stderr)
    sys.exit(status)


if __name__ == "__main__":
    main()
