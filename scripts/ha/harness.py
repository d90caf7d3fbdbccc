"""Pieces the failover scripts share: running scripts/ha/cluster.py, `psync serve` instances on
the cluster, WebSocket sessions, RChat accounts and uploads over HTTP, polling with a deadline,
reading a server's log and its /metrics. Imported by probe_failover.py, trial.py,
check_balancer.py, check_lost_tail.py and check_replicas.py (run with .build-ha-venv/bin/python,
which has httpx and websockets: scripts/install-ha-tools.sh).
"""

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.parse

import httpx
import websockets

HERE = os.path.dirname(os.path.abspath(__file__))
CLUSTER = os.path.join(HERE, "cluster.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def cluster(*args, check=True):
    """Runs scripts/ha/cluster.py; returns its JSON output (or None)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, CLUSTER, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await process.communicate()
    if check and process.returncode != 0:
        raise RuntimeError(f"cluster.py {' '.join(args)} failed: {err.decode()[-2000:]}")
    text = out.decode().strip()
    return json.loads(text) if text else None


async def eventually(what, predicate, timeout, interval=0.2):
    """Awaits predicate() until it returns a truthy value (returned); TimeoutError after timeout s."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = await predicate()
            if value:
                return value
        except Exception:  # noqa: BLE001 - polled until the deadline
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} within {timeout} s")
        await asyncio.sleep(interval)


# ---------------------------------------------------------------------------------------------
# a check's report

class CheckFailed(Exception):
    """A check failed: the exception says what."""


class Checker:
    """What a check script says, on stderr: `[NAME seconds] …`, the seconds since it began; and
    `check`, which says `ok: …` or raises CheckFailed."""

    def __init__(self, name):
        self.name = name
        self.t0 = time.monotonic()

    def now(self):
        return time.monotonic() - self.t0

    def say(self, msg):
        print(f"[{self.name} {self.now():6.2f}] {msg}", file=sys.stderr, flush=True)

    def check(self, condition, what):
        if not condition:
            raise CheckFailed(what)
        self.say(f"ok: {what}")

    def run(self, coroutine):
        """Runs a check to its end: says `NAME: ok`, or `FAILED: …` and exits with status 1."""
        try:
            asyncio.run(coroutine)
        except (CheckFailed, TimeoutError) as error:
            self.say(f"FAILED: {error}")
            sys.exit(1)
        self.say(f"{self.name}: ok")


# ---------------------------------------------------------------------------------------------
# WebSocket sessions

