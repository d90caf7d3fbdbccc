#!/usr/bin/env python3
"""A highly available PostgreSQL 15 cluster on loopback, for the failover work of issue 31.

One etcd, N PostgreSQL nodes under Patroni (streaming replication, optionally Patroni's
synchronous_mode) and HAProxy in front of them: the `primary` frontend routes to the node whose
Patroni REST API answers 200 to `/primary`, the `replicas` frontend to those answering
`/replica`. Every process runs in the background, detached from this command, and logs under
DIR/logs; DIR/cluster.json has every port, pid, password and the DATABASE_URL (through
HAProxy) of the non-superuser role `psync` that owns the database `psync`.

    cluster.py start DIR [--nodes 3] [--base-port 25400] [--sync]
    cluster.py status DIR                  # JSON: primary, timeline, lag per member, HAProxy
    cluster.py wait-primary DIR [--other-than NODE] [--timeout S]
    cluster.py wait-healthy DIR [--timeout S]   # every replica streaming on the new timeline
    cluster.py switchover DIR              # patronictl switchover --force, waits for HAProxy
    cluster.py kill-primary DIR [--with-patroni]
    cluster.py freeze-primary DIR SECONDS [--with-patroni]
    cluster.py restart-node DIR NODE       # starts a node's Patroni again (after --with-patroni)
    cluster.py thaw DIR                    # SIGCONT whatever freeze-primary left stopped
    cluster.py stop DIR                    # stops everything, kills leftovers

Ports, all derived from --base-port B so clusters with different bases coexist: etcd client B,
etcd peer B+1, HAProxy primary B+2, replicas B+3, stats B+4; node i (1-based) PostgreSQL
B+10+i, Patroni REST B+30+i. Run as root: Patroni and PostgreSQL then run as `postgres`.
Standard library only; etcd, HAProxy and Patroni (in .build-ha-venv/) come from
scripts/install-ha-tools.sh.
"""

import argparse
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

PG_BIN = os.environ.get("PSYNC_PG_BIN", "/usr/lib/postgresql/15/bin")
# Patroni from the virtual environment scripts/install-ha-tools.sh makes (PSYNC_HA_VENV to use another)
VENV = os.environ.get("PSYNC_HA_VENV",
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".build-ha-venv"))
PATRONI = os.path.join(os.path.abspath(VENV), "bin", "patroni")
PATRONICTL = os.path.join(os.path.abspath(VENV), "bin", "patronictl")
RUNNING = ("running", "streaming")  # a replica's state is `streaming` once it receives WAL
DEFAULT_BASE_PORT = 25400
STATE_FILE = "cluster.json"
FROZEN_FILE = "frozen.json"


# ---------------------------------------------------------------------------------------------
# small helpers

