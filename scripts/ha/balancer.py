#!/usr/bin/env python3
"""N `psync serve` instances on one database behind one HAProxy, for issue 31's load-balancer work.

HAProxy takes HTTP and WebSocket on one port and spreads connections over the instances with
`balance leastconn`; it checks each instance's `/ready` and stops routing to one that fails
it or refuses a connection. The database is a plain PostgreSQL 15 the command starts in
DIR/pg (initdb, pg_ctl, run as `postgres` when we are root), or an existing one: --database-url
URL, or --cluster DIR of a cluster started by scripts/ha/cluster.py (Patroni and HAProxy: the
reference deployment of docs/SCALING.md). Every process runs in the background, detached from
this command, and logs under DIR/logs; DIR/balancer.json (mode 0600) has every port, pid, the
JWT secret, an admin API key and the database's URL.

    balancer.py start DIR [--instances 3] [--base-port 27400] [--psync PATH]
                          [--database-url URL | --cluster DIR] [-- SERVE-ARGS...]
    balancer.py status DIR                     # JSON: HAProxy's view, each instance's pid, /ready, sessions
    balancer.py kill-instance DIR NAME [--signal KILL|TERM|STOP|CONT] [--wait-down] [--timeout S]
    balancer.py stop-instance DIR NAME         # graceful: HAProxy drains it, then SIGTERM; its exit status
    balancer.py start-instance DIR NAME        # starts a stopped or killed instance again, waits until routed
    balancer.py wait-routed DIR [--timeout S]  # every live instance ready and UP in HAProxy
    balancer.py stop DIR                       # SIGTERM to each instance (exit statuses in the answer), HAProxy, PostgreSQL

Ports from --base-port B: HAProxy's frontend B (HTTP and WebSocket), its statistics B+1
(`/;csv`), the own PostgreSQL B+2, instance i (i1, i2, …) B+10+i. Every instance gets the same
JWT secret (it must: a token signed by one is checked by another), PSYNC_BCRYPT_COST from the
environment (default 4 here: fast registrations in tests) and the serve arguments after `--`.
Each answer of HAProxy carries `X-PSync-Backend: <instance>`, the instance that served it
(also on a WebSocket's 101 and on a refused upgrade): the server names no instance in its own
answers, and a client, a test or a support ticket can then say where a session lives.
Standard library only; HAProxy comes from scripts/install-ha-tools.sh; the helpers are
cluster.py's.
"""

import argparse
import base64
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import (PG_BIN, Abort, Failure, chown_service, haproxy_servers, http_get, leftovers,  # noqa: E402
                     load_state as load_named_state, pid_alive, port_free, psql, save_state as save_named_state,
                     service_env, service_user, signal_pid, spawn, terminate, wait_for)

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DEFAULT_BASE_PORT = 27400
STATE_FILE = "balancer.json"
BACKEND = "psync"  # HAProxy's backend (and statistics proxy) name
SIGNALS = {"KILL": signal.SIGKILL, "TERM": signal.SIGTERM, "STOP": signal.SIGSTOP, "CONT": signal.SIGCONT}


def log(msg):
    print(f"[balancer {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def load_state(directory):
    return load_named_state(directory, STATE_FILE, "balancer")


def save_state(state):
    save_named_state(state["dir"], state, STATE_FILE)


# ---------------------------------------------------------------------------------------------
# the layout

def instance_port(base, name):
    return base + 10 + int(name[1:])


def logs(state, *parts):
    return os.path.join(state["dir"], "logs", *parts)


def all_ports(state):
    ports = [state["ports"]["haproxy"], state["ports"]["stats"]]
    if state.get("own_postgres"):
        ports.append(state["ports"]["postgres"])
    return ports + [i["port"] for i in state["instances"].values()]


# ---------------------------------------------------------------------------------------------
# the database: a plain PostgreSQL of our own, or one given

def as_service_user(argv, env=None, timeout=120):
    """Runs argv to completion as the user PostgreSQL runs as (cluster.py's service user)."""
    kwargs = {}
    if os.geteuid() == 0:
        uid, gid, _ = service_user()
        kwargs.update(user=uid, group=gid, extra_groups=[])
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, **kwargs)
    if result.returncode != 0:
        raise Failure(f"{os.path.basename(argv[0])} failed: {result.stdout}{result.stderr}")
    return result.stdout


