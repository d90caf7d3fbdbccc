#!/usr/bin/env python3
"""The load-balancer check of issue 31: clients of RChat that reach N `psync serve` instances
through HAProxy only (scripts/ha/balancer.py), and what must hold when an instance dies.

    .build-ha-venv/bin/python scripts/ha/check_balancer.py DIR

DIR is a balancer started by `balancer.py start` with three instances or more and a short
presence lease (scripts/ha/check-balancer.sh starts it so). Every client request goes to
HAProxy's port; which instance served it is read from HAProxy's `X-PSync-Backend` answer
header (the server names no instance in its answers) and checked against the server's own
view (`GET /v1/admin/users`: each user's sessions per instance name, whose pid balancer.json
maps to an instance). In order:

1. spread: 20 users each open a WebSocket session and subscribe to a shared conversation and to
   `all-users`; every instance must hold some, as HAProxy and the server both say;
2. presence across instances: a user whose session lands on one instance is seen On-Line, then
   Off-Line when it closes, by a subscriber on another instance;
3. revocation across instances: a user with a session on every instance logs out through the
   balancer; every session, whichever instance holds it, ends with `session_revoked` (4001);
   every instance refuses the access token at the upgrade, and the refresh token is refused;
4. SIGKILL: while a writer uploads messages through the balancer, the instance holding a
   lone user's session is killed; HAProxy marks it down and routes nothing more to it; its
   clients reconnect through the balancer, resume from their cursors and every client
   receives every stored message exactly once (counted); the lone user goes Off-Line after
   the presence lease, nobody who reconnected does; unread counts equal the messages;
5. the killed instance is started again and takes the next connection (leastconn);
6. a graceful stop (HAProxy drain, then SIGTERM) of another instance under the same writer:
   its clients get 1001, resume elsewhere, and it exits with status 0; then `balancer.py stop`
   stops the others, each with status 0.

Waits are polls with deadlines, never sleeps standing in for an event. Prints the figures
(time for HAProxy to mark the killed instance down, until every client resumed, sessions per
instance) and exits 1 on the first failed check.
"""

import argparse
import asyncio
import collections
import json
import os
import sys
import time
import urllib.parse

import httpx
import websockets

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cluster import haproxy_servers  # noqa: E402
from harness import CheckFailed, Checker, connect, messages  # noqa: E402
from probe_failover import eventually, message_body  # noqa: E402

BALANCER = os.path.join(HERE, "balancer.py")
ROOM = "lb-room"
CONVERSATION = f"conversation={ROOM}"
ALL_USERS = "all-users=all-the-users"
PASSWORD = "correct horse battery"
MEMBERS = 20


CHECKER = Checker("check-balancer")
now, say, check = CHECKER.now, CHECKER.say, CHECKER.check