def log(msg):
    print(f"[cluster {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Failure(Exception):
    pass


class Abort(Failure):
    """Raised by a predicate of wait_for to stop waiting at once (a process it waits for exited)."""


def wait_for(what, predicate, timeout, interval=0.2):
    """Polls predicate() until it returns a truthy value (returned) or timeout seconds pass."""
    deadline = time.monotonic() + timeout
    last_error = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Abort:
            raise
        except Exception as error:  # noqa: BLE001 - a poll tolerates every transient failure
            last_error = error
        if time.monotonic() >= deadline:
            detail = f" (last error: {last_error})" if last_error else ""
            raise Failure(f"timed out after {timeout:.0f} s waiting for {what}{detail}")
        time.sleep(interval)


def http_get(url, timeout=2.0):
    """(status, body) of a GET; HTTP errors are answers, not exceptions."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def port_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def pid_alive(pid):
    if not pid:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def children_of(pid):
    """Every descendant of pid, read from /proc."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return ""


def signal_pid(pid, sig):
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


# ---------------------------------------------------------------------------------------------
# the cluster's layout

class Layout:
    def __init__(self, directory, nodes, base_port):
        self.dir = os.path.abspath(directory)
        self.nodes = nodes
        self.base = base_port
        self.scope = f"psync-ha-{base_port}"
        self.etcd_client = base_port
        self.etcd_peer = base_port + 1
        self.haproxy_primary = base_port + 2
        self.haproxy_replicas = base_port + 3
        self.haproxy_stats = base_port + 4

    def names(self):
        return [f"node{i}" for i in range(1, self.nodes + 1)]

    def pg_port(self, name):
        return self.base + 10 + int(name[4:])

    def rest_port(self, name):
        return self.base + 30 + int(name[4:])

    def node_dir(self, name):
        return os.path.join(self.dir, name)

    def data_dir(self, name):
        return os.path.join(self.node_dir(name), "data")

    def patroni_config(self, name):
        return os.path.join(self.node_dir(name), "patroni.yml")

    def logs(self, *parts):
        return os.path.join(self.dir, "logs", *parts)

    def all_ports(self):
        ports = [self.etcd_client, self.etcd_peer, self.haproxy_primary, self.haproxy_replicas,
                 self.haproxy_stats]
        for name in self.names():
            ports += [self.pg_port(name), self.rest_port(name)]
        return ports


def load_state(directory, name=STATE_FILE, what="cluster"):
    path = os.path.join(os.path.abspath(directory), name)
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise Failure(f"{path} does not exist: no {what} was started in {directory}")


def save_state(directory, state, name=STATE_FILE):
    """Writes the state file (mode 0600: it holds passwords) atomically."""
    path = os.path.join(os.path.abspath(directory), name)
    tmp = path + ".tmp"
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        json.dump(state, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def layout_of(state):
    return Layout(state["dir"], len(state["nodes"]), state["base_port"])


# ---------------------------------------------------------------------------------------------
# running processes

def service_user():
    """(uid, gid, name) Patroni and PostgreSQL run as: `postgres` when we are root."""
    if os.geteuid() != 0:
        entry = pwd.getpwuid(os.geteuid())
    else:
        entry = pwd.getpwnam("postgres")
    return entry.pw_uid, entry.pw_gid, entry.pw_name


def spawn(argv, log_path, as_service_user=False, env=None, cwd=None):
    """Starts argv detached (own session), stdout and stderr appended to log_path."""
    log_file = open(log_path, "ab")
    kwargs = {}
    if as_service_user and os.geteuid() == 0:
        uid, gid, _ = service_user()
        kwargs.update(user=uid, group=gid, extra_groups=[])
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                               start_new_session=True, env=env, cwd=cwd, **kwargs)
    log_file.close()
    return process.pid


def service_env(home):
    return {"PATH": f"{PG_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": home, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONUNBUFFERED": "1"}


def chown_service(path):
    if os.geteuid() == 0:
        uid, gid, _ = service_user()
        os.chown(path, uid, gid)


# ---------------------------------------------------------------------------------------------
# PostgreSQL through psql

def psql(state, port, sql, user="postgres", database="postgres", timeout=5.0):
    """Runs sql through psql on 127.0.0.1:port; returns stdout (unaligned, tuples only)."""
    password = state["passwords"]["superuser"] if user == "postgres" else state["passwords"]["psync"]
    env = dict(os.environ, PGPASSWORD=password, PGCONNECT_TIMEOUT=str(max(1, int(timeout))),
               PGOPTIONS=f"-c statement_timeout={int(timeout * 1000)}")
    result = subprocess.run(
        [os.path.join(PG_BIN, "psql"), "-X", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(port),
         "-U", user, "-d", database, "-c", sql],
        env=env, capture_output=True, text=True, timeout=timeout + 2)
    if result.returncode != 0:
        raise Failure(f"psql on port {port}: {result.stderr.strip()}")
    return result.stdout.strip()


# ---------------------------------------------------------------------------------------------
# Patroni's view

def rest(layout, name, path, timeout=1.0):
    return http_get(f"http://127.0.0.1:{layout.rest_port(name)}{path}", timeout=timeout)


def primary_by_rest(layout):
    """The node whose Patroni answers 200 to /primary (it holds the leader key and runs as primary)."""
    for name in layout.names():
        try:
            status, _ = rest(layout, name, "/primary")
        except OSError:
            continue
        if status == 200:
            return name
    return None


def cluster_view(layout):
    """Patroni's /cluster from the first node that answers."""
    for name in layout.names():
        try:
            status, body = rest(layout, name, "/cluster")
        except OSError:
            continue
        if status == 200:
            return json.loads(body)
    return None


def haproxy_servers(stats_port, proxies):
    """{proxy: {server: row}} for the servers of the named proxies, from HAProxy's CSV
    statistics (each row a dict of its columns: `status`, `scur`, `check_status`, `lastchg`…)."""
    status, body = http_get(f"http://127.0.0.1:{stats_port}/;csv", timeout=1.0)
    if status != 200:
        raise Failure(f"HAProxy statistics answered {status}")
    lines = body.splitlines()
    header = lines[0].lstrip("# ").split(",")
    result = {proxy: {} for proxy in proxies}
    for line in lines[1:]:
        row = dict(zip(header, line.split(",")))
        if row.get("pxname") in result and row.get("svname") not in ("FRONTEND", "BACKEND"):
            result[row["pxname"]][row["svname"]] = row
    return result


def haproxy_backends(layout):
    """{'primary': {node: status}, 'replicas': {node: status}} from HAProxy's CSV statistics."""
    servers = haproxy_servers(layout.haproxy_stats, ("primary", "replicas"))
    return {proxy: {name: row.get("status", "") for name, row in rows.items()} for proxy, rows in servers.items()}


def routed_primary(state, layout):
    """The node HAProxy's primary frontend reaches, if it is a writable primary; else None."""
    out = psql(state, layout.haproxy_primary, "SELECT pg_is_in_recovery(), inet_server_port()", timeout=2.0)
    in_recovery, port = out.split("|")
    if in_recovery != "f":
        return None
    for name in layout.names():
        if layout.pg_port(name) == int(port):
            return name
    return None


def postmaster_pid(layout, name):
    try:
        with open(os.path.join(layout.data_dir(name), "postmaster.pid")) as f:
            pid = int(f.readline().strip())
    except (FileNotFoundError, ValueError):
        return None
    return pid if pid_alive(pid) else None


# ---------------------------------------------------------------------------------------------
# configuration files

def patroni_config(layout, name, args, passwords):
    node_dir = layout.node_dir(name)
    socket_dir = node_dir if len(node_dir) < 90 else "/tmp"
    dcs = {
        "ttl": args.ttl,
        "loop_wait": args.loop_wait,
        "retry_timeout": args.retry_timeout,
        "maximum_lag_on_failover": 16 * 1024 * 1024,
        # a crashed primary fails over at once instead of being restarted in place (default 300 s)
        "primary_start_timeout": args.primary_start_timeout,
        "synchronous_mode": bool(args.sync),
        "synchronous_mode_strict": False,
        "postgresql": {
            "use_pg_rewind": True,
            "use_slots": True,
            "parameters": {
                "wal_level": "replica",
                "hot_standby": "on",
                "wal_log_hints": "on",
                "max_connections": 100,
                "max_wal_senders": 10,
                "max_replication_slots": 10,
                "wal_keep_size": "128MB",
                "shared_buffers": "64MB",
                "synchronous_commit": "on",
                "hot_standby_feedback": "on",
            },
        },
    }
    config = {
        "scope": layout.scope,
        "namespace": "/psync-ha/",
        "name": name,
        "log": {"level": "INFO", "format": "%(asctime)s %(levelname)s: %(message)s"},
        "restapi": {"listen": f"127.0.0.1:{layout.rest_port(name)}",
                    "connect_address": f"127.0.0.1:{layout.rest_port(name)}"},
        "etcd3": {"hosts": [f"127.0.0.1:{layout.etcd_client}"]},
        "bootstrap": {
            "dcs": dcs,
            "initdb": [{"encoding": "UTF8"}, {"locale": "C.UTF-8"}, "data-checksums"],
        },
        "postgresql": {
            "listen": f"127.0.0.1:{layout.pg_port(name)}",
            "connect_address": f"127.0.0.1:{layout.pg_port(name)}",
            "data_dir": layout.data_dir(name),
            "bin_dir": PG_BIN,
            "pgpass": os.path.join(node_dir, "pgpass"),
            # a fast checkpoint: a spread one makes a new replica wait minutes for its copy
            "basebackup": [{"checkpoint": "fast"}],
            "authentication": {
                "superuser": {"username": "postgres", "password": passwords["superuser"]},
                "replication": {"username": "replicator", "password": passwords["replication"]},
                "rewind": {"username": "rewinder", "password": passwords["rewind"]},
            },
            "pg_hba": [
                "local all all trust",  # the socket's directory is the node's, mode 0700
                "host replication replicator 127.0.0.1/32 scram-sha-256",
                "host all all 127.0.0.1/32 scram-sha-256",
            ],
            "parameters": {
                "unix_socket_directories": socket_dir,
                "logging_collector": "on",
                "log_directory": layout.logs(f"{name}-postgres"),
                "log_filename": "postgresql.log",
                "log_file_mode": "0644",
                "log_line_prefix": "%m [%p] %q%u@%d ",
                "log_connections": "off",
            },
        },
        "tags": {"nofailover": False, "noloadbalance": False, "clonefrom": False, "nosync": False},
    }
    return config


def haproxy_config(layout):
    def servers(check):
        lines = []
        for name in layout.names():
            lines.append(f"    server {name} 127.0.0.1:{layout.pg_port(name)} check port {layout.rest_port(name)}")
        return "\n".join(lines)

    return f"""# written by scripts/ha/cluster.py
global
    maxconn 1000
    log stdout format raw local0 info

defaults
    mode tcp
    log global
    option tcplog
    # a refused connection is tried once more, on another server if one is up by then (the
    # delay between tries is the connect timeout)
    retries 1
    option redispatch 1
    timeout connect 1s
    timeout client 1h
    timeout server 1h
    timeout check 1s

listen stats
    mode http
    bind 127.0.0.1:{layout.haproxy_stats}
    stats enable
    stats uri /
    stats refresh 5s

# Writes: only the node whose Patroni answers 200 to /primary. A node marked down has its
# sessions closed, so no client stays connected to a demoted or dead primary; a refused
# connection marks it down at once (observe layer4) instead of after two failed checks.
listen primary
    bind 127.0.0.1:{layout.haproxy_primary}
    option httpchk
    http-check send meth OPTIONS uri /primary
    http-check expect status 200
    default-server inter 500ms fastinter 250ms downinter 500ms fall 2 rise 1 on-marked-down shutdown-sessions observe layer4 error-limit 1 on-error mark-down
{servers('/primary')}

# Reads: every running replica, round robin.
listen replicas
    bind 127.0.0.1:{layout.haproxy_replicas}
    balance roundrobin
    option httpchk
    http-check send meth OPTIONS uri /replica
    http-check expect status 200
    default-server inter 500ms fastinter 250ms downinter 500ms fall 2 rise 1 on-marked-down shutdown-sessions observe layer4 error-limit 1 on-error mark-down
{servers('/replica')}
"""


# ---------------------------------------------------------------------------------------------
# subcommands

def start_patroni(layout, name):
    return spawn([PATRONI, layout.patroni_config(name)], layout.logs(f"{name}-patroni.log"),
                 as_service_user=True, env=service_env(layout.node_dir(name)), cwd=layout.node_dir(name))


def cmd_start(args):
    layout = Layout(args.dir, args.nodes, args.base_port)
    if not 1 <= args.nodes <= 19:
        raise Failure("--nodes must be between 1 and 19")
    if os.path.exists(os.path.join(layout.dir, STATE_FILE)):
        raise Failure(f"{layout.dir} already holds a cluster (cluster.json): stop it first")
    busy = [p for p in layout.all_ports() if not port_free(p)]
    if busy:
        raise Failure(f"ports in use: {busy} (choose another --base-port)")
    for tool in ("etcd", PATRONI, PATRONICTL, "haproxy"):
        if not shutil.which(tool):
            raise Failure(f"{tool} is not installed: run scripts/install-ha-tools.sh")

    os.makedirs(layout.dir, exist_ok=True)
    os.chmod(layout.dir, 0o711)  # Patroni (the postgres user) reaches its node's folder
    os.makedirs(layout.logs(), exist_ok=True)
    os.chmod(layout.logs(), 0o755)

    passwords = {key: secrets.token_hex(16) for key in ("superuser", "replication", "rewind", "psync")}
    state = {
        "dir": layout.dir,
        "base_port": layout.base,
        "scope": layout.scope,
        "sync": bool(args.sync),
        "patroni": {"ttl": args.ttl, "loop_wait": args.loop_wait, "retry_timeout": args.retry_timeout,
                    "primary_start_timeout": args.primary_start_timeout},
        "ports": {"etcd_client": layout.etcd_client, "etcd_peer": layout.etcd_peer,
                  "haproxy_primary": layout.haproxy_primary, "haproxy_replicas": layout.haproxy_replicas,
                  "haproxy_stats": layout.haproxy_stats},
        "pids": {},
        "nodes": {},
        "passwords": passwords,
        "pg_bin": PG_BIN,
    }
    for name in layout.names():
        state["nodes"][name] = {"pg_port": layout.pg_port(name), "rest_port": layout.rest_port(name),
                                "data_dir": layout.data_dir(name), "config": layout.patroni_config(name),
                                "postgres_log": layout.logs(f"{name}-postgres", "postgresql.log"),
                                "patroni_log": layout.logs(f"{name}-patroni.log")}
    save_state(layout.dir, state)
    started = time.monotonic()

    try:
        # etcd
        etcd_dir = os.path.join(layout.dir, "etcd")
        os.makedirs(etcd_dir, mode=0o700, exist_ok=True)
        client = f"http://127.0.0.1:{layout.etcd_client}"
        peer = f"http://127.0.0.1:{layout.etcd_peer}"
        state["pids"]["etcd"] = spawn(
            ["etcd", "--name", "etcd1", "--data-dir", etcd_dir,
             "--listen-client-urls", client, "--advertise-client-urls", client,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"etcd1={peer}", "--initial-cluster-state", "new",
             "--initial-cluster-token", layout.scope, "--heartbeat-interval", "100", "--election-timeout", "1000"],
            layout.logs("etcd.log"))
        save_state(layout.dir, state)
        wait_for("etcd to answer /health", lambda: _etcd_healthy(client, state["pids"]["etcd"]), 30)
        log(f"etcd up on {layout.etcd_client}")

        # Patroni and PostgreSQL
        for name in layout.names():
            node_dir = layout.node_dir(name)
            os.makedirs(node_dir, mode=0o700, exist_ok=True)
            chown_service(node_dir)
            pg_logs = layout.logs(f"{name}-postgres")
            os.makedirs(pg_logs, exist_ok=True)
            chown_service(pg_logs)
            path = layout.patroni_config(name)
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                json.dump(patroni_config(layout, name, args, passwords), f, indent=2)  # JSON is YAML
            chown_service(path)
        for name in layout.names():
            state["pids"][f"{name}-patroni"] = start_patroni(layout, name)
        save_state(layout.dir, state)

        def elected():
            for name in layout.names():
                if not pid_alive(state["pids"][f"{name}-patroni"]):
                    raise Abort(f"{name}'s Patroni exited; see {layout.logs(name + '-patroni.log')}")
            return primary_by_rest(layout)
        primary = wait_for("a primary to be elected", elected, args.timeout)
        log(f"{primary} is the primary ({time.monotonic() - started:.1f} s)")

        # HAProxy
        cfg = os.path.join(layout.dir, "haproxy.cfg")
        with open(cfg, "w") as f:
            f.write(haproxy_config(layout))
        check = subprocess.run(["haproxy", "-c", "-q", "-f", cfg], capture_output=True, text=True)
        if check.returncode != 0:
            raise Failure(f"haproxy refused {cfg}: {check.stdout}{check.stderr}")
        state["pids"]["haproxy"] = spawn(["haproxy", "-db", "-f", cfg], layout.logs("haproxy.log"))
        save_state(layout.dir, state)
        # HAProxy counts every server up until its first check says otherwise: wait until the
        # checks have run (only the primary up in the `primary` frontend), then for a write path
        def routed_only_to_primary():
            if not pid_alive(state["pids"]["haproxy"]):
                raise Abort("HAProxy exited; see logs/haproxy.log")
            up = [name for name, status in haproxy_backends(layout)["primary"].items() if status == "UP"]
            return up == [primary] and routed_primary(state, layout) == primary
        wait_for(f"HAProxy to route writes to {primary} alone", routed_only_to_primary, args.timeout)
        log(f"HAProxy routes writes on {layout.haproxy_primary}")

        # the role and database psync connects as (as docker/postgres-initdb makes them)
        password = passwords["psync"]
        psql(state, layout.haproxy_primary,
             "CREATE ROLE psync LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS "
             f"PASSWORD '{password}'")
        psql(state, layout.haproxy_primary, "CREATE DATABASE psync OWNER psync")
        psql(state, layout.haproxy_primary, "REVOKE ALL ON DATABASE psync FROM PUBLIC")
        # a replica's WAL receiver (status, timeline) is shown to pg_read_all_stats only: the
        # instances read pages from replicas only when they can see that (--replica-url)
        psql(state, layout.haproxy_primary, "GRANT pg_monitor TO psync")
        state["database_url"] = (f"postgres://psync:{password}@127.0.0.1:{layout.haproxy_primary}/psync"
                                 "?sslmode=disable")
        state["replicas_url"] = (f"postgres://psync:{password}@127.0.0.1:{layout.haproxy_replicas}/psync"
                                 "?sslmode=disable")
        # each node's own port, as an instance's --replica-url (PSYNC_REPLICA_URLS): the
        # primary's is out of reads (not a standby) and comes in when it is demoted
        state["node_urls"] = [f"postgres://psync:{password}@127.0.0.1:{layout.pg_port(name)}/psync?sslmode=disable"
                              for name in layout.names()]
        state["superuser_url"] = (f"postgres://postgres:{passwords['superuser']}@127.0.0.1:"
                                  f"{layout.haproxy_primary}/postgres?sslmode=disable")

        # every replica streaming (and, in synchronous mode, a synchronous standby chosen), so
        # that a switchover or failover has a candidate from the first moment
        wait_for("every replica to stream and be routed", lambda: healthy(state, layout), args.timeout)
        state["started_seconds"] = round(time.monotonic() - started, 1)
        save_state(layout.dir, state)
    except BaseException:
        log("start failed; stopping what was started")
        try:
            stop_cluster(state, quiet=True)
        finally:
            try:
                os.remove(os.path.join(layout.dir, STATE_FILE))
            except FileNotFoundError:
                pass
        raise
    log(f"cluster up in {state['started_seconds']} s; DATABASE_URL (with the password) in {layout.dir}/{STATE_FILE}")
    print(json.dumps({"dir": layout.dir, "primary": primary, "database_url": state["database_url"],
                      "seconds": state["started_seconds"]}))


def _etcd_healthy(client, pid):
    if not pid_alive(pid):
        raise Abort("etcd exited; see logs/etcd.log")
    status, body = http_get(f"{client}/health", timeout=1.0)
    return status == 200 and json.loads(body).get("health") == "true"


def cmd_status(args):
    state = load_state(args.dir)
    print(json.dumps(status_of(state), indent=2))


def status_of(state):
    layout = layout_of(state)
    view = cluster_view(layout)
    result = {"scope": state["scope"], "sync_mode": state["sync"], "primary": None, "timeline": None,
              "members": [], "haproxy": None, "routed_primary": None, "replication": None}
    if view:
        for member in view["members"]:
            name = member["name"]
            entry = {"name": name, "role": member.get("role"), "state": member.get("state"),
                     "timeline": member.get("timeline"), "lag_bytes": member.get("lag"),
                     "pg_port": layout.pg_port(name), "postmaster_pid": postmaster_pid(layout, name),
                     "patroni_pid": state["pids"].get(f"{name}-patroni")}
            result["members"].append(entry)
            if member.get("role") == "leader":
                result["primary"] = name
                result["timeline"] = member.get("timeline")
    try:
        result["haproxy"] = haproxy_backends(layout)
    except (OSError, Failure) as error:
        result["haproxy"] = {"error": str(error)}
    # the primary's own account of its standbys (more current than Patroni's, which is
    # refreshed once per loop_wait)
    if result["primary"]:
        try:
            rows = psql(state, layout.pg_port(result["primary"]),
                        "SELECT application_name, state, sync_state, "
                        "pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint "
                        "FROM pg_stat_replication ORDER BY 1", timeout=2.0)
            result["replication"] = [
                dict(zip(("name", "state", "sync_state", "replay_lag_bytes"), row.split("|")))
                for row in rows.splitlines() if row]
            for row in result["replication"]:
                row["replay_lag_bytes"] = int(row["replay_lag_bytes"]) if row["replay_lag_bytes"] else None
        except (Failure, subprocess.TimeoutExpired) as error:
            result["replication"] = {"error": str(error)}
    try:
        result["routed_primary"] = routed_primary(state, layout)
    except (Failure, subprocess.TimeoutExpired, ValueError):
        result["routed_primary"] = None
    return result


def wait_routed(state, layout, other_than, timeout):
    """Waits until HAProxy's primary frontend reaches a writable primary (not other_than)."""
    def routed():
        name = routed_primary(state, layout)
        return name if name and name != other_than else None
    return wait_for("HAProxy to route writes to a primary" + (f" other than {other_than}" if other_than else ""),
                    routed, timeout, interval=0.1)


def healthy(state, layout):
    """The primary's name once the cluster is whole again: one leader that HAProxy routes writes
    to, every member running on the leader's timeline and streaming from it (seen from the
    primary's pg_stat_replication), every replica routed by the `replicas` frontend and, in
    synchronous mode, a synchronous standby chosen. Else None."""
    view = cluster_view(layout)
    if not view:
        return None
    members = view["members"]
    leaders = [m for m in members if m["role"] == "leader"]
    if len(members) != layout.nodes or len(leaders) != 1:
        return None
    primary, timeline = leaders[0]["name"], leaders[0].get("timeline")
    if any(m.get("state") not in RUNNING or m.get("timeline") != timeline for m in members):
        return None
    if state["sync"] and layout.nodes > 1 and not any(m["role"] == "sync_standby" for m in members):
        return None
    backends = haproxy_backends(layout)
    if backends["primary"].get(primary) != "UP" or \
            sum(1 for s in backends["replicas"].values() if s == "UP") != layout.nodes - 1:
        return None
    streaming = psql(state, layout.pg_port(primary),
                     "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'", timeout=2.0)
    if int(streaming) != layout.nodes - 1:
        return None
    return primary if routed_primary(state, layout) == primary else None


def cmd_wait_healthy(args):
    state = load_state(args.dir)
    layout = layout_of(state)
    started = time.monotonic()
    name = wait_for("the cluster to be whole (every replica streaming)", lambda: healthy(state, layout),
                    args.timeout)
    print(json.dumps({"primary": name, "seconds": round(time.monotonic() - started, 2)}))


def cmd_wait_primary(args):
    state = load_state(args.dir)
    layout = layout_of(state)
    started = time.monotonic()
    name = wait_routed(state, layout, args.other_than, args.timeout)
    print(json.dumps({"primary": name, "seconds": round(time.monotonic() - started, 2)}))


def current_primary(state, layout):
    name = primary_by_rest(layout)
    if not name:
        raise Failure("no node answers /primary right now")
    return name


def cmd_switchover(args):
    state = load_state(args.dir)
    layout = layout_of(state)
    old = current_primary(state, layout)
    started = time.monotonic()
    command = [PATRONICTL, "-c", layout.patroni_config(old), "switchover", "--force", "--leader", old]
    if args.candidate:
        command += ["--candidate", args.candidate]
    result = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
    with open(layout.logs("patronictl.log"), "a") as f:
        f.write(f"$ {' '.join(command)}\n{result.stdout}{result.stderr}\n")
    if result.returncode != 0:
        raise Failure(f"patronictl switchover failed: {result.stdout}{result.stderr}")
    new = wait_routed(state, layout, old, args.timeout)
    print(json.dumps({"from": old, "to": new, "seconds": round(time.monotonic() - started, 2)}))


def cmd_kill_primary(args):
    state = load_state(args.dir)
    layout = layout_of(state)
    name = current_primary(state, layout)
    pid = postmaster_pid(layout, name)
    if not pid:
        raise Failure(f"{name} has no running postmaster")
    killed = {"node": name, "postmaster_pid": pid}
    if args.with_patroni:
        patroni_pid = state["pids"].get(f"{name}-patroni")
        if patroni_pid and signal_pid(patroni_pid, signal.SIGKILL):
            killed["patroni_pid"] = patroni_pid
    signal_pid(pid, signal.SIGKILL)
    killed["at"] = time.time()
    print(json.dumps(killed))


def cmd_freeze_primary(args):
    state = load_state(args.dir)
    layout = layout_of(state)
    name = current_primary(state, layout)
    pid = postmaster_pid(layout, name)
    if not pid:
        raise Failure(f"{name} has no running postmaster")
    pids = [pid]
    if args.with_patroni:
        pids.insert(0, state["pids"][f"{name}-patroni"])
    frozen_path = os.path.join(layout.dir, FROZEN_FILE)
    stopped = []

    def thaw(*_):
        for p in stopped:
            signal_pid(p, signal.SIGCONT)
        try:
            os.remove(frozen_path)
        except FileNotFoundError:
            pass

    previous = {s: signal.signal(s, lambda *_: (thaw(), sys.exit(1))) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        # the postmaster first, so that it forks no new backend, then every process under it
        for p in pids + children_of(pid):
            if signal_pid(p, signal.SIGSTOP):
                stopped.append(p)
        for p in children_of(pid):  # forked before the postmaster stopped
            if p not in stopped and signal_pid(p, signal.SIGSTOP):
                stopped.append(p)
        with open(frozen_path, "w") as f:
            json.dump(stopped, f)
        frozen_at = time.time()
        log(f"froze {name}: {len(stopped)} processes for {args.seconds} s")
        time.sleep(args.seconds)  # the fault's length, not a synchronisation
    finally:
        thaw()
        for s, handler in previous.items():
            signal.signal(s, handler)
    print(json.dumps({"node": name, "processes": len(stopped), "frozen_at": frozen_at, "thawed_at": time.time()}))


def cmd_thaw(args):
    state = load_state(args.dir)
    thaw_leftovers(state)


def thaw_leftovers(state):
    path = os.path.join(state["dir"], FROZEN_FILE)
    try:
        with open(path) as f:
            pids = json.load(f)
    except FileNotFoundError:
        return
    for p in pids:
        signal_pid(p, signal.SIGCONT)
    os.remove(path)


def cmd_restart_node(args):
    state = load_state(args.dir)
    layout = layout_of(state)
    if args.node not in state["nodes"]:
        raise Failure(f"no node {args.node}")
    key = f"{args.node}-patroni"
    if pid_alive(state["pids"].get(key)):
        raise Failure(f"{args.node}'s Patroni still runs (pid {state['pids'][key]})")
    state["pids"][key] = start_patroni(layout, args.node)
    save_state(layout.dir, state)
    wait_for(f"{args.node} to run again", lambda: rest(layout, args.node, "/health")[0] == 200, args.timeout)
    print(json.dumps({"node": args.node, "patroni_pid": state["pids"][key]}))


def leftovers(state):
    """Processes of this cluster: any whose command line names its folder or its scope, and
    every descendant of those (PostgreSQL's backends title themselves `postgres: SCOPE: …`)."""
    marks = [state["dir"] + "/", f"postgres: {state['scope']}:"]
    me = os.getpid()
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        line = cmdline(int(entry))
        if any(mark in line for mark in marks) and pid_alive(int(entry)):
            found.add(int(entry))
    for pid in list(found):
        found.update(children_of(pid))
    found.discard(me)
    return sorted(found)


def terminate(pids, what, timeout, quiet=False):
    """SIGTERM to each live pid, then waits up to timeout seconds for them to exit; SIGKILLs
    those that did not. Returns whether they all exited on SIGTERM."""
    alive = [p for p in pids if p and pid_alive(p)]
    for p in alive:
        signal_pid(p, signal.SIGTERM)
    try:
        wait_for(f"{what} to exit", lambda: not any(pid_alive(p) for p in alive), timeout, interval=0.05)
        return True
    except Failure:
        if not quiet:
            log(f"{what} did not exit on SIGTERM within {timeout} s; killing")
        for p in alive:
            signal_pid(p, signal.SIGKILL)
        return False


def stop_cluster(state, quiet=False):
    layout = layout_of(state)
    thaw_leftovers(state)
    pids = state.get("pids", {})

    def stop(pids_to_stop, what, timeout):
        terminate(pids_to_stop, what, timeout, quiet)

    # replicas first, then the primary: no failover while the cluster goes down
    primary = None
    try:
        primary = primary_by_rest(layout)
    except Exception:  # noqa: BLE001
        pass
    names = [n for n in layout.names() if n != primary] + ([primary] if primary else [])
    replicas = [pids.get(f"{n}-patroni") for n in names if n != primary]
    stop(replicas, "the replicas' Patroni", 30)
    if primary:
        stop([pids.get(f"{primary}-patroni")], "the primary's Patroni", 30)
    stop([pids.get("haproxy")], "HAProxy", 10)
    stop([pids.get("etcd")], "etcd", 10)
    rest_of = leftovers(state)
    if rest_of:
        if not quiet:
            log(f"killing leftover processes: {rest_of}")
        for p in rest_of:
            signal_pid(p, signal.SIGKILL)
        wait_for("leftovers to exit", lambda: not any(pid_alive(p) for p in rest_of), 10)
    busy = [p for p in layout.all_ports() if not port_free(p)]
    if busy and not quiet:
        log(f"warning: ports still in use after stop: {busy}")
    return busy


def cmd_stop(args):
    try:
        state = load_state(args.dir)
    except Failure:
        log(f"no cluster.json in {args.dir}: nothing to stop")
        return
    busy = stop_cluster(state)
    stopped = os.path.join(state["dir"], "cluster.stopped.json")
    os.replace(os.path.join(state["dir"], STATE_FILE), stopped)
    log("stopped" + (f" (ports still busy: {busy})" if busy else ""))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("start", help="start etcd, Patroni + PostgreSQL nodes and HAProxy")
    p.add_argument("dir")
    p.add_argument("--nodes", type=int, default=3)
    p.add_argument("--base-port", type=int, default=DEFAULT_BASE_PORT)
    p.add_argument("--sync", action="store_true", help="Patroni's synchronous_mode")
    p.add_argument("--ttl", type=int, default=20, help="Patroni's leader key TTL (s)")
    p.add_argument("--loop-wait", type=int, default=2, help="Patroni's loop_wait (s)")
    p.add_argument("--retry-timeout", type=int, default=6, help="Patroni's retry_timeout (s)")
    p.add_argument("--primary-start-timeout", type=int, default=0,
                   help="seconds a crashed primary may take to restart in place before failing over (0: at once)")
    p.add_argument("--timeout", type=float, default=180, help="seconds to wait for each step")
    p.set_defaults(func=cmd_start)

    for name, func, text in (("stop", cmd_stop, "stop everything and kill leftovers"),
                             ("status", cmd_status, "JSON: primary, timeline, lag per member"),
                             ("thaw", cmd_thaw, "SIGCONT what freeze-primary left stopped")):
        p = sub.add_parser(name, help=text)
        p.add_argument("dir")
        p.set_defaults(func=func)

    p = sub.add_parser("wait-primary", help="wait until HAProxy routes writes to a primary")
    p.add_argument("dir")
    p.add_argument("--other-than", help="a node that does not count (the old primary)")
    p.add_argument("--timeout", type=float, default=120)
    p.set_defaults(func=cmd_wait_primary)

    p = sub.add_parser("wait-healthy", help="wait until every replica streams from the primary again")
    p.add_argument("dir")
    p.add_argument("--timeout", type=float, default=120)
    p.set_defaults(func=cmd_wait_healthy)

    p = sub.add_parser("switchover", help="patronictl switchover --force; waits for HAProxy")
    p.add_argument("dir")
    p.add_argument("--candidate")
    p.add_argument("--timeout", type=float, default=120)
    p.set_defaults(func=cmd_switchover)

    p = sub.add_parser("kill-primary", help="SIGKILL the primary's postmaster")
    p.add_argument("dir")
    p.add_argument("--with-patroni", action="store_true", help="SIGKILL its Patroni too (the node is lost)")
    p.set_defaults(func=cmd_kill_primary)

    p = sub.add_parser("freeze-primary", help="SIGSTOP the primary's PostgreSQL for SECONDS, then SIGCONT")
    p.add_argument("dir")
    p.add_argument("seconds", type=float)
    p.add_argument("--with-patroni", action="store_true", help="freeze its Patroni too (the node stalls)")
    p.set_defaults(func=cmd_freeze_primary)

    p = sub.add_parser("restart-node", help="start a node's Patroni again")
    p.add_argument("dir")
    p.add_argument("node")
    p.add_argument("--timeout", type=float, default=120)
    p.set_defaults(func=cmd_restart_node)

    args = parser.parse_args()
    try:
        args.func(args)
    except Failure as error:
        log(f"error: {error}")
        sys.exit(1)


if __name__ == "__main__":
    main()
