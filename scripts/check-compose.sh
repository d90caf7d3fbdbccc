#!/usr/bin/env bash
# Checks docker-compose.yml, the Dockerfiles and .dockerignore, statically and in seconds (no
# image is built): CI runs it as it is.
#
# - .dockerignore (the build context of every image is the repository's root) keeps out build
#   folders, the embedded database and its secrets, .env, .git, test output, at any depth; and
#   keeps in every file the Dockerfiles copy (git's tracked and untracked-but-not-ignored files).
# - Each Dockerfile copies every folder Package.swift builds from (Sources, Tests, Clients, …),
#   runs as a user that is not root, and bakes no secret into ENV or ARG.
# - The compose file: psync's healthcheck passes on `GET /ready` answering 200 and fails on a
#   503 whose body and headers say "200" (run here against a little HTTP server), and compose
#   leaves no `$` of it to interpolate; postgres's `pg_isready` asks over TCP (`-h`), so it
#   fails while the image's socket-only init server runs; psync connects as a role that is
#   not the superuser, made NOSUPERUSER by a script mounted into /docker-entrypoint-initdb.d
#   and owning psync's database; every password and the JWT secret come from the
#   environment (`${VAR:?…}`), none written in the file; PostgreSQL is not published.
#
# PSYNC_COMPOSE_RUN=1 also runs the compose file for real with Podman (Debian's `podman` and
# `podman-compose`, installed when missing): builds the image (compiles the server: 20+
# minutes on two cores), starts both services, waits for both healthchecks, registers a user,
# checks that psync's sessions are the non-superuser role owning its tables and that the
# image holds no secret files, then removes the containers and the volume. It publishes port
# 8080 on this machine. PSYNC_COMPOSE_STORAGE_DRIVER picks Podman's storage driver (default
# vfs, which works inside a container).
set -euo pipefail
cd "$(dirname "$0")/.."

python=python3
if ! "$python" -c 'import yaml' 2>/dev/null; then
    if /usr/bin/python3 -c 'import yaml' 2>/dev/null; then
        python=/usr/bin/python3
    else
        echo "check-compose: needs PyYAML (Debian: apt-get install python3-yaml)" >&2
        exit 1
    fi
fi

"$python" - <<'PY'
import fnmatch, http.server, os, re, socket, subprocess, sys, threading
import yaml

failures = []
checked = 0

def check(condition, message):
    global checked
    checked += 1
    if not condition:
        failures.append(message)

# --- .dockerignore -------------------------------------------------------------------------

def ignore_patterns(path):
    patterns = []
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate:
            line = line[1:].strip()
        line = os.path.normpath(line).lstrip("/")
        patterns.append((negate, pattern_regex(line)))
    return patterns

def pattern_regex(pattern):
    """Docker's (moby/patternmatcher's) syntax: `**` any number of folders, `*` and `?` within one."""
    out, i = "^", 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**", i):
            i += 2
            if pattern.startswith("/", i):
                out += "(.*/)?"
                i += 1
            else:
                out += ".*"
            continue
        if c == "*":
            out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "[":
            end = pattern.find("]", i)
            if end < 0:
                out += re.escape(c)
            else:
                out += pattern[i:end + 1].replace("\\", "\\\\")
                i = end
        elif c == "\\" and i + 1 < len(pattern):
            i += 1
            out += re.escape(pattern[i])
        else:
            out += re.escape(c)
        i += 1
    return re.compile(out + "$")

def ignored(path, patterns):
    """Whether the build context leaves `path` out: the last pattern matching it, or one of its
    folders, decides (a leading `!` takes it back in)."""
    parts = path.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    result = False
    for negate, regex in patterns:
        if any(regex.match(prefix) for prefix in prefixes):
            result = not negate
    return result

