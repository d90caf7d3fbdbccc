#!/usr/bin/env python3
"""The failover trial of issue 31: today's or tomorrow's `psync serve` under repeated PostgreSQL
failovers, with checks that fail for the bug they name.

    .build-ha-venv/bin/python scripts/ha/trial.py [--psync PATH] [--sync] [--faults N] [--seed S]
        [--dir DIR] [--base-port 29400] [--users 4] [--conversations 3] [--writers 4]
        [--replicas] [--no-lost-tail] [--keep]

Starts three PostgreSQL nodes under Patroni and etcd with HAProxy in front (scripts/ha/cluster.py;
--sync: Patroni's synchronous_mode), two instances A and B of `psync serve` on HAProxy's primary
port (with --replicas, B also reads snapshots and catch-ups from the nodes that are replicas
now: every node's own port as a --replica-url), RChat users and conversations (each conversation has its creator and some of the others
as members). Then, all the time:

- writers: each a user posting ChatMessages into its conversations through one instance, over
  HTTP or over a WebSocket; every upload has a requestId and is sent again, with the same
  requestId, after `unavailable`, a 5xx, no answer or a lost connection, until it is
  acknowledged or refused. Each message has a client-made id and a text no other has.
- subscribers: one WebSocket per user on one instance, subscribed to the user's conversations
  and own record, keeping what it holds (id -> version and body) and its cursor per partition,
  dropping its copy on `reset`; at each fault one of them goes offline for a few seconds and
  resumes from its cursors.
- a watcher that asks HAProxy's primary port every 0.2 s for a writable primary.

Faults come from a schedule drawn from --seed (printed): SIGKILL of the primary's postmaster,
SIGSTOP of the primary's PostgreSQL shorter than Patroni's TTL (no failover) and longer (a
failover), and `patronictl switchover`; half of them (rounded up) are kills. Each fault waits
until the cluster is whole again (every replica streaming on the primary's timeline).

At the end, with the writers stopped, the checks (each a PASS or a FAIL naming the bug):
acknowledged = stored once (counted in PostgreSQL per conversation, and in the change events);
no upload without an answer and no error but `unavailable`; every member's unreadCount equal to
the messages of the conversation (RChat's trigger counts every message for every member); every
subscriber holding exactly what PostgreSQL holds for its partitions; no trigger stuck.

With asynchronous replication (unless --no-lost-tail) a lost tail comes next: the primary's
walsenders are stopped (SIGSTOP) so no replica receives WAL, a few uploads to one conversation
are acknowledged and seen by its subscribers, one of them goes offline, the primary is killed
(postmaster, then the stopped walsenders) and a replica without those commits is promoted; the
new primary then commits more messages to that conversation than were lost, and the offline
subscriber resumes from its cursor. A subscriber that keeps objects the new primary never had
(phantoms) or misses objects the new primary committed at versions it had seen from the lost
history fails the trial: the server cannot tell those cursors apart today.

Last, SIGTERM must stop each instance with status 0 within --stop-bound seconds.

The report (figures per fault and per instance, every check) is printed and written to
DIR/trial-report.json; raw uploads and subscriber events to DIR/trial-raw.json. Exit status 0
when every check passed, 1 when one failed, 2 when the trial itself could not run.
"""

import argparse
import asyncio
import base64
import json
import os
import random
import re
import secrets
import shutil
import signal
import sys
import tempfile
import threading
import time

import psycopg2
import websockets

import cluster as ha
from harness import Instance, cluster, connect, eventually, interesting_log_lines, messages, post_upload, register

T0 = time.monotonic()
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
KINDS = ("kill", "switchover", "freeze-short", "freeze-long")
RETRYABLE_CODES = {"unavailable", "internal", "rate_limited"}


LOST_TAIL_CAUSE = (
    "the server cannot recognise a cursor from the lost history: the epoch is replicated "
    "(Sources/SyncStorage/Changes/CursorPosition.swift:7-8, cached for the process in "
    "Sources/SyncStorage/Objects/ObjectStore.swift:104-112), a cursor is reset only while ahead of the partition "
    "(Sources/SyncStorage/Changes/ObjectStore+Changes.swift:106), and a live feed reads only versions above its "
    "position (Sources/SyncServer/Feeds/FeedTable.swift:106-110)")
TRIGGER_AHEAD_CAUSE = (
    "a trigger runner that held its lease across the failover keeps its position from the lost history "
    "(Sources/SyncTriggers/TriggerRunnerStateMachine.swift:154, position = max(position, stored)) and its lease "
    "renewal stores it on the new primary (:280, :289, :300 pass it; Sources/SyncStorage/Triggers/TriggerLedger.swift:89, "
    "GREATEST(position, passed)), so the new primary's events numbered below it are never handled")


def now():
    return time.monotonic() - T0


def say(msg):
    print(f"[trial {now():7.2f}] {msg}", file=sys.stderr, flush=True)