def start_postgres(state):
    """initdb (scram-sha-256, a generated superuser password) and pg_ctl start on 127.0.0.1;
    then the role `psync`, not a superuser, owning the database `psync` (as
    docker/postgres-initdb/10-psync-role.sh makes them). Returns the role's URL."""
    pg_dir = os.path.join(state["dir"], "pg")
    data = os.path.join(pg_dir, "data")
    os.makedirs(pg_dir, mode=0o700, exist_ok=True)
    chown_service(pg_dir)
    passwords = state["passwords"]
    pwfile = os.path.join(pg_dir, "pwfile")
    with open(os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(passwords["superuser"] + "\n")
    chown_service(pwfile)
    env = service_env(pg_dir)
    try:
        as_service_user([os.path.join(PG_BIN, "initdb"), "-D", data, "-U", "postgres", "--pwfile", pwfile,
                         "--auth=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8"], env)
    finally:
        os.remove(pwfile)
    port = state["ports"]["postgres"]
    pg_log = logs(state, "postgres.log")
    open(pg_log, "a").close()
    chown_service(pg_log)
    pg_ctl(data, "start", "-w", "-t", "60", "-l", pg_log, "-o", postgres_options(state, port, pg_dir, state["scope"]))
    state["postgres_data"] = data
    psql(state, port, "CREATE ROLE psync LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS "
         f"PASSWORD '{passwords['psync']}'")
    psql(state, port, "CREATE DATABASE psync OWNER psync")
    psql(state, port, "REVOKE ALL ON DATABASE psync FROM PUBLIC")
    return f"postgres://psync:{passwords['psync']}@127.0.0.1:{port}/psync?sslmode=disable"


def postgres_options(state, port, socket_dir, name):
    """pg_ctl's `-o` for a PostgreSQL of ours on 127.0.0.1:port (its socket in socket_dir,
    `name` its cluster_name in the process titles): room for the instances' pools (20 each by
    default) and listeners, psql beside them."""
    return (f"-c port={port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={socket_dir} "
            f"-c max_connections={max(100, 25 * len(state['instances']) + 20)} -c shared_buffers=64MB "
            f"-c cluster_name={name}")


def pg_ctl(data, *args, timeout=90):
    """`pg_ctl ARGS -D data` as the service user (its HOME the folder that holds data)."""
    return as_service_user([os.path.join(PG_BIN, "pg_ctl"), *args, "-D", data], service_env(os.path.dirname(data)),
                           timeout=timeout)


def stop_postgres(state, data=None):
    """A fast stop of the PostgreSQL in `data` (default: start_postgres's) if it runs."""
    data = data or state.get("postgres_data")
    if not data or not os.path.exists(os.path.join(data, "postmaster.pid")):
        return
    try:
        pg_ctl(data, "stop", "-w", "-t", "30", "-m", "fast", timeout=40)
    except (Failure, subprocess.TimeoutExpired) as error:
        log(f"pg_ctl stop: {error}")


# ---------------------------------------------------------------------------------------------
# HAProxy

def haproxy_config(state):
    servers = "\n".join(f"    server {name} 127.0.0.1:{i['port']} check" for name, i in sorted(state["instances"].items()))
    return f"""# written by scripts/ha/balancer.py (docs/SCALING.md explains each setting)
global
    # each proxied connection takes two descriptors: keep under the process's limit
    maxconn 4000
    log stdout format raw local0 info
    stats socket {state['dir']}/haproxy.sock mode 600 level admin

defaults
    mode http
    log global
    option httplog
    # the client's address for the server's log and per-address limits (psync reads only the
    # TCP peer today, which is HAProxy: docs/SCALING.md, "Client addresses")
    option forwardfor
    timeout connect 1s
    timeout http-request 10s
    timeout http-keep-alive 10s
    timeout client 30s
    # longer than psync's --upload-timeout (30 s): an upload is answered by the server, not cut
    timeout server 40s
    # a WebSocket once upgraded: the server closes a session silent for 60 s (--idle-timeout)
    # and clients ping well within that, so this only ends connections nobody uses
    timeout tunnel 1h
    timeout client-fin 5s
    timeout server-fin 5s
    # /ready gives its database check 2 s
    timeout check 3s
    # a refused connection is tried again on another instance
    retries 3
    option redispatch 1

frontend psync
    bind 127.0.0.1:{state['ports']['haproxy']}
    # which instance answered (on a WebSocket's 101 too)
    http-response set-header X-PSync-Backend %[srv_name]
    default_backend {BACKEND}

# leastconn: a WebSocket lives for hours, so what matters is the connections an instance
# holds now, not how many it was given (roundrobin); a restarted instance, which holds none,
# takes the next connections until it is level with the others. Its weakness, sending
# everything to a dead instance that holds none, is covered by `observe layer4`: a refused
# connection marks the instance down at once, and `retries` with `redispatch` takes the
# request to another one.
backend {BACKEND}
    balance leastconn
    option httpchk
    http-check send meth GET uri /ready
    http-check expect status 200
    # no `on-marked-down shutdown-sessions`: /ready is 503 on every instance while the
    # database fails over, and open WebSockets ride that out; clients detect a dead or frozen
    # instance by their pings
    default-server inter 1s fastinter 500ms downinter 1s fall 2 rise 2 observe layer4 error-limit 1 on-error mark-down
{servers}

listen stats
    bind 127.0.0.1:{state['ports']['stats']}
    stats enable
    stats uri /
    stats refresh 5s
"""


def servers(state):
    """{instance: HAProxy's statistics row} of the backend."""
    return haproxy_servers(state["ports"]["stats"], (BACKEND,))[BACKEND]


def haproxy_status(state, name):
    return servers(state).get(name, {}).get("status", "")


def haproxy_command(state, command):
    """One command on HAProxy's runtime API (its admin socket, DIR/haproxy.sock); its answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(3)
        s.connect(os.path.join(state["dir"], "haproxy.sock"))
        s.sendall(command.encode() + b"\n")
        chunks = []
        while True:
            data = s.recv(65536)
            if not data:
                break
            chunks.append(data)
    answer = b"".join(chunks).decode().strip()
    if answer:
        raise Failure(f"HAProxy answered `{command}` with: {answer}")


# ---------------------------------------------------------------------------------------------
# instances

def start_instance(state, name):
    """Starts `psync serve` for instance `name` under a shell that records its exit status in
    DIR/run/NAME.exit (so `stop` can report it although the instance is not our child)."""
    instance = state["instances"][name]
    run_dir = os.path.join(state["dir"], "run")
    os.makedirs(run_dir, exist_ok=True)
    pid_file, exit_file = os.path.join(run_dir, f"{name}.pid"), os.path.join(run_dir, f"{name}.exit")
    for path in (pid_file, exit_file):
        if os.path.exists(path):
            os.remove(path)
    env = dict(os.environ, DATABASE_URL=state["database_url"], PSYNC_JWT_SECRET=state["jwt_secret"],
               PSYNC_HOST="127.0.0.1", PSYNC_PORT=str(instance["port"]),
               PSYNC_BCRYPT_COST=state["bcrypt_cost"], LOG_LEVEL=os.environ.get("LOG_LEVEL", "info"))
    # `wait` returns the server's own exit status; the shell gets no signal of ours
    script = '"$@" & echo $! >"$PSYNC_LB_PID"; wait $!; echo $? >"$PSYNC_LB_EXIT"'
    env.update(PSYNC_LB_PID=pid_file, PSYNC_LB_EXIT=exit_file)
    instance["shell_pid"] = spawn(["/bin/sh", "-c", script, "psync-instance", state["psync"], "serve"] + state["serve_args"],
                                  logs(state, f"{name}.log"), env=env, cwd=state["dir"])

    def pid_written():
        with open(pid_file) as f:
            text = f.read().strip()
        return int(text) if text else None
    instance["pid"] = wait_for(f"{name}'s pid", pid_written, 10, interval=0.02)
    instance["started_at"] = time.time()
    save_state(state)


def instance_exit(state, name):
    """The exit status of an instance that ended (from DIR/run/NAME.exit), else None."""
    try:
        with open(os.path.join(state["dir"], "run", f"{name}.exit")) as f:
            return int(f.read().strip())
    except (FileNotFoundError, ValueError):
        return None


def wait_ready(state, name, timeout):
    instance = state["instances"][name]

    def ready():
        if not pid_alive(instance["pid"]):
            raise Abort(f"{name} exited with {instance_exit(state, name)}; see {logs(state, name + '.log')}")
        return http_get(f"http://127.0.0.1:{instance['port']}/ready", timeout=3)[0] == 200
    wait_for(f"{name}'s /ready to answer 200", ready, timeout, interval=0.1)


def wait_routed(state, names, timeout):
    """Waits until HAProxy counts each of `names` UP (its checks ran: HAProxy counts a server
    up until its first check says otherwise, and a restarted one down until `rise` checks pass)."""
    def routed():
        rows = servers(state)
        return all(rows.get(n, {}).get("status") == "UP" and rows[n].get("check_status") == "L7OK" for n in names)
    wait_for(f"HAProxy to route to {', '.join(names)}", routed, timeout, interval=0.05)


def create_admin_key(state):
    """An API key named `admin` (the admin endpoints: sessions per instance, overview)."""
    env = dict(os.environ, DATABASE_URL=state["database_url"])
    result = subprocess.run([state["psync"], "apikey", "create", "--name", "admin"], env=env,
                            capture_output=True, text=True, timeout=60)
    keys = [word for word in result.stdout.split() if word.startswith("psk_")]
    if result.returncode != 0 or not keys:
        raise Failure(f"psync apikey create failed: {result.stdout}{result.stderr}")
    return keys[0]


# ---------------------------------------------------------------------------------------------
# subcommands

def cmd_start(args):
    directory = os.path.abspath(args.dir)
    if os.path.exists(os.path.join(directory, STATE_FILE)):
        raise Failure(f"{directory} already holds a balancer ({STATE_FILE}): stop it first")
    if not 1 <= args.instances <= 50:
        raise Failure("--instances must be between 1 and 50")
    psync = os.path.abspath(args.psync)
    if not os.access(psync, os.X_OK):
        raise Failure(f"{psync} is not an executable psync (--psync, or PSYNC_BIN)")
    if not shutil.which("haproxy"):
        raise Failure("haproxy is not installed: run scripts/install-ha-tools.sh")
    serve_args = args.serve_args
    database_url = args.database_url
    if args.cluster:
        database_url = load_named_state(args.cluster)["database_url"]
    base = args.base_port
    state = {
        "dir": directory,
        "scope": f"psync-lb-{base}",
        "base_port": base,
        "psync": psync,
        "serve_args": serve_args,
        "bcrypt_cost": os.environ.get("PSYNC_BCRYPT_COST", "4"),
        "jwt_secret": base64.b64encode(secrets.token_bytes(48)).decode(),
        "ports": {"haproxy": base, "stats": base + 1, "postgres": base + 2},
        "own_postgres": database_url is None,
        "passwords": {key: secrets.token_hex(16) for key in ("superuser", "psync")},
        "instances": {f"i{n}": {"port": instance_port(base, f"i{n}")} for n in range(1, args.instances + 1)},
        "pids": {},
    }
    busy = [p for p in all_ports(state) if not port_free(p)]
    if busy:
        raise Failure(f"ports in use: {busy} (choose another --base-port)")
    os.makedirs(directory, exist_ok=True)
    os.chmod(directory, 0o711)  # PostgreSQL (the postgres user) reaches DIR/pg
    os.makedirs(logs(state), exist_ok=True)
    os.chmod(logs(state), 0o755)
    started = time.monotonic()
    save_state(state)
    try:
        if database_url is None:
            database_url = start_postgres(state)
            log(f"PostgreSQL up on {state['ports']['postgres']} ({time.monotonic() - started:.1f} s)")
        state["database_url"] = database_url
        save_state(state)
        # every instance at once: the migrator serializes them on an advisory lock
        for name in state["instances"]:
            start_instance(state, name)
        for name in state["instances"]:
            wait_ready(state, name, args.timeout)
        log(f"{len(state['instances'])} instances ready ({time.monotonic() - started:.1f} s)")
        state["admin_key"] = create_admin_key(state)
        cfg = os.path.join(directory, "haproxy.cfg")
        with open(cfg, "w") as f:
            f.write(haproxy_config(state))
        check = subprocess.run(["haproxy", "-c", "-q", "-f", cfg], capture_output=True, text=True)
        if check.returncode != 0:
            raise Failure(f"haproxy refused {cfg}: {check.stdout}{check.stderr}")
        state["pids"]["haproxy"] = spawn(["haproxy", "-db", "-f", cfg], logs(state, "haproxy.log"))
        save_state(state)
        def haproxy_answers():
            if not pid_alive(state["pids"]["haproxy"]):
                raise Abort(f"HAProxy exited; see {logs(state, 'haproxy.log')}")
            return servers(state)
        wait_for("HAProxy's statistics", haproxy_answers, 10, interval=0.05)
        wait_routed(state, list(state["instances"]), args.timeout)
        state["url"] = f"http://127.0.0.1:{state['ports']['haproxy']}"
        state["started_seconds"] = round(time.monotonic() - started, 2)
        save_state(state)
    except BaseException:
        log("start failed; stopping what was started")
        stop_all(state, quiet=True)
        try:
            os.remove(os.path.join(directory, STATE_FILE))
        except FileNotFoundError:
            pass
        raise
    log(f"balancer up in {state['started_seconds']} s on {state['url']}; secrets in {directory}/{STATE_FILE}")
    print(json.dumps({"dir": directory, "url": state["url"], "instances": sorted(state["instances"]),
                      "seconds": state["started_seconds"]}))


def status_of(state):
    result = {"url": state.get("url"), "instances": {}}
    try:
        rows = servers(state)
    except (OSError, Failure) as error:
        rows, result["haproxy_error"] = {}, str(error)
    for name, instance in sorted(state["instances"].items()):
        entry = {"port": instance["port"], "pid": instance.get("pid"), "alive": pid_alive(instance.get("pid")),
                 "exit": instance_exit(state, name)}
        row = rows.get(name, {})
        entry["haproxy"] = {"status": row.get("status"), "check": row.get("check_status"),
                            "current_connections": int(row["scur"]) if row.get("scur") else None,
                            "seconds_since_change": int(row["lastchg"]) if row.get("lastchg") else None}
        if entry["alive"]:
            base = f"http://127.0.0.1:{instance['port']}"
            try:
                entry["ready"] = http_get(f"{base}/ready", timeout=3)[0]
                # the instance's own name (trigger leases, presence rows) and its open sessions
                request = urllib.request.Request(f"{base}/v1/admin/overview",
                                                 headers={"Authorization": f"Bearer {state['admin_key']}"})
                with urllib.request.urlopen(request, timeout=3) as response:
                    overview = json.loads(response.read())
                entry["instance_name"] = overview.get("instance")
                samples = overview.get("samples") or [{}]
                entry["sessions"] = samples[-1].get("sessions")
            except (OSError, ValueError) as error:
                entry["error"] = f"{type(error).__name__}: {error}"
        result["instances"][name] = entry
    return result


def cmd_status(args):
    print(json.dumps(status_of(load_state(args.dir)), indent=2))


def cmd_kill_instance(args):
    state = load_state(args.dir)
    if args.name not in state["instances"]:
        raise Failure(f"no instance {args.name} (there are {', '.join(sorted(state['instances']))})")
    pid = state["instances"][args.name].get("pid")
    if not pid_alive(pid):
        raise Failure(f"{args.name} is not running")
    signal_pid(pid, SIGNALS[args.signal])
    at = time.time()
    result = {"instance": args.name, "pid": pid, "signal": args.signal, "at": at}
    if args.wait_down:
        wait_for(f"HAProxy to mark {args.name} down", lambda: haproxy_status(state, args.name).startswith("DOWN"),
                 args.timeout, interval=0.02)
        result["marked_down_after"] = round(time.time() - at, 3)
    if args.signal == "TERM":
        wait_for(f"{args.name} to exit", lambda: instance_exit(state, args.name) is not None, args.timeout, interval=0.05)
        result["exit_after"] = round(time.time() - at, 3)
        result["exit_status"] = instance_exit(state, args.name)
    print(json.dumps(result))


def cmd_stop_instance(args):
    """A graceful stop: HAProxy sends the instance no new connection (drain), then SIGTERM:
    its sessions close with 1001 and their clients reconnect to the other instances."""
    state = load_state(args.dir)
    if args.name not in state["instances"]:
        raise Failure(f"no instance {args.name}")
    pid = state["instances"][args.name].get("pid")
    if not pid_alive(pid):
        raise Failure(f"{args.name} is not running")
    haproxy_command(state, f"set server {BACKEND}/{args.name} state drain")
    wait_for(f"HAProxy to drain {args.name}", lambda: haproxy_status(state, args.name).startswith("DRAIN"), 10, interval=0.02)
    signal_pid(pid, signal.SIGTERM)
    at = time.time()
    wait_for(f"{args.name} to exit", lambda: instance_exit(state, args.name) is not None, args.timeout, interval=0.02)
    print(json.dumps({"instance": args.name, "pid": pid, "at": at, "exit_after": round(time.time() - at, 3),
                      "exit_status": instance_exit(state, args.name)}))


def cmd_start_instance(args):
    state = load_state(args.dir)
    if args.name not in state["instances"]:
        raise Failure(f"no instance {args.name}")
    if pid_alive(state["instances"][args.name].get("pid")):
        raise Failure(f"{args.name} still runs (pid {state['instances'][args.name]['pid']})")
    started = time.monotonic()
    start_instance(state, args.name)
    wait_ready(state, args.name, args.timeout)
    ready = time.monotonic() - started
    haproxy_command(state, f"set server {BACKEND}/{args.name} state ready")  # after stop-instance's drain
    wait_routed(state, [args.name], args.timeout)
    print(json.dumps({"instance": args.name, "pid": state["instances"][args.name]["pid"],
                      "ready_after": round(ready, 2), "routed_after": round(time.monotonic() - started, 2)}))


def cmd_wait_routed(args):
    state = load_state(args.dir)
    live = [n for n, i in state["instances"].items() if pid_alive(i.get("pid"))]
    started = time.monotonic()
    wait_routed(state, live, args.timeout)
    print(json.dumps({"routed": sorted(live), "seconds": round(time.monotonic() - started, 2)}))


def stop_all(state, quiet=False):
    """SIGTERM to every instance (their exit statuses are returned), then HAProxy, then the
    own PostgreSQL; whatever is left of them is killed."""
    for instance in state["instances"].values():  # a frozen instance cannot take SIGTERM
        if instance.get("pid"):
            signal_pid(instance["pid"], signal.SIGCONT)
    live = {name: i["pid"] for name, i in state["instances"].items() if pid_alive(i.get("pid"))}
    started = time.monotonic()
    graceful = terminate(list(live.values()), "the instances", 30, quiet)
    seconds = round(time.monotonic() - started, 2)
    # the shells write the exit statuses a moment after the servers exit
    try:
        wait_for("the exit statuses", lambda: all(instance_exit(state, n) is not None for n in live), 5, interval=0.02)
    except Failure:
        pass
    exits = {name: instance_exit(state, name) for name in live}
    terminate([state["pids"].get("haproxy")], "HAProxy", 10, quiet)
    if state.get("own_postgres"):
        stop_postgres(state)
    rest = [p for p in leftovers(state) if p != os.getpid()]
    if rest:
        if not quiet:
            log(f"killing leftover processes: {rest}")
        for p in rest:
            signal_pid(p, signal.SIGKILL)
    return {"exit_statuses": exits, "all_exited_on_sigterm": graceful, "seconds": seconds}


def cmd_stop(args):
    try:
        state = load_state(args.dir)
    except Failure:
        log(f"no {STATE_FILE} in {args.dir}: nothing to stop")
        return
    result = stop_all(state)
    os.replace(os.path.join(state["dir"], STATE_FILE), os.path.join(state["dir"], "balancer.stopped.json"))
    busy = [p for p in all_ports(state) if not port_free(p)]
    if busy:
        result["ports_still_busy"] = busy
    print(json.dumps(result))
    if any(code != 0 for code in result["exit_statuses"].values()):
        sys.exit(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("start", help="start the database (unless given), the instances and HAProxy")
    p.add_argument("dir")
    p.add_argument("--instances", type=int, default=3)
    p.add_argument("--base-port", type=int, default=DEFAULT_BASE_PORT)
    p.add_argument("--psync", default=os.environ.get("PSYNC_BIN", os.path.join(ROOT, ".build", "debug", "psync")))
    database = p.add_mutually_exclusive_group()
    database.add_argument("--database-url", help="an existing database instead of a PostgreSQL of our own")
    database.add_argument("--cluster", help="a folder of scripts/ha/cluster.py: its HAProxy's primary port")
    p.add_argument("--timeout", type=float, default=120, help="seconds to wait for each step")
    p.set_defaults(func=cmd_start)

    p = sub.add_parser("status", help="JSON: HAProxy's view and each instance's state")
    p.add_argument("dir")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("kill-instance", help="signal an instance (default SIGKILL)")
    p.add_argument("dir")
    p.add_argument("name")
    p.add_argument("--signal", choices=sorted(SIGNALS), default="KILL")
    p.add_argument("--wait-down", action="store_true", help="wait until HAProxy marks it down; report the time")
    p.add_argument("--timeout", type=float, default=60)
    p.set_defaults(func=cmd_kill_instance)

    p = sub.add_parser("stop-instance", help="graceful stop: drain in HAProxy, then SIGTERM; reports the exit status")
    p.add_argument("dir")
    p.add_argument("name")
    p.add_argument("--timeout", type=float, default=60)
    p.set_defaults(func=cmd_stop_instance)

    p = sub.add_parser("start-instance", help="start a stopped or killed instance again")
    p.add_argument("dir")
    p.add_argument("name")
    p.add_argument("--timeout", type=float, default=120)
    p.set_defaults(func=cmd_start_instance)

    p = sub.add_parser("wait-routed", help="wait until HAProxy routes to every live instance")
    p.add_argument("dir")
    p.add_argument("--timeout", type=float, default=60)
    p.set_defaults(func=cmd_wait_routed)

    p = sub.add_parser("stop", help="stop everything; exit status 1 if an instance did not exit 0")
    p.add_argument("dir")
    p.set_defaults(func=cmd_stop)

    # what follows `--` goes to every `psync serve`
    argv = sys.argv[1:]
    serve_args = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    args.serve_args = serve_args
    try:
        args.func(args)
    except Failure as error:
        log(f"error: {error}")
        sys.exit(1)


if __name__ == "__main__":
    main()