def check_main(checker, doc, main_async):
    """The command line of a single-server check (check_lost_tail.py, check_replicas.py):
    DIR --psync PATH; runs `main_async(args)` through `checker`."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("dir")
    parser.add_argument("--psync", required=True)
    checker.run(main_async(parser.parse_args()))


def connect(port, token, query=""):
    """A WebSocket to /v1/sync of the server (or balancer) on `port`, as the checks open them:
    no size limit, no library pings (the protocol's own are sent by `messages`)."""
    return websockets.connect(f"ws://127.0.0.1:{port}/v1/sync{query}", additional_headers={"Authorization": f"Bearer {token}"},
                              max_size=None, open_timeout=5, ping_interval=None, close_timeout=2)


async def messages(ws, going=lambda: True, poll=1.0):
    """The server's messages on `ws`, parsed, while `going()` holds (checked at least every
    `poll` seconds); a protocol ping every 15 s keeps an idle session within the server's 60 s
    idle timeout."""
    last_ping = time.monotonic()
    while going():
        if time.monotonic() - last_ping > 15:
            await ws.send(json.dumps({"type": "ping", "nonce": int(time.monotonic())}))
            last_ping = time.monotonic()
        try:
            raw = await asyncio.wait_for(ws.recv(), timeout=poll)
        except asyncio.TimeoutError:
            continue
        yield json.loads(raw)


# ---------------------------------------------------------------------------------------------
# server instances

class Instance:
    """One `psync serve` process on a free loopback port, logging to DIR/psync-NAME.log."""

    def __init__(self, name, psync, url, log_dir, secret, extra_env=None):
        self.name = name
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = os.path.join(log_dir, f"psync-{name}.log")
        self.url = url
        env = dict(os.environ, DATABASE_URL=url, PSYNC_JWT_SECRET=secret, PSYNC_PORT=str(self.port),
                   PSYNC_BCRYPT_COST="4", PSYNC_ACCESS_TOKEN_TTL="3600", LOG_LEVEL="info",
                   PSYNC_METRICS_PUBLIC="true")
        env.update(extra_env or {})
        self.log_file = open(self.log_path, "ab")
        self.process = subprocess.Popen([psync, "serve"], env=env, stdin=subprocess.DEVNULL,
                                        stdout=self.log_file, stderr=subprocess.STDOUT, start_new_session=True)
        self.http = httpx.AsyncClient(base_url=self.base, timeout=httpx.Timeout(90.0, connect=3.0))
        self.log_offset = 0
        self.exit = None

    def alive(self):
        return self.process.poll() is None

    async def ready(self, timeout=3.0):
        response = await self.http.get("/ready", timeout=timeout)
        return response.status_code

    async def wait_ready(self, timeout=120):
        async def check():
            if not self.alive():
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}")
            return await self.ready() == 200
        return await eventually(f"{self.name}'s /ready to answer 200", check, timeout)

    def log_since(self, offset):
        with open(self.log_path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")

    def log_size(self):
        return os.path.getsize(self.log_path)

    async def terminate(self, timeout=30):
        """SIGTERM; returns (seconds until exit, exit code) or (None, None) if it did not exit."""
        if not self.alive():
            return 0.0, self.process.returncode
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        while time.monotonic() - started < timeout:
            if self.process.poll() is not None:
                self.exit = (round(time.monotonic() - started, 2), self.process.returncode)
                return self.exit
            await asyncio.sleep(0.05)
        return None, None

    def kill(self):
        if self.alive():
            self.process.kill()
            self.process.wait()
        self.log_file.close()

    async def metrics(self):
        """The server's GET /metrics (public: PSYNC_METRICS_PUBLIC), as ``Metrics``."""
        response = await self.http.get("/metrics", timeout=5)
        response.raise_for_status()
        return Metrics(response.text)

    async def trigger_health(self):
        """/health/triggers: its status and the problems of each trigger that has some."""
        try:
            response = await self.http.get("/health/triggers", timeout=5)
            body = response.json()
            return {"status": response.status_code,
                    "problems": {t["name"]: t.get("problems", []) for t in body.get("triggers", []) if t.get("problems")},
                    "lag": {t["name"]: t.get("lag") for t in body.get("triggers", [])}}
        except (httpx.HTTPError, ValueError) as error:
            return {"error": type(error).__name__}


class Metrics:
    """A server's metrics, from Prometheus' text format: `value(name, **labels)` is the sum of
    the samples of `name` whose labels include those given (0 when there is none)."""

    SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
    LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')

    def __init__(self, text):
        self.samples = []  # (name, {label: value}, value)
        for line in text.splitlines():
            match = self.SAMPLE.match(line)
            if not match or line.startswith("#"):
                continue
            try:
                value = float(match.group(3))
            except ValueError:
                continue
            self.samples.append((match.group(1), dict(self.LABEL.findall(match.group(2) or "")), value))

    def value(self, name, **labels):
        return sum(v for n, ls, v in self.samples if n == name and all(ls.get(k) == w for k, w in labels.items()))


def interesting_log_lines(text, limit=12):
    """The warning, error and critical lines of a server log, grouped by their message."""
    counts = {}
    for line in text.splitlines():
        if not re.search(r"\b(warning|error|critical)\b", line):
            continue
        # swift-log's default handler: `<time> <level> <label> : [metadata] message`
        key = re.sub(r"^\S+\s+", "", line)  # drop the timestamp
        key = re.sub(r"\d+(\.\d+)?", "N", key)[:220]
        counts[key] = counts.get(key, 0) + 1
    return [f"{n}× {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])][:limit]


# ---------------------------------------------------------------------------------------------
# RChat over HTTP

async def register(instance, email):
    response = await instance.http.post("/v1/auth/register", json={"email": email, "password": "correct horse battery"})
    if response.status_code != 201:
        raise RuntimeError(f"register {email}: {response.status_code} {response.text}")
    return response.json()


def partition_path(partition, suffix):
    return f"/v1/partitions/{urllib.parse.quote(partition, safe='')}/{suffix}"


def answer_code(response):
    """`ack` for a 200, else the error or rejection code the body names (or its first characters)."""
    if response.status_code == 200:
        return "ack"
    try:
        body = response.json()
        return body.get("error", {}).get("code") or body.get("code") or response.text[:80]
    except ValueError:
        return response.text[:80]


async def post_upload(instance, token, partition, payload, timeout=90.0):
    """One HTTP upload; returns (status or None, code, seconds, body or None). `status` None
    means no answer: the client's timeout or a transport failure (named in `code`)."""
    started = time.monotonic()
    try:
        response = await instance.http.post(partition_path(partition, "uploads"), json=payload,
                                            headers={"Authorization": f"Bearer {token}"}, timeout=timeout)
    except httpx.TimeoutException:
        return None, "no answer (client timeout)", round(time.monotonic() - started, 2), None
    except httpx.HTTPError as error:
        return None, f"transport: {type(error).__name__}", round(time.monotonic() - started, 2), None
    try:
        body = response.json()
    except ValueError:
        body = None
    return response.status_code, answer_code(response), round(time.monotonic() - started, 2), body


async def pull(instance, token, partition, cursor=None):
    """One page of GET /v1/partitions/P/changes (raises for a non-200 answer)."""
    params = {"cursor": cursor} if cursor else {}
    response = await instance.http.get(partition_path(partition, "changes"), params=params,
                                       headers={"Authorization": f"Bearer {token}"})
    response.raise_for_status()
    return response.json()


class Copy:
    """A client's copy of one partition, from `changes` messages of a session or pages of an
    HTTP pull."""

    def __init__(self, cursor=None):
        self.objects = {}
        self.cursor = cursor
        self.resets = 0
        self.applied = 0  # batches or pages

    def apply(self, message):
        self.applied += 1
        if message.get("reset"):
            self.objects.clear()
            self.resets += 1
        for obj in message.get("objects", []):
            key = (obj["collection"], obj["id"])
            if obj.get("deleted"):
                self.objects.pop(key, None)
            else:
                self.objects[key] = obj.get("body")
        self.cursor = message.get("cursor", self.cursor)

    def ids(self, collection):
        """The ids of the copy's objects of `collection`."""
        return {key[1] for key in self.objects if key[0] == collection}


async def pull_all(instance, token, partition, cursor=None):
    """Pages of GET /v1/partitions/P/changes from `cursor` (none: a snapshot) until one is up
    to date: a Copy of what they held, its cursor the last page's."""
    copy = Copy(cursor)
    while True:
        page = await pull(instance, token, partition, copy.cursor)
        copy.apply(page)
        if page["upToDate"]:
            return copy


async def share_conversation(instance, room, display_name, users, timeout=30):
    """An RChat conversation `room` of `users` ({email: user from `register`}): the first
    creates it in its User record once each user's record exists (RChat's trigger makes them),
    the others invited; returns when each of them may read `conversation=ROOM`."""
    async def has_record(user):
        copy = await pull_all(instance, user["accessToken"], f"user={user['userId']}")
        return ("User", user["userId"]) in copy.objects
    for user in users.values():
        await eventually(f"{user['userId']}'s User record", lambda u=user: has_record(u), timeout, interval=0.05)
    (owner_email, owner), *_ = users.items()
    members = [{"userName": email, "membershipStatus": "Membership active" if email == owner_email
                else "User added, but invite pending"} for email in users]
    status, code, _, _ = await post_upload(
        instance, owner["accessToken"], f"user={owner['userId']}",
        {"requestId": f"create-{room}", "operations": [
            {"op": "arrayAppend", "collection": "User", "id": owner["userId"], "path": "conversations",
             "value": {"id": room, "displayName": display_name, "unreadCount": 0, "members": members}}]})
    if status != 200:
        raise CheckFailed(f"{owner_email} could not create the conversation {room}: {status} {code}")

    async def member(user):
        await pull(instance, user["accessToken"], f"conversation={room}")  # 403 until the membership trigger ran
        return True
    for email, user in users.items():
        await eventually(f"{email} to be a member of {room}", lambda u=user: member(u), timeout, interval=0.05)
