#!/usr/bin/env python3
"""How today's `psync serve` behaves when its PostgreSQL fails over (issue 31's groundwork).

    .build-ha-venv/bin/python scripts/ha/probe_failover.py [--psync /work/ha-bin/psync]
        [--dir DIR] [--base-port 28400] [--sync] [--freeze-seconds 30] [--keep]

Starts a three-node cluster (scripts/ha/cluster.py: etcd, Patroni, HAProxy), two server
instances A and B on HAProxy's primary port (as a deployment with a proxy would run them), and
RChat's users alice and bob with a conversation. Throughout, it polls each instance's /ready,
keeps three streams of HTTP uploads (alice's ChatMessages) going through A, each re-sending its
upload with the same requestId until it is acknowledged, and keeps bob subscribed to the
conversation over a WebSocket of A. Then, one after another: a switchover, a SIGKILL of the
primary's postmaster, a SIGSTOP of the primary's PostgreSQL for --short-freeze-seconds (shorter
than Patroni's TTL: no failover) and one for --freeze-seconds (a failover; B gets SIGTERM 10 s
into it). After each it records: /ready's answers, what the uploads in flight
got (status and code, or no answer), when uploads were acknowledged again, whether bob's
WebSocket stayed open and receives live changes committed through A and through B (B's reach A
by A's LISTEN connection, or by A's once-a-second poll), the LISTEN connections on the new
primary, the triggers' health, and the warnings and errors of the servers' logs. Last, it
starts an instance directly on a replica's port, and one directly on the primary's port
followed by a switchover (its node becomes a read-only standby), and records what their uploads
get. Every acknowledged message must be stored, and bob's unread count must equal the number
of messages. The report is printed and written to DIR/probe-report.json; logs stay in DIR/logs
with --keep.
"""

import argparse
import asyncio
import base64
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.parse

import httpx
import websockets

from harness import Instance, cluster, connect, eventually, interesting_log_lines, messages, post_upload, register

T0 = time.monotonic()


def now():
    return time.monotonic() - T0


def say(msg):
    print(f"[probe {now():7.2f}] {msg}", file=sys.stderr, flush=True)


class Users:
    def __init__(self):
        self.alice = None
        self.bob = None
        self.room = "ha-probe-room"