async def balancer(*args):
    """Runs scripts/ha/balancer.py; returns its JSON answer."""
    process = await asyncio.create_subprocess_exec(sys.executable, BALANCER, *args,
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await process.communicate()
    if process.returncode != 0:
        raise CheckFailed(f"balancer.py {' '.join(args)} failed: {err.decode()[-1500:]} {out.decode()[-500:]}")
    return json.loads(out.decode().strip().splitlines()[-1])


def quoted(partition):
    return urllib.parse.quote(partition, safe="")


# ---------------------------------------------------------------------------------------------
# a client's WebSocket session, reconnecting through the balancer

class Session:
    """One user's WebSocket through the balancer, subscribed to some partitions. On a lost
    connection it reconnects (unless told not to) and subscribes again from its cursors. It
    counts every ChatMessage it is sent and keeps the Chatsters' presence with each change."""

    def __init__(self, check_run, user, partitions, reconnect=True, presence=True, first_delay=None):
        self.run_ = check_run
        self.first_delay = first_delay  # seconds before the first reconnection; default the backoff's
        self.user = user
        self.partitions = partitions
        self.reconnect = reconnect
        self.presence = presence
        self.cursors = {p: None for p in partitions}
        self.received = collections.Counter()  # ChatMessage id -> times sent to this client
        self.presences = {}                    # Chatster id -> [presence, …] as it changed
        self.connections = []                  # {backend, opened, closed, code, up_to_date}
        self.failures = []                     # (t, what) of connection attempts that failed
        self.ws = None
        self.closed_for_good = asyncio.Event()
        self.task = None

    @property
    def backend(self):
        return self.connections[-1]["backend"] if self.connections else None

    @property
    def current(self):
        return self.connections[-1] if self.connections else None

    def start(self):
        self.task = asyncio.create_task(self.run())
        return self

    async def run(self):
        attempt = 0
        query = "" if self.presence else "?presence=off"
        try:
            while True:
                try:
                    async with connect(self.run_.port, self.user["accessToken"], query) as ws:
                        attempt = 0
                        self.ws = ws
                        connection = {"backend": ws.response.headers.get("X-PSync-Backend"), "opened": now(),
                                      "closed": None, "code": None, "up_to_date": {}}
                        self.connections.append(connection)
                        for partition in self.partitions:
                            await ws.send(json.dumps({"type": "subscribe", "partition": partition,
                                                      "cursor": self.cursors[partition]}))
                        await self.read(ws, connection)
                except websockets.ConnectionClosed as closed:
                    connection = self.connections[-1]
                    connection["closed"] = now()
                    connection["code"] = closed.rcvd.code if closed.rcvd else 1006
                    connection["reason"] = closed.rcvd.reason if closed.rcvd else ""
                    if connection["code"] == 4001 or not self.reconnect:
                        return
                except (OSError, asyncio.TimeoutError, websockets.InvalidHandshake) as error:
                    status = getattr(getattr(error, "response", None), "status_code", None)
                    self.failures.append((now(), status or type(error).__name__))
                    if status in (401, 403) or not self.reconnect:
                        return
                finally:
                    self.ws = None
                attempt += 1
                first = attempt == 1 and self.first_delay is not None
                await asyncio.sleep(self.first_delay if first else min(0.05 * 2 ** attempt, 1.0))  # the client's backoff
        finally:
            self.closed_for_good.set()

    async def read(self, ws, connection):
        async for message in messages(ws):
            kind = message.get("type")
            if kind == "changes":
                partition = message["partition"]
                for obj in message.get("objects", []):
                    if obj["collection"] == "ChatMessage" and not obj.get("deleted"):
                        self.received[obj["id"]] += 1
                    elif obj["collection"] == "Chatster" and not obj.get("deleted"):
                        history = self.presences.setdefault(obj["id"], [])
                        presence = obj["body"].get("presence")
                        if not history or history[-1] != presence:
                            history.append(presence)
                self.cursors[partition] = message.get("cursor", self.cursors[partition])
                if message.get("upToDate") and partition not in connection["up_to_date"]:
                    connection["up_to_date"][partition] = now()
            elif kind == "error":
                connection.setdefault("errors", []).append(message.get("code"))

    def up_to_date(self, partition):
        """Whether the current connection has caught up on `partition`."""
        c = self.current
        return bool(c and c["closed"] is None and partition in c["up_to_date"])

    def presence_of(self, user_id):
        history = self.presences.get(user_id)
        return history[-1] if history else None

    async def close(self):
        self.reconnect = False
        if self.ws is not None:
            await self.ws.close()
        if self.task:
            await asyncio.wait_for(self.closed_for_good.wait(), 10)


# ---------------------------------------------------------------------------------------------
# the check

class CheckRun:
    def __init__(self, directory):
        self.dir = os.path.abspath(directory)
        self.state = json.load(open(os.path.join(self.dir, "balancer.json")))
        self.port = self.state["ports"]["haproxy"]
        self.http = httpx.AsyncClient(base_url=f"http://127.0.0.1:{self.port}", timeout=httpx.Timeout(45.0, connect=3.0))
        self.users = {}
        self.sessions = {}
        self.figures = {}
        self.acked = set()
        self.uploads = []     # {id, status, backend, start, end}
        self.stop_writer = asyncio.Event()

    def instances(self):
        return sorted(self.state["instances"])

    def reload(self):
        self.state = json.load(open(os.path.join(self.dir, "balancer.json")))

    # --- HTTP through the balancer ----------------------------------------------------------

    async def register(self, email):
        response = await self.http.post("/v1/auth/register", json={"email": email, "password": PASSWORD})
        if response.status_code != 201:
            raise CheckFailed(f"register {email}: {response.status_code} {response.text}")
        user = response.json()
        user["email"] = email
        self.users[email] = user
        return user

    def auth(self, user):
        return {"Authorization": f"Bearer {user['accessToken']}"}

    async def pull_all(self, user, partition):
        """Every object of `partition` as `user` sees it over HTTP (all pages)."""
        objects, cursor = {}, None
        while True:
            params = {"limit": 5000} | ({"cursor": cursor} if cursor else {})
            response = await self.http.get(f"/v1/partitions/{quoted(partition)}/changes", params=params,
                                           headers=self.auth(user))
            if response.status_code != 200:
                raise CheckFailed(f"pull {partition}: {response.status_code} {response.text[:200]}")
            page = response.json()
            for obj in page["objects"]:
                objects[(obj["collection"], obj["id"])] = obj
            cursor = page["cursor"]
            if page["upToDate"]:
                return objects

    async def admin_sessions(self):
        """{email: {instance (i1…): sessions}} as the server's presence rows say."""
        names = {str(i["pid"]): name for name, i in self.state["instances"].items() if i.get("pid")}
        response = await self.http.get("/v1/admin/users", params={"email": "", "limit": 500},
                                       headers={"Authorization": f"Bearer {self.state['admin_key']}"})
        if response.status_code != 200:
            raise CheckFailed(f"GET /v1/admin/users: {response.status_code} {response.text[:200]}")
        result = {}
        for user in response.json():
            # an instance is named <host>-<pid>-<random>
            result[user["email"]] = {names.get(instance.rsplit("-", 2)[-2], instance): n
                                     for instance, n in user["sessions"].items()}
        return result

    async def upload(self, request_id, message_id):
        path = f"/v1/partitions/{quoted(CONVERSATION)}/uploads"
        started = now()
        try:
            response = await self.http.post(path, json=message_body(request_id, message_id, f"message {message_id}"),
                                            headers=self.auth(self.users["alice@example.com"]))
            status, backend = response.status_code, response.headers.get("X-PSync-Backend")
        except httpx.HTTPError as error:
            status, backend = type(error).__name__, None
        self.uploads.append({"id": message_id, "status": status, "backend": backend, "start": started, "end": now()})
        return status

    async def writer(self, stream):
        """Alice's messages through the balancer, one at a time; a message whose upload is not
        answered 200 is sent again with the same request id until it is (it applies once)."""
        n = 0
        while not self.stop_writer.is_set():
            n += 1
            request_id, message_id = f"w{stream}-{n}", f"m-w{stream}-{n}"
            while True:
                status = await self.upload(request_id, message_id)
                if status == 200:
                    self.acked.add(message_id)
                    break
                if isinstance(status, int) and 400 <= status < 500:
                    raise CheckFailed(f"upload {request_id} refused: {status}")
                await asyncio.sleep(0.05)  # the writer's retry pace
            await asyncio.sleep(0.03)      # the writer's pace

    # --- steps ------------------------------------------------------------------------------

    async def setup(self):
        t = now()
        alice = await self.register("alice@example.com")
        emails = [f"m{n:02}@example.com" for n in range(1, MEMBERS + 1)]
        for chunk in range(0, len(emails), 5):
            await asyncio.gather(*(self.register(e) for e in emails[chunk:chunk + 5]))
        for email in ("pat@example.com", "rev@example.com", "ghost@example.com"):
            await self.register(email)
        members = [{"userName": "alice@example.com", "membershipStatus": "Membership active"}] + [
            {"userName": e, "membershipStatus": "User added, but invite pending"} for e in emails + ["ghost@example.com"]]
        conversation = {"id": ROOM, "displayName": "balancer check", "unreadCount": 0, "members": members}

        async def alice_has_record():
            return ("User", alice["userId"]) in await self.pull_all(alice, f"user={alice['userId']}")
        await eventually("alice's User record", alice_has_record, 30, interval=0.05)
        response = await self.http.post(
            f"/v1/partitions/{quoted('user=' + alice['userId'])}/uploads", headers=self.auth(alice),
            json={"requestId": "create-room", "operations": [
                {"op": "arrayAppend", "collection": "User", "id": alice["userId"], "path": "conversations",
                 "value": conversation}]})
        check(response.status_code == 200, f"alice creates the conversation with {MEMBERS + 1} members through the balancer")

        async def member(email):
            response = await self.http.get(f"/v1/partitions/{quoted(CONVERSATION)}/changes", headers=self.auth(self.users[email]))
            return response.status_code == 200
        for email in emails + ["ghost@example.com"]:
            await eventually(f"{email} to be a member", lambda e=email: member(e), 30, interval=0.05)
        self.figures["setup_seconds"] = round(now() - t, 2)

    async def spread(self):
        say(f"== {MEMBERS} sessions through the balancer")
        for n in range(1, MEMBERS + 1):
            email = f"m{n:02}@example.com"
            self.sessions[email] = Session(self, self.users[email], [CONVERSATION, ALL_USERS]).start()
        await eventually("every session to be up to date",
                         lambda: asyncio.sleep(0, all(s.up_to_date(CONVERSATION) and s.up_to_date(ALL_USERS)
                                                      for s in self.sessions.values())), 30, interval=0.02)
        by_header = collections.Counter(s.backend for s in self.sessions.values())
        self.figures["sessions_per_instance"] = dict(sorted(by_header.items()))
        say(f"sessions per instance (X-PSync-Backend): {dict(sorted(by_header.items()))}")
        check(all(by_header.get(i, 0) > 0 for i in self.instances()),
              f"every instance holds sessions ({', '.join(f'{i}: {by_header.get(i, 0)}' for i in self.instances())})")

        # the server's own view: each user's presence rows, per instance
        async def server_agrees():
            view = await self.admin_sessions()
            return all(view.get(email) == {s.backend: 1} for email, s in self.sessions.items())
        try:
            await eventually("the server's sessions per instance to match HAProxy's", server_agrees, 10, interval=0.1)
        except TimeoutError:
            raise CheckFailed(f"the server's view {await self.admin_sessions()} differs from HAProxy's")
        check(True, "the server's presence rows put each session on the instance HAProxy named")

    def observer(self, other_than):
        """A member's session on an instance other than `other_than`, up to date on all-users."""
        for email, session in sorted(self.sessions.items()):
            if session.backend not in other_than and session.up_to_date(ALL_USERS):
                return email, session
        raise CheckFailed(f"no session outside {other_than}")

    async def presence(self):
        say("== presence across instances")
        pat = self.users["pat@example.com"]
        # pat's Chatster exists and is Off-Line everywhere before pat connects
        any_session = next(iter(self.sessions.values()))
        await eventually("pat's Chatster", lambda: asyncio.sleep(0, any_session.presence_of(pat["userId"]) is not None), 15, 0.02)
        session = Session(self, pat, [], reconnect=False).start()
        await eventually("pat's session", lambda: asyncio.sleep(0, session.backend is not None), 10, 0.02)
        email, observer = self.observer({session.backend})
        check(observer.presences[pat["userId"]] == ["Off-Line"], f"pat is Off-Line for {email} on {observer.backend} before pat connects")
        t = now()
        await eventually("pat On-Line", lambda: asyncio.sleep(0, observer.presence_of(pat["userId"]) == "On-Line"), 10, 0.02)
        self.figures["presence_online_seconds"] = round(now() - t, 3)
        check(True, f"pat's session on {session.backend} makes pat On-Line for {email} on {observer.backend} "
                    f"({self.figures['presence_online_seconds']} s)")
        t = now()
        await session.close()
        await eventually("pat Off-Line", lambda: asyncio.sleep(0, observer.presence_of(pat["userId"]) == "Off-Line"), 10, 0.02)
        self.figures["presence_offline_seconds"] = round(now() - t, 3)
        check(observer.presences[pat["userId"]] == ["Off-Line", "On-Line", "Off-Line"],
              f"closing it makes pat Off-Line on {observer.backend} ({self.figures['presence_offline_seconds']} s), once")

    async def revocation(self):
        say("== revocation across instances")
        rev = self.users["rev@example.com"]
        sessions = []
        # leastconn gives each new connection to the instance holding fewest: a few tries put
        # one of rev's sessions on every instance
        while {s.backend for s in sessions} != set(self.instances()):
            if len(sessions) >= 4 * len(self.instances()):
                raise CheckFailed(f"rev's sessions did not reach every instance: {[s.backend for s in sessions]}")
            session = Session(self, rev, [f"user={rev['userId']}"], reconnect=False).start()
            await eventually("rev's session", lambda: asyncio.sleep(0, session.up_to_date(f"user={rev['userId']}")), 10, 0.02)
            sessions.append(session)
        t = now()
        response = await self.http.post("/v1/auth/logout", json={"refreshToken": rev["refreshToken"]})
        served = response.headers.get("X-PSync-Backend")
        check(response.status_code == 204, f"rev logs out through the balancer (served by {served})")
        await eventually("every rev session to end", lambda: asyncio.sleep(0, all(s.closed_for_good.is_set() for s in sessions)), 10, 0.02)
        self.figures["revocation_seconds"] = round(now() - t, 3)
        ends = [(s.connections[0]["backend"], s.connections[0]["code"], s.connections[0].get("errors")) for s in sessions]
        others = [e for e in ends if e[0] != served]
        # (the instance that served the logout sometimes sends the error twice: a known
        # problem, counted here, docs/SCALING.md "Known problems")
        self.figures["session_revoked_sent_twice"] = sum(1 for _, _, errors in ends if errors and len(errors) > 1)
        check(all(code == 4001 and errors and set(errors) == {"session_revoked"} for _, code, errors in ends) and others,
              f"rev's {len(sessions)} sessions end with session_revoked and 4001 within "
              f"{self.figures['revocation_seconds']} s of the logout request, {len(others)} of them on instances other "
              f"than {served} (instance, close code, errors: {ends})")
        # every instance refuses the revoked access token at the upgrade; a valid session held
        # open beside each refused attempt moves leastconn's choice to the next instance
        refused, fillers = {}, []
        filler_user = self.users["pat@example.com"]
        while set(refused) != set(self.instances()):
            if len(fillers) > 4 * len(self.instances()):
                raise CheckFailed(f"the refused upgrades did not reach every instance: {refused}")
            try:
                async with websockets.connect(f"ws://127.0.0.1:{self.port}/v1/sync", additional_headers=self.auth(rev),
                                              open_timeout=5):
                    raise CheckFailed("an upgrade with rev's revoked access token was accepted")
            except websockets.InvalidStatus as error:
                refused[error.response.headers.get("X-PSync-Backend")] = error.response.status_code
            filler = Session(self, filler_user, [], reconnect=False, presence=False).start()
            await eventually("a filler session", lambda: asyncio.sleep(0, filler.backend is not None), 10, 0.02)
            fillers.append(filler)
        for filler in fillers:
            await filler.close()
        check(all(status == 401 for status in refused.values()),
              f"every instance refuses the revoked access token at the upgrade: {dict(sorted(refused.items()))}")
        response = await self.http.post("/v1/auth/refresh", json={"refreshToken": rev["refreshToken"]})
        check(response.status_code == 401, "the revoked refresh token is refused")

    async def haproxy_status(self, name):
        rows = await asyncio.to_thread(haproxy_servers, self.state["ports"]["stats"], ("psync",))
        return rows["psync"].get(name, {}).get("status", "")

    async def kill(self):
        say("== SIGKILL of an instance under a writer")
        ghost = self.users["ghost@example.com"]
        ghost_session = Session(self, ghost, [], reconnect=False).start()
        await eventually("ghost's session", lambda: asyncio.sleep(0, ghost_session.backend is not None), 10, 0.02)
        victim = ghost_session.backend
        email, observer = self.observer({victim})
        await eventually("ghost On-Line", lambda: asyncio.sleep(0, observer.presence_of(ghost["userId"]) == "On-Line"), 10, 0.02)
        affected = {e: s for e, s in self.sessions.items() if s.backend == victim}
        writers = [asyncio.create_task(self.writer(n)) for n in range(2)]
        await eventually("the writer's first acknowledged messages", lambda: asyncio.sleep(0, len(self.acked) >= 10), 30, 0.02)

        killed = await balancer("kill-instance", self.dir, victim, "--signal", "KILL")
        t_kill = killed["at"] - time.time() + now()  # the kill's moment on this clock
        say(f"killed {victim} (pid {killed['pid']}), which held {len(affected)} member sessions and ghost's")
        await eventually(f"HAProxy to mark {victim} down", lambda: self.haproxy_status_is(victim, "DOWN"), 30, 0.02)
        self.figures["haproxy_marked_down_seconds"] = round(now() - t_kill, 3)

        def resumed():
            return all(len(s.connections) >= 2 and s.up_to_date(CONVERSATION) and s.up_to_date(ALL_USERS)
                       for s in affected.values())
        await eventually("every client of the killed instance to resume", lambda: asyncio.sleep(0, resumed()), 30, 0.02)
        self.figures["all_clients_resumed_seconds"] = round(max(s.current["up_to_date"][CONVERSATION] for s in affected.values()) - t_kill, 3)
        self.figures["reconnect_attempts_failed"] = sum(len(s.failures) for s in affected.values())
        check(True, f"HAProxy marked {victim} down after {self.figures['haproxy_marked_down_seconds']} s; its "
                    f"{len(affected)} clients reconnected and caught up {self.figures['all_clients_resumed_seconds']} s "
                    f"after the kill ({self.figures['reconnect_attempts_failed']} attempts failed on the way)")
        check(all(s.backend != victim for s in affected.values()),
              f"every reconnection went to another instance ({dict(collections.Counter(s.backend for s in affected.values()))})")
        # a few more messages once everyone resumed, then the writer stops
        goal = len(self.acked) + 10
        await eventually("10 more acknowledged messages", lambda: asyncio.sleep(0, len(self.acked) >= goal), 30, 0.02)
        t_down = t_kill + self.figures["haproxy_marked_down_seconds"]
        late = [u for u in self.uploads if u["start"] > t_down and u["backend"] == victim]
        check(not late, f"no upload started after {victim} was marked down was served by it ({len(late)})")
        self.figures["uploads_not_answered_200_during_kill"] = collections.Counter(
            str(u["status"]) for u in self.uploads if u["status"] != 200 and u["end"] >= t_kill)

        # ghost, whose only session died with the instance, goes Off-Line after the lease
        await eventually("ghost Off-Line", lambda: asyncio.sleep(0, observer.presence_of(ghost["userId"]) == "Off-Line"), 40, 0.05)
        self.figures["killed_user_offline_seconds"] = round(now() - t_kill, 3)
        check(True, f"ghost, whose session died with {victim}, went Off-Line for {email} on {observer.backend} "
                    f"{self.figures['killed_user_offline_seconds']} s after the kill (presence lease "
                    f"{self.presence_lease()} s)")
        flapped = {e: observer.presences.get(self.users[e]["userId"]) for e in affected
                   if observer.presences.get(self.users[e]["userId"], [])[-1:] != ["On-Line"]
                   or "Off-Line" in observer.presences.get(self.users[e]["userId"], [])[1:]}
        check(not flapped, f"the killed instance's clients, all reconnected, stayed On-Line ({flapped or 'no flap'})")
        return victim, writers

    async def haproxy_status_is(self, name, prefix):
        return (await self.haproxy_status(name)).startswith(prefix)

    def presence_lease(self):
        args = self.state["serve_args"]
        return float(args[args.index("--presence-lease") + 1]) if "--presence-lease" in args else 15.0

    async def restart(self, victim):
        say(f"== {victim} started again")
        started = await balancer("start-instance", self.dir, victim)
        self.reload()
        self.figures["restart_routed_seconds"] = started["routed_after"]
        probe = Session(self, self.users["pat@example.com"], [], reconnect=False, presence=False).start()
        await eventually("a new session", lambda: asyncio.sleep(0, probe.backend is not None), 10, 0.02)
        await probe.close()
        check(probe.connections[0]["backend"] == victim,
              f"{victim} is routed {started['routed_after']} s after its start and takes the next connection (leastconn)")

    async def drain(self, victim):
        others = [i for i in self.instances() if i != victim]
        target = max(others, key=lambda i: sum(1 for s in self.sessions.values() if s.backend == i))
        say(f"== graceful stop of {target}: HAProxy drain, then SIGTERM")
        affected = {e: s for e, s in self.sessions.items() if s.backend == target}
        marks = {e: len(s.connections) for e, s in affected.items()}
        stopped = await balancer("stop-instance", self.dir, target)
        t = stopped["at"] - time.time() + now()  # SIGTERM's moment on this clock
        check(stopped["exit_status"] == 0, f"{target} exited with status 0, {stopped['exit_after']} s after SIGTERM")
        await eventually("the drained instance's clients to resume",
                         lambda: asyncio.sleep(0, all(len(s.connections) > marks[e] and s.up_to_date(CONVERSATION)
                                                      for e, s in affected.items())), 30, 0.02)
        self.figures["drain_clients_resumed_seconds"] = round(now() - t, 3)
        codes = collections.Counter(s.connections[marks[e] - 1]["code"] for e, s in affected.items())
        check(set(codes) == {1001}, f"its {len(affected)} clients were closed with 1001 ({dict(codes)}) and resumed "
                                    f"{self.figures['drain_clients_resumed_seconds']} s after SIGTERM")
        check(all(s.backend != target for s in affected.values()), f"none of them went back to {target}")
        return target

    async def settle(self, writers):
        say("== every message exactly once")
        goal = len(self.acked) + 10
        await eventually("10 more acknowledged messages", lambda: asyncio.sleep(0, len(self.acked) >= goal), 30, 0.02)
        self.stop_writer.set()
        await asyncio.gather(*writers)
        alice = self.users["alice@example.com"]
        stored = {key[1] for key, obj in (await self.pull_all(alice, CONVERSATION)).items()
                  if key[0] == "ChatMessage" and not obj.get("deleted")}
        check(self.acked <= stored and stored == self.acked,
              f"{len(self.acked)} messages acknowledged, {len(stored)} stored: the same ones")

        def delivered():
            return all(set(s.received) == stored for s in self.sessions.values())
        try:
            await eventually("every session to have every message", lambda: asyncio.sleep(0, delivered()), 20, 0.02)
        except TimeoutError:
            missing = {e: len(stored - set(s.received)) for e, s in self.sessions.items() if stored - set(s.received)}
            raise CheckFailed(f"messages missing at clients: {missing}")
        twice = {e: sum(1 for n in s.received.values() if n > 1) for e, s in self.sessions.items()
                 if any(n > 1 for n in s.received.values())}
        check(not twice, f"each of the {len(self.sessions)} clients received each of the {len(stored)} messages exactly "
                         f"once ({f'messages received more than once, per client: {twice}' if twice else 'no duplicate'})")

        async def unread_counts():
            counts = []
            for email in self.sessions:
                user = self.users[email]
                record = (await self.pull_all(user, f"user={user['userId']}")).get(("User", user["userId"]))
                room = [c for c in (record or {}).get("body", {}).get("conversations", []) if c.get("id") == ROOM]
                counts.append(room[0].get("unreadCount") if room else None)
            return counts
        try:
            await eventually("every member's unread count to equal the messages",
                             lambda: unread_counts_equal(unread_counts, len(stored)), 30, 0.2)
        except TimeoutError:
            raise CheckFailed(f"unread counts {await unread_counts()} differ from {len(stored)}")
        check(True, f"every member's unreadCount is {len(stored)}: the unread-count trigger applied each message once")
        self.figures["messages"] = len(stored)

    async def stop_all(self):
        say("== SIGTERM to the other instances")
        for session in self.sessions.values():
            await session.close()
        process = await asyncio.create_subprocess_exec(sys.executable, BALANCER, "stop", self.dir,
                                                       stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await process.communicate()
        result = json.loads(out.decode().strip().splitlines()[-1]) if out.strip() else {}
        check(process.returncode == 0 and result.get("exit_statuses") and all(c == 0 for c in result["exit_statuses"].values()),
              f"SIGTERM stopped {', '.join(sorted(result.get('exit_statuses', {})))} with status 0 "
              f"({result.get('exit_statuses')}, {result.get('seconds')} s) {err.decode()[-300:] if process.returncode else ''}")


async def unread_counts_equal(read, expected):
    return all(c == expected for c in await read())


async def main_async(args):
    run = CheckRun(args.dir)
    check(len(run.instances()) >= 3, f"{len(run.instances())} instances behind HAProxy on port {run.port}")
    writers = []
    try:
        await run.setup()
        await run.spread()
        await run.presence()
        await run.revocation()
        victim, writers = await run.kill()
        await run.restart(victim)
        await run.drain(victim)
        await run.settle(writers)
        await run.stop_all()
    finally:
        run.stop_writer.set()
        for task in writers:
            task.cancel()
        for session in run.sessions.values():
            if session.task and not session.task.done():
                session.task.cancel()
        await run.http.aclose()
        figures = dict(run.figures)
        if "uploads_not_answered_200_during_kill" in figures:
            figures["uploads_not_answered_200_during_kill"] = dict(figures["uploads_not_answered_200_during_kill"])
        print(json.dumps(figures, indent=1))
        with open(os.path.join(run.dir, "check-figures.json"), "w") as f:
            json.dump(figures, f, indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", help="a folder of `balancer.py start`")
    CHECKER.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