def default_psync():
    for candidate in (os.environ.get("PSYNC_BIN"), os.path.join(ROOT, ".build", "release", "psync"),
                      os.path.join(ROOT, ".build", "debug", "psync")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def schedule(count, rng):
    """`count` fault kinds: half of them (rounded up) kills, the others switchovers, short and
    long freezes in turn (their order drawn), all shuffled."""
    kills = (count + 1) // 2
    others = list(KINDS[1:])
    rng.shuffle(others)
    kinds = ["kill"] * kills + [others[i % len(others)] for i in range(count - kills)]
    rng.shuffle(kinds)
    return kinds


def longest_gap(times, start, end):
    """The longest stretch in [start, end] without one of `times` (sorted): (seconds, its
    beginning, its end or None when it lasts until `end`)."""
    gap, began, ended, previous = 0.0, start, None, start
    for t in times:
        if t < start:
            continue
        if t > end:
            break
        if t - previous > gap:
            gap, began, ended = t - previous, previous, t
        previous = t
    if end - previous > gap:
        gap, began, ended = end - previous, previous, None
    return round(gap, 2), began, ended


# ---------------------------------------------------------------------------------------------
# PostgreSQL, as the superuser, outside the servers

class Database:
    def __init__(self, state):
        self.state = state
        self.password = state["passwords"]["superuser"]
        self.primary_port = state["ports"]["haproxy_primary"]

    def query(self, sql, params=None, port=None, database="psync", timeout=10):
        connection = psycopg2.connect(host="127.0.0.1", port=port or self.primary_port, user="postgres",
                                      password=self.password, dbname=database, connect_timeout=max(2, int(timeout)),
                                      options=f"-c statement_timeout={int(timeout * 1000)}")
        try:
            connection.autocommit = True
            with connection.cursor() as cursor:
                cursor.execute(sql, params)
                return cursor.fetchall() if cursor.description else []
        finally:
            connection.close()

    async def run(self, sql, params=None, port=None, timeout=10):
        return await asyncio.to_thread(self.query, sql, params, port, "psync", timeout)

    def node_port(self, node):
        return self.state["nodes"][node]["pg_port"]


class PrimaryWatcher(threading.Thread):
    """Asks HAProxy's primary port for a writable primary every 0.2 s (a new connection each
    time, as a client arriving then would): samples of (time, primary's port or None)."""

    def __init__(self, database):
        super().__init__(daemon=True)
        self.database = database
        self.samples = []
        self.halt = threading.Event()

    def run(self):
        while not self.halt.is_set():
            t = now()
            port = None
            try:
                rows = self.database.query("SELECT pg_is_in_recovery(), inet_server_port()", database="postgres",
                                           timeout=1)
                if rows and not rows[0][0]:
                    port = rows[0][1]
            except psycopg2.Error:
                pass
            self.samples.append((t, port))
            self.halt.wait(0.2)

    def without_primary(self, start, end):
        """(seconds, last moment a primary answered before, first moment one answered again)."""
        return longest_gap([t for t, port in self.samples if port], start, end)


# ---------------------------------------------------------------------------------------------
# uploads: over HTTP, or over a WebSocket one at a time

class Message:
    def __init__(self, message_id, request_id, conversation, writer, text, phase):
        self.id = message_id
        self.request_id = request_id
        self.conversation = conversation
        self.writer = writer
        self.text = text
        self.phase = phase
        self.attempts = []
        self.final = None        # "ack", "refused <code>", "gave up"
        self.acked_at = None

    def payload(self, author):
        return {"requestId": self.request_id,
                "operations": [{"op": "put", "collection": "ChatMessage", "id": self.id,
                                "body": {"author": author, "text": self.text, "location": [],
                                         "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())}}]}

    def raw(self):
        return {"id": self.id, "request": self.request_id, "conversation": self.conversation, "writer": self.writer,
                "phase": self.phase, "final": self.final, "attempts": self.attempts}


def answer_kind(code, status):
    if code == "ack":
        return "ack"
    if status is None:
        return "retry"
    if code in RETRYABLE_CODES or (isinstance(status, int) and status >= 500):
        return "retry"
    return "refused"


class HttpChannel:
    def __init__(self, instance, user):
        self.instance = instance
        self.user = user
        self.label = f"{instance.name}/http"

    async def send(self, partition, payload):
        status, code, seconds, _ = await post_upload(self.instance, self.user.token, partition, payload, timeout=60.0)
        return status, code

    async def close(self):
        pass


class WebSocketChannel:
    """Uploads over one WebSocket (presence off), one at a time: the answer to an upload is the
    next ack, rejected or error the server sends (uploads are answered in order)."""

    def __init__(self, instance, user):
        self.instance = instance
        self.user = user
        self.label = f"{instance.name}/ws"
        self.ws = None
        self.last_used = 0.0

    async def connect(self):
        url = f"ws://127.0.0.1:{self.instance.port}/v1/sync?presence=off"
        self.ws = await websockets.connect(url, additional_headers={"Authorization": f"Bearer {self.user.token}"},
                                           max_size=None, open_timeout=5, ping_interval=None, close_timeout=2)

    async def close(self):
        if self.ws is not None:
            try:
                await self.ws.close()
            except Exception:  # noqa: BLE001 - closing a broken socket
                pass
            self.ws = None

    async def send(self, partition, payload, timeout=60.0):
        # a socket idle for long would meet the server's 60 s idle timeout: start afresh
        if self.ws is not None and time.monotonic() - self.last_used > 20:
            await self.close()
        deadline = time.monotonic() + timeout
        try:
            if self.ws is None:
                await self.connect()
            self.last_used = time.monotonic()
            await self.ws.send(json.dumps({"type": "upload", "partition": partition, **payload}))
            while True:
                raw = await asyncio.wait_for(self.ws.recv(), max(0.01, deadline - time.monotonic()))
                self.last_used = time.monotonic()
                message = json.loads(raw)
                kind = message.get("type")
                if kind == "ack" and message.get("requestId") == payload["requestId"]:
                    return "ws", "ack"
                if kind == "rejected" and message.get("requestId") == payload["requestId"]:
                    return "ws", message.get("code")
                if kind == "error":
                    return "ws", message.get("code")
        except asyncio.TimeoutError:
            await self.close()
            return None, "no answer (client timeout)"
        except websockets.ConnectionClosed as closed:
            self.ws = None
            code = closed.rcvd.code if closed.rcvd else None
            return None, f"transport: closed {code}"
        except (OSError, websockets.InvalidHandshake, websockets.InvalidURI) as error:
            await self.close()
            return None, f"transport: {type(error).__name__}"


async def deliver(trial, message, channel, author, give_up_after=150.0):
    """Sends `message` until it is acknowledged or refused (or give_up_after seconds pass)."""
    started = now()
    partition = f"conversation={message.conversation}"
    payload = message.payload(author)
    while True:
        t = now()
        status, code = await channel.send(partition, payload)
        message.attempts.append({"via": channel.label, "start": round(t, 3), "end": round(now(), 3),
                                 "status": status, "code": code})
        kind = answer_kind(code, status)
        if kind == "ack":
            message.final = "ack"
            message.acked_at = now()
            return
        if kind == "refused":
            message.final = f"refused {code}"
            return
        if now() - started > give_up_after:
            message.final = "gave up"
            return
        await asyncio.sleep(0.2)


class Writer:
    def __init__(self, trial, index, user, channel, conversations, rng, pace):
        self.trial = trial
        self.index = index
        self.user = user
        self.channel = channel
        self.conversations = conversations
        self.rng = rng
        self.pace = pace
        self.busy = False
        self.count = 0

    async def run(self):
        while not self.trial.stopping.is_set():
            await self.trial.writing.wait()
            if self.trial.stopping.is_set():
                break
            self.busy = True
            try:
                self.count += 1
                message = self.trial.new_message(f"w{self.index}", self.rng.choice(self.conversations), "faults",
                                                  self.count)
                await deliver(self.trial, message, self.channel, self.user.email)
            finally:
                self.busy = False
            await asyncio.sleep(self.pace * (0.5 + self.rng.random()))
        await self.channel.close()


# ---------------------------------------------------------------------------------------------
# subscribers

class Subscriber:
    """A user's WebSocket on one instance, subscribed to some partitions, keeping what it holds
    from the changes it received, and resuming from its cursors after each reconnection."""

    def __init__(self, trial, name, user, instance_name, partitions):
        self.trial = trial
        self.name = name
        self.user = user
        self.instance_name = instance_name
        self.partitions = list(partitions)
        self.held = {p: {} for p in self.partitions}       # partition -> id -> (version, body)
        self.cursors = {p: None for p in self.partitions}
        self.up_to_date = {p: False for p in self.partitions}
        self.events = []                                     # (time, text)
        self.resets = []                                     # (time, partition)
        self.online = asyncio.Event()
        self.online.set()
        self.connected = False
        self.connections = 0

    def note(self, text):
        self.events.append((round(now(), 2), text))

    def apply(self, message):
        partition = message.get("partition")
        if partition not in self.held:
            return
        if message.get("reset"):
            self.held[partition] = {}
            self.resets.append((round(now(), 2), partition))
        for obj in message.get("objects", []):
            if obj.get("deleted"):
                self.held[partition].pop(obj["id"], None)
            else:
                self.held[partition][obj["id"]] = (obj.get("version"), obj.get("body"))
        if message.get("cursor"):
            self.cursors[partition] = message["cursor"]
        if message.get("upToDate"):
            self.up_to_date[partition] = True

    async def run(self):
        while not self.trial.stopping.is_set():
            await self.online.wait()
            if self.trial.stopping.is_set():
                return
            instance = self.trial.instances[self.instance_name]
            try:
                async with connect(instance.port, self.user.token) as ws:
                    self.connected = True
                    self.connections += 1
                    for partition in self.partitions:
                        self.up_to_date[partition] = False
                        await ws.send(json.dumps({"type": "subscribe", "partition": partition,
                                                  "cursor": self.cursors[partition]}))
                    going = lambda: not self.trial.stopping.is_set() and self.online.is_set()  # noqa: E731
                    async for message in messages(ws, going, poll=0.5):
                        kind = message.get("type")
                        if kind == "changes":
                            self.apply(message)
                        elif kind == "error":
                            self.note(f"error {message.get('code')} {message.get('partition') or ''}: "
                                      f"{message.get('message', '')[:120]}")
                            partition = message.get("partition")
                            if partition in self.cursors:
                                # the subscription does not exist: ask again from the cursor
                                await asyncio.sleep(1.0)
                                await ws.send(json.dumps({"type": "subscribe", "partition": partition,
                                                          "cursor": self.cursors[partition]}))
                        elif kind == "unsubscribed":
                            self.note(f"unsubscribed {message.get('partition')}: {message.get('code')}")
            except websockets.ConnectionClosed as closed:
                code = closed.rcvd.code if closed.rcvd else None
                self.note(f"closed by the server: {code}")
            except (OSError, websockets.InvalidHandshake, asyncio.TimeoutError) as error:
                self.note(f"connect failed: {type(error).__name__}")
            self.connected = False
            if not self.trial.stopping.is_set() and self.online.is_set():
                await asyncio.sleep(0.5)

    async def offline_for(self, delay, seconds):
        await asyncio.sleep(delay)
        self.online.clear()
        self.note(f"offline for {seconds:.1f} s")
        await asyncio.sleep(seconds)
        self.note("online again, resuming from its cursors")
        self.online.set()

    def all_up_to_date(self):
        return self.connected and all(self.up_to_date.values())


# ---------------------------------------------------------------------------------------------
# the trial

class User:
    def __init__(self, index, email, answer):
        self.index = index
        self.email = email
        self.id = answer["userId"]
        self.token = answer["accessToken"]
        self.partition = f"user={self.id}"
        self.conversations = []


class Trial:
    def __init__(self, args, directory):
        self.args = args
        self.dir = directory
        self.rng = random.Random(args.seed)
        self.secret = base64.b64encode(secrets.token_bytes(48)).decode()
        self.run_id = secrets.token_hex(3)
        self.state = None
        self.db = None
        self.watcher = None
        self.instances = {}
        self.users = []
        self.conversations = {}        # id -> [user]
        self.messages = {}             # id -> Message
        self.writers = []
        self.subscribers = []
        self.ready_log = {}
        self.triggers_ahead = []
        self.triggers_ahead_checked = 0
        self.lost_acked = set()
        self.writing = asyncio.Event()
        self.stopping = asyncio.Event()
        self.tasks = []
        self.checks = []
        self.report = {"seed": args.seed, "sync": args.sync, "command": " ".join(sys.argv), "faults": []}

    # --- bookkeeping ---------------------------------------------------------------------------

    def new_message(self, writer, conversation, phase, n):
        message = Message(f"m-{self.run_id}-{writer}-{n}", f"r-{self.run_id}-{writer}-{n}", conversation, writer,
                          f"{writer} #{n} in {conversation} ({self.run_id}, {phase})", phase)
        self.messages[message.id] = message
        return message

    def check(self, name, ok, detail, cause=None):
        entry = {"check": name, "result": "PASS" if ok else "FAIL", "detail": detail}
        if cause and not ok:
            entry["where"] = cause
        self.checks.append(entry)
        say(f"{entry['result']} {name}: {detail}")
        return ok

    def attempts(self, start=None, end=None):
        """Every upload attempt (with its message) that ran at some moment in [start, end]."""
        for message in self.messages.values():
            for attempt in message.attempts:
                if (start is None or attempt["end"] >= start) and (end is None or attempt["start"] <= end):
                    yield message, attempt

    def outcomes(self, start=None, end=None):
        """Counts of the answers uploads got, per channel: ack, unavailable, other errors, none."""
        result = {}
        for _, attempt in self.attempts(start, end):
            entry = result.setdefault(attempt["via"], {"ack": 0, "unavailable": 0, "other": {}, "no answer": 0,
                                                      "slowest_ack": 0.0})
            code = attempt["code"]
            seconds = round(attempt["end"] - attempt["start"], 2)
            if code == "ack":
                entry["ack"] += 1
                entry["slowest_ack"] = max(entry["slowest_ack"], seconds)
            elif code == "unavailable":
                entry["unavailable"] += 1
            elif attempt["status"] is None and code.startswith("no answer"):
                entry["no answer"] += 1
            else:
                entry["other"][code] = entry["other"].get(code, 0) + 1
        return result

    # --- background ----------------------------------------------------------------------------

    async def watch_ready(self, name):
        last = None
        log = self.ready_log.setdefault(name, [])
        while not self.stopping.is_set():
            instance = self.instances[name]
            if not instance.alive():
                log.append((round(now(), 2), "exited"))
                return
            try:
                status = await instance.ready(timeout=3.0)
            except Exception as error:  # noqa: BLE001 - any failure is an answer here
                status = type(error).__name__
            if status != last:
                log.append((round(now(), 2), status))
                last = status
            await asyncio.sleep(0.2)

    async def watch_trigger_positions(self):
        """Samples every trigger's stored position against the last numbered event (one
        statement, one snapshot): a position ahead of the event log is never right."""
        while not self.stopping.is_set():
            try:
                rows = await self.db.run("SELECT t.name, t.position, s.last_seq FROM psync_triggers t, psync_sequencer s",
                                         timeout=2)
            except Exception:  # noqa: BLE001 - the primary may be away
                rows = []
            t = round(now(), 2)
            for name, position, last in rows:
                if position > last:
                    self.triggers_ahead.append({"at": t, "trigger": name, "position": position, "last_numbered": last})
            await asyncio.sleep(0.25)

    def fault_at(self, t):
        """The fault whose outage `t` falls in or just precedes (a write acknowledged shortly
        before a kill is the one it can lose)."""
        for f in self.report["faults"]:
            if t <= f["t0"] + f["seconds"]["until_whole"]:
                return f"{f['number']} ({f['fault']})"
        return "the lost tail" if self.report.get("lost_tail") else "none"

    async def pause_writers(self, timeout=180):
        self.writing.clear()
        await eventually("the writers to finish their uploads", lambda: asyncio.sleep(
            0, result=not any(w.busy for w in self.writers)), timeout)

    # --- setup -----------------------------------------------------------------------------------

    async def setup(self):
        say(f"starting the cluster in {self.dir} (base port {self.args.base_port}"
            f"{', synchronous mode' if self.args.sync else ''})")
        started = await cluster("start", self.dir, "--base-port", str(self.args.base_port), "--ttl", str(self.args.ttl),
                                *(["--sync"] if self.args.sync else []))
        self.state = ha.load_state(self.dir)
        self.db = Database(self.state)
        self.report["cluster"] = {"primary": started["primary"], "start_seconds": started["seconds"],
                                  "ttl": self.args.ttl}
        self.watcher = PrimaryWatcher(self.db)
        self.watcher.start()
        log_dir = os.path.join(self.dir, "logs")
        env = {"PSYNC_ACCESS_TOKEN_TTL": "86400", "PSYNC_REGISTRATIONS_PER_ADDRESS": "1000"}
        for name in ("A", "B"):
            own = dict(env)
            if name == "B" and self.args.replicas:
                # B reads snapshots and catch-ups from whichever nodes are replicas (the primary's
                # own URL is out of reads until it is demoted); A reads everything from the primary
                own.update(PSYNC_REPLICA_URLS=",".join(self.state["node_urls"]), PSYNC_REPLICA_POLL_MS="100")
            self.instances[name] = Instance(name, self.args.psync, self.state["database_url"], log_dir, self.secret,
                                            extra_env=own)
        for name in ("A", "B"):
            await self.instances[name].wait_ready()
        say(f"A and B ready (ports {self.instances['A'].port}, {self.instances['B'].port})")

        a = self.instances["A"]
        for i in range(self.args.users):
            email = f"u{i}-{self.run_id}@example.com"
            self.users.append(User(i, email, await register(a, email)))

        async def records_made():
            # each user's User record, made by a trigger after the registration
            rows = await self.db.run("SELECT id FROM psync_objects WHERE collection = 'User' AND body IS NOT NULL")
            return {u.id for u in self.users} <= {row[0] for row in rows}
        await eventually("every user's User record", records_made, 60)
        # conversations: a creator and, drawn, at least one other member
        for c in range(self.args.conversations):
            creator = self.users[c % len(self.users)]
            others = [u for u in self.users if u is not creator]
            members = [creator] + self.rng.sample(others, self.rng.randint(1, len(others)))
            conversation = f"c{c}-{self.run_id}"
            self.conversations[conversation] = members
            entry = {"id": conversation, "displayName": f"trial {c}", "unreadCount": 0,
                     "members": [{"userName": u.email,
                                  "membershipStatus": "Membership active" if u is creator else
                                  "User added, but invite pending"} for u in members]}
            answer = await post_upload(a, creator.token, creator.partition, {
                "requestId": f"create-{conversation}",
                "operations": [{"op": "arrayAppend", "collection": "User", "id": creator.id, "path": "conversations",
                                "value": entry}]})
            if answer[1] != "ack":
                raise RuntimeError(f"creating {conversation}: {answer}")
            for u in members:
                u.conversations.append(conversation)

        async def memberships_made():
            rows = await self.db.run("SELECT id, body FROM psync_objects WHERE collection = 'Membership'")
            made = {row[0]: set(row[1].get("members", [])) for row in rows}
            return all({u.id for u in members} <= made.get(c, set()) for c, members in self.conversations.items())
        await eventually("every member to be in its conversations", memberships_made, 60)
        self.report["setup"] = {"users": len(self.users),
                                "conversations": {c: [u.email for u in m] for c, m in self.conversations.items()}}
        say(f"{len(self.users)} users, {len(self.conversations)} conversations: "
            + ", ".join(f"{c} ({len(m)} members)" for c, m in self.conversations.items()))

    async def start_load(self):
        names = ["A", "B"]
        posting = [u for u in self.users if u.conversations]  # a user drawn into no conversation has none to post to
        for i in range(self.args.writers):
            user = posting[i % len(posting)]
            instance = self.instances[names[(i // 2) % 2]]
            channel = (HttpChannel if i % 2 == 0 else WebSocketChannel)(instance, user)
            self.writers.append(Writer(self, i, user, channel, user.conversations, random.Random(self.rng.random()),
                                       self.args.pace))
        for user in self.users:
            subscriber = Subscriber(self, f"s-{user.email.split('@')[0]}", user, names[user.index % 2],
                                    [f"conversation={c}" for c in user.conversations] + [user.partition])
            self.subscribers.append(subscriber)
        self.tasks += [asyncio.create_task(self.watch_ready(n)) for n in names]
        self.tasks.append(asyncio.create_task(self.watch_trigger_positions()))
        self.tasks += [asyncio.create_task(s.run()) for s in self.subscribers]
        await eventually("every subscriber to be up to date", lambda: asyncio.sleep(
            0, result=all(s.all_up_to_date() for s in self.subscribers)), 60)
        self.writing.set()
        self.tasks += [asyncio.create_task(w.run()) for w in self.writers]
        say(f"{len(self.writers)} writers ({', '.join(w.channel.label for w in self.writers)}), "
            f"{len(self.subscribers)} subscribers")

    # --- faults ------------------------------------------------------------------------------------

    def fault_command(self, kind):
        ttl = self.args.ttl
        return {"kill": ["kill-primary", self.dir],
                "switchover": ["switchover", self.dir],
                "freeze-short": ["freeze-primary", self.dir, str(round(ttl * 0.4, 1))],
                "freeze-long": ["freeze-primary", self.dir, str(ttl + 8)]}[kind]

    async def acked_through_each_instance(self, since, timeout=90):
        """Waits until an upload through each instance that started after `since` is acknowledged;
        returns {instance: seconds after since or None}."""
        def first(name):
            ends = [a["end"] for _, a in self.attempts(since) if a["code"] == "ack" and a["start"] >= since
                    and a["via"].startswith(name + "/")]
            return min(ends) if ends else None
        try:
            await eventually("uploads through every instance to be acknowledged again", lambda: asyncio.sleep(
                0, result=all(first(n) is not None for n in self.instances)), timeout)
        except TimeoutError:
            pass
        return {n: (round(first(n) - since, 2) if first(n) is not None else None) for n in self.instances}

    async def run_fault(self, number, kind):
        await cluster("wait-healthy", self.dir, "--timeout", "180")
        before = await cluster("status", self.dir)
        old = before["primary"]
        offsets = {n: i.log_size() for n, i in self.instances.items()}
        ready_marks = {n: len(v) for n, v in self.ready_log.items()}
        say(f"=== fault {number}: {kind} of {old}")
        t0 = now()
        # one subscriber goes offline for a while, from a moment around the fault
        subscriber = self.rng.choice(self.subscribers)
        self.tasks.append(asyncio.create_task(subscriber.offline_for(self.rng.uniform(0, 3), self.rng.uniform(1, 6))))
        fault_result = await cluster(*self.fault_command(kind))
        t_fault = now()
        wait = ["wait-primary", self.dir, "--timeout", "120"] + (["--other-than", old] if kind in ("kill", "switchover")
                                                                  else [])
        new = (await cluster(*wait, check=False) or {}).get("primary")
        t_primary = now()
        acked_again = await self.acked_through_each_instance(t_primary)
        healthy = await cluster("wait-healthy", self.dir, "--timeout", "180", check=False)
        t_whole = now()
        after = await cluster("status", self.dir)
        # from the last moment a writable primary answered before the outage (a switchover
        # works for a while before the old primary goes)
        without, lost_at, back_at = self.watcher.without_primary(t0, t_whole)
        per_instance = {}
        for name in self.instances:
            acks = sorted(a["end"] for _, a in self.attempts(t0 - 1, t_whole) if a["code"] == "ack"
                          and a["via"].startswith(name + "/"))
            gap, began, ended = longest_gap(acks, t0, t_whole)
            since = lost_at if without >= 1.0 else began
            per_instance[name] = {"longest_stretch_without_an_ack": gap,
                                  "acked_again_after": round(ended - since, 2) if ended is not None else None,
                                  "first_ack_of_an_upload_started_after_the_primary_came_back": acked_again[name],
                                  "ready": [(round(t - t0, 2), s) for t, s in self.ready_log[name][ready_marks[name]:]]}
        result = {
            "fault": kind, "number": number, "t0": round(t0, 2),
            "command": "scripts/ha/cluster.py " + " ".join(self.fault_command(kind)),
            "fault_result": fault_result, "primary": f"{old} -> {new}",
            "timeline": f"{before['timeline']} -> {after['timeline']}",
            "seconds": {"fault_command": round(t_fault - t0, 2), "until_haproxy_routes_a_primary": round(t_primary - t0, 2),
                        "without_a_primary": without, "primary_lost_at": round(lost_at - t0, 2),
                        "until_whole": round(t_whole - t0, 2)},
            "whole_again": bool(healthy),
            "instances": per_instance,
            "uploads": self.outcomes(t0, t_whole),
            "offline_subscriber": subscriber.name,
            "triggers": {n: await i.trigger_health() for n, i in self.instances.items() if i.alive()},
            "log": {n: interesting_log_lines(i.log_since(offsets[n]), limit=8) for n, i in self.instances.items()},
        }
        self.report["faults"].append(result)
        say(f"{kind}: {old} -> {new}, {without} s without a primary, uploads acknowledged again after "
            + ", ".join(f"{n} {v['acked_again_after']} s" for n, v in per_instance.items())
            + f", whole after {result['seconds']['until_whole']} s")
        if not healthy:
            raise RuntimeError(f"the cluster did not become whole again after {kind}")

    # --- checks --------------------------------------------------------------------------------------

    async def stored_messages(self):
        rows = await self.db.run("SELECT partition, id, body->>'text' FROM psync_objects "
                                 "WHERE collection = 'ChatMessage' AND body IS NOT NULL")
        stored = {}
        for partition, message_id, text in rows:
            stored.setdefault(partition.split("=", 1)[1], {})[message_id] = text
        return stored

    async def check_uploads(self, label, lost_tail_ids=()):
        """Acknowledged = stored once; nothing refused but applied; every upload answered."""
        stored = await self.stored_messages()
        stored_ids = {i for ids in stored.values() for i in ids}
        ours = {m.id: m for m in self.messages.values()}
        acked = {i for i, m in ours.items() if m.final == "ack"}
        per_conversation = {c: {"acked": len([m for m in ours.values() if m.conversation == c and m.final == "ack"]),
                                "stored": len(stored.get(c, {}))} for c in self.conversations}
        lost = sorted(i for i in acked - stored_ids)
        self.lost_acked = set(lost)
        expected_lost = [i for i in lost if i in set(lost_tail_ids)]
        other_lost = [i for i in lost if i not in set(lost_tail_ids)]
        unknown = sorted(stored_ids - set(ours))
        refused_applied = sorted(i for i in stored_ids & set(ours) if ours[i].final.startswith("refused"))
        wrong_room = sorted(i for c, ids in stored.items() for i in ids if i in ours and ours[i].conversation != c)
        texts = {}
        for ids in stored.values():
            for i, text in ids.items():
                texts.setdefault(text, []).append(i)
        same_text = {t: ids for t, ids in texts.items() if len(ids) > 1}
        events = await self.db.run("SELECT object_id, count(*), array_agg(operation ORDER BY id) FROM psync_events "
                                   "WHERE collection = 'ChatMessage' GROUP BY object_id")
        twice = {row[0]: row[2] for row in events if row[1] > 1 and row[0] in stored_ids}
        self.report.setdefault("uploads", {})[label] = {
            "messages": len(ours), "acked": len(acked), "stored": len(stored_ids & set(ours)),
            "per_conversation": per_conversation, "acked_but_lost": lost, "lost_tail": expected_lost,
            "stored_without_ack": sorted(i for i in stored_ids & set(ours) if ours[i].final != "ack"),
            "final": {k: len([m for m in ours.values() if m.final == k]) for k in {m.final for m in ours.values()}}}
        if self.args.sync:
            self.check(f"{label}: acknowledged uploads stored", not lost,
                       f"{len(acked)} acknowledged, {len(lost)} missing from the new primary"
                       + (f": {lost[:10]}" if lost else ""),
                       "synchronous replication lost acknowledged writes (Patroni / PostgreSQL configuration)")
        else:
            # asynchronous replication may lose what the replicas had not received: allowed,
            # as long as no client keeps it (the subscriber checks)
            where = {}
            for i in other_lost:
                key = self.fault_at(ours[i].acked_at)
                where[key] = where.get(key, 0) + 1
            self.report["uploads"][label]["lost_per_fault"] = where
            self.check(f"{label}: acknowledged uploads stored (or lost with an asynchronous tail)", True,
                       f"{len(acked)} acknowledged, "
                       + (f"{len(expected_lost)} lost with the induced lost tail, " if lost_tail_ids else "")
                       + f"{len(other_lost)} lost otherwise"
                       + (f" (asynchronous replication, at fault {where}: {other_lost[:10]})" if other_lost else ""))
        self.check(f"{label}: stored once", not (unknown or wrong_room or same_text or twice or refused_applied),
                   f"{len(stored_ids & set(ours))} of the trial's messages stored; duplicate change events: {len(twice)}"
                   f"{' ' + str(dict(list(twice.items())[:5])) if twice else ''}; same text under two ids: "
                   f"{len(same_text)}; refused but stored: {len(refused_applied)}; unknown: {len(unknown)}",
                   "an upload applied twice or applied although refused: Sources/SyncStorage/Uploads/UploadCombiner.swift "
                   "(batch then one by one), Sources/SyncStorage/Objects/ObjectStore.swift (withWriteTransaction)")
        gave_up = [m.id for m in ours.values() if m.final == "gave up"]
        self.check(f"{label}: every upload answered in the end", not gave_up,
                   f"{len(gave_up)} uploads never acknowledged nor refused within 150 s of retries"
                   + (f": {gave_up[:5]}" if gave_up else ""))

    def check_answers(self):
        totals = self.outcomes()
        no_answer = sum(v["no answer"] for v in totals.values())
        other = {}
        for via, v in totals.items():
            for code, n in v["other"].items():
                other[f"{via} {code}"] = n
        unavailable = sum(v["unavailable"] for v in totals.values())
        acks = sum(v["ack"] for v in totals.values())
        slow = sorted(((round(a["end"] - a["start"], 2), a["via"], m.id) for m, a in self.attempts()
                       if a["code"] == "ack" and a["end"] - a["start"] > 5), reverse=True)
        self.report["answers"] = {"per_channel": totals, "acks_slower_than_5_s": slow[:20]}
        self.check("no upload left without an answer", no_answer == 0,
                   f"{no_answer} uploads got no answer within 60 s (of {acks} acks, {unavailable} unavailable)",
                   "a lost query on a connection ended by the failover, bounded only by the upload timeout: "
                   "Sources/SyncStorage/Uploads/UploadCombiner.swift (withDeadline), "
                   "Sources/SyncStorage/Database/PostgresClient+OpenConnection.swift")
        # what the servers logged with their `internal error`s: the SQLSTATE tells the cause
        internal = {}
        for name, instance in self.instances.items():
            # a log entry starts with its time; the SQL text it quotes may span lines
            for entry in re.split(r"\n(?=\d{4}-\d\d-\d\dT)", instance.log_since(0)):
                if "internal error" in entry:
                    state = re.search(r"sqlState: (\w+)", entry)
                    message = re.search(r"message: ([^,\]]+)", entry)
                    key = f"{state.group(1) if state else '?'} {message.group(1) if message else entry[-120:]}"
                    internal.setdefault(name, {}).setdefault(key, 0)
                    internal[name][key] += 1
        self.report["answers"]["internal_errors_logged"] = internal
        read_only = any(k.startswith("25006") for v in internal.values() for k in v)
        self.check("in-flight uploads answered `unavailable`, no other error", not other,
                   f"{unavailable} answered unavailable, other answers: {other or 'none'}"
                   + (f"; the servers logged as internal errors: {internal}" if internal else ""),
                   ("a connection reached a node still in recovery (HAProxy routes a promoting node once Patroni holds "
                    "the leader key) and 25006 read_only_sql_transaction is not classed as unavailable: "
                    "Sources/SyncStorage/Database/PSQLError+Availability.swift:14-16, "
                    "Sources/SyncServer/Uploads/UploadService.swift:150-155 (internal), and the connection goes back "
                    "to the pool: Sources/SyncStorage/Database/PostgresClient+OpenConnection.swift (endsConnection)")
                   if read_only else
                   "errors not classed as unavailable: Sources/SyncStorage/Database/PSQLError+Availability.swift:10-20, "
                   "Sources/SyncServer/Uploads/UploadService.swift:140-156 (ServerError.describe)")

    async def unread_counts(self):
        """{(user email, conversation): (unreadCount or None, messages stored)}."""
        stored = await self.stored_messages()
        # The body as the server serves it: with the counters raised beside it (migration 0020).
        rows = await self.db.run("SELECT id, body FROM psync_served_objects "
                                 "WHERE collection = 'User' AND body IS NOT NULL AND id = ANY(%s)", ([u.id for u in self.users],))
        records = {row[0]: row[1] for row in rows}
        result = {}
        for c, members in self.conversations.items():
            for u in members:
                entry = next((e for e in (records.get(u.id) or {}).get("conversations", []) if e.get("id") == c), None)
                result[(u.email, c)] = (entry.get("unreadCount") if entry else None, len(stored.get(c, {})))
        return result

    async def check_unread(self, label, timeout=60):
        t = now()
        counts = {}

        async def exact():
            nonlocal counts
            counts = await self.unread_counts()
            return all(have == want for have, want in counts.values())
        try:
            await eventually("unread counts to equal the stored messages", exact, timeout, interval=0.5)
            settled = round(now() - t, 2)
        except TimeoutError:
            settled = None
        wrong = {f"{u} {c}": {"unreadCount": have, "messages": want} for (u, c), (have, want) in counts.items()
                 if have != want}
        self.report.setdefault("unread", {})[label] = {"settled_after": settled, "wrong": wrong,
                                                       "members_checked": len(counts)}
        ahead = [a for a in self.triggers_ahead if a["trigger"] == "rchat.unread-counts"]
        if settled is None and (ahead or self.lost_acked):
            cause = (f"{'rchat.unread-counts was seen ahead of the event log: ' + str(ahead[:2]) + '; ' if ahead else ''}"
                     "after a lost tail " + TRIGGER_AHEAD_CAUSE)
        else:
            cause = ("the unread-count trigger applied a run twice or skipped one across a failover: "
                     "Sources/SyncStorage/Triggers/TriggerLedger.swift (lease fence, advance), "
                     "Sources/SyncTriggers/TriggerRunner.swift")
        self.check(f"{label}: unread counts exact", settled is not None,
                   f"{len(counts)} member counts, " + (f"equal to the stored messages after {settled} s" if settled is not None
                                                       else f"{len(wrong)} wrong after {timeout} s: {dict(list(wrong.items())[:6])}"),
                   cause)

    async def server_state(self, partitions):
        rows = await self.db.run("SELECT partition, id, version, body FROM psync_served_objects "
                                 "WHERE partition = ANY(%s) AND body IS NOT NULL", (list(partitions),))
        state = {p: {} for p in partitions}
        for partition, object_id, version, body in rows:
            state[partition][object_id] = (version, body)
        return state

    @staticmethod
    def difference(held, server):
        """What a subscriber's copy of a partition lacks, holds too much of, or holds otherwise."""
        phantom = sorted(set(held) - set(server))
        missing = sorted(set(server) - set(held))
        # each with the versions held and stored, so a report says how far behind it is
        stale = sorted(f"{i} (v{held[i][0]} < v{server[i][0]})" for i in set(held) & set(server) if held[i][0] < server[i][0])
        same_version_other_body = sorted(i for i in set(held) & set(server)
                                         if held[i][0] == server[i][0] and held[i][1] != server[i][1])
        ahead = sorted(f"{i} (v{held[i][0]} > v{server[i][0]})" for i in set(held) & set(server) if held[i][0] > server[i][0])
        return {k: v for k, v in (("phantom", phantom), ("missing", missing), ("stale", stale), ("ahead", ahead),
                                  ("same_version_other_body", same_version_other_body)) if v}

    async def convergence(self, subscribers, timeout):
        """Waits until each subscriber holds what PostgreSQL holds; returns (seconds or None,
        {subscriber: {partition: difference}}, (the server's state and each subscriber's copies last
        compared)). Whatever is said of the subscribers afterwards is said of that pair: the server
        read again may hold a later commit (a trigger still raising unread counts) the subscribers
        have not been pushed yet."""
        partitions = {p for s in subscribers for p in s.partitions}
        t = now()
        differences = {}
        compared = ({}, {})

        async def converged():
            nonlocal differences, compared
            server = await self.server_state(partitions)
            compared = (server, {s.name: {p: dict(s.held[p]) for p in s.partitions} for s in subscribers})
            differences = {}
            for s in subscribers:
                for p in s.partitions:
                    d = self.difference(s.held[p], server[p])
                    if d:
                        differences.setdefault(s.name, {})[p] = d
            return not differences and all(s.all_up_to_date() for s in subscribers)
        try:
            await eventually("the subscribers to hold what the server holds", converged, timeout, interval=0.5)
            return round(now() - t, 2), {}, compared
        except TimeoutError:
            return None, differences, compared

    async def check_subscribers(self, label):
        for s in self.subscribers:
            s.online.set()
        seconds, differences, _ = await self.convergence(self.subscribers, 30)
        summary = {name: {p: {k: len(v) for k, v in d.items()} for p, d in parts.items()}
                   for name, parts in differences.items()}
        self.report.setdefault("subscribers", {})[label] = {
            "converged_after": seconds, "differences": differences,
            "each": {s.name: {"instance": s.instance_name, "connections": s.connections, "resets": s.resets,
                              "events": s.events[-12:]} for s in self.subscribers}}
        phantoms = {i for parts in differences.values() for d in parts.values() for i in d.get("phantom", [])}
        lost_kept = phantoms & self.lost_acked
        self.check(f"{label}: subscribers converge to the server's state", seconds is not None,
                   f"{len(self.subscribers)} subscribers " + (f"hold what PostgreSQL holds after {seconds} s" if seconds is not None
                                                              else f"differ after 30 s: {summary}")
                   + (f"; they keep {len(lost_kept)} acknowledged messages the new primary lost "
                      f"(asynchronous replication, at fault {sorted({self.fault_at(self.messages[i].acked_at) for i in lost_kept})}) "
                      "and miss the new primary's messages at those versions" if lost_kept else ""),
                   LOST_TAIL_CAUSE if lost_kept else
                   "changes skipped or kept after a failover: Sources/SyncServer/Feeds/FeedTable.swift:106-110 (only "
                   "versions above the feed's position are read), Sources/SyncStorage/Changes/ObjectStore+Changes.swift")

    async def check_triggers(self, label):
        async def healthy():
            answers = {n: await i.trigger_health() for n, i in self.instances.items() if i.alive()}
            return answers if all(a.get("status") == 200 for a in answers.values()) else None
        try:
            answers = await eventually("/health/triggers to answer 200", healthy, 60, interval=1.0)
            ok = True
        except TimeoutError:
            answers = {n: await i.trigger_health() for n, i in self.instances.items() if i.alive()}
            ok = False
        dead = await self.db.run("SELECT trigger, count(*) FROM psync_dead_letters WHERE retried_at IS NULL GROUP BY 1")
        ahead = self.triggers_ahead[self.triggers_ahead_checked:]
        self.triggers_ahead_checked = len(self.triggers_ahead)
        firsts = {}
        for sample in ahead:
            firsts.setdefault(sample["trigger"], sample)
        self.report.setdefault("triggers_ahead_of_the_log", {})[label] = ahead[:40]
        self.check(f"{label}: trigger positions never ahead of the event log", not ahead,
                   "every sample had each trigger at or below the last numbered event" if not ahead else
                   f"{len(ahead)} samples with a trigger's stored position past the last numbered event, first: "
                   + "; ".join(f"{n} {v['position']} > {v['last_numbered']} at {v['at']} s (fault {self.fault_at(v['at'])})"
                               for n, v in firsts.items()),
                   TRIGGER_AHEAD_CAUSE)
        self.report.setdefault("triggers", {})[label] = {"health": answers, "dead_letters": dict(dead)}
        self.check(f"{label}: no trigger stuck", ok and not dead,
                   f"/health/triggers {({n: a.get('status') for n, a in answers.items()})}, "
                   f"problems {({n: a.get('problems') for n, a in answers.items() if a.get('problems')}) or 'none'}, "
                   f"open dead letters {dict(dead) or 'none'}",
                   "Sources/SyncTriggers/TriggerRunner.swift (failure(_:): a 25006 counts as a handler failure)")

    # --- the lost tail --------------------------------------------------------------------------------

    async def lost_tail(self, count=4):
        say("=== lost tail: the replicas get no WAL, the primary acknowledges uploads, then dies")
        await self.pause_writers()
        await cluster("wait-healthy", self.dir, "--timeout", "180")
        status = await cluster("status", self.dir)
        old = status["primary"]
        old_port = self.db.node_port(old)
        replicas = [m["name"] for m in status["members"] if m["name"] != old]
        conversation = self.rng.choice(sorted(self.conversations))
        partition = f"conversation={conversation}"
        members = self.conversations[conversation]
        author = members[0]
        http = HttpChannel(self.instances["A"], author)
        witnesses = [s for s in self.subscribers if partition in s.partitions]
        # a subscriber that sees the tail, then goes offline before the failover
        late_user = members[-1]
        late = Subscriber(self, f"late-{late_user.email.split('@')[0]}", late_user, "B", [partition])
        self.subscribers.append(late)
        self.tasks.append(asyncio.create_task(late.run()))
        await eventually("the late subscriber to be up to date", lambda: asyncio.sleep(0, result=late.all_up_to_date()), 30)
        result = {"old_primary": old, "conversation": conversation, "witnesses": [s.name for s in witnesses],
                  "offline_subscriber": late.name}
        self.report["lost_tail"] = result

        head_before = (await self.db.run("SELECT version FROM psync_partitions WHERE partition = %s", (partition,)))[0][0]
        senders = await self.db.run("SELECT pid, application_name FROM pg_stat_replication", port=old_port)
        result["walsenders"] = {name: pid for pid, name in senders}
        stopped = [pid for pid, _ in senders if ha.signal_pid(pid, signal.SIGSTOP)]
        say(f"stopped the walsenders of {old} ({result['walsenders']}); head of {partition}: {head_before}")
        tail = []
        try:
            for n in range(count):
                message = self.new_message("tail", conversation, "lost-tail", n)
                await deliver(self, message, http, author.email, give_up_after=30)
                tail.append(message)
            head_old = (await self.db.run("SELECT version FROM psync_partitions WHERE partition = %s", (partition,),
                                          port=old_port))[0][0]
            tail_ids = [m.id for m in tail if m.final == "ack"]
            result["tail"] = {"acked": tail_ids, "versions": f"{head_before + 1}..{head_old}"}
            try:
                await eventually("the subscribers to see the tail", lambda: asyncio.sleep(0, result=all(
                    set(tail_ids) <= set(s.held[partition]) for s in witnesses + [late])), 15, interval=0.1)
                result["tail_seen_by_subscribers"] = True
            except TimeoutError:
                result["tail_seen_by_subscribers"] = False
            on_replicas = {}
            for r in replicas:
                rows = await self.db.run("SELECT count(*) FROM psync_objects WHERE id = ANY(%s)", (tail_ids,),
                                         port=self.db.node_port(r))
                on_replicas[r] = rows[0][0]
            result["tail_on_replicas_before_the_kill"] = on_replicas
            late.online.clear()
            await eventually("the late subscriber to disconnect", lambda: asyncio.sleep(0, result=not late.connected), 10)
            late.note("offline before the primary dies")
            late_cursor = late.cursors[partition]
            rows = await self.db.run("SELECT t.name, t.position, s.last_seq FROM psync_triggers t, psync_sequencer s",
                                     port=old_port)
            result["trigger_positions_on_the_old_primary"] = {n: {"position": p, "last_numbered": l} for n, p, l in rows}
            say(f"{len(tail_ids)} uploads acknowledged at versions {head_before + 1}..{head_old} of {partition}, "
                f"on the replicas: {on_replicas}; killing {old}")
            t0 = now()
            killed = await cluster("kill-primary", self.dir)
        finally:
            for pid in stopped:
                ha.signal_pid(pid, signal.SIGKILL)  # a stopped process dies of SIGKILL, and sends nothing more
        result["kill"] = killed
        new = (await cluster("wait-primary", self.dir, "--other-than", old, "--timeout", "120", check=False) or {}).get("primary")
        t_primary = now()
        result["new_primary"] = new
        head_new = (await self.db.run("SELECT version FROM psync_partitions WHERE partition = %s", (partition,)))[0][0]
        result["head_on_new_primary"] = head_new
        say(f"{new} is the primary after {t_primary - t0:.2f} s; {partition} is at version {head_new} there "
            f"(the old primary had {head_old})")
        # the new primary commits more to the partition than was lost, reusing those versions
        after = []
        for n in range(max(1, head_old - head_new) + 2):
            message = self.new_message("after", conversation, "after-lost-tail", n)
            await deliver(self, message, http, author.email, give_up_after=90)
            after.append(message)
        result["after"] = {"acked": [m.id for m in after if m.final == "ack"]}
        self.writing.set()
        late.online.set()
        late.note("online again after the failover, resuming from its cursor")
        await asyncio.sleep(1.0)
        self.writing.clear()
        await self.pause_writers()
        seconds, _, (everything, held) = await self.convergence(witnesses + [late], 20)
        result["converged_after"] = seconds
        result["triggers_ahead_of_the_log"] = [a for a in self.triggers_ahead if a["at"] >= t0][:20]
        server = everything[partition]
        lost = [i for i in tail_ids if i not in server]
        result["lost_acked"] = lost
        result["subscribers"] = {}
        failures = []
        for s in witnesses + [late]:
            d = self.difference(held[s.name][partition], server)
            resets = [t for t, p in s.resets if p == partition and t >= t0]
            # the subscriber's other partitions: its own User record carries the unread counts
            # the old primary's trigger raised for the lost messages
            others = {p: self.difference(held[s.name][p], everything[p]) for p in s.partitions if p != partition}
            others = {p: {k: len(v) for k, v in o.items()} for p, o in others.items() if o}
            result["subscribers"][s.name] = {"instance": s.instance_name, "reset_after_the_kill": resets[:3],
                                             "difference": d, "other_partitions": others}
            if others:
                failures.append(f"{s.name} on {s.instance_name} holds other partitions unlike the server: {others}")
            if d:
                parts = []
                if d.get("phantom"):
                    parts.append(f"keeps {len(d['phantom'])} phantom messages the new primary never had")
                if d.get("missing"):
                    versions = sorted(server[i][0] for i in d["missing"])
                    parts.append(f"skipped {len(d['missing'])} messages the new primary committed at versions "
                                 f"{versions[0]}..{versions[-1]}")
                if d.get("same_version_other_body"):
                    parts.append(f"holds {len(d['same_version_other_body'])} objects at a version whose content differs")
                failures.append(f"{s.name} on {s.instance_name}{' (offline during the failover)' if s is late else ''} "
                                + " and ".join(parts or [str({k: len(v) for k, v in d.items()})]))
        result["late_cursor"] = late_cursor
        if not lost:
            self.check("lost tail: produced", False,
                       f"no acknowledged upload was lost ({on_replicas} tail messages on the replicas before the kill): "
                       "the scenario did not hold the WAL back")
        self.check("lost tail: no subscriber keeps the lost history", not failures,
                   (f"{len(lost)} acknowledged uploads lost with the old primary (asynchronous replication), "
                    f"versions {head_new + 1}..{head_old} of {partition} reused by the new primary; "
                    + ("; ".join(failures) if failures else "every subscriber was reset and holds what the new primary holds")),
                   LOST_TAIL_CAUSE)
        healthy = await cluster("wait-healthy", self.dir, "--timeout", "180", check=False)
        result["old_primary_rejoined"] = bool(healthy)
        result["seconds_until_whole"] = round(now() - t0, 2)
        return [m.id for m in tail]

    # --- the end ---------------------------------------------------------------------------------------

    async def sigterm(self):
        # with the subscribers' sessions open (the writers stay paused)
        results = {}
        for name, instance in self.instances.items():
            seconds, code = await instance.terminate(timeout=60)
            results[name] = {"seconds": seconds, "exit_code": code}
        self.stopping.set()
        self.report["sigterm"] = results
        self.check("SIGTERM stops each instance", all(r["exit_code"] == 0 and r["seconds"] is not None
                                                      and r["seconds"] <= self.args.stop_bound for r in results.values()),
                   ", ".join(f"{n}: status {r['exit_code']} after {r['seconds']} s" for n, r in results.items())
                   + f" (bound {self.args.stop_bound} s)")

    def figures(self):
        acked = [m for m in self.messages.values() if m.final == "ack"]
        return {"writes_acked": len(acked),
                "writes_acked_during_faults": len([m for m in acked if m.phase == "faults"]),
                "upload_attempts": sum(len(m.attempts) for m in self.messages.values()),
                "faults": [{"fault": f["fault"], "primary": f["primary"],
                            "without_a_primary": f["seconds"]["without_a_primary"],
                            "acked_again_after": {n: v["acked_again_after"] for n, v in f["instances"].items()},
                            "longest_without_ack": {n: v["longest_stretch_without_an_ack"] for n, v in f["instances"].items()},
                            "until_whole": f["seconds"]["until_whole"]} for f in self.report["faults"]]}


def print_summary(trial):
    report = trial.report
    lines = ["", f"failover trial: seed {report['seed']}, {'synchronous' if report['sync'] else 'asynchronous'} "
             f"replication, {len(report['faults'])} faults"]
    figures = report.get("figures", {})
    if figures:
        lines.append(f"writes acknowledged: {figures['writes_acked']} ({figures['upload_attempts']} upload attempts)")
        lines.append(f"{'fault':<13} {'primary':<15} {'no primary':>10}  {'acked again A / B':<22} {'whole':>6}")
        for f in figures["faults"]:
            again = " / ".join(str(v) for v in f["acked_again_after"].values())
            lines.append(f"{f['fault']:<13} {f['primary']:<15} {f['without_a_primary']:>10}  {again:<22} {f['until_whole']:>6}")
    tail = report.get("lost_tail")
    if tail:
        def outcome(s):
            found = {k: len(v) for k, v in s["difference"].items()}
            found.update({p.split("=")[0]: o for p, o in s.get("other_partitions", {}).items()})
            return f"{found or 'ok'}{' (reset)' if s['reset_after_the_kill'] else ''}"
        lines.append(f"lost tail: {len(tail.get('lost_acked', []))} acknowledged uploads lost, versions "
                     f"{tail.get('tail', {}).get('versions')} of {tail.get('conversation')}; subscribers: "
                     + "; ".join(f"{n}: {outcome(s)}" for n, s in tail.get("subscribers", {}).items()))
    for c in trial.checks:
        lines.append(f"{c['result']}  {c['check']}: {c['detail']}")
        if c.get("where"):
            lines.append(f"      where: {c['where']}")
    failed = [c for c in trial.checks if c["result"] == "FAIL"]
    lines.append(f"trial: {'FAILED (' + str(len(failed)) + ' checks)' if failed else 'ok'}")
    print("\n".join(lines), flush=True)


async def main_async(args):
    directory = os.path.abspath(args.dir) if args.dir else tempfile.mkdtemp(prefix="psync-trial-")
    os.makedirs(directory, exist_ok=True)
    trial = Trial(args, directory)
    kinds = schedule(args.faults, trial.rng)
    trial.report["schedule"] = kinds
    say(f"seed {args.seed}; faults: {', '.join(kinds)}; psync {args.psync}")
    status = 0
    try:
        await trial.setup()
        await trial.start_load()
        for number, kind in enumerate(kinds, 1):
            await trial.run_fault(number, kind)
        say("=== checks after the faults (writers stopped)")
        await trial.pause_writers()
        trial.check_answers()
        await trial.check_uploads("faults")
        await trial.check_unread("faults")
        await trial.check_subscribers("faults")
        await trial.check_triggers("faults")
        if not args.sync and not args.no_lost_tail:
            tail_ids = await trial.lost_tail()
            await trial.check_uploads("after the lost tail", lost_tail_ids=tail_ids)
            await trial.check_unread("after the lost tail")
            await trial.check_subscribers("after the lost tail")
            await trial.check_triggers("after the lost tail")
        trial.report["figures"] = trial.figures()
        if args.replicas:
            # what B read from the replicas, and from the primary instead (docs/SCALING.md, "Reads from replicas")
            metrics = await trial.instances["B"].metrics()
            reads = {"replica_pages": int(metrics.value("psync_replica_pages_total"))}
            reads.update({f"primary_{reason}": int(metrics.value("psync_replica_fallbacks_total", reason=reason))
                          for reason in ("behind", "failed", "none")})
            trial.report["figures"]["replica_reads_b"] = reads
            say(f"B's pages: {reads}")
        await trial.sigterm()
    except Exception as error:  # noqa: BLE001 - reported, then everything is stopped
        say(f"the trial could not go on: {type(error).__name__}: {error}")
        trial.report["aborted"] = f"{type(error).__name__}: {error}"
        trial.check("the trial ran to its end", False, trial.report["aborted"])
        status = 2
    finally:
        trial.stopping.set()
        trial.writing.set()
        for subscriber in trial.subscribers:
            subscriber.online.set()
        for task in trial.tasks:
            task.cancel()
        await asyncio.gather(*trial.tasks, return_exceptions=True)
        if trial.watcher:
            trial.watcher.halt.set()
        for instance in trial.instances.values():
            instance.kill()
        await cluster("stop", directory, check=False)
        trial.report.setdefault("figures", trial.figures())
        trial.report["checks"] = trial.checks
        with open(os.path.join(directory, "trial-report.json"), "w") as f:
            json.dump(trial.report, f, indent=1, default=str)
        with open(os.path.join(directory, "trial-raw.json"), "w") as f:
            json.dump({"messages": [m.raw() for m in trial.messages.values()], "ready": trial.ready_log,
                       "primary_samples": trial.watcher.samples if trial.watcher else [],
                       "subscribers": {s.name: {"events": s.events, "resets": s.resets} for s in trial.subscribers}},
                      f, default=str)
        print_summary(trial)
        failed = any(c["result"] == "FAIL" for c in trial.checks)
        if status == 0 and failed:
            status = 1
        if status == 0 and not args.keep and not args.dir:
            shutil.rmtree(directory, ignore_errors=True)
        else:
            say(f"report and logs in {directory}")
    return status


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--psync", default=default_psync(),
                        help="the server binary (default: $PSYNC_BIN, else .build/release/psync, else .build/debug/psync)")
    parser.add_argument("--dir", help="the cluster's folder (kept); default a temporary one, removed after a pass")
    parser.add_argument("--base-port", type=int, default=29400)
    parser.add_argument("--sync", action="store_true", help="Patroni's synchronous_mode")
    parser.add_argument("--faults", type=int, default=3, help="faults in the schedule (half of them kills)")
    parser.add_argument("--seed", type=int, default=None, help="the schedule's seed (default: drawn, and printed)")
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--conversations", type=int, default=3)
    parser.add_argument("--writers", type=int, default=4, help="writers: even ones over HTTP, odd ones over a WebSocket")
    parser.add_argument("--pace", type=float, default=0.15, help="mean seconds between a writer's uploads")
    parser.add_argument("--ttl", type=int, default=20, help="Patroni's leader TTL (s): the freezes are 0.4 × and TTL + 8 s")
    parser.add_argument("--replicas", action="store_true",
                        help="instance B reads snapshots and catch-ups from the nodes that are replicas (--replica-url)")
    parser.add_argument("--no-lost-tail", action="store_true", help="skip the lost-tail scenario (asynchronous mode)")
    parser.add_argument("--stop-bound", type=float, default=10.0, help="seconds SIGTERM may take to stop an instance")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder after a pass")
    args = parser.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 1 << 31)
    if not args.psync or not os.access(args.psync, os.X_OK):
        parser.error("no psync binary: build it (swift build -c release --product psync) or pass --psync / PSYNC_BIN")
    if args.users < 2 or args.conversations < 1 or args.writers < 1 or args.faults < 0:
        parser.error("at least 2 users, 1 conversation, 1 writer")
    sys.exit(asyncio.run(main_async(args)))


if __name__ == "__main__":
    main()