must_leave_out = [
    ".git/HEAD", ".git/config",
    ".build/debug/psync", ".build/release/psync", ".build-examples/debug/couchchat-server",
    ".build-release/x86_64-unknown-linux-gnu/release/psync", ".build-console-venv/bin/python",
    "Examples/CouchChat/.build/debug/couchchat-server", "Examples/TouchWiki/.build/checkouts/x/Package.swift",
    ".swiftpm/configuration/registries.json", "Examples/CouchChat/.swiftpm/xcode/package.xcworkspace",
    ".psync-data/postgres/PG_VERSION", ".psync-data/postgres.password", ".psync-data/jwt-secret",
    "Examples/CouchChat/.psync-data/postgres.password", "Examples/TouchWiki/.psync-data/jwt-secret",
    "Examples/CouchChat/.psync-data/postgres/base/1/112",
    "postgres.password", "Sources/psync/data.password", "jwt-secret",
    ".env", ".env.local", "Examples/CouchChat/.env",
    "server.pem", "tls/server.key",
    "console-screenshots/overview.png", "Tests/Console/console-screenshots/users.png",
    "Clients/js/node_modules/typescript/package.json", "Clients/js/test/browser/__pycache__/run_tests.cpython-311.pyc",
    "Clients/js/test/browser/server.log", ".schemathesis/examples.db", "default.profraw",
]