def message_body(request_id, message_id, text):
    return {"requestId": request_id,
            "operations": [{"op": "put", "collection": "ChatMessage", "id": message_id,
                            "body": {"author": "alice@example.com", "text": text, "location": [],
                                     "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())}}]}


async def upload(instance, users, request_id, message_id, text, timeout=90.0):
    """One HTTP upload of a message by alice; returns (status or None, code, seconds)."""
    status, code, seconds, _ = await post_upload(instance, users.alice["accessToken"], "conversation=" + users.room,
                                                 message_body(request_id, message_id, text), timeout=timeout)
    return status, code, seconds


class Probe:
    def __init__(self, args, directory):
        self.args = args
        self.dir = directory
        self.secret = base64.b64encode(secrets.token_bytes(48)).decode()
        self.state = None
        self.instances = {}
        self.users = Users()
        self.ready_log = {}       # instance -> [(t, status)] on each change
        self.uploads = []         # dicts: stream, n, request, start, end, status, code, seconds
        self.acked = set()        # message ids acknowledged
        self.seen = {}            # message id -> time bob's subscriber got it
        self.ws_events = []       # (t, event)
        self.stop = asyncio.Event()
        self.pause_uploads = asyncio.Event()
        self.report = {"cluster": {}, "faults": [], "replica": {}, "end": {}}

    # --- background activities ------------------------------------------------------------

    async def watch_ready(self, name):
        last = None
        log = self.ready_log.setdefault(name, [])
        while not self.stop.is_set():
            instance = self.instances.get(name)
            if instance is None or not instance.alive():
                status = "exited"
            else:
                try:
                    status = await instance.ready(timeout=3.0)
                except httpx.TimeoutException:
                    status = "timeout"
                except httpx.HTTPError:
                    status = "refused"
            if status != last:
                log.append((round(now(), 2), status))
                last = status
            if status == "exited":
                return
            await asyncio.sleep(0.1)

    async def upload_stream(self, stream):
        n = 0
        while not self.stop.is_set():
            if self.pause_uploads.is_set():
                await asyncio.sleep(0.05)
                continue
            n += 1
            request_id = f"s{stream}-{n}"
            message_id = f"m-s{stream}-{n}"
            attempt = 0
            while not self.stop.is_set():
                attempt += 1
                start = now()
                status, code, seconds = await upload(self.instances["A"], self.users, request_id, message_id,
                                                     f"stream {stream} message {n}")
                self.uploads.append({"stream": stream, "n": n, "attempt": attempt, "start": round(start, 2),
                                     "end": round(now(), 2), "status": status, "code": code, "seconds": seconds})
                if status == 200:
                    self.acked.add(message_id)
                    break
                if status is not None and 400 <= status < 500:
                    break  # final: a refusal
                await asyncio.sleep(0.2)
            await asyncio.sleep(0.05)

    async def subscriber(self):
        """Bob on A's WebSocket, subscribed to the conversation; reconnects from his cursor."""
        cursor = None
        partition = f"conversation={self.users.room}"
        while not self.stop.is_set():
            instance = self.instances["A"]
            try:
                async with connect(instance.port, self.users.bob["accessToken"]) as ws:
                    self.ws_events.append((round(now(), 2), "connected"))
                    await ws.send(json.dumps({"type": "subscribe", "partition": partition, "cursor": cursor}))
                    async for message in messages(ws, lambda: not self.stop.is_set()):
                        kind = message.get("type")
                        if kind == "changes":
                            cursor = message.get("cursor", cursor)
                            for obj in message.get("objects", []):
                                self.seen.setdefault(obj["id"], round(now(), 3))
                            if message.get("upToDate") and not getattr(self, "_up_to_date", False):
                                self._up_to_date = True
                                self.ws_events.append((round(now(), 2), "up to date"))
                        elif kind in ("error", "unsubscribed"):
                            self.ws_events.append((round(now(), 2), f"{kind}: {message.get('code')} {message.get('message', '')[:120]}"))
            except websockets.ConnectionClosed as closed:
                code = closed.rcvd.code if closed.rcvd else None
                reason = closed.rcvd.reason if closed.rcvd else ""
                self.ws_events.append((round(now(), 2), f"closed by server: {code} {reason}".strip()))
            except (OSError, websockets.InvalidHandshake, asyncio.TimeoutError) as error:
                self.ws_events.append((round(now(), 2), f"connect failed: {type(error).__name__} {error}"[:160]))
            if not self.stop.is_set():
                await asyncio.sleep(0.5)

    # --- checks ----------------------------------------------------------------------------

    async def superuser_sql(self, sql, port=None):
        port = port or self.state["ports"]["haproxy_primary"]
        process = await asyncio.create_subprocess_exec(
            "psql", "-X", "-At", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-d", "psync", "-c", sql,
            env=dict(os.environ, PGPASSWORD=self.state["passwords"]["superuser"], PGCONNECT_TIMEOUT="3"),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await process.communicate()
        if process.returncode != 0:
            raise RuntimeError(err.decode().strip())
        return out.decode().strip()

    async def verbose_sql(self, sql, port):
        """The first line psql prints for sql as the role psync (its error with SQLSTATE, or its result)."""
        process = await asyncio.create_subprocess_exec(
            "psql", "-X", "-At", "-v", "VERBOSITY=verbose", "-h", "127.0.0.1", "-p", str(port), "-U", "psync", "-d", "psync",
            "-c", sql, env=dict(os.environ, PGPASSWORD=self.state["passwords"]["psync"], PGCONNECT_TIMEOUT="3"),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await process.communicate()
        text = (err.decode() if process.returncode != 0 else out.decode()).strip().splitlines()
        return text[0] if text else ""

    async def listeners(self):
        rows = await self.superuser_sql(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'psync listener'")
        return int(rows)

    async def live_delivery(self, via, label, timeout=15):
        """Uploads one message through `via`; seconds until bob's subscriber on A has it."""
        message_id = f"m-live-{label}-{via}"
        status, code, _ = await upload(self.instances[via], self.users, f"live-{label}-{via}", message_id, f"live {label}")
        if status != 200:
            return {"via": via, "upload": f"{status} {code}", "seen_after": None}
        self.acked.add(message_id)
        sent = now()
        try:
            await eventually(f"bob to see {message_id}", self._seen(message_id), timeout, interval=0.02)
            return {"via": via, "seen_after": round(self.seen[message_id] - sent, 3)}
        except TimeoutError:
            return {"via": via, "seen_after": None, "note": f"not seen within {timeout} s"}

    def _seen(self, message_id):
        async def check():
            return message_id in self.seen
        return check

    async def trigger_health(self, name):
        health = await self.instances[name].trigger_health()
        health.pop("lag", None)
        return health

    # --- phases ----------------------------------------------------------------------------

    async def setup(self):
        log_dir = os.path.join(self.dir, "logs")
        say(f"starting the cluster in {self.dir}")
        args = ["start", self.dir, "--base-port", str(self.args.base_port)] + (["--sync"] if self.args.sync else [])
        started = await cluster(*args)
        self.state = json.load(open(os.path.join(self.dir, "cluster.json")))
        self.report["cluster"] = {"primary": started["primary"], "start_seconds": started["seconds"],
                                  "sync": self.args.sync}
        for name in ("A", "B"):
            self.instances[name] = Instance(name, self.args.psync, self.state["database_url"], log_dir, self.secret)
        t = now()
        for name in ("A", "B"):
            await self.instances[name].wait_ready()
        say(f"A and B ready in {now() - t:.1f} s (ports {self.instances['A'].port}, {self.instances['B'].port})")
        a = self.instances["A"]
        self.users.alice = await register(a, "alice@example.com")
        self.users.bob = await register(a, "bob@example.com")
        conversation = {"id": self.users.room, "displayName": "HA probe", "unreadCount": 0,
                        "members": [{"userName": "alice@example.com", "membershipStatus": "Membership active"},
                                    {"userName": "bob@example.com", "membershipStatus": "User added, but invite pending"}]}
        alice_id = self.users.alice["userId"]
        path = f"/v1/partitions/{urllib.parse.quote('user=' + alice_id, safe='')}/uploads"

        async def bob_has_room():
            response = await a.http.get(f"/v1/partitions/{urllib.parse.quote('user=' + self.users.bob['userId'], safe='')}/changes",
                                        headers={"Authorization": f"Bearer {self.users.bob['accessToken']}"})
            return response.status_code == 200 and self.users.room in response.text
        response = await a.http.post(path, headers={"Authorization": f"Bearer {self.users.alice['accessToken']}"},
                                     json={"requestId": "create-room", "operations": [
                                         {"op": "arrayAppend", "collection": "User", "id": alice_id,
                                          "path": "conversations", "value": conversation}]})
        if response.status_code != 200:
            raise RuntimeError(f"creating the conversation: {response.status_code} {response.text}")
        await eventually("bob to be a member of the conversation", bob_has_room, 30)
        status, code, seconds = await upload(a, self.users, "first", "m-first", "first message")
        self.report["cluster"]["first_upload"] = f"{status} {code} in {seconds} s"
        if status != 200:
            raise RuntimeError(f"first upload: {status} {code}")
        self.acked.add("m-first")
        say("alice, bob and the conversation exist; the first upload was acknowledged")

    async def run_fault(self, name, command, freeze_seconds=None, sigterm_b=False, expect_new_primary=True):
        say(f"=== {name}")
        await cluster("wait-healthy", self.dir, "--timeout", "120")
        before = await cluster("status", self.dir)
        old = before["primary"]
        offsets = {n: i.log_size() for n, i in self.instances.items() if i.alive()}
        ws_mark = len(self.ws_events)
        ready_marks = {n: len(v) for n, v in self.ready_log.items()}
        t0 = now()
        fault = asyncio.create_task(cluster(*command))
        sigterm_result = None
        if sigterm_b:
            # SIGTERM to B while its database does not answer
            await asyncio.sleep(10)  # a moment inside the freeze, not a synchronisation
            say("SIGTERM to B during the freeze")
            seconds, code = await self.instances["B"].terminate(timeout=60)
            sigterm_result = {"sent_after": round(now() - t0, 2), "exit_seconds": seconds, "exit_code": code}
        fault_result = await fault
        t_fault_done = now()
        wait = ["wait-primary", self.dir, "--timeout", "120"] + (["--other-than", old] if expect_new_primary else [])
        new = (await cluster(*wait, check=False) or {}).get("primary")
        t_primary = now()

        # A answers /ready 200 again and an upload through A is acknowledged
        a = self.instances["A"]

        async def a_ready():
            return a.alive() and await a.ready() == 200
        try:
            await eventually("A's /ready to answer 200", a_ready, 120)
            t_ready = now()
        except TimeoutError:
            t_ready = None

        def first_ack_after(t):
            acks = [u["end"] for u in self.uploads if u["status"] == 200 and u["start"] >= t]
            return min(acks) if acks else None
        try:
            await eventually("an upload through A to be acknowledged",
                             lambda: asyncio.sleep(0, result=first_ack_after(t_primary - 0.001) is not None), 120)
        except TimeoutError:
            pass
        await cluster("wait-healthy", self.dir, "--timeout", "120", check=False)
        t_healthy = now()

        # what the uploads met: every upload running at some moment between the fault and the
        # cluster being whole again
        window = [u for u in self.uploads if u["end"] >= t0 and u["start"] <= t_healthy]
        in_flight_at_fault = [u for u in self.uploads if u["start"] < t0 < u["end"]]
        outcomes = {}
        for u in window:
            outcomes.setdefault(f"{u['status']} {u['code']}", []).append(u["seconds"])
        # the longest stretch without an acknowledgement, and when acknowledgements resumed
        ack_ends = sorted(u["end"] for u in self.uploads if u["status"] == 200 and t0 - 1 <= u["end"] <= t_healthy)
        gap, resumed, previous = 0.0, None, t0
        for end in ack_ends:
            if end - previous > gap:
                gap, resumed = end - previous, end
            previous = max(previous, end)
        slow = [f"started +{round(u['start'] - t0, 2)} s: {u['status']} {u['code']} after {u['seconds']} s"
                for u in window if u["seconds"] > 3]

        live = [await self.live_delivery("A", name), await self.live_delivery("B", name) if self.instances["B"].alive() else
                {"via": "B", "note": "B was stopped"}]
        try:
            listening = await self.listeners()
        except RuntimeError as error:
            listening = f"query failed: {error}"
        after = await cluster("status", self.dir)
        logs = {n: interesting_log_lines(i.log_since(offsets.get(n, 0))) for n, i in self.instances.items() if n in offsets}
        result = {
            "fault": name,
            "command": "scripts/ha/cluster.py " + " ".join(command),
            "fault_result": fault_result,
            "primary": f"{old} -> {new}",
            "timeline": f"{before['timeline']} -> {after['timeline']}",
            "seconds": {
                "fault_command": round(t_fault_done - t0, 2),
                "until_haproxy_routes_new_primary": round(t_primary - t0, 2),
                "until_A_ready_again": round(t_ready - t0, 2) if t_ready else None,
                "longest_stretch_without_an_ack": round(gap, 2),
                "acks_resumed_at": round(resumed - t0, 2) if resumed else None,
                "until_cluster_whole": round(t_healthy - t0, 2),
            },
            "ready": {n: [(round(t - t0, 2), s) for t, s in v[ready_marks.get(n, 0):]] for n, v in self.ready_log.items()},
            "uploads_in_flight_at_fault": [f"{u['status']} {u['code']} after {u['seconds']} s" for u in in_flight_at_fault],
            "upload_outcomes_until_whole": {k: {"count": len(v), "max_seconds": max(v)} for k, v in outcomes.items()},
            "uploads_over_3_s": slow,
            "unanswered_uploads": len([u for u in window if u["status"] is None]),
            "websocket": [(round(t - t0, 2), e) for t, e in self.ws_events[ws_mark:]],
            "live_delivery_to_bob_on_A": live,
            "listen_connections_on_primary": listening,
            "triggers": {n: await self.trigger_health(n) for n, i in self.instances.items() if i.alive()},
            "alive": {n: i.alive() for n, i in self.instances.items()},
            "log_warnings_and_errors": logs,
        }
        if sigterm_result:
            result["sigterm_B_during_freeze"] = sigterm_result
        self.report["faults"].append(result)
        say(json.dumps(result["seconds"]))

    async def replica_phase(self):
        say("=== a server on a replica's port, and one whose node is demoted under it")
        status = await cluster("wait-healthy", self.dir, "--timeout", "120")
        primary = status["primary"]
        view = await cluster("status", self.dir)
        replica = next(m["name"] for m in view["members"] if m["name"] != primary)
        password = self.state["passwords"]["psync"]
        log_dir = os.path.join(self.dir, "logs")

        def direct_url(node):
            return f"postgres://psync:{password}@127.0.0.1:{self.state['nodes'][node]['pg_port']}/psync?sslmode=disable"
        result = {}

        # C: started on a standby
        c = Instance("C-on-replica", self.args.psync, direct_url(replica), log_dir, self.secret)
        self.instances["C"] = c
        t = now()

        async def c_settled():
            if not c.alive():
                return "exited"
            try:
                return "ready" if await c.ready() == 200 else None
            except httpx.HTTPError:
                return None
        try:
            outcome = await eventually("C to become ready or exit", c_settled, 30)
        except TimeoutError:
            outcome = "neither ready nor exited within 30 s"
        c_result = {"node": replica, "outcome": outcome, "seconds": round(now() - t, 2),
                    "exit_code": c.process.returncode}
        if outcome == "ready":
            status_code, code, seconds = await upload(c, self.users, "on-replica-1", "m-on-replica-1", "on a replica")
            c_result["upload"] = f"{status_code} {code} in {seconds} s"
        else:
            try:
                c_result["ready"] = await c.ready()
            except httpx.HTTPError as error:
                c_result["ready"] = type(error).__name__
        c_result["log"] = interesting_log_lines(c.log_since(0), limit=8)
        # what the server's first statements meet on a standby, with their SQLSTATEs
        c_result["statements_on_the_standby"] = {}
        for sql in ("SELECT pg_advisory_lock(1)",
                    "CREATE TABLE IF NOT EXISTS psync_migrations (version integer PRIMARY KEY)", "UPDATE psync_partitions SET version = version WHERE false",
                    "LISTEN psync_changes", "SELECT count(*) >= 0 FROM psync_partitions"):
            c_result["statements_on_the_standby"][sql] = await self.verbose_sql(sql, self.state["nodes"][replica]["pg_port"])
        c_result["sigterm"] = await c.terminate()
        result["started_on_replica"] = c_result

        # D: started directly on the primary, then its node is switched over to a standby
        d = Instance("D-direct", self.args.psync, direct_url(primary), log_dir, self.secret)
        self.instances["D"] = d
        await d.wait_ready()
        status_code, code, seconds = await upload(d, self.users, "direct-1", "m-direct-1", "direct, before")
        if status_code == 200:
            self.acked.add("m-direct-1")
        d_result = {"node": primary, "before_switchover": f"{status_code} {code}"}
        offset = d.log_size()
        switch = await cluster("switchover", self.dir)
        d_result["switchover"] = switch
        t = now()
        answers = {}
        ready = []
        n = 0
        while now() - t < 20:
            n += 1
            status_code, code, seconds = await upload(d, self.users, f"direct-after-{n}", f"m-direct-after-{n}", "direct, after", timeout=40)
            if status_code == 200:
                self.acked.add(f"m-direct-after-{n}")
            answers.setdefault(f"{status_code} {code}", []).append(seconds)
            try:
                ready.append(await d.ready())
            except httpx.HTTPError as error:
                ready.append(type(error).__name__)
            await asyncio.sleep(0.5)
        d_result["uploads_in_20_s_after"] = {k: {"count": len(v), "max_seconds": max(v)} for k, v in answers.items()}
        d_result["ready_answers"] = sorted(set(map(str, ready)))
        d_result["alive"] = d.alive()
        d_result["log"] = interesting_log_lines(d.log_since(offset), limit=10)
        d_result["sigterm"] = await d.terminate()
        result["demoted_under_it"] = d_result
        self.report["replica"] = result

    async def finish(self):
        say("=== end: stored messages, unread counts, SIGTERM")
        self.pause_uploads.set()
        await asyncio.sleep(0.5)  # lets the streams' current uploads finish (each bounded by its timeout)
        a = self.instances["A"]
        stored = set(filter(None, (await self.superuser_sql(
            f"SELECT id FROM psync_objects WHERE partition = 'conversation={self.users.room}' "
            "AND collection = 'ChatMessage' AND body IS NOT NULL")).split("\n")))

        async def unread():
            response = await a.http.get(f"/v1/partitions/{urllib.parse.quote('user=' + self.users.bob['userId'], safe='')}/changes",
                                        headers={"Authorization": f"Bearer {self.users.bob['accessToken']}"})
            for obj in response.json().get("objects", []):
                if obj.get("collection") == "User":
                    for c in obj["body"].get("conversations", []):
                        if c.get("id") == self.users.room:
                            return c.get("unreadCount")
            return None
        async def unread_equal():
            return await unread() == len(stored)
        t = now()
        try:
            await eventually("bob's unread count to equal the stored messages", unread_equal, 60)
            settled = round(now() - t, 2)
        except TimeoutError:
            settled = None

        self.report["end"] = {
            "acked": len(self.acked),
            "stored": len(stored),
            "acked_not_stored": sorted(self.acked - stored)[:20],
            "stored_not_acked": len(stored - self.acked),
            "bob_unread_count": await unread(),
            "unread_count_settled_after": settled,
            "uploads_total": len(self.uploads),
            "uploads_unanswered_total": len([u for u in self.uploads if u["status"] is None]),
            "bob_received": len(set(self.seen) & stored),
        }
        seconds, code = await a.terminate()
        self.report["end"]["sigterm_A"] = {"exit_seconds": seconds, "exit_code": code}


async def main_async(args):
    directory = os.path.abspath(args.dir) if args.dir else tempfile.mkdtemp(prefix="psync-ha-probe-")
    probe = Probe(args, directory)
    tasks = []
    try:
        await probe.setup()
        tasks = [asyncio.create_task(probe.watch_ready("A")), asyncio.create_task(probe.watch_ready("B")),
                 asyncio.create_task(probe.subscriber())]
        tasks += [asyncio.create_task(probe.upload_stream(s)) for s in range(3)]
        await eventually("bob's subscription to be up to date", lambda: asyncio.sleep(0, result=getattr(probe, "_up_to_date", False)), 30)
        await probe.run_fault("switchover", ["switchover", directory])
        await probe.run_fault("kill-primary", ["kill-primary", directory])
        # a freeze shorter than Patroni's leader TTL: the same primary comes back
        await probe.run_fault("short-freeze-primary", ["freeze-primary", directory, str(args.short_freeze_seconds)],
                              expect_new_primary=False)
        await probe.run_fault("freeze-primary", ["freeze-primary", directory, str(args.freeze_seconds)],
                              sigterm_b=True)
        await probe.finish()
        probe.stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        await probe.replica_phase()
    finally:
        probe.stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for instance in probe.instances.values():
            instance.kill()
        await cluster("stop", directory, check=False)
        with open(os.path.join(directory, "probe-report.json"), "w") as f:
            json.dump(probe.report, f, indent=2)
        with open(os.path.join(directory, "probe-raw.json"), "w") as f:
            json.dump({"uploads": probe.uploads, "ready": probe.ready_log, "websocket": probe.ws_events,
                       "seen": probe.seen}, f)
        print(json.dumps(probe.report, indent=2))
        if not args.keep and not args.dir:
            subprocess.run(["rm", "-rf", directory])
        else:
            say(f"kept {directory}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--psync", default=os.environ.get("PSYNC_BIN", "/work/ha-bin/psync"))
    parser.add_argument("--dir", help="the cluster's folder (kept); default a temporary one")
    parser.add_argument("--base-port", type=int, default=28400)
    parser.add_argument("--sync", action="store_true", help="Patroni's synchronous_mode")
    parser.add_argument("--freeze-seconds", type=float, default=30, help="longer than Patroni's TTL (20 s): a failover")
    parser.add_argument("--short-freeze-seconds", type=float, default=8, help="shorter than the TTL: no failover")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder and its logs")
    args = parser.parse_args()
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