def git_files(paths):
    """The files of `paths` that git tracks or would track (untracked, not ignored)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *paths],
                             check=True, capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        failures.append(f"git ls-files failed ({error}): cannot list the files the images copy")
        return []
    return sorted({name for name in out.decode().split("\0") if name and os.path.exists(name)})

# --- Dockerfiles and what Package.swift builds from ----------------------------------------

def package_folders(manifest):
    """The top-level folders a root package's targets live in: Sources/ and Tests/ by default,
    and the first component of every `path:` of a target."""
    text = open(manifest, encoding="utf-8").read()
    folders = set()
    if re.search(r"\.(target|executableTarget|plugin|macro)\(", text):
        folders.add("Sources")
    if re.search(r"\.testTarget\(", text):
        folders.add("Tests")
    for match in re.finditer(r"\.(?:target|executableTarget|testTarget|plugin|macro)\((.*?)\n\s*\)", text, re.S):
        path = re.search(r'\bpath:\s*"([^"]+)"', match.group(1))
        if path:
            folders.add(os.path.normpath(path.group(1)).split("/")[0])
    return folders

def dockerfile_stages(path):
    """(stage lines) per FROM, each line with its continuations joined."""
    lines, current = [], ""
    for raw in open(path, encoding="utf-8"):
        stripped = raw.rstrip("\n")
        if not current and stripped.lstrip().startswith("#"):
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current += stripped
        if current.strip():
            lines.append(current.strip())
        current = ""
    stages = []
    for line in lines:
        if line.upper().startswith("FROM "):
            stages.append([])
        if stages:
            stages[-1].append(line)
    return stages

def copy_sources(stage):
    sources = []
    for line in stage:
        words = line.split()
        if words[0].upper() not in ("COPY", "ADD"):
            continue
        args = [word for word in words[1:] if not word.startswith("--")]
        if any(word.startswith("--from") for word in words[1:]):
            continue
        sources += [os.path.normpath(source) for source in args[:-1]]
    return sources

root_folders = package_folders("Package.swift")
dockerfiles = ["Dockerfile"] + sorted(
    os.path.join("Examples", name, "Dockerfile") for name in os.listdir("Examples")
    if os.path.exists(os.path.join("Examples", name, "Dockerfile")))
all_sources = set()
for dockerfile in dockerfiles:
    stages = dockerfile_stages(dockerfile)
    check(len(stages) >= 1, f"{dockerfile}: no FROM")
    if not stages:
        continue
    sources = [source for stage in stages for source in copy_sources(stage)]
    all_sources.update(sources)
    for source in sources:
        check(os.path.exists(source), f"{dockerfile}: COPY {source}: no such file or folder in the context (the repository's root)")
        check(source not in (".", "./"), f"{dockerfile}: COPY . copies the whole context; name what the build needs")
    needed = set(root_folders)
    example = os.path.dirname(dockerfile)
    if example:
        needed.add(example)
    for folder in sorted(needed):
        check(any(folder == source or folder.startswith(source.rstrip("/") + "/") for source in sources),
              f"{dockerfile}: the package builds from {folder}/ (Package.swift), which no COPY brings in")
    final = stages[-1]
    users = [line.split()[1] for line in final if line.split()[0].upper() == "USER"]
    check(bool(users) and users[-1] not in ("root", "0"), f"{dockerfile}: the image's last stage runs as root (add USER)")
    for line in (line for stage in stages for line in stage):
        words = line.split(None, 1)
        if words[0].upper() in ("ENV", "ARG") and len(words) > 1:
            check(not re.search(r"(PASSWORD|SECRET|TOKEN|DATABASE_URL)", words[1], re.I),
                  f"{dockerfile}: `{line}` bakes a secret into the image; pass it at run time")

ignore_files = [name for name in [".dockerignore", ".containerignore"] if os.path.exists(name)]
ignore_files += [dockerfile + ".dockerignore" for dockerfile in dockerfiles if os.path.exists(dockerfile + ".dockerignore")]
check(os.path.exists(".dockerignore"), ".dockerignore is missing: the build context would carry .build/, .psync-data/ and secrets")
copied = git_files(sorted(all_sources))
check(len(copied) > 50, f"only {len(copied)} files under {sorted(all_sources)}: git ls-files found too few to check")
for ignore_file in ignore_files:
    patterns = ignore_patterns(ignore_file)
    for path in must_leave_out:
        check(ignored(path, patterns), f"{ignore_file} lets {path} into the build context")
    for path in copied:
        check(not ignored(path, patterns), f"{ignore_file} leaves out {path}, which a Dockerfile copies")

# --- docker-compose.yml --------------------------------------------------------------------

compose = yaml.safe_load(open("docker-compose.yml", encoding="utf-8"))
services = compose.get("services", {})
postgres, psync = services.get("postgres", {}), services.get("psync", {})
check(bool(postgres) and bool(psync), "docker-compose.yml: services postgres and psync expected")

def environment(service):
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {key: "" if value is None else str(value) for key, value in env.items()}

def from_environment(value):
    """Whether a setting is nothing but `${VAR:?message}`: required, never written here."""
    return re.fullmatch(r"\$\{[A-Za-z_][A-Za-z0-9_]*:\?[^}]*\}", value) is not None

def healthcheck(service, name):
    test = (service.get("healthcheck") or {}).get("test")
    check(isinstance(test, list) and len(test) >= 2 and test[0] in ("CMD", "CMD-SHELL"),
          f"docker-compose.yml: {name} needs a healthcheck `test: [CMD…, …]`")
    if not isinstance(test, list) or len(test) < 2:
        return None
    for word in test[1:]:
        check(re.search(r"(?<!\$)\$(?!\$)", word.replace("$$", "")) is None,
              f"docker-compose.yml: {name}'s healthcheck has a `$` compose would interpolate (write `$$`): {word}")
    argv = ["/bin/sh", "-c", test[1]] if test[0] == "CMD-SHELL" else test[1:]
    return [word.replace("$$", "$") for word in argv]

# postgres: pg_isready over TCP.
argv = healthcheck(postgres, "postgres") or []
joined = " ".join(argv)
check("pg_isready" in joined, "docker-compose.yml: postgres's healthcheck is not pg_isready")
host = re.search(r"(?:-h|--host)(?:\s+|=)(\S+)", joined)
check(host is not None and not host.group(1).startswith("/"),
      "docker-compose.yml: pg_isready without `-h <address>` asks the Unix socket, which the image's temporary init server answers")

# psync: the status code of GET /ready.
argv = healthcheck(psync, "psync") or []
ports = [str(port) for port in psync.get("ports", [])]
check(any(port.split(":")[-1] == "8080" for port in ports), "docker-compose.yml: psync's container port 8080 is not published")
check(not any("grep" in word and "200" in word for word in argv), "docker-compose.yml: psync's healthcheck greps for 200 in the response")

class Handler(http.server.BaseHTTPRequestHandler):
    status = 200
    def do_GET(self):
        body = b'{"status":"ready"}' if Handler.status == 200 else b'{"error":{"code":"unavailable","message":"HTTP/1.1 200 OK 200"}}'
        self.send_response(Handler.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Request-Id", "200200200")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.path == "/ready":
            self.wfile.write(body)
    def log_message(self, *args):
        pass

class QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass   # the healthcheck hangs up after the status line

server = QuietServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
port = server.server_address[1]

def probe(target_port):
    if not argv:
        return None
    local = [word.replace("8080", str(target_port)) for word in argv]
    try:
        return subprocess.run(local, capture_output=True, timeout=15).returncode
    except subprocess.TimeoutExpired:
        return "timeout"

if argv:
    check(any("8080" in word for word in argv), "docker-compose.yml: psync's healthcheck does not ask port 8080")
    Handler.status = 200
    check(probe(port) == 0, "docker-compose.yml: psync's healthcheck fails against a server whose /ready answers 200")
    Handler.status = 503
    check(probe(port) not in (0, None), "docker-compose.yml: psync's healthcheck passes on a 503 whose body and headers contain 200")
    Handler.status = 404
    check(probe(port) not in (0, None), "docker-compose.yml: psync's healthcheck passes on a 404")
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    check(probe(closed_port) not in (0, None), "docker-compose.yml: psync's healthcheck passes with nothing listening")
server.shutdown()

# psync's database role: not the superuser, made by an init script, owning its database.
postgres_env, psync_env = environment(postgres), environment(psync)
superuser = postgres_env.get("POSTGRES_USER", "postgres")
url = re.fullmatch(r"postgres(?:ql)?://([^:@/]+)(?::([^@]*))?@([^/:]+)(?::\d+)?/([^?]+)(\?.*)?", psync_env.get("DATABASE_URL", ""))
check(url is not None, "docker-compose.yml: psync's DATABASE_URL is not postgres://user:password@host/database")
if url:
    user, password, _, database, _ = url.groups()
    check(user not in (superuser, "postgres"), f"docker-compose.yml: psync connects as {user}, PostgreSQL's superuser")
    check(password is not None and re.fullmatch(r"\$\{[A-Za-z_][A-Za-z0-9_]*(:\?[^}]*)?\}", password) is not None,
          "docker-compose.yml: DATABASE_URL's password is written in the file; take it from the environment (${VAR:?…})")
    check(postgres_env.get("POSTGRES_USER", "") != user,
          f"docker-compose.yml: POSTGRES_USER={user} makes psync's role the superuser")
    mounts = [str(volume).split(":") for volume in postgres.get("volumes", [])]
    init = [mount[0] for mount in mounts if len(mount) >= 2 and mount[1].rstrip("/").startswith("/docker-entrypoint-initdb.d")]
    check(bool(init), "docker-compose.yml: nothing mounted into postgres's /docker-entrypoint-initdb.d to make psync's role")
    scripts = []
    for source in init:
        check(source.startswith("."), f"docker-compose.yml: the init mount {source} is not a path in the repository")
        if os.path.isdir(source):
            scripts += [os.path.join(source, name) for name in sorted(os.listdir(source))]
        elif os.path.exists(source):
            scripts.append(source)
        else:
            failures.append(f"docker-compose.yml: the init mount {source} does not exist")
    text = "\n".join(open(script, encoding="utf-8").read() for script in scripts)
    create_role = re.search(rf"CREATE\s+(?:ROLE|USER)\s+\"?{re.escape(user)}\"?\b([^;]*);", text, re.I)
    check(create_role is not None, f"the init scripts ({', '.join(scripts) or 'none'}) do not CREATE ROLE {user}")
    if create_role:
        options = create_role.group(1).upper()
        check("NOSUPERUSER" in options and not re.search(r"(?<!NO)SUPERUSER", options),
              f"the init scripts' CREATE ROLE {user} does not say NOSUPERUSER")
        check(re.search(r"(?<!NO)(CREATEROLE|CREATEDB|REPLICATION|BYPASSRLS)", options) is None,
              f"the init scripts give {user} more than it needs: {options.strip()}")
    check(re.search(rf"CREATE\s+DATABASE\s+\"?{re.escape(database)}\"?\s+(?:WITH\s+)?OWNER\s*=?\s*\"?{re.escape(user)}\b", text, re.I) is not None,
          f"the init scripts do not CREATE DATABASE {database} OWNER {user} (the migrations create tables, functions and triggers in it)")
    check(re.search(rf"ALTER\s+(?:ROLE|USER)\s+\"?{re.escape(user)}\"?[^;]*(?<!NO)SUPERUSER", text, re.I) is None,
          f"the init scripts make {user} a superuser")
    check(re.search(r"GRANT\s+pg_(?:read_server_files|write_server_files|execute_server_program)", text, re.I) is None,
          "the init scripts grant a server-file role")
for name, env, key in [("postgres", postgres_env, "POSTGRES_PASSWORD"), ("psync", psync_env, "PSYNC_JWT_SECRET")]:
    check(from_environment(env.get(key, "")), f"docker-compose.yml: {name}'s {key} must be ${{{key}:?…}}, from the environment, not written here")
for key, value in postgres_env.items():
    if "PASSWORD" in key:
        check(from_environment(value), f"docker-compose.yml: postgres's {key} is written in the file")
check(postgres_env.get("POSTGRES_HOST_AUTH_METHOD", "") != "trust", "docker-compose.yml: POSTGRES_HOST_AUTH_METHOD=trust lets anyone in")
check(not postgres.get("ports"), "docker-compose.yml: postgres publishes a port on the host; psync reaches it on compose's network")
depends = psync.get("depends_on", {})
check(isinstance(depends, dict) and (depends.get("postgres") or {}).get("condition") == "service_healthy",
      "docker-compose.yml: psync should wait for postgres to be healthy (depends_on condition: service_healthy)")
check(psync.get("build") in (".", {"context": "."}) or (isinstance(psync.get("build"), dict) and psync["build"].get("context") == "."),
      "docker-compose.yml: psync's image is built from the repository's root, where .dockerignore is")

if failures:
    for failure in failures:
        print("FAIL", failure, file=sys.stderr)
    print(f"check-compose: {len(failures)} of {checked} checks failed", file=sys.stderr)
    sys.exit(1)
print(f"check-compose: {checked} static checks passed ({len(dockerfiles)} Dockerfiles, {len(ignore_files)} ignore file(s), "
      f"{len(copied)} copied files kept in, {len(must_leave_out)} local paths left out, the healthchecks run against 200/503/404/closed)")
PY

[ "${PSYNC_COMPOSE_RUN:-0}" = 1 ] || exit 0

# --- the real thing, with Podman -----------------------------------------------------------
echo "== PSYNC_COMPOSE_RUN=1: building and running docker-compose.yml with Podman"
if ! command -v podman >/dev/null || ! command -v podman-compose >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends podman podman-compose fuse-overlayfs uidmap slirp4netns curl ca-certificates
fi
podman --version
podman-compose --version | tail -1

# Podman inside a container: no systemd (cgroupfs, file events), a storage driver that works
# on an overlay root, and Docker Hub for the short names the files use (swift:…, postgres:15).
conf=$(mktemp -d /tmp/psync-compose-conf-XXXXXX)
cat >"$conf/containers.conf" <<'EOF'
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
cat >"$conf/registries.conf" <<'EOF'
unqualified-search-registries = ["docker.io"]
short-name-mode = "permissive"
EOF
export CONTAINERS_CONF="$conf/containers.conf" CONTAINERS_REGISTRIES_CONF="$conf/registries.conf"
export STORAGE_DRIVER="${PSYNC_COMPOSE_STORAGE_DRIVER:-vfs}"

project=psync-compose-check
export PSYNC_JWT_SECRET POSTGRES_PASSWORD PSYNC_DB_PASSWORD
PSYNC_JWT_SECRET=$(openssl rand -base64 48)
POSTGRES_PASSWORD=$(openssl rand -hex 24)
PSYNC_DB_PASSWORD=$(openssl rand -hex 24)
compose() { podman-compose -p "$project" -f docker-compose.yml "$@"; }
container() { podman ps -a --format '{{.Names}}' | grep -E "^${project}[_-]$1[_-]1$" | head -1; }
cleanup() {
    compose down -v >/dev/null 2>&1 || true
    podman volume rm -f "${project}_pgdata" >/dev/null 2>&1 || true
    rm -rf "$conf"
}
trap cleanup EXIT

# Healthy by the compose file's own healthcheck (run by hand: without systemd Podman has no
# timer to run it).
wait_healthy() {
    local name=$1 seconds=$2 id
    for _ in $(seq 1 "$seconds"); do
        id=$(container "$name")
        if [ -n "$id" ] && podman healthcheck run "$id" >/dev/null 2>&1; then
            echo "compose run: $name is healthy"
            return 0
        fi
        sleep 1
    done
    echo "compose run: $name did not become healthy in ${seconds}s" >&2
    [ -n "${id:-}" ] && podman logs --tail 40 "$id" >&2
    return 1
}

echo "== build (compiles the server)"
compose build
echo "== up: postgres first (its init script makes psync's role), then psync"
compose up -d postgres
wait_healthy postgres 180
compose up -d
wait_healthy psync 300

pg=$(container postgres)
status=$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8080/ready)
[ "$status" = 200 ] || { echo "compose run: GET /ready on the published port answered $status" >&2; exit 1; }
curl -sf -X POST http://127.0.0.1:8080/v1/auth/register -d '{"email":"compose@example.com","password":"correct horse"}' | grep -q accessToken \
    || { echo "compose run: registering a user failed" >&2; exit 1; }
sql() { podman exec "$pg" psql -U postgres -d psync -tAc "$1"; }
[ "$(sql "SELECT rolsuper FROM pg_roles WHERE rolname = 'psync'")" = f ] || { echo "compose run: the role psync is a superuser" >&2; exit 1; }
[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE datname = 'psync' AND usename = 'psync'")" -gt 0 ] \
    || { echo "compose run: no session of psync as the role psync" >&2; exit 1; }
[ "$(sql "SELECT count(*) FROM pg_stat_activity s JOIN pg_roles r ON r.rolname = s.usename WHERE s.datname = 'psync' AND r.rolsuper AND s.application_name NOT LIKE 'psql%'")" = 0 ] \
    || { echo "compose run: a superuser session on psync's database that is not this check" >&2; exit 1; }
[ "$(sql "SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tableowner <> 'psync'")" = 0 ] \
    || { echo "compose run: tables not owned by psync" >&2; exit 1; }
[ "$(sql "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")" -gt 0 ] || { echo "compose run: no tables: the migrations did not run" >&2; exit 1; }
image=$(podman inspect --format '{{.ImageName}}' "$(container psync)")
leaked=$(podman run --rm --entrypoint /bin/sh "$image" -c \
    'find / -xdev \( -name "*.password" -o -name jwt-secret -o -name .psync-data -o -name .env -o -name .build -o -name .git \) -print 2>/dev/null' || true)
[ -z "$leaked" ] || { echo "compose run: the image holds $leaked" >&2; exit 1; }
echo "compose run: both services healthy; psync serves on 8080 as the non-superuser role owning its tables; the image holds no secrets"
